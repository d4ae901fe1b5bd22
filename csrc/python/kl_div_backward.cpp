#include "aclnnop/aclnn_kl_div_backward.h"

#include "common.h"

namespace agpy {
namespace {

const ArgNames kNames = {{"gradOutput", "grad_output"}, {"self", "x"}, {"logTarget", "log_target"}};

// "none" | "mean" | "sum" | "batchmean" or an int (checked by the library, 0..3).
int64_t reduction_code(const py::object &r) {
    if (py::isinstance<py::str>(r)) {
        const std::string s = r.cast<std::string>();
        const char *names[] = {"none", "mean", "sum", "batchmean"};
        for (int64_t k = 0; k < 4; ++k)
            if (s == names[k]) return k;
        throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                           "aclnnKlDivBackward: reduction should be 'none', 'mean', 'sum', 'batchmean' or 0..3, but "
                           "got '" + s + "'.");
    }
    if (py::isinstance<py::bool_>(r) || !py::isinstance(r, py::module_::import("numbers").attr("Integral")))
        throw py::type_error("reduction must be a str or an int, got " +
                             py::str(py::type::of(r).attr("__name__")).cast<std::string>());
    try {
        return r.cast<int64_t>();
    } catch (const py::cast_error &) {  // beyond int64: not a reduction either
        throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                           "aclnnKlDivBackward: reduction should be 0 (none), 1 (mean), 2 (sum) or 3 (batchmean), "
                           "but got " + py::str(r).cast<std::string>() + ".");
    }
}

}  // namespace

void bind_kl_div_backward(py::module_ &m, py::module_ &raw) {
    m.def(
        "kl_div_backward",
        [](py::handle grad_output, py::handle x, py::handle target, py::object reduction, py::handle log_target_arg,
           py::handle out) {
            const bool log_target = bool_arg(log_target_arg, "log_target");
            py::array xs = as_input(x, "x");
            // ndarrays keep their dtype (mixed dtypes are allowed); Python numbers and sequences take x's
            py::array g = as_input_like(grad_output, "grad_output", xs), t = as_input_like(target, "target", xs);
            const int64_t red = reduction_code(reduction);
            py::array o = out.is_none() ? new_array(shape_of(xs), xs.dtype()) : as_output(out, "out");
            TensorRef tg(g), tx(xs), tt(t), to(o);
            run_two_phase(
                [&](uint64_t *ws, aclOpExecutor **ex) {
                    return aclnnKlDivBackwardGetWorkspaceSize(tg.get(), tx.get(), tt.get(), red, log_target, to.get(),
                                                              ws, ex);
                },
                aclnnKlDivBackward, kNames);
            return o;
        },
        py::arg("grad_output"), py::arg("x"), py::arg("target"), py::arg("reduction") = "mean",
        py::arg("log_target") = false, py::arg("out") = py::none());

    raw.def(
        "kl_div_backward_get_workspace_size",
        [](py::object grad_output, py::object self, py::object target, int64_t reduction, bool log_target,
           py::object out) {
            uint64_t ws = 0;
            aclOpExecutor *ex = nullptr;
            aclnnStatus s = aclnnKlDivBackwardGetWorkspaceSize(
                tensor_arg(grad_output, "grad_output"), tensor_arg(self, "self"), tensor_arg(target, "target"),
                reduction, log_target, tensor_arg(out, "out"), &ws, &ex);
            return phase1_result(s, ws, ex, {grad_output, self, target, out});
        },
        py::arg("grad_output"), py::arg("self"), py::arg("target"), py::arg("reduction"), py::arg("log_target"),
        py::arg("out"));
    def_phase2(raw, "kl_div_backward", aclnnKlDivBackward);
}

}  // namespace agpy
