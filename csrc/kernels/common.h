// Kernel-layer basics: element types, conversions, strided views, dtype dispatch and threading.
// Nothing here knows about aclnn statuses or messages: validation happens before a kernel runs.
//
// The kernel files are compiled once per instruction set (CMakeLists.txt: baseline, avx2, avx512 on
// x86-64; baseline, neon on aarch64); each
// compilation defines AG_ISA_NS, and every inline function and template of the kernel layer lives
// in the inline namespace of that name, so that copies compiled with different flags never merge
// at link time. Types and the entry points (dispatch.cpp) stay outside it: they are shared.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#ifndef AG_ISA_NS
#define AG_ISA_NS baseline
#endif

namespace ag::kern {

struct half_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

enum class DType { F16, BF16, F32, F64, I32, I64, Bool };

// The most dims a view may have: what an aclTensor can describe in CANN (gert::Shape::kMaxDimNum).
// Operators with a rank limit of their own check it before a kernel runs.
constexpr int kMaxRank = 25;

// A strided view as the kernels see it: `data` points at element 0, strides count elements.
struct View {
    char *data = nullptr;
    DType dtype = DType::F32;
    int ndim = 0;
    // Only the first ndim entries are meaningful, and only they are set: zeroing all 25 of each (400
    // bytes per view, several views per call) was a tenth of a tiny operator call.
    int64_t shape[kMaxRank];
    int64_t stride[kMaxRank];

    View() = default;
    // A copy takes the first ndim dims only, for the same reason (a call copies views a dozen times).
    View(const View &v) { *this = v; }
    View &operator=(const View &v) {
        data = v.data, dtype = v.dtype, ndim = v.ndim;
        for (int d = 0; d < ndim; ++d) shape[d] = v.shape[d], stride[d] = v.stride[d];
        return *this;
    }

    int64_t numel() const;  // out of line (dispatch.cpp): one copy, compiled for any CPU
};

// Instruction sets with their own compilation of the kernels. Chosen once per process (the best
// this CPU has, or the environment variable ASCENDGRAD_ISA=baseline|avx2 asking for less). Results
// may differ between ISAs where a kernel computes e^x (FMA), never between thread counts.
// x86-64: Baseline < Avx2 < Avx512; aarch64: Baseline < Neon.
enum class Isa { Baseline, Avx2, Avx512, Neon };
Isa active_isa();
const char *isa_name(Isa isa);
bool set_isa(Isa isa);  // for tests; false (and no change) for an ISA this CPU lacks

// Declares a kernel in every ISA's namespace, for the entry points in dispatch.cpp to choose from.
// (One of them is the inline AG_ISA_NS reopened without `inline`: allowed, and clang says so.)
#if defined(__clang__)
#define AG_ISA_PUSH \
    _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Winline-namespace-reopened-noninline\"")
#define AG_ISA_POP _Pragma("clang diagnostic pop")
#else
#define AG_ISA_PUSH
#define AG_ISA_POP
#endif
#define AG_ISA_KERNEL(decl) \
    AG_ISA_PUSH             \
    namespace baseline {    \
    decl;                   \
    }                       \
    namespace avx2 {        \
    decl;                   \
    }                       \
    namespace avx512 {      \
    decl;                   \
    }                       \
    namespace neon {        \
    decl;                   \
    }                       \
    AG_ISA_POP

// Threads used by kernels; starts at OpenMP's default (OMP_NUM_THREADS or the core count).
int num_threads();
void set_num_threads(int n);
// This calling thread's count, over the process-wide one (n <= 0: back to it).
void set_thread_num_threads(int n);

// The last-level cache's size in bytes, the instance a core shares (sysfs; 8 MiB where it does not
// say): data of a call up to this size are still cached when the next call reads them.
int64_t cache_bytes();

// Whether this is an AMD CPU with AVX-512 F (Zen 4 and later), whose caches favour another loop
// order in softmax than Zen 3's and Intel's (softmax_backward.cpp; bench/RESULTS.md, 2026-11-28).
bool amd_avx512();

// Whether the page holding p is in memory. A result just allocated is not (its pages are mapped on
// first touch); where that cannot be asked (not Linux), true.
bool page_resident(const void *p);

inline namespace AG_ISA_NS {

// ---- conversions (round to nearest even, NaN kept quiet) ----

inline float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp == 0) {
        if (man == 0) return bits_to_float(sign);
        // subnormal: value = man * 2^-24, exact in float
        float f = float(man) * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t float_to_half(float f) {
    uint32_t u = float_to_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    // NaN: quiet, payload truncated, as the F16C instruction does (the vector path uses it)
    if (u > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((u & 0x7fffffu) >> 13));
    if (u >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // inf, or rounds to >= 65520: overflow
    if (u < 0x38800000u) {                                   // below 2^-14: subnormal or zero
        // Adding 0.5 makes the FPU round the bits below 2^-24 away, to nearest even.
        float a = bits_to_float(u) + 0.5f;
        return uint16_t(sign | uint16_t(float_to_bits(a) - 0x3f000000u));
    }
    const uint32_t odd = (u >> 13) & 1u;
    u += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
    return uint16_t(sign | uint16_t(u >> 13));
}

inline float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

inline uint16_t float_to_bf16(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

// double -> float rounded to odd: a second rounding to a format of <= 11 fewer bits
// (half, bfloat16) then gives the correctly rounded result of the double (one rounding).
inline float double_to_float_odd(double d) {
    float f = float(d);
    if (double(f) != d && !std::isnan(d) && std::isfinite(f)) {
        uint32_t u = float_to_bits(f);
        if (std::fabs(double(f)) > std::fabs(d)) --u;  // truncate toward zero
        f = bits_to_float(u | 1u);
    }
    return f;
}

// ---- typed loads and stores in the compute type ----

template <class T> struct compute_type { using type = float; };
template <> struct compute_type<double> { using type = double; };
template <class T> using compute_t = typename compute_type<T>::type;

template <class C> inline C load(const float *p) { return C(*p); }
template <class C> inline C load(const double *p) { return C(*p); }
template <class C> inline C load(const half_t *p) { return C(half_to_float(p->bits)); }
template <class C> inline C load(const bf16_t *p) { return C(bf16_to_float(p->bits)); }
template <class C> inline C load(const int16_t *p) { return C(*p); }  // (raw bits: simd.h, int16_t)

inline void store(float *p, float v) { *p = v; }
inline void store(float *p, double v) { *p = float(v); }
inline void store(double *p, float v) { *p = v; }
inline void store(double *p, double v) { *p = v; }
inline void store(half_t *p, float v) { p->bits = float_to_half(v); }
inline void store(half_t *p, double v) { p->bits = float_to_half(double_to_float_odd(v)); }
inline void store(bf16_t *p, float v) { p->bits = float_to_bf16(v); }
inline void store(bf16_t *p, double v) { p->bits = float_to_bf16(double_to_float_odd(v)); }

// ---- dtype dispatch: calls f(T{}) with the C++ type of a floating dtype ----

template <class F> inline void dispatch_float(DType t, F &&f) {
    switch (t) {
        case DType::F16: f(half_t{}); break;
        case DType::BF16: f(bf16_t{}); break;
        case DType::F32: f(float{}); break;
        case DType::F64: f(double{}); break;
        default: break;  // validated away before any kernel runs
    }
}

// A per-thread buffer of at least n elements, kept for later calls so that kernels do not
// allocate per call; valid until the same thread asks for this T again.
template <class T> T *scratch(size_t n) {
    thread_local std::unique_ptr<T[]> buf;
    thread_local size_t cap = 0;
    if (cap < n) {
        buf.reset(new T[n]);
        cap = n;
    }
    return buf.get();
}

// ---- threading ----

// Below this many elements a kernel runs on the calling thread: forking costs more than it saves.
constexpr int64_t kParallelMin = 1 << 15;

inline int threads_for(int64_t work) { return work < kParallelMin ? 1 : num_threads(); }

// From this many output bytes on, elementwise kernels write with non-temporal stores (simd.h,
// vstream): such an output leaves the private caches anyway, and skipping the read of each line
// before it is written saves a third of an elementwise kernel's memory traffic.
constexpr int64_t kStreamMin = int64_t(8) << 20;

// Streaming stores for an output of `bytes` from p, of a call that moves `total` bytes in all:
// large, too large for the last-level cache with its inputs (there a call repeated in a loop finds
// its output still cached: kl_div f16 1024x4096, 16 MiB in all, ran 1.2x PyTorch's speed with them
// on a Zen 4, 32 MiB L3), and already in memory (its first and last pages: malloc writes its header
// into a fresh block's first page). On a fresh page the OS zeroes the page through the cache at the
// first store, and a streaming store then moves each line a second time (Zen 3, LogSigmoid f32
// 4096x4096 with every result kept alive: 39-44 ms per call with them, 27-37 without; PyTorch's
// 25-35).
inline bool stream_output(const void *p, int64_t bytes, int64_t total) {
    return bytes >= kStreamMin && total > cache_bytes() && page_resident(p) &&
           page_resident(static_cast<const char *>(p) + bytes - 1);
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
