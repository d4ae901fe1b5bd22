// LogSigmoid backward: gI = g * sigmoid(-x), in the stable form of CANN's kernel and the spec:
// z = e^(-|x|) never overflows, so x = -inf gives g, x = +inf gives 0 and NaN stays NaN.
#include "logsigmoid_backward.h"

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

template <class T, class O>
void run(const View &g, const View &x, const View &out) {
    using C = compute_t<T>;
    map<C, O, T, T>(out, {g, x}, [](auto gv, auto xv) {
        const auto z = vexp(-vabs(xv));
        // both sides computed, one selected: branch-free
        return div_1_2(select(xv < C(0), gv, gv * z), C(1) + z);
    });
}

}  // namespace

void log_sigmoid_backward_kernel(const View &g, const View &x, const View &out) {
    if (out.numel() == 0) return;
    dispatch_float(g.dtype, [&](auto t) {
        dispatch_float(out.dtype, [&](auto o) { run<decltype(t), decltype(o)>(g, x, out); });
    });
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
