/* ascendgrad: aclnnSoftshrinkBackward. gradInput = gradOutput where |self| > lambd, 0 where
   -lambd <= self <= lambd, NaN where self is NaN. gradOutput and self broadcast (NumPy rules)
   and may differ in dtype (f16, bf16, f32, f64: computed in f64 if either is f64, else f32);
   gradInput has the broadcast shape and any of those dtypes. lambd: a scalar of any float or
   integer dtype, >= 0 (NULL -> 161001; negative or NaN -> 161002). gradInput may be gradOutput
   itself (the identical view); any other overlap with an input is rejected. */
#ifndef ASCENDGRAD_ACLNNOP_ACLNN_SOFTSHRINK_BACKWARD_H_
#define ASCENDGRAD_ACLNNOP_ACLNN_SOFTSHRINK_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *self, const aclScalar *lambd, aclTensor *gradInput,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnSoftshrinkBackward(void *workspace, uint64_t workspaceSize,
                                                        aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ACLNNOP_ACLNN_SOFTSHRINK_BACKWARD_H_ */
