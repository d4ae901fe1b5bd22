// aclnnKlDivBackward: values against a float64 reference loop (every dtype, mixed dtypes, every
// reduction, logTarget, broadcasting with the sum back to self's shape, strided views), every
// failure path (status and exact message), empty problems, thread-count determinism, in-place
// use.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_kl_div_backward.h"
#include "test_util.h"

using namespace agtest;

namespace {

const char *const kOp = "aclnnKlDivBackward";

struct Kl {
    HostTensor g, x, t, out;
    int64_t reduction = 1;
    bool log_target = false;

    aclnnStatus phase1(uint64_t *ws, aclOpExecutor **ex) const {
        return aclnnKlDivBackwardGetWorkspaceSize(g.t(), x.t(), t.t(), reduction, log_target, out.t(), ws, ex);
    }
    aclnnStatus run(aclrtStream stream = nullptr) const {
        uint64_t ws = 0;
        aclOpExecutor *ex = nullptr;
        const aclnnStatus s = phase1(&ws, &ex);
        if (s != ACLNN_SUCCESS) return s;
        EXPECT_EQ(ws, 0u);
        return run_phase2(aclnnKlDivBackward, ws, ex, stream);
    }
};

Shape broadcast(const Shape &a, const Shape &b) {
    const size_t n = std::max(a.size(), b.size());
    Shape r(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
        r[i] = da == 1 ? db : da;
    }
    return r;
}

// Row-major index into shape s (right-aligned to B, size-1 dims broadcast) of B's index idx.
int64_t index_in(const Shape &s, const Shape &idx) {
    const size_t lead = idx.size() - s.size();
    int64_t lin = 0;
    for (size_t d = 0; d < s.size(); ++d) lin = lin * s[d] + (s[d] == 1 ? 0 : idx[d + lead]);
    return lin;
}

// float64 reference of SPEC 2.5; *mag gets the sum of |terms| per out element.
std::vector<double> reference(const Kl &p, std::vector<double> *mag) {
    const Shape b = broadcast(p.x.shape(), p.t.shape());
    const int64_t nb = numel(b);
    double c = 1;
    if (p.reduction == 1) c = 1.0 / double(nb);
    if (p.reduction == 3) c = b.empty() ? 1.0 : 1.0 / double(b[0]);
    std::vector<double> r(size_t(p.x.numel()), 0.0);
    mag->assign(r.size(), 0.0);
    Shape idx(b.size(), 0);
    for (int64_t k = 0; k < nb; ++k) {
        const double tv = p.t.at(index_in(p.t.shape(), idx));
        const double gv = p.g.at(index_in(p.g.shape(), idx));
        const double term = -(p.log_target ? std::exp(tv) : tv) * gv * c;
        const int64_t o = index_in(p.x.shape(), idx);
        r[o] += term;
        (*mag)[o] += std::fabs(term);
        for (size_t d = b.size(); d-- > 0;) {
            if (++idx[d] < b[d]) break;
            idx[d] = 0;
        }
    }
    return r;
}

aclDataType compute_of(const Kl &p) {
    return p.g.dtype() == ACL_DOUBLE || p.x.dtype() == ACL_DOUBLE || p.t.dtype() == ACL_DOUBLE ? ACL_DOUBLE
                                                                                               : ACL_FLOAT;
}

void expect_matches_reference(const Kl &p, const std::string &what) {
    std::vector<double> mag;
    const std::vector<double> ref = reference(p, &mag);
    const aclDataType dt = p.out.dtype();
    const double ec = eps_of(compute_of(p)), eo = eps_of(dt);
    std::vector<double> tol(ref.size());
    // terms are formed in the compute type; sums (here and in the library) run in double
    const double pre = double(numel(broadcast(p.x.shape(), p.t.shape()))) / double(std::max<int64_t>(1, p.x.numel()));
    const double es = (8 * ec + 2 * pre * eps_of(ACL_DOUBLE));
    for (size_t k = 0; k < ref.size(); ++k) tol[k] = eo * std::fabs(ref[k]) + es * mag[k] + denorm_min_of(dt);
    expect_close(p.out.values(), ref, tol, what);
}

// A tensor of `shape` in layout l: 0 contiguous, 1 every stride negated, 2 gaps between
// elements (stride x2, offset 1), 3 column-major.
HostTensor view_of(const Shape &shape, aclDataType dt, int l) {
    if (numel(shape) == 0 || l == 0) return HostTensor(shape, dt);
    Shape st = contiguous_strides(shape);
    int64_t off = 0;
    if (l == 1) {
        for (size_t d = 0; d < shape.size(); ++d) {
            off += (shape[d] - 1) * st[d];
            st[d] = -st[d];
        }
    } else if (l == 2) {
        for (auto &s : st) s *= 2;
        off = 1;
    } else {
        int64_t acc = 1;
        for (size_t d = 0; d < shape.size(); ++d) {
            st[d] = acc;
            acc *= shape[d];
        }
    }
    return HostTensor(shape, st, off, dt);
}

struct Case {
    Shape x, t, g;
};

const std::vector<Case> &cases() {
    static const std::vector<Case> v = {
        {{2, 3}, {2, 3}, {2, 3}},          // plain
        {{2, 3}, {2, 3}, {}},              // 0-d gradOutput
        {{2, 3}, {3}, {1, 3}},             // target broadcast to self
        {{3}, {2, 3}, {2, 3}},             // self broadcast along a new leading dim: summed back
        {{2, 1, 4}, {2, 3, 4}, {3, 1}},    // middle dim summed
        {{4, 1}, {1, 5}, {4, 5}},          // both broadcast, inner dim summed
        {{1, 5}, {4, 1}, {1}},             // outer dim summed
        {{3, 1, 2}, {4, 1}, {1, 4, 2}},    // B (3, 4, 2), dim 1 summed
        {{1, 1}, {5, 7}, {7}},             // a single out element
        {{}, {}, {}},                      // 0-d everything
        {{}, {6}, {6}},                    // 0-d self, summed over everything
        {{5}, {1}, {1}},                   // target broadcast, nothing summed
        {{1, 3}, {1, 1, 3}, {3}},          // extra size-1 dim in B: nothing summed
        {{2, 1, 3, 1}, {2, 5, 3, 4}, {5, 1, 4}},
    };
    return v;
}

std::string describe(const Kl &p) {
    char b[256];
    std::snprintf(b, sizeof b, "g %s%s x %s%s t %s%s out %s reduction %lld logTarget %d", dtype_str(p.g.dtype()),
                  shape_str(p.g.shape()).c_str(), dtype_str(p.x.dtype()), shape_str(p.x.shape()).c_str(),
                  dtype_str(p.t.dtype()), shape_str(p.t.shape()).c_str(), dtype_str(p.out.dtype()),
                  (long long)p.reduction, int(p.log_target));
    return b;
}

Kl make(const Case &c, aclDataType gd, aclDataType xd, aclDataType td, aclDataType od, int64_t red, bool lt,
        int layout = 0, uint64_t seed = 3) {
    std::mt19937_64 rng(seed);
    Kl p;
    p.reduction = red;
    p.log_target = lt;
    p.g = view_of(c.g, gd, layout);
    p.x = view_of(c.x, xd, (layout + 1) % 4);
    p.t = view_of(c.t, td, (layout + 2) % 4);
    p.out = view_of(c.x, od, (layout + 3) % 4);
    p.g.fill_random(rng, -2, 2);
    p.x.fill_random(rng, -3, 1);
    p.t.fill_random(rng, lt ? -3 : 0, 1.5);
    p.out.fill_storage(7.0);
    return p;
}

void check(const Kl &p) {
    ASSERT_EQ(p.run(), ACLNN_SUCCESS) << describe(p) << ": " << take_error();
    expect_matches_reference(p, describe(p));
}

// Phase 1 only; a failure must leave out (a canary), workspaceSize and executor as they were.
aclnnStatus phase1_status(const Kl &p) {
    uint64_t ws = 12345;
    aclOpExecutor *ex = nullptr;
    const std::vector<unsigned char> before = p.out.t() ? p.out.storage_bytes() : std::vector<unsigned char>();
    const aclnnStatus s = p.phase1(&ws, &ex);
    if (s == ACLNN_SUCCESS) {
        aclDestroyAclOpExecutor(ex);
    } else {
        EXPECT_EQ(ws, 12345u);
        EXPECT_EQ(ex, nullptr);
        if (p.out.t()) EXPECT_TRUE(p.out.storage_bytes() == before) << "out written by a failed phase 1";
    }
    return s;
}

#define EXPECT_FAILS(p, status, msg)                            \
    do {                                                        \
        EXPECT_EQ(phase1_status(p), status);                    \
        EXPECT_EQ(take_error(), std::string(kOp) + ": " + msg); \
    } while (0)

const std::string kFloats = "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE]";

}  // namespace

// ---------------------------------------------------------------------------------------------
// values

TEST(KlDivBackwardValues, EveryDtypeReductionLogTargetAndBroadcast) {
    for (aclDataType dt : float_dtypes())
        for (const Case &c : cases())
            for (int64_t red = 0; red < 4; ++red)
                for (bool lt : {false, true}) check(make(c, dt, dt, dt, dt, red, lt));
}

TEST(KlDivBackwardValues, MixedDtypes) {
    // every combination of gradOutput, self, target and out dtypes: pointwise and summed cases
    for (const Case &c : {cases()[0], cases()[4]})
        for (aclDataType gd : float_dtypes())
            for (aclDataType xd : float_dtypes())
                for (aclDataType td : float_dtypes())
                    for (aclDataType od : float_dtypes()) check(make(c, gd, xd, td, od, 1, gd == td));
}

TEST(KlDivBackwardValues, SelfF64MakesTheComputeF64) {
    // f32 gradOutput and target, f64 self and out: the product is formed in double
    Kl p;
    p.g = make_tensor({1}, ACL_FLOAT, {1.0 + std::ldexp(1.0, -20)});
    p.t = make_tensor({1}, ACL_FLOAT, {1.0 + std::ldexp(1.0, -21)});
    p.x = HostTensor({1}, ACL_DOUBLE);
    p.out = HostTensor({1}, ACL_DOUBLE);
    p.reduction = 0;
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    EXPECT_EQ(p.out.at(0), -(1.0 + std::ldexp(1.0, -20)) * (1.0 + std::ldexp(1.0, -21)));
    p.x = HostTensor({1}, ACL_FLOAT);  // all f32: rounded to float
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    EXPECT_EQ(p.out.at(0), double(-float((1.0 + std::ldexp(1.0, -20)) * (1.0 + std::ldexp(1.0, -21)))));
}

TEST(KlDivBackwardValues, StridedAndNegativelyStridedViews) {
    for (int layout : {1, 2, 3})
        for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE, ACL_BF16})
            for (const Case &c : cases())
                for (int64_t red : {0, 3}) check(make(c, dt, dt, dt, dt, red, red == 3, layout));
}

TEST(KlDivBackwardValues, CannDocumentedExample) {
    Kl p;
    p.g = make_tensor({2, 2}, ACL_FLOAT, {2, 3, 5, 8});
    p.x = make_tensor({2, 2}, ACL_FLOAT, {2, 3, 5, 8});
    p.t = make_tensor({2, 2}, ACL_FLOAT, {2, 3, 5, 8});
    p.out = HostTensor({2, 2}, ACL_FLOAT);
    p.reduction = 0;
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    EXPECT_EQ(p.out.values(), (std::vector<double>{-4, -9, -25, -64}));
}

TEST(KlDivBackwardValues, ScaleOfEachReduction) {
    // g = 1, target = 1: out = -c per element of B, summed back to self
    const struct { Shape x, t; int64_t red; double want; } rows[] = {
        {{4, 3}, {4, 3}, 0, -1.0},       {{4, 3}, {4, 3}, 1, -1.0 / 12}, {{4, 3}, {4, 3}, 2, -1.0},
        {{4, 3}, {4, 3}, 3, -1.0 / 4},   {{3}, {4, 3}, 3, -4.0 / 4},     // B[0] = 4, 4 pre-images
        {{3}, {4, 3}, 1, -4.0 / 12},     {{}, {}, 3, -1.0},               // 0-d B: c = 1
        {{}, {}, 1, -1.0},               {{1, 3}, {5, 3}, 3, -5.0 / 5},
    };
    for (const auto &r : rows) {
        Kl p;
        p.g = make_tensor({}, ACL_DOUBLE, {1.0});
        p.x = HostTensor(r.x, ACL_DOUBLE);
        p.t = make_tensor(r.t, ACL_DOUBLE, std::vector<double>(size_t(numel(r.t)), 1.0));
        p.out = HostTensor(r.x, ACL_DOUBLE);
        p.reduction = r.red;
        ASSERT_EQ(p.run(), ACLNN_SUCCESS);
        for (double v : p.out.values()) EXPECT_DOUBLE_EQ(v, r.want) << describe(p);
    }
}

TEST(KlDivBackwardValues, NoMaskingNanAndInfPropagate) {
    Kl p;
    p.g = make_tensor({6}, ACL_FLOAT, {1, 1, NAN, 2, 1, INFINITY});
    p.x = make_tensor({6}, ACL_FLOAT, {0, 0, 0, NAN, 0, 0});
    p.t = make_tensor({6}, ACL_FLOAT, {0, -2, 1, 3, INFINITY, 0});
    p.out = HostTensor({6}, ACL_FLOAT);
    p.reduction = 2;
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    const std::vector<double> v = p.out.values();
    EXPECT_EQ(v[0], 0.0);
    EXPECT_TRUE(std::signbit(v[0]));  // -0 * 1
    EXPECT_EQ(v[1], 2.0);             // target <= 0 is not masked
    EXPECT_TRUE(std::isnan(v[2]));
    EXPECT_EQ(v[3], -6.0);            // self's value is never read
    EXPECT_EQ(v[4], -INFINITY);
    EXPECT_TRUE(std::isnan(v[5]));    // 0 * inf
    p.log_target = true;
    p.t.fill({-INFINITY, 0, 0, std::log(3.0), INFINITY, -1});
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    const std::vector<double> w = p.out.values();
    EXPECT_EQ(w[0], 0.0);
    EXPECT_EQ(w[1], -1.0);
    EXPECT_TRUE(std::isnan(w[2]));
    EXPECT_NEAR(w[3], -6.0, 1e-5);
    EXPECT_EQ(w[4], -INFINITY);
    EXPECT_EQ(w[5], -INFINITY);
}

TEST(KlDivBackwardValues, InPlace) {
    for (const Case &c : {cases()[0], cases()[3], cases()[4]}) {
        // out identical to gradOutput (g has self's shape), to self, and (no sum) to target
        for (int which : {0, 1, 2}) {
            Case cc = c;
            cc.g = c.x;
            if (which == 2 && broadcast(c.x, c.t) != c.x) continue;
            Kl p = make(cc, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, 1, true);
            ASSERT_EQ(p.run(), ACLNN_SUCCESS);
            const std::vector<double> want = p.out.values();
            HostTensor &alias = which == 0 ? p.g : which == 1 ? p.x : p.t;
            uint64_t ws;
            aclOpExecutor *ex;
            ASSERT_EQ(aclnnKlDivBackwardGetWorkspaceSize(p.g.t(), p.x.t(), p.t.t(), 1, true, alias.t(), &ws, &ex),
                      ACLNN_SUCCESS)
                << take_error();
            ASSERT_EQ(aclnnKlDivBackward(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
            EXPECT_EQ(alias.values(), want) << which << " " << describe(p);
        }
    }
}

TEST(KlDivBackwardValues, LongSums) {
    // a long broadcast sum in float inputs stays close (terms are summed in double)
    Kl p = make({{1}, {200000}, {200000}}, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, 2, false);
    check(p);
    check(make({{1, 3000}, {100, 3000}, {100, 1}}, ACL_BF16, ACL_FLOAT, ACL_FLOAT16, ACL_FLOAT, 1, true));
    check(make({{3000, 1}, {3000, 100}, {1}}, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, 3, false, 3));
}

// ---------------------------------------------------------------------------------------------
// empty problems

TEST(KlDivBackwardEmpty, EmptySelfGivesWorkspaceZeroAndNothingToDo) {
    for (int64_t red = 0; red < 4; ++red)
        for (const Case &c : std::vector<Case>{{{0, 3}, {0, 3}, {0, 3}}, {{0}, {1}, {}}, {{2, 0}, {1, 0}, {0}}}) {
            Kl p = make(c, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, red, false);
            uint64_t ws = 5;
            aclOpExecutor *ex = nullptr;
            ASSERT_EQ(p.phase1(&ws, &ex), ACLNN_SUCCESS) << take_error();
            EXPECT_EQ(ws, 0u);
            EXPECT_NE(ex, nullptr);
            EXPECT_EQ(aclnnKlDivBackward(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
        }
}

TEST(KlDivBackwardEmpty, EmptyBroadcastWithNonEmptySelfGivesZeros) {
    // self (1, 3) and target (0, 3): B = (0, 3), every out element sums no terms -> 0 (no NaN,
    // whatever the reduction's scale 1/numel(B) or 1/B[0] would be)
    for (int64_t red = 0; red < 4; ++red)
        for (aclDataType dt : float_dtypes()) {
            Kl p = make({{1, 3}, {0, 3}, {3}}, dt, dt, dt, dt, red, false);
            p.out.fill_storage(7.0);
            ASSERT_EQ(p.run(), ACLNN_SUCCESS) << take_error();
            for (double v : p.out.values()) {
                EXPECT_EQ(v, 0.0);
                EXPECT_FALSE(std::signbit(v));
            }
        }
}

// ---------------------------------------------------------------------------------------------
// failures in phase 1

TEST(KlDivBackwardStatus, EveryFailurePathHasStatusAndMessage) {
    auto base = [] { return make(cases()[0], ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, 1, false); };
    {
        Kl p = base();
        uint64_t ws = 0;
        aclOpExecutor *ex = nullptr;
        EXPECT_EQ(aclnnKlDivBackwardGetWorkspaceSize(p.g.t(), p.x.t(), p.t.t(), 1, false, p.out.t(), nullptr, &ex),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_EQ(take_error(), std::string(kOp) + "GetWorkspaceSize: The workspaceSize or executor is nullptr.");
        EXPECT_EQ(aclnnKlDivBackwardGetWorkspaceSize(p.g.t(), p.x.t(), p.t.t(), 1, false, p.out.t(), &ws, nullptr),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_EQ(take_error(), std::string(kOp) + "GetWorkspaceSize: The workspaceSize or executor is nullptr.");
    }
    for (int k = 0; k < 4; ++k) {
        Kl p = base();
        const char *names[] = {"gradOutput", "self", "target", "out"};
        HostTensor *ts[] = {&p.g, &p.x, &p.t, &p.out};
        *ts[k] = HostTensor();
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_NULLPTR,
                     std::string("Expected a proper Tensor but got null for argument ") + names[k] + ".");
    }
    {
        Kl p = base();
        p.x = HostTensor(Shape(9, 1), ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "The self tensor cannot be larger than 8 dimensions, but got 9.");
    }
    {
        Kl p = base();
        const int64_t d[2] = {2, 3};
        aclTensor *nodata = aclCreateTensor(d, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, d, 2, nullptr);
        uint64_t ws;
        aclOpExecutor *ex;
        EXPECT_EQ(aclnnKlDivBackwardGetWorkspaceSize(p.g.t(), p.x.t(), nodata, 1, false, p.out.t(), &ws, &ex),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_EQ(take_error(), std::string(kOp) + ": Tensor target of shape [2, 3] has a NULL data address.");
        aclDestroyTensor(nodata);
    }
    const std::pair<aclDataType, const char *> bad_dtypes[] = {
        {ACL_INT32, "DT_INT32"}, {ACL_INT64, "DT_INT64"}, {ACL_BOOL, "DT_BOOL"}, {ACL_UINT8, "DT_UINT8"}};
    for (int k = 0; k < 4; ++k) {
        Kl p = base();
        const char *names[] = {"gradOutput", "self", "target", "out"};
        HostTensor *ts[] = {&p.g, &p.x, &p.t, &p.out};
        *ts[k] = HostTensor(ts[k]->shape(), bad_dtypes[k].first);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     std::string("Tensor ") + names[k] + " not implemented for " + bad_dtypes[k].second +
                         ", should be in dtype support list " + kFloats + ".");
    }
    for (int64_t red : {int64_t(-1), int64_t(4), int64_t(6), INT64_MIN}) {
        Kl p = base();
        p.reduction = red;
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "reduction should be 0 (none), 1 (mean), 2 (sum) or 3 (batchmean), but got " +
                         std::to_string(red) + ".");
    }
    {
        Kl p = base();
        p.t = HostTensor({4}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "The size of tensor self [2, 3] must match the size of tensor target [4].");
    }
    for (Shape g : {Shape{3, 3}, Shape{1, 2, 3}, Shape{2, 1, 1}, Shape{0, 3}, Shape{2}}) {
        Kl p = base();
        p.g = HostTensor(g, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "shape of gradOutput must broadcast to [2, 3], but current is " + shape_str(g) + ".");
    }
    {
        // gradOutput must broadcast to B, not merely with it
        Kl p = make({{4, 1}, {1, 5}, {4, 5}}, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, 1, false);
        p.g = HostTensor({3, 4, 5}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "shape of gradOutput must broadcast to [4, 5], but current is [3, 4, 5].");
    }
    for (Shape o : {Shape{3, 2}, Shape{6}, Shape{1, 2, 3}}) {
        Kl p = base();
        p.out = HostTensor(o, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for out to have same size as tensor for self, but " + shape_str(o) +
                         " does not equal [2, 3].");
    }
    {
        // out must have self's shape even when B is larger
        Kl p = make(cases()[3], ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, 1, false);
        p.out = HostTensor({2, 3}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for out to have same size as tensor for self, but [2, 3] does not equal [3].");
    }
    {
        // self and target each fit in int64; their broadcast does not
        const int64_t a[2] = {int64_t(1) << 40, 1}, b[2] = {1, int64_t(1) << 40}, z[2] = {0, 0}, sd = 1;
        float x = 0, y = 0, g = 1, o = 0;
        aclTensor *self = aclCreateTensor(a, 2, ACL_FLOAT, z, 0, ACL_FORMAT_ND, &sd, 1, &x);
        aclTensor *tgt = aclCreateTensor(b, 2, ACL_FLOAT, z, 0, ACL_FORMAT_ND, &sd, 1, &y);
        aclTensor *grad = aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &sd, 1, &g);
        aclTensor *out = aclCreateTensor(a, 2, ACL_FLOAT, z, 0, ACL_FORMAT_ND, &sd, 1, &o);
        uint64_t ws;
        aclOpExecutor *ex;
        EXPECT_EQ(aclnnKlDivBackwardGetWorkspaceSize(grad, self, tgt, 0, false, out, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
        EXPECT_EQ(take_error(), std::string(kOp) + ": broadcast shape [1099511627776, 1099511627776] of self and "
                                                   "target has more elements than int64 can count.");
        for (aclTensor *t : {self, tgt, grad, out}) aclDestroyTensor(t);
    }
    {
        Kl p = base();
        p.out = HostTensor({2, 3}, {0, 1}, 0, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Output out (shape [2, 3], strides [0, 1]) has elements that share memory; it must not overlap "
                     "itself.");
    }
    {
        Kl p = base();
        HostTensor store({12}, ACL_FLOAT);
        const int64_t d[2] = {2, 3}, sd = 12;
        aclTensor *tgt = aclCreateTensor(d, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &sd, 1, store.data());
        aclTensor *out = aclCreateTensor(d, 2, ACL_FLOAT, nullptr, 2, ACL_FORMAT_ND, &sd, 1, store.data());
        uint64_t ws;
        aclOpExecutor *ex = nullptr;
        EXPECT_EQ(aclnnKlDivBackwardGetWorkspaceSize(p.g.t(), p.x.t(), tgt, 1, false, out, &ws, &ex),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_EQ(take_error(), std::string(kOp) + ": Output out partially overlaps input target in memory; use "
                                                   "separate memory or the identical view (in-place).");
        EXPECT_EQ(ex, nullptr);
        aclDestroyTensor(tgt);
        aclDestroyTensor(out);
    }
}

TEST(KlDivBackwardStatus, FailedPhase1WritesNothingAndPhase2Checks) {
    Kl p = make(cases()[0], ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, 9, false);
    uint64_t ws = 77;
    aclOpExecutor *ex = reinterpret_cast<aclOpExecutor *>(0x1234);
    EXPECT_EQ(p.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(ws, 77u);
    EXPECT_EQ(ex, reinterpret_cast<aclOpExecutor *>(0x1234));
    take_error();
    EXPECT_EQ(aclnnKlDivBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(take_error(), std::string(kOp) + ": executor is nullptr.");
    p.reduction = 1;
    ASSERT_EQ(p.phase1(&ws, &ex), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnKlDivBackward(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnKlDivBackward(nullptr, 0, ex, nullptr), ACLNN_ERR_PARAM_INVALID);  // single use
    EXPECT_NE(take_error().find("is not live"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// determinism

TEST(KlDivBackwardDeterminism, BitwiseIdenticalForAnyThreadCount) {
    const std::vector<Case> big = {
        {{300, 200}, {300, 200}, {300, 200}},  // pointwise
        {{1, 300}, {400, 300}, {400, 1}},      // outer dim summed
        {{400, 1}, {400, 300}, {1}},           // inner dim summed
        {{300, 1, 1}, {300, 20, 10}, {20, 1}},
        {{5, 1, 7}, {5, 2000, 7}, {}},
        {{}, {70000}, {70000}},                // one out element
        {{3, 1, 2, 1}, {3, 200, 2, 300}, {1}}, // few out elements, long sums over two dims: chunked
    };
    for (const Case &c : big)
        for (aclDataType dt : float_dtypes())
            for (int layout : {0, 1}) {
                Kl p = make(c, dt, dt, dt, dt, 1, layout == 1, layout);
                std::vector<std::vector<unsigned char>> got;
                for (int threads : {1, 2, 3}) {
                    ThreadCount tc(threads);
                    p.out.fill_storage(0.0);
                    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
                    got.push_back(p.out.storage_bytes());
                }
                EXPECT_TRUE(got[0] == got[1] && got[0] == got[2]) << describe(p);
                if (dt == ACL_DOUBLE) expect_matches_reference(p, describe(p));
            }
}
