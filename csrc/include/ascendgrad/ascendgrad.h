/* ascendgrad extensions beyond the CANN API: version and kernel thread count. */
#ifndef ASCENDGRAD_ASCENDGRAD_H_
#define ASCENDGRAD_ASCENDGRAD_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library. */
ACL_FUNC_VISIBILITY const char *ascendgradVersion(void);
/* Threads a kernel may use; starts at OMP_NUM_THREADS or the number of cores. n <= 0 resets. */
ACL_FUNC_VISIBILITY void ascendgradSetNumThreads(int n);
ACL_FUNC_VISIBILITY int ascendgradGetNumThreads(void);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ASCENDGRAD_H_ */
