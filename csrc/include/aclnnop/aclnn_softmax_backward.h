/* ascendgrad: aclnnSoftmaxBackward. out = output * (gradOutput - sum_dim(gradOutput * output)). */
#ifndef ASCENDGRAD_ACLNNOP_ACLNN_SOFTMAX_BACKWARD_H_
#define ASCENDGRAD_ACLNNOP_ACLNN_SOFTMAX_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *output, int64_t dim, aclTensor *out,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftmaxBackward(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ACLNNOP_ACLNN_SOFTMAX_BACKWARD_H_ */
