#include "aclnnop/aclnn_cross_entropy_loss_grad.h"

#include "common.h"

namespace agpy {
namespace {

const char *const kOp = "aclnnCrossEntropyLossGrad";
const ArgNames kNames = {{"gradLoss", "grad_loss"},
                         {"logProb", "log_prob"},
                         {"weightOptional", "weight"},
                         {"gradZlossOptional", "grad_zloss"},
                         {"lseForZlossOptional", "lse_for_zloss"},
                         {"reductionOptional", "reduction"},
                         {"ignoreIndex", "ignore_index"},
                         {"labelSmoothing", "label_smoothing"},
                         {"lseSquareScaleForZloss", "lse_square_scale_for_zloss"}};

// reductionOptional: None -> NULL ("mean"); otherwise a str, checked by the library.
const char *reduction_arg(const py::object &reduction, std::string *keep) {
    if (reduction.is_none()) return nullptr;
    if (!py::isinstance<py::str>(reduction))
        throw py::type_error("reduction must be a str or None, got " +
                             py::str(py::type::of(reduction).attr("__name__")).cast<std::string>());
    *keep = reduction.cast<std::string>();
    return keep->c_str();
}

}  // namespace

void bind_cross_entropy_loss_grad(py::module_ &m, py::module_ &raw) {
    m.def(
        "cross_entropy_loss_grad",
        [](py::handle grad_loss, py::handle log_prob, py::handle target, py::handle weight, py::object reduction,
           py::handle ignore_index_arg, py::handle label_smoothing_arg, py::handle grad_zloss,
           py::handle lse_for_zloss, py::handle lse_square_scale_arg, py::handle out) {
            std::string red_keep;
            const char *red = reduction_arg(reduction, &red_keep);
            const int64_t ignore_index = int_arg(ignore_index_arg, "ignore_index");
            const double label_smoothing = float_arg(label_smoothing_arg, "label_smoothing");
            const double lse_square_scale_for_zloss = float_arg(lse_square_scale_arg, "lse_square_scale_for_zloss");
            py::array lp = as_input(log_prob, "log_prob");
            // Python numbers and sequences (no dtype of their own) take log_prob's dtype
            py::array gl = as_input_like(grad_loss, "grad_loss", lp);
            check_same_float_dtype(kOp, gl, "grad_loss", lp, "log_prob");
            py::array tg = as_input(target, "target");
            std::unique_ptr<TensorRef> tw, tgz, tlse;
            if (!weight.is_none()) tw = std::make_unique<TensorRef>(as_input(weight, "weight"));
            if (!grad_zloss.is_none()) {
                py::array a = as_input_like(grad_zloss, "grad_zloss", lp);
                check_same_float_dtype(kOp, a, "grad_zloss", lp, "log_prob");
                tgz = std::make_unique<TensorRef>(a);
            }
            if (!lse_for_zloss.is_none()) {
                py::array a = as_input_like(lse_for_zloss, "lse_for_zloss", lp);
                check_same_float_dtype(kOp, a, "lse_for_zloss", lp, "log_prob");
                tlse = std::make_unique<TensorRef>(a);
            }
            py::array o = out.is_none() ? new_array(shape_of(lp), lp.dtype()) : as_output(out, "out");
            TensorRef tgl(gl), tlp(lp), ttg(tg), to(o);
            run_two_phase(
                [&](uint64_t *ws, aclOpExecutor **ex) {
                    return aclnnCrossEntropyLossGradGetWorkspaceSize(
                        tgl.get(), tlp.get(), ttg.get(), tw ? tw->get() : nullptr, tgz ? tgz->get() : nullptr,
                        tlse ? tlse->get() : nullptr, const_cast<char *>(red), ignore_index, label_smoothing,
                        lse_square_scale_for_zloss, to.get(), ws, ex);
                },
                aclnnCrossEntropyLossGrad, kNames);
            return o;
        },
        py::arg("grad_loss"), py::arg("log_prob"), py::arg("target"), py::arg("weight") = py::none(),
        py::arg("reduction") = "mean", py::arg("ignore_index") = -100, py::arg("label_smoothing") = 0.0,
        py::arg("grad_zloss") = py::none(), py::arg("lse_for_zloss") = py::none(),
        py::arg("lse_square_scale_for_zloss") = 0.0, py::arg("out") = py::none());

    raw.def(
        "cross_entropy_loss_grad_get_workspace_size",
        [](py::object grad_loss, py::object log_prob, py::object target, py::object weight, py::object grad_zloss,
           py::object lse_for_zloss, py::object reduction, int64_t ignore_index, double label_smoothing,
           double lse_square_scale_for_zloss, py::object out) {
            std::string red_keep;
            const char *red = reduction_arg(reduction, &red_keep);
            uint64_t ws = 0;
            aclOpExecutor *ex = nullptr;
            aclnnStatus s = aclnnCrossEntropyLossGradGetWorkspaceSize(
                tensor_arg(grad_loss, "grad_loss"), tensor_arg(log_prob, "log_prob"), tensor_arg(target, "target"),
                tensor_arg(weight, "weight"), tensor_arg(grad_zloss, "grad_zloss"),
                tensor_arg(lse_for_zloss, "lse_for_zloss"), const_cast<char *>(red), ignore_index, label_smoothing,
                lse_square_scale_for_zloss, tensor_arg(out, "out"), &ws, &ex);
            return phase1_result(s, ws, ex, {grad_loss, log_prob, target, weight, grad_zloss, lse_for_zloss, out});
        },
        py::arg("grad_loss"), py::arg("log_prob"), py::arg("target"), py::arg("weight"), py::arg("grad_zloss"),
        py::arg("lse_for_zloss"), py::arg("reduction"), py::arg("ignore_index"), py::arg("label_smoothing"),
        py::arg("lse_square_scale_for_zloss"), py::arg("out"));
    def_phase2(raw, "cross_entropy_loss_grad", aclnnCrossEntropyLossGrad);
}

}  // namespace agpy
