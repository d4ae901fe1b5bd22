// Softshrink backward: a select per element. NaN x gives NaN on every path (PyTorch's scalar and
// vector paths disagree there), and g is not multiplied by a mask, so g = inf or NaN inside the
// band still gives 0.
#include "softshrink_backward.h"

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

template <class C>
auto op(double lambd) {
    const C lam = C(lambd);  // the band edge in the compute type, as CANN passes λ as float
    return [lam](auto gv, auto xv) {
        const auto r = select(vabs(xv) > lam, gv, decltype(gv){});
        return select(xv != xv, xv, r);
    };
}

// Where g, x and out are all one half type, the same select on their raw bits (map's int16_t
// compute type): no conversion in or out, a few integer operations per register of 16-bit values
// (without F16C the conversions were most of the work). The same values: non-negative halves
// order as their bits, so |x| > lam exactly where |x|'s bits exceed t below; g and a NaN x come
// out quiet, as through float (half: bit 9 set, bfloat16: bit 6).
template <class T>
auto op_bits(double lambd) {
    constexpr bool f16 = std::is_same_v<T, half_t>;
    // (maybe_unused: GCC 12 for aarch64 calls quiet unused, which the lambda below reads)
    [[maybe_unused]] constexpr int16_t inf = f16 ? 0x7c00 : 0x7f80, quiet = f16 ? 0x0200 : 0x0040;
    const float lam = float(lambd);  // (as op<float>)
    const auto value = [](int16_t b) {
        T h;
        std::memcpy(&h, &b, sizeof h);
        return load<float>(&h);
    };
    int16_t t = inf;                 // a NaN lam: nothing outside the band
    if (lam < 0) {
        t = -1;
    } else if (lam >= 0) {           // the largest bits in [0, inf] whose value is <= lam
        int16_t lo = 0, hi = inf;
        while (lo < hi) {
            const int16_t mid = int16_t((lo + hi + 1) / 2);
            if (value(mid) <= lam) lo = mid;
            else hi = int16_t(mid - 1);
        }
        t = lo;
    }
    return [t](auto gv, auto xv) {
        using V = decltype(gv);
        const V ax = xv & 0x7fff, ag = gv & 0x7fff;
        const V r = (ax > t) & (gv | ((ag > inf) & quiet));
        return ax > inf ? (xv | quiet) : r;
    };
}

}  // namespace

// Instantiated directly where g, x and out share a dtype (the fast path; half types as bits);
// mixed dtypes convert (elementwise.h, map_convert), in f64 if an input is f64.
void softshrink_backward_kernel(const View &g, const View &x, double lambd, const View &out) {
    if (out.numel() == 0) return;
    const DType dt = out.dtype;
    if (g.dtype == dt && x.dtype == dt) {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            using C = compute_t<T>;
            if constexpr (sizeof(T) == 2)
                map<int16_t, int16_t, int16_t, int16_t>(out, {g, x}, op_bits<T>(lambd));
            else
                map<C, T, T, T>(out, {g, x}, op<C>(lambd));
        });
    } else if (g.dtype == DType::F64 || x.dtype == DType::F64) {
        map_convert<double>(out, {g, x}, op<double>(lambd));
    } else {
        map_convert<float>(out, {g, x}, op<float>(lambd));
    }
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
