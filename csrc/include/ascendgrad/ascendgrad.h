/* ascendgrad extensions beyond the CANN API: version, kernel thread count and instruction set. */
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
/* Instruction set the kernels run with: "avx512", "avx2" (x86-64), "neon" (aarch64) or "baseline"
   (the best this CPU has, chosen once; the environment variable ASCENDGRAD_ISA=baseline|avx2 asks
   for at most that). */
ACL_FUNC_VISIBILITY const char *ascendgradKernelIsa(void);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ASCENDGRAD_H_ */
