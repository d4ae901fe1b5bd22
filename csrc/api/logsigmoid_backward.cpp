// aclnnLogSigmoidBackward: validation and executor; the math is kern::log_sigmoid_backward.
#include "aclnnop/aclnn_logsigmoid_backward.h"

#include "checks.h"
#include "executor.h"
#include "kernels/logsigmoid_backward.h"
#include "status.h"

namespace ag {
namespace {

constexpr const char *kOp = "aclnnLogSigmoidBackward";
constexpr const char *kArgs[] = {"gradOutput", "self", "buffer", "gradInput"};

// io: gradOutput, self, buffer (never read), gradInput
struct LogSigmoidBackwardExec : Executor {
    aclnnStatus run(const IO &io, void *) const override {
        kern::log_sigmoid_backward(io[0], io[1], io[3]);
        return ACLNN_SUCCESS;
    }
};

aclnnStatus prepare(const aclTensor *gradOutput, const aclTensor *self, const aclTensor *buffer,
                    aclTensor *gradInput, uint64_t *workspaceSize, aclOpExecutor **executor) {
    AG_CHECK(check_outputs(kOp, workspaceSize, executor));
    AG_CHECK(check_not_null(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_not_null(kOp, self, "self"));
    AG_CHECK(check_not_null(kOp, buffer, "buffer"));  // required, as CANN, though never read
    AG_CHECK(check_not_null(kOp, gradInput, "gradInput"));
    AG_CHECK(check_tensor(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_tensor(kOp, self, "self"));
    AG_CHECK(check_tensor(kOp, gradInput, "gradInput"));
    AG_CHECK(check_float_dtype(kOp, gradOutput, "gradOutput"));
    AG_CHECK(check_same_dtype(kOp, self, "self", gradOutput->dtype));
    AG_CHECK(check_float_dtype(kOp, gradInput, "gradInput"));
    // No rank limit of its own (CANN's CheckShapeValid has none): any rank an aclTensor describes.
    AG_CHECK(check_same_shape(kOp, self, "self", gradOutput, "gradOutput"));
    AG_CHECK(check_same_shape(kOp, gradInput, "gradInput", gradOutput, "gradOutput"));
    // buffer is not read, so gradInput may overlap it
    AG_CHECK(check_output_memory(kOp, gradInput, "gradInput", {{gradOutput, "gradOutput"}, {self, "self"}}, true));

    auto exec = new_executor<LogSigmoidBackwardExec>();
    exec->op = kOp;
    exec->names = kArgs;
    exec->unread = 1u << 2;
    set_view(exec->io[0], *gradOutput);
    set_view(exec->io[1], *self);
    // Kept only so that aclSetInputTensorAddr(…, 2, …) works as for any input; a buffer that
    // describes no view a kernel could take stays "not given" (its shape is not checked).
    if (buffer->rank() <= kern::kMaxRank && !buffer->numel_overflow && buffer->negative_dim < 0 &&
        buffer->negative_storage_dim < 0)
        set_view(exec->io[2], *buffer);
    set_view(exec->io[3], *gradInput);
    exec->n_in = 3;
    exec->n_out = 1;
    exec->empty = gradOutput->numel() == 0;
    return publish(std::move(exec), workspaceSize, executor);
}

}  // namespace
}  // namespace ag

extern "C" {

aclnnStatus aclnnLogSigmoidBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                    const aclTensor *buffer, aclTensor *gradInput,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    return ag::guarded("aclnnLogSigmoidBackwardGetWorkspaceSize", [&] {
        return ag::prepare(gradOutput, self, buffer, gradInput, workspaceSize, executor);
    });
}

aclnnStatus aclnnLogSigmoidBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return ag::guarded("aclnnLogSigmoidBackward",
                       [&] { return ag::launch(ag::kOp, workspace, workspaceSize, executor, stream); });
}

}  // extern "C"
