// aclnnCrossEntropyLossGrad: validation and executor; the math is kern::cross_entropy_loss_grad.
// Targets are data: they are checked in phase 2 by a first pass over target, before out is written.
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"

#include <cmath>
#include <cstring>

#include "checks.h"
#include "executor.h"
#include "kernels/cross_entropy_loss_grad.h"
#include "status.h"

namespace ag {
namespace {

constexpr const char *kOp = "aclnnCrossEntropyLossGrad";

// io slots, in signature order (absent optionals keep data == nullptr)
enum { kGradLoss, kLogProb, kTarget, kWeight, kGradZloss, kLse, kOut };
constexpr const char *kArgs[] = {"gradLoss",          "logProb",             "target", "weightOptional",
                                 "gradZlossOptional", "lseForZlossOptional", "out"};

struct CrossEntropyLossGradExec : Executor {
    kern::CeReduction reduction = kern::CeReduction::Mean;
    int64_t ignore_index = -100;
    double label_smoothing = 0, zloss_scale = 0;
    aclnnStatus run(const IO &io, void *) const override {
        // the views as launched (they may have been repointed: aclSetInputTensorAddr), the rest as prepared
        const kern::CeArgs a{io[kGradLoss], io[kLogProb], io[kTarget],  io[kWeight], io[kGradZloss],
                             io[kLse],      io[kOut],     reduction,     ignore_index, label_smoothing,
                             zloss_scale};
        const int64_t classes = a.log_prob.shape[1];
        const kern::CeScan scan = kern::cross_entropy_scan(a.target, a.weight, classes, a.ignore_index);
        if (scan.bad_row >= 0)
            return fail(ACLNN_ERR_PARAM_INVALID,
                        "%s: Target %lld is out of bounds: target[%lld] must be in [0, %lld) or equal ignoreIndex "
                        "%lld.",
                        kOp, (long long)scan.bad_value, (long long)scan.bad_row, (long long)classes,
                        (long long)a.ignore_index);
        kern::cross_entropy_loss_grad(a, scan);
        return ACLNN_SUCCESS;
    }
};

const char *reduction_name(kern::CeReduction r) {
    return r == kern::CeReduction::None ? "none" : r == kern::CeReduction::Sum ? "sum" : "mean";
}

// gradLoss / gradZlossOptional: (N,) for 'none', 0-d or (1,) for 'mean' and 'sum'.
aclnnStatus check_grad_shape(const aclTensor *t, const char *name, kern::CeReduction r, int64_t n) {
    if (r == kern::CeReduction::None) return check_shape(kOp, t, name, {n});
    if (t->rank() == 0 || (t->rank() == 1 && t->view[0] == 1)) return ACLNN_SUCCESS;
    return fail(ACLNN_ERR_PARAM_INVALID, "%s: Expected tensor for %s to have size [] or [1] for reduction '%s', but got %s.",
                kOp, name, reduction_name(r), shape_str(t->view).c_str());
}

aclnnStatus prepare(const aclTensor *gradLoss, const aclTensor *logProb, const aclTensor *target,
                    const aclTensor *weight, const aclTensor *gradZloss, const aclTensor *lse, const char *reduction,
                    int64_t ignoreIndex, double labelSmoothing, double zeta, const aclTensor *out,
                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    AG_CHECK(check_outputs(kOp, workspaceSize, executor));
    AG_CHECK(check_not_null(kOp, gradLoss, "gradLoss"));
    AG_CHECK(check_not_null(kOp, logProb, "logProb"));
    AG_CHECK(check_not_null(kOp, target, "target"));
    AG_CHECK(check_not_null(kOp, out, "out"));
    if (!lse && zeta != 0)
        return fail(ACLNN_ERR_PARAM_NULLPTR,
                    "%s: Expected a proper Tensor but got null for argument lseForZlossOptional. It is required when "
                    "lseSquareScaleForZloss (%g) is not 0.",
                    kOp, zeta);
    const std::pair<const aclTensor *, const char *> all[] = {
        {gradLoss, "gradLoss"}, {logProb, "logProb"},  {target, "target"}, {weight, "weightOptional"},
        {gradZloss, "gradZlossOptional"}, {lse, "lseForZlossOptional"}, {out, "out"}};
    for (auto [t, name] : all)
        if (t) AG_CHECK(check_tensor(kOp, t, name));

    AG_CHECK(check_float_dtype(kOp, logProb, "logProb"));
    AG_CHECK(check_same_dtype(kOp, gradLoss, "gradLoss", logProb->dtype));
    AG_CHECK(check_dtype(kOp, target, "target", {ACL_INT64, ACL_INT32}));
    // Beyond CANN (f32 only): any float weight, read exactly; f64 weights keep f64 problems exact.
    if (weight) AG_CHECK(check_float_dtype(kOp, weight, "weightOptional"));
    if (gradZloss) AG_CHECK(check_same_dtype(kOp, gradZloss, "gradZlossOptional", logProb->dtype));
    if (lse) AG_CHECK(check_same_dtype(kOp, lse, "lseForZlossOptional", logProb->dtype));
    AG_CHECK(check_same_dtype(kOp, out, "out", logProb->dtype));

    kern::CeReduction red = kern::CeReduction::Mean;  // NULL means 'mean', the forward's default
    if (reduction) {
        if (std::strcmp(reduction, "none") == 0) red = kern::CeReduction::None;
        else if (std::strcmp(reduction, "sum") == 0) red = kern::CeReduction::Sum;
        else if (std::strcmp(reduction, "mean") != 0)
            return fail(ACLNN_ERR_PARAM_INVALID,
                        "%s: reductionOptional should be one of \"none\", \"mean\", \"sum\", but got \"%.64s\".", kOp,
                        reduction);
    }
    if (!(labelSmoothing >= 0 && labelSmoothing <= 1))  // NaN fails too
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: labelSmoothing should be in [0, 1], but got %g.", kOp,
                    labelSmoothing);
    if (!std::isfinite(zeta))
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: lseSquareScaleForZloss should be a finite number, but got %g.", kOp,
                    zeta);

    if (logProb->rank() != 2)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: Expected 2 dimension input, but got logProb with sizes %s.", kOp,
                    shape_str(logProb->view).c_str());
    const int64_t n = logProb->view[0], classes = logProb->view[1];
    if (classes == 0)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: logProb must have C > 0 classes, but got sizes %s.", kOp,
                    shape_str(logProb->view).c_str());
    AG_CHECK(check_shape(kOp, target, "target", {n}));
    AG_CHECK(check_grad_shape(gradLoss, "gradLoss", red, n));
    if (weight) AG_CHECK(check_shape(kOp, weight, "weightOptional", {classes}));
    if (gradZloss) AG_CHECK(check_grad_shape(gradZloss, "gradZlossOptional", red, n));
    if (lse) AG_CHECK(check_shape(kOp, lse, "lseForZlossOptional", {n}));
    AG_CHECK(check_same_shape(kOp, out, "out", logProb, "logProb"));
    // out may be logProb itself: each out element reads only its own logProb element.
    AG_CHECK(check_output_memory(kOp, out, "out",
                                 {{gradLoss, "gradLoss"}, {logProb, "logProb"}, {target, "target"},
                                  {weight, "weightOptional"}, {gradZloss, "gradZlossOptional"},
                                  {lse, "lseForZlossOptional"}},
                                 true));

    auto exec = new_executor<CrossEntropyLossGradExec>();
    exec->op = kOp;
    exec->names = kArgs;
    if (zeta == 0) exec->unread = 1u << kGradZloss | 1u << kLse;
    exec->reduction = red;
    exec->ignore_index = ignoreIndex;
    exec->label_smoothing = labelSmoothing;
    exec->zloss_scale = zeta;
    set_view(exec->io[kGradLoss], *gradLoss);
    set_view(exec->io[kLogProb], *logProb);
    set_view(exec->io[kTarget], *target);
    if (weight) set_view(exec->io[kWeight], *weight);
    // With zeta == 0 the z-loss inputs are validated but the kernel does not read them.
    if (gradZloss) set_view(exec->io[kGradZloss], *gradZloss);
    if (lse) set_view(exec->io[kLse], *lse);
    set_view(exec->io[kOut], *out);
    exec->n_in = 6;
    exec->n_out = 1;
    exec->empty = n == 0;  // out is (0, C): nothing to compute, whatever the reduction
    return publish(std::move(exec), workspaceSize, executor);
}

}  // namespace
}  // namespace ag

extern "C" {

aclnnStatus aclnnCrossEntropyLossGradGetWorkspaceSize(
    const aclTensor *gradLoss, const aclTensor *logProb, const aclTensor *target, const aclTensor *weightOptional,
    const aclTensor *gradZlossOptional, const aclTensor *lseForZlossOptional, char *reductionOptional,
    int64_t ignoreIndex, double labelSmoothing, double lseSquareScaleForZloss, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    return ag::guarded("aclnnCrossEntropyLossGradGetWorkspaceSize", [&] {
        return ag::prepare(gradLoss, logProb, target, weightOptional, gradZlossOptional, lseForZlossOptional,
                           reductionOptional, ignoreIndex, labelSmoothing, lseSquareScaleForZloss, out, workspaceSize,
                           executor);
    });
}

aclnnStatus aclnnCrossEntropyLossGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      aclrtStream stream) {
    return ag::guarded("aclnnCrossEntropyLossGrad",
                       [&] { return ag::launch(ag::kOp, workspace, workspaceSize, executor, stream); });
}

}  // extern "C"
