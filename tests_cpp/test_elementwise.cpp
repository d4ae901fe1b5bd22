// The kernel layer's elementwise driver (kernels/elementwise.h), shared by the pointwise
// kernels: every element visited exactly once on the dense fast path and the strided path, the
// `contig` flag only when every step is 1, runs consistent across views, NumPy broadcasting in
// map<>, mixed element types, and thread-count independence.
#include <atomic>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels/elementwise.h"
#include "test_util.h"

namespace kern = ag::kern;
using agtest::Shape;

namespace {

kern::View view_of(void *data, kern::DType dt, const Shape &shape, const Shape &strides) {
    kern::View v;
    v.data = static_cast<char *>(data);
    v.dtype = dt;
    v.ndim = int(shape.size());
    for (int d = 0; d < v.ndim; ++d) {
        v.shape[d] = shape[size_t(d)];
        v.stride[d] = strides[size_t(d)];
    }
    return v;
}

struct Layout {
    Shape shape, strides;
    int64_t offset;  // element offset of element 0 inside the storage
    int64_t storage;
    bool dense_same;  // expected to take the fast path when used for every view
};

const std::vector<Layout> &layouts() {
    static const std::vector<Layout> v = {
        {{}, {}, 0, 1, true},
        {{1, 1}, {7, 9}, 0, 1, true},
        {{5}, {1}, 0, 5, true},
        {{4, 6}, {6, 1}, 0, 24, true},
        {{4, 6}, {1, 4}, 0, 24, true},           // F order
        {{4, 6}, {-6, -1}, 23, 24, true},        // reversed
        {{3, 4, 5}, {1, 15, 3}, 0, 60, true},    // permuted
        {{3, 4, 5}, {20, -5, 1}, 15, 60, true},  // middle dim reversed
        {{4, 6}, {12, 2}, 0, 48, false},         // every other
        {{4, 6}, {-12, -2}, 46, 48, false},
        {{3, 1, 5}, {10, 99, 2}, 0, 30, false},
        {{300}, {3}, 0, 900, false},
        {{2, 3, 4, 5, 6}, {720, 240, 60, 12, 2}, 1, 1441, false},
        // large enough for several threads; the strided one splits runs mid-line
        {{300, 200}, {1, 300}, 0, 60000, true},
        {{200, 301}, {602, -2}, 600, 200 * 602, false},
        {{100001}, {-3}, 300000, 300001, false},
    };
    return v;
}

std::vector<int64_t> offsets(const Layout &l) {
    return agtest::view_offsets(l.shape, l.strides, 0);
}

}  // namespace

// Every element of every view visited exactly once, at the offset its index tuple gives, for
// 1 and 3 threads, on one view and on three views with different layouts of one shape.
TEST(ElementwiseDriver, VisitsEveryElementOnceWithConsistentOffsets) {
    for (int threads : {1, 3}) {
        agtest::ThreadCount tc(threads);
        for (const Layout &l : layouts()) {
            SCOPED_TRACE(agtest::shape_str(l.shape) + " strides " + agtest::shape_str(l.strides));
            std::vector<double> mem(size_t(l.storage));
            const kern::View v[1] = {view_of(mem.data() + l.offset, kern::DType::F64, l.shape, l.strides)};
            std::vector<std::atomic<int>> seen(size_t(l.storage));
            bool fast = false;
            kern::for_each_run<1>(v, [&](auto contig, const int64_t *off, const int64_t *step, int64_t n) {
                if (decltype(contig)::value) EXPECT_EQ(step[0], 1);
                fast = fast || (decltype(contig)::value && n == agtest::numel(l.shape));
                for (int64_t i = 0; i < n; ++i) seen[size_t(l.offset + off[0] + i * step[0])]++;
            });
            for (int64_t o : offsets(l)) EXPECT_EQ(seen[size_t(l.offset + o)].load(), 1) << o;
            int64_t total = 0;
            for (auto &s : seen) total += s.load();
            EXPECT_EQ(total, agtest::numel(l.shape));
            if (l.dense_same && threads == 1) EXPECT_TRUE(fast) << "dense layout not on the fast path";
        }
        // Three views of one shape, different layouts: each run's elements correspond.
        const Shape shape = {3, 4, 5};
        const std::vector<std::pair<Shape, int64_t>> lay = {{{20, 5, 1}, 0}, {{1, 3, 12}, 0}, {{-40, 10, -2}, 88}};
        std::vector<std::vector<int64_t>> mem(3, std::vector<int64_t>(120, -1));
        kern::View v[3];
        for (int k = 0; k < 3; ++k) {
            v[k] = view_of(mem[size_t(k)].data() + lay[size_t(k)].second, kern::DType::F64, shape, lay[size_t(k)].first);
            const std::vector<int64_t> offs = agtest::view_offsets(shape, lay[size_t(k)].first, lay[size_t(k)].second);
            for (size_t i = 0; i < offs.size(); ++i) mem[size_t(k)][size_t(offs[i])] = int64_t(i);  // row-major index
        }
        std::atomic<int> runs{0}, elems{0};
        kern::for_each_run<3>(v, [&](auto, const int64_t *off, const int64_t *step, int64_t n) {
            ++runs;
            for (int64_t i = 0; i < n; ++i) {
                const int64_t id0 = mem[0][size_t(off[0] + i * step[0])];
                EXPECT_EQ(mem[1][size_t(lay[1].second + off[1] + i * step[1])], id0);
                EXPECT_EQ(mem[2][size_t(lay[2].second + off[2] + i * step[2])], id0);
                ++elems;
            }
        });
        EXPECT_EQ(elems.load(), 60);
    }
}

// map<>: out = a + 2 b + 4 c with NumPy broadcasting, mixed element types, a strided and
// reversed out, stored once into half.
TEST(ElementwiseDriver, MapBroadcastsAndConvertsTypes) {
    const Shape so = {3, 4, 5};
    std::vector<double> a = {1, 2, 3, 4, 5};               // (5,)
    std::vector<float> b = {10, 20, 30, 40};               // (4, 1)
    std::vector<kern::half_t> c(3);                        // (3, 1, 1)
    for (int i = 0; i < 3; ++i) c[size_t(i)].bits = kern::float_to_half(float(100 * (i + 1)));
    std::vector<kern::half_t> out(120);
    const kern::View vo = view_of(out.data() + 119, kern::DType::F16, so, {-40, -10, -2});
    const kern::View va = view_of(a.data(), kern::DType::F64, {5}, {1});
    const kern::View vb = view_of(b.data(), kern::DType::F32, {4, 1}, {1, 1});
    const kern::View vc = view_of(c.data(), kern::DType::F16, {3, 1, 1}, {1, 1, 1});
    kern::map<double, kern::half_t, double, float, kern::half_t>(
        vo, {va, vb, vc}, [](double x, double y, double z) { return x + 2 * y + 4 * z; });
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 5; ++k) {
                const double want = a[size_t(k)] + 2 * b[size_t(j)] + 4 * 100 * (i + 1);
                EXPECT_EQ(kern::half_to_float(out[size_t(119 - 40 * i - 10 * j - 2 * k)].bits), float(want));
            }
    // odd positions (outside the view) untouched
    for (size_t p = 0; p < out.size(); p += 2) EXPECT_EQ(out[p].bits, 0) << p;
}

// common_compute_t: double if any input is double.
TEST(ElementwiseDriver, CommonComputeType) {
    static_assert(std::is_same_v<kern::common_compute_t<kern::half_t, kern::bf16_t>, float>);
    static_assert(std::is_same_v<kern::common_compute_t<float, float>, float>);
    static_assert(std::is_same_v<kern::common_compute_t<kern::half_t, double>, double>);
    static_assert(std::is_same_v<kern::common_compute_t<double, float, float>, double>);
    SUCCEED();
}

// The vector conversions of simd.h (this file compiles the portable build: SSE2 on x86-64) are
// bitwise the scalar ones of common.h: every half and bfloat16, and floats of every exponent
// with varied mantissas, NaN payloads and subnormals included.
TEST(SimdConversions, HalfAndBf16LoadsAndStoresMatchTheScalarOnes) {
    constexpr int L = kern::lanes<float>;
    for (uint32_t h0 = 0; h0 < 65536; h0 += L) {
        kern::half_t hv[L];
        kern::bf16_t bv[L];
        for (int l = 0; l < L; ++l) hv[l].bits = bv[l].bits = uint16_t(h0 + uint32_t(l));
        const kern::vf a = kern::vload<float>(hv), b = kern::vload<float>(bv);
        for (int l = 0; l < L; ++l) {
            ASSERT_EQ(kern::float_to_bits(a[l]), kern::float_to_bits(kern::half_to_float(hv[l].bits))) << h0 + l;
            ASSERT_EQ(kern::float_to_bits(b[l]), kern::float_to_bits(kern::bf16_to_float(bv[l].bits))) << h0 + l;
        }
    }
    uint32_t x = 12345;
    for (uint32_t i = 0; i < (1u << 22); i += L) {
        kern::vf v;
        for (int l = 0; l < L; ++l) {
            x = x * 1664525u + 1013904223u;
            v[l] = kern::bits_to_float(((i + uint32_t(l)) << 10) ^ (x >> 22));  // every exponent, both signs
        }
        kern::half_t ho[L];
        kern::bf16_t bo[L];
        kern::vstore(ho, v);
        kern::vstore(bo, v);
        for (int l = 0; l < L; ++l) {
            ASSERT_EQ(ho[l].bits, kern::float_to_half(v[l])) << std::hex << kern::float_to_bits(v[l]);
            ASSERT_EQ(bo[l].bits, kern::float_to_bf16(v[l])) << std::hex << kern::float_to_bits(v[l]);
        }
    }
}

// Streaming stores only into pages already in memory (common.h, stream_output): a fresh mapping's
// pages are not, until written. And only for calls too large for the last-level cache.
TEST(Elementwise, StreamsOnlyIntoLargeResidentOutputs) {
#if defined(__linux__)
    const size_t n = size_t(16) << 20;
    const int64_t big = kern::cache_bytes() + 1;
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    volatile char *c = static_cast<char *>(p);
    EXPECT_FALSE(kern::page_resident(p));
    EXPECT_FALSE(kern::stream_output(p, int64_t(n), big));
    c[0] = 1;  // as malloc's header in a fresh block: the last page is still not in memory
    EXPECT_TRUE(kern::page_resident(p));
    EXPECT_FALSE(kern::stream_output(p, int64_t(n), big));
    c[n - 1] = 1;
    EXPECT_TRUE(kern::stream_output(p, int64_t(n), big));
    EXPECT_FALSE(kern::stream_output(p, int64_t(kern::kStreamMin) - 1, big));
    EXPECT_FALSE(kern::stream_output(p, int64_t(n), kern::cache_bytes()));
    munmap(p, n);
#else
    // without mincore every page counts as in memory: large outputs stream as before
    int x = 0;
    EXPECT_TRUE(kern::page_resident(&x));
    EXPECT_TRUE(kern::stream_output(&x, kern::kStreamMin, kern::cache_bytes() + 1));
    EXPECT_FALSE(kern::stream_output(&x, kern::kStreamMin - 1, kern::cache_bytes() + 1));
#endif
}
