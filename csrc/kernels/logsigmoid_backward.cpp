// LogSigmoid backward: gI = g * sigmoid(-x), in the stable form of CANN's kernel and the spec:
// z = e^(-|x|) never overflows, so x = -inf gives g, x = +inf gives 0 and NaN stays NaN.
#include "logsigmoid_backward.h"

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

template <class C>
auto op() {
    return staged{[](auto, auto xv) { return vexp<true>(vnabs(xv)); },  // z = e^-|x|
                  // both sides computed, one selected: branch-free
                  [](auto z, auto gv, auto xv) { return div_1_2(select(xv < C(0), gv, gv * z), C(1) + z); }};
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
