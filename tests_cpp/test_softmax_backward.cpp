// aclnnSoftmaxBackward: every phase-1 status path with its message, empty tensors, correctness
// against a float64 reference (all dims, ranks 0..8, strided and negatively strided views, every
// input/output dtype pair), bitwise determinism across thread counts, and the kernel layer's
// f16/bf16 conversions.
#include <cfloat>
#include <set>

#include "aclnnop/aclnn_softmax_backward.h"
#include "test_util.h"

using namespace agtest;

namespace {

aclnnStatus phase1(const HostTensor &g, const HostTensor &y, int64_t dim, const HostTensor &out, uint64_t *ws,
                   aclOpExecutor **e) {
    return aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), dim, out.t(), ws, e);
}

// Both phases; NULL stream runs synchronously.
aclnnStatus run_softmax(const HostTensor &g, const HostTensor &y, int64_t dim, const HostTensor &out,
                        aclrtStream stream = nullptr) {
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    const aclnnStatus s = phase1(g, y, dim, out, &ws, &e);
    if (s != ACLNN_SUCCESS) return s;
    return run_phase2(aclnnSoftmaxBackward, ws, e, stream);
}

// float64 (long double accumulated) reference of out = y * (g - sum_dim(g * y)), plus the
// per-element error scale |y| * (|g| + sum_dim |g * y|) that bounds the kernel's rounding error.
struct Reference {
    std::vector<double> out, scale;
    int64_t n = 1;  // reduction length
};

Reference reference(const HostTensor &g, const HostTensor &y, int64_t dim) {
    const Shape &shape = g.shape();
    const int rank = int(shape.size());
    const int d = rank == 0 ? 0 : int(dim < 0 ? dim + rank : dim);
    const std::vector<double> gv = g.values(), yv = y.values();
    Reference r;
    r.out.assign(gv.size(), 0.0);
    r.scale.assign(gv.size(), 0.0);
    r.n = rank == 0 ? 1 : shape[d];
    for_each_line(shape, d, [&](const std::vector<int64_t> &line) {
        long double s = 0, a = 0;
        for (int64_t i : line) {
            s += (long double)gv[i] * yv[i];
            a += std::fabs((long double)gv[i] * yv[i]);
        }
        for (int64_t i : line) {
            r.out[i] = double(yv[i] * (gv[i] - s));
            r.scale[i] = double(std::fabs(yv[i]) * (std::fabs(gv[i]) + a));
        }
    });
    return r;
}

// Tolerance, derived from the kernel's arithmetic. The sum is accumulated in the compute type
// (f32 for f16/bf16/f32 inputs, f64 for f64) in 16 lanes of at most ceil(n/16) terms each, then
// 4 pairwise steps; with the product's rounding and the two roundings of y * (g - s), the
// standard error bound is (ceil(n/16) + 7) * u * scale, u = eps/2 the unit roundoff. We allow
// (ceil(n/16) + 8) * eps * scale (twice that). The result is then rounded once into the output
// dtype: at most eps_out/2 relative, allowed eps_out; plus the output's smallest subnormal for
// results that underflow. For n = 5000 this is ~4e-5 * scale for f32 compute and ~7e-14 for f64;
// f16 outputs add ~1e-3 relative and bf16 outputs ~8e-3.
std::vector<double> tolerance(const Reference &r, aclDataType in, aclDataType out) {
    const double tc_factor = double((r.n + 15) / 16 + 8) * eps_of(compute_dtype(in));
    std::vector<double> tol(r.out.size());
    for (size_t i = 0; i < tol.size(); ++i) {
        const double tc = tc_factor * r.scale[i];
        tol[i] = tc + eps_of(out) * (std::fabs(r.out[i]) + tc) + denorm_min_of(out);
    }
    return tol;
}

// Runs one case: g laid out as in_layout, y as y_layout (default: in_layout), out as out_layout;
// checks the result against the reference and that no out storage element outside the view was
// written.
struct Layout {
    Shape strides;  // empty: contiguous
    int64_t offset = 0;
};

HostTensor make_view(const Shape &shape, const Layout &l, aclDataType dt) {
    return l.strides.empty() ? HostTensor(shape, dt) : HostTensor(shape, l.strides, l.offset, dt);
}

void check_case(const Shape &shape, int64_t dim, aclDataType in_dt, aclDataType out_dt, const Layout &in_layout,
                const Layout &out_layout, uint64_t seed, const Layout *y_layout = nullptr) {
    const std::string what = "shape " + shape_str(shape) + " dim " + std::to_string(dim) + " in " +
                             dtype_str(in_dt) + " out " + dtype_str(out_dt) + " strides " +
                             shape_str(in_layout.strides) + "/" + shape_str(y_layout ? y_layout->strides : in_layout.strides) +
                             "/" + shape_str(out_layout.strides);
    std::mt19937_64 rng(seed);
    HostTensor g = make_view(shape, in_layout, in_dt), y = make_view(shape, y_layout ? *y_layout : in_layout, in_dt);
    HostTensor out = make_view(shape, out_layout, out_dt);
    g.fill_random(rng, -2.0, 2.0);
    y.fill_random(rng, 0.0, 1.0);
    const double sentinel = 7.0;
    out.fill_storage(sentinel);
    ASSERT_EQ(run_softmax(g, y, dim, out), ACLNN_SUCCESS) << what << ": " << take_error();
    const Reference r = reference(g, y, dim);
    expect_close(out.values(), r.out, tolerance(r, in_dt, out_dt), what);
    const std::set<int64_t> inside(out.offsets().begin(), out.offsets().end());
    for (int64_t k = 0; k < out.storage_elems(); ++k)
        if (!inside.count(k)) ASSERT_EQ(out.storage_at(k), sentinel) << what << ": wrote outside the view at " << k;
}

std::vector<int64_t> all_dims(const Shape &shape) {
    const int64_t n = shape.empty() ? 1 : int64_t(shape.size());
    std::vector<int64_t> d;
    for (int64_t i = -n; i < n; ++i) d.push_back(i);
    return d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Phase 1: every status path, the exact status, the message, and nothing written on failure.

TEST(SoftmaxBackwardStatus, EveryFailurePathHasStatusAndMessage) {
    HostTensor g({2, 3}, ACL_FLOAT), y({2, 3}, ACL_FLOAT), out({2, 3}, ACL_FLOAT);
    HostTensor y_f16({2, 3}, ACL_FLOAT16), g_i32({2, 3}, ACL_INT32), y_i32({2, 3}, ACL_INT32);
    HostTensor out_i32({2, 3}, ACL_INT32), out_i64({2, 3}, ACL_INT64), out_bool({2, 3}, ACL_BOOL);
    HostTensor y_32({3, 2}, ACL_FLOAT), out_24({2, 4}, ACL_FLOAT), out_6({6}, ACL_FLOAT);
    const Shape r9 = {1, 2, 1, 1, 1, 1, 1, 1, 3};
    HostTensor g9(r9, ACL_FLOAT), y9(r9, ACL_FLOAT), out9(r9, ACL_FLOAT);
    HostTensor s0({}, ACL_FLOAT), s0y({}, ACL_FLOAT), s0o({}, ACL_FLOAT);
    // numel 2^32 * 2^32 overflows int64; creation succeeds, the operator rejects it.
    const Shape huge = {int64_t(1) << 32, int64_t(1) << 32};
    const Shape zero_strides = {0, 0};
    float cell = 0;
    const int64_t one = 1;
    aclTensor *gh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    aclTensor *yh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    aclTensor *oh = aclCreateTensor(huge.data(), 2, ACL_FLOAT, zero_strides.data(), 0, ACL_FORMAT_ND, &one, 1, &cell);
    ASSERT_TRUE(gh && yh && oh) << take_error();
    // A tensor with no data address but elements.
    const Shape s23 = {2, 3};
    aclTensor *g_nodata = aclCreateTensor(s23.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s23.data(), 2, nullptr);
    ASSERT_NE(g_nodata, nullptr);
    // Memory conflicts: a buffer of 8 floats; views of 6 at element 0 and at element 2.
    std::vector<float> buf(8, 1.0f);
    const Shape s6 = {6}, s8 = {8};
    aclTensor *v_at0 = aclCreateTensor(s6.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, s8.data(), 1, buf.data());
    aclTensor *v_at2 = aclCreateTensor(s6.data(), 1, ACL_FLOAT, nullptr, 2, ACL_FORMAT_ND, s8.data(), 1, buf.data());
    HostTensor y6({6}, ACL_FLOAT), g6({6}, ACL_FLOAT);
    const Shape bcast_strides = {0, 1};
    std::vector<float> row(3);
    const Shape s3 = {3};
    aclTensor *out_bcast =
        aclCreateTensor(s23.data(), 2, ACL_FLOAT, bcast_strides.data(), 0, ACL_FORMAT_ND, s3.data(), 1, row.data());
    ASSERT_TRUE(v_at0 && v_at2 && out_bcast);

    using Call = std::function<aclnnStatus(uint64_t *, aclOpExecutor **)>;
    auto op = [](const aclTensor *a, const aclTensor *b, int64_t dim, const aclTensor *c) -> Call {
        return [=](uint64_t *ws, aclOpExecutor **e) {
            return aclnnSoftmaxBackwardGetWorkspaceSize(a, b, dim, const_cast<aclTensor *>(c), ws, e);
        };
    };
    struct Case {
        const char *name;
        Call call;
        bool null_ws, null_exec;
        aclnnStatus status;
        std::vector<std::string> needles;  // substrings the message must contain
    };
    const std::string kOp = "aclnnSoftmaxBackward";
    const std::vector<Case> cases = {
        {"workspaceSize NULL", op(g.t(), y.t(), 1, out.t()), true, false, ACLNN_ERR_PARAM_NULLPTR,
         {kOp, "workspaceSize"}},
        {"executor NULL", op(g.t(), y.t(), 1, out.t()), false, true, ACLNN_ERR_PARAM_NULLPTR, {kOp, "executor"}},
        {"gradOutput NULL", op(nullptr, y.t(), 1, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         {kOp, "Expected a proper Tensor but got null for argument gradOutput."}},
        {"output NULL", op(g.t(), nullptr, 1, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         {kOp, "Expected a proper Tensor but got null for argument output."}},
        {"out NULL", op(g.t(), y.t(), 1, nullptr), false, false, ACLNN_ERR_PARAM_NULLPTR,
         {kOp, "Expected a proper Tensor but got null for argument out."}},
        {"rank 9", op(g9.t(), y9.t(), 1, out9.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "gradOutput", "8 dimensions", "9"}},
        {"out rank 9", op(g.t(), y.t(), 1, out9.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "out", "[1, 2, 1, 1, 1, 1, 1, 1, 3]"}},
        {"numel overflow", op(gh, yh, 1, oh), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "gradOutput", "[4294967296, 4294967296]"}},
        {"no data", op(g_nodata, y.t(), 1, out.t()), false, false, ACLNN_ERR_PARAM_NULLPTR,
         {kOp, "gradOutput", "[2, 3]"}},
        {"gradOutput int32", op(g_i32.t(), y_i32.t(), 1, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "Tensor gradOutput not implemented for DT_INT32, should be in dtype support list [", "DT_FLOAT",
          "DT_FLOAT16", "DT_BF16", "DT_DOUBLE"}},
        {"output dtype differs", op(g.t(), y_f16.t(), 1, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "output", "DT_FLOAT16", "DT_FLOAT"}},
        {"out int32", op(g.t(), y.t(), 1, out_i32.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "Tensor out not implemented for DT_INT32"}},
        {"out int64", op(g.t(), y.t(), 1, out_i64.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "Tensor out not implemented for DT_INT64"}},
        {"out bool", op(g.t(), y.t(), 1, out_bool.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "Tensor out not implemented for DT_BOOL"}},
        {"dim 2", op(g.t(), y.t(), 2, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {"aclnnSoftmaxBackward: provided dim 2 not in the range of input size 2."}},
        {"dim 3", op(g.t(), y.t(), 3, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {"aclnnSoftmaxBackward: provided dim 3 not in the range of input size 2."}},
        {"dim -3", op(g.t(), y.t(), -3, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {"aclnnSoftmaxBackward: provided dim -3 not in the range of input size 2."}},
        {"dim 2^40", op(g.t(), y.t(), int64_t(1) << 40, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {"provided dim 1099511627776 not in the range of input size 2."}},
        {"rank 0 dim 1", op(s0.t(), s0y.t(), 1, s0o.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {"aclnnSoftmaxBackward: provided dim 1 not in the range of input size 1."}},
        {"rank 0 dim -2", op(s0.t(), s0y.t(), -2, s0o.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {"provided dim -2 not in the range of input size 1."}},
        {"output shape", op(g.t(), y_32.t(), 1, out.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "output", "[3, 2]", "[2, 3]"}},
        {"out shape", op(g.t(), y.t(), 1, out_24.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "out", "[2, 4]", "[2, 3]"}},
        {"out rank", op(g.t(), y.t(), 0, out_6.t()), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "out", "[6]", "[2, 3]"}},
        {"out overlaps gradOutput", op(v_at0, y6.t(), 0, v_at2), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "out", "gradOutput"}},
        {"out overlaps output", op(g6.t(), v_at2, 0, v_at0), false, false, ACLNN_ERR_PARAM_INVALID,
         {kOp, "out", "output"}},
        {"out zero stride", op(g.t(), y.t(), 1, out_bcast), false, false, ACLNN_ERR_PARAM_INVALID, {kOp, "out"}},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        take_error();  // start clean
        uint64_t ws = 777;
        aclOpExecutor *sentinel = reinterpret_cast<aclOpExecutor *>(uintptr_t(0x5150));
        aclOpExecutor *e = sentinel;
        EXPECT_EQ(c.call(c.null_ws ? nullptr : &ws, c.null_exec ? nullptr : &e), c.status);
        const std::string msg = take_error();
        for (const std::string &needle : c.needles)
            EXPECT_NE(msg.find(needle), std::string::npos) << "message \"" << msg << "\" lacks \"" << needle << "\"";
        EXPECT_EQ(ws, 777u) << "workspaceSize written on failure";
        EXPECT_EQ(e, sentinel) << "executor written on failure";
    }
    for (aclTensor *t : {gh, yh, oh, g_nodata, v_at0, v_at2, out_bcast}) aclDestroyTensor(t);
}

TEST(SoftmaxBackwardStatus, AcceptsEveryDimInRangeAndAnyFormat) {
    HostTensor g({2, 3}, ACL_FLOAT), y({2, 3}, ACL_FLOAT), out({2, 3}, ACL_FLOAT);
    for (int64_t dim : {-2, -1, 0, 1}) EXPECT_EQ(run_softmax(g, y, dim, out), ACLNN_SUCCESS) << dim;
    HostTensor s0({}, ACL_FLOAT), s0y({}, ACL_FLOAT), s0o({}, ACL_FLOAT);
    for (int64_t dim : {-1, 0}) EXPECT_EQ(run_softmax(s0, s0y, dim, s0o), ACLNN_SUCCESS) << dim;
    // Formats other than ND are treated as ND.
    std::vector<float> a(6, 1.0f), b(6, 0.5f), c(6, 0.0f);
    const KnownMemory ka(a), kb(b), kc(c);
    const Shape s = {1, 2, 3};
    aclTensor *ta = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NHWC, s.data(), 3, a.data());
    aclTensor *tb = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_NCHW, s.data(), 3, b.data());
    aclTensor *tc = aclCreateTensor(s.data(), 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_UNDEFINED, s.data(), 3, c.data());
    uint64_t ws = 1;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(ta, tb, -1, tc, &ws, &e), ACLNN_SUCCESS);
    EXPECT_EQ(ws, 0u);
    ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    for (float v : c) EXPECT_FLOAT_EQ(v, 0.5f * (1.0f - 1.5f));  // y * (g - sum(g*y)) = 0.5 * (1 - 3 * 0.5)
    for (aclTensor *t : {ta, tb, tc}) aclDestroyTensor(t);
}

// Empty tensors: workspace 0, a valid executor whose run writes nothing.
TEST(SoftmaxBackwardEmpty, WorkspaceZeroAndNothingWritten) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    for (const Shape &shape : std::vector<Shape>{{0}, {2, 0}, {0, 3}, {3, 0, 4}}) {
        for (int64_t dim : all_dims(shape))
            for (aclrtStream s : {aclrtStream(nullptr), stream}) {
                SCOPED_TRACE(shape_str(shape) + " dim " + std::to_string(dim));
                HostTensor g(shape, ACL_FLOAT), y(shape, ACL_FLOAT), out(shape, ACL_FLOAT);
                out.fill_storage(3.5);
                uint64_t ws = 99;
                aclOpExecutor *e = nullptr;
                ASSERT_EQ(phase1(g, y, dim, out, &ws, &e), ACLNN_SUCCESS) << take_error();
                EXPECT_EQ(ws, 0u);
                ASSERT_NE(e, nullptr);
                EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, s), ACLNN_SUCCESS);
                EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
                EXPECT_EQ(out.storage_at(0), 3.5);
                // single-use: consumed by the run
                EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
                take_error();
            }
    }
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Correctness against the float64 reference.

// Every dim (negative included) of ranks 0..8, every input dtype.
TEST(SoftmaxBackwardValues, EveryDimOfRanks0To8) {
    const std::vector<Shape> shapes = {{},        {7},          {5, 6},          {1, 9},
                                       {9, 1},    {3, 4, 5},    {2, 3, 1, 4},    {2, 1, 3, 2, 3},
                                       {2, 2, 1, 3, 2, 2}, {1, 2, 2, 3, 1, 2, 2}, {2, 1, 2, 3, 2, 1, 2, 2}};
    uint64_t seed = 1;
    for (const Shape &shape : shapes)
        for (int64_t dim : all_dims(shape))
            for (aclDataType dt : float_dtypes()) check_case(shape, dim, dt, dt, {}, {}, seed++);
}

// Large inner extents for a middle dim, long last dims, and a long first dim.
TEST(SoftmaxBackwardValues, LargeShapes) {
    struct Case {
        Shape shape;
        std::vector<int64_t> dims;
    };
    const std::vector<Case> cases = {
        {{4, 300, 70}, {1, -2}}, {{3, 5000}, {1, -1, 0}}, {{5000, 3}, {0}}, {{33, 17, 600}, {2, 0}}, {{2, 40000}, {-1}}};
    uint64_t seed = 100;
    for (const Case &c : cases)
        for (int64_t dim : c.dims)
            for (aclDataType dt : float_dtypes()) check_case(c.shape, dim, dt, dt, {}, {}, seed++);
}

// Non-contiguous views: every other element, transposed and permuted strides, negative strides
// (pointer at the end of the storage, positive offset); for the inputs, for out, or for both.
TEST(SoftmaxBackwardValues, StridedAndNegativelyStridedViews) {
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
        {"large middle dim, every other inner", {4, 300, 70}, {{300 * 140, 140, 2}, 0}},
        {"transposed long rows", {300, 40}, {{1, 300}, 0}},
        {"zero-stride (broadcast) inputs", {4, 6}, {{0, 1}, 0}},
    };
    uint64_t seed = 1000;
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const bool broadcast = c.layout.strides[0] == 0;
        for (int64_t dim : all_dims(c.shape))
            for (aclDataType dt : float_dtypes()) {
                check_case(c.shape, dim, dt, dt, c.layout, {}, seed++);  // strided inputs
                if (!broadcast) {                                         // out must not self-overlap
                    check_case(c.shape, dim, dt, dt, {}, c.layout, seed++);        // strided out
                    check_case(c.shape, dim, dt, dt, c.layout, c.layout, seed++);  // all three
                }
                const Layout contiguous;  // g and y laid out differently, either way round
                check_case(c.shape, dim, dt, dt, c.layout, {}, seed++, &contiguous);
                check_case(c.shape, dim, dt, dt, {}, broadcast ? Layout{} : c.layout, seed++, &c.layout);
            }
    }
}

// Every output dtype for every input dtype, on the last-dim and the middle-dim paths.
TEST(SoftmaxBackwardValues, EveryOutputDtypeForEveryInputDtype) {
    uint64_t seed = 5000;
    for (aclDataType in : float_dtypes())
        for (aclDataType out : float_dtypes()) {
            check_case({6, 33}, 1, in, out, {}, {}, seed++);
            check_case({6, 33, 20}, 1, in, out, {}, {}, seed++);
            check_case({6, 33}, 0, in, out, {{1, 6}, 0}, {}, seed++);
        }
}

TEST(SoftmaxBackwardValues, NanAndInfPropagate) {
    HostTensor g({3, 4}, ACL_FLOAT), y({3, 4}, ACL_FLOAT), out({3, 4}, ACL_FLOAT);
    std::mt19937_64 rng(9);
    g.fill_random(rng, -1, 1);
    y.fill_random(rng, 0.1, 1);
    g.set(1, std::nan(""));                               // row 0: NaN in g
    g.set(4 + 2, std::numeric_limits<double>::infinity());  // row 1: +inf in g -> s = inf
    ASSERT_EQ(run_softmax(g, y, 1, out), ACLNN_SUCCESS);
    const Reference r = reference(g, y, 1);
    // row 0 all NaN; row 1: g - s is inf - inf = NaN at the inf element, -inf elsewhere (y > 0);
    // row 2 finite. expect_close requires NaN for NaN and equal infinities.
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(r.out[i]));
    EXPECT_TRUE(std::isnan(r.out[6]));
    EXPECT_EQ(r.out[5], -INFINITY);
    expect_close(out.values(), r.out, tolerance(r, ACL_FLOAT, ACL_FLOAT), "NaN/inf");
}

// In place: out is gradOutput itself (or output itself): allowed, and correct on both paths.
TEST(SoftmaxBackwardValues, InPlaceIntoGradOutputOrOutput) {
    for (int64_t dim : {0, 1, 2})
        for (int which = 0; which < 2; ++which) {
            SCOPED_TRACE("dim " + std::to_string(dim) + (which ? " out=output" : " out=gradOutput"));
            std::mt19937_64 rng(77 + dim);
            HostTensor g({5, 40, 30}, ACL_FLOAT), y({5, 40, 30}, ACL_FLOAT);
            g.fill_random(rng, -1, 1);
            y.fill_random(rng, 0, 1);
            const Reference r = reference(g, y, dim);
            HostTensor &target = which ? y : g;
            ASSERT_EQ(run_softmax(g, y, dim, target), ACLNN_SUCCESS) << take_error();
            expect_close(target.values(), r.out, tolerance(r, ACL_FLOAT, ACL_FLOAT), "in place");
        }
}

// A f32-class result is computed in float32 and rounded once into the output: out f64 from
// f16/bf16/f32 inputs is exactly the float32 result, out f16/bf16 its single rounding. From f64
// inputs, out f32/f16/bf16 is the correctly rounded f64 result (checked with an independent
// rounding routine, so a double rounding through float would be caught).
namespace {

// d rounded to nearest-even in a binary format of p significant bits, normal exponents
// [emin, emax], with gradual underflow and overflow to infinity.
double round_to_format(double d, int p, int emin, int emax) {
    if (std::isnan(d) || std::isinf(d) || d == 0) return d;
    if (std::fabs(d) >= std::ldexp(1.0, emax + 1)) return std::copysign(INFINITY, d);
    int e;
    std::frexp(d, &e);  // |d| in [2^(e-1), 2^e)
    const double q = std::ldexp(1.0, std::max(e - 1, emin) - (p - 1));  // spacing of the format there
    const double r = std::nearbyint(d / q) * q;
    if (std::fabs(r) > std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax)) return std::copysign(INFINITY, d);
    return r == 0 ? std::copysign(0.0, d) : r;
}
double round_half(double d) { return round_to_format(d, 11, -14, 15); }
double round_bf16(double d) { return round_to_format(d, 8, -126, 127); }

void expect_same_value(double got, double want, const std::string &what) {
    if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << what;
        return;
    }
    EXPECT_EQ(got, want) << what;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << what;
}

}  // namespace

TEST(SoftmaxBackwardValues, OutputDtypeIsOneRoundingOfTheComputeResult) {
    const std::vector<std::pair<Shape, int64_t>> cases = {{{17, 129}, 1}, {{17, 129}, 0}, {{4, 50, 9}, 1}};
    for (const auto &[shape, dim] : cases)
        for (aclDataType in : float_dtypes()) {
            SCOPED_TRACE(shape_str(shape) + " dim " + std::to_string(dim) + " in " + dtype_str(in));
            std::mt19937_64 rng(31);
            HostTensor g(shape, in), y(shape, in);
            g.fill_random(rng, -3, 3);
            y.fill_random(rng, 0, 1);
            // A wide range of magnitudes, so that the roundings land in many binades.
            for (int64_t i = 0; i < g.numel(); ++i) g.set(i, std::ldexp(g.at(i), int(i % 13) - 6));
            const aclDataType ct = compute_dtype(in);
            HostTensor base(shape, ct);
            ASSERT_EQ(run_softmax(g, y, dim, base), ACLNN_SUCCESS);
            for (aclDataType out_dt : float_dtypes()) {
                HostTensor out(shape, out_dt);
                ASSERT_EQ(run_softmax(g, y, dim, out), ACLNN_SUCCESS);
                for (int64_t i = 0; i < out.numel(); ++i) {
                    const double c = base.at(i);  // the compute-type result
                    double want;
                    if (out_dt == ACL_DOUBLE || out_dt == ct) want = c;
                    else if (out_dt == ACL_FLOAT) want = double(float(c));  // C++: correctly rounded
                    else if (out_dt == ACL_FLOAT16) want = round_half(c);
                    else want = round_bf16(c);
                    expect_same_value(out.at(i), want, std::string("out ") + dtype_str(out_dt) + " element " +
                                                           std::to_string(i));
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
}

// The reference rounding above is itself checked on the cases where double rounding fails.
TEST(SoftmaxBackwardValues, ReferenceRoundingIsSingleRounding) {
    const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);  // just above a half tie
    EXPECT_EQ(round_half(d), 1.0 + std::ldexp(1.0, -10));
    EXPECT_EQ(ag::kern::half_to_float(ag::kern::float_to_half(float(d))), 1.0f);  // double rounding: wrong
    EXPECT_EQ(round_half(65520.0), INFINITY);
    EXPECT_EQ(round_half(65519.0), 65504.0);
    EXPECT_EQ(round_half(std::ldexp(1.0, -25)), 0.0);
    EXPECT_EQ(round_half(std::ldexp(3.0, -25)), std::ldexp(1.0, -23));
    EXPECT_EQ(round_bf16(1.0 + std::ldexp(1.0, -8)), 1.0);
    EXPECT_EQ(round_bf16(1.0 + std::ldexp(3.0, -8)), 1.0 + std::ldexp(1.0, -6));
}

// ---------------------------------------------------------------------------------------------
// Bitwise determinism across thread counts, on inputs large enough to run in parallel.

TEST(SoftmaxBackwardDeterminism, BitwiseIdenticalForAnyThreadCount) {
    struct Case {
        const char *name;
        Shape shape;
        int64_t dim;
        Layout layout;
        aclDataType dt;
    };
    const std::vector<Case> cases = {
        {"last dim", {64, 1024}, -1, {}, ACL_FLOAT},
        {"last dim f16", {16, 4099}, 1, {}, ACL_FLOAT16},
        {"last dim f64 few long rows", {3, 40000}, 1, {}, ACL_DOUBLE},
        {"middle dim", {8, 64, 128}, 1, {}, ACL_FLOAT},
        {"middle dim wide inner", {4, 100, 300}, 1, {}, ACL_BF16},
        {"first dim transposed", {200, 300}, 0, {{1, 200}, 0}, ACL_FLOAT},
        {"middle dim strided inner", {6, 50, 200}, 1, {{50 * 400, 400, 2}, 0}, ACL_FLOAT},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        ASSERT_GT(numel(c.shape), ag::kern::kParallelMin);
        std::mt19937_64 rng(2024);
        HostTensor g = make_view(c.shape, c.layout, c.dt), y = make_view(c.shape, c.layout, c.dt);
        g.fill_random(rng, -1, 1);
        y.fill_random(rng, 0, 1);
        std::vector<unsigned char> first;
        for (int threads : {1, 2, 3, 7, 1}) {
            ThreadCount tc(threads);
            HostTensor out(c.shape, c.dt);
            ASSERT_EQ(run_softmax(g, y, c.dim, out), ACLNN_SUCCESS);
            const std::vector<unsigned char> bytes = out.storage_bytes();
            if (first.empty()) {
                first = bytes;
                const Reference r = reference(g, y, c.dim);
                expect_close(out.values(), r.out, tolerance(r, c.dt, c.dt), c.name);
            } else {
                ASSERT_EQ(bytes.size(), first.size());
                EXPECT_EQ(std::memcmp(bytes.data(), first.data(), bytes.size()), 0) << threads << " threads";
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel layer's half / bfloat16 conversions (kernels/common.h).

namespace {

using ag::kern::bf16_to_float;
using ag::kern::float_to_bf16;
using ag::kern::float_to_half;
using ag::kern::half_to_float;

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// IEEE binary16 decoded from its fields, independently of the library.
double decode_half(uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0x1f) v = man ? NAN : INFINITY;
    else if (exp == 0) v = std::ldexp(double(man), -24);
    else v = std::ldexp(1.0 + man / 1024.0, exp - 15);
    return sign ? -v : v;
}

uint16_t store_half(double d) {
    ag::kern::half_t h;
    ag::kern::store(&h, d);
    return h.bits;
}
uint16_t store_bf16(double d) {
    ag::kern::bf16_t h;
    ag::kern::store(&h, d);
    return h.bits;
}
float float_of_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace

TEST(HalfConversion, DecodesAllPatterns) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = half_to_float(uint16_t(h));
        const double want = decode_half(uint16_t(h));
        if (std::isnan(want)) ASSERT_TRUE(std::isnan(f)) << std::hex << h;
        else ASSERT_EQ(double(f), want) << std::hex << h;
        ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << h;
    }
}

TEST(HalfConversion, AllPatternsRoundTripAndNanStaysNan) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const uint16_t back = float_to_half(half_to_float(uint16_t(h)));
        if (half_is_nan(uint16_t(h))) ASSERT_TRUE(half_is_nan(back)) << std::hex << h << " -> " << back;
        else ASSERT_EQ(back, h) << std::hex << h;
        // the double path (single rounding) agrees on exact values
        if (!half_is_nan(uint16_t(h))) ASSERT_EQ(store_half(half_to_float(uint16_t(h))), h) << std::hex << h;
    }
}

// For every pair of neighbouring halves (subnormals, normals, and the largest finite with the
// overflow threshold): the midpoint rounds to the even one, anything above/below it to the
// nearer one. Both signs; float input and (single-rounding) double input.
TEST(HalfConversion, RoundsToNearestEvenEverywhere) {
    for (uint32_t h = 0; h < 0x7c00; ++h) {
        const double lo = decode_half(uint16_t(h));
        const double hi = h == 0x7bff ? 65536.0 : decode_half(uint16_t(h + 1));
        const double mid = (lo + hi) / 2;  // exact in float: 12 significant bits
        const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h), up = uint16_t(h + 1), down = uint16_t(h);
        for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
            const double s = sign ? -1.0 : 1.0;
            const float fm = float(s * mid);
            ASSERT_EQ(double(fm), s * mid);
            ASSERT_EQ(float_to_half(fm), sign | even) << std::hex << h;
            ASSERT_EQ(float_to_half(std::nextafter(fm, float(s * INFINITY))), sign | up) << std::hex << h;
            ASSERT_EQ(float_to_half(std::nextafter(fm, 0.0f)), sign | down) << std::hex << h;
            // double input: one rounding, so values a hair off the tie go the right way even when
            // a float in between would have rounded onto the tie
            const double tiny = mid * std::ldexp(1.0, -40);
            ASSERT_EQ(store_half(s * mid), sign | even) << std::hex << h;
            ASSERT_EQ(store_half(s * (mid + tiny)), sign | up) << std::hex << h;
            ASSERT_EQ(store_half(s * (mid - tiny)), sign | down) << std::hex << h;
        }
    }
}

TEST(HalfConversion, OverflowSubnormalsAndNan) {
    // overflow to infinity: from 65520 (the tie above 65504) up
    EXPECT_EQ(float_to_half(65519.996f), 0x7bff);
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
    EXPECT_EQ(float_to_half(1e5f), 0x7c00);
    EXPECT_EQ(float_to_half(FLT_MAX), 0x7c00);
    EXPECT_EQ(float_to_half(-FLT_MAX), 0xfc00);
    EXPECT_EQ(float_to_half(INFINITY), 0x7c00);
    EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
    EXPECT_EQ(store_half(1e300), 0x7c00);
    EXPECT_EQ(store_half(-1e300), 0xfc00);
    EXPECT_EQ(store_half(65520.0 - 1e-9), 0x7bff);
    EXPECT_EQ(store_half(65520.0), 0x7c00);
    // subnormals
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);  // tie -> even
    EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03ff);
    EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);  // largest subnormal's tie -> min normal
    EXPECT_EQ(float_to_half(1e-40f), 0x0000);                    // float subnormal
    EXPECT_EQ(float_to_half(-1e-40f), 0x8000);
    EXPECT_EQ(float_to_half(-0.0f), 0x8000);
    EXPECT_EQ(store_half(1e-310), 0x0000);
    EXPECT_EQ(store_half(-1e-310), 0x8000);
    EXPECT_EQ(store_half(-0.0), 0x8000);
    // NaN stays NaN: quiet, signalling (payload only in the low bits), negative; float and double
    for (uint32_t u : {0x7fc00000u, 0x7f800001u, 0x7f801000u, 0xffc00000u, 0xff800001u, 0x7fffffffu}) {
        EXPECT_TRUE(half_is_nan(float_to_half(float_of_bits(u)))) << std::hex << u;
        EXPECT_TRUE(half_is_nan(store_half(double(float_of_bits(u))))) << std::hex << u;
    }
    EXPECT_TRUE(half_is_nan(store_half(std::nan(""))));
    EXPECT_TRUE(std::isnan(half_to_float(0x7c01)));
    EXPECT_TRUE(std::isnan(half_to_float(0xfe00)));
}

TEST(Bf16Conversion, AllPatternsDecodeRoundTripAndNanStaysNan) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float f = bf16_to_float(uint16_t(b));
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if (bf16_is_nan(uint16_t(b))) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << b;
            ASSERT_TRUE(bf16_is_nan(float_to_bf16(f))) << std::hex << b;
            ASSERT_TRUE(bf16_is_nan(store_bf16(f))) << std::hex << b;
        } else {
            ASSERT_EQ(u, b << 16) << std::hex << b;
            ASSERT_EQ(float_to_bf16(f), b) << std::hex << b;
            ASSERT_EQ(store_bf16(f), b) << std::hex << b;
        }
    }
}

TEST(Bf16Conversion, RoundsToNearestEvenEverywhere) {
    for (uint32_t b = 0; b < 0x7f80; ++b) {  // every finite non-negative bf16 and its successor
        const uint32_t mid_bits = (b << 16) | 0x8000u;  // exactly halfway to b + 1 (b + 1 = inf for 0x7f7f)
        const uint16_t even = (b & 1) ? uint16_t(b + 1) : uint16_t(b);
        for (uint32_t sign : {0u, 0x80000000u}) {
            const float mid = float_of_bits(mid_bits | sign);
            const uint16_t sb = uint16_t(sign >> 16);
            ASSERT_EQ(float_to_bf16(mid), sb | even) << std::hex << b;
            ASSERT_EQ(float_to_bf16(float_of_bits((mid_bits + 1) | sign)), sb | uint16_t(b + 1)) << std::hex << b;
            ASSERT_EQ(float_to_bf16(float_of_bits((mid_bits - 1) | sign)), sb | uint16_t(b)) << std::hex << b;
            // double input, a hair off the tie: one rounding
            const double m = double(mid), tiny = std::fabs(m) * std::ldexp(1.0, -40);
            ASSERT_EQ(store_bf16(m), sb | even) << std::hex << b;
            ASSERT_EQ(store_bf16(m + (sign ? -tiny : tiny)), sb | uint16_t(b + 1)) << std::hex << b;
            ASSERT_EQ(store_bf16(m - (sign ? -tiny : tiny)), sb | uint16_t(b)) << std::hex << b;
        }
    }
    EXPECT_EQ(float_to_bf16(FLT_MAX), 0x7f80);  // above the last tie: overflow
    EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
    EXPECT_EQ(store_bf16(1e300), 0x7f80);
    EXPECT_TRUE(bf16_is_nan(float_to_bf16(float_of_bits(0x7f800001u))));
    EXPECT_TRUE(bf16_is_nan(store_bf16(std::nan(""))));
}
