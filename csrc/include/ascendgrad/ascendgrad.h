/* ascendgrad extensions beyond the CANN API: version, kernel thread count, instruction set,
   memcheck's host buffers and the judge's pass. */
#ifndef ASCENDGRAD_ASCENDGRAD_H_
#define ASCENDGRAD_ASCENDGRAD_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the library. */
ACL_FUNC_VISIBILITY const char *ascendgradVersion(void);
/* Threads a kernel may use; starts at OMP_NUM_THREADS or the number of cores. n <= 0 resets. */
ACL_FUNC_VISIBILITY void ascendgradSetNumThreads(int n);
ACL_FUNC_VISIBILITY int ascendgradGetNumThreads(void);
/* Threads a kernel may use when called from the calling thread, over the process-wide count (a
   program that runs kernels on several threads of its own asks for 1 on each); n <= 0 resets. */
ACL_FUNC_VISIBILITY void ascendgradSetThreadNumThreads(int n);
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

/* The judge's one pass (python/ascendgrad/judge.py merges it over slices): a result of n elements
   (ACL_FLOAT16, ACL_BF16, ACL_FLOAT or ACL_DOUBLE, contiguous) against n float64 golden values,
   every statistic of the precision standards cann, cann-v1 and msprobe. score: 0 cann, 1 cann-v1,
   2 msprobe (whose per-element score ranks the worst elements). worstScore and worstIndex hold
   `worst` entries (may be NULL when worst is 0); scoreOut, when not NULL, n scores. Runs on the
   calling thread. ACLNN_ERR_PARAM_NULLPTR for a NULL pointer that is needed,
   ACLNN_ERR_PARAM_INVALID for another dtype or score. */
typedef struct ascendgradJudgeParams {
    aclDataType compareDtype; /* whose ULPs and max-abs limit apply */
    int score, equalNan, ulp; /* ulp: the ULP histogram and maximum (costs a third more) */
    double rtol, atol, maxAbs;
    int limitUlps;
    double v1Mare, msEps, msT1, msT2; /* msprobe's score: its relative error / msT1 */
    int worst;
    double *worstScore;
    int64_t *worstIndex;
    double *scoreOut;
} ascendgradJudgeParams;

typedef struct ascendgradJudgeStats {
    int64_t n, finite, nanBad, infBad, beyond, nonzero, relInf;
    double sumErr, maxErr, sumRel, maxRel;
    int64_t overIndex; /* cann's max-abs rule: -1 when no error exceeds maxAbs */
    double overRatio, overErr, overLim;
    double maxScore; /* the largest per-element score over the pairs finite in both */
    double v1Sum, v1Max;
    int64_t msBelow1, msBelow2;
    double dot, aa, gg, amax, gmax;
    uint64_t maxUlp;
    int64_t ulpHist[13]; /* 0, 1, 2, 3-4, 5-8, ... 513-1024, > 1024 */
    int worstCount;
} ascendgradJudgeStats;

ACL_FUNC_VISIBILITY int ascendgradJudgeMetrics(const void *actual, aclDataType dtype, const double *golden,
                                               int64_t n, const ascendgradJudgeParams *params,
                                               ascendgradJudgeStats *stats);

#ifdef __cplusplus
}
#endif

#endif /* ASCENDGRAD_ASCENDGRAD_H_ */
