/* ascendgrad: aclnnCrossEntropyLossGrad. Gradient of cross-entropy w.r.t. the logits, given
 * logProb = log_softmax(logits); class weights, ignoreIndex, label smoothing and the z-loss term. */
#ifndef ASCENDGRAD_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_GRAD_H_
#define ASCENDGRAD_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnCrossEntropyLossGradGetWorkspaceSize(
    const aclTensor *gradLoss, const aclTensor *logProb, const aclTensor *target, const aclTensor *weightOptional,
    const aclTensor *gradZlossOptional, const aclTensor *lseForZlossOptional, char *reductionOptional,
    int64_t ignoreIndex, double labelSmoothing, double lseSquareScaleForZloss, const aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnCrossEntropyLossGrad(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ACLNNOP_ACLNN_CROSS_ENTROPY_LOSS_GRAD_H_ */
