// Fixed-width SIMD for the kernels, over GCC/Clang vector extensions of the build's native width
// (SSE2: 16 bytes, AVX2: 32, AVX-512: 64, aarch64: 16; AG_NEON: NEON instructions for FMA and the
// half conversions). Within one build an element gets the same arithmetic in every lane and in a
// partial vector (a run's tail, padded with zeros), so results never depend on where a thread's
// range starts: there is no separate formula for a loop's tail. Lane by lane the operations are
// plain IEEE ones and conversions are exact or correctly rounded, bitwise as the scalar ones of
// common.h; FMA only where asked for (fmadd; kernels build with -ffp-contract=off), so only
// kernels computing e^x may differ between ISAs. Reductions must not depend on the width
// (softmax: a fixed 16 partial sums, kept in 16 / lanes vectors).
//
//   vec_t<C>, lanes<C>        the vector of compute type C (float or double; int16_t: raw half
//                             or bfloat16 bits, loaded and stored unconverted) and its width
//   vload<C>(p)               lanes<C> elements of any element type, converted to C
//   vstore(p, v)              v rounded once into p's element type
//   vstore2                   two vectors, one after the other
//   vload_run / vstore_run    the first m <= lanes elements of a run with element step s
//                             (1: contiguous, 0: one element broadcast, else gathered)
//   vabs, vnabs, select, vexp |x|, -|x|, m ? a : b lane-wise, e^x
//   vf2, vexp2                two vectors' e^x side by side (where that pays: kExpPairs)
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(AG_NEON)
#include <arm_neon.h>
#endif

#include "common.h"

namespace ag::kern {
inline namespace AG_ISA_NS {

#define AG_INLINE inline __attribute__((always_inline))

// Elements per chunk of a loop run in two passes (an L1 buffer of intermediates between them):
// see elementwise.h, staged.
constexpr int64_t kStage = 256;

#if defined(__AVX512F__)
#define AG_VEC_BYTES 64
#elif defined(__AVX2__)
#define AG_VEC_BYTES 32
#else
#define AG_VEC_BYTES 16
#endif
typedef float vf __attribute__((vector_size(AG_VEC_BYTES)));
typedef double vd __attribute__((vector_size(AG_VEC_BYTES)));
typedef int32_t vi __attribute__((vector_size(AG_VEC_BYTES)));
typedef int64_t vl __attribute__((vector_size(AG_VEC_BYTES)));
typedef uint32_t vu __attribute__((vector_size(AG_VEC_BYTES)));
typedef uint16_t vh __attribute__((vector_size(AG_VEC_BYTES / 2)));  // raw half or bfloat16 values
typedef int16_t vs __attribute__((vector_size(AG_VEC_BYTES)));       // a register of raw 16-bit values

template <class C> struct simd_of;
template <> struct simd_of<float> { using V = vf; using M = vi; };
template <> struct simd_of<double> { using V = vd; using M = vl; };
// int16_t as a compute type: half or bfloat16 values as raw bits, for ops that only compare and
// select (map then loads and stores them unconverted)
template <> struct simd_of<int16_t> { using V = vs; using M = vs; };
template <class C> using vec_t = typename simd_of<C>::V;
template <class C> using mask_t = typename simd_of<C>::M;
template <class C> constexpr int lanes = int(AG_VEC_BYTES / sizeof(C));

template <class V> struct elem_of;
template <> struct elem_of<vf> { using type = float; };
template <> struct elem_of<vd> { using type = double; };
template <> struct elem_of<vs> { using type = int16_t; };

template <class V> AG_INLINE V splat(typename elem_of<V>::type x) {
    V v;  // not V{} + x: that turns -0 into +0
    for (int l = 0; l < int(sizeof(V) / sizeof(x)); ++l) v[l] = x;
    return v;
}

AG_INLINE vf vabs(vf v) { return (vf)((vi)v & 0x7fffffff); }
AG_INLINE vd vabs(vd v) { return (vd)((vl)v & 0x7fffffffffffffffLL); }

// Makes v opaque to the optimizer at this point (no instruction; results never depend on it).
template <class V> AG_INLINE void opaque(V &v) {
#if AG_VEC_BYTES == 64 && !defined(AG_AVX512_EMULATED)  // (tests_cpp/avx512_emulation.h)
    __asm__("" : "+v"(v));
#else
    (void)v;
#endif
}

// m ? a : b per lane, for a comparison's mask m (all bits set or clear): one blend. (AVX-512:
// a and b are loaded first, whole: the compiler would otherwise fold the load of one of them into
// a masked load, which cannot start before the mask, i.e. before the other input's data, is
// there; from memory the loads then run one after the other, at half the bandwidth.)
AG_INLINE vf select(vi m, vf a, vf b) {
    opaque(a);
    opaque(b);
    return m ? a : b;
}
AG_INLINE vd select(vl m, vd a, vd b) {
    opaque(a);
    opaque(b);
    return m ? a : b;
}

// -|x|: one OR of the sign bit
AG_INLINE vf vnabs(vf v) { return (vf)((vi)v | (vi)splat<vf>(-0.0f)); }
AG_INLINE vd vnabs(vd v) { return (vd)((vl)v | (vl)splat<vd>(-0.0)); }

// a * b + c, fused (one rounding) where the build has FMA, else two roundings: results may differ
// between ISAs, never between lanes or uses within one build.
AG_INLINE vf fmadd(vf a, vf b, vf c) {
#if AG_VEC_BYTES == 64
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__) && AG_VEC_BYTES == 32
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#elif defined(AG_NEON)
    return (vf)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b);
#else
    return a * b + c;
#endif
}

// max(a, x) and min(a, x) per lane that keep a NaN x (the comparison is false, x is taken): x86's
// max and min are exactly that (the second operand where unordered or equal); NEON's are not
AG_INLINE vf vmax_keep_nan(vf a, vf x) {
#if AG_VEC_BYTES == 64
    return (vf)_mm512_maskz_max_ps(0xffff, (__m512)a, (__m512)x);  // (maskz: GCC 12 warns on the plain one)
#elif AG_VEC_BYTES == 32
    return (vf)_mm256_max_ps((__m256)a, (__m256)x);
#elif defined(__SSE2__)
    return (vf)_mm_max_ps((__m128)a, (__m128)x);
#else
    return select(a > x, a, x);
#endif
}
AG_INLINE vf vmin_keep_nan(vf a, vf x) {
#if AG_VEC_BYTES == 64
    return (vf)_mm512_maskz_min_ps(0xffff, (__m512)a, (__m512)x);
#elif AG_VEC_BYTES == 32
    return (vf)_mm256_min_ps((__m256)a, (__m256)x);
#elif defined(__SSE2__)
    return (vf)_mm_min_ps((__m128)a, (__m128)x);
#else
    return select(a < x, a, x);
#endif
}

// Two float vectors computed side by side: an e^x is a chain of ~16 dependent steps, and without
// FMA (the SSE2 build) the CPU's window holds too few loop iterations to overlap their chains; two
// chains interleaved in program order run near the ports' speed (Zen 3, one thread, LogSigmoid's
// e^x: 21 -> 19 TSC cycles per 8 elements; 29 -> 19 in this VM's slower phases). For loops of
// e^x and stage ops (elementwise.h, staged): only what those use is defined for vf2, each
// operation on both vectors, the first's before the second's.
struct vf2 {
    vf v[2];
};
AG_INLINE vf part(vf x, int) { return x; }
AG_INLINE float part(float x, int) { return x; }
AG_INLINE vf part(const vf2 &x, int i) { return x.v[i]; }
template <class... A>
using pair_result = std::enable_if_t<(std::is_same_v<A, vf2> || ...), vf2>;  // an operation that has a vf2
template <class A, class B> AG_INLINE pair_result<A, B> operator+(A a, B b) {
    return {{part(a, 0) + part(b, 0), part(a, 1) + part(b, 1)}};
}
template <class A, class B> AG_INLINE pair_result<A, B> operator-(A a, B b) {
    return {{part(a, 0) - part(b, 0), part(a, 1) - part(b, 1)}};
}
template <class A, class B> AG_INLINE pair_result<A, B> operator*(A a, B b) {
    return {{part(a, 0) * part(b, 0), part(a, 1) * part(b, 1)}};
}
template <class A, class B, class C> AG_INLINE pair_result<A, B, C> fmadd(A a, B b, C c) {
    return {{fmadd(part(a, 0), part(b, 0), part(c, 0)), fmadd(part(a, 1), part(b, 1), part(c, 1))}};
}
AG_INLINE vf2 vnabs(vf2 x) { return {{vnabs(x.v[0]), vnabs(x.v[1])}}; }

// e^r of vexp for x in [-104, 88.8] (X: vf or vf2); t holds n in its low mantissa bits (t = x / ln 2
// + kExpRound). A function, not a lambda in vexp: GCC left such a lambda out of line in cross
// entropy's loops (a call per vector, x and t through memory).
constexpr float kExpRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer (ties to even)
template <class X> AG_INLINE X exp_reduced(X x, X &t) {
    const vf round = splat<vf>(kExpRound);
    t = fmadd(x, splat<vf>(1.44269504088896341f), round);
    const X n = t - round;
    X r = fmadd(n, splat<vf>(-0.693359375f), x);  // exact: n has <= 8 bits, the constant 9
    r = fmadd(n, splat<vf>(2.12194440e-4f), r);
    const X r2 = r * r;
    const X lo = fmadd(splat<vf>(1.6666521132e-1f), r, splat<vf>(4.9999994040e-1f));
    X hi = fmadd(splat<vf>(8.3687454462e-3f), r, splat<vf>(4.1668388993e-2f));
    hi = fmadd(splat<vf>(1.3814540580e-3f), r2, hi);
    return fmadd(fmadd(hi, r2, lo), r2, r) + 1.0f;
}

#if AG_VEC_BYTES != 64 && defined(__SSE2__)
// vexp's short path: where every lane's p 2^n is normal (x in [-86.5, 88]: p in [0.7, 1.5), n in
// [-125, 127]), the clamps change nothing and n is added to p's exponent: the same bits as the
// multiplications, in fewer operations. n << 23 is t's low bits shifted (those of kExpRound shift
// out); NaN fails the test.
template <bool NonPos> AG_INLINE vi exp_fast_lanes(vf x) {
    return NonPos ? (x >= -86.5f) : (x >= -86.5f) & (x <= 88.0f);
}
AG_INLINE vf exp_scale_fast(vf p, vf t) { return (vf)((vi)p + ((vi)t << 23)); }
// Every lane of a comparison's mask set (the fast paths' test, float and double)
#if AG_VEC_BYTES == 32
AG_INLINE bool all_lanes(vi m) { return _mm256_movemask_ps((__m256)m) == 0xff; }
AG_INLINE bool all_lanes(vl m) { return _mm256_movemask_pd((__m256d)m) == 0xf; }
#else
AG_INLINE bool all_lanes(vi m) { return _mm_movemask_ps((__m128)m) == 0xf; }
AG_INLINE bool all_lanes(vl m) { return _mm_movemask_pd((__m128d)m) == 0x3; }
#endif
#endif

// e^x in float, about 1 ulp: n = round(x / ln 2), r = x - n ln 2 (two constants), e^r by the
// polynomial 1 + r + r^2 p(r), p of degree 4, its coefficients fitted to e^r's relative error on
// |r| <= ln 2 / 2 (minimax, in float: 3.6e-9, a tenth of float's half ulp); p as (c0 + c1 r) +
// r^2 (c2 + c3 r + c4 r^2), two multiply-adds shorter a chain than Horner's (1-4% fewer cycles in
// log_sigmoid, Zen 3). Cephes' p of degree 5 is one multiply-add more for nearly the same results
// (every 8th float in [-103, 88.7] against exp in double: without FMA max 0.985 ulp here, 0.974
// Cephes', 0.81% not correctly rounded; with FMA 1.014 / 1.002 ulp, 0.78% / 0.77%). 2^n applied so that
// results in the subnormal range round once. NaN stays NaN, -inf gives 0, +inf gives inf.
// NonPos: for x <= 0 (or NaN) only, fewer operations (no upper clamp; without AVX-512, one scale
// factor instead of two).
// V: vf, or vf2 (two vectors side by side on the fast path, else one after the other).
template <bool NonPos = false, class V> AG_INLINE V vexp(V x) {
    if constexpr (std::is_same_v<V, vf2>) {
#if AG_VEC_BYTES == 16 && defined(__SSE2__)
        if (__builtin_expect(all_lanes(exp_fast_lanes<NonPos>(x.v[0]) & exp_fast_lanes<NonPos>(x.v[1])), 1)) {
            vf2 t;
            const vf2 p = exp_reduced(x, t);
            return {{exp_scale_fast(p.v[0], t.v[0]), exp_scale_fast(p.v[1], t.v[1])}};
        }
#endif
        return {{vexp<NonPos>(x.v[0]), vexp<NonPos>(x.v[1])}};
    } else {
        vf t;
#if AG_VEC_BYTES != 64 && defined(__SSE2__)
        if (__builtin_expect(all_lanes(exp_fast_lanes<NonPos>(x)), 1)) {
            const vf p = exp_reduced(x, t);
            return exp_scale_fast(p, t);
        }
#endif
        if constexpr (!NonPos) x = vmin_keep_nan(splat<vf>(88.8f), x);  // e^88.8 overflows to inf below
        x = vmax_keep_nan(splat<vf>(-104.0f), x);   // e^-104 rounds to 0 below
        const vf p = exp_reduced(x, t);
#if AG_VEC_BYTES == 64
        // p 2^n, rounded once: the same
        return (vf)_mm512_maskz_scalef_ps(0xffff, (__m512)p, (__m512)(t - splat<vf>(kExpRound)));
#else
        if constexpr (NonPos) {
            // n in [-150, 0]: p 2^(n + 64) is exact (normal), and * 2^-64 rounds once, as below. n + 191
            // is in t's low mantissa bits (those of kExpRound above bit 22 shift out).
            return p * (vf)(((vi)t + 191) << 23) * 0x1p-64f;
        } else {
            const vi k = __builtin_convertvector(t - splat<vf>(kExpRound), vi);
            const vi k1 = k >> 1, k2 = k - k1;
            return p * (vf)((k1 + 127) << 23) * (vf)((k2 + 127) << 23);
        }
#endif
    }
}

// Where two side by side pay: the SSE2 build (no FMA). With AVX2 no gain was measured (Zen 3).
#if AG_VEC_BYTES == 16 && defined(__SSE2__)
template <class C> constexpr bool kExpPairs = std::is_same_v<C, float>;
#else
template <class C> constexpr bool kExpPairs = false;
#endif
// e^a and e^b: side by side where kExpPairs, else one after the other
template <bool NonPos = false, class V> AG_INLINE void vexp2(V &a, V &b) {
    if constexpr (kExpPairs<typename elem_of<V>::type>) {
        const vf2 r = vexp<NonPos>(vf2{{a, b}});
        a = r.v[0];
        b = r.v[1];
    } else {
        a = vexp<NonPos>(a);
        b = vexp<NonPos>(b);
    }
}

// a / d for d in [1, 2] (or NaN): AVX-512 takes the 14-bit reciprocal and one Newton step (~1 ulp,
// not correctly rounded; a division costs more than the rest of a logsigmoid), others divide.
AG_INLINE vf div_1_2(vf a, vf d) {
#if AG_VEC_BYTES == 64
    const vf r = (vf)_mm512_maskz_rcp14_ps(0xffff, (__m512)d);
    return a * fmadd(r, fmadd(-d, r, splat<vf>(1.0f)), r);
#else
    return a / d;
#endif
}
AG_INLINE vd div_1_2(vd a, vd d) { return a / d; }

AG_INLINE vd vmax_keep_nan(vd a, vd x) {
#if AG_VEC_BYTES == 64
    return (vd)_mm512_maskz_max_pd(0xff, (__m512d)a, (__m512d)x);
#elif AG_VEC_BYTES == 32
    return (vd)_mm256_max_pd((__m256d)a, (__m256d)x);
#elif defined(__SSE2__)
    return (vd)_mm_max_pd((__m128d)a, (__m128d)x);
#else
    return select(a > x, a, x);
#endif
}
AG_INLINE vd vmin_keep_nan(vd a, vd x) {
#if AG_VEC_BYTES == 64
    return (vd)_mm512_maskz_min_pd(0xff, (__m512d)a, (__m512d)x);
#elif AG_VEC_BYTES == 32
    return (vd)_mm256_min_pd((__m256d)a, (__m256d)x);
#elif defined(__SSE2__)
    return (vd)_mm_min_pd((__m128d)a, (__m128d)x);
#else
    return select(a < x, a, x);
#endif
}

AG_INLINE vd fmadd(vd a, vd b, vd c) {
#if AG_VEC_BYTES == 64
    return (vd)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
#elif defined(__FMA__) && AG_VEC_BYTES == 32
    return (vd)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#elif defined(AG_NEON)
    return (vd)vfmaq_f64((float64x2_t)c, (float64x2_t)a, (float64x2_t)b);
#else
    return a * b + c;
#endif
}

// e^r of vexp(vd) for x in [-745.2, 709.79]: t holds n in its low mantissa bits (t = x / ln 2 +
// 1.5 * 2^52), r = x - n ln 2 (fdlibm's two constants, the first with n ln2_hi exact), e^r = 1 + (r +
// r^2 q(r)), q of degree 10 fitted to e^r's relative error on |r| <= ln 2 / 2 (2^-60.3 with the
// coefficients rounded to double; the Taylor series needs degree 11 for 2^-57.7). q by Estrin's
// scheme: less than half Horner's chain of dependent operations (which outgrew the out-of-order
// window, above all with a sibling hyperthread sharing it), as many operations.
constexpr double kExpRoundD = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
AG_INLINE vd exp_reduced(vd x, vd &t) {
    const vd round = splat<vd>(kExpRoundD);
    t = fmadd(x, splat<vd>(1.4426950408889634074), round);
    const vd n = t - round;
    vd r = fmadd(n, splat<vd>(-6.93147180369123816490e-01), x);
    r = fmadd(n, splat<vd>(-1.90821492927058770002e-10), r);
    const vd r2 = r * r, r4 = r2 * r2;
    const vd a0 = fmadd(splat<vd>(0.16666666666666682), r, splat<vd>(0.5));
    const vd a1 = fmadd(splat<vd>(0.008333333333317048), r, splat<vd>(0.041666666666666095));
    const vd a2 = fmadd(splat<vd>(0.00019841269896350727), r, splat<vd>(0.0013888888889115449));
    const vd a3 = fmadd(splat<vd>(2.7557234895686726e-06), r, splat<vd>(2.4801586926855206e-05));
    const vd a4 = fmadd(splat<vd>(2.511202484250606e-08), r, splat<vd>(2.7557581746199475e-07));
    const vd b2 = fmadd(splat<vd>(2.08266360455684e-09), r2, a4);
    const vd b = fmadd(fmadd(a3, r2, a2), r4, fmadd(a1, r2, a0));
    const vd q = fmadd(b2, r4 * r4, b);
    return fmadd(q, r2, r) + 1.0;
}

// e^x in double, about 1 ulp (exp_reduced). Where every lane's result is normal (x in [-708, 709]:
// n in [-1021, 1023]) n is added to e^r's exponent (x86 without AVX-512: fewer operations than the
// general path, whose 64-bit shifts SSE2 and AVX2 lack); else 2^n is applied so that results in the
// subnormal range round once: by vscalefpd (AVX-512), else in two halves. NaN stays NaN, -inf gives
// 0, +inf gives inf. (NonPos: as the float one's: x <= 0 or NaN.)
template <bool NonPos = false> AG_INLINE vd vexp(vd x) {
    vd t;
#if AG_VEC_BYTES != 64 && defined(__SSE2__)
    const vl fast = NonPos ? (vl)(x >= -708.0) : (vl)((x >= -708.0) & (x <= 709.0));
    if (__builtin_expect(all_lanes(fast), 1)) {
        const vd p = exp_reduced(x, t);
        return (vd)((vl)p + ((vl)t << 52));  // (t's bits above n shift out)
    }
#endif
    if constexpr (!NonPos) x = vmin_keep_nan(splat<vd>(709.79), x);  // e^709.79 overflows to inf below
    x = vmax_keep_nan(splat<vd>(-745.2), x);                          // e^-745.2 rounds to 0 below
    const vd p = exp_reduced(x, t);
#if AG_VEC_BYTES == 64
    // p 2^n in one rounding: the bits of the two halves, in one instruction
    return (vd)_mm512_maskz_scalef_pd(0xff, (__m512d)p, (__m512d)(t - splat<vd>(kExpRoundD)));
#else
    const vl k = (vl)t - (vl)splat<vd>(kExpRoundD);  // n as an integer: t's low mantissa bits
    const vl k1 = k >> 1, k2 = k - k1;
    return p * (vd)((k1 + 1023) << 52) * (vd)((k2 + 1023) << 52);
#endif
}

// e^x of one element computed as one lane of vexp: for the few scalar uses next to vector loops.
inline float exp1(float x) { return vexp(splat<vf>(x))[0]; }
inline double exp1(double x) { return vexp(splat<vd>(x))[0]; }

// ---- loads: lanes<C> contiguous elements converted to C ----

template <class C, class T> AG_INLINE vec_t<C> vload(const T *p) {
    vec_t<C> v;
    if constexpr (std::is_same_v<C, T>) {
        std::memcpy(&v, p, sizeof v);
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<T, bf16_t>) {
#if AG_VEC_BYTES == 64
        // element i into word 2i + 1 (lane i's high half), the even words zeroed: one permute where
        // a zero extension and a shift took two (bf16 softmax in cache 5% faster on Zen 4)
        const __m512i to_high = _mm512_setr_epi32(0, 1 << 16, 2 << 16, 3 << 16, 4 << 16, 5 << 16, 6 << 16, 7 << 16, 8 << 16,
                                                  9 << 16, 10 << 16, 11 << 16, 12 << 16, 13 << 16, 14 << 16, 15 << 16);
        v = (vf)_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, to_high,
                                               _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))));
#elif AG_VEC_BYTES == 32
        v = (vf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))), 16);
#elif defined(AG_NEON)
        v = (vf)vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t *>(p)), 16);
#elif defined(__SSE2__)
        // into each lane's high half: one unpack with zeros
        v = (vf)_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
#else
        vh h;
        std::memcpy(&h, p, sizeof h);
        v = (vf)(__builtin_convertvector(h, vu) << 16);
#endif
#if AG_VEC_BYTES == 64
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<T, half_t>) {
        v = (vf)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
#elif AG_VEC_BYTES == 32 && defined(__F16C__)
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<T, half_t>) {
        v = (vf)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
#elif defined(AG_NEON)
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<T, half_t>) {
        // FCVTL: exact; a NaN keeps sign and payload and comes out quiet, as half_to_float
        v = (vf)vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t *>(p))));
#else
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<T, half_t>) {
        // half_to_float, lane-wise: exponent and mantissa shifted into place and the exponent
        // rebiased; a subnormal m 2^-24 as (1 + m 2^-10) 2^-14 - 2^-14 (exact, and no subnormal
        // float operand: those are slow on many CPUs). Without a branch on subnormals: they are
        // common in probabilities (~12% of a softmax's halves), and a test for "all lanes normal"
        // mispredicts there; a normal lane subtracts +0.
        vh h;
        std::memcpy(&h, p, sizeof h);
        const vi u = __builtin_convertvector(h, vi), em = u & 0x7fff, sign = (u & 0x8000) << 16;
        vi o = (em << 13) + (112 << 23);
#if defined(__SSE2__)
        if (__builtin_expect(_mm_movemask_ps((__m128)(em >= 0x7c00)) != 0, 0))  // inf or NaN: rare
#endif
            o = (o + ((em >= 0x7c00) & (112 << 23))) | ((em > 0x7c00) & 0x400000);  // NaN made quiet
        const vi sub = em < 0x400;
        v = (vf)((vi)((vf)(o + (sub & (1 << 23))) - (vf)(sub & 0x38800000)) | sign);
#endif
    } else {
        for (int l = 0; l < lanes<C>; ++l) v[l] = load<C>(p + l);
    }
    return v;
}

// The low 16 bits of each lane, packed (SSE2 has no unsigned 32 -> 16 bit pack: sign-extend, then
// the signed one, which is exact then)
AG_INLINE vh narrow16(vi x) {
#if AG_VEC_BYTES == 16 && defined(__SSE2__)
    const __m128i s = _mm_srai_epi32(_mm_slli_epi32((__m128i)x, 16), 16);
    const __m128i q = _mm_packs_epi32(s, s);
    vh h;
    std::memcpy(&h, &q, sizeof h);
    return h;
#else
    return __builtin_convertvector(x, vh);
#endif
}

// float_to_bf16 lane-wise, before narrowing: the bfloat16 in each lane's high half (round to
// nearest even, NaN kept quiet), the low half garbage (few operations: at 512 bits each costs one
// of two ports, and log_sigmoid is port-bound)
AG_INLINE vu bf16_round_finite(vu u) { return u + 0x7fffu + ((u >> 16) & 1u); }  // (not for NaN)
AG_INLINE vu bf16_rounded(vf v) {
    const vu u = (vu)v;
    return (vu)select(v != v, (vf)(u | 0x400000u), (vf)bf16_round_finite(u));
}
AG_INLINE vu bf16_bits(vf v) { return bf16_rounded(v) >> 16; }

// In a pair of vectors (vload_pair, below), element s (< 2 lanes<float>) is lane pair_lane(s) of
// vector pair_vector(s) (0: a, 1: b): 128-bit blocks of 8 elements, 4 to each vector.
constexpr int64_t pair_vector(int64_t s) { return s % 8 / 4; }
constexpr int64_t pair_lane(int64_t s) { return s / 8 * 4 + s % 4; }
#if defined(__SSE2__)
// bfloat16 two vectors at a time (x86): one whole-register load unpacked with zeros within its
// 128-bit blocks gives floats in the lane order 0-3, 8-11, ... (a) and 4-7, 12-15, ... (b);
// bf16_pair's pack is the unpack's inverse: about half the instructions of two vload/vstore, for
// loops where every operand and the result are in that order. Values as vstore.
#if AG_VEC_BYTES == 64
typedef __m512i vreg;
#define AG_PAIR(f) _mm512_##f
AG_INLINE void stream_reg(void *p, vreg r) { _mm512_stream_si512(reinterpret_cast<__m512i *>(p), r); }
#elif AG_VEC_BYTES == 32
typedef __m256i vreg;
#define AG_PAIR(f) _mm256_##f
AG_INLINE void stream_reg(void *p, vreg r) { _mm256_stream_si256(reinterpret_cast<__m256i *>(p), r); }
#else
typedef __m128i vreg;
#define AG_PAIR(f) _mm_##f
AG_INLINE void stream_reg(void *p, vreg r) { _mm_stream_si128(reinterpret_cast<__m128i *>(p), r); }
#endif
AG_INLINE void vload_pair(const bf16_t *p, vf &a, vf &b) {
    vreg x;
    std::memcpy(&x, p, sizeof x);
    a = (vf)AG_PAIR(unpacklo_epi16)(vreg{}, x);
    b = (vf)AG_PAIR(unpackhi_epi16)(vreg{}, x);
}
// (high halves shifted down arithmetically: the signed pack, SSE2's only one, keeps them exactly)
AG_INLINE vreg bf16_pair(vf a, vf b) {
    // Where neither vector holds a NaN (one test for both), the rounding is bf16_rounded's without
    // its NaN case: four operations a vector instead of seven, the same bits.
#if AG_VEC_BYTES == 64
    const bool nan = _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_UNORD_Q) != 0;
#elif AG_VEC_BYTES == 32
    const bool nan = _mm256_movemask_ps(_mm256_cmp_ps((__m256)a, (__m256)b, _CMP_UNORD_Q)) != 0;
#else
    const bool nan = _mm_movemask_ps(_mm_cmpunord_ps((__m128)a, (__m128)b)) != 0;
#endif
    vu ra, rb;
    if (__builtin_expect(nan, 0)) {
        ra = bf16_rounded(a);
        rb = bf16_rounded(b);
    } else {
        ra = bf16_round_finite((vu)a);
        rb = bf16_round_finite((vu)b);
    }
    return AG_PAIR(packs_epi32)(AG_PAIR(srai_epi32)((vreg)ra, 16), AG_PAIR(srai_epi32)((vreg)rb, 16));
}
#undef AG_PAIR
#endif
// Whether loops over these element types (all bfloat16) can go by pairs of vectors (x86 only).
template <class... T>
constexpr bool kBf16Pairs =
#if defined(__SSE2__)
    (std::is_same_v<T, bf16_t> && ...);
#else
    false;
#endif

template <class O, class V> AG_INLINE void vstore(O *p, V v) {
    using C = typename elem_of<V>::type;
    if constexpr (std::is_same_v<C, O>) {
        std::memcpy(p, &v, sizeof v);
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<O, bf16_t>) {
        // float_to_bf16, lane-wise
#if defined(AG_NEON)
        // narrowed by one shift-right-narrow (bits 16..31 kept)
        vst1_u16(reinterpret_cast<uint16_t *>(p), vshrn_n_u32((uint32x4_t)bf16_rounded(v), 16));
#elif AG_VEC_BYTES == 64
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), _mm512_cvtepi32_epi16((__m512i)bf16_bits(v)));
#elif AG_VEC_BYTES == 32  // (bf16_pair packs within 128-bit blocks: v's halves into the low one)
        const __m256i h = _mm256_permute4x64_epi64(bf16_pair(v, v), 0xd8);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_castsi256_si128(h));
#elif defined(__SSE2__)
        _mm_storel_epi64(reinterpret_cast<__m128i *>(p), bf16_pair(v, v));
#else
        const vh h = narrow16((vi)bf16_bits(v));
        std::memcpy(p, &h, sizeof h);
#endif
#if AG_VEC_BYTES == 64
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<O, half_t>) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT));
#elif AG_VEC_BYTES == 32 && defined(__F16C__)
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<O, half_t>) {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT));
#elif defined(AG_NEON)
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<O, half_t>) {
        // FCVTN in the default rounding (nearest even; FPCR.DN off: a NaN keeps its payload's top
        // bits and comes out quiet, as float_to_half)
        vst1_u16(reinterpret_cast<uint16_t *>(p), vreinterpret_u16_f16(vcvt_f16_f32((float32x4_t)v)));
#else
    } else if constexpr (std::is_same_v<C, float> && std::is_same_v<O, half_t>) {
        // float_to_half, lane-wise (the cases computed, one selected; overflow, inf and NaN only
        // where a lane has one: rare, and three selects on every vector otherwise). Bits above
        // the low 16 are left to narrow16.
        const vi b = (vi)v, u = b & 0x7fffffff;
        const vi sub = (vi)((vf)u + 0.5f) - 0x3f000000;                    // below 2^-14: rounds to 2^-24
        const vi nrm = (vi)(((vu)u + 0xc8000fffu + (((vu)u >> 13) & 1u)) >> 13);
        vi r = u < 0x38800000 ? sub : nrm;
#if defined(__SSE2__)
        if (__builtin_expect(_mm_movemask_ps((__m128)(u >= 0x477ff000)) != 0, 0))
#endif
        {
            const vi nan = 0x7e00 | ((u & 0x7fffff) >> 13);               // quiet, payload truncated
            r = u >= 0x477ff000 ? 0x7c00 + vi{} : r;                     // inf, or overflow
            r = u > 0x7f800000 ? nan : r;
        }
        const vh h = narrow16(r | ((b >> 16) & 0x8000));
        std::memcpy(p, &h, sizeof h);
#endif
    } else {
        for (int l = 0; l < lanes<C>; ++l) store(p + l, v[l]);
    }
}

// Contiguous bytes, n < B (B: a vector's worth of some element type, 4 to 128), between
// memory and a B-byte buffer: one masked load or store where the ISA has one for this width and
// granularity (AVX-512: any byte count; AVX2: loads of multiples of 4), else two overlapping
// fixed-size copies. (AVX2's masked store is microcoded on AMD Zen 2/3: 9 cycles a row of 10
// floats on Zen 3 against 2.3 for the copies.) A load zero-fills the buffer past n; a store
// writes no byte past n (nor reads one).
// Short runs (a line of 10 classes, a row of 12 columns) are then a few instructions, not a
// loop per element.
// (GCC, inlining a copy from or into a small buffer, misses that each branch holds n >= k and
// that a vector store filled the buffer: false -Warray-bounds / -Wmaybe-uninitialized reports
// per call site, silenced here only)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// (Helpers of these helpers are always-inline functions, not lambdas: GCC may leave a lambda out
// of line in a large translation unit, a call per vector.)
template <size_t K> AG_INLINE void copy_two(char *d, const char *s, int64_t n) {  // K <= n <= 2K bytes
    std::memcpy(d, s, K);
    std::memcpy(d + n - K, s + n - K, K);
}
template <int B> AG_INLINE void copy_short(char *d, const char *s, int64_t n) {
    if (B > 64 && n >= 64) copy_two<64>(d, s, n);
    else if (B > 32 && n >= 32) copy_two<32>(d, s, n);
    else if (B > 16 && n >= 16) copy_two<16>(d, s, n);
    else if (n >= 8) copy_two<8>(d, s, n);
    else if (n >= 4) copy_two<4>(d, s, n);
    else if (n >= 2) copy_two<2>(d, s, n);
    else if (n == 1) *d = *s;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#if AG_VEC_BYTES == 32
template <int B> AG_INLINE auto dword_mask(int64_t k) {  // the first k of B / 4 32-bit lanes
    if constexpr (B == 32) return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    else return _mm_cmpgt_epi32(_mm_set1_epi32(int(k)), _mm_setr_epi32(0, 1, 2, 3));
}
#endif
AG_INLINE uint64_t bytes_under8(const char *q, int64_t k) {  // k < 8 bytes from q, in the low bytes
    if (k >= 4) {
        uint32_t a, b;
        std::memcpy(&a, q, 4);
        std::memcpy(&b, q + k - 4, 4);
        return a | uint64_t(b) << (8 * (k - 4));  // (the overlap holds the same bytes)
    }
    if (k >= 2) {
        uint16_t a, b;
        std::memcpy(&a, q, 2);
        std::memcpy(&b, q + k - 2, 2);
        return a | uint64_t(b) << (8 * (k - 2));
    }
    return k ? uint8_t(*q) : 0u;
}
template <int B> AG_INLINE void load_short(char *buf, const char *p, int64_t n) {
#if AG_VEC_BYTES == 64
    if constexpr (B == 64) _mm512_storeu_si512(buf, _mm512_maskz_loadu_epi8(__mmask64((1ull << n) - 1), p));
    else if constexpr (B == 32) _mm256_storeu_si256(reinterpret_cast<__m256i *>(buf), _mm256_maskz_loadu_epi8(__mmask32((1u << n) - 1), p));
    else if constexpr (B == 16) _mm_storeu_si128(reinterpret_cast<__m128i *>(buf), _mm_maskz_loadu_epi8(__mmask16((1u << n) - 1), p));
    if constexpr (B == 16 || B == 32 || B == 64) return;
#elif AG_VEC_BYTES == 32
    if constexpr (B == 32 || B == 16) {
        if (n % 4 == 0) {
            if constexpr (B == 32) _mm256_storeu_si256(reinterpret_cast<__m256i *>(buf), _mm256_maskload_epi32(reinterpret_cast<const int *>(p), dword_mask<B>(n / 4)));
            else _mm_storeu_si128(reinterpret_cast<__m128i *>(buf), _mm_maskload_epi32(reinterpret_cast<const int *>(p), dword_mask<B>(n / 4)));
            return;
        }
    }
#endif
    if constexpr (B <= 16) {
        // assembled in integer registers: a vector load of bytes just stored piecewise would wait
        // for the stores (no store-to-load forwarding from several stores to one load)
        uint64_t lo, hi = 0;
        if (B == 16 && n >= 8) {
            std::memcpy(&lo, p, 8);
            hi = bytes_under8(p + 8, n - 8);
        } else {
            lo = bytes_under8(p, n);
        }
        typedef uint64_t u64x2 __attribute__((vector_size(16)));
        const u64x2 r = {lo, hi};
        std::memcpy(buf, &r, B);
    } else {
        std::memset(buf, 0, B);
        copy_short<B>(buf, p, n);
    }
}
template <int B> AG_INLINE void store_short(char *p, const char *buf, int64_t n) {
#if AG_VEC_BYTES == 64
    if constexpr (B == 64) _mm512_mask_storeu_epi8(p, __mmask64((1ull << n) - 1), _mm512_loadu_si512(buf));
    else if constexpr (B == 32) _mm256_mask_storeu_epi8(p, __mmask32((1u << n) - 1), _mm256_loadu_si256(reinterpret_cast<const __m256i *>(buf)));
    else if constexpr (B == 16) _mm_mask_storeu_epi8(p, __mmask16((1u << n) - 1), _mm_loadu_si128(reinterpret_cast<const __m128i *>(buf)));
    if constexpr (B == 16 || B == 32 || B == 64) return;
#endif
    copy_short<B>(p, buf, n);
}

// Whether a vector of T converts in a few instructions (a half without F16C or NEON takes a dozen).
#if defined(__F16C__) || defined(__AVX512F__) || defined(AG_NEON)
template <class T> constexpr bool kCheapLoad = true;
#else
template <class T> constexpr bool kCheapLoad = !std::is_same_v<T, half_t>;
#endif

// The first m (1 <= m <= lanes<C>) elements p[0], p[s], p[2s], ...; lanes past m are 0.
template <class C, class T> AG_INLINE vec_t<C> vload_run(const T *p, int64_t s, int64_t m) {
    constexpr int L = lanes<C>;
    if (m == L) {
        if (s == 1) return vload<C>(p);
        if (s == 0) return splat<vec_t<C>>(load<C>(p));
    }
    alignas(64) T buf[L];
    if (s == 1) {  // (each path its own vload: buf then stays in registers)
        load_short<int(sizeof buf)>(reinterpret_cast<char *>(buf), reinterpret_cast<const char *>(p), m * int64_t(sizeof(T)));
        return vload<C>(buf);
    }
    for (int l = 0; l < L; ++l) buf[l] = l < m ? p[l * s] : T{};
    return vload<C>(buf);
}

// Two vectors stored one after the other (2 lanes elements). bfloat16 (x86): the two rounded and
// packed at once (bf16_pair, then its 64-bit blocks into order), half the instructions of two
// vstore; the same bits.
template <class O, class V> AG_INLINE void vstore2(O *p, V a, V b) {
    using C = typename elem_of<V>::type;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<C, float> && std::is_same_v<O, bf16_t>) {
        vreg r = bf16_pair(a, b);  // each 128-bit block: 4 of a's, then the same 4 of b's
#if AG_VEC_BYTES == 64
        r = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), r);
#elif AG_VEC_BYTES == 32
        r = _mm256_permute4x64_epi64(r, 0xd8);
#endif
        std::memcpy(p, &r, sizeof r);
        return;
    }
#endif
    vstore(p, a);
    vstore(p + lanes<C>, b);
}

template <class O, class V> AG_INLINE void vstore_run(O *p, int64_t s, int64_t m, V v) {
    constexpr int L = lanes<typename elem_of<V>::type>;
    if (s == 1 && m == L) return vstore(p, v);
    alignas(64) O buf[L];
    vstore(buf, v);
    if (s == 1) store_short<int(sizeof buf)>(reinterpret_cast<char *>(p), reinterpret_cast<const char *>(buf), m * int64_t(sizeof(O)));
    else for (int64_t l = 0; l < m; ++l) p[l * s] = buf[l];
}

// Bytes vstream writes at once (v's elements in the output type); p must be aligned to them.
template <class O, class C> constexpr int64_t stream_bytes = int64_t(sizeof(O)) * lanes<C>;

// Elements before po + i is aligned for vstream (fewer than lanes<C>), or -1 when it never is
// within a run of n (misaligned elements, or a run too short).
template <class O, class C> AG_INLINE int64_t aligned_head(const O *po, int64_t n) {
    constexpr int64_t B = stream_bytes<O, C>;
    const int64_t bytes = int64_t((B - reinterpret_cast<uintptr_t>(po) % B) % B);
    const int64_t h = bytes / int64_t(sizeof(O));
    return bytes % int64_t(sizeof(O)) == 0 && h < n ? h : -1;
}

// vstore bypassing the caches (a non-temporal store): a large output would not stay in cache
// anyway, and the store then does not read each line before writing it. The portable build has
// no such store: it stores normally, as x86 does below 16 bytes. Needs sfence() before others read p.
template <class O, class V> AG_INLINE void vstream(O *p, V v) {
#if defined(__SSE2__)
    using C = typename elem_of<V>::type;
    constexpr int64_t B = stream_bytes<O, C>;
    alignas(64) O buf[lanes<C>];
    vstore(buf, v);  // converted as vstore converts, then streamed whole
    if constexpr (B == 64) {
#if AG_VEC_BYTES == 64
        _mm512_stream_si512(reinterpret_cast<__m512i *>(p), _mm512_load_si512(buf));
#elif AG_VEC_BYTES == 32  // (a float vector into double)
        for (int h = 0; h < 2; ++h)
            _mm256_stream_si256(reinterpret_cast<__m256i *>(p) + h, _mm256_load_si256(reinterpret_cast<const __m256i *>(buf) + h));
#endif
    } else if constexpr (B == 32) {
#if AG_VEC_BYTES >= 32
        _mm256_stream_si256(reinterpret_cast<__m256i *>(p), _mm256_load_si256(reinterpret_cast<const __m256i *>(buf)));
#else  // (a float vector into double with SSE2)
        for (int h = 0; h < 2; ++h)
            _mm_stream_si128(reinterpret_cast<__m128i *>(p) + h, _mm_load_si128(reinterpret_cast<const __m128i *>(buf) + h));
#endif
    } else if constexpr (B == 16) {
        _mm_stream_si128(reinterpret_cast<__m128i *>(p), _mm_load_si128(reinterpret_cast<const __m128i *>(buf)));
    } else {  // (a double vector into a half type: 8 bytes with AVX2, 4 with SSE2; a float one into a half type with SSE2)
        std::memcpy(p, buf, sizeof buf);
    }
#else
    vstore(p, v);
#endif
}

// Elements [a, b) of v to p + a ... p + b - 1 as vstream stores them, by 16 bytes: p + a and p + b
// aligned to 16 bytes. (The ends of a run that vstream writes whole.)
template <class O, class V> AG_INLINE void vstream_part(O *p, V v, int64_t a, int64_t b) {
    using C = typename elem_of<V>::type;
    alignas(64) O buf[lanes<C>];
    vstore(buf, v);
#if defined(__SSE2__)
    for (int64_t i = a * int64_t(sizeof(O)); i < b * int64_t(sizeof(O)); i += 16)
        _mm_stream_si128(reinterpret_cast<__m128i *>(reinterpret_cast<char *>(p) + i),
                         _mm_load_si128(reinterpret_cast<const __m128i *>(reinterpret_cast<const char *>(buf) + i)));
#else
    std::memcpy(p + a, buf + a, size_t(b - a) * sizeof(O));
#endif
}

// Orders earlier non-temporal stores before later stores (a thread's last act after vstream).
AG_INLINE void sfence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
