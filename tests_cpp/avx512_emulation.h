// The AVX-512 intrinsics csrc/kernels uses, on AVX2 + FMA + F16C: forced into the avx512 kernels
// (-include) by the CMake option ASCENDGRAD_EMULATE_AVX512, so that their 64-byte vector code, masks
// and tails run, under the C++ suite, on an x86-64 CPU without AVX-512. Each follows Intel's
// definition: two AVX2 halves where AVX2 has the operation (FMA, min/max with their NaN and zero
// rules, F16C, 16-bit packs and unpacks, which work per 128-bit block on both: the same bits as
// AVX-512), lane loops otherwise. Masked loads and stores touch only the masked bytes, and aligned
// loads and streaming stores trap when misaligned, as the hardware faults. rcp14 returns 1/x cut to
// 14 bits: within the hardware's 2^-14 bound, not its bits (what follows it must refine it).
#pragma once

#include <immintrin.h>  // first: its AVX-512 functions stay behind their target pragmas

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#define __AVX512F__ 1  // simd.h's test for the 64-byte vector path

namespace ag_emu {

#define AG_EMU inline __attribute__((always_inline))

template <class H, class W> AG_EMU H half(const W &w, int i) {
    H h;
    std::memcpy(&h, reinterpret_cast<const char *>(&w) + i * sizeof(H), sizeof(H));
    return h;
}
template <class W, class H> AG_EMU W join(const H &a, const H &b) {
    W w;
    std::memcpy(&w, &a, sizeof(H));
    std::memcpy(reinterpret_cast<char *>(&w) + sizeof(H), &b, sizeof(H));
    return w;
}
// f applied to the two 256-bit halves of each argument
template <class W, class H, class F, class... A> AG_EMU W halves(F f, const A &...a) {
    return join<W>(f(half<H>(a, 0)...), f(half<H>(a, 1)...));
}
// lane l of w (its lanes as T) kept where bit l of k is set, else 0
template <class T, class W, class K> AG_EMU W zero_masked(K k, W w) {
    T t[sizeof(W) / sizeof(T)];
    std::memcpy(t, &w, sizeof(W));
    for (unsigned l = 0; l < sizeof(W) / sizeof(T); ++l)
        if (!((k >> l) & 1)) t[l] = 0;
    std::memcpy(&w, t, sizeof(W));
    return w;
}
AG_EMU void check_aligned(const void *p) {
    if (reinterpret_cast<uintptr_t>(p) % 64) __builtin_trap();  // #GP on the hardware
}

AG_EMU __m512 fmadd_ps(__m512 a, __m512 b, __m512 c) {
    return halves<__m512, __m256>([](__m256 x, __m256 y, __m256 z) { return _mm256_fmadd_ps(x, y, z); }, a, b, c);
}
AG_EMU __m512d fmadd_pd(__m512d a, __m512d b, __m512d c) {
    return halves<__m512d, __m256d>([](__m256d x, __m256d y, __m256d z) { return _mm256_fmadd_pd(x, y, z); }, a, b, c);
}
AG_EMU __m512 maskz_max_ps(__mmask16 k, __m512 a, __m512 b) {
    return zero_masked<float>(k, halves<__m512, __m256>([](__m256 x, __m256 y) { return _mm256_max_ps(x, y); }, a, b));
}
AG_EMU __m512 maskz_min_ps(__mmask16 k, __m512 a, __m512 b) {
    return zero_masked<float>(k, halves<__m512, __m256>([](__m256 x, __m256 y) { return _mm256_min_ps(x, y); }, a, b));
}
AG_EMU __m512d maskz_max_pd(__mmask8 k, __m512d a, __m512d b) {
    return zero_masked<double>(k, halves<__m512d, __m256d>([](__m256d x, __m256d y) { return _mm256_max_pd(x, y); }, a, b));
}
AG_EMU __m512d maskz_min_pd(__mmask8 k, __m512d a, __m512d b) {
    return zero_masked<double>(k, halves<__m512d, __m256d>([](__m256d x, __m256d y) { return _mm256_min_pd(x, y); }, a, b));
}

// a 2^floor(b): NaN in, quiet NaN out (a's first); 0 * 2^inf and inf * 2^-inf are NaN. Computed
// in double with the exponent clamped (past +-400 every float result is already 0 or inf; past
// +-2200 every double one), ldexp rounding once: the correctly rounded result, subnormals included.
template <class T> AG_EMU T scalef(T a, T b) {
    if (std::isnan(a)) return a + a;
    if (std::isnan(b)) return b + b;
    if (std::isinf(b)) return b > 0 ? a * std::numeric_limits<T>::infinity() : a * T(0);
    const double lim = sizeof(T) == 4 ? 400.0 : 2200.0;
    const double n = std::fmin(std::fmax(std::floor(double(b)), -lim), lim);
    return T(std::ldexp(double(a), int(n)));
}
AG_EMU __m512 maskz_scalef_ps(__mmask16 k, __m512 a, __m512 b) {
    for (int l = 0; l < 16; ++l) a[l] = scalef(a[l], b[l]);
    return zero_masked<float>(k, a);
}
AG_EMU __m512d maskz_scalef_pd(__mmask8 k, __m512d a, __m512d b) {
    for (int l = 0; l < 8; ++l) a[l] = scalef(a[l], b[l]);
    return zero_masked<double>(k, a);
}
// 1/d cut to 14 fraction bits (relative error below 2^-14); 1/+-0 = +-inf, 1/+-inf = +-0
AG_EMU __m512 maskz_rcp14_ps(__mmask16 k, __m512 d) {
    for (int l = 0; l < 16; ++l) {
        double r = 1.0 / double(d[l]);
        if (std::isfinite(r)) {
            uint64_t u;
            std::memcpy(&u, &r, 8);
            u &= ~((uint64_t(1) << (52 - 14)) - 1);  // 14 fraction bits
            std::memcpy(&r, &u, 8);
        }
        d[l] = float(r);
    }
    return zero_masked<float>(k, d);
}

template <int P> AG_EMU __mmask16 cmp_ps_mask(__m512 a, __m512 b) {
    return __mmask16(_mm256_movemask_ps(_mm256_cmp_ps(half<__m256>(a, 0), half<__m256>(b, 0), P)) |
                     _mm256_movemask_ps(_mm256_cmp_ps(half<__m256>(a, 1), half<__m256>(b, 1), P)) << 8);
}

AG_EMU __m512i castsi256_si512(__m256i a) { return join<__m512i>(a, _mm256_setzero_si256()); }  // (upper half: any value)
AG_EMU __m512i maskz_permutexvar_epi16(__mmask32 k, __m512i idx, __m512i a) {  // (vpermw)
    uint16_t i[32], x[32], r[32];
    std::memcpy(i, &idx, 64);
    std::memcpy(x, &a, 64);
    for (int l = 0; l < 32; ++l) r[l] = (k >> l) & 1 ? x[i[l] & 31] : 0;
    std::memcpy(&idx, r, 64);
    return idx;
}
AG_EMU __m256i cvtepi32_epi16(__m512i a) {  // truncation, lane by lane
    int32_t w[16];
    int16_t n[16];
    std::memcpy(w, &a, 64);
    for (int l = 0; l < 16; ++l) n[l] = int16_t(w[l]);
    __m256i r;
    std::memcpy(&r, n, 32);
    return r;
}
AG_EMU __m512 cvtph_ps(__m256i a) {
    return join<__m512>(_mm256_cvtph_ps(half<__m128i>(a, 0)), _mm256_cvtph_ps(half<__m128i>(a, 1)));
}
template <int R> AG_EMU __m256i cvtps_ph(__m512 a) {
    return join<__m256i>(_mm256_cvtps_ph(half<__m256>(a, 0), R), _mm256_cvtps_ph(half<__m256>(a, 1), R));
}
template <int N> AG_EMU __m512i srai_epi32(__m512i a) {
    return halves<__m512i, __m256i>([](__m256i x) { return _mm256_srai_epi32(x, N); }, a);
}
AG_EMU __m512i unpacklo_epi16(__m512i a, __m512i b) {
    return halves<__m512i, __m256i>([](__m256i x, __m256i y) { return _mm256_unpacklo_epi16(x, y); }, a, b);
}
AG_EMU __m512i unpackhi_epi16(__m512i a, __m512i b) {
    return halves<__m512i, __m256i>([](__m256i x, __m256i y) { return _mm256_unpackhi_epi16(x, y); }, a, b);
}
AG_EMU __m512i packs_epi32(__m512i a, __m512i b) {
    return halves<__m512i, __m256i>([](__m256i x, __m256i y) { return _mm256_packs_epi32(x, y); }, a, b);
}
AG_EMU __m512i setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6, int e7, int e8, int e9, int e10,
                          int e11, int e12, int e13, int e14, int e15) {
    const int e[16] = {e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15};
    __m512i r;
    std::memcpy(&r, e, 64);
    return r;
}
AG_EMU __m512i setr_epi64(long long e0, long long e1, long long e2, long long e3, long long e4, long long e5,
                          long long e6, long long e7) {
    const long long e[8] = {e0, e1, e2, e3, e4, e5, e6, e7};
    __m512i r;
    std::memcpy(&r, e, 64);
    return r;
}
AG_EMU __m512i permutexvar_epi64(__m512i idx, __m512i a) {
    long long i[8], x[8], r[8];
    std::memcpy(i, &idx, 64);
    std::memcpy(x, &a, 64);
    for (int l = 0; l < 8; ++l) r[l] = x[i[l] & 7];
    std::memcpy(&idx, r, 64);
    return idx;
}

AG_EMU __m512i loadu_si512(const void *p) {
    __m512i r;
    std::memcpy(&r, p, 64);
    return r;
}
AG_EMU __m512i load_si512(const void *p) {
    check_aligned(p);
    return loadu_si512(p);
}
AG_EMU void storeu_si512(void *p, __m512i v) { std::memcpy(p, &v, 64); }
AG_EMU void stream_si512(void *p, __m512i v) {
    check_aligned(p);
    std::memcpy(p, &v, 64);
}
// byte b from p where bit b of k is set, else 0; no other byte read
template <class W, class K> AG_EMU W maskz_loadu_epi8(K k, const void *p) {
    unsigned char b[sizeof(W)];
    for (unsigned i = 0; i < sizeof(W); ++i) b[i] = (k >> i) & 1 ? static_cast<const unsigned char *>(p)[i] : 0;
    W r;
    std::memcpy(&r, b, sizeof(W));
    return r;
}
// byte b of v to p where bit b of k is set; no other byte written
template <class W, class K> AG_EMU void mask_storeu_epi8(void *p, K k, W v) {
    unsigned char b[sizeof(W)];
    std::memcpy(b, &v, sizeof(W));
    for (unsigned i = 0; i < sizeof(W); ++i)
        if ((k >> i) & 1) static_cast<unsigned char *>(p)[i] = b[i];
}

#undef AG_EMU
}  // namespace ag_emu

// (#undef: GCC defines some of them as macros)
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps ag_emu::fmadd_ps
#undef _mm512_fmadd_pd
#define _mm512_fmadd_pd ag_emu::fmadd_pd
#undef _mm512_maskz_max_ps
#define _mm512_maskz_max_ps ag_emu::maskz_max_ps
#undef _mm512_maskz_min_ps
#define _mm512_maskz_min_ps ag_emu::maskz_min_ps
#undef _mm512_maskz_max_pd
#define _mm512_maskz_max_pd ag_emu::maskz_max_pd
#undef _mm512_maskz_min_pd
#define _mm512_maskz_min_pd ag_emu::maskz_min_pd
#undef _mm512_maskz_scalef_ps
#define _mm512_maskz_scalef_ps ag_emu::maskz_scalef_ps
#undef _mm512_maskz_scalef_pd
#define _mm512_maskz_scalef_pd ag_emu::maskz_scalef_pd
#undef _mm512_maskz_rcp14_ps
#define _mm512_maskz_rcp14_ps ag_emu::maskz_rcp14_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask(a, b, p) ag_emu::cmp_ps_mask<(p)>(a, b)
#undef _mm512_castsi256_si512
#define _mm512_castsi256_si512 ag_emu::castsi256_si512
#undef _mm512_maskz_permutexvar_epi16
#define _mm512_maskz_permutexvar_epi16 ag_emu::maskz_permutexvar_epi16
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16 ag_emu::cvtepi32_epi16
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps ag_emu::cvtph_ps
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph(a, r) ag_emu::cvtps_ph<(r)>(a)
#undef _mm512_srai_epi32
#define _mm512_srai_epi32(a, n) ag_emu::srai_epi32<(n)>(a)
#undef _mm512_unpacklo_epi16
#define _mm512_unpacklo_epi16 ag_emu::unpacklo_epi16
#undef _mm512_unpackhi_epi16
#define _mm512_unpackhi_epi16 ag_emu::unpackhi_epi16
#undef _mm512_packs_epi32
#define _mm512_packs_epi32 ag_emu::packs_epi32
#undef _mm512_setr_epi32
#define _mm512_setr_epi32 ag_emu::setr_epi32
#undef _mm512_setr_epi64
#define _mm512_setr_epi64 ag_emu::setr_epi64
#undef _mm512_permutexvar_epi64
#define _mm512_permutexvar_epi64 ag_emu::permutexvar_epi64
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 ag_emu::loadu_si512
#undef _mm512_load_si512
#define _mm512_load_si512 ag_emu::load_si512
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 ag_emu::storeu_si512
#undef _mm512_stream_si512
#define _mm512_stream_si512 ag_emu::stream_si512
#undef _mm512_maskz_loadu_epi8
#define _mm512_maskz_loadu_epi8 ag_emu::maskz_loadu_epi8<__m512i>
#undef _mm256_maskz_loadu_epi8
#define _mm256_maskz_loadu_epi8 ag_emu::maskz_loadu_epi8<__m256i>
#undef _mm_maskz_loadu_epi8
#define _mm_maskz_loadu_epi8 ag_emu::maskz_loadu_epi8<__m128i>
#undef _mm512_mask_storeu_epi8
#define _mm512_mask_storeu_epi8 ag_emu::mask_storeu_epi8<__m512i>
#undef _mm256_mask_storeu_epi8
#define _mm256_mask_storeu_epi8 ag_emu::mask_storeu_epi8<__m256i>
#undef _mm_mask_storeu_epi8
#define _mm_mask_storeu_epi8 ag_emu::mask_storeu_epi8<__m128i>
