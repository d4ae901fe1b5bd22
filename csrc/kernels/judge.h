#pragma once
#include <cstdint>
#include <vector>

#include "common.h"

namespace ag::kern {

// The judge's one pass: a result (any float dtype) against its float64 golden, every statistic
// of every precision standard (python/ascendgrad/compare.py) that merges over slices. One call
// runs on its caller's thread; callers split a tensor into fixed slices and merge the partials in
// slice order, so the sums do not depend on the thread count.
enum class Score { Cann, CannV1, Msprobe };  // which standard's per-element score ranks the worst

struct JudgeParams {
    DType cmp = DType::F32;  // the dtype whose ULPs apply
    Score score = Score::Cann;
    bool equal_nan = true;
    bool ulp = false;        // ULP histogram and max ULP (a third of the time)
    double rtol = 0, atol = 0, max_abs = 0;  // cann
    int limit_ulps = 32;                     // cann: the max-abs limit is max(max_abs, 32 ULP)
    double v1_mare = 1;                      // cann-v1: score = rel / mare threshold
    double ms_eps = 0, ms_t1 = 0.01, ms_t2 = 0.001;  // msprobe (its score: relative error / t1)
    int worst = 0;                           // the top-k elements by score
    double *score_out = nullptr;             // when set: every element's score (n doubles)
};

constexpr int kUlpBuckets = 13;  // 0, 1, 2, 3-4, 5-8, ... 513-1024, > 1024

struct JudgeStats {
    int64_t n = 0, finite = 0, nan_bad = 0, inf_bad = 0, beyond = 0, nonzero = 0;
    bool rel_inf = false;  // |a - g| > 0 where g = 0
    double sum_err = 0, max_err = 0, sum_rel = 0, max_rel = 0;
    // cann's max-abs rule: the element with the largest err / max(max_abs, 32 ULP(g)) among
    // those with err > max_abs (over_index -1: none)
    int64_t over_index = -1;
    double over_ratio = 0, over_err = 0, over_lim = 0;
    double max_score = 0;                               // over the pairs finite in both
    double v1_sum = 0, v1_max = 0;                      // err / (|g| + 1e-7)
    int64_t ms_below1 = 0, ms_below2 = 0;               // err / (|g| + eps) below t1, t2
    double dot = 0, aa = 0, gg = 0, amax = 0, gmax = 0;  // cosine, over finite pairs
    uint64_t max_ulp = 0;
    int64_t ulp_hist[kUlpBuckets] = {};
    std::vector<std::pair<double, int64_t>> worst;  // (score, index), score > 0, largest first
};

// actual: a contiguous view of n elements (F16, BF16, F32 or F64); golden: n doubles.
JudgeStats judge_metrics(const View &actual, const double *golden, const JudgeParams &p);
AG_ISA_KERNEL(JudgeStats judge_metrics_kernel(const View &actual, const double *golden, const JudgeParams &p))

}  // namespace ag::kern
