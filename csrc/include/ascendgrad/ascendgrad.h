/* ascendgrad extensions beyond the CANN API: version, kernel thread count, instruction set and
   memcheck's host buffers. */
#ifndef ASCENDGRAD_ASCENDGRAD_H_
#define ASCENDGRAD_ASCENDGRAD_H_

#include <stddef.h>

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

/* Memcheck (environment variable ASCENDGRAD_MEMCHECK=1 or abort, read when the library loads):
   1 when it is on. Host memory a program hands to the API in place of aclrtMalloc memory is an
   "unknown address" to memcheck unless registered: [ptr, ptr + size) then counts as an
   allocation, fully initialised, named `name` in reports, until unregistered with the same ptr
   and size. Registrations may overlap. Both do nothing when memcheck is off. */
ACL_FUNC_VISIBILITY int ascendgradMemcheckEnabled(void);
ACL_FUNC_VISIBILITY void ascendgradMemcheckRegister(const void *ptr, size_t size, const char *name);
ACL_FUNC_VISIBILITY void ascendgradMemcheckUnregister(const void *ptr, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ASCENDGRAD_H_ */
