// ascendgradJudgeMetrics, the judge's one pass: statuses for bad arguments, the statistics against
// a direct computation in double (counts exact, sums to rounding), NaN/inf mismatches, the worst
// elements in order, the ULP histogram, and the same results on every ISA this CPU has (the
// Python tests hold it to the NumPy oracle on a wide corpus: tests_py/test_judge.py).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "aclnn/acl_meta.h"
#include "ascendgrad/ascendgrad.h"
#include "kernels/common.h"

namespace {

ascendgradJudgeParams cann_f32(int worst, double *ws, int64_t *wi) {
    ascendgradJudgeParams p{};
    p.compareDtype = ACL_FLOAT;
    p.score = 0;
    p.equalNan = 1;
    p.rtol = std::ldexp(1.0, -10), p.atol = std::ldexp(1.0, -16), p.maxAbs = 0.01, p.limitUlps = 32;
    p.v1Mare = 1, p.msT1 = 0.001, p.msT2 = 0.0001;
    p.worst = worst, p.worstScore = ws, p.worstIndex = wi;
    return p;
}

TEST(Judge, BadArgumentsGetTheirStatus) {
    std::vector<float> a(4, 1.f);
    std::vector<double> g(4, 1.0);
    double ws[2];
    int64_t wi[2];
    ascendgradJudgeParams p = cann_f32(2, ws, wi);
    ascendgradJudgeStats s;
    EXPECT_EQ(ascendgradJudgeMetrics(nullptr, ACL_FLOAT, g.data(), 4, &p, &s), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, nullptr, 4, &p, &s), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 4, nullptr, &s), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 4, &p, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_INT32, g.data(), 4, &p, &s), ACLNN_ERR_PARAM_INVALID);
    p.score = 3;
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 4, &p, &s), ACLNN_ERR_PARAM_INVALID);
    p = cann_f32(2, nullptr, nullptr);
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 4, &p, &s), ACLNN_ERR_PARAM_NULLPTR);
    p = cann_f32(0, nullptr, nullptr);  // no worst elements asked for: no buffers needed
    EXPECT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 0, &p, &s), ACLNN_SUCCESS);
    EXPECT_EQ(s.n, 0);
}

TEST(Judge, StatisticsMatchADirectComputation) {
    const int64_t n = 50000;  // several blocks, a partial last one
    std::mt19937 rng(3);
    std::normal_distribution<double> nd;
    std::vector<double> g(n);
    std::vector<float> a(n);
    for (int64_t i = 0; i < n; ++i) {
        g[i] = nd(rng);
        a[i] = float(g[i] * (1 + 1e-3 * nd(rng)));
    }
    a[123] = float(g[123] + 0.5);  // beyond the tolerance and the max-abs limit
    a[40000] = float(g[40000] - 2.0);
    double ws[3];
    int64_t wi[3];
    const ascendgradJudgeParams p = cann_f32(3, ws, wi);
    ascendgradJudgeStats s;
    ASSERT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), n, &p, &s), ACLNN_SUCCESS);
    int64_t beyond = 0;
    double sum_err = 0, max_err = 0, best = 0;
    int64_t best_i = -1;
    for (int64_t i = 0; i < n; ++i) {
        const double err = std::fabs(double(a[i]) - g[i]), sc = err / (p.atol + p.rtol * std::fabs(g[i]));
        beyond += sc > 1;
        sum_err += err;
        max_err = std::max(max_err, err);
        if (sc > best) best = sc, best_i = i;
    }
    EXPECT_EQ(s.n, n);
    EXPECT_EQ(s.finite, n);
    EXPECT_EQ(s.beyond, beyond);
    EXPECT_EQ(s.maxErr, max_err);
    EXPECT_NEAR(s.sumErr, sum_err, 1e-9 * sum_err);
    EXPECT_EQ(s.nanBad + s.infBad, 0);
    ASSERT_EQ(s.worstCount, 3);
    EXPECT_EQ(wi[0], best_i);
    EXPECT_EQ(ws[0], best);
    EXPECT_GE(ws[1], ws[2]);
    EXPECT_EQ(s.overIndex >= 0, true);  // the max-abs rule: the element with the largest err / limit
    EXPECT_EQ(s.overErr, std::fabs(double(a[40000]) - g[40000]));
    EXPECT_EQ(s.maxScore, best);
    int64_t hist = 0;
    for (int64_t c : s.ulpHist) hist += c;
    EXPECT_EQ(hist, 0);  // (ulp off)
}

TEST(Judge, NanAndInfMismatchesAndTheUlpHistogram) {
    std::vector<float> a = {1.f, std::nanf(""), INFINITY, -INFINITY, 2.f, std::nanf(""), 1.f};
    std::vector<double> g = {1.0, 1.0, 5.0, -INFINITY, std::nextafter(2.0, 3.0), NAN, std::nextafter(1.0f, 2.0f)};
    double ws[7];
    int64_t wi[7];
    ascendgradJudgeParams p = cann_f32(7, ws, wi);
    p.ulp = 1;
    ascendgradJudgeStats s;
    ASSERT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 7, &p, &s), ACLNN_SUCCESS);
    EXPECT_EQ(s.nanBad, 1);  // NaN where 1 is: a mismatch; NaN in both: agreement (equalNan)
    EXPECT_EQ(s.infBad, 1);  // inf where 5 is; -inf in both agrees
    EXPECT_EQ(s.finite, 3);
    EXPECT_EQ(s.ulpHist[0], 2);  // 1 vs 1, and 2 vs 2 + 2^-51 (the same float)
    EXPECT_EQ(s.ulpHist[1], 1);  // 1 vs the next float
    EXPECT_EQ(s.maxUlp, 1u);
    ASSERT_GE(s.worstCount, 2);
    EXPECT_TRUE(std::isinf(ws[0]) && std::isinf(ws[1]));  // the mismatches first, by index
    EXPECT_EQ(wi[0], 1);
    EXPECT_EQ(wi[1], 2);
    p.equalNan = 0;
    ASSERT_EQ(ascendgradJudgeMetrics(a.data(), ACL_FLOAT, g.data(), 7, &p, &s), ACLNN_SUCCESS);
    EXPECT_EQ(s.nanBad, 2);
}

TEST(Judge, EveryIsaGivesTheSameStatistics) {
    const int64_t n = 20000;
    std::mt19937 rng(5);
    std::normal_distribution<double> nd;
    std::vector<double> g(n), a(n);
    for (int64_t i = 0; i < n; ++i) g[i] = nd(rng), a[i] = g[i] + 1e-4 * nd(rng);
    for (int score = 0; score < 3; ++score) {
        std::vector<ascendgradJudgeStats> per;
        for (ag::kern::Isa isa : {ag::kern::Isa::Baseline, ag::kern::Isa::Avx2, ag::kern::Isa::Avx512,
                                  ag::kern::Isa::Neon}) {
            if (!ag::kern::set_isa(isa)) continue;
            double ws[4];
            int64_t wi[4];
            ascendgradJudgeParams p = cann_f32(4, ws, wi);
            p.compareDtype = ACL_DOUBLE, p.score = score, p.msEps = std::ldexp(1.0, -52);
            ascendgradJudgeStats s;
            ASSERT_EQ(ascendgradJudgeMetrics(a.data(), ACL_DOUBLE, g.data(), n, &p, &s), ACLNN_SUCCESS);
            per.push_back(s);
        }
        // (the loop ends on the best ISA this CPU has: the process's own again)
        for (const auto &s : per) {  // counts and maxima exact; sums to the vector's reassociation
            EXPECT_EQ(s.beyond, per[0].beyond);
            EXPECT_EQ(s.maxErr, per[0].maxErr);
            EXPECT_EQ(s.msBelow1, per[0].msBelow1);
            EXPECT_NEAR(s.sumRel, per[0].sumRel, 1e-12 * per[0].sumRel);
            EXPECT_NEAR(s.dot, per[0].dot, 1e-12 * std::fabs(per[0].dot) + 1e-300);
        }
    }
}

}  // namespace
