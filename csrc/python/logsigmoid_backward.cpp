#include "aclnnop/aclnn_logsigmoid_backward.h"

#include "common.h"

namespace agpy {
namespace {
const ArgNames kNames = {{"gradOutput", "grad_output"}, {"self", "x"}, {"gradInput", "out"}};
}  // namespace

void bind_logsigmoid_backward(py::module_ &m, py::module_ &raw) {
    m.def(
        "log_sigmoid_backward",
        [](py::handle grad_output, py::handle x, py::handle buffer, py::handle out) {
            auto [g, xs] = as_input_pair(grad_output, "grad_output", x, "x");
            check_same_float_dtype("aclnnLogSigmoidBackward", xs, "x", g, "grad_output");
            // The C API wants a non-NULL buffer but never reads it: x itself serves when absent.
            py::array b = buffer.is_none() ? xs : as_input(buffer, "buffer");
            py::array o = out.is_none() ? new_array(shape_of(xs), xs.dtype()) : as_output(out, "out");
            TensorRef tg(g), tx(xs), tb(b), to(o);
            run_two_phase(
                [&](uint64_t *ws, aclOpExecutor **ex) {
                    return aclnnLogSigmoidBackwardGetWorkspaceSize(tg.get(), tx.get(), tb.get(), to.get(), ws, ex);
                },
                aclnnLogSigmoidBackward, kNames);
            return o;
        },
        py::arg("grad_output"), py::arg("x"), py::arg("buffer") = py::none(), py::arg("out") = py::none());

    raw.def(
        "log_sigmoid_backward_get_workspace_size",
        [](py::object grad_output, py::object self, py::object buffer, py::object grad_input) {
            uint64_t ws = 0;
            aclOpExecutor *ex = nullptr;
            aclnnStatus s = aclnnLogSigmoidBackwardGetWorkspaceSize(
                tensor_arg(grad_output, "grad_output"), tensor_arg(self, "self"), tensor_arg(buffer, "buffer"),
                tensor_arg(grad_input, "grad_input"), &ws, &ex);
            return phase1_result(s, ws, ex, {grad_output, self, buffer, grad_input});
        },
        py::arg("grad_output"), py::arg("self"), py::arg("buffer"), py::arg("grad_input"));
    def_phase2(raw, "log_sigmoid_backward", aclnnLogSigmoidBackward);
}

}  // namespace agpy
