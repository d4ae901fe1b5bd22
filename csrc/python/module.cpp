// The private extension module ascendgrad._core: NumPy-level functions at the top, the raw
// two-phase API in _core.aclnn. One binding file per operator.
#include "common.h"

namespace agpy {
void bind_softmax_backward(py::module_ &m, py::module_ &raw);
void bind_logsigmoid_backward(py::module_ &m, py::module_ &raw);
void bind_softshrink_backward(py::module_ &m, py::module_ &raw);
void bind_cross_entropy_loss_grad(py::module_ &m, py::module_ &raw);
void bind_kl_div_backward(py::module_ &m, py::module_ &raw);
void bind_judge(py::module_ &m);
}  // namespace agpy

PYBIND11_MODULE(_core, m) {
    m.doc() = "ascendgrad compiled core (private; use the ascendgrad package)";
    py::module_ raw = m.def_submodule("aclnn", "raw two-phase aclnn API");
    agpy::bind_common(m, raw);
    agpy::bind_softmax_backward(m, raw);
    agpy::bind_logsigmoid_backward(m, raw);
    agpy::bind_softshrink_backward(m, raw);
    agpy::bind_cross_entropy_loss_grad(m, raw);
    agpy::bind_kl_div_backward(m, raw);
    agpy::bind_judge(m);
}
