// aclnnCrossEntropyLossGrad: values against a float64 reference loop over every dtype and option,
// every failure path (status and exact message), data-dependent failures in phase 2 (out left
// untouched, also on a stream), empty problems, thread-count determinism, and CANN's documented example.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "test_util.h"

using namespace agtest;

namespace {

const char *const kOp = "aclnnCrossEntropyLossGrad";

char *red_arg(const char *r) { return const_cast<char *>(r); }  // the API takes char *, reads only

// Exact int32/int64 target elements (HostTensor::set/at go through double, which int64 outgrows).
int64_t tget(const HostTensor &t, int64_t i) {
    const char *p = static_cast<const char *>(const_cast<HostTensor &>(t).data()) +
                    t.offsets()[size_t(i)] * int64_t(aclDataTypeSize(t.dtype()));
    if (t.dtype() == ACL_INT32) {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
void tset(HostTensor &t, int64_t i, int64_t v) {
    char *p = static_cast<char *>(t.data()) + t.offsets()[size_t(i)] * int64_t(aclDataTypeSize(t.dtype()));
    if (t.dtype() == ACL_INT32) {
        const int32_t x = int32_t(v);
        std::memcpy(p, &x, 4);
    } else {
        std::memcpy(p, &v, 8);
    }
}

// A problem's tensors; absent optionals are default-constructed (handle NULL).
struct Ce {
    HostTensor gl, lp, tg, w, gz, lse, out;
    const char *reduction = "mean";
    int64_t ignore = -100;
    double eps = 0, zeta = 0;

    aclnnStatus phase1(uint64_t *ws, aclOpExecutor **ex) const {
        return aclnnCrossEntropyLossGradGetWorkspaceSize(gl.t(), lp.t(), tg.t(), w.t(), gz.t(), lse.t(),
                                                         red_arg(reduction), ignore, eps, zeta, out.t(), ws, ex);
    }
    // Both phases, NULL stream.
    aclnnStatus run(aclrtStream stream = nullptr) const {
        uint64_t ws = 0;
        aclOpExecutor *ex = nullptr;
        const aclnnStatus s = phase1(&ws, &ex);
        if (s != ACLNN_SUCCESS) return s;
        EXPECT_EQ(ws, 0u);
        return run_phase2(aclnnCrossEntropyLossGrad, ws, ex, stream);
    }
};

// float64 reference of SPEC 2.4 from the tensors' (already rounded) values.
std::vector<double> reference(const Ce &p, std::vector<double> *mag) {
    const int64_t n = p.lp.shape()[0], c = p.lp.shape()[1];
    const bool none = std::strcmp(p.reduction ? p.reduction : "mean", "none") == 0;
    const bool mean = !p.reduction || std::strcmp(p.reduction, "mean") == 0;
    std::vector<double> w(size_t(c), 1.0);
    if (p.w.t())
        for (int64_t j = 0; j < c; ++j) w[j] = p.w.at(j);
    double sw = 0, wt = 0, kept = 0;
    for (int64_t j = 0; j < c; ++j) sw += w[j];
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = tget(p.tg, i);
        if (t == p.ignore) continue;
        wt += w[t];
        kept += 1;
    }
    std::vector<double> r(size_t(n * c), 0.0);
    mag->assign(r.size(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = tget(p.tg, i);
        if (t == p.ignore) continue;
        const double g = none ? p.gl.at(i) : p.gl.at(0);
        const double s = mean ? (wt == 0 ? 0.0 : g / wt) : g;
        double z = 0;
        if (p.zeta != 0) {
            const double gzv = p.gz.t() ? (none ? p.gz.at(i) : p.gz.at(0)) : 0.0;
            z = mean ? (kept == 0 ? 0.0 : (g + gzv) / kept) : g + gzv;
            z *= 2 * p.zeta * p.lse.at(i);
        }
        for (int64_t j = 0; j < c; ++j) {
            const double pij = std::exp(p.lp.at(i * c + j));
            const double d = j == t ? 1.0 : 0.0;
            const double t1 = s * (1 - p.eps) * w[t] * (pij - d);
            const double t2 = p.eps != 0 ? s * (p.eps / c) * (sw * pij - w[j]) : 0.0;
            const double t3 = z * pij;
            r[i * c + j] = t1 + t2 + t3;
            (*mag)[i * c + j] = std::fabs(s * (1 - p.eps) * w[t]) * (pij + d) +
                                (p.eps != 0 ? std::fabs(s * p.eps / c) * (std::fabs(sw) * pij + std::fabs(w[j])) : 0.0) +
                                std::fabs(t3);
        }
    }
    return r;
}

void expect_matches_reference(const Ce &p, const std::string &what) {
    std::vector<double> mag;
    const std::vector<double> ref = reference(p, &mag);
    const aclDataType dt = p.out.dtype();
    const double ec = eps_of(compute_dtype(dt)), eo = eps_of(dt);
    std::vector<double> tol(ref.size());
    for (size_t k = 0; k < ref.size(); ++k) tol[k] = eo * std::fabs(ref[k]) + 16 * ec * mag[k] + denorm_min_of(dt);
    expect_close(p.out.values(), ref, tol, what);
}

struct Opts {
    aclDataType dt = ACL_FLOAT, tdt = ACL_INT64, wdt = ACL_FLOAT;
    int64_t n = 7, c = 5;
    bool weight = false, ignore = false, gz = false;
    int64_t ignore_index = -100;
    const char *reduction = "mean";
    double eps = 0, zeta = 0;
    int layout = 0;  // 0 contiguous; 1 transposed / negative strides / offsets; 2 padded rows, 0-d -> (1,)
    uint64_t seed = 1;
};

std::string describe(const Opts &o) {
    char b[256];
    std::snprintf(b, sizeof b, "%s target %s weight %s(%s) ignore %d(%lld) %s eps %g zeta %g gz %d layout %d n %lld c %lld",
                  dtype_str(o.dt), dtype_str(o.tdt), o.weight ? "on" : "off", dtype_str(o.wdt), int(o.ignore),
                  (long long)o.ignore_index, o.reduction ? o.reduction : "NULL", o.eps, o.zeta, int(o.gz), o.layout,
                  (long long)o.n, (long long)o.c);
    return b;
}

// A 1-d (n,) tensor in layout `l`: contiguous, reversed (stride -1), or every other element.
HostTensor vec(int64_t n, aclDataType dt, int l) {
    if (l == 1) return HostTensor({n}, {-1}, n > 0 ? n - 1 : 0, dt);
    if (l == 2) return HostTensor({n}, {2}, 1, dt);
    return HostTensor({n}, dt);
}

// (n, c) in layout `l`: contiguous, column-major with both strides negated, or padded rows.
HostTensor mat(int64_t n, int64_t c, aclDataType dt, int l) {
    if (n * c == 0) return HostTensor({n, c}, dt);
    if (l == 1) return HostTensor({n, c}, {-1, -n}, n * c - 1, dt);
    if (l == 2) return HostTensor({n, c}, {c + 3, 1}, 2, dt);
    return HostTensor({n, c}, dt);
}

Ce make(const Opts &o) {
    std::mt19937_64 rng(o.seed);
    const bool none = o.reduction && std::strcmp(o.reduction, "none") == 0;
    Ce p;
    p.reduction = o.reduction;
    p.ignore = o.ignore_index;
    p.eps = o.eps;
    p.zeta = o.zeta;
    p.lp = mat(o.n, o.c, o.dt, o.layout);
    p.out = mat(o.n, o.c, o.dt, (o.layout + 1) % 3);
    p.out.fill_storage(7.0);
    // log_softmax of random logits, in double, rounded into the dtype
    std::normal_distribution<double> nd(0.0, 2.0);
    for (int64_t i = 0; i < o.n; ++i) {
        std::vector<double> x(size_t(o.c));
        double mx = -1e300, s = 0;
        for (auto &v : x) mx = std::max(mx, v = nd(rng));
        for (double v : x) s += std::exp(v - mx);
        for (int64_t j = 0; j < o.c; ++j) p.lp.set(i * o.c + j, x[j] - mx - std::log(s));
    }
    p.tg = vec(o.n, o.tdt, o.layout);
    std::uniform_int_distribution<int64_t> ud(0, o.c - 1);
    for (int64_t i = 0; i < o.n; ++i) tset(p.tg, i, o.ignore && i % 3 == 1 ? o.ignore_index : ud(rng));
    std::uniform_real_distribution<double> u(0.5, 2.0);
    auto grad = [&](HostTensor &t) {
        if (none) t = vec(o.n, o.dt, o.layout);
        else t = o.layout == 2 ? HostTensor({1}, o.dt) : HostTensor({}, o.dt);
        for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng) * (i % 2 ? -1 : 1));
    };
    grad(p.gl);
    if (o.weight) {
        p.w = vec(o.c, o.wdt, o.layout);
        for (int64_t j = 0; j < o.c; ++j) p.w.set(j, u(rng) - 0.3);
    }
    if (o.zeta != 0) {
        if (o.gz) grad(p.gz);
        p.lse = vec(o.n, o.dt, (o.layout + 2) % 3);
        for (int64_t i = 0; i < o.n; ++i) p.lse.set(i, u(rng) + 1.0);
    }
    return p;
}

void check_case(const Opts &o) {
    Ce p = make(o);
    ASSERT_EQ(p.run(), ACLNN_SUCCESS) << describe(o) << ": " << take_error();
    expect_matches_reference(p, describe(o));
}

// Phase 1 only; a failure must leave out (a canary), workspaceSize and executor as they were.
aclnnStatus phase1_status(const Ce &p) {
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

#define EXPECT_FAILS(p, status, msg)                          \
    do {                                                      \
        EXPECT_EQ(phase1_status(p), status);                  \
        EXPECT_EQ(take_error(), std::string(kOp) + ": " + msg); \
    } while (0)

}  // namespace

// ---------------------------------------------------------------------------------------------
// values

TEST(CrossEntropyLossGradValues, EveryDtypeAndOption) {
    for (aclDataType dt : float_dtypes())
        for (aclDataType tdt : {ACL_INT64, ACL_INT32})
            for (const char *red : {"mean", "sum", "none", (const char *)nullptr})
                for (bool weight : {false, true})
                    for (bool ignore : {false, true})
                        for (double eps : {0.0, 0.1})
                            for (int z : {0, 1, 2}) {  // z-loss off / on without gradZloss / on with it
                                Opts o;
                                o.dt = dt, o.tdt = tdt, o.reduction = red, o.weight = weight, o.ignore = ignore;
                                o.eps = eps, o.zeta = z ? 0.3 : 0.0, o.gz = z == 2;
                                o.seed = 17 + z;
                                check_case(o);
                            }
}

TEST(CrossEntropyLossGradValues, StridedNegativelyStridedAndOffsetViews) {
    for (aclDataType dt : float_dtypes())
        for (const char *red : {"mean", "sum", "none"})
            for (int layout : {1, 2}) {
                Opts o;
                o.dt = dt, o.reduction = red, o.layout = layout, o.weight = true, o.ignore = true, o.eps = 0.1;
                o.zeta = 0.25, o.gz = true, o.n = 9, o.c = 6;
                check_case(o);
            }
}

TEST(CrossEntropyLossGradValues, EveryWeightDtype) {
    for (aclDataType dt : float_dtypes())
        for (aclDataType wdt : float_dtypes()) {
            Opts o;
            o.dt = dt, o.wdt = wdt, o.weight = true, o.ignore = true, o.eps = 0.1;
            check_case(o);
        }
}

TEST(CrossEntropyLossGradValues, FullSmoothingAndShapes) {
    for (double eps : {1.0, 0.5, 1e-3})
        for (auto nc : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 7}, {6, 1}, {3, 9000}, {40, 2}}) {
            Opts o;
            o.dt = ACL_DOUBLE, o.eps = eps, o.weight = true, o.n = nc.first, o.c = nc.second;
            check_case(o);
            o.reduction = "none";
            check_case(o);
        }
}

TEST(CrossEntropyLossGradValues, IgnoreIndexAnyInt64) {
    // inside [0, C): rows with that class are ignored; far outside: values never seen
    for (int64_t ii : {int64_t(0), int64_t(4), int64_t(-1), int64_t(-100), INT64_MIN, INT64_MAX, int64_t(1) << 40})
        for (aclDataType tdt : {ACL_INT64, ACL_INT32})
            for (const char *red : {"mean", "none"}) {
                Opts o;
                o.dt = ACL_DOUBLE, o.tdt = tdt, o.ignore_index = ii, o.reduction = red, o.weight = true;
                o.eps = 0.1, o.zeta = 0.2, o.n = 12;
                // int32 targets cannot hold values beyond int32: then nothing is ignored
                o.ignore = tdt == ACL_INT64 || (ii >= INT32_MIN && ii <= INT32_MAX);
                check_case(o);
            }
}

TEST(CrossEntropyLossGradValues, IgnoreIndexInsideClassRangeZeroesThoseRows) {
    Ce p;
    p.lp = make_tensor({3, 2}, ACL_DOUBLE, {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5),
                                             std::log(0.1), std::log(0.9)});
    p.tg = make_tensor({3}, ACL_INT64, {1, 0, 1});
    p.gl = make_tensor({}, ACL_DOUBLE, {1.0});
    p.out = HostTensor({3, 2}, ACL_DOUBLE);
    p.ignore = 1;
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    // only row 1 counts: W = 1; grad = p - onehot
    const std::vector<double> got = p.out.values(), want = {0, 0, -0.5, 0.5, 0, 0};
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-15) << k;
}

TEST(CrossEntropyLossGradValues, MeanWithEveryRowIgnoredIsZeroNotNan) {
    for (aclDataType dt : float_dtypes())
        for (double eps : {0.0, 0.2})
            for (double zeta : {0.0, 0.5}) {
                Opts o;
                o.dt = dt, o.eps = eps, o.zeta = zeta, o.gz = true, o.weight = true, o.ignore_index = 2;
                Ce p = make(o);
                for (int64_t i = 0; i < p.tg.numel(); ++i) p.tg.set(i, 2);
                ASSERT_EQ(p.run(), ACLNN_SUCCESS);
                for (double v : p.out.values()) EXPECT_EQ(v, 0.0) << describe(o);
                EXPECT_FALSE(std::signbit(p.out.at(0)));
            }
}

TEST(CrossEntropyLossGradValues, MeanWithZeroWeightTotalIsZero) {
    // W = 0 because every kept row's class weight is 0: zeros as well (no 0/0)
    Opts o;
    o.dt = ACL_FLOAT, o.weight = true, o.eps = 0.1, o.c = 3;
    Ce p = make(o);
    p.w.fill({0.0, 1.0, 2.0});
    for (int64_t i = 0; i < p.tg.numel(); ++i) p.tg.set(i, 0);
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    for (double v : p.out.values()) EXPECT_EQ(v, 0.0);
}

TEST(CrossEntropyLossGradValues, SwitchedOffTermsDoNotTurnInfIntoNan) {
    // eps = 0: an infinite weight of a class no row targets leaves the gradient finite, as
    // PyTorch (the smoothing term is absent, not 0 * inf). zeta = 0: an inf lse is not read.
    Ce p;
    p.lp = make_tensor({2, 3}, ACL_FLOAT, std::vector<double>(6, std::log(1.0 / 3)));
    p.tg = make_tensor({2}, ACL_INT64, {0, 2});
    p.gl = make_tensor({}, ACL_FLOAT, {1.0});
    p.w = make_tensor({3}, ACL_FLOAT, {1.0, INFINITY, 1.0});
    p.lse = make_tensor({2}, ACL_FLOAT, {INFINITY, 1.0});
    p.out = HostTensor({2, 3}, ACL_FLOAT);
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    for (double v : p.out.values()) EXPECT_TRUE(std::isfinite(v)) << v;
    expect_matches_reference(p, "inf weight, eps 0");
}

TEST(CrossEntropyLossGradValues, NanAndInfPropagateInKeptRowsOnly) {
    Ce p;
    p.lp = make_tensor({3, 2}, ACL_FLOAT, {NAN, -0.1, -INFINITY, 0.0, NAN, NAN});
    p.tg = make_tensor({3}, ACL_INT64, {1, 0, -100});
    p.gl = make_tensor({3}, ACL_FLOAT, {1.0, 2.0, NAN});
    p.out = HostTensor({3, 2}, ACL_FLOAT);
    p.reduction = "none";
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    const std::vector<double> v = p.out.values();
    EXPECT_TRUE(std::isnan(v[0]));                   // exp(NaN)
    EXPECT_NEAR(v[1], std::exp(-0.1) - 1, 1e-6);     // unaffected by its row's other NaN
    EXPECT_EQ(v[2], -2.0);                           // p = exp(-inf) = 0, target class
    EXPECT_NEAR(v[3], 2.0, 1e-6);
    EXPECT_EQ(v[4], 0.0);                            // ignored row: masked, not NaN
    EXPECT_EQ(v[5], 0.0);
}

TEST(CrossEntropyLossGradValues, ProbabilitiesUsedAsGivenNotRenormalised) {
    Ce p;
    p.lp = make_tensor({1, 2}, ACL_DOUBLE, {std::log(0.5), std::log(0.25)});  // sums to 0.75
    p.tg = make_tensor({1}, ACL_INT64, {0});
    p.gl = make_tensor({}, ACL_DOUBLE, {1.0});
    p.out = HostTensor({1, 2}, ACL_DOUBLE);
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    EXPECT_NEAR(p.out.at(0), -0.5, 1e-15);
    EXPECT_NEAR(p.out.at(1), 0.25, 1e-15);
}

TEST(CrossEntropyLossGradValues, GradLossOfShapeOneForMeanAndSum) {
    for (const char *red : {"mean", "sum"}) {
        Opts o;
        o.reduction = red, o.layout = 2, o.zeta = 0.5, o.gz = true;  // gradLoss, gradZloss: (1,)
        check_case(o);
    }
}

TEST(CrossEntropyLossGradValues, ZlossInputsIgnoredWhenScaleIsZero) {
    Opts o;
    o.dt = ACL_DOUBLE;
    Ce a = make(o), b = make(o);
    b.gz = HostTensor({}, ACL_DOUBLE);
    b.gz.fill({123.0});
    b.lse = make_tensor({7}, ACL_DOUBLE, std::vector<double>(7, NAN));
    ASSERT_EQ(a.run(), ACLNN_SUCCESS);
    ASSERT_EQ(b.run(), ACLNN_SUCCESS);
    EXPECT_EQ(a.out.storage_bytes(), b.out.storage_bytes());
}

TEST(CrossEntropyLossGradValues, InPlaceIntoLogProb) {
    for (aclDataType dt : float_dtypes()) {
        Opts o;
        o.dt = dt, o.weight = true, o.ignore = true, o.eps = 0.1, o.zeta = 0.1, o.n = 9, o.c = 5000;
        Ce p = make(o);
        ASSERT_EQ(p.run(), ACLNN_SUCCESS);
        // the same problem with out = logProb (identical view)
        uint64_t ws = 0;
        aclOpExecutor *ex = nullptr;
        ASSERT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), p.w.t(), nullptr, p.lse.t(),
                                                            red_arg("mean"), p.ignore, p.eps, p.zeta, p.lp.t(), &ws,
                                                            &ex),
                  ACLNN_SUCCESS)
            << take_error();
        ASSERT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
        EXPECT_EQ(p.lp.values(), p.out.values()) << dtype_str(dt);
    }
}

TEST(CrossEntropyLossGradValues, ColumnMajorTraversalGivesBitwiseTheSameResults) {
    // a column-major log_prob is walked down its columns: same per-element arithmetic
    for (aclDataType dt : float_dtypes())
        for (int mode = 0; mode < 3; ++mode)
            for (auto nc : std::vector<std::pair<int64_t, int64_t>>{{130, 7}, {70, 5000}, {3, 9}}) {
                Opts o;
                o.dt = dt, o.n = nc.first, o.c = nc.second, o.ignore = true, o.reduction = "none";
                o.weight = mode == 2, o.eps = mode ? 0.1 : 0.0, o.zeta = mode == 1 ? 0.2 : 0.0;
                Ce p = make(o);
                p.out = HostTensor({o.n, o.c}, dt);
                ASSERT_EQ(p.run(), ACLNN_SUCCESS);
                const std::vector<double> rowwise = p.out.values();
                HostTensor f({o.n, o.c}, {1, o.n}, 0, dt);
                f.fill(p.lp.values());
                std::swap(p.lp, f);
                ASSERT_EQ(p.run(), ACLNN_SUCCESS);
                EXPECT_EQ(p.out.values(), rowwise) << describe(o);
                // and in place into the column-major log_prob
                uint64_t ws;
                aclOpExecutor *ex;
                ASSERT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), p.w.t(), nullptr,
                                                                    p.lse.t(), red_arg("none"), p.ignore, p.eps,
                                                                    p.zeta, p.lp.t(), &ws, &ex),
                          ACLNN_SUCCESS);
                ASSERT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
                EXPECT_EQ(p.lp.values(), rowwise) << describe(o);
            }
}

TEST(CrossEntropyLossGradValues, LargeBatch) {
    Opts o;
    o.n = 200000, o.c = 3, o.weight = true, o.ignore = true, o.eps = 0.05;
    check_case(o);
}

// ---------------------------------------------------------------------------------------------
// CANN's documented example (as a host program: test_cann_example.cpp)

TEST(CrossEntropyLossGradValues, CannDocumentedExample) {
    Ce p;
    p.gl = make_tensor({}, ACL_FLOAT, {0.1});
    p.lp = make_tensor({2, 3}, ACL_FLOAT, std::vector<double>(6, -0.2));
    p.tg = make_tensor({2}, ACL_INT64, {0, 0});
    p.w = make_tensor({3}, ACL_FLOAT, {1, 1, 1});
    p.out = HostTensor({2, 3}, ACL_FLOAT);
    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
    const char *want[] = {"-0.0091", "0.0409", "0.0409", "-0.0091", "0.0409", "0.0409"};
    for (int k = 0; k < 6; ++k) {
        char b[32];
        std::snprintf(b, sizeof b, "%.4f", p.out.at(k));
        EXPECT_STREQ(b, want[k]) << k;
    }
}

// ---------------------------------------------------------------------------------------------
// phase 2 data checks

TEST(CrossEntropyLossGradTargets, OutOfRangeTargetFailsInPhase2AndLeavesOutUntouched) {
    for (aclDataType tdt : {ACL_INT64, ACL_INT32})
        for (int64_t bad : {int64_t(5), int64_t(-1), int64_t(1000), int64_t(-100)})
            for (int64_t ignore : {int64_t(-100), int64_t(2)}) {
                if (bad == ignore) continue;
                Opts o;
                o.tdt = tdt, o.n = 40000, o.c = 5, o.ignore_index = ignore, o.weight = true;
                Ce p = make(o);
                p.tg.set(39998, double(bad));
                p.tg.set(39999, double(bad + 1));  // only the first bad row is named
                p.out.fill_storage(7.0);
                const std::vector<unsigned char> before = p.out.storage_bytes();
                uint64_t ws = 0;
                aclOpExecutor *ex = nullptr;
                ASSERT_EQ(p.phase1(&ws, &ex), ACLNN_SUCCESS);  // data is not looked at in phase 1
                EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
                EXPECT_EQ(take_error(), std::string(kOp) + ": Target " + std::to_string(bad) +
                                            " is out of bounds: target[39998] must be in [0, 5) or equal ignoreIndex " +
                                            std::to_string(ignore) + ".");
                EXPECT_TRUE(p.out.storage_bytes() == before) << "out was written";
            }
}

TEST(CrossEntropyLossGradTargets, IgnoredValuesOutsideTheClassRangeAreFine) {
    Opts o;
    o.ignore = true, o.ignore_index = -7;
    check_case(o);
    o.ignore_index = 99;
    check_case(o);
}

TEST(CrossEntropyLossGradTargets, RepeatableExecutorRechecksEveryRun) {
    Opts o;
    Ce p = make(o);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    ASSERT_EQ(p.phase1(&ws, &ex), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
    const std::vector<unsigned char> good = p.out.storage_bytes();
    p.tg.set(3, 5);
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(take_error().find("target[3]"), std::string::npos);
    EXPECT_TRUE(p.out.storage_bytes() == good);
    p.tg.set(3, 1);
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

TEST(CrossEntropyLossGradTargets, SingleUseExecutorAndWorkspaceChecks) {
    Opts o;
    Ce p = make(o);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(take_error(), std::string(kOp) + ": executor is nullptr.");
    ASSERT_EQ(p.phase1(&ws, &ex), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_ERR_PARAM_INVALID);  // already run
    EXPECT_NE(take_error().find("is not live"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// empty problems

TEST(CrossEntropyLossGradEmpty, NoRowsGiveWorkspaceZeroAndAnExecutorThatDoesNothing) {
    for (const char *red : {"mean", "sum", "none"})
        for (aclDataType dt : float_dtypes()) {
            Opts o;
            o.dt = dt, o.reduction = red, o.n = 0, o.c = 4, o.weight = true, o.zeta = 0.5, o.gz = true;
            Ce p = make(o);
            uint64_t ws = 123;
            aclOpExecutor *ex = nullptr;
            ASSERT_EQ(p.phase1(&ws, &ex), ACLNN_SUCCESS) << take_error();
            EXPECT_EQ(ws, 0u);
            EXPECT_NE(ex, nullptr);
            EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
        }
}

// ---------------------------------------------------------------------------------------------
// failures in phase 1: status and exact message; nothing is written, no executor left

TEST(CrossEntropyLossGradStatus, EveryFailurePathHasStatusAndMessage) {
    auto base = [] {
        Opts o;
        o.weight = true;
        o.zeta = 0.5, o.gz = true;
        return make(o);
    };
    const std::string floats = "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE]";
    {
        Ce p = base();
        uint64_t ws = 0;
        aclOpExecutor *ex = nullptr;
        EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), nullptr, nullptr, nullptr,
                                                            nullptr, -100, 0, 0, p.out.t(), nullptr, &ex),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_EQ(take_error(), std::string(kOp) + "GetWorkspaceSize: The workspaceSize or executor is nullptr.");
        EXPECT_EQ(ex, nullptr);
        EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), nullptr, nullptr, nullptr,
                                                            nullptr, -100, 0, 0, p.out.t(), &ws, nullptr),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_EQ(take_error(), std::string(kOp) + "GetWorkspaceSize: The workspaceSize or executor is nullptr.");
    }
    // NULL tensors
    for (const char *name : {"gradLoss", "logProb", "target", "out"}) {
        Ce p = base();
        HostTensor &t = std::string(name) == "gradLoss" ? p.gl
                        : std::string(name) == "logProb" ? p.lp
                        : std::string(name) == "target"  ? p.tg
                                                         : p.out;
        t = HostTensor();
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_NULLPTR, std::string("Expected a proper Tensor but got null for argument ") + name + ".");
    }
    {
        Ce p = base();
        p.lse = HostTensor();
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_NULLPTR,
                     "Expected a proper Tensor but got null for argument lseForZlossOptional. It is required when "
                     "lseSquareScaleForZloss (0.5) is not 0.");
        p.zeta = 0;  // then it is not needed
        EXPECT_EQ(phase1_status(p), ACLNN_SUCCESS);
    }
    // tensors the library cannot use
    {
        Ce p = base();
        p.lp = HostTensor(Shape(26, 1), ACL_FLOAT);  // beyond what an aclTensor describes (no limit of its own)
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "The logProb tensor cannot be larger than 25 dimensions, but got 26.");
    }
    {
        Ce p = base();
        p.lp = HostTensor(Shape(9, 1), ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected 2 dimension input, but got logProb with sizes [1, 1, 1, 1, 1, 1, 1, 1, 1].");
    }
    {
        Ce p = base();
        const int64_t dims[2] = {int64_t(1) << 40, int64_t(1) << 40}, strides[2] = {0, 0}, storage = 1;
        float x = 0;
        aclTensor *huge = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, &storage, 1, &x);
        ASSERT_NE(huge, nullptr);
        uint64_t ws;
        aclOpExecutor *ex;
        EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), huge, p.tg.t(), nullptr, nullptr, nullptr,
                                                            nullptr, -100, 0, 0, p.out.t(), &ws, &ex),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_EQ(take_error(), std::string(kOp) + ": Tensor logProb of shape [1099511627776, 1099511627776] has "
                                                   "more elements than int64 can count.");
        aclDestroyTensor(huge);
    }
    {
        Ce p = base();
        const int64_t dims[2] = {7, 5};
        aclTensor *nodata = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, nullptr);
        uint64_t ws;
        aclOpExecutor *ex;
        EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), nullptr, nullptr, nullptr,
                                                            nullptr, -100, 0, 0, nodata, &ws, &ex),
                  ACLNN_ERR_PARAM_NULLPTR);
        EXPECT_EQ(take_error(), std::string(kOp) + ": Tensor out of shape [7, 5] has a NULL data address.");
        aclDestroyTensor(nodata);
    }
    // dtypes
    {
        Ce p = base();
        p.lp = HostTensor({7, 5}, ACL_INT32);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Tensor logProb not implemented for DT_INT32, should be in dtype support list " + floats + ".");
    }
    {
        Ce p = base();
        p.gl = HostTensor({}, ACL_DOUBLE);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Tensor gradLoss expected dtype is DT_FLOAT but found DT_DOUBLE.");
    }
    for (aclDataType bad : {ACL_FLOAT, ACL_INT16, ACL_UINT64, ACL_BOOL}) {
        Ce p = base();
        p.tg = HostTensor({7}, bad);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     std::string("Tensor target not implemented for ") + (bad == ACL_FLOAT ? "DT_FLOAT" : bad == ACL_INT16 ? "DT_INT16" : bad == ACL_UINT64 ? "DT_UINT64" : "DT_BOOL") +
                         ", should be in dtype support list [DT_INT64, DT_INT32].");
    }
    {
        Ce p = base();
        p.w = HostTensor({5}, ACL_INT64);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Tensor weightOptional not implemented for DT_INT64, should be in dtype support list " + floats + ".");
    }
    {
        Ce p = base();
        p.gz = HostTensor({}, ACL_FLOAT16);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Tensor gradZlossOptional expected dtype is DT_FLOAT but found DT_FLOAT16.");
    }
    {
        Ce p = base();
        p.lse = HostTensor({7}, ACL_BF16);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Tensor lseForZlossOptional expected dtype is DT_FLOAT but found DT_BF16.");
    }
    {
        Ce p = base();
        p.out = HostTensor({7, 5}, ACL_DOUBLE);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Tensor out expected dtype is DT_FLOAT but found DT_DOUBLE.");
    }
    // attribute values
    for (const char *bad : {"avg", "", "Mean", "none "}) {
        Ce p = base();
        p.reduction = bad;
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     std::string("reductionOptional should be one of \"none\", \"mean\", \"sum\", but got \"") + bad +
                         "\".");
    }
    for (double bad : std::vector<double>{-0.1, 1.5, NAN, -INFINITY}) {
        Ce p = base();
        p.eps = bad;
        char b[64];
        std::snprintf(b, sizeof b, "%g", bad);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, std::string("labelSmoothing should be in [0, 1], but got ") + b + ".");
    }
    for (double bad : std::vector<double>{NAN, INFINITY, -INFINITY}) {
        Ce p = base();
        p.zeta = bad;
        char b[64];
        std::snprintf(b, sizeof b, "%g", bad);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     std::string("lseSquareScaleForZloss should be a finite number, but got ") + b + ".");
    }
    // shapes
    for (Shape s : {Shape{35}, Shape{7, 5, 1}, Shape{}}) {
        Ce p = base();
        p.lp = HostTensor(s, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Expected 2 dimension input, but got logProb with sizes " + shape_str(s) + ".");
    }
    {
        Ce p = base();
        p.lp = HostTensor({7, 0}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "logProb must have C > 0 classes, but got sizes [7, 0].");
    }
    for (Shape s : {Shape{8}, Shape{7, 1}, Shape{}}) {
        Ce p = base();
        p.tg = HostTensor(s, ACL_INT64);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Expected tensor for target to have size [7], but got " + shape_str(s) + ".");
    }
    for (Shape s : {Shape{2}, Shape{1, 1}, Shape{7}}) {
        Ce p = base();
        p.gl = HostTensor(s, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for gradLoss to have size [] or [1] for reduction 'mean', but got " + shape_str(s) + ".");
        p.reduction = "sum";
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for gradLoss to have size [] or [1] for reduction 'sum', but got " + shape_str(s) + ".");
    }
    for (Shape s : {Shape{}, Shape{1}, Shape{6}, Shape{7, 1}}) {
        Ce p = base();
        p.reduction = "none";
        p.gl = HostTensor(s, ACL_FLOAT);
        p.gz = HostTensor({7}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Expected tensor for gradLoss to have size [7], but got " + shape_str(s) + ".");
        p.gl = HostTensor({7}, ACL_FLOAT);
        p.gz = HostTensor(s, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for gradZlossOptional to have size [7], but got " + shape_str(s) + ".");
    }
    {
        Ce p = base();
        p.gz = HostTensor({7}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for gradZlossOptional to have size [] or [1] for reduction 'mean', but got [7].");
    }
    for (Shape s : {Shape{4}, Shape{1, 5}, Shape{}}) {
        Ce p = base();
        p.w = HostTensor(s, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Expected tensor for weightOptional to have size [5], but got " + shape_str(s) + ".");
    }
    {
        Ce p = base();
        p.lse = HostTensor({7, 1}, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID, "Expected tensor for lseForZlossOptional to have size [7], but got [7, 1].");
    }
    for (Shape s : {Shape{7, 6}, Shape{5, 7}, Shape{35}}) {
        Ce p = base();
        p.out = HostTensor(s, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Expected tensor for out to have same size as tensor for logProb, but " + shape_str(s) +
                         " does not equal [7, 5].");
    }
    // memory
    {
        Ce p = base();
        HostTensor store({80}, ACL_FLOAT);
        const int64_t dims[2] = {7, 5}, st[2] = {5, 1}, sd = 80;
        aclTensor *lp = aclCreateTensor(dims, 2, ACL_FLOAT, st, 0, ACL_FORMAT_ND, &sd, 1, store.data());
        aclTensor *out = aclCreateTensor(dims, 2, ACL_FLOAT, st, 3, ACL_FORMAT_ND, &sd, 1, store.data());
        uint64_t ws;
        aclOpExecutor *ex = nullptr;
        EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), lp, p.tg.t(), nullptr, nullptr, nullptr, nullptr,
                                                            -100, 0, 0, out, &ws, &ex),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_EQ(take_error(), std::string(kOp) + ": Output out partially overlaps input logProb in memory; use "
                                                   "separate memory or the identical view (in-place).");
        EXPECT_EQ(ex, nullptr);
        aclDestroyTensor(lp);
        aclDestroyTensor(out);
    }
    {
        Ce p = base();
        p.out = HostTensor({7, 5}, {1, 0}, 0, ACL_FLOAT);
        EXPECT_FAILS(p, ACLNN_ERR_PARAM_INVALID,
                     "Output out (shape [7, 5], strides [1, 0]) has elements that share memory; it must not overlap itself.");
    }
    {
        // out over the weight's memory
        Ce p = base();
        HostTensor store({40}, ACL_FLOAT);
        const int64_t od[2] = {7, 5}, wd[1] = {5}, sd = 40;
        aclTensor *out = aclCreateTensor(od, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &sd, 1, store.data());
        aclTensor *w = aclCreateTensor(wd, 1, ACL_FLOAT, nullptr, 33, ACL_FORMAT_ND, &sd, 1, store.data());
        uint64_t ws;
        aclOpExecutor *ex = nullptr;
        EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), w, nullptr, nullptr, nullptr,
                                                            -100, 0, 0, out, &ws, &ex),
                  ACLNN_ERR_PARAM_INVALID);
        EXPECT_EQ(take_error(), std::string(kOp) + ": Output out partially overlaps input weightOptional in memory; "
                                                   "use separate memory or the identical view (in-place).");
        aclDestroyTensor(out);
        aclDestroyTensor(w);
    }
}

TEST(CrossEntropyLossGradStatus, FailedPhase1WritesNothing) {
    Opts o;
    Ce p = make(o);
    p.reduction = "bogus";
    uint64_t ws = 77;
    aclOpExecutor *ex = reinterpret_cast<aclOpExecutor *>(0x1234);
    EXPECT_EQ(p.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(ws, 77u);
    EXPECT_EQ(ex, reinterpret_cast<aclOpExecutor *>(0x1234));
    take_error();
}

TEST(CrossEntropyLossGradStatus, AcceptsAnyFormat) {
    Opts o;
    Ce p = make(o);
    const int64_t d[2] = {7, 5};
    aclTensor *out = aclCreateTensor(d, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, d, 2, p.out.data());
    uint64_t ws;
    aclOpExecutor *ex;
    EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(p.gl.t(), p.lp.t(), p.tg.t(), nullptr, nullptr, nullptr,
                                                        nullptr, -100, 0, 0, out, &ws, &ex),
              ACLNN_SUCCESS);
    EXPECT_EQ(aclnnCrossEntropyLossGrad(nullptr, 0, ex, nullptr), ACLNN_SUCCESS);
    aclDestroyTensor(out);
}

// ---------------------------------------------------------------------------------------------
// determinism

TEST(CrossEntropyLossGradDeterminism, BitwiseIdenticalForAnyThreadCount) {
    struct Shape2 { int64_t n, c; };
    for (Shape2 s : {Shape2{300, 200}, Shape2{2, 40000}, Shape2{70000, 2}})
        for (aclDataType dt : float_dtypes())
            for (const char *red : {"mean", "none"}) {
                Opts o;
                o.dt = dt, o.n = s.n, o.c = s.c, o.reduction = red, o.weight = true, o.ignore = true, o.eps = 0.1;
                o.zeta = 0.01, o.gz = true, o.layout = dt == ACL_FLOAT ? 1 : 0;
                Ce p = make(o);
                std::vector<std::vector<unsigned char>> got;
                for (int threads : {1, 2, 3}) {
                    ThreadCount tc(threads);
                    p.out.fill_storage(0.0);
                    ASSERT_EQ(p.run(), ACLNN_SUCCESS);
                    got.push_back(p.out.storage_bytes());
                }
                EXPECT_TRUE(got[0] == got[1] && got[0] == got[2]) << describe(o);
                if (dt == ACL_DOUBLE && s.n == 300) expect_matches_reference(p, describe(o));
            }
}
