// aclnnSoftmaxBackward: validation and executor; the math is kern::softmax_backward.
#include "aclnnop/aclnn_softmax_backward.h"

#include "checks.h"
#include "executor.h"
#include "kernels/softmax_backward.h"
#include "status.h"

namespace ag {
namespace {

constexpr const char *kOp = "aclnnSoftmaxBackward";
constexpr const char *kArgs[] = {"gradOutput", "output", "out"};

struct SoftmaxBackwardExec : Executor {
    int dim = 0;
    aclnnStatus run(const IO &io, void *) const override {
        kern::softmax_backward(io[0], io[1], dim, io[2]);
        return ACLNN_SUCCESS;
    }
};

aclnnStatus prepare(const aclTensor *gradOutput, const aclTensor *output, int64_t dim, aclTensor *out,
                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    AG_CHECK(check_outputs(kOp, workspaceSize, executor));
    AG_CHECK(check_not_null(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_not_null(kOp, output, "output"));
    AG_CHECK(check_not_null(kOp, out, "out"));
    AG_CHECK(check_tensor(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_tensor(kOp, output, "output"));
    AG_CHECK(check_tensor(kOp, out, "out"));
    AG_CHECK(check_float_dtype(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_same_dtype(kOp, output, "output", gradOutput->dtype));
    AG_CHECK(check_float_dtype(kOp, out, "out"));
    const int64_t rank = gradOutput->rank() == 0 ? 1 : gradOutput->rank();
    if (dim < -rank || dim >= rank)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: provided dim %lld not in the range of input size %lld.", kOp,
                    (long long)dim, (long long)rank);
    AG_CHECK(check_max_rank(kOp, gradOutput, "gradOutput", kOpMaxRank));  // output and out: same shape
    AG_CHECK(check_same_shape(kOp, output, "output", gradOutput, "gradOutput"));
    AG_CHECK(check_same_shape(kOp, out, "out", gradOutput, "gradOutput"));
    AG_CHECK(check_output_memory(kOp, out, "out", {{gradOutput, "gradOutput"}, {output, "output"}}, true));

    auto exec = new_executor<SoftmaxBackwardExec>();
    exec->op = kOp;
    exec->names = kArgs;
    exec->dim = gradOutput->rank() == 0 ? 0 : int(dim < 0 ? dim + rank : dim);
    set_view(exec->io[0], *gradOutput);
    set_view(exec->io[1], *output);
    set_view(exec->io[2], *out);
    exec->n_in = 2;
    exec->n_out = 1;
    exec->empty = gradOutput->numel() == 0;
    return publish(std::move(exec), workspaceSize, executor);
}

}  // namespace
}  // namespace ag

extern "C" {

aclnnStatus aclnnSoftmaxBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *output, int64_t dim,
                                                 aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return ag::guarded("aclnnSoftmaxBackwardGetWorkspaceSize",
                       [&] { return ag::prepare(gradOutput, output, dim, out, workspaceSize, executor); });
}

aclnnStatus aclnnSoftmaxBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                 aclrtStream stream) {
    return ag::guarded("aclnnSoftmaxBackward",
                       [&] { return ag::launch(ag::kOp, workspace, workspaceSize, executor, stream); });
}

}  // extern "C"
