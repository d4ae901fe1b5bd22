// aclnnSoftshrinkBackward: every phase-1 status path with its exact status and message (and
// nothing written), lambd's dtypes and values, empty tensors, exact values against a float64
// reference (the closed band, NaN on every code path, extremes, every gradOutput/self/gradInput
// dtype triple, NumPy broadcasting with 0-D and stride-0 views, strided and negatively strided
// views, in place), bitwise determinism across thread counts, and repeatable executors.
#include <set>

#include "aclnnop/aclnn_softshrink_backward.h"
#include "test_util.h"

using namespace agtest;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

// An owned aclScalar.
struct Scalar {
    aclScalar *s = nullptr;
    template <class V>
    Scalar(V v, aclDataType dt) {
        s = aclCreateScalar(&v, dt);
        EXPECT_NE(s, nullptr) << take_error();
    }
    static Scalar f32(double v) { return Scalar(float(v), ACL_FLOAT); }
    Scalar(const Scalar &) = delete;
    Scalar(Scalar &&o) noexcept : s(o.s) { o.s = nullptr; }
    ~Scalar() { aclDestroyScalar(s); }
};

aclnnStatus phase1(const HostTensor &g, const HostTensor &x, const aclScalar *lambd, const HostTensor &out,
                   uint64_t *ws, aclOpExecutor **e) {
    return aclnnSoftshrinkBackwardGetWorkspaceSize(g.t(), x.t(), lambd, out.t(), ws, e);
}

// Both phases; NULL stream runs synchronously.
aclnnStatus run_op(const HostTensor &g, const HostTensor &x, const aclScalar *lambd, const HostTensor &out,
                   aclrtStream stream = nullptr) {
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    const aclnnStatus s = phase1(g, x, lambd, out, &ws, &e);
    if (s != ACLNN_SUCCESS) return s;
    return run_phase2(aclnnSoftshrinkBackward, ws, e, stream);
}

// NumPy broadcast shape (the test's own).
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

// Row-major index into `in` (shape `s`) of the element that broadcasts to row-major index `i`
// of shape `out`.
int64_t source_index(int64_t i, const Shape &out, const Shape &s) {
    int64_t src = 0, mul = 1;
    for (size_t d = out.size(); d-- > 0;) {
        const int64_t idx = i % out[d];
        i /= out[d];
        const int64_t sd = int64_t(d) - int64_t(out.size() - s.size());
        if (sd >= 0) {
            if (s[size_t(sd)] != 1) src += idx * mul;
            mul *= s[size_t(sd)];
        }
    }
    return src;
}

// The reference, exact: the compute type is f64 if either input is f64, else f32; λ rounded to
// it; the result g (exact in the compute type) or +0, then rounded once into out's dtype, so
// the kernel must match it bit for bit (NaN for NaN).
std::vector<double> reference(const HostTensor &g, const HostTensor &x, double lambd, aclDataType out_dt) {
    const bool f64 = g.dtype() == ACL_DOUBLE || x.dtype() == ACL_DOUBLE;
    const double lam = f64 ? lambd : double(float(lambd));
    const Shape b = broadcast(g.shape(), x.shape());
    const std::vector<double> gv = g.values(), xv = x.values();
    std::vector<double> r(size_t(numel(b)));
    for (int64_t i = 0; i < int64_t(r.size()); ++i) {
        const double gi = gv[size_t(source_index(i, b, g.shape()))], xi = xv[size_t(source_index(i, b, x.shape()))];
        const double v = std::isnan(xi) ? kNaN : (xi > lam || xi < -lam) ? gi : 0.0;
        r[size_t(i)] = quantize(v, out_dt);
    }
    return r;
}

// Exact comparison, zeros' signs included.
void expect_exact(const std::vector<double> &got, const std::vector<double> &want, const std::string &what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const bool ok = std::isnan(want[i]) ? std::isnan(got[i])
                                            : got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]);
        if (!ok && bad++ < 5) ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i];
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

// x values around λ = 0.5 and 1.2f (exactly ±λ, one step inside and outside in every dtype),
// zeros, subnormals, ±1e4, ±inf, NaN.
std::vector<double> x_specials() {
    std::vector<double> v = {0.0,  -0.0, 1e-40, -1e-40, 1e-310, -1e-310, 3e-8, -3e-8, 1e4, -1e4,
                             kInf, -kInf, kNaN, 0.5,    -0.5,   0.75,    -0.75, 1.0,  -1.0, 2.0};
    for (double lam : {0.5, double(1.2f)})
        for (double s : {1.0, -1.0}) {
            v.push_back(s * lam);
            v.push_back(s * std::nextafter(lam, 0.0));
            v.push_back(s * std::nextafter(lam, 2.0));
            v.push_back(s * double(std::nextafter(float(lam), 2.0f)));
            v.push_back(s * double(std::nextafter(float(lam), 0.0f)));
            v.push_back(s * lam * (1 + 1.0 / 128));  // a bf16 step
            v.push_back(s * lam * (1 - 1.0 / 256));
            v.push_back(s * lam * (1 + 1.0 / 1024));  // a f16 step
        }
    return v;
}
const std::vector<double> &g_specials() {
    static const std::vector<double> v = {0.0, -0.0, kInf, -kInf, kNaN, 1e4, -1e4, 1e-40, -1e-310, 65504, 1e30, 7e4};
    return v;
}

// Random g in [-3, 3), x in [-2, 2); specials for x at every 2nd position, for g at every 3rd.
void fill_inputs(HostTensor &g, HostTensor &x, uint64_t seed) {
    std::mt19937_64 rng(seed);
    g.fill_random(rng, -3, 3);
    x.fill_random(rng, -2, 2);
    const std::vector<double> xs = x_specials();
    for (size_t k = 0; k < xs.size() && int64_t(k) * 2 < x.numel(); ++k) x.set(int64_t(k) * 2, xs[k]);
    const auto &gs = g_specials();
    for (size_t k = 0; k < gs.size() && int64_t(k) * 3 + 1 < g.numel(); ++k) g.set(int64_t(k) * 3 + 1, gs[k]);
}

struct Layout {
    Shape strides;  // empty: contiguous
    int64_t offset = 0;
};

HostTensor make_view(const Shape &shape, const Layout &l, aclDataType dt) {
    return l.strides.empty() ? HostTensor(shape, dt) : HostTensor(shape, l.strides, l.offset, dt);
}

struct Spec {
    Shape shape;
    Layout layout;
    aclDataType dt;
};

// One case: values exactly as the reference, nothing written outside out's view.
void check_case(const Spec &gs, const Spec &xs, const Spec &os, double lambd, uint64_t seed,
                aclDataType lambd_dt = ACL_FLOAT) {
    const std::string what = "g " + shape_str(gs.shape) + shape_str(gs.layout.strides) + dtype_str(gs.dt) + " x " +
                             shape_str(xs.shape) + shape_str(xs.layout.strides) + dtype_str(xs.dt) + " out " +
                             shape_str(os.shape) + shape_str(os.layout.strides) + dtype_str(os.dt) + " lambd " +
                             std::to_string(lambd);
    HostTensor g = make_view(gs.shape, gs.layout, gs.dt), x = make_view(xs.shape, xs.layout, xs.dt);
    HostTensor out = make_view(os.shape, os.layout, os.dt);
    fill_inputs(g, x, seed);
    const double sentinel = 7.0;
    out.fill_storage(sentinel);
    const Scalar lam = lambd_dt == ACL_DOUBLE ? Scalar(lambd, ACL_DOUBLE) : Scalar::f32(lambd);
    ASSERT_EQ(run_op(g, x, lam.s, out), ACLNN_SUCCESS) << what << ": " << take_error();
    expect_exact(out.values(), reference(g, x, lambd_dt == ACL_DOUBLE ? lambd : double(float(lambd)), os.dt), what);
    const std::set<int64_t> inside(out.offsets().begin(), out.offsets().end());
    for (int64_t k = 0; k < out.storage_elems(); ++k)
        if (!inside.count(k)) ASSERT_EQ(out.storage_at(k), sentinel) << what << ": wrote outside the view at " << k;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Phase 1: every status path, the exact status, the message, and nothing written on failure.

TEST(SoftshrinkBackwardStatus, EveryFailurePathHasStatusAndMessage) {
    HostTensor g({2, 3}, ACL_FLOAT), x({2, 3}, ACL_FLOAT16), out({2, 3}, ACL_FLOAT);
    HostTensor g_i32({2, 3}, ACL_INT32), x_i64({2, 3}, ACL_INT64), out_bool({2, 3}, ACL_BOOL);
    HostTensor x_4({4}, ACL_FLOAT), x_31({3, 1}, ACL_FLOAT), out_24({2, 4}, ACL_FLOAT), out_6({6}, ACL_FLOAT);
    HostTensor out_13({1, 3}, ACL_FLOAT), out_123({1, 2, 3}, ACL_FLOAT);
    HostTensor g_0({0}, ACL_FLOAT), x_2({2}, ACL_FLOAT), out_0({0}, ACL_FLOAT);
    const Shape r9 = {1, 2, 1, 1, 1, 1, 1, 1, 3};
    HostTensor g9(r9, ACL_FLOAT), x9(r9, ACL_FLOAT), out9(r9, ACL_FLOAT);
    const Shape huge = {int64_t(1) << 32, int64_t(1) << 32}, zero_strides = {0, 0};
    float cell = 0;
    const int64_t one = 1;
    aclTensor *gh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    const Shape s23 = {2, 3};
    aclTensor *x_nodata = aclCreateTensor(s23.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s23.data(), 2, nullptr);
    // Memory conflicts: 8 floats; views of 6 at element 0 and at element 2; a broadcast g (1, 3)
    // whose memory is out's first row.
    std::vector<float> mem(8, 1.0f);
    const Shape s6 = {6}, s8 = {8}, s3 = {3}, s13 = {1, 3}, bcast = {0, 1};
    aclTensor *v_at0 = aclCreateTensor(s6.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s8.data(), 1, mem.data());
    aclTensor *v_at2 = aclCreateTensor(s6.data(), 1, ACL_FLOAT, nullptr, 2, ACL_FORMAT_ND, s8.data(), 1, mem.data());
    aclTensor *v23 = aclCreateTensor(s23.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s8.data(), 1, mem.data());
    aclTensor *g13 = aclCreateTensor(s13.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s8.data(), 1, mem.data());
    std::vector<float> row(3);
    aclTensor *out_bcast =
        aclCreateTensor(s23.data(), 2, ACL_FLOAT, bcast.data(), 0, ACL_FORMAT_ND, s3.data(), 1, row.data());
    HostTensor x6({6}, ACL_FLOAT), g6({6}, ACL_FLOAT);
    ASSERT_TRUE(gh && x_nodata && v_at0 && v_at2 && v23 && g13 && out_bcast) << take_error();

    const Scalar lam = Scalar::f32(0.5), neg = Scalar::f32(-0.5), nan = Scalar::f32(kNaN);
    const Scalar neg_inf(-kInf, ACL_DOUBLE), neg_i32(int32_t(-3), ACL_INT32), neg_tiny(-1e-300, ACL_DOUBLE);
    const Scalar b_true(uint8_t(1), ACL_BOOL), c64(uint64_t(0), ACL_COMPLEX64);

    using Call = std::function<aclnnStatus(uint64_t *, aclOpExecutor **)>;
    auto op = [](const aclTensor *a, const aclTensor *b, const aclScalar *l, const aclTensor *c) -> Call {
        return [=](uint64_t *ws, aclOpExecutor **e) {
            return aclnnSoftshrinkBackwardGetWorkspaceSize(a, b, l, const_cast<aclTensor *>(c), ws, e);
        };
    };
    struct Case {
        const char *name;
        Call call;
        bool null_ws, null_exec;
        aclnnStatus status;
        std::string exact;                 // the whole message, when given
        std::vector<std::string> needles;  // substrings the message must contain
    };
    const std::string kOp = "aclnnSoftshrinkBackward";
    const std::string kLambd = "aclnnSoftshrinkBackward: lambd should be greater or equal to 0, but found to be ";
    const std::vector<Case> cases = {
        {"workspaceSize NULL", op(g.t(), x.t(), lam.s, out.t()), true, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnSoftshrinkBackwardGetWorkspaceSize: The workspaceSize or executor is nullptr.", {}},
        {"executor NULL", op(g.t(), x.t(), lam.s, out.t()), false, true, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnSoftshrinkBackwardGetWorkspaceSize: The workspaceSize or executor is nullptr.", {}},
        {"gradOutput NULL", op(nullptr, x.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnSoftshrinkBackward: Expected a proper Tensor but got null for argument gradOutput.", {}},
        {"self NULL", op(g.t(), nullptr, lam.s, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnSoftshrinkBackward: Expected a proper Tensor but got null for argument self.", {}},
        {"lambd NULL", op(g.t(), x.t(), nullptr, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR, "",
         {kOp, "argument lambd", "null"}},
        {"gradInput NULL", op(g.t(), x.t(), lam.s, nullptr), false, false, ACLNN_ERR_PARAM_NULLPTR,
         "aclnnSoftshrinkBackward: Expected a proper Tensor but got null for argument gradInput.", {}},
        {"rank 9", op(g9.t(), x9.t(), lam.s, out9.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnSoftshrinkBackward: The gradOutput tensor cannot be larger than 8 dimensions, but got 9.", {}},
        {"self rank 9", op(g.t(), x9.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "self", "8 dimensions", "9"}},
        {"gradInput rank 9", op(g.t(), x.t(), lam.s, out9.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "[1, 2, 1, 1, 1, 1, 1, 1, 3]"}},
        {"numel overflow", op(gh, x.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradOutput", "[4294967296, 4294967296]"}},
        {"no data", op(g.t(), x_nodata, lam.s, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR, "",
         {kOp, "self", "[2, 3]", "NULL data"}},
        {"gradOutput int32", op(g_i32.t(), x.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnSoftshrinkBackward: Tensor gradOutput not implemented for DT_INT32, should be in dtype support list "
         "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE].",
         {}},
        {"self int64", op(g.t(), x_i64.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnSoftshrinkBackward: Tensor self not implemented for DT_INT64, should be in dtype support list "
         "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE].",
         {}},
        {"gradInput bool", op(g.t(), x.t(), lam.s, out_bool.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "Tensor gradInput not implemented for DT_BOOL"}},
        {"not broadcastable", op(g.t(), x_4.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnSoftshrinkBackward: The size of tensor gradOutput [2, 3] must match the size of tensor self [4].", {}},
        {"not broadcastable (3,1)", op(g.t(), x_31.t(), lam.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "[2, 3]", "[3, 1]"}},
        {"empty not broadcastable", op(g_0.t(), x_2.t(), lam.s, out_0.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "", {kOp, "[0]", "[2]"}},
        {"gradInput shape", op(g.t(), x.t(), lam.s, out_24.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnSoftshrinkBackward: Expected tensor for gradInput to have size [2, 3], but got [2, 4].", {}},
        {"gradInput rank", op(g.t(), x.t(), lam.s, out_6.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "[2, 3]", "[6]"}},
        {"gradInput is an input's shape, not the broadcast one", op(out_13.t(), x_31.t(), lam.s, out_13.t()), false,
         false, ACLNN_ERR_PARAM_INVALID, "", {kOp, "gradInput", "[3, 3]", "[1, 3]"}},
        {"gradInput with an extra leading dim", op(g.t(), x.t(), lam.s, out_123.t()), false, false,
         ACLNN_ERR_PARAM_INVALID, "", {kOp, "gradInput", "[2, 3]", "[1, 2, 3]"}},
        {"lambd negative", op(g.t(), x.t(), neg.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         kLambd + "[-0.500000].", {}},
        {"lambd NaN", op(g.t(), x.t(), nan.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kLambd + "[", "nan].", "lambd"}},
        {"lambd -inf", op(g.t(), x.t(), neg_inf.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         kLambd + "[-inf].", {}},
        {"lambd int32 negative", op(g.t(), x.t(), neg_i32.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         kLambd + "[-3.000000].", {}},
        {"lambd tiny negative double", op(g.t(), x.t(), neg_tiny.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         kLambd + "[-0.000000].", {}},
        {"lambd bool", op(g.t(), x.t(), b_true.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "Scalar lambd not implemented for DT_BOOL, should be in dtype support list [", "DT_FLOAT",
          "DT_INT64"}},
        {"lambd complex", op(g.t(), x.t(), c64.s, out.t()), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "Scalar lambd not implemented for DT_COMPLEX64"}},
        {"gradInput overlaps gradOutput", op(v_at0, x6.t(), lam.s, v_at2), false, false, ACLNN_ERR_PARAM_INVALID,
         "aclnnSoftshrinkBackward: Output gradInput partially overlaps input gradOutput in memory; use separate "
         "memory or the identical view (in-place).",
         {}},
        {"gradInput overlaps self", op(g6.t(), v_at2, lam.s, v_at0), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "partially overlaps input self"}},
        {"gradInput over a broadcast gradOutput", op(g13, g.t(), lam.s, v23), false, false, ACLNN_ERR_PARAM_INVALID,
         "", {kOp, "gradInput", "partially overlaps input gradOutput"}},
        {"gradInput zero stride", op(g.t(), x.t(), lam.s, out_bcast), false, false, ACLNN_ERR_PARAM_INVALID, "",
         {kOp, "gradInput", "overlap itself"}},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        take_error();  // start clean
        for (HostTensor *t : {&out, &out_24, &out_6, &out9, &out_13, &out_123}) t->fill_storage(7.0);  // canaries
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
        for (HostTensor *t : {&out, &out_24, &out_6, &out9, &out_13, &out_123})
            for (int64_t k = 0; k < t->storage_elems(); ++k) ASSERT_EQ(t->storage_at(k), 7.0) << "out written";
        for (float v : mem) ASSERT_EQ(v, 1.0f) << "overlapping out written";
    }
    for (aclTensor *t : {gh, x_nodata, v_at0, v_at2, v23, g13, out_bcast}) aclDestroyTensor(t);
}

TEST(SoftshrinkBackwardStatus, Phase2Failures) {
    HostTensor g = make_tensor({4}, ACL_FLOAT, {1, 1, 1, 1}), x = make_tensor({4}, ACL_FLOAT, {0, 1, 2, 3});
    HostTensor out({4}, ACL_FLOAT);
    const Scalar lam = Scalar::f32(0.5);
    EXPECT_EQ(aclnnSoftshrinkBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_NE(take_error().find("aclnnSoftshrinkBackward"), std::string::npos);
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(phase1(g, x, lam.s, out, &ws, &e), ACLNN_SUCCESS);
    EXPECT_EQ(ws, 0u);
    ASSERT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    out.fill_storage(7.0);
    EXPECT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // single use
    EXPECT_NE(take_error().find("not live"), std::string::npos);
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.at(i), 7.0);
}

// lambd: any float dtype, and integers (our decision, as CANN's ToFloat and PyTorch's Scalar);
// 0 and +inf are valid; the value is copied at phase 1.
TEST(SoftshrinkBackwardStatus, LambdDtypesAndValues) {
    HostTensor g = make_tensor({6}, ACL_FLOAT, {1, 2, 3, 4, 5, 6});
    HostTensor x = make_tensor({6}, ACL_FLOAT, {0.0, -1.0, 1.5, 2.0, -2.5, kInf});
    struct Case {
        Scalar lam;
        std::vector<double> want;
    };
    std::vector<Case> cases;
    cases.push_back({Scalar(float(1.0), ACL_FLOAT), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(2.0, ACL_DOUBLE), {0, 0, 0, 0, 5, 6}});
    cases.push_back({Scalar(double_to_half_bits(1.5), ACL_FLOAT16), {0, 0, 0, 4, 5, 6}});
    cases.push_back({Scalar(double_to_bf16_bits(1.0), ACL_BF16), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(int32_t(2), ACL_INT32), {0, 0, 0, 0, 5, 6}});
    cases.push_back({Scalar(int64_t(1), ACL_INT64), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(int8_t(0), ACL_INT8), {0, 2, 3, 4, 5, 6}});
    cases.push_back({Scalar(uint8_t(3), ACL_UINT8), {0, 0, 0, 0, 0, 6}});
    cases.push_back({Scalar(uint16_t(1), ACL_UINT16), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(int16_t(1), ACL_INT16), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(uint32_t(1), ACL_UINT32), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(uint64_t(1), ACL_UINT64), {0, 0, 3, 4, 5, 6}});
    cases.push_back({Scalar(float(0), ACL_FLOAT), {0, 2, 3, 4, 5, 6}});
    cases.push_back({Scalar(-0.0, ACL_DOUBLE), {0, 2, 3, 4, 5, 6}});
    cases.push_back({Scalar(kInf, ACL_DOUBLE), {0, 0, 0, 0, 0, 0}});  // x = inf is inside [-inf, inf]
    for (size_t i = 0; i < cases.size(); ++i) {
        SCOPED_TRACE("case " + std::to_string(i));
        HostTensor out({6}, ACL_FLOAT);
        uint64_t ws = 1;
        aclOpExecutor *e = nullptr;
        ASSERT_EQ(phase1(g, x, cases[i].lam.s, out, &ws, &e), ACLNN_SUCCESS) << take_error();
        aclDestroyScalar(cases[i].lam.s);  // copied by phase 1
        cases[i].lam.s = nullptr;
        ASSERT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
        expect_exact(out.values(), cases[i].want, "lambd");
    }
}

// Formats other than ND are treated as ND; rank 0 and rank 8 work.
TEST(SoftshrinkBackwardStatus, AnyFormatAndRanks0To8) {
    std::vector<float> a(6, 1.0f), b(6, 1.0f), c(6, 5.0f);
    const KnownMemory ka(a), kb(b), kc(c);
    b[0] = 0.25f;
    const Shape s = {1, 2, 3};
    aclTensor *ta = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NHWC, s.data(), 3, a.data());
    aclTensor *tb = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, s.data(), 3, b.data());
    aclTensor *tc = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_UNDEFINED, s.data(), 3, c.data());
    const Scalar lam = Scalar::f32(0.5);
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(aclnnSoftshrinkBackwardGetWorkspaceSize(ta, tb, lam.s, tc, &ws, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(c[0], 0.0f);
    for (int i = 1; i < 6; ++i) EXPECT_EQ(c[i], 1.0f);
    for (aclTensor *t : {ta, tb, tc}) aclDestroyTensor(t);
    uint64_t seed = 1;
    for (const Shape &shape : std::vector<Shape>{{}, {1}, {5}, {2, 1, 3, 1, 2, 1, 2, 3}})
        for (aclDataType dt : float_dtypes()) check_case({shape, {}, dt}, {shape, {}, dt}, {shape, {}, dt}, 0.5, seed++);
}

// Empty tensors: workspace 0, a valid executor whose run writes nothing; an empty broadcast
// result from a non-empty input.
TEST(SoftshrinkBackwardEmpty, WorkspaceZeroAndNothingWritten) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    const Scalar lam = Scalar::f32(0.5);
    struct Case {
        Shape g, x;
    };
    const std::vector<Case> cases = {{{0}, {0}}, {{2, 0}, {2, 0}}, {{0, 4}, {1, 4}}, {{0}, {1}}, {{2, 1}, {2, 0}},
                                     {{}, {3, 0}}, {{3, 0, 4}, {4}}};
    for (const Case &c : cases)
        for (aclrtStream s : {aclrtStream(nullptr), stream}) {
            SCOPED_TRACE(shape_str(c.g) + " x " + shape_str(c.x));
            HostTensor g(c.g, ACL_FLOAT), x(c.x, ACL_FLOAT16), out(broadcast(c.g, c.x), ACL_DOUBLE);
            out.fill_storage(3.5);
            uint64_t ws = 99;
            aclOpExecutor *e = nullptr;
            ASSERT_EQ(phase1(g, x, lam.s, out, &ws, &e), ACLNN_SUCCESS) << take_error();
            EXPECT_EQ(ws, 0u);
            ASSERT_NE(e, nullptr);
            EXPECT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, s), ACLNN_SUCCESS);
            EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
            EXPECT_EQ(out.storage_at(0), 3.5);
            EXPECT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // consumed
            take_error();
        }
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Values: exact against the reference.

// The band is closed (|x| == λ gives 0); outside it g passes through unchanged, whatever it is;
// inside it the result is +0 even for g = ±inf or NaN; NaN x gives NaN.
TEST(SoftshrinkBackwardValues, ClosedBandAndSpecials) {
    for (aclDataType dt : float_dtypes()) {
        SCOPED_TRACE(dtype_str(dt));
        const std::vector<double> xs = {0.5, -0.5, 0.0, -0.0, 0.25, kNaN, kInf, -kInf, 1e4, 0.25, 0.25, 1.0, 1.0, kNaN};
        const std::vector<double> gs = {3.0, 3.0, 3.0, 3.0, -3.0, 1.0, 2.0, -2.0, 4.0, kInf, kNaN, kNaN, -0.0, 0.0};
        const std::vector<double> want = {0.0, 0.0, 0.0, 0.0, 0.0, kNaN, 2.0, -2.0, 4.0, 0.0, 0.0, kNaN, -0.0, kNaN};
        HostTensor g = make_tensor({14}, dt, gs), x = make_tensor({14}, dt, xs), out({14}, dt);
        const Scalar lam = Scalar::f32(0.5);
        ASSERT_EQ(run_op(g, x, lam.s, out), ACLNN_SUCCESS);
        expect_exact(out.values(), want, "specials");
        // λ = 0: only ±0 is in the band; the smallest subnormal is not.
        HostTensor x0 = make_tensor({3}, dt, {0.0, -0.0, denorm_min_of(dt)}), g0 = make_tensor({3}, dt, {1, 1, 1});
        HostTensor out0({3}, dt);
        const Scalar zero = Scalar::f32(0.0);
        ASSERT_EQ(run_op(g0, x0, zero.s, out0), ACLNN_SUCCESS);
        expect_exact(out0.values(), {0.0, 0.0, 1.0}, "lambd 0");
    }
}

// NaN x gives NaN on every code path: one element, short and long contiguous runs (vector loop
// and its tail), strided, negatively strided, broadcast rows and columns, every dtype triple.
TEST(SoftshrinkBackwardValues, NanIsNanOnEveryPath) {
    const Scalar lam = Scalar::f32(0.5);
    for (aclDataType gd : float_dtypes())
        for (aclDataType xd : float_dtypes())
            for (aclDataType od : float_dtypes())
                for (int64_t n : {1, 3, 8, 17, 64, 1001}) {
                    SCOPED_TRACE(std::string(dtype_str(gd)) + dtype_str(xd) + dtype_str(od) + " n " + std::to_string(n));
                    std::vector<double> xv(static_cast<size_t>(n)), gv(static_cast<size_t>(n), 2.0);
                    for (int64_t i = 0; i < n; ++i) xv[size_t(i)] = i % 3 == 0 ? kNaN : (i % 3 == 1 ? 0.25 : 1.0);
                    HostTensor g = make_tensor({n}, gd, gv), x = make_tensor({n}, xd, xv), out({n}, od);
                    ASSERT_EQ(run_op(g, x, lam.s, out), ACLNN_SUCCESS);
                    HostTensor xr({n}, {-1}, n - 1, xd), outs({n}, {2}, 0, od);  // reversed x, strided out
                    for (int64_t i = 0; i < n; ++i) xr.set(i, xv[size_t(i)]);
                    ASSERT_EQ(run_op(g, xr, lam.s, outs), ACLNN_SUCCESS);
                    for (int64_t i = 0; i < n; ++i) {
                        const double want = i % 3 == 0 ? kNaN : (i % 3 == 1 ? 0.0 : 2.0);
                        if (std::isnan(want)) {
                            ASSERT_TRUE(std::isnan(out.at(i))) << i;
                            ASSERT_TRUE(std::isnan(outs.at(i))) << i;
                        } else {
                            ASSERT_EQ(out.at(i), want) << i;
                            ASSERT_EQ(outs.at(i), want) << i;
                        }
                    }
                    // broadcasting: x as a column (n, 1) against g (1, 5), and as a row
                    HostTensor g5 = make_tensor({1, 5}, gd, {2, 2, 2, 2, 2}), col({n, 1}, xd), ob({n, 5}, od);
                    for (int64_t i = 0; i < n; ++i) col.set(i, xv[size_t(i)]);
                    ASSERT_EQ(run_op(g5, col, lam.s, ob), ACLNN_SUCCESS);
                    for (int64_t i = 0; i < n * 5; ++i) {
                        const int64_t r = i / 5;
                        if (r % 3 == 0) ASSERT_TRUE(std::isnan(ob.at(i))) << i;
                        else ASSERT_EQ(ob.at(i), r % 3 == 1 ? 0.0 : 2.0) << i;
                    }
                }
}

// Every (gradOutput, self, gradInput) dtype triple, with the specials, contiguous (vector path)
// and strided; λ = 0.5 and 1.2f.
TEST(SoftshrinkBackwardValues, EveryDtypeTripleWithSpecials) {
    uint64_t seed = 100;
    for (aclDataType gd : float_dtypes())
        for (aclDataType xd : float_dtypes())
            for (aclDataType od : float_dtypes())
                for (double lam : {0.5, double(1.2f)}) {
                    check_case({{7, 19}, {}, gd}, {{7, 19}, {}, xd}, {{7, 19}, {}, od}, lam, seed++);
                    check_case({{7, 19}, {{1, 7}, 0}, gd}, {{7, 19}, {{-38, 2}, 6 * 38 + 1}, xd}, {{7, 19}, {}, od}, lam,
                               seed++);
                    check_case({{3, 7, 19}, {}, gd}, {{7, 19}, {}, xd}, {{3, 7, 19}, {}, od}, lam, seed++);
                }
}

// Mixed dtypes compute in the wider type: with an f64 input, λ = 0.1 (an f64 scalar) is not
// rounded to float, so x = 0.1 is in the band and the next double above it is not; with f32
// inputs, λ becomes 0.1f.
TEST(SoftshrinkBackwardValues, MixedDtypesComputeInTheWiderType) {
    const Scalar lam(0.1, ACL_DOUBLE);
    const double above = std::nextafter(0.1, 1.0);
    for (aclDataType gd : {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}) {
        SCOPED_TRACE(dtype_str(gd));
        HostTensor g = make_tensor({3}, gd, {1, 1, 1}), x = make_tensor({3}, ACL_DOUBLE, {0.1, above, -above});
        HostTensor out({3}, ACL_FLOAT);
        ASSERT_EQ(run_op(g, x, lam.s, out), ACLNN_SUCCESS);
        expect_exact(out.values(), {0, 1, 1}, "f64 self");
        // f64 gradOutput, f32 self: 0.1f > 0.1 in double, so it passes; in float it would not
        HostTensor g64 = make_tensor({2}, ACL_DOUBLE, {5, 5}), x32 = make_tensor({2}, ACL_FLOAT, {0.1, -0.1});
        HostTensor out2({2}, gd);
        ASSERT_EQ(run_op(g64, x32, lam.s, out2), ACLNN_SUCCESS);
        expect_exact(out2.values(), {5, 5}, "f64 gradOutput");
        // both below f64: λ rounds to 0.1f, so 0.1f is in the band
        HostTensor g2 = make_tensor({2}, gd, {1, 1}), x32b = make_tensor({2}, ACL_FLOAT, {0.1, -0.1});
        HostTensor out3({2}, ACL_DOUBLE);
        ASSERT_EQ(run_op(g2, x32b, lam.s, out3), ACLNN_SUCCESS) << take_error();
        expect_exact(out3.values(), {0, 0}, "f32 compute");
    }
}

// NumPy broadcasting: size-1 dims, missing leading dims, 0-D on either side, both sides
// broadcast, and inputs that are stride-0 views themselves.
TEST(SoftshrinkBackwardValues, Broadcasting) {
    struct Case {
        Spec g, x;
    };
    const auto F = ACL_FLOAT, H = ACL_FLOAT16, D = ACL_DOUBLE, B = ACL_BF16;
    const std::vector<Case> cases = {
        {{{3, 1}, {}, F}, {{1, 4}, {}, F}},
        {{{4}, {}, H}, {{2, 3, 4}, {}, F}},
        {{{2, 3, 4}, {}, F}, {{4}, {}, D}},
        {{{}, {}, F}, {{2, 3}, {}, F}},
        {{{2, 3}, {}, B}, {{}, {}, H}},
        {{{}, {}, D}, {{}, {}, F}},
        {{{2, 1, 4}, {}, F}, {{3, 1}, {}, F}},
        {{{1}, {}, F}, {{5}, {}, F}},
        {{{5, 1, 1}, {}, H}, {{1, 6, 7}, {}, H}},
        {{{1, 1, 1, 1, 1, 1, 1, 2}, {}, F}, {{2, 1, 1, 1, 1, 1, 3, 1}, {}, D}},
        {{{3, 40}, {}, F}, {{3, 1}, {}, F}},          // x constant along the (long) inner dim
        {{{3, 1}, {}, F}, {{3, 40}, {}, F}},
        {{{6, 5}, {{0, 1}, 0}, F}, {{6, 5}, {}, F}},  // stride-0 rows, full shape
        {{{6, 5}, {}, H}, {{6, 5}, {{1, 0}, 0}, F}},  // stride-0 columns
        {{{6, 5}, {{0, 0}, 0}, D}, {{6, 5}, {}, F}},  // one element everywhere
        {{{4, 1}, {{-1, 1}, 3}, F}, {{1, 9}, {{1, -2}, 16}, H}},  // negative strides and broadcasting
    };
    uint64_t seed = 300;
    for (const Case &c : cases)
        for (aclDataType od : {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE}) {
            const Shape b = broadcast(c.g.shape, c.x.shape);
            check_case(c.g, c.x, {b, {}, od}, 0.5, seed++);
            check_case(c.x, c.g, {b, {}, od}, 1.2, seed++);  // roles swapped
            if (b.size() == 2 && b[0] > 1 && b[1] > 1)       // transposed out
                check_case(c.g, c.x, {b, {{1, b[0]}, 0}, od}, 0.5, seed++);
        }
}

// Non-contiguous views: every other element, transposed and permuted strides, negative strides;
// the same layout everywhere takes the dense fast path even when permuted or reversed.
TEST(SoftshrinkBackwardValues, StridedAndNegativelyStridedViews) {
    struct Case {
        const char *name;
        Shape shape;
        Layout layout;
    };
    const std::vector<Case> cases = {
        {"every other column", {6, 10}, {{20, 2}, 0}},
        {"transposed", {7, 5}, {{1, 7}, 0}},
        {"permuted 3-d", {4, 5, 6}, {{1, 24, 4}, 0}},
        {"reversed", {4, 6}, {{-6, -1}, 23}},
        {"last dim reversed", {4, 6}, {{6, -1}, 5}},
        {"reversed and every other", {5, 8}, {{-16, -2}, 4 * 16 + 14}},
        {"1-d negative stride", {300}, {{-3}, 897}},
    };
    uint64_t seed = 1000;
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        for (aclDataType dt : float_dtypes()) {
            const Spec s{c.shape, c.layout, dt}, plain{c.shape, {}, dt};
            check_case(s, s, plain, 0.5, seed++);
            check_case(s, plain, plain, 0.5, seed++);
            check_case(plain, s, plain, 0.5, seed++);
            check_case(plain, plain, s, 0.5, seed++);
            check_case(s, s, s, 0.5, seed++);
        }
    }
}

// In place: gradInput is gradOutput (same handle or an identical view) or self.
TEST(SoftshrinkBackwardValues, InPlace) {
    const Scalar lam = Scalar::f32(0.5);
    for (aclDataType dt : float_dtypes())
        for (int which = 0; which < 3; ++which)
            for (bool strided : {false, true}) {
                SCOPED_TRACE(std::string(dtype_str(dt)) + " case " + std::to_string(which) + (strided ? " strided" : ""));
                const Shape shape = {30, 40};
                const Layout l = strided ? Layout{{-80, 2}, 29 * 80} : Layout{};
                HostTensor g = make_view(shape, l, dt), x = make_view(shape, l, dt);
                fill_inputs(g, x, 55 + which);
                const std::vector<double> want = reference(g, x, 0.5, dt);
                if (which == 0) {
                    ASSERT_EQ(run_op(g, x, lam.s, g), ACLNN_SUCCESS) << take_error();
                    expect_exact(g.values(), want, "out = gradOutput handle");
                } else if (which == 1) {
                    const int64_t storage = g.storage_elems();
                    aclTensor *alias = aclCreateTensor(shape.data(), 2, dt, g.strides().data(), g.offset(),
                                                       ACL_FORMAT_ND, &storage, 1, g.data());
                    ASSERT_NE(alias, nullptr);
                    uint64_t ws = 0;
                    aclOpExecutor *e = nullptr;
                    ASSERT_EQ(aclnnSoftshrinkBackwardGetWorkspaceSize(g.t(), x.t(), lam.s, alias, &ws, &e),
                              ACLNN_SUCCESS)
                        << take_error();
                    ASSERT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
                    aclDestroyTensor(alias);
                    expect_exact(g.values(), want, "out = identical view of gradOutput");
                } else {
                    ASSERT_EQ(run_op(g, x, lam.s, x), ACLNN_SUCCESS) << take_error();
                    expect_exact(x.values(), want, "out = self");
                }
            }
}

// ---------------------------------------------------------------------------------------------
// Bitwise determinism across thread counts on inputs large enough to run in parallel.

TEST(SoftshrinkBackwardDeterminism, BitwiseIdenticalForAnyThreadCount) {
    struct Case {
        const char *name;
        Spec g, x;
        aclDataType out;
    };
    const std::vector<Case> cases = {
        {"contiguous f32", {{256, 1024}, {}, ACL_FLOAT}, {{256, 1024}, {}, ACL_FLOAT}, ACL_FLOAT},
        {"row broadcast f16/f32", {{1, 1024}, {}, ACL_FLOAT16}, {{200, 1024}, {}, ACL_FLOAT}, ACL_FLOAT16},
        {"column broadcast f64/bf16", {{300, 1}, {}, ACL_DOUBLE}, {{300, 500}, {}, ACL_BF16}, ACL_DOUBLE},
        {"reversed every other", {{200, 300}, {{-600, -2}, 199 * 600 + 598}, ACL_FLOAT},
         {{200, 300}, {{1, 200}, 0}, ACL_FLOAT}, ACL_BF16},
        {"one long strided dim", {{100000}, {{3}, 0}, ACL_FLOAT}, {{100000}, {}, ACL_FLOAT16}, ACL_FLOAT},
    };
    const Scalar lam = Scalar::f32(0.5);
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const Shape b = broadcast(c.g.shape, c.x.shape);
        ASSERT_GT(numel(b), ag::kern::kParallelMin);
        HostTensor g = make_view(c.g.shape, c.g.layout, c.g.dt), x = make_view(c.x.shape, c.x.layout, c.x.dt);
        fill_inputs(g, x, 2024);
        std::vector<unsigned char> first;
        for (int threads : {1, 2, 3, 7, 1}) {
            ThreadCount tc(threads);
            HostTensor out(b, c.out);
            ASSERT_EQ(run_op(g, x, lam.s, out), ACLNN_SUCCESS);
            const std::vector<unsigned char> bytes = out.storage_bytes();
            if (first.empty()) {
                first = bytes;
                expect_exact(out.values(), reference(g, x, 0.5, c.out), c.name);
            } else {
                ASSERT_EQ(bytes.size(), first.size());
                EXPECT_EQ(std::memcmp(bytes.data(), first.data(), bytes.size()), 0) << threads << " threads";
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Executors and CANN's example.

TEST(SoftshrinkBackwardExecutor, RepeatableWithRepointedTensors) {
    HostTensor g = make_tensor({1, 3}, ACL_FLOAT, {1, 2, 3}), x = make_tensor({2, 1}, ACL_FLOAT, {0.25, 1});
    HostTensor x2 = make_tensor({2, 1}, ACL_FLOAT, {1, -0.5}), out({2, 3}, ACL_FLOAT), out2({2, 3}, ACL_FLOAT);
    const Scalar lam = Scalar::f32(0.5);
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(phase1(g, x, lam.s, out, &ws, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    expect_exact(out.values(), {0, 0, 0, 1, 2, 3}, "first run");
    ASSERT_EQ(aclSetInputTensorAddr(e, 1, x2.t(), x2.data()), ACLNN_SUCCESS) << take_error();
    ASSERT_EQ(aclSetOutputTensorAddr(e, 0, out2.t(), out2.data()), ACLNN_SUCCESS) << take_error();
    EXPECT_EQ(aclSetInputTensorAddr(e, 2, x2.t(), x2.data()), ACLNN_ERR_PARAM_INVALID);  // 2 tensor inputs
    take_error();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    ASSERT_EQ(aclnnSoftshrinkBackward(nullptr, 0, e, stream), ACLNN_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    expect_exact(out2.values(), {1, 2, 3, 0, 0, 0}, "second run");
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

