// aclnnKlDivBackward: validation and executor; the math is kern::kl_div_backward.
#include "aclnnop/aclnn_kl_div_backward.h"

#include "checks.h"
#include "executor.h"
#include "kernels/kl_div_backward.h"
#include "status.h"

namespace ag {
namespace {

constexpr const char *kOp = "aclnnKlDivBackward";
constexpr const char *kArgs[] = {"gradOutput", "self", "target", "out"};

struct KlDivBackwardExec : Executor {
    kern::KlArgs args;
    aclnnStatus run(const IO &io, void *) const override {
        kern::kl_div_backward(io[0], io[2], io[3], args);
        return ACLNN_SUCCESS;
    }
};

aclnnStatus prepare(const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target, int64_t reduction,
                    bool logTarget, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    AG_CHECK(check_outputs(kOp, workspaceSize, executor));
    AG_CHECK(check_not_null(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_not_null(kOp, self, "self"));
    AG_CHECK(check_not_null(kOp, target, "target"));
    AG_CHECK(check_not_null(kOp, out, "out"));
    AG_CHECK(check_tensor(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_tensor(kOp, self, "self"));
    AG_CHECK(check_tensor(kOp, target, "target"));
    AG_CHECK(check_tensor(kOp, out, "out"));
    // Mixed float dtypes are allowed (as CANN): computed in f64 if any input is f64, else f32.
    AG_CHECK(check_float_dtype(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_float_dtype(kOp, self, "self"));
    AG_CHECK(check_float_dtype(kOp, target, "target"));
    AG_CHECK(check_float_dtype(kOp, out, "out"));
    if (reduction < 0 || reduction > 3)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: reduction should be 0 (none), 1 (mean), 2 (sum) or 3 (batchmean), but got %lld.", kOp,
                    (long long)reduction);

    AG_CHECK(check_max_rank(kOp, gradOutput, "gradOutput", kOpMaxRank));
    AG_CHECK(check_max_rank(kOp, self, "self", kOpMaxRank));
    AG_CHECK(check_max_rank(kOp, target, "target", kOpMaxRank));
    AG_CHECK(check_max_rank(kOp, out, "out", kOpMaxRank));
    std::vector<int64_t> b;
    AG_CHECK(broadcast_shapes(kOp, self, "self", target, "target", &b));
    // gradOutput must broadcast to B itself: broadcast(gradOutput, B) == B
    bool fits = gradOutput->view.size() <= b.size();
    for (size_t i = 0; fits && i < gradOutput->view.size(); ++i) {
        const int64_t gd = gradOutput->view[gradOutput->view.size() - 1 - i], bd = b[b.size() - 1 - i];
        fits = gd == bd || gd == 1;
    }
    if (!fits)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: shape of gradOutput must broadcast to %s, but current is %s.", kOp,
                    shape_str(b).c_str(), shape_str(gradOutput->view).c_str());
    __int128 bnum = 1;  // self and target each fit in int64; their broadcast may not
    for (int64_t d : b) bnum = bnum * d > INT64_MAX ? __int128(INT64_MAX) + 1 : bnum * d;
    if (bnum > INT64_MAX)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: broadcast shape %s of self and target has more elements than int64 can count.", kOp,
                    shape_str(b).c_str());
    AG_CHECK(check_same_shape(kOp, out, "out", self, "self"));
    // In place is safe: each out element reads gradOutput/target only at its own position then.
    AG_CHECK(check_output_memory(kOp, out, "out",
                                 {{gradOutput, "gradOutput"}, {self, "self"}, {target, "target"}}, true));

    auto exec = new_executor<KlDivBackwardExec>();
    exec->op = kOp;
    exec->names = kArgs;
    exec->unread = 1u << 1;
    kern::KlArgs &a = exec->args;
    a.ndim = int(b.size());
    std::copy(b.begin(), b.end(), a.shape);
    // An empty B with a non-empty self has its 0s among the dims summed over, whose other sizes
    // may multiply past int64 on the way to that 0. Every out element sums nothing either way,
    // so the kernel gets 0 for all the summed dims (what it reads there then does not matter).
    if (bnum == 0)
        for (int d = 0, lead = a.ndim - self->rank(); d < a.ndim; ++d)
            if (d < lead || self->view[size_t(d - lead)] != a.shape[d]) a.shape[d] = 0;
    a.log_target = logTarget;
    a.f64 = gradOutput->dtype == ACL_DOUBLE || self->dtype == ACL_DOUBLE || target->dtype == ACL_DOUBLE;
    // c (PyTorch's rules); with no element in B it never multiplies anything, so keep it finite.
    const int64_t bn = int64_t(bnum);
    if (reduction == 1) a.scale = bn > 0 ? 1.0 / double(bn) : 1.0;
    else if (reduction == 3) a.scale = b.empty() || b[0] == 0 ? 1.0 : 1.0 / double(b[0]);
    else a.scale = 1.0;
    set_view(exec->io[0], *gradOutput);
    set_view(exec->io[1], *self);  // not read (the gradient does not depend on self's values)
    set_view(exec->io[2], *target);
    set_view(exec->io[3], *out);
    exec->n_in = 3;
    exec->n_out = 1;
    // An empty self has nothing to compute. An empty B with a non-empty self is not empty: out
    // gets zeros, the sum over no pre-images.
    exec->empty = self->numel() == 0;
    return publish(std::move(exec), workspaceSize, executor);
}

}  // namespace
}  // namespace ag

extern "C" {

aclnnStatus aclnnKlDivBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                               const aclTensor *target, int64_t reduction, bool logTarget,
                                               aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return ag::guarded("aclnnKlDivBackwardGetWorkspaceSize", [&] {
        return ag::prepare(gradOutput, self, target, reduction, logTarget, out, workspaceSize, executor);
    });
}

aclnnStatus aclnnKlDivBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                               aclrtStream stream) {
    return ag::guarded("aclnnKlDivBackward",
                       [&] { return ag::launch(ag::kOp, workspace, workspaceSize, executor, stream); });
}

}  // extern "C"
