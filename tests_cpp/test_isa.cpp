// The per-ISA compilations of the kernels (csrc/kernels/dispatch.cpp): every operator under every
// instruction set this CPU has, at several thread counts. Within an ISA results are bitwise
// identical for any thread count (thread ranges start at arbitrary elements: vector bodies and
// partial vectors must agree); across ISAs, kernels without e^x are bitwise identical and those
// with it (FMA in the polynomial) agree to a few ulp of the compute type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ascendgrad/ascendgrad.h"
#include "kernels/cross_entropy_loss_grad.h"
#include "kernels/kl_div_backward.h"
#include "kernels/logsigmoid_backward.h"
#include "kernels/softmax_backward.h"
#include "kernels/softshrink_backward.h"

namespace {

using namespace ag::kern;
using Shape = std::vector<int64_t>;

size_t elem_size(DType t) { return t == DType::F64 || t == DType::I64 ? 8 : t == DType::F32 || t == DType::I32 ? 4 : 2; }

// A buffer of `storage` elements and a view into it.
struct Tensor {
    DType dt;
    std::vector<double> mem;  // 8-byte aligned storage
    View v;

    Tensor(DType t, const Shape &shape, Shape strides = {}, int64_t storage = -1) : dt(t) {
        if (strides.empty()) {
            strides.assign(shape.size(), 1);
            for (int i = int(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
        }
        int64_t lo = 0, hi = 0;
        for (size_t i = 0; i < shape.size(); ++i) (strides[i] < 0 ? lo : hi) += (shape[i] - 1) * strides[i];
        if (storage < 0) storage = hi - lo + 1;
        mem.assign((size_t(storage) * elem_size(t) + 7) / 8, 0.0);
        v.dtype = t;
        v.ndim = int(shape.size());
        v.data = reinterpret_cast<char *>(mem.data()) - lo * int64_t(elem_size(t));
        for (int i = 0; i < v.ndim; ++i) v.shape[i] = shape[i], v.stride[i] = strides[i];
    }
    int64_t storage() const { return int64_t(mem.size() * 8 / elem_size(dt)); }
    Tensor shifted(int64_t k) && {  // the view k elements further into the storage
        v.data += k * int64_t(elem_size(dt));
        return std::move(*this);
    }
    char *base() { return reinterpret_cast<char *>(mem.data()); }
    void set(int64_t k, double x) {  // storage element k
        char *p = base() + k * int64_t(elem_size(dt));
        switch (dt) {
            case DType::F16: store(reinterpret_cast<half_t *>(p), x); break;
            case DType::BF16: store(reinterpret_cast<bf16_t *>(p), x); break;
            case DType::F32: store(reinterpret_cast<float *>(p), x); break;
            case DType::F64: store(reinterpret_cast<double *>(p), x); break;
            case DType::I64: *reinterpret_cast<int64_t *>(p) = int64_t(x); break;
            default: *reinterpret_cast<int32_t *>(p) = int32_t(x); break;
        }
    }
    void random(std::mt19937_64 &rng, double lo, double hi) {
        std::uniform_real_distribution<double> u(lo, hi);
        for (int64_t k = 0; k < storage(); ++k) set(k, u(rng));
    }
    double get(int64_t k) const {
        const char *p = reinterpret_cast<const char *>(mem.data()) + k * int64_t(elem_size(dt));
        switch (dt) {
            case DType::F16: return load<double>(reinterpret_cast<const half_t *>(p));
            case DType::BF16: return load<double>(reinterpret_cast<const bf16_t *>(p));
            case DType::F32: return load<double>(reinterpret_cast<const float *>(p));
            default: return load<double>(reinterpret_cast<const double *>(p));
        }
    }
};

// One problem: runs an operator into `out` (fresh canary-filled storage each time).
struct Problem {
    std::string name;
    bool uses_exp;
    DType compute;
    std::function<void(Tensor &out)> run;
    std::function<Tensor()> make_out;
};

const DType kFloats[] = {DType::F16, DType::BF16, DType::F32, DType::F64};
const char *dname(DType t) {
    return t == DType::F16 ? "f16" : t == DType::BF16 ? "bf16" : t == DType::F32 ? "f32" : "f64";
}

// Inputs live as long as the problems (shared_ptr in the closures).
std::vector<Problem> problems() {
    std::vector<Problem> ps;
    std::mt19937_64 rng(42);
    auto in = [&](DType t, const Shape &s, double lo, double hi, Shape strides = {}) {
        auto p = std::make_shared<Tensor>(t, s, strides);
        p->random(rng, lo, hi);
        return p;
    };
    for (DType t : kFloats) {
        const DType c = t == DType::F64 ? DType::F64 : DType::F32;
        const std::string d = dname(t);
        // softmax: last dim (odd length: partial vectors), a middle dim, a strided (transposed) view
        for (const auto &sd : {std::pair<Shape, int>{{37, 1031}, 1}, {{5, 301, 29}, 1}, {{3, 40000}, 1}}) {
            const Shape shape = sd.first;  // (not a structured binding: lambdas capture these)
            const int dim = sd.second;
            auto g = in(t, shape, -2, 2), y = in(t, shape, 0, 0.01);
            ps.push_back({"softmax " + d + " dim " + std::to_string(dim) + " of " + std::to_string(shape[dim]), false, c,
                          [=](Tensor &o) { softmax_backward(g->v, y->v, dim, o.v); },
                          [=] { return Tensor(t, shape); }});
        }
        {
            auto g = in(t, {1031, 37}, -2, 2, {1, 1031}), y = in(t, {1031, 37}, 0, 0.01, {1, 1031});
            ps.push_back({"softmax " + d + " transposed", false, c,
                          [=](Tensor &o) { softmax_backward(g->v, y->v, 0, o.v); },
                          [=] { return Tensor(t, {1031, 37}); }});
        }
        // softmax lines holding NaN or an infinity, one source of NaN each (an input's, or the
        // default NaN of inf - inf and inf * 0), at a different lane in each line; odd length: whole
        // pairs of vectors (bfloat16), single vectors and a partial one
        {
            const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
            const int64_t rows = 30, n = 67;
            auto g = in(t, {rows, n}, -2, 2), y = in(t, {rows, n}, 0, 0.01);
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t k = r * n + (r * 13) % n;
                switch (r % 5) {
                    case 1: g->set(k, nan); break;
                    case 2: g->set(k, r % 2 ? inf : -inf); break;  // inf - inf at k, -+inf elsewhere
                    case 3: y->set(k, nan); break;
                    case 4: g->set(k, inf), y->set(k, 0.0); break;  // inf * 0 in the sum
                }
            }
            ps.push_back({"softmax " + d + " NaN and inf", false, c, [=](Tensor &o) { softmax_backward(g->v, y->v, 1, o.v); },
                          [=] { return Tensor(t, {rows, n}); }});
        }
        // log_sigmoid: contiguous and reversed-strided
        {
            auto g = in(t, {211, 199}, -3, 3), x = in(t, {211, 199}, -30, 30);
            ps.push_back({"log_sigmoid " + d, true, c, [=](Tensor &o) { log_sigmoid_backward(g->v, x->v, o.v); },
                          [=] { return Tensor(t, {211, 199}); }});
            auto gs = in(t, {199, 211}, -3, 3, {-1, 199}), xs = in(t, {199, 211}, -30, 30, {1, 199});
            ps.push_back({"log_sigmoid " + d + " strided", true, c,
                          [=](Tensor &o) { log_sigmoid_backward(gs->v, xs->v, o.v); },
                          [=] { return Tensor(t, {199, 211}); }});
        }
        // log_sigmoid at its extremes (the spec's fixed points; x past e^x's fast range), every
        // pair of them, so that each lands in every lane and in vectors with ordinary values
        {
            const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
            const std::vector<double> xs = {-inf, inf, nan, 0.0, -0.0, -1e4, 1e4, -104, 104, -88, 88, 2, -2, 1e-3};
            const std::vector<double> gs = {3.0, -1.5, inf, -inf, nan, 0.0, -0.0, 1e30};
            const int64_t n = int64_t(xs.size() * gs.size());
            auto g = std::make_shared<Tensor>(t, Shape{n}), x = std::make_shared<Tensor>(t, Shape{n});
            for (int64_t k = 0; k < n; ++k) x->set(k, xs[size_t(k) % xs.size()]), g->set(k, gs[size_t(k) / xs.size()]);
            ps.push_back({"log_sigmoid " + d + " extremes", true, c, [=](Tensor &o) { log_sigmoid_backward(g->v, x->v, o.v); },
                          [=] { return Tensor(t, {n}); }});
        }
        // outputs past kStreamMin: streaming stores after a partial vector up to the alignment
        // (the data starts at 8 bytes past an alignment; thread ranges start anywhere)
        {
            const int64_t n = kStreamMin / int64_t(elem_size(t)) + 11;
            auto g = in(t, {n}, -3, 3), x = in(t, {n}, -30, 30);
            ps.push_back({"log_sigmoid " + d + " streamed", true, c, [=](Tensor &o) { log_sigmoid_backward(g->v, x->v, o.v); },
                          [=] { return Tensor(t, {n}, {}, n + 1).shifted(1); }});
            ps.push_back({"softshrink " + d + " streamed", false, c,
                          [=](Tensor &o) { softshrink_backward(g->v, x->v, 0.5, o.v); },
                          [=] { return Tensor(t, {n}, {}, n + 1).shifted(1); }});
            auto g1 = in(t, {1}, -3, 3);  // broadcast along the run: the strided loop streams too
            ps.push_back({"softshrink " + d + " streamed, g broadcast", false, c,
                          [=](Tensor &o) { softshrink_backward(g1->v, x->v, 0.5, o.v); },
                          [=] { return Tensor(t, {n}, {}, n + 3).shifted(3); }});
        }
        // softshrink: broadcast g against x, mixed with f32
        {
            auto g = in(t, {211, 1}, -3, 3), x = in(DType::F32, {211, 199}, -1, 1);
            const DType cc = t == DType::F64 ? DType::F64 : DType::F32;
            ps.push_back({"softshrink " + d + " broadcast", false, cc,
                          [=](Tensor &o) { softshrink_backward(g->v, x->v, 0.5, o.v); },
                          [=] { return Tensor(t, {211, 199}); }});
        }
        // kl_div: 0-d g (batchmean), log_target and not; a reduction over a broadcast dim
        for (bool lt : {false, true}) {
            auto g = in(t, {}, 0.5, 1.5), tg = in(t, {211, 199}, -3, 1);
            auto self = std::make_shared<Tensor>(t, Shape{211, 199});
            ps.push_back({"kl_div " + d + (lt ? " log_target" : ""), lt, c,
                          [=](Tensor &o) {
                              KlArgs a;
                              a.ndim = 2, a.shape[0] = 211, a.shape[1] = 199;
                              a.log_target = lt, a.f64 = t == DType::F64, a.scale = 1.0 / 211;
                              kl_div_backward(g->v, tg->v, o.v, a);
                          },
                          [=] { return Tensor(t, {211, 199}); }});
        }
        // cross-entropy: smoothing with and without weights, per-row grads, z-loss
        for (int mode = 0; mode < 3; ++mode) {
            const int64_t n = 97, classes = 523;
            auto lp = in(t, {n, classes}, -12, 0), gl = in(t, {n}, 0.1, 1), lse = in(t, {n}, 1, 3);
            auto w = in(DType::F32, {classes}, 0.5, 2);
            auto tgt = std::make_shared<Tensor>(DType::I64, Shape{n});
            for (int64_t i = 0; i < n; ++i) tgt->set(i, i % 7 == 3 ? -100 : double((i * 131) % classes));
            ps.push_back({"cross_entropy " + d + " mode " + std::to_string(mode), true, c,
                          [=](Tensor &o) {
                              CeArgs a;
                              a.grad_loss = gl->v, a.log_prob = lp->v, a.target = tgt->v, a.out = o.v;
                              a.reduction = CeReduction::None;
                              a.label_smoothing = mode == 0 ? 0.0 : 0.1;
                              if (mode == 2) a.weight = w->v, a.lse = lse->v, a.zloss_scale = 0.25;
                              const CeScan s = cross_entropy_scan(a.target, a.weight, classes, a.ignore_index);
                              cross_entropy_loss_grad(a, s);
                          },
                          [=] { return Tensor(t, {n, classes}); }});
        }
    }
    return ps;
}

std::vector<Isa> available_isas() {
    std::vector<Isa> r;
    const Isa before = active_isa();
    for (Isa i : {Isa::Baseline, Isa::Avx2, Isa::Avx512, Isa::Neon})
        if (set_isa(i)) r.push_back(i);
    set_isa(before);
    return r;
}

// Output storage bytes of p under `isa` with `threads` threads.
std::vector<double> run(const Problem &p, Isa isa, int threads) {
    const Isa before = active_isa();
    EXPECT_TRUE(set_isa(isa));
    ascendgradSetNumThreads(threads);
    Tensor o = p.make_out();
    for (int64_t k = 0; k < o.storage(); ++k) o.set(k, 7.0);
    p.run(o);
    ascendgradSetNumThreads(0);
    set_isa(before);
    return o.mem;
}

TEST(Isa, SelectionAndNames) {
    const std::vector<Isa> isas = available_isas();
    ASSERT_FALSE(isas.empty());
    EXPECT_EQ(isas.front(), Isa::Baseline);  // the portable build is always there
    EXPECT_STREQ(isa_name(Isa::Baseline), "baseline");
    EXPECT_STREQ(isa_name(Isa::Avx2), "avx2");
    EXPECT_STREQ(isa_name(Isa::Avx512), "avx512");
    EXPECT_STREQ(isa_name(Isa::Neon), "neon");
    EXPECT_STREQ(ascendgradKernelIsa(), isa_name(active_isa()));
    const Isa before = active_isa();
    for (Isa i : isas) {
        ASSERT_TRUE(set_isa(i));
        EXPECT_EQ(active_isa(), i);
        EXPECT_STREQ(ascendgradKernelIsa(), isa_name(i));
    }
    set_isa(before);
}

TEST(Isa, EveryIsaBitwiseIdenticalForAnyThreadCount) {
    for (const Problem &p : problems())
        for (Isa isa : available_isas()) {
            const std::vector<double> one = run(p, isa, 1);
            for (int threads : {2, 3, 7})
                EXPECT_EQ(0, std::memcmp(one.data(), run(p, isa, threads).data(), one.size() * 8))
                    << p.name << " under " << isa_name(isa) << " with " << threads << " threads";
        }
}

TEST(Isa, IsasAgree) {
    const std::vector<Isa> isas = available_isas();
    for (const Problem &p : problems()) {
        const std::vector<double> base = run(p, Isa::Baseline, 2);
        Tensor view = p.make_out();
        const double eps = p.compute == DType::F64 ? 0x1p-52 : 0x1p-23;
        for (Isa isa : isas) {
            std::vector<double> got = run(p, isa, 2);
            if (!p.uses_exp) {
                EXPECT_EQ(0, std::memcmp(base.data(), got.data(), base.size() * 8))
                    << p.name << ": " << isa_name(isa) << " differs from baseline";
                continue;
            }
            // e^x with and without FMA: a few ulp of the compute type, then one rounding into
            // the output (which may then land one output ulp apart)
            Tensor a = p.make_out(), b = p.make_out();
            a.mem = base, b.mem = got;
            const double out_eps = view.dt == DType::F16 ? 0x1p-10 : view.dt == DType::BF16 ? 0x1p-7 : eps;
            // (plus 16 ulp of the largest magnitude: cross-entropy's target column is a difference)
            double scale = 0;
            for (int64_t k = 0; k < a.storage(); ++k) scale = std::max(scale, std::fabs(a.get(k)));
            int bad = 0;
            for (int64_t k = 0; k < a.storage(); ++k) {
                const double x = a.get(k), y = b.get(k);
                if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // (x == y: infinities too)
                const double tol = (16 * eps + out_eps) * std::fabs(x) + 16 * eps * scale;
                if (!(std::fabs(x - y) <= tol) && bad++ < 5)
                    ADD_FAILURE() << p.name << " under " << isa_name(isa) << ": element " << k << " " << y
                                  << " vs baseline " << x;
            }
            EXPECT_EQ(bad, 0) << p.name << " under " << isa_name(isa);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The vector conversions of every ISA's compilation (simd.h: vload, vstore: F16C, AVX-512, NEON's
// FCVTL/FCVTN, the bfloat16 shifts) bitwise against the scalar ones of common.h, NaN payloads and
// signs included. They run through an operator that passes its input through: softshrink's
// gradient outside the band (x = 1, lambda = 0) is g, converted from g's dtype into out's.

template <class Out, class In>
std::vector<Out> pass_through(Isa isa, DType from, DType to, const std::vector<In> &in) {
    const int64_t n = int64_t(in.size());
    Tensor g(from, {n}), x(DType::F32, {n}), o(to, {n});
    std::memcpy(g.base(), in.data(), in.size() * sizeof(In));
    for (int64_t k = 0; k < n; ++k) x.set(k, 1.0);
    const Isa before = active_isa();
    EXPECT_TRUE(set_isa(isa));
    softshrink_backward(g.v, x.v, 0.0, o.v);
    set_isa(before);
    std::vector<Out> r(in.size());
    std::memcpy(r.data(), o.base(), r.size() * sizeof(Out));
    return r;
}

template <class Out, class In, class Scalar>
void expect_bitwise(const char *what, Isa isa, const std::vector<In> &in, const std::vector<Out> &got, Scalar scalar) {
    int bad = 0;
    for (size_t k = 0; k < in.size(); ++k) {
        const Out want = scalar(in[k]);
        if (got[k] != want && bad++ < 5)
            ADD_FAILURE() << what << " under " << isa_name(isa) << ": 0x" << std::hex << uint64_t(in[k]) << " -> 0x"
                          << uint64_t(got[k]) << ", scalar 0x" << uint64_t(want);
    }
    EXPECT_EQ(bad, 0) << what << " under " << isa_name(isa);
}

TEST(Isa, VectorConversionsBitwiseAsScalar) {
    std::vector<uint16_t> all16(0x10000);
    for (uint32_t h = 0; h < 0x10000; ++h) all16[h] = uint16_t(h);
    // float -> half: every half exactly, every midpoint between neighbours (the last finite one
    // and 65536: the overflow threshold) and the floats either side of it, both signs; NaNs with
    // every 10-bit top payload (kept) over low bits (dropped), quiet and signalling; float
    // subnormals, the largest float, infinities.
    std::vector<uint32_t> to_half;
    for (uint32_t h = 0; h < 0x7c00; ++h) {
        const float lo = half_to_float(uint16_t(h)), hi = h == 0x7bff ? 65536.0f : half_to_float(uint16_t(h + 1));
        const uint32_t mid = float_to_bits((lo + hi) / 2);  // exact: 12 significant bits
        for (uint32_t sign : {0u, 0x80000000u})
            for (uint32_t u : {float_to_bits(lo), mid - 1, mid, mid + 1}) to_half.push_back(sign | u);
    }
    for (uint32_t sign : {0u, 0x80000000u}) {
        for (uint32_t top = 0; top < 0x400; ++top)
            for (uint32_t low : {0u, 1u, 0x1000u, 0x1fffu})
                if (top | low) to_half.push_back(sign | 0x7f800000u | top << 13 | low);
        for (uint32_t u : {0x00000001u, 0x007fffffu, 0x7f7fffffu, 0x7f800000u}) to_half.push_back(sign | u);
    }
    // float -> bfloat16: every pattern above every bfloat16 (NaNs and infinities too): exact,
    // just above, just below, on and either side of the midpoint, just below the next one
    std::vector<uint32_t> to_bf16;
    for (uint32_t b = 0; b < 0x10000; ++b)
        for (uint32_t low : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) to_bf16.push_back(b << 16 | low);

    for (Isa isa : available_isas()) {
        expect_bitwise("half -> float", isa, all16, pass_through<uint32_t>(isa, DType::F16, DType::F32, all16),
                       [](uint16_t h) { return float_to_bits(half_to_float(h)); });
        expect_bitwise("bfloat16 -> float", isa, all16, pass_through<uint32_t>(isa, DType::BF16, DType::F32, all16),
                       [](uint16_t b) { return float_to_bits(bf16_to_float(b)); });
        expect_bitwise("float -> half", isa, to_half, pass_through<uint16_t>(isa, DType::F32, DType::F16, to_half),
                       [](uint32_t u) { return float_to_half(bits_to_float(u)); });
        expect_bitwise("float -> bfloat16", isa, to_bf16, pass_through<uint16_t>(isa, DType::F32, DType::BF16, to_bf16),
                       [](uint32_t u) { return float_to_bf16(bits_to_float(u)); });
    }
}

// Softshrink where g, x and out share a half type selects on their raw bits (no conversion): every
// x bit pattern against every g pattern (x rotated against g), at band edges on, between and past
// the halves, bitwise as the conversion to float, the select and the rounding back would give.
template <class T> uint16_t softshrink_through_float(uint16_t gb, uint16_t xb, float lam) {
    T g{gb}, x{xb}, o;
    const float gf = load<float>(&g), xf = load<float>(&x);
    store(&o, xf != xf ? xf : std::fabs(xf) > lam ? gf : 0.0f);
    return o.bits;
}

TEST(Isa, SoftshrinkOnHalfBitsAsThroughFloat) {
    const int64_t n = 0x10000;
    const double lambdas[] = {0.0, 0.5, 0x1p-24, 0x1.8p-24, 1e-40, 3.0000001, 65504.0, 65519.0, 65520.0, 1e30,
                              std::numeric_limits<double>::infinity()};
    for (Isa isa : available_isas())
        for (DType dt : {DType::F16, DType::BF16})
            for (double lambd : lambdas)
                for (int64_t rot : {0, 1, 0x7c01, 0x8000}) {
                    Tensor g(dt, {n}), x(dt, {n}), o(dt, {n});
                    std::vector<uint16_t> gb(n), xb(n), got(n);
                    for (int64_t k = 0; k < n; ++k) gb[k] = uint16_t(k), xb[k] = uint16_t(k + rot);
                    std::memcpy(g.base(), gb.data(), 2 * n);
                    std::memcpy(x.base(), xb.data(), 2 * n);
                    const Isa before = active_isa();
                    ASSERT_TRUE(set_isa(isa));
                    softshrink_backward(g.v, x.v, lambd, o.v);
                    set_isa(before);
                    std::memcpy(got.data(), o.base(), 2 * n);
                    int bad = 0;
                    for (int64_t k = 0; k < n; ++k) {
                        const uint16_t want = dt == DType::F16 ? softshrink_through_float<half_t>(gb[k], xb[k], float(lambd))
                                                               : softshrink_through_float<bf16_t>(gb[k], xb[k], float(lambd));
                        if (got[k] != want && bad++ < 5)
                            ADD_FAILURE() << isa_name(isa) << (dt == DType::F16 ? " f16" : " bf16") << " lambd " << lambd
                                          << ": g 0x" << std::hex << gb[k] << " x 0x" << xb[k] << " -> 0x" << got[k]
                                          << ", through float 0x" << want;
                    }
                    EXPECT_EQ(bad, 0);
                }
}

// Softmax into any output dtype and layout: each element its compute-type value rounded once (the
// value of a C-order output in the compute type: the output's layout changes no sum), on every
// ISA, for a last, middle and first dim and for C-order, F-order and strided outputs; every element
// written, also where the output is large enough to be streamed (an output of 8 MiB and more,
// already in memory: canary-filled).
TEST(Isa, SoftmaxIntoAnyDtypeAsItsComputeTypeRounded) {
    std::mt19937_64 rng(7);
    struct Case {
        Shape shape;
        int dim;
        bool large;
    };
    const Case cases[] = {{{37, 45}, 1, false}, {{45, 37}, 0, false}, {{3, 20, 17}, 1, false}, {{1100, 1000}, 0, true}};
    for (Isa isa : available_isas())
        for (DType t : kFloats) {
            const DType c = t == DType::F64 ? DType::F64 : DType::F32;
            for (const Case &k : cases) {
                Tensor g(t, k.shape), y(t, k.shape), want(c, k.shape);
                g.random(rng, -2, 2);
                y.random(rng, 0, 0.01);
                const Isa before = active_isa();
                ASSERT_TRUE(set_isa(isa));
                softmax_backward(g.v, y.v, k.dim, want.v);
                for (DType o : kFloats) {
                    if (k.large && elem_size(o) < 8) continue;  // (streamed: the 8-byte outputs suffice)
                    const Shape &sh = k.shape;
                    const int64_t rows = sh.front(), cols = sh.back(), mid = sh.size() == 3 ? sh[1] : 1;
                    const Shape f_order = sh.size() == 2 ? Shape{1, rows} : Shape{1, rows, rows * mid};
                    const Shape strided = sh.size() == 2 ? Shape{2 * cols, 2} : Shape{2 * mid * cols, 2 * cols, 2};
                    for (const auto &[layout, strides] : {std::pair<const char *, Shape>{"C order", {}},
                                                          {"F order", f_order}, {"strided", strided}}) {
                        Tensor out(o, sh, strides);
                        for (int64_t e = 0; e < out.storage(); ++e) out.set(e, 7.0);
                        softmax_backward(g.v, y.v, k.dim, out.v);
                        Tensor r(o, {1});  // want's element rounded into o
                        int bad = 0;
                        for (int64_t e = 0, n = rows * mid * cols; e < n; ++e) {
                            int64_t at = 0;  // e's offset in out (want is C order)
                            for (int64_t i = int64_t(sh.size()), rest = e; i-- > 0; rest /= sh[i])
                                at += rest % sh[i] * out.v.stride[i];
                            r.set(0, want.get(e));
                            const double got = out.get(at);
                            if (!(got == r.get(0)) && bad++ < 3)
                                ADD_FAILURE() << isa_name(isa) << " " << dname(t) << " -> " << dname(o) << " dim " << k.dim
                                              << " " << layout << ": element " << e << " " << got
                                              << ", want " << r.get(0);
                        }
                        EXPECT_EQ(bad, 0);
                    }
                }
                set_isa(before);
            }
        }
}

}  // namespace
