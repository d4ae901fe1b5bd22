// aclnnSoftshrinkBackward: validation and executor; the math is kern::softshrink_backward.
#include "aclnnop/aclnn_softshrink_backward.h"

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "executor.h"
#include "kernels/softshrink_backward.h"
#include "status.h"

namespace ag {
namespace {

constexpr const char *kOp = "aclnnSoftshrinkBackward";
constexpr const char *kArgs[] = {"gradOutput", "self", "gradInput"};

// io: gradOutput, self, gradInput (the inputs in their own shapes; the kernel broadcasts)
struct SoftshrinkBackwardExec : Executor {
    double lambd = 0.5;
    aclnnStatus run(const IO &io, void *) const override {
        kern::softshrink_backward(io[0], io[1], lambd, io[2]);
        return ACLNN_SUCCESS;
    }
};

// λ: any float dtype (the spec) and, like CANN's ToFloat and PyTorch's Scalar, integers too.
// Bool and complex are rejected: neither is a threshold.
aclnnStatus check_lambd(const aclScalar *lambd) {
    const auto allowed = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT8,  ACL_UINT8, ACL_INT16,
                          ACL_UINT16, ACL_INT32, ACL_UINT32, ACL_INT64, ACL_UINT64};
    if (std::find(allowed.begin(), allowed.end(), lambd->dtype) == allowed.end())
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: Scalar lambd not implemented for %s, should be in dtype support list %s.",
                    kOp, dtype_name(lambd->dtype), dtype_list_str(allowed).c_str());
    const double v = scalar_value(*lambd);
    if (!(v >= 0))  // also NaN
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: lambd should be greater or equal to 0, but found to be [%f].", kOp, v);
    return ACLNN_SUCCESS;
}

aclnnStatus prepare(const aclTensor *gradOutput, const aclTensor *self, const aclScalar *lambd, aclTensor *gradInput,
                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    AG_CHECK(check_outputs(kOp, workspaceSize, executor));
    AG_CHECK(check_not_null(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_not_null(kOp, self, "self"));
    AG_CHECK(check_scalar_not_null(kOp, lambd, "lambd"));
    AG_CHECK(check_not_null(kOp, gradInput, "gradInput"));
    AG_CHECK(check_tensor(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_tensor(kOp, self, "self"));
    AG_CHECK(check_tensor(kOp, gradInput, "gradInput"));
    AG_CHECK(check_float_dtype(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_float_dtype(kOp, self, "self"));
    AG_CHECK(check_float_dtype(kOp, gradInput, "gradInput"));
    AG_CHECK(check_max_rank(kOp, gradOutput, "gradOutput", kOpMaxRank));
    AG_CHECK(check_max_rank(kOp, self, "self", kOpMaxRank));  // gradInput: their broadcast shape
    std::vector<int64_t> shape;
    AG_CHECK(broadcast_shapes(kOp, gradOutput, "gradOutput", self, "self", &shape));
    AG_CHECK(check_shape(kOp, gradInput, "gradInput", shape));
    AG_CHECK(check_lambd(lambd));
    AG_CHECK(check_output_memory(kOp, gradInput, "gradInput", {{gradOutput, "gradOutput"}, {self, "self"}}, true));

    auto exec = new_executor<SoftshrinkBackwardExec>();
    exec->op = kOp;
    exec->names = kArgs;
    exec->lambd = scalar_value(*lambd);
    set_view(exec->io[0], *gradOutput);
    set_view(exec->io[1], *self);
    set_view(exec->io[2], *gradInput);
    exec->n_in = 2;
    exec->n_out = 1;
    exec->empty = gradInput->numel() == 0;
    return publish(std::move(exec), workspaceSize, executor);
}

}  // namespace
}  // namespace ag

extern "C" {

aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                    const aclScalar *lambd, aclTensor *gradInput,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    return ag::guarded("aclnnSoftshrinkBackwardGetWorkspaceSize", [&] {
        return ag::prepare(gradOutput, self, lambd, gradInput, workspaceSize, executor);
    });
}

aclnnStatus aclnnSoftshrinkBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    const aclrtStream stream) {
    return ag::guarded("aclnnSoftshrinkBackward",
                       [&] { return ag::launch(ag::kOp, workspace, workspaceSize, executor, stream); });
}

}  // extern "C"
