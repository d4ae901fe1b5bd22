// aclnnLogSigmoidBackward: every phase-1 status path with its exact status and message (and
// nothing written), the ignored `buffer`, empty tensors, correctness against a float64 reference
// (extremes, every input/output dtype pair, strided, negatively strided and permuted views,
// in place), bitwise determinism across thread counts, and repeatable executors.
#include <set>

#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "test_util.h"

using namespace agtest;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

aclnnStatus phase1(const HostTensor &g, const HostTensor &x, const HostTensor &buffer, const HostTensor &out,
                   uint64_t *ws, aclOpExecutor **e) {
    return aclnnLogSigmoidBackwardGetWorkspaceSize(g.t(), x.t(), buffer.t(), out.t(), ws, e);
}

// Both phases; NULL stream runs synchronously. `buffer` defaults to x (its contents are ignored).
aclnnStatus run_op(const HostTensor &g, const HostTensor &x, const HostTensor &out, const HostTensor *buffer = nullptr,
                   aclrtStream stream = nullptr) {
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    const aclnnStatus s = phase1(g, x, buffer ? *buffer : x, out, &ws, &e);
    if (s != ACLNN_SUCCESS) return s;
    return run_phase2(aclnnLogSigmoidBackward, ws, e, stream);
}

// float64 reference (long double arithmetic), the spec's stable form:
// z = e^(-|x|); x < 0 ? g / (1 + z) : g * z / (1 + z).
double ref_one(double g, double x) {
    const long double z = std::exp(-std::fabs((long double)x));
    return double(x < 0 ? g / (1 + z) : g * z / (1 + z));
}

// ... rounded into the output dtype, so that overflow there (g = 1e30 into f16) is expected.
std::vector<double> reference(const HostTensor &g, const HostTensor &x, aclDataType out) {
    const std::vector<double> gv = g.values(), xv = x.values();
    std::vector<double> r(gv.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = quantize(ref_one(gv[i], xv[i]), out);
    return r;
}

// Tolerance from the kernel's arithmetic in the compute type (exp, 1 + z, g * z, the division:
// four roundings, each <= eps_c/2 relative, allowed 8 eps_c), plus the absolute error of a
// subnormal z (<= denorm_min_c, scaled by |g|), then one rounding into the output dtype
// (eps_out relative, plus its smallest subnormal).
std::vector<double> tolerance(const std::vector<double> &ref, const HostTensor &g, aclDataType out) {
    const aclDataType c = compute_dtype(g.dtype());
    std::vector<double> tol(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
        const double a = std::fabs(ref[i]);
        const double tc = 8 * eps_of(c) * a + 2 * denorm_min_of(c) * (1 + std::fabs(g.at(int64_t(i))));
        tol[i] = tc + eps_of(out) * (a + tc) + denorm_min_of(out);
    }
    return tol;
}

// Extremes for x: zeros, subnormals of every dtype, ±1e4, ±inf, NaN, and the range where
// e^(-|x|) becomes subnormal or zero in float and in double.
const std::vector<double> &x_specials() {
    static const std::vector<double> v = {
        0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-40, -1e-40, 1e-310, -1e-310, 3e-8, -3e-8, 1e-45, -1e-45,
        1e4, -1e4, kInf, -kInf, kNaN, 20, -20, 88, -88, 90, -90, 100, -100, 104, -104, 110, -110,
        700, -700, 745, -745, 1e300, -1e300, 16.5, -16.5, 1e-4, -1e-4};
    return v;
}
// Extremes for g, paired with moderate x (so that no inf * 0 meets a z the reference computes
// at higher precision).
const std::vector<double> &g_specials() {
    static const std::vector<double> v = {0.0, -0.0, kInf, -kInf, kNaN, 1e4, -1e4, 1e-40, -1e-310, 65504, 1e30};
    return v;
}

// Fills g and x: random g in [-3, 3), x in [-12, 12), then the specials at fixed positions.
void fill_inputs(HostTensor &g, HostTensor &x, uint64_t seed) {
    std::mt19937_64 rng(seed);
    g.fill_random(rng, -3, 3);
    x.fill_random(rng, -12, 12);
    const int64_t n = g.numel();
    const auto &xs = x_specials(), &gs = g_specials();
    for (size_t k = 0; k < xs.size() && int64_t(k) * 3 < n; ++k) x.set(int64_t(k) * 3, xs[k]);
    for (size_t k = 0; k < gs.size() && int64_t(k) * 3 + 1 < n; ++k) g.set(int64_t(k) * 3 + 1, gs[k]);
}

struct Layout {
    Shape strides;  // empty: contiguous
    int64_t offset = 0;
};

HostTensor make_view(const Shape &shape, const Layout &l, aclDataType dt) {
    return l.strides.empty() ? HostTensor(shape, dt) : HostTensor(shape, l.strides, l.offset, dt);
}

// One case: checks the values against the reference and that no out storage element outside
// the view was written.
void check_case(const Shape &shape, aclDataType in_dt, aclDataType out_dt, const Layout &gl, const Layout &xl,
                const Layout &ol, uint64_t seed) {
    const std::string what = "shape " + shape_str(shape) + " in " + dtype_str(in_dt) + " out " + dtype_str(out_dt) +
                             " strides " + shape_str(gl.strides) + "/" + shape_str(xl.strides) + "/" +
                             shape_str(ol.strides);
    HostTensor g = make_view(shape, gl, in_dt), x = make_view(shape, xl, in_dt), out = make_view(shape, ol, out_dt);
    fill_inputs(g, x, seed);
    const double sentinel = 7.0;
    out.fill_storage(sentinel);
    ASSERT_EQ(run_op(g, x, out), ACLNN_SUCCESS) << what << ": " << take_error();
    const std::vector<double> ref = reference(g, x, out_dt);
    expect_close(out.values(), ref, tolerance(ref, g, out_dt), what);
    const std::set<int64_t> inside(out.offsets().begin(), out.offsets().end());
    for (int64_t k = 0; k < out.storage_elems(); ++k)
        if (!inside.count(k)) ASSERT_EQ(out.storage_at(k), sentinel) << what << ": wrote outside the view at " << k;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Phase 1: every status path, the exact status, the message, and nothing written on failure.

TEST(LogSigmoidBackwardStatus, EveryFailurePathHasStatusAndMessage) {
    HostTensor g({2, 3}, ACL_FLOAT), x({2, 3}, ACL_FLOAT), buf({2, 3}, ACL_FLOAT), out({2, 3}, ACL_FLOAT);
    HostTensor x_f16({2, 3}, ACL_FLOAT16), g_i32({2, 3}, ACL_INT32), x_i32({2, 3}, ACL_INT32);
    HostTensor out_i32({2, 3}, ACL_INT32), out_i64({2, 3}, ACL_INT64), out_bool({2, 3}, ACL_BOOL);
    HostTensor x_32({3, 2}, ACL_FLOAT), out_24({2, 4}, ACL_FLOAT), out_6({6}, ACL_FLOAT);
    HostTensor g_20({2, 0}, ACL_FLOAT), x_0({0}, ACL_FLOAT), out_20({2, 0}, ACL_FLOAT);
    const Shape r9 = {1, 2, 1, 1, 1, 1, 1, 1, 3};  // accepted alone (no rank limit), but not [2, 3]
    HostTensor x9(r9, ACL_FLOAT), out9(r9, ACL_FLOAT);
    Shape r26(26, 1);  // beyond the 25 dims an aclTensor describes
    r26[1] = 2, r26[25] = 3;
    HostTensor g26(r26, ACL_FLOAT), x26(r26, ACL_FLOAT), out26(r26, ACL_FLOAT);
    // numel 2^32 * 2^32 overflows int64; creation succeeds, the operator rejects it.
    const Shape huge = {int64_t(1) << 32, int64_t(1) << 32}, zero_strides = {0, 0};
    float cell = 0;
    const int64_t one = 1;
    aclTensor *gh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    aclTensor *xh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    aclTensor *oh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    const Shape s23 = {2, 3};
    aclTensor *g_nodata = aclCreateTensor(s23.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s23.data(), 2, nullptr);
    // Memory conflicts: 8 floats; views of 6 at element 0 and at element 2.
    std::vector<float> mem(8, 1.0f);
    const Shape s6 = {6}, s8 = {8}, s3 = {3}, bcast = {0, 1};
    aclTensor *v_at0 = aclCreateTensor(s6.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s8.data(), 1, mem.data());
    aclTensor *v_at2 = aclCreateTensor(s6.data(), 1, ACL_FLOAT, nullptr, 2, ACL_FORMAT_ND, s8.data(), 1, mem.data());
    std::vector<float> row(3);
    aclTensor *out_bcast =
        aclCreateTensor(s23.data(), 2, ACL_FLOAT, bcast.data(), 0, ACL_FORMAT_ND, s3.data(), 1, row.data());
    HostTensor x6({6}, ACL_FLOAT), g6({6}, ACL_FLOAT);
    ASSERT_TRUE(gh && xh && oh && g_nodata && v_at0 && v_at2 && out_bcast) << take_error();

    using Call = std::function<aclnnStatus(uint64_t *, aclOpExecutor **)>;
    auto op = [](const aclTensor *a, const aclTensor *b, const aclTensor *c, const aclTensor *d) -> Call {
        return [=](uint64_t *ws, aclOpExecutor **e) {
            return aclnnLogSigmoidBackwardGetWorkspaceSize(a, b, c, const_cast<aclTensor *>(d), ws, e);
        };
    };
    struct Case {
        const char *name;
        Call call;
        bool null_ws, null_exec;
        aclnnStatus status;
        std::string exact;                  // the whole message, when given
        std::vector<std::string> needles;   // substrings the message must contain
    };
    const std::string kOp = "aclnnLogSigmoidBackward";
    const std::vector<Case> cases = {
        {"workspaceSize NULL", op(g.t(), x.t(), buf.t(), out.t()), true, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnLogSigmoidBackwardGetWorkspaceSize: The workspaceSize or executor is nullptr.", {}},
        {"executor NULL", op(g.t(), x.t(), buf.t(), out.t()), false, true, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnLogSigmoidBackwardGetWorkspaceSize: The workspaceSize or executor is nullptr.", {}},
        {"gradOutput NULL", op(nullptr, x.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnLogSigmoidBackward: Expected a proper Tensor but got null for argument gradOutput.", {}},
        {"self NULL", op(g.t(), nullptr, buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnLogSigmoidBackward: Expected a proper Tensor but got null for argument self.", {}},
        {"buffer NULL", op(g.t(), x.t(), nullptr, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnLogSigmoidBackward: Expected a proper Tensor but got null for argument buffer.", {}},
        {"gradInput NULL", op(g.t(), x.t(), buf.t(), nullptr), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnLogSigmoidBackward: Expected a proper Tensor but got null for argument gradInput.", {}},
        {"all NULL: first argument named", op(nullptr, nullptr, nullptr, nullptr), false, false,
         ACLNN_ERR_PARAM_NULLPTR, "", {kOp, "argument gradOutput."}},
        {"rank 26", op(g26.t(), x26.t(), buf.t(), out26.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: The gradOutput tensor cannot be larger than 25 dimensions, but got 26.", {}},
        {"self rank 26", op(g.t(), x26.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "self", "25 dimensions", "26"}},
        {"gradInput rank 26", op(g.t(), x.t(), buf.t(), out26.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "25 dimensions", "26"}},
        {"self rank 9 vs [2, 3]", op(g.t(), x9.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "self", "[1, 2, 1, 1, 1, 1, 1, 1, 3]"}},
        {"gradInput rank 9 vs [2, 3]", op(g.t(), x.t(), buf.t(), out9.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "", {kOp, "gradInput", "[1, 2, 1, 1, 1, 1, 1, 1, 3]"}},
        {"numel overflow", op(gh, xh, buf.t(), oh), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradOutput", "[4294967296, 4294967296]"}},
        {"no data", op(g_nodata, x.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR, "",
         {kOp, "gradOutput", "[2, 3]", "NULL data"}},
        {"gradOutput int32", op(g_i32.t(), x_i32.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: Tensor gradOutput not implemented for DT_INT32, should be in dtype support list "
         "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE].",
         {}},
        {"self dtype differs", op(g.t(), x_f16.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: Tensor self expected dtype is DT_FLOAT but found DT_FLOAT16.", {}},
        {"self int32", op(g.t(), x_i32.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "self", "DT_INT32"}},
        {"gradInput int32", op(g.t(), x.t(), buf.t(), out_i32.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: Tensor gradInput not implemented for DT_INT32, should be in dtype support list "
         "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE].",
         {}},
        {"gradInput int64", op(g.t(), x.t(), buf.t(), out_i64.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "Tensor gradInput not implemented for DT_INT64"}},
        {"gradInput bool", op(g.t(), x.t(), buf.t(), out_bool.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "Tensor gradInput not implemented for DT_BOOL"}},
        {"self shape", op(g.t(), x_32.t(), buf.t(), out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: Expected tensor for self to have same size as tensor for gradOutput, but [3, 2] "
         "does not equal [2, 3].",
         {}},
        {"gradInput shape", op(g.t(), x.t(), buf.t(), out_24.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: Expected tensor for gradInput to have same size as tensor for gradOutput, but "
         "[2, 4] does not equal [2, 3].",
         {}},
        {"gradInput rank", op(g.t(), x.t(), buf.t(), out_6.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "[6]", "[2, 3]"}},
        // no broadcasting, and the shape check comes before the empty fast path (as CANN)
        {"empty, shapes differ", op(g_20.t(), x_0.t(), buf.t(), out_20.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "", {kOp, "self", "[0]", "[2, 0]"}},
        {"gradInput overlaps gradOutput", op(v_at0, x6.t(), buf.t(), v_at2), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnLogSigmoidBackward: Output gradInput partially overlaps input gradOutput in memory; use separate "
         "memory or the identical view (in-place).",
         {}},
        {"gradInput overlaps self", op(g6.t(), v_at2, buf.t(), v_at0), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "partially overlaps input self"}},
        {"gradInput zero stride", op(g.t(), x.t(), buf.t(), out_bcast), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "overlap itself"}},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        take_error();  // start clean
        for (HostTensor *t : {&out, &out_24, &out_6, &out9, &out26}) t->fill_storage(7.0);  // canaries
        std::fill(mem.begin(), mem.end(), 1.0f);
        uint64_t ws = 777;
        aclOpExecutor *sentinel = reinterpret_cast<aclOpExecutor *>(uintptr_t(0x5150));
        aclOpExecutor *e = sentinel;
        EXPECT_EQ(c.call(c.null_ws ? nullptr : &ws, c.null_exec ? nullptr : &e), c.status);
        const std::string msg = take_error();
        if (!c.exact.empty()) EXPECT_EQ(msg, c.exact);
        for (const std::string &needle : c.needles)
            EXPECT_NE(msg.find(needle), std::string::npos) << "message \"" << msg << "\" lacks \"" << needle << "\"";
        EXPECT_EQ(ws, 777u) << "workspaceSize written on failure";
        EXPECT_EQ(e, sentinel) << "executor written on failure";
        for (HostTensor *t : {&out, &out_24, &out_6, &out9, &out26})
            for (int64_t k = 0; k < t->storage_elems(); ++k) ASSERT_EQ(t->storage_at(k), 7.0) << "out written";
        for (float v : mem) ASSERT_EQ(v, 1.0f) << "overlapping out written";
    }
    for (aclTensor *t : {gh, xh, oh, g_nodata, v_at0, v_at2, out_bcast}) aclDestroyTensor(t);
}

// Phase 2's own failures: NULL executor, a consumed executor, a foreign executor.
TEST(LogSigmoidBackwardStatus, Phase2Failures) {
    HostTensor g = make_tensor({4}, ACL_FLOAT, {1, 1, 1, 1}), x = make_tensor({4}, ACL_FLOAT, {0, 1, 2, 3});
    HostTensor out({4}, ACL_FLOAT);
    out.fill_storage(7.0);
    EXPECT_EQ(aclnnLogSigmoidBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(take_error().find("aclnnLogSigmoidBackward"), std::string::npos);
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(phase1(g, x, x, out, &ws, &e), ACLNN_SUCCESS);
    EXPECT_EQ(ws, 0u);
    ASSERT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    out.fill_storage(7.0);
    EXPECT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // single use
    EXPECT_NE(take_error().find("not live"), std::string::npos);
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.at(i), 7.0);
}

// `buffer` must be non-NULL; anything else about it is ignored: dtype, shape, rank, data, and
// memory shared with gradInput.
TEST(LogSigmoidBackwardStatus, BufferIsIgnored) {
    HostTensor g = make_tensor({2, 2}, ACL_FLOAT, {1, 2, 3, 4}), x = make_tensor({2, 2}, ACL_FLOAT, {-1, 0, 1, 2});
    const std::vector<double> want = reference(g, x, ACL_FLOAT);
    HostTensor b_i8({7}, ACL_INT8), b_bool({1, 1, 1}, ACL_BOOL), b_f16({2, 2}, ACL_FLOAT16);
    HostTensor b_r9({1, 1, 1, 1, 1, 1, 1, 1, 2}, ACL_DOUBLE), b_empty({0, 5}, ACL_FLOAT);
    const Shape s5 = {5};
    aclTensor *b_nodata = aclCreateTensor(s5.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s5.data(), 1, nullptr);
    aclTensor *b_undef = aclCreateTensor(s5.data(), 1, ACL_DT_UNDEFINED, nullptr, 0, ACL_FORMAT_ND, s5.data(), 1,
                                         b_i8.data());
    ASSERT_TRUE(b_nodata && b_undef);
    HostTensor out({2, 2}, ACL_FLOAT);
    // buffer sharing gradInput's memory
    aclTensor *b_alias = aclCreateTensor(s5.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s5.data(), 1, out.data());
    ASSERT_TRUE(b_alias);
    for (const aclTensor *b : {b_i8.t(), b_bool.t(), b_f16.t(), b_r9.t(), b_empty.t(), b_nodata, b_undef, b_alias}) {
        out.fill_storage(7.0);
        uint64_t ws = 1;
        aclOpExecutor *e = nullptr;
        ASSERT_EQ(aclnnLogSigmoidBackwardGetWorkspaceSize(g.t(), x.t(), b, out.t(), &ws, &e), ACLNN_SUCCESS)
            << take_error();
        EXPECT_EQ(ws, 0u);
        ASSERT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
        expect_close(out.values(), want, tolerance(want, g, ACL_FLOAT), "buffer ignored");
    }
    for (aclTensor *t : {b_nodata, b_undef, b_alias}) aclDestroyTensor(t);
}

// Formats other than ND are treated as ND; rank 0 and rank 8 work.
TEST(LogSigmoidBackwardStatus, AnyFormatAndRanks0To8) {
    std::vector<float> a(6, 1.0f), b(6, 0.0f), c(6, 5.0f);
    const KnownMemory ka(a), kb(b), kc(c);
    const Shape s = {1, 2, 3};
    aclTensor *ta = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NHWC, s.data(), 3, a.data());
    aclTensor *tb = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, s.data(), 3, b.data());
    aclTensor *tc = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_UNDEFINED, s.data(), 3, c.data());
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(aclnnLogSigmoidBackwardGetWorkspaceSize(ta, tb, tb, tc, &ws, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    for (float v : c) EXPECT_EQ(v, 0.5f);
    for (aclTensor *t : {ta, tb, tc}) aclDestroyTensor(t);
    uint64_t seed = 1;
    for (const Shape &shape : std::vector<Shape>{{}, {1}, {5}, {2, 1, 3, 1, 2, 1, 2, 3}})
        for (aclDataType dt : float_dtypes()) check_case(shape, dt, dt, {}, {}, {}, seed++);
}

// Empty tensors: workspace 0, a valid executor whose run writes nothing.
TEST(LogSigmoidBackwardEmpty, WorkspaceZeroAndNothingWritten) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    for (const Shape &shape : std::vector<Shape>{{0}, {2, 0}, {0, 3}, {3, 0, 4}})
        for (aclrtStream s : {aclrtStream(nullptr), stream}) {
            SCOPED_TRACE(shape_str(shape));
            HostTensor g(shape, ACL_FLOAT), x(shape, ACL_FLOAT), out(shape, ACL_FLOAT16);
            out.fill_storage(3.5);
            uint64_t ws = 99;
            aclOpExecutor *e = nullptr;
            ASSERT_EQ(phase1(g, x, x, out, &ws, &e), ACLNN_SUCCESS) << take_error();
            EXPECT_EQ(ws, 0u);
            ASSERT_NE(e, nullptr);
            EXPECT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, s), ACLNN_SUCCESS);
            EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
            EXPECT_EQ(out.storage_at(0), 3.5);
            EXPECT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // consumed
            take_error();
        }
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Values against the float64 reference.

// The spec's fixed points, exactly: x = -inf -> g, +inf -> 0, NaN -> NaN, 0 -> g/2; ±1e4 and
// g = ±inf do not overflow into NaN where the limit is finite.
TEST(LogSigmoidBackwardValues, ExtremesExactly) {
    for (aclDataType dt : float_dtypes()) {
        SCOPED_TRACE(dtype_str(dt));
        const std::vector<double> xs = {-kInf, kInf, kNaN, 0.0, -0.0, -1e4, 1e4, -kInf, kInf, -1e4, 1e4, 2};
        const std::vector<double> gs = {3.0, 3.0, 3.0, 3.0, -3.0, 2.0, 2.0, kInf, 1.0, -kInf, 1.0, kNaN};
        HostTensor g = make_tensor({12}, dt, gs), x = make_tensor({12}, dt, xs), out({12}, dt);
        ASSERT_EQ(run_op(g, x, out), ACLNN_SUCCESS);
        const std::vector<double> v = out.values();
        EXPECT_EQ(v[0], 3.0);
        EXPECT_EQ(v[1], 0.0);
        EXPECT_FALSE(std::signbit(v[1]));
        EXPECT_TRUE(std::isnan(v[2]));
        EXPECT_EQ(v[3], 1.5);
        EXPECT_EQ(v[4], -1.5);
        EXPECT_EQ(v[5], 2.0);
        EXPECT_EQ(v[6], 0.0);
        EXPECT_EQ(v[7], kInf);
        EXPECT_EQ(v[8], 0.0);
        EXPECT_EQ(v[9], -kInf);
        EXPECT_EQ(v[10], 0.0);
        EXPECT_TRUE(std::isnan(v[11]));
    }
}

// Every input dtype with every output dtype, with the extremes mixed into random data, on the
// contiguous (vector) path and on a strided (scalar) path.
TEST(LogSigmoidBackwardValues, EveryDtypePairWithExtremes) {
    uint64_t seed = 100;
    for (aclDataType in : float_dtypes())
        for (aclDataType out : float_dtypes()) {
            check_case({7, 19}, in, out, {}, {}, {}, seed++);
            check_case({7, 19}, in, out, {{1, 7}, 0}, {{38, 2}, 1}, {}, seed++);
            check_case({1001}, in, out, {}, {}, {}, seed++);
        }
}

// Non-contiguous views: every other element, transposed and permuted strides, negative strides
// (pointer at the end of the storage), zero strides for the inputs; for the inputs, for out, or
// for all three; the same layout everywhere takes the dense fast path even when permuted or reversed.
TEST(LogSigmoidBackwardValues, StridedAndNegativelyStridedViews) {
    struct Case {
        const char *name;
        Shape shape;
        Layout layout;
    };
    const std::vector<Case> cases = {
        {"every other column", {6, 10}, {{20, 2}, 0}},
        {"every other row and column, offset", {6, 10}, {{40, 2}, 21}},
        {"transposed", {7, 5}, {{1, 7}, 0}},
        {"permuted 3-d", {4, 5, 6}, {{1, 24, 4}, 0}},
        {"reversed", {4, 6}, {{-6, -1}, 23}},
        {"last dim reversed", {4, 6}, {{6, -1}, 5}},
        {"reversed 3-d with middle dim", {3, 40, 20}, {{-800, 20, -1}, 2 * 800 + 19}},
        {"reversed and every other", {5, 8}, {{-16, -2}, 4 * 16 + 14}},
        {"1-d negative stride", {300}, {{-3}, 897}},
        {"zero-stride rows", {4, 6}, {{0, 1}, 0}},
        {"zero-stride columns", {4, 6}, {{1, 0}, 0}},
    };
    uint64_t seed = 1000;
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const bool broadcast = std::find(c.layout.strides.begin(), c.layout.strides.end(), 0) != c.layout.strides.end();
        for (aclDataType dt : float_dtypes()) {
            check_case(c.shape, dt, dt, c.layout, c.layout, {}, seed++);  // strided inputs
            check_case(c.shape, dt, dt, c.layout, {}, {}, seed++);        // only gradOutput strided
            check_case(c.shape, dt, dt, {}, c.layout, {}, seed++);        // only self strided
            if (!broadcast) {                                              // out must not self-overlap
                check_case(c.shape, dt, dt, {}, {}, c.layout, seed++);
                check_case(c.shape, dt, dt, c.layout, c.layout, c.layout, seed++);
            }
        }
    }
}

// In place: gradInput is gradOutput (the same handle, or a second handle on the identical view),
// or self; contiguous and strided.
TEST(LogSigmoidBackwardValues, InPlace) {
    for (aclDataType dt : float_dtypes())
        for (int which = 0; which < 3; ++which)
            for (bool strided : {false, true}) {
                SCOPED_TRACE(std::string(dtype_str(dt)) + " case " + std::to_string(which) + (strided ? " strided" : ""));
                const Shape shape = {30, 40};
                const Layout l = strided ? Layout{{-80, 2}, 29 * 80} : Layout{};
                HostTensor g = make_view(shape, l, dt), x = make_view(shape, l, dt);
                fill_inputs(g, x, 55 + which);
                const std::vector<double> ref = reference(g, x, dt);
                const std::vector<double> tol = tolerance(ref, g, dt);
                if (which == 0) {
                    ASSERT_EQ(run_op(g, x, g), ACLNN_SUCCESS) << take_error();
                    expect_close(g.values(), ref, tol, "out = gradOutput handle");
                } else if (which == 1) {
                    const int64_t storage = g.storage_elems();
                    aclTensor *alias = aclCreateTensor(shape.data(), 2, dt, g.strides().data(), g.offset(),
                                                       ACL_FORMAT_ND, &storage, 1, g.data());
                    ASSERT_NE(alias, nullptr);
                    uint64_t ws = 0;
                    aclOpExecutor *e = nullptr;
                    ASSERT_EQ(aclnnLogSigmoidBackwardGetWorkspaceSize(g.t(), x.t(), x.t(), alias, &ws, &e), ACLNN_SUCCESS)
                        << take_error();
                    ASSERT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
                    aclDestroyTensor(alias);
                    expect_close(g.values(), ref, tol, "out = identical view of gradOutput");
                } else {
                    ASSERT_EQ(run_op(g, x, x), ACLNN_SUCCESS) << take_error();
                    expect_close(x.values(), ref, tol, "out = self");
                }
            }
}

// f32-class: out f64 from f16/bf16/f32 inputs holds exactly the float32 result; from f64 inputs,
// out f32 is the f64 result rounded once.
TEST(LogSigmoidBackwardValues, OutputDtypeIsOneRoundingOfTheComputeResult) {
    for (aclDataType in : float_dtypes()) {
        SCOPED_TRACE(dtype_str(in));
        HostTensor g({2000}, in), x({2000}, in);
        fill_inputs(g, x, 9);
        const aclDataType ct = compute_dtype(in);
        HostTensor base({2000}, ct), wide({2000}, ACL_DOUBLE), f32({2000}, ACL_FLOAT);
        ASSERT_EQ(run_op(g, x, base), ACLNN_SUCCESS);
        ASSERT_EQ(run_op(g, x, wide), ACLNN_SUCCESS);
        ASSERT_EQ(run_op(g, x, f32), ACLNN_SUCCESS);
        for (int64_t i = 0; i < 2000; ++i) {
            const double c = base.at(i);
            if (std::isnan(c)) {
                ASSERT_TRUE(std::isnan(wide.at(i)) && std::isnan(f32.at(i))) << i;
                continue;
            }
            ASSERT_EQ(wide.at(i), c) << i;
            ASSERT_EQ(f32.at(i), double(float(c))) << i;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bitwise determinism across thread counts, on inputs large enough to run in parallel, on the
// dense fast path and the strided path.

TEST(LogSigmoidBackwardDeterminism, BitwiseIdenticalForAnyThreadCount) {
    struct Case {
        const char *name;
        Shape shape;
        Layout layout;
        aclDataType in, out;
    };
    const std::vector<Case> cases = {
        {"contiguous f32", {256, 1024}, {}, ACL_FLOAT, ACL_FLOAT},
        {"contiguous f16 -> f32", {3, 40001}, {}, ACL_FLOAT16, ACL_FLOAT},
        {"transposed bf16", {300, 200}, {{1, 300}, 0}, ACL_BF16, ACL_BF16},
        {"reversed every other f64", {200, 300}, {{-600, -2}, 199 * 600 + 598}, ACL_DOUBLE, ACL_DOUBLE},
        {"one long strided dim f32", {100000}, {{3}, 0}, ACL_FLOAT, ACL_FLOAT16},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        ASSERT_GT(numel(c.shape), ag::kern::kParallelMin);
        HostTensor g = make_view(c.shape, c.layout, c.in), x = make_view(c.shape, c.layout, c.in);
        fill_inputs(g, x, 2024);
        std::vector<unsigned char> first;
        for (int threads : {1, 2, 3, 7, 1}) {
            ThreadCount tc(threads);
            HostTensor out(c.shape, c.out);
            ASSERT_EQ(run_op(g, x, out), ACLNN_SUCCESS);
            const std::vector<unsigned char> bytes = out.storage_bytes();
            if (first.empty()) {
                first = bytes;
                const std::vector<double> ref = reference(g, x, c.out);
                expect_close(out.values(), ref, tolerance(ref, g, c.out), c.name);
            } else {
                ASSERT_EQ(bytes.size(), first.size());
                EXPECT_EQ(std::memcmp(bytes.data(), first.data(), bytes.size()), 0) << threads << " threads";
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Executors: repeatable, inputs repointed (buffer is input 2, gradInput output 0), streams.

TEST(LogSigmoidBackwardExecutor, RepeatableWithRepointedTensors) {
    HostTensor g = make_tensor({4}, ACL_FLOAT, {1, 1, 1, 1}), x = make_tensor({4}, ACL_FLOAT, {-1, 0, 1, 2});
    HostTensor x2 = make_tensor({4}, ACL_FLOAT, {5, -5, 0.5, -0.5}), b({4}, ACL_FLOAT), b2({4}, ACL_FLOAT);
    HostTensor out({4}, ACL_FLOAT), out2({4}, ACL_FLOAT);
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(phase1(g, x, b, out, &ws, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    const std::vector<double> r1 = reference(g, x, ACL_FLOAT);
    expect_close(out.values(), r1, tolerance(r1, g, ACL_FLOAT), "first run");
    ASSERT_EQ(aclSetInputTensorAddr(e, 1, x2.t(), x2.data()), ACLNN_SUCCESS) << take_error();
    ASSERT_EQ(aclSetInputTensorAddr(e, 2, b2.t(), b2.data()), ACLNN_SUCCESS) << take_error();
    ASSERT_EQ(aclSetOutputTensorAddr(e, 0, out2.t(), out2.data()), ACLNN_SUCCESS) << take_error();
    EXPECT_EQ(aclSetInputTensorAddr(e, 3, b2.t(), b2.data()), ACLNN_ERR_PARAM_INVALID);  // 3 inputs only
    take_error();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    ASSERT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, stream), ACLNN_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    const std::vector<double> r2 = reference(g, x2, ACL_FLOAT);
    expect_close(out2.values(), r2, tolerance(r2, g, ACL_FLOAT), "second run");
    expect_close(out.values(), r1, tolerance(r1, g, ACL_FLOAT), "first out untouched");
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

