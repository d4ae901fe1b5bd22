// Kernel entry points: each runs its kernel's compilation for the instruction set chosen once per
// process (common.h, Isa). Compiled once, for any CPU of the target architecture.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(AG_HAVE_NEON)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "cross_entropy_loss_grad.h"
#include "judge.h"
#include "kl_div_backward.h"
#include "logsigmoid_backward.h"
#include "softmax_backward.h"
#include "softshrink_backward.h"

namespace ag::kern {

int64_t View::numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
}

namespace {

// The best instruction set this CPU and OS support among those compiled in.
Isa best_isa() {
#if defined(AG_HAVE_AVX2) && (defined(__x86_64__) || defined(__i386__))
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::Baseline;
    if (!(c & bit_F16C) || !(c & bit_FMA) || !(c & bit_AVX) || !(c & bit_OSXSAVE)) return Isa::Baseline;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0x6) != 0x6) return Isa::Baseline;  // the OS does not save YMM registers
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX2)) return Isa::Baseline;
#if defined(AG_AVX512_EMULATED)
    return Isa::Avx512;  // (tests_cpp/avx512_emulation.h: those kernels need AVX2 only)
#elif defined(AG_HAVE_AVX512)
    const unsigned avx512 = bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
    if ((b & avx512) == avx512 && (lo & 0xe6) == 0xe6) return Isa::Avx512;  // and ZMM, opmask state
#endif
    return Isa::Avx2;
#elif defined(AG_HAVE_NEON)
    // (Advanced SIMD is part of every AArch64 Linux system; asked all the same)
    return (getauxval(AT_HWCAP) & HWCAP_ASIMD) ? Isa::Neon : Isa::Baseline;
#else
    return Isa::Baseline;
#endif
}

// The ISAs compiled in, in order of preference (the best last).
constexpr Isa kIsas[] = {Isa::Baseline,
#if defined(AG_HAVE_AVX2)
                         Isa::Avx2, Isa::Avx512,
#endif
#if defined(AG_HAVE_NEON)
                         Isa::Neon,
#endif
};

int rank(Isa isa) {
    for (int i = 0; i < int(std::size(kIsas)); ++i)
        if (kIsas[i] == isa) return i;
    return -1;
}

std::atomic<int> &current() {
    // ASCENDGRAD_ISA=baseline|avx2|... asks for at most that ISA (tests compare them); any other
    // value, or none, takes the best.
    static std::atomic<int> isa{[] {
        const char *e = std::getenv("ASCENDGRAD_ISA");
        const Isa best = best_isa();
        for (Isa i : kIsas)
            if (e && std::strcmp(e, isa_name(i)) == 0) return int(kIsas[std::min(rank(i), rank(best))]);
        return int(best);
    }()};
    return isa;
}

}  // namespace

Isa active_isa() { return Isa(current().load(std::memory_order_relaxed)); }

const char *isa_name(Isa isa) {
    switch (isa) {
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
        case Isa::Neon: return "neon";
        default: return "baseline";
    }
}

bool set_isa(Isa isa) {
    if (rank(isa) < 0 || rank(isa) > rank(best_isa())) return false;
    current().store(int(isa), std::memory_order_relaxed);
    return true;
}

// The kernel's compilation for the active ISA (only those built: x86-64 has three, aarch64 two).
#if defined(AG_HAVE_AVX512)
#define AG_CALL(kernel, ...)                                                          \
    (active_isa() == Isa::Avx512 ? avx512::kernel(__VA_ARGS__)                        \
     : active_isa() == Isa::Avx2 ? avx2::kernel(__VA_ARGS__) : baseline::kernel(__VA_ARGS__))
#elif defined(AG_HAVE_AVX2)
#define AG_CALL(kernel, ...) \
    (active_isa() == Isa::Avx2 ? avx2::kernel(__VA_ARGS__) : baseline::kernel(__VA_ARGS__))
#elif defined(AG_HAVE_NEON)
#define AG_CALL(kernel, ...) (active_isa() == Isa::Neon ? neon::kernel(__VA_ARGS__) : baseline::kernel(__VA_ARGS__))
#else
#define AG_CALL(kernel, ...) baseline::kernel(__VA_ARGS__)
#endif

void softmax_backward(const View &g, const View &y, int dim, const View &out) {
    AG_CALL(softmax_backward_kernel, g, y, dim, out);
}

JudgeStats judge_metrics(const View &actual, const double *golden, const JudgeParams &p) {
    return AG_CALL(judge_metrics_kernel, actual, golden, p);
}

void log_sigmoid_backward(const View &g, const View &x, const View &out) {
    AG_CALL(log_sigmoid_backward_kernel, g, x, out);
}

void softshrink_backward(const View &g, const View &x, double lambd, const View &out) {
    AG_CALL(softshrink_backward_kernel, g, x, lambd, out);
}

void kl_div_backward(const View &grad, const View &target, const View &out, const KlArgs &a) {
    AG_CALL(kl_div_backward_kernel, grad, target, out, a);
}

CeScan cross_entropy_scan(const View &target, const View &weight, int64_t classes, int64_t ignore_index) {
    return AG_CALL(cross_entropy_scan_kernel, target, weight, classes, ignore_index);
}

void cross_entropy_loss_grad(const CeArgs &a, const CeScan &scan) { AG_CALL(cross_entropy_loss_grad_kernel, a, scan); }

}  // namespace ag::kern
