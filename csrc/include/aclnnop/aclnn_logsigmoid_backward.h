/* ascendgrad: aclnnLogSigmoidBackward. gradInput = gradOutput / (1 + e^self), computed stably:
   z = e^(-|x|); x < 0 ? g / (1 + z) : g * z / (1 + z) (self = -inf gives g, +inf gives 0).
   gradOutput and self: f16, bf16, f32 or f64, same dtype and shape; gradInput: their shape, any
   of those dtypes (rounded once). `buffer` (the forward's intermediate) must be non-NULL but is
   otherwise ignored, as in CANN: its contents, dtype and shape are not checked. gradInput may be
   gradOutput itself (the identical view); any other overlap with an input is rejected. */
#ifndef ASCENDGRAD_ACLNNOP_ACLNN_LOGSIGMOID_BACKWARD_H_
#define ASCENDGRAD_ACLNNOP_ACLNN_LOGSIGMOID_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSigmoidBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *buffer, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnLogSigmoidBackward(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ACLNNOP_ACLNN_LOGSIGMOID_BACKWARD_H_ */
