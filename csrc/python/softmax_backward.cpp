#include "aclnnop/aclnn_softmax_backward.h"

#include "common.h"

namespace agpy {
namespace {
const ArgNames kNames = {{"gradOutput", "grad_output"}};  // output, dim, out: the same
}  // namespace

void bind_softmax_backward(py::module_ &m, py::module_ &raw) {
    m.def(
        "softmax_backward",
        [](py::handle grad_output, py::handle output, py::handle dim_arg, py::handle out) {
            const int64_t dim = int_arg(dim_arg, "dim");
            auto [g, y] = as_input_pair(grad_output, "grad_output", output, "output");
            check_same_float_dtype("aclnnSoftmaxBackward", y, "output", g, "grad_output");
            py::array o = out.is_none() ? new_array(shape_of(g), g.dtype()) : as_output(out, "out");
            TensorRef tg(g), ty(y), to(o);
            run_two_phase(
                [&](uint64_t *ws, aclOpExecutor **ex) {
                    return aclnnSoftmaxBackwardGetWorkspaceSize(tg.get(), ty.get(), dim, to.get(), ws, ex);
                },
                aclnnSoftmaxBackward, kNames);
            return o;
        },
        py::arg("grad_output"), py::arg("output"), py::arg("dim") = -1, py::arg("out") = py::none());

    raw.def(
        "softmax_backward_get_workspace_size",
        [](py::object grad_output, py::object output, int64_t dim, py::object out) {
            uint64_t ws = 0;
            aclOpExecutor *ex = nullptr;
            aclnnStatus s = aclnnSoftmaxBackwardGetWorkspaceSize(tensor_arg(grad_output, "grad_output"),
                                                                 tensor_arg(output, "output"), dim,
                                                                 tensor_arg(out, "out"), &ws, &ex);
            return phase1_result(s, ws, ex, {grad_output, output, out});
        },
        py::arg("grad_output"), py::arg("output"), py::arg("dim"), py::arg("out"));
    def_phase2(raw, "softmax_backward", aclnnSoftmaxBackward);
}

}  // namespace agpy
