// LogSigmoid backward: gI = g * sigmoid(-x), in the stable form of CANN's kernel and the spec:
// z = e^(-|x|) never overflows, so x = -inf gives g, x = +inf gives 0 and NaN stays NaN.
#include "logsigmoid_backward.h"

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

// g where x < 0, else g z (z = e^-|x| in [0, 1], or NaN), branch-free. SSE2 has no blend (a select
// is three operations): there g max(x < 0 ? 1 : 0, z), one fewer, the same values (max keeps a
// NaN z; g 1 = g, where the division after it quiets a NaN g either way).
template <class C, class V>
AG_INLINE V g_or_gz(V z, V gv, V xv) {
#if defined(__SSE2__) && AG_VEC_BYTES == 16
    using M = decltype(xv < C(0));
    return gv * vmax_keep_nan((V)((xv < C(0)) & (M)splat<V>(C(1))), z);
#else
    return select(xv < C(0), gv, gv * z);
#endif
}

template <class C>
auto op() {
    return staged{[](auto, auto xv) { return vexp<true>(vnabs(xv)); },  // z = e^-|x|
                  [](auto z, auto gv, auto xv) { return div_1_2(g_or_gz<C>(z, gv, xv), C(1) + z); }};
}

}  // namespace

// Instantiated directly where g, x and out share a dtype (the fast path); other out dtypes
// convert (elementwise.h, map_convert).
void log_sigmoid_backward_kernel(const View &g, const View &x, const View &out) {
    if (out.numel() == 0) return;
    const bool f64 = g.dtype == DType::F64;
    if (g.dtype == out.dtype && x.dtype == out.dtype) {
        dispatch_float(g.dtype, [&](auto t) {
            using T = decltype(t);
            using C = compute_t<T>;
            map<C, T, T, T>(out, {g, x}, op<C>());
        });
    } else if (f64) {
        map_convert<double>(out, {g, x}, op<double>());
    } else {
        map_convert<float>(out, {g, x}, op<float>());
    }
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
