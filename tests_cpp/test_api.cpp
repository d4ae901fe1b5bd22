// The C API contract (SPEC §1, §2.6): tensors, scalars, int arrays, getters, error messages,
// executors (single-use, repeatable, stale handles, repointing), workspace checks, streams,
// runtime shims and output-memory rules. aclnnSoftmaxBackward serves as the operator.
#include <atomic>
#include <future>
#include <thread>

#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "api/objects.h"
#include "api/status.h"
#include "api/stream.h"
#include "test_util.h"

using namespace agtest;

namespace {

// Returns the view shape / strides / storage shape through the getters (freed with delete[]).
using Getter = aclnnStatus (*)(const aclTensor *, int64_t **, uint64_t *);
Shape get_array(Getter getter, const aclTensor *t) {
    int64_t *values = nullptr;
    uint64_t n = 12345;
    EXPECT_EQ(getter(t, &values, &n), ACLNN_SUCCESS);
    Shape r(values, values + n);
    delete[] values;
    return r;
}

aclTensor *create(const Shape &shape, const Shape *strides, int64_t offset, const Shape &storage, void *data,
                  aclDataType dt = ACL_FLOAT, aclFormat fmt = ACL_FORMAT_ND) {
    return aclCreateTensor(shape.data(), shape.size(), dt, strides ? strides->data() : nullptr, offset, fmt,
                           storage.data(), storage.size(), data);
}

bool contains(const std::string &s, const std::string &needle) { return s.find(needle) != std::string::npos; }

// Phase 1 of softmax backward over three tensors, dim -1.
aclnnStatus softmax_phase1(const HostTensor &g, const HostTensor &y, const HostTensor &out, aclOpExecutor **e,
                           int64_t dim = -1) {
    uint64_t ws = 0;
    const aclnnStatus s = aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), dim, out.t(), &ws, e);
    EXPECT_EQ(ws, 0u);
    return s;
}

// float64 softmax backward along the last dim, with a tolerance derived as in
// test_softmax_backward.cpp: f32 compute, 16-lane sums of ceil(n/16) terms, so the error is at
// most (ceil(n/16) + 8) * eps32 * |y| * (|g| + sum|g*y|), plus one f32 rounding of the result.
void expect_softmax_result(const HostTensor &g, const HostTensor &y, const HostTensor &out, const std::string &what) {
    const std::vector<double> gv = g.values(), yv = y.values();
    std::vector<double> ref(gv.size()), tol(gv.size());
    const int64_t n = g.shape().empty() ? 1 : g.shape().back();
    const double eps = eps_of(ACL_FLOAT), k = double((n + 15) / 16 + 8) * eps;
    for (size_t row = 0; row < gv.size(); row += size_t(n)) {
        double s = 0, a = 0;
        for (int64_t i = 0; i < n; ++i) {
            s += gv[row + i] * yv[row + i];
            a += std::fabs(gv[row + i] * yv[row + i]);
        }
        for (int64_t i = 0; i < n; ++i) {
            ref[row + i] = yv[row + i] * (gv[row + i] - s);
            tol[row + i] = k * std::fabs(yv[row + i]) * (std::fabs(gv[row + i]) + a) + eps * std::fabs(ref[row + i]);
        }
    }
    expect_close(out.values(), ref, tol, what);
}

HostTensor random_tensor(const Shape &shape, std::mt19937_64 &rng, double lo, double hi, aclDataType dt = ACL_FLOAT) {
    HostTensor t(shape, dt);
    t.fill_random(rng, lo, hi);
    return t;
}

// Holds a stream's worker on a gate until released (also on early test exit), so that work
// queued behind it is provably not yet run.
struct Gate {
    std::promise<void> open;
    std::shared_future<void> opened = open.get_future().share();
    bool released = false;
    void block(aclrtStream stream, std::atomic<std::thread::id> *worker_id = nullptr) {
        auto s = ag::find_stream(stream);
        ASSERT_NE(s, nullptr);
        auto f = opened;
        ASSERT_TRUE(ag::submit(*s, [f, worker_id] {
            if (worker_id) *worker_id = std::this_thread::get_id();
            f.wait();
            return 0;
        }));
    }
    void release() {
        if (!released) open.set_value();
        released = true;
    }
    ~Gate() { release(); }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// aclCreateTensor and the getters

TEST(CreateTensor, NullStridesMeanContiguous) {
    std::vector<float> data(24);
    const Shape shape = {2, 3, 4}, storage = {24};
    aclTensor *t = create(shape, nullptr, 0, storage, data.data());
    ASSERT_NE(t, nullptr) << take_error();
    EXPECT_EQ(get_array(aclGetViewShape, t), shape);
    EXPECT_EQ(get_array(aclGetViewStrides, t), (Shape{12, 4, 1}));
    EXPECT_EQ(get_array(aclGetStorageShape, t), storage);
    int64_t offset = -1;
    aclFormat fmt = ACL_FORMAT_UNDEFINED;
    aclDataType dt = ACL_DT_UNDEFINED;
    EXPECT_EQ(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
    EXPECT_EQ(aclGetFormat(t, &fmt), ACLNN_SUCCESS);
    EXPECT_EQ(aclGetDataType(t, &dt), ACLNN_SUCCESS);
    EXPECT_EQ(offset, 0);
    EXPECT_EQ(fmt, ACL_FORMAT_ND);
    EXPECT_EQ(dt, ACL_FLOAT);
    EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(CreateTensor, ExplicitStridesOffsetFormatKept) {
    std::vector<double> data(8);
    const Shape shape = {3, 2}, strides = {1, 3}, storage = {2, 4};
    aclTensor *t = create(shape, &strides, 2, storage, data.data(), ACL_DOUBLE, ACL_FORMAT_NCHW);
    ASSERT_NE(t, nullptr) << take_error();
    EXPECT_EQ(get_array(aclGetViewStrides, t), strides);
    EXPECT_EQ(get_array(aclGetStorageShape, t), storage);
    int64_t offset = 0;
    aclFormat fmt = ACL_FORMAT_ND;
    aclDataType dt = ACL_FLOAT;
    aclGetViewOffset(t, &offset);
    aclGetFormat(t, &fmt);
    aclGetDataType(t, &dt);
    EXPECT_EQ(offset, 2);
    EXPECT_EQ(fmt, ACL_FORMAT_NCHW);
    EXPECT_EQ(dt, ACL_DOUBLE);
    aclDestroyTensor(t);
}

// A view may reach exactly the storage's ends with positive, negative or zero strides; one
// element further is rejected with a message naming view and storage.
TEST(CreateTensor, ViewMustLieInsideStorage) {
    std::vector<float> data(8);
    struct Case {
        const char *name;
        Shape shape, strides;
        int64_t offset;
        Shape storage;
        bool ok;
    };
    const std::vector<Case> cases = {
        {"contiguous fits", {2, 4}, {4, 1}, 0, {8}, true},
        {"contiguous too big", {3, 3}, {3, 1}, 0, {8}, false},
        {"offset to the end", {3}, {1}, 5, {8}, true},
        {"offset one past", {3}, {1}, 6, {8}, false},
        {"negative stride, pointer at the end", {3}, {-1}, 2, {3}, true},
        {"negative stride reaching below 0", {3}, {-1}, 1, {3}, false},
        {"reversed 2-d", {2, 4}, {-4, -1}, 7, {8}, true},
        {"reversed 2-d, offset too small", {2, 4}, {-4, -1}, 6, {8}, false},
        {"zero strides (broadcast)", {4, 3}, {0, 1}, 0, {3}, true},
        {"all zero strides", {5, 5}, {0, 0}, 7, {8}, true},
        {"zero strides past the end", {5, 5}, {0, 0}, 8, {8}, false},
        {"negative offset", {1}, {1}, -1, {8}, false},
        {"empty view needs no storage", {0, 5}, {5, 1}, 0, {0}, true},
        {"rank-0 view, rank-0 storage", {}, {}, 0, {}, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        take_error();
        aclTensor *t = create(c.shape, &c.strides, c.offset, c.storage, data.data());
        EXPECT_EQ(t != nullptr, c.ok);
        const std::string msg = take_error();
        if (c.ok) {
            EXPECT_EQ(msg, "");
        } else {
            EXPECT_TRUE(contains(msg, "aclCreateTensor")) << msg;
            EXPECT_TRUE(contains(msg, "outside")) << msg;
            EXPECT_TRUE(contains(msg, shape_str(c.shape))) << msg;
            EXPECT_TRUE(contains(msg, shape_str(c.storage))) << msg;
        }
        aclDestroyTensor(t);
    }
}

TEST(CreateTensor, Rank0AndRank9AreCreated) {
    float x = 1.0f;
    aclTensor *t0 = aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, &x);
    ASSERT_NE(t0, nullptr) << take_error();
    EXPECT_EQ(get_array(aclGetViewShape, t0), Shape{});
    EXPECT_EQ(get_array(aclGetViewStrides, t0), Shape{});
    aclDestroyTensor(t0);
    std::vector<float> data(2 * 3);
    const Shape r9 = {1, 2, 1, 1, 1, 1, 1, 3, 1}, storage = {6};
    aclTensor *t9 = create(r9, nullptr, 0, storage, data.data());
    ASSERT_NE(t9, nullptr) << take_error();
    EXPECT_EQ(get_array(aclGetViewShape, t9), r9);
    aclDestroyTensor(t9);
}

TEST(CreateTensor, NegativeDimsAreDescriptorsNullDimArraysFail) {
    std::vector<float> data(8);
    const Shape bad = {2, -1}, storage = {8}, bad_storage = {-8}, ok = {2};
    take_error();
    // as CANN: a negative dim, view or storage, is a descriptor, nothing read; the operators
    // reject it in phase 1 (every operator's rows in test_conformance.cpp)
    for (const auto &[view, st] : {std::pair{bad, storage}, std::pair{ok, bad_storage}, std::pair{bad, bad}}) {
        aclTensor *neg = create(view, nullptr, 0, st, data.data());
        ASSERT_NE(neg, nullptr) << take_error();
        EXPECT_EQ(get_array(aclGetViewShape, neg), view);
        EXPECT_EQ(get_array(aclGetStorageShape, neg), st);
        aclDestroyTensor(neg);
    }
    // no view-in-storage check against a storage of no extent, whatever the view reaches
    const Shape far = {1000};
    aclTensor *wide = create(far, nullptr, 5, bad_storage, data.data());
    ASSERT_NE(wide, nullptr) << take_error();
    EXPECT_EQ(take_error(), "");
    aclDestroyTensor(wide);
    EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage.data(), 1, data.data()), nullptr);
    EXPECT_NE(take_error(), "");
    EXPECT_EQ(aclCreateTensor(ok.data(), 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 1, data.data()), nullptr);
    EXPECT_NE(take_error(), "");
}

// A view reaching past a negative storage dim is never read: phase 1 of the operator names the
// argument and the storage dim, and nothing is written.
TEST(CreateTensor, NegativeStorageDimIsRejectedByTheOperator) {
    HostTensor g({2, 3}, ACL_FLOAT), y({2, 3}, ACL_FLOAT), out({2, 3}, ACL_FLOAT);
    const Shape view = {2, 3}, neg_storage = {-1, 3};
    aclTensor *yn = create(view, nullptr, 0, neg_storage, y.data());
    ASSERT_NE(yn, nullptr) << take_error();
    const auto before = out.storage_bytes();
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    EXPECT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), yn, -1, out.t(), &ws, &e), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = take_error();
    EXPECT_TRUE(contains(msg, "output") && contains(msg, "negative storage size -1 in dimension 0")) << msg;
    EXPECT_EQ(e, nullptr);
    EXPECT_EQ(out.storage_bytes(), before);
    aclDestroyTensor(yn);
}

// numel beyond int64: creation succeeds (no element is ever addressed), the operator says 161002.
TEST(CreateTensor, NumelOverflowIsRejectedByTheOperator) {
    const Shape huge = {int64_t(1) << 31, int64_t(1) << 31, 4}, zeros = {0, 0, 0}, one = {1};
    float cell = 0;
    aclTensor *g = create(huge, &zeros, 0, one, &cell), *y = create(huge, &zeros, 0, one, &cell);
    aclTensor *out = create(huge, &zeros, 0, one, &cell);
    ASSERT_TRUE(g && y && out) << take_error();
    uint64_t ws = 5;
    aclOpExecutor *e = nullptr;
    take_error();
    EXPECT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(g, y, 0, out, &ws, &e), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(contains(take_error(), "[2147483648, 2147483648, 4]"));
    EXPECT_EQ(e, nullptr);
    EXPECT_EQ(ws, 5u);
    for (aclTensor *t : {g, y, out}) aclDestroyTensor(t);
}

TEST(Getters, NullArgumentsAre161001WithMessage) {
    HostTensor t({2, 3}, ACL_FLOAT);
    int64_t *values = nullptr;
    uint64_t n = 0;
    int64_t offset;
    aclFormat fmt;
    aclDataType dt;
    const std::vector<std::pair<const char *, std::function<aclnnStatus()>>> calls = {
        {"aclGetViewShape", [&] { return aclGetViewShape(nullptr, &values, &n); }},
        {"aclGetViewShape", [&] { return aclGetViewShape(t.t(), nullptr, &n); }},
        {"aclGetViewShape", [&] { return aclGetViewShape(t.t(), &values, nullptr); }},
        {"aclGetStorageShape", [&] { return aclGetStorageShape(nullptr, &values, &n); }},
        {"aclGetStorageShape", [&] { return aclGetStorageShape(t.t(), nullptr, &n); }},
        {"aclGetViewStrides", [&] { return aclGetViewStrides(nullptr, &values, &n); }},
        {"aclGetViewStrides", [&] { return aclGetViewStrides(t.t(), &values, nullptr); }},
        {"aclGetViewOffset", [&] { return aclGetViewOffset(nullptr, &offset); }},
        {"aclGetViewOffset", [&] { return aclGetViewOffset(t.t(), nullptr); }},
        {"aclGetFormat", [&] { return aclGetFormat(nullptr, &fmt); }},
        {"aclGetFormat", [&] { return aclGetFormat(t.t(), nullptr); }},
        {"aclGetDataType", [&] { return aclGetDataType(nullptr, &dt); }},
        {"aclGetDataType", [&] { return aclGetDataType(t.t(), nullptr); }},
        {"aclGetIntArraySize", [&] { return aclGetIntArraySize(nullptr, &n); }},
    };
    for (const auto &[name, call] : calls) {
        take_error();
        EXPECT_EQ(call(), ACLNN_ERR_PARAM_NULLPTR) << name;
        EXPECT_TRUE(contains(take_error(), name)) << name;
    }
    EXPECT_EQ(values, nullptr);  // nothing handed out on failure
}

TEST(Destroy, NullIsSuccess) {
    EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyIntArray(nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

TEST(Scalar, CreationCopiesTheValue) {
    float f = 2.5f;
    double d = -1.25;
    int64_t i = -(int64_t(1) << 40);
    int8_t i8 = -7;
    uint16_t h = ag::kern::float_to_half(0.75f);
    aclScalar *sf = aclCreateScalar(&f, ACL_FLOAT), *sd = aclCreateScalar(&d, ACL_DOUBLE);
    aclScalar *si = aclCreateScalar(&i, ACL_INT64), *s8 = aclCreateScalar(&i8, ACL_INT8);
    aclScalar *sh = aclCreateScalar(&h, ACL_FLOAT16);
    ASSERT_TRUE(sf && sd && si && s8 && sh);
    f = 9, d = 9, i = 9, i8 = 9, h = 0;  // the scalars hold copies
    EXPECT_EQ(ag::scalar_value(*sf), 2.5);
    EXPECT_EQ(ag::scalar_value(*sd), -1.25);
    EXPECT_EQ(ag::scalar_value(*si), -1099511627776.0);
    EXPECT_EQ(ag::scalar_value(*s8), -7.0);
    EXPECT_EQ(ag::scalar_value(*sh), 0.75);
    for (aclScalar *s : {sf, sd, si, s8, sh}) EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
    take_error();
    EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
    EXPECT_TRUE(contains(take_error(), "aclCreateScalar"));
    EXPECT_EQ(aclCreateScalar(&d, ACL_STRING), nullptr);
    EXPECT_TRUE(contains(take_error(), "DT_STRING"));
}

TEST(IntArray, CreationCopiesTheValues) {
    std::vector<int64_t> v = {3, -1, 7};
    aclIntArray *a = aclCreateIntArray(v.data(), v.size());
    ASSERT_NE(a, nullptr);
    v[0] = 100;
    EXPECT_EQ(a->values, (std::vector<int64_t>{3, -1, 7}));
    uint64_t n = 0;
    EXPECT_EQ(aclGetIntArraySize(a, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
    aclIntArray *empty = aclCreateIntArray(nullptr, 0);
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(aclGetIntArraySize(empty, &n), ACLNN_SUCCESS);
    EXPECT_EQ(n, 0u);
    aclDestroyIntArray(empty);
    take_error();
    EXPECT_EQ(aclCreateIntArray(nullptr, 2), nullptr);
    EXPECT_TRUE(contains(take_error(), "aclCreateIntArray"));
}

// ---------------------------------------------------------------------------------------------
// aclGetRecentErrMsg

TEST(ErrMsg, ReturnsNewestThenClears) {
    take_error();
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
    EXPECT_EQ(aclGetViewOffset(nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(aclGetFormat(nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    const char *m = aclGetRecentErrMsg();
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(contains(m, "aclGetFormat")) << m;  // the newest
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);      // cleared
}

TEST(ErrMsg, IsThreadLocal) {
    take_error();
    EXPECT_EQ(aclGetViewOffset(nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);  // message on this thread
    std::string seen_there = "unset", own_there;
    std::thread other([&] {
        const char *m = aclGetRecentErrMsg();
        seen_there = m ? m : "";
        aclGetFormat(nullptr, nullptr);
        own_there = take_error();
    });
    other.join();
    EXPECT_EQ(seen_there, "");  // not visible on the other thread
    EXPECT_TRUE(contains(own_there, "aclGetFormat"));
    const std::string mine = take_error();  // ours is intact and not replaced by the other's
    EXPECT_TRUE(contains(mine, "aclGetViewOffset")) << mine;
}

TEST(ErrMsg, EveryNonZeroStatusSetsOne) {
    HostTensor g({2, 3}, ACL_FLOAT), y({2, 3}, ACL_FLOAT), out({2, 3}, ACL_FLOAT), out_bad({3, 3}, ACL_FLOAT);
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    void *p = nullptr;
    char small[4];
    aclrtStream dead = nullptr;
    ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
    aclOpExecutor *bogus = reinterpret_cast<aclOpExecutor *>(uintptr_t(0xdead0));
    const std::vector<std::pair<const char *, std::function<int()>>> calls = {
        {"phase 1 NULL tensor", [&] { return aclnnSoftmaxBackwardGetWorkspaceSize(nullptr, y.t(), 0, out.t(), &ws, &e); }},
        {"phase 1 bad shape", [&] { return aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), 0, out_bad.t(), &ws, &e); }},
        {"phase 1 bad dim", [&] { return aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), 5, out.t(), &ws, &e); }},
        {"phase 2 NULL executor", [&] { return aclnnSoftmaxBackward(nullptr, 0, nullptr, nullptr); }},
        {"phase 2 stale executor", [&] { return aclnnSoftmaxBackward(nullptr, 0, bogus, nullptr); }},
        {"set repeatable NULL", [&] { return aclSetAclOpExecutorRepeatable(nullptr); }},
        {"set repeatable stale", [&] { return aclSetAclOpExecutorRepeatable(bogus); }},
        {"destroy executor NULL", [&] { return aclDestroyAclOpExecutor(nullptr); }},
        {"destroy executor stale", [&] { return aclDestroyAclOpExecutor(bogus); }},
        {"set input addr NULL", [&] { return aclSetInputTensorAddr(nullptr, 0, g.t(), g.data()); }},
        {"set output addr stale", [&] { return aclSetOutputTensorAddr(bogus, 0, g.t(), g.data()); }},
        {"getter NULL", [&] { return aclGetViewShape(nullptr, nullptr, nullptr); }},
        {"malloc 0", [&] { return aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST); }},
        {"malloc NULL", [&] { return aclrtMalloc(nullptr, 8, ACL_MEM_MALLOC_HUGE_FIRST); }},
        {"free NULL", [&] { return aclrtFree(nullptr); }},
        {"memcpy too long", [&] { return aclrtMemcpy(small, 4, "abcdefgh", 8, ACL_MEMCPY_HOST_TO_HOST); }},
        {"memcpy NULL", [&] { return aclrtMemcpy(nullptr, 4, "abcd", 4, ACL_MEMCPY_HOST_TO_DEVICE); }},
        {"memcpy bad kind", [&] { return aclrtMemcpy(small, 4, "abcd", 4, aclrtMemcpyKind(42)); }},
        {"memset too long", [&] { return aclrtMemset(small, 4, 0, 8); }},
        {"memset NULL", [&] { return aclrtMemset(nullptr, 4, 0, 4); }},
        {"create stream NULL", [&] { return aclrtCreateStream(nullptr); }},
        {"destroy dead stream", [&] { return aclrtDestroyStream(dead); }},
        {"sync dead stream", [&] { return aclrtSynchronizeStream(dead); }},
        {"set device -1", [&] { return aclrtSetDevice(-1); }},
        {"get device NULL", [&] { return aclrtGetDevice(nullptr); }},
        {"init twice", [&] {
             aclInit(nullptr);
             take_error();
             const int s = aclInit(nullptr);
             const char *m = aclGetRecentErrMsg();
             const std::string keep = m ? m : "";
             aclFinalize();
             if (!keep.empty()) ag::set_message(keep);  // put it back for the check below
             return s;
         }},
    };
    for (const auto &[name, call] : calls) {
        take_error();
        const int s = call();
        EXPECT_NE(s, 0) << name;
        const char *m = aclGetRecentErrMsg();
        EXPECT_TRUE(m != nullptr && *m != '\0') << name << " returned " << s << " without a message";
    }
}

// ---------------------------------------------------------------------------------------------
// Executors

TEST(Executor, SingleUseIsConsumedByPhase2) {
    std::mt19937_64 rng(1);
    HostTensor g = random_tensor({4, 8}, rng, -1, 1), y = random_tensor({4, 8}, rng, 0, 1), out({4, 8}, ACL_FLOAT);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    expect_softmax_result(g, y, out, "first run");
    out.fill_storage(0);
    take_error();
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // no crash, no run
    EXPECT_TRUE(contains(take_error(), "aclnnSoftmaxBackward"));
    EXPECT_EQ(out.at(0), 0.0);
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_ERR_PARAM_INVALID);  // already freed by phase 2
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_ERR_PARAM_INVALID);
    take_error();
}

TEST(Executor, RepeatableRunsUntilDestroyed) {
    std::mt19937_64 rng(2);
    HostTensor g = random_tensor({3, 16}, rng, -1, 1), y = random_tensor({3, 16}, rng, 0, 1), out({3, 16}, ACL_FLOAT);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    for (int run = 0; run < 3; ++run) {
        g.fill_random(rng, -1, 1);  // new data in the same memory: each run reads it afresh
        out.fill_storage(0);
        ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS) << run;
        expect_softmax_result(g, y, out, "run " + std::to_string(run));
    }
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    take_error();
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_ERR_PARAM_INVALID);  // double destroy
    EXPECT_NE(take_error(), "");
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);  // use after destroy
    EXPECT_NE(take_error(), "");
}

TEST(Executor, NullAndUnknownHandles) {
    take_error();
    EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "aclDestroyAclOpExecutor"));
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "aclSetAclOpExecutorRepeatable"));
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "aclnnSoftmaxBackward"));
    // a handle the library never made: recognised, not dereferenced
    aclOpExecutor *never = reinterpret_cast<aclOpExecutor *>(uintptr_t(0x7777770));
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, never, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclDestroyAclOpExecutor(never), ACLNN_ERR_PARAM_INVALID);
    take_error();
}

// An executor belongs to the operator whose phase 1 made it.
TEST(Executor, OtherOperatorsPhase2RejectsIt) {
    HostTensor g({2, 4}, ACL_FLOAT), y({2, 4}, ACL_FLOAT), out({2, 4}, ACL_FLOAT);
    out.fill_storage(5);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    take_error();
    EXPECT_EQ(aclnnLogSigmoidBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = take_error();
    EXPECT_TRUE(contains(msg, "aclnnLogSigmoidBackward") && contains(msg, "aclnnSoftmaxBackward")) << msg;
    EXPECT_EQ(out.at(0), 5.0);  // nothing ran
    // consumed like any single-use executor in phase 2
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
    take_error();
}

TEST(Executor, Phase2WorkspaceChecks) {
    HostTensor g({2, 4}, ACL_FLOAT), y({2, 4}, ACL_FLOAT), out({2, 4}, ACL_FLOAT);
    out.fill_storage(5);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    take_error();
    // NULL workspace with a non-zero size
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 64, e, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(contains(take_error(), "workspace"));
    EXPECT_EQ(out.at(0), 5.0);  // nothing ran
    // a single-use executor is consumed even by a failing phase 2
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
    take_error();
    // a larger workspace than needed is fine
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    std::vector<char> ws(256);
    EXPECT_EQ(aclnnSoftmaxBackward(ws.data(), ws.size(), e, nullptr), ACLNN_SUCCESS);
}

TEST(Executor, Phase1OutputPointersNullAndFailureWritesNothing) {
    HostTensor g({2, 4}, ACL_FLOAT), y({2, 4}, ACL_FLOAT), out({2, 4}, ACL_FLOAT);
    aclOpExecutor *const sentinel = reinterpret_cast<aclOpExecutor *>(uintptr_t(0xabc0));
    aclOpExecutor *e = sentinel;
    uint64_t ws = 42;
    take_error();
    EXPECT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), 0, out.t(), nullptr, &e), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "workspaceSize"));
    EXPECT_EQ(e, sentinel);
    EXPECT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), 0, out.t(), &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "executor"));
    EXPECT_EQ(ws, 42u);
    EXPECT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(g.t(), y.t(), 9, out.t(), &ws, &e), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(e, sentinel);
    EXPECT_EQ(ws, 42u);
    take_error();
}

// Executors are process-wide: made on one thread, run on another (synchronously or on a stream).
TEST(Executor, CreatedOnOneThreadRunOnAnother) {
    std::mt19937_64 rng(3);
    HostTensor g = random_tensor({5, 9}, rng, -1, 1), y = random_tensor({5, 9}, rng, 0, 1), out({5, 9}, ACL_FLOAT);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    aclnnStatus there = -1;
    std::thread([&] { there = aclnnSoftmaxBackward(nullptr, 0, e, nullptr); }).join();
    EXPECT_EQ(there, ACLNN_SUCCESS);
    expect_softmax_result(g, y, out, "run on another thread");

    HostTensor out2({5, 9}, ACL_FLOAT);
    aclOpExecutor *e2 = nullptr;
    aclnnStatus made = -1;
    std::thread([&] { made = softmax_phase1(g, y, out2, &e2); }).join();
    ASSERT_EQ(made, ACLNN_SUCCESS);
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e2, stream), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    expect_softmax_result(g, y, out2, "made on another thread, run on a stream");
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// aclSetInputTensorAddr / aclSetOutputTensorAddr

TEST(SetTensorAddr, RepointsARepeatableExecutor) {
    std::mt19937_64 rng(4);
    const Shape s = {4, 12};
    HostTensor g1 = random_tensor(s, rng, -1, 1), y1 = random_tensor(s, rng, 0, 1), out1(s, ACL_FLOAT);
    HostTensor g2 = random_tensor(s, rng, -1, 1), y2 = random_tensor(s, rng, 0, 1), out2(s, ACL_FLOAT);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g1, y1, out1, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    expect_softmax_result(g1, y1, out1, "before repointing");
    const std::vector<unsigned char> out1_bytes = out1.storage_bytes();

    EXPECT_EQ(aclSetInputTensorAddr(e, 0, g2.t(), g2.data()), ACLNN_SUCCESS);
    EXPECT_EQ(aclSetInputTensorAddr(e, 1, y2.t(), y2.data()), ACLNN_SUCCESS);
    EXPECT_EQ(aclSetOutputTensorAddr(e, 0, out2.t(), out2.data()), ACLNN_SUCCESS);
    ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    expect_softmax_result(g2, y2, out2, "after repointing");
    EXPECT_EQ(out1.storage_bytes(), out1_bytes);  // the old output is left alone

    // Only the output moved back: inputs stay on g2/y2.
    EXPECT_EQ(aclSetOutputTensorAddr(e, 0, out1.t(), out1.data()), ACLNN_SUCCESS);
    out1.fill_storage(0);
    ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    expect_softmax_result(g2, y2, out1, "output moved back");
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
}

TEST(SetTensorAddr, RejectsMismatchedViewsAndIndices) {
    const Shape s = {2, 3};
    HostTensor g(s, ACL_FLOAT), y(s, ACL_FLOAT), out(s, ACL_FLOAT);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    HostTensor other_shape({3, 2}, ACL_FLOAT), other_rank({6}, ACL_FLOAT), f16(s, ACL_FLOAT16);
    HostTensor transposed(s, {1, 2}, 0, ACL_FLOAT);
    HostTensor u32(s, ACL_UINT32);  // same element size as float, different dtype
    HostTensor same(s, ACL_FLOAT);
    struct Case {
        const char *name;
        std::function<aclnnStatus()> call;
        aclnnStatus status;
        const char *needle;
    };
    const std::vector<Case> cases = {
        {"other shape", [&] { return aclSetInputTensorAddr(e, 0, other_shape.t(), other_shape.data()); },
         ACLNN_ERR_PARAM_INVALID, "[3, 2]"},
        {"other rank", [&] { return aclSetOutputTensorAddr(e, 0, other_rank.t(), other_rank.data()); },
         ACLNN_ERR_PARAM_INVALID, "[6]"},
        {"other strides", [&] { return aclSetInputTensorAddr(e, 1, transposed.t(), transposed.data()); },
         ACLNN_ERR_PARAM_INVALID, "aclSetInputTensorAddr"},
        {"other dtype", [&] { return aclSetInputTensorAddr(e, 0, f16.t(), f16.data()); }, ACLNN_ERR_PARAM_INVALID,
         "aclSetInputTensorAddr"},
        {"other dtype, same size", [&] { return aclSetOutputTensorAddr(e, 0, u32.t(), u32.data()); },
         ACLNN_ERR_PARAM_INVALID, "aclSetOutputTensorAddr"},
        {"input index 2", [&] { return aclSetInputTensorAddr(e, 2, same.t(), same.data()); }, ACLNN_ERR_PARAM_INVALID,
         "index 2"},
        {"output index 1", [&] { return aclSetOutputTensorAddr(e, 1, same.t(), same.data()); },
         ACLNN_ERR_PARAM_INVALID, "index 1"},
        {"huge index", [&] { return aclSetInputTensorAddr(e, size_t(-1), same.t(), same.data()); },
         ACLNN_ERR_PARAM_INVALID, "out of range"},
        {"NULL executor", [&] { return aclSetInputTensorAddr(nullptr, 0, same.t(), same.data()); },
         ACLNN_ERR_PARAM_NULLPTR, "aclSetInputTensorAddr"},
        {"NULL tensor", [&] { return aclSetOutputTensorAddr(e, 0, nullptr, same.data()); }, ACLNN_ERR_PARAM_NULLPTR,
         "aclSetOutputTensorAddr"},
        {"NULL address", [&] { return aclSetInputTensorAddr(e, 0, same.t(), nullptr); }, ACLNN_ERR_PARAM_NULLPTR,
         "aclSetInputTensorAddr"},
    };
    for (const Case &c : cases) {
        take_error();
        EXPECT_EQ(c.call(), c.status) << c.name;
        const std::string msg = take_error();
        EXPECT_TRUE(contains(msg, c.needle)) << c.name << ": " << msg;
    }
    // The executor still runs on its original memory after the rejected calls.
    std::mt19937_64 rng(5);
    g.fill_random(rng, -1, 1);
    y.fill_random(rng, 0, 1);
    ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    expect_softmax_result(g, y, out, "after rejected repoints");
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    take_error();
    EXPECT_EQ(aclSetInputTensorAddr(e, 0, same.t(), same.data()), ACLNN_ERR_PARAM_INVALID);  // destroyed
    take_error();
}

// Runs queued on a stream use the addresses set when they were launched, not later ones.
TEST(SetTensorAddr, QueuedRunsKeepTheirAddresses) {
    std::mt19937_64 rng(6);
    const Shape s = {3, 10};
    std::vector<HostTensor> gs, outs;
    HostTensor y = random_tensor(s, rng, 0, 1);
    for (int k = 0; k < 3; ++k) {
        gs.push_back(random_tensor(s, rng, -1, 1));
        outs.emplace_back(s, ACL_FLOAT);
    }
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(gs[0], y, outs[0], &e), ACLNN_SUCCESS);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    {
        Gate gate;
        gate.block(stream);  // nothing below runs before release
        for (int k = 0; k < 3; ++k) {
            ASSERT_EQ(aclSetInputTensorAddr(e, 0, gs[k].t(), gs[k].data()), ACLNN_SUCCESS);
            ASSERT_EQ(aclSetOutputTensorAddr(e, 0, outs[k].t(), outs[k].data()), ACLNN_SUCCESS);
            ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, stream), ACLNN_SUCCESS);
        }
        gate.release();
    }
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    for (int k = 0; k < 3; ++k) expect_softmax_result(gs[k], y, outs[k], "queued run " + std::to_string(k));
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// Streams

// Work on a stream runs on another thread, after phase 2 has returned, in submission order.
TEST(Stream, RunsAsynchronouslyInOrder) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    ASSERT_NE(stream, nullptr);
    // A chain: run k reads buffer k and writes buffer k + 1, so any reordering changes the end.
    constexpr int kRuns = 30;
    const Shape s = {16, 64};
    std::mt19937_64 rng(7);
    HostTensor y = random_tensor(s, rng, 0.0, 0.25, ACL_DOUBLE);
    std::vector<HostTensor> bufs;
    for (int k = 0; k <= kRuns; ++k) bufs.emplace_back(s, ACL_DOUBLE);
    bufs[0].fill_random(rng, -1, 1);
    std::vector<aclOpExecutor *> execs(kRuns);
    for (int k = 0; k < kRuns; ++k) ASSERT_EQ(softmax_phase1(bufs[k], y, bufs[k + 1], &execs[k]), ACLNN_SUCCESS);

    std::atomic<std::thread::id> worker{};
    {
        Gate gate;
        gate.block(stream, &worker);
        for (int k = 0; k < kRuns; ++k) ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, execs[k], stream), ACLNN_SUCCESS);
        // Phase 2 returned for all of them, yet none has run: the worker is held at the gate.
        EXPECT_EQ(bufs[1].at(0), 0.0);
        EXPECT_EQ(bufs[kRuns].at(0), 0.0);
        gate.release();
    }
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_NE(worker.load(), std::thread::id());
    EXPECT_NE(worker.load(), std::this_thread::get_id());

    // The same chain, synchronously on the NULL stream.
    std::vector<HostTensor> ref;
    for (int k = 0; k <= kRuns; ++k) ref.emplace_back(s, ACL_DOUBLE);
    ref[0].fill(bufs[0].values());
    for (int k = 0; k < kRuns; ++k) {
        aclOpExecutor *e = nullptr;
        ASSERT_EQ(softmax_phase1(ref[k], y, ref[k + 1], &e), ACLNN_SUCCESS);
        ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    }
    EXPECT_NE(ref[kRuns].at(0), 0.0);
    EXPECT_EQ(bufs[kRuns].storage_bytes(), ref[kRuns].storage_bytes());
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// Synchronize returns the first failure since the last synchronize, with its message; later work
// still runs. (No operator fails at run time yet, so the failures are injected as stream work.)
TEST(Stream, SynchronizeReportsFirstErrorSinceLastSync) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    auto s = ag::find_stream(stream);
    ASSERT_NE(s, nullptr);
    std::atomic<int> ran{0};
    ASSERT_TRUE(ag::submit(*s, [] { return ag::fail(ACLNN_ERR_PARAM_INVALID, "first failure"); }));
    ASSERT_TRUE(ag::submit(*s, [] { return ag::fail(ACLNN_ERR_INNER, "second failure"); }));
    ASSERT_TRUE(ag::submit(*s, [&] { ++ran; return 0; }));
    take_error();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(take_error(), "first failure");
    EXPECT_EQ(ran.load(), 1);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);  // reset by the previous sync
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
    s.reset();
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(Stream, IdleNullAndDestroyedStreams) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);  // idle
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the NULL stream is always in sync
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    take_error();
    EXPECT_NE(aclrtDestroyStream(stream), ACL_SUCCESS);  // twice: an error, not a crash
    EXPECT_NE(take_error(), "");
    EXPECT_NE(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    take_error();
    // phase 2 on a destroyed stream
    HostTensor g({2, 3}, ACL_FLOAT), y({2, 3}, ACL_FLOAT), out({2, 3}, ACL_FLOAT);
    out.fill_storage(4);
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(softmax_phase1(g, y, out, &e), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, stream), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(contains(take_error(), "stream"));
    EXPECT_EQ(out.at(0), 4.0);
    // the single-use executor was consumed by that phase 2 (as by any phase 2)
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
    take_error();
}

TEST(Stream, DestroyFinishesQueuedWork) {
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    std::mt19937_64 rng(8);
    const Shape s = {64, 512};
    HostTensor g = random_tensor(s, rng, -1, 1), y = random_tensor(s, rng, 0, 1);
    std::vector<HostTensor> outs;
    for (int k = 0; k < 8; ++k) outs.emplace_back(s, ACL_FLOAT);
    for (HostTensor &o : outs) {
        aclOpExecutor *e = nullptr;
        ASSERT_EQ(softmax_phase1(g, y, o, &e), ACLNN_SUCCESS);
        ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, stream), ACLNN_SUCCESS);
    }
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);  // no synchronize
    for (HostTensor &o : outs) expect_softmax_result(g, y, o, "queued before destroy");
}

// Several threads, each with its own stream, at the same time.
TEST(Stream, ConcurrentStreamsFromSeveralThreads) {
    constexpr int kThreads = 4;
    std::vector<std::thread> threads;
    std::vector<int> ok(kThreads, 0);
    std::mt19937_64 rng(9);
    const Shape s = {32, 100};
    std::vector<HostTensor> gs, ys, outs;
    for (int t = 0; t < kThreads; ++t) {
        gs.push_back(random_tensor(s, rng, -1, 1));
        ys.push_back(random_tensor(s, rng, 0, 1));
        outs.emplace_back(s, ACL_FLOAT);
    }
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            aclrtStream stream = nullptr;
            if (aclrtCreateStream(&stream) != ACL_SUCCESS) return;
            int good = 0;
            for (int r = 0; r < 20; ++r) {
                uint64_t ws = 0;
                aclOpExecutor *e = nullptr;
                good += aclnnSoftmaxBackwardGetWorkspaceSize(gs[t].t(), ys[t].t(), 1, outs[t].t(), &ws, &e) == 0 &&
                        aclnnSoftmaxBackward(nullptr, 0, e, stream) == 0;
            }
            good += aclrtSynchronizeStream(stream) == 0;
            good += aclrtDestroyStream(stream) == 0;
            ok[t] = good;
        });
    for (std::thread &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        EXPECT_EQ(ok[t], 22) << t;
        expect_softmax_result(gs[t], ys[t], outs[t], "thread " + std::to_string(t));
    }
}

// ---------------------------------------------------------------------------------------------
// Runtime shims

TEST(Runtime, InitTwiceUntilFinalize) {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    take_error();
    EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
    EXPECT_TRUE(contains(take_error(), "aclInit"));
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    EXPECT_EQ(aclInit("any/config.json"), ACL_SUCCESS);
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    EXPECT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
}

TEST(Runtime, Devices) {
    EXPECT_EQ(aclrtSetDevice(3), ACL_SUCCESS);
    int32_t dev = -1;
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 3);
    EXPECT_EQ(aclrtResetDevice(3), ACL_SUCCESS);
    EXPECT_NE(aclrtSetDevice(-1), ACL_SUCCESS);
    EXPECT_NE(aclrtResetDevice(-1), ACL_SUCCESS);
    take_error();
    EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
}

TEST(Runtime, MallocIs64ByteAligned) {
    for (size_t size : {size_t(1), size_t(3), size_t(63), size_t(64), size_t(100), size_t(4097), size_t(1) << 20}) {
        void *p = nullptr;
        ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << size;
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
        std::memset(p, 0xab, size);  // the whole size is usable
        EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
    void *host = nullptr;
    ASSERT_EQ(aclrtMallocHost(&host, 10), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(host) % 64, 0u);
    EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
    void *p = reinterpret_cast<void *>(uintptr_t(0x1230));
    take_error();
    EXPECT_NE(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EXPECT_TRUE(contains(take_error(), "aclrtMalloc"));
    EXPECT_EQ(p, reinterpret_cast<void *>(uintptr_t(0x1230)));  // untouched on failure
    EXPECT_NE(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_NE(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    take_error();
}

TEST(Runtime, MemcpyAndMemset) {
    const char src[9] = "abcdefgh";
    char dst[9] = "--------";
    const KnownMemory ks(src, 9), kd(dst, 9);  // device memory for the copies' device sides
    for (int kind = ACL_MEMCPY_HOST_TO_HOST; kind <= ACL_MEMCPY_DEFAULT; ++kind) {
        std::memset(dst, '-', 8);
        EXPECT_EQ(aclrtMemcpy(dst, 8, src, 8, aclrtMemcpyKind(kind)), ACL_SUCCESS) << kind;
        EXPECT_EQ(std::string(dst, 8), "abcdefgh");
    }
    std::memset(dst, '-', 8);
    take_error();
    EXPECT_NE(aclrtMemcpy(dst, 4, src, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);  // count > destMax
    EXPECT_TRUE(contains(take_error(), "destMax"));
    EXPECT_EQ(std::string(dst, 8), "--------");  // nothing copied
    EXPECT_NE(aclrtMemcpy(nullptr, 8, src, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    EXPECT_NE(aclrtMemcpy(dst, 8, nullptr, 8, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(dst, 8, src, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);  // nothing to do
    EXPECT_EQ(aclrtMemcpy(dst, 8, src, 3, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);  // partial
    EXPECT_EQ(std::string(dst, 8), "abc-----");

    EXPECT_EQ(aclrtMemset(dst, 8, 'x', 5), ACL_SUCCESS);
    EXPECT_EQ(std::string(dst, 8), "xxxxx---");
    take_error();
    EXPECT_NE(aclrtMemset(dst, 4, 'y', 8), ACL_SUCCESS);  // count > maxCount
    EXPECT_EQ(std::string(dst, 8), "xxxxx---");
    EXPECT_NE(aclrtMemset(nullptr, 8, 0, 8), ACL_SUCCESS);
    take_error();
}

TEST(Runtime, Float16Helpers) {
    EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3c00);
    EXPECT_EQ(aclFloat16ToFloat(0xc000), -2.0f);
    EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
    EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
    EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
    EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
    EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
    EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
}

// ---------------------------------------------------------------------------------------------
// Output memory: no partial overlap with an input, no self-overlap, in-place allowed.

TEST(OutputMemory, PartialOverlapAndSelfOverlapRejected) {
    std::vector<float> buf(24, 0.5f);
    const KnownMemory known(buf);
    const Shape s6 = {6}, storage = {24};
    // views of 6 elements at 0, 2, 6, 12: a0/a2 overlap partially, a0/a6/a12 are disjoint
    aclTensor *a0 = create(s6, nullptr, 0, storage, buf.data()), *a2 = create(s6, nullptr, 2, storage, buf.data());
    aclTensor *a6 = create(s6, nullptr, 6, storage, buf.data()), *a12 = create(s6, nullptr, 12, storage, buf.data());
    const Shape s23 = {2, 3}, zero = {0, 1}, s33 = {3, 3}, diag = {1, 1};
    aclTensor *bcast = create(s23, &zero, 0, storage, buf.data());
    aclTensor *interleaved = create(s33, &diag, 0, storage, buf.data());
    HostTensor g23({2, 3}, ACL_FLOAT), y23({2, 3}, ACL_FLOAT), g33({3, 3}, ACL_FLOAT), y33({3, 3}, ACL_FLOAT);
    ASSERT_TRUE(a0 && a2 && a6 && a12 && bcast && interleaved);
    struct Case {
        const char *name;
        const aclTensor *g, *y, *out;
        aclnnStatus status;
    };
    const std::vector<Case> cases = {
        {"out partially overlaps gradOutput", a0, a12, a2, ACLNN_ERR_PARAM_INVALID},
        {"out partially overlaps output", a12, a0, a2, ACLNN_ERR_PARAM_INVALID},
        {"out zero stride", g23.t(), y23.t(), bcast, ACLNN_ERR_PARAM_INVALID},
        {"out interleaved strides", g33.t(), y33.t(), interleaved, ACLNN_ERR_PARAM_INVALID},
        {"out disjoint from both, same buffer", a0, a6, a12, ACLNN_SUCCESS},
        {"out identical to gradOutput", a0, a6, a0, ACLNN_SUCCESS},
        {"out identical to output", a12, a0, a0, ACLNN_SUCCESS},
    };
    for (const Case &c : cases) {
        take_error();
        uint64_t ws = 0;
        aclOpExecutor *e = nullptr;
        const aclnnStatus st =
            aclnnSoftmaxBackwardGetWorkspaceSize(c.g, c.y, 0, const_cast<aclTensor *>(c.out), &ws, &e);
        EXPECT_EQ(st, c.status) << c.name;
        if (st == ACLNN_SUCCESS) EXPECT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
        else EXPECT_TRUE(contains(take_error(), "out")) << c.name;
    }
    for (aclTensor *t : {a0, a2, a6, a12, bcast, interleaved}) aclDestroyTensor(t);
}

// In place with a strided, offset view: the identical view is accepted and the result is correct.
TEST(OutputMemory, InPlaceIntoGradOutputIsCorrect) {
    std::mt19937_64 rng(10);
    for (int64_t dim : {0, 1}) {
        HostTensor g({5, 7}, {1, 5}, 0, ACL_FLOAT), y({5, 7}, ACL_FLOAT);  // g transposed
        HostTensor rev({5, 7}, {-7, -1}, 34, ACL_FLOAT), y2({5, 7}, ACL_FLOAT);  // reversed
        for (HostTensor *t : {&g, &rev}) t->fill_random(rng, -1, 1);
        for (HostTensor *t : {&y, &y2}) t->fill_random(rng, 0, 1);
        for (auto [gp, yp] : {std::pair<HostTensor *, HostTensor *>{&g, &y}, {&rev, &y2}}) {
            // reference from the values before they are overwritten
            std::vector<double> gv = gp->values(), yv = yp->values(), ref(gv.size());
            const int64_t R = 5, C = 7;
            for (int64_t line = 0; line < (dim == 0 ? C : R); ++line) {
                double s = 0;
                for (int64_t k = 0; k < (dim == 0 ? R : C); ++k) {
                    const int64_t i = dim == 0 ? k * C + line : line * C + k;
                    s += gv[i] * yv[i];
                }
                for (int64_t k = 0; k < (dim == 0 ? R : C); ++k) {
                    const int64_t i = dim == 0 ? k * C + line : line * C + k;
                    ref[i] = yv[i] * (gv[i] - s);
                }
            }
            uint64_t ws = 0;
            aclOpExecutor *e = nullptr;
            ASSERT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(gp->t(), yp->t(), dim, gp->t(), &ws, &e), ACLNN_SUCCESS)
                << take_error();
            ASSERT_EQ(aclnnSoftmaxBackward(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
            expect_close(gp->values(), ref, std::vector<double>(ref.size(), 1e-5), "in place dim " + std::to_string(dim));
        }
    }
}
