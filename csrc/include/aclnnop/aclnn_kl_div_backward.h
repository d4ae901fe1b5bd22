/* ascendgrad: aclnnKlDivBackward. Gradient of kl_div w.r.t. self: -target * gradOutput * c
 * (-exp(target) * ... with logTarget), summed back to self's shape over broadcast dims. */
#ifndef ASCENDGRAD_ACLNNOP_ACLNN_KL_DIV_BACKWARD_H_
#define ASCENDGRAD_ACLNNOP_ACLNN_KL_DIV_BACKWARD_H_

#include <stdbool.h>

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnKlDivBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target, int64_t reduction, bool logTarget,
    aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnKlDivBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ACLNNOP_ACLNN_KL_DIV_BACKWARD_H_ */
