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

}  // namespace

// Instantiated directly where g, x and out share a dtype (the fast path); mixed dtypes convert
// (elementwise.h, map_convert), in f64 if an input is f64.
void softshrink_backward_kernel(const View &g, const View &x, double lambd, const View &out) {
    if (out.numel() == 0) return;
    const DType dt = out.dtype;
    if (g.dtype == dt && x.dtype == dt) {
        dispatch_float(dt, [&](auto t) {
            using T = decltype(t);
            using C = compute_t<T>;
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
