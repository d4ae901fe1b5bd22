// Softshrink backward: a select per element. NaN x gives NaN on every path (PyTorch's scalar and
// vector paths disagree there), and g is not multiplied by a mask, so g = inf or NaN inside the
// band still gives 0.
#include "softshrink_backward.h"

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

template <class TG, class TX, class O>
void run(const View &g, const View &x, double lambd, const View &out) {
    using C = common_compute_t<TG, TX>;
    const C lam = C(lambd);  // the band edge in the compute type, as CANN passes λ as float
    map<C, O, TG, TX>(out, {g, x}, [lam](auto gv, auto xv) {
        const auto r = select(vabs(xv) > lam, gv, decltype(gv){});
        return select(xv != xv, xv, r);
    });
}

}  // namespace

void softshrink_backward_kernel(const View &g, const View &x, double lambd, const View &out) {
    if (out.numel() == 0) return;
    dispatch_float(g.dtype, [&](auto tg) {
        dispatch_float(x.dtype, [&](auto tx) {
            dispatch_float(out.dtype, [&](auto o) {
                run<decltype(tg), decltype(tx), decltype(o)>(g, x, lambd, out);
            });
        });
    });
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
