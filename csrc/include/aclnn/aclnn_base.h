/* ascendgrad: aclnn framework entry points, as CANN's aclnn/aclnn_base.h. */
#ifndef ASCENDGRAD_ACLNN_ACLNN_BASE_H_
#define ASCENDGRAD_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ACLNN_ACLNN_BASE_H_ */
