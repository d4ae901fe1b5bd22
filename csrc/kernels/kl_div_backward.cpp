// KL-divergence backward w.r.t. self. Without broadcast dims to sum over it is a pointwise map
// (elementwise.h). Otherwise each out element sums the terms of its pre-images in B in an order
// fixed by the shapes, in double: terms are computed in the compute type C, the sum is rounded
// once into out.
#include "kl_div_backward.h"

#include <algorithm>

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

// Stores a double into a view element of any float dtype (once per out element: the switch is
// cheap next to the sum before it, and spares instantiating the sum loops per out dtype).
inline void store_any(char *p, DType o, double v) {
    dispatch_float(o, [&](auto x) { store(reinterpret_cast<decltype(x) *>(p), v); });
}

// The terms of n pre-images: g[i] = (log_target ? e^t[i] : t[i]) * g[i] in C, e^t as the
// pointwise path computes it (vexp, lane by lane).
template <class C>
void terms(C *g, const C *t, int64_t n, bool log_target) {
    constexpr int64_t L = lanes<C>;
    for (int64_t i = 0; i < n; i += L) {
        const int64_t m = std::min(L, n - i);
        const vec_t<C> tv = vload_run<C>(t + i, 1, m);
        vstore_run(g + i, 1, m, (log_target ? vexp(tv) : tv) * vload_run<C>(g + i, 1, m));
    }
}

// Only the compute type is a template parameter: grad and target of any dtype are read through
// converters (elementwise.h) into C buffers of up to kConvChunk pre-images at a time.
template <class C>
void reduce(const View &grad, const View &target, const View &out, const KlArgs &a) {
    constexpr int64_t kW = 256;  // out elements per work unit along the innermost kept dim
    static_assert(kW <= kConvChunk);
    const View o = broadcast_to(out, a.shape, a.ndim);
    const View gv = broadcast_to(grad, a.shape, a.ndim);
    const View tv = broadcast_to(target, a.shape, a.ndim);
    // Split B's dims into kept ones (out has them) and reduced ones (out is 1 or missing there).
    const int lead = a.ndim - out.ndim;
    int64_t ksh[kMaxRank], kso[kMaxRank], ksg[kMaxRank], kst[kMaxRank];
    int64_t rsh[kMaxRank], rsg[kMaxRank], rst[kMaxRank];
    int nk = 0, nr = 0;
    int64_t rnum = 1;
    for (int d = 0; d < a.ndim; ++d) {
        const int64_t od = d < lead ? 1 : out.shape[d - lead];
        if (od == a.shape[d]) {
            ksh[nk] = od, kso[nk] = o.stride[d], ksg[nk] = gv.stride[d], kst[nk++] = tv.stride[d];
        } else {
            rsh[nr] = a.shape[d], rsg[nr] = gv.stride[d], rst[nr++] = tv.stride[d];
            rnum *= a.shape[d];
        }
    }
    const int64_t *kstr[3] = {kso, ksg, kst};
    const int64_t *rstr[2] = {rsg, rst};
    const Iter<3> kit = make_iter<3>(ksh, nk, kstr);
    const Iter<2> rit = make_iter<2>(rsh, nr, rstr);
    const char *g = grad.data, *t = target.data;
    const int64_t eg = dtype_size(grad.dtype), et = dtype_size(target.dtype);
    const to_compute_fn<C> ldg = to_compute_for<C>(grad.dtype), ldt = to_compute_for<C>(target.dtype);
    char *obase = out.data;
    const int64_t oes = dtype_size(out.dtype);
    const DType odt = out.dtype;

    // innermost kept dim: blocks of out elements; the rest walked with Walker
    const bool kflat = kit.ndim == 0;  // a single out element
    const int64_t kin = kflat ? 1 : kit.shape[kit.ndim - 1];
    const int64_t kio = kflat ? 0 : kit.stride[0][kit.ndim - 1], kig = kflat ? 0 : kit.stride[1][kit.ndim - 1],
                  kit_ = kflat ? 0 : kit.stride[2][kit.ndim - 1];
    Iter<3> kouter = kit;
    kouter.ndim = kflat ? 0 : kit.ndim - 1;
    const int64_t blocks = (kin + kW - 1) / kW;
    const int64_t units = kouter.numel() * blocks;

    if (rnum == 0) {  // every pre-image is empty: the gradient is 0
        parallel_for(units, kit.numel(), [&](int64_t b, int64_t e) {
            for (int64_t u = b; u < e; ++u) {
                const Walker<3> kp(kouter, u / blocks);
                const int64_t j0 = (u % blocks) * kW, cols = std::min(kW, kin - j0);
                for (int64_t j = 0; j < cols; ++j) store_any(obase + (kp.off[0] + (j0 + j) * kio) * oes, odt, 0.0);
            }
        });
        return;
    }
    const bool lt = a.log_target;
    const double c = a.scale;
    const int64_t kout = kit.numel();
    // innermost reduced dim (reduced dims have sizes >= 2 here: rit.ndim >= 1)
    const int64_t rin = rit.shape[rit.ndim - 1];
    const int64_t rig = rit.stride[0][rit.ndim - 1], rit_ = rit.stride[1][rit.ndim - 1];
    // the terms of n <= kConvChunk pre-images at steps sg, st from element offsets og, ot, in bg
    const auto load_terms = [&](C *bg, C *bt, int64_t og, int64_t ot, int64_t sg, int64_t st, int64_t n) {
        ldg(g + og * eg, sg, n, bg);
        ldt(t + ot * et, st, n, bt);
        terms(bg, bt, n, lt);
    };
    constexpr int64_t kChunk = 1 << 15;
    if (kout <= 64 && rnum >= 2 * kChunk) {
        // Few out elements with long sums: each sum is cut into fixed chunks of pre-images (by
        // shape alone), summed in parallel, then added up in chunk order.
        const int64_t nch = (rnum + kChunk - 1) / kChunk;
        double *part = scratch<double>(size_t(kout * nch));  // the calling thread's
        parallel_for(kout * nch, kout * rnum, [&](int64_t b, int64_t e) {
            alignas(64) C bg[kConvChunk], bt[kConvChunk];
            for (int64_t u = b; u < e; ++u) {
                const Walker<3> kp(kit, u / nch);
                const int64_t r1 = std::min(rnum, (u % nch) * kChunk + kChunk);
                double s = 0;
                for (int64_t r = (u % nch) * kChunk; r < r1;) {  // runs along the innermost reduced dim
                    const Walker<2> rp(rit, r);
                    const int64_t n = std::min({rin - r % rin, r1 - r, kConvChunk});
                    load_terms(bg, bt, kp.off[1] + rp.off[0], kp.off[2] + rp.off[1], rig, rit_, n);
                    for (int64_t i = 0; i < n; ++i) s += double(bg[i]);
                    r += n;
                }
                part[size_t(u)] = s;
            }
        });
        for (int64_t k = 0; k < kout; ++k) {
            double s = 0;
            for (int64_t ch = 0; ch < nch; ++ch) s += part[size_t(k * nch + ch)];
            const Walker<3> kp(kit, k);
            store_any(obase + kp.off[0] * oes, odt, -s * c);
        }
        return;
    }
    // the rest of the reduced dims walked with Walker
    Iter<2> router = rit;
    router.ndim = rit.ndim - 1;
    const int64_t rout = router.numel();
    // Loop order follows memory (reduced dim innermost when its target stride is the smaller);
    // either way each out element adds its terms in the same (reduced index) order.
    const auto mag = [](int64_t s) { return s < 0 ? -s : s; };
    const bool r_inner = mag(rit_) < mag(kit_) || (mag(rit_) == mag(kit_) && mag(rig) <= mag(kig));

    parallel_for(units, kouter.numel() * kin * rnum, [&](int64_t b, int64_t e) {
        double acc[kW];
        alignas(64) C bg[kConvChunk], bt[kConvChunk];
        for (int64_t u = b; u < e; ++u) {
            const Walker<3> kp(kouter, u / blocks);
            const int64_t j0 = (u % blocks) * kW, cols = std::min(kW, kin - j0);
            const int64_t gb = kp.off[1] + j0 * kig, tb = kp.off[2] + j0 * kit_;
            std::fill(acc, acc + cols, 0.0);
            Walker<2> rp(router, 0);
            for (int64_t ro = 0; ro < rout; ++ro, rp.next()) {
                const int64_t gr = gb + rp.off[0], tr = tb + rp.off[1];
                if (r_inner) {
                    for (int64_t j = 0; j < cols; ++j) {
                        double s = acc[j];
                        for (int64_t r = 0; r < rin; r += kConvChunk) {
                            const int64_t n = std::min(kConvChunk, rin - r);
                            load_terms(bg, bt, gr + j * kig + r * rig, tr + j * kit_ + r * rit_, rig, rit_, n);
                            for (int64_t i = 0; i < n; ++i) s += double(bg[i]);
                        }
                        acc[j] = s;
                    }
                } else {
                    for (int64_t r = 0; r < rin; ++r) {
                        load_terms(bg, bt, gr + r * rig, tr + r * rit_, kig, kit_, cols);
                        for (int64_t j = 0; j < cols; ++j) acc[j] += double(bg[j]);
                    }
                }
            }
            for (int64_t j = 0; j < cols; ++j) store_any(obase + (kp.off[0] + (j0 + j) * kio) * oes, odt, -acc[j] * c);
        }
    });
}

// The pointwise map: instantiated directly only where grad, target and out share a dtype that
// computes in its own compute type (the fast path); every other combination converts (map_convert).
template <class C, class Op>
void pointwise(const View &grad, const View &target, const View &o, Op op) {
    const DType dt = o.dtype;
    if (grad.dtype == dt && target.dtype == dt && (dt == DType::F64) == std::is_same_v<C, double>) {
        dispatch_float(dt, [&](auto x) {
            using T = decltype(x);
            if constexpr (std::is_same_v<compute_t<T>, C>) map<C, T, T, T>(o, {grad, target}, op);
        });
    } else {
        map_convert<C>(o, {grad, target}, op);
    }
}

template <class C>
void pointwise(const View &grad, const View &target, const View &out, const KlArgs &a) {
    // out has B's shape up to leading size-1 dims: view it with B's shape
    const View o = broadcast_to(out, a.shape, a.ndim);
    const C c = C(a.scale);
    // log_target decided outside the op, which stays branch-free
    if (a.log_target) pointwise<C>(grad, target, o, [c](auto gv, auto tv) { return -(vexp(tv) * gv) * c; });
    else pointwise<C>(grad, target, o, [c](auto gv, auto tv) { return -(tv * gv) * c; });
}

template <class C>
void run(const View &grad, const View &target, const View &out, const KlArgs &a, bool reduces) {
    if (reduces) reduce<C>(grad, target, out, a);
    else pointwise<C>(grad, target, out, a);
}

}  // namespace

void kl_div_backward_kernel(const View &grad, const View &target, const View &out, const KlArgs &a) {
    if (out.numel() == 0) return;
    // Does B have a dim of size != 1 that out lacks (or has as 1)?
    bool reduces = false;
    const int lead = a.ndim - out.ndim;
    for (int d = 0; d < a.ndim; ++d)
        reduces = reduces || (d < lead ? 1 : out.shape[d - lead]) != a.shape[d];
    // (a.f64: some input, self included, is f64)
    if (a.f64 || grad.dtype == DType::F64 || target.dtype == DType::F64) run<double>(grad, target, out, a, reduces);
    else run<float>(grad, target, out, a, reduces);
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
