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

template <class C>
inline C term(C g, C t, bool log_target) {
    return (log_target ? exp1(t) : t) * g;  // e^t as the pointwise path computes it
}

// Stores a double into a view element of any float dtype (once per out element: the switch is
// cheap next to the sum before it, and spares instantiating the sum loops per out dtype).
inline void store_any(char *p, DType o, double v) {
    dispatch_float(o, [&](auto x) { store(reinterpret_cast<decltype(x) *>(p), v); });
}

inline size_t elem_size(DType t) { return t == DType::F64 ? 8 : t == DType::F32 ? 4 : 2; }

template <class C, class G, class T>
void reduce(const KlArgs &a) {
    constexpr int64_t kW = 256;  // out elements per work unit along the innermost kept dim
    const View o = broadcast_to(a.out, a.shape, a.ndim);
    const View gv = broadcast_to(a.grad, a.shape, a.ndim);
    const View tv = broadcast_to(a.target, a.shape, a.ndim);
    // Split B's dims into kept ones (out has them) and reduced ones (out is 1 or missing there).
    const int lead = a.ndim - a.out.ndim;
    int64_t ksh[kMaxRank], kso[kMaxRank], ksg[kMaxRank], kst[kMaxRank];
    int64_t rsh[kMaxRank], rsg[kMaxRank], rst[kMaxRank];
    int nk = 0, nr = 0;
    int64_t rnum = 1;
    for (int d = 0; d < a.ndim; ++d) {
        const int64_t od = d < lead ? 1 : a.out.shape[d - lead];
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
    const G *g = reinterpret_cast<const G *>(a.grad.data);
    const T *t = reinterpret_cast<const T *>(a.target.data);
    char *out = a.out.data;
    const size_t oes = elem_size(a.out.dtype);
    const DType odt = a.out.dtype;

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
                for (int64_t j = 0; j < cols; ++j)
                    store_any(out + (kp.off[0] + (j0 + j) * kio) * int64_t(oes), odt, 0.0);
            }
        });
        return;
    }
    const bool lt = a.log_target;
    const double c = a.scale;
    const int64_t kout = kit.numel();
    constexpr int64_t kChunk = 1 << 15;
    if (kout <= 64 && rnum >= 2 * kChunk) {
        // Few out elements with long sums: each sum is cut into fixed chunks of pre-images (by
        // shape alone), summed in parallel, then added up in chunk order.
        const int64_t nch = (rnum + kChunk - 1) / kChunk;
        double *part = scratch<double>(size_t(kout * nch));  // the calling thread's
        parallel_for(kout * nch, kout * rnum, [&](int64_t b, int64_t e) {
            for (int64_t u = b; u < e; ++u) {
                const Walker<3> kp(kit, u / nch);
                const int64_t r0 = (u % nch) * kChunk, r1 = std::min(rnum, r0 + kChunk);
                Walker<2> rp(rit, r0);
                double s = 0;
                for (int64_t r = r0; r < r1; ++r, rp.next())
                    s += double(term(load<C>(g + kp.off[1] + rp.off[0]), load<C>(t + kp.off[2] + rp.off[1]), lt));
                part[size_t(u)] = s;
            }
        });
        for (int64_t k = 0; k < kout; ++k) {
            double s = 0;
            for (int64_t ch = 0; ch < nch; ++ch) s += part[size_t(k * nch + ch)];
            const Walker<3> kp(kit, k);
            store_any(out + kp.off[0] * int64_t(oes), odt, -s * c);
        }
        return;
    }
    // innermost reduced dim: a plain loop; the rest walked with Walker
    const int64_t rin = rit.shape[rit.ndim - 1];
    const int64_t rig = rit.stride[0][rit.ndim - 1], rit_ = rit.stride[1][rit.ndim - 1];
    Iter<2> router = rit;
    router.ndim = rit.ndim - 1;
    const int64_t rout = router.numel();
    // Loop order follows memory (reduced dim innermost when its target stride is the smaller);
    // either way each out element adds its terms in the same (reduced index) order.
    const auto mag = [](int64_t s) { return s < 0 ? -s : s; };
    const bool r_inner = mag(rit_) < mag(kit_) || (mag(rit_) == mag(kit_) && mag(rig) <= mag(kig));

    parallel_for(units, kouter.numel() * kin * rnum, [&](int64_t b, int64_t e) {
        double acc[kW];
        for (int64_t u = b; u < e; ++u) {
            const Walker<3> kp(kouter, u / blocks);
            const int64_t j0 = (u % blocks) * kW, cols = std::min(kW, kin - j0);
            const G *gb = g + kp.off[1] + j0 * kig;
            const T *tb = t + kp.off[2] + j0 * kit_;
            std::fill(acc, acc + cols, 0.0);
            Walker<2> rp(router, 0);
            for (int64_t ro = 0; ro < rout; ++ro, rp.next()) {
                const G *gr = gb + rp.off[0];
                const T *tr = tb + rp.off[1];
                if (r_inner) {
                    for (int64_t j = 0; j < cols; ++j) {
                        double s = acc[j];
                        for (int64_t r = 0; r < rin; ++r)
                            s += double(term(load<C>(gr + j * kig + r * rig), load<C>(tr + j * kit_ + r * rit_), lt));
                        acc[j] = s;
                    }
                } else {
                    for (int64_t r = 0; r < rin; ++r)
                        for (int64_t j = 0; j < cols; ++j)
                            acc[j] += double(term(load<C>(gr + j * kig + r * rig), load<C>(tr + j * kit_ + r * rit_), lt));
                }
            }
            for (int64_t j = 0; j < cols; ++j)
                store_any(out + (kp.off[0] + (j0 + j) * kio) * int64_t(oes), odt, -acc[j] * c);
        }
    });
}

template <class C, class G, class T>
void pointwise(const KlArgs &a) {
    // out has B's shape up to leading size-1 dims: view it with B's shape
    const View o = broadcast_to(a.out, a.shape, a.ndim);
    const C c = C(a.scale);
    dispatch_float(o.dtype, [&](auto x) {
        using O = decltype(x);
        // log_target decided outside the op, which stays branch-free
        if (a.log_target)
            map<C, O, G, T>(o, {a.grad, a.target}, [c](auto gv, auto tv) { return -(vexp(tv) * gv) * c; });
        else
            map<C, O, G, T>(o, {a.grad, a.target}, [c](auto gv, auto tv) { return -(tv * gv) * c; });
    });
}

template <class C, class G, class T>
void run(const KlArgs &a, bool reduces) {
    if (reduces) reduce<C, G, T>(a);
    else pointwise<C, G, T>(a);
}

}  // namespace

void kl_div_backward_kernel(const KlArgs &a) {
    if (a.out.numel() == 0) return;
    // Does B have a dim of size != 1 that out lacks (or has as 1)?
    bool reduces = false;
    const int lead = a.ndim - a.out.ndim;
    for (int d = 0; d < a.ndim; ++d)
        reduces = reduces || (d < lead ? 1 : a.out.shape[d - lead]) != a.shape[d];
    dispatch_float(a.grad.dtype, [&](auto xg) {
        dispatch_float(a.target.dtype, [&](auto xt) {
            using G = decltype(xg);
            using T = decltype(xt);
            if constexpr (std::is_same_v<common_compute_t<G, T>, double>) {
                run<double, G, T>(a, reduces);
            } else {
                if (a.f64) run<double, G, T>(a, reduces);
                else run<float, G, T>(a, reduces);
            }
        });
    });
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
