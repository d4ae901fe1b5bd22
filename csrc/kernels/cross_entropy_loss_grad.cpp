// Cross-entropy gradient w.r.t. the logits, fused: per row constants in double, then one pass
// over log_prob writing out_ij = p_ij*K_i - b_i*w_j - a_i*[j == t_i] in the compute type, with
//   a_i = m_i s_i (1-eps) w_{t_i},  b_i = m_i s_i eps / C,  K_i = a_i + b_i S_w + 2 zeta lse_i m_i z_i.
// Terms whose switch is off (eps == 0, zeta == 0) are left out, not multiplied by 0, so that an
// inf weight or lse does not turn them into NaN. The pass is vectorized (simd.h); the target
// column's -a_i is subtracted in the lane that holds it.
#include "cross_entropy_loss_grad.h"

#include <algorithm>

#include "iter.h"
#include "simd.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

template <class I, class W>
void scan_rows(const View &tv, const W *w, int64_t ws, int64_t classes, int64_t ignore, CeScan &r) {
    const I *t = reinterpret_cast<const I *>(tv.data);
    const int64_t n = tv.shape[0], st = tv.stride[0];
    for (int64_t i = 0; i < n; ++i) {
        const int64_t v = int64_t(t[i * st]);
        if (v == ignore) continue;
        if (v < 0 || v >= classes) {
            r.bad_row = i;
            r.bad_value = v;
            return;
        }
        r.weight_total += w ? load<double>(w + v * ws) : 1.0;
        ++r.kept;
    }
}

template <class I>
void scan_target(const View &tv, const View &wv, int64_t classes, int64_t ignore, CeScan &r) {
    if (!wv.data) return scan_rows<I, float>(tv, nullptr, 0, classes, ignore, r);
    dispatch_float(wv.dtype, [&](auto x) {
        using W = decltype(x);
        scan_rows<I>(tv, reinterpret_cast<const W *>(wv.data), wv.stride[0], classes, ignore, r);
    });
}

// Mode: 0 no smoothing term, 1 smoothing without weights (w_j = 1), 2 smoothing with weights.
// X is C or vec_t<C>: the same operations either way.
template <int Mode, class X, class C>
AG_INLINE X elem(X p, C k, C b, X w) {
    if constexpr (Mode == 0) return p * k;
    else if constexpr (Mode == 1) return p * k - b;
    else return p * k - b * w;
}

// Columns [j0, j1) of one row; the target column t gets -a on top afterwards, from the value its
// lane computed (the same arithmetic as the other columns, then one subtraction): no exp of its
// own and no test per vector. Each vector of log_prob is read before the same columns are
// written, so out may alias log_prob.
template <int Mode, bool Contig, class T, class C>
inline void row_block(const T *l, int64_t lc, T *o, int64_t oc, int64_t j0, int64_t j1, int64_t t, C k, C b,
                      C a, const C *w) {
    using V = vec_t<C>;
    constexpr int64_t L = lanes<C>;
    if (Contig) lc = oc = 1;
    const bool has_t = t >= j0 && t < j1;
    const auto put = [&](int64_t j, int64_t m, V e) {
        vstore_run(o + j * oc, oc, m, elem<Mode>(e, k, b, Mode == 2 ? vload_run<C>(w + j, 1, m) : V{}));
    };
    if constexpr (sizeof(T) == sizeof(C)) {
        for (int64_t j = j0; j < j1; j += L) {
            if constexpr (kExpPairs<C>) {
                if (j + 2 * L <= j1) {  // a whole pair of vectors, side by side (simd.h, vexp2)
                    V e0 = vload_run<C>(l + j * lc, lc, L), e1 = vload_run<C>(l + (j + L) * lc, lc, L);
                    vexp2(e0, e1);
                    put(j, L, e0);
                    put(j + L, L, e1);
                    j += L;
                    continue;
                }
            }
            const int64_t m = std::min(L, j1 - j);
            put(j, m, vexp(vload_run<C>(l + j * lc, lc, m)));
        }
        if (has_t) o[t * oc] = o[t * oc] - a;  // (out is C here: its lane's value, unrounded)
    } else {
        // Half types: e^l over a chunk into an L1 buffer, then the output: with the conversions
        // one vector's chain of dependent operations is too long for the CPU to overlap across
        // iterations (see elementwise.h, staged). The same arithmetic per element.
        alignas(64) V e[kStage / L];
        for (int64_t c = j0; c < j1; c += kStage) {
            const int64_t ce = std::min(j1, c + kStage);
            int64_t j = c, q = 0;
#if defined(__SSE2__)
            // bfloat16 rows by pairs of vectors (simd.h, vload_pair): half the conversion work;
            // e[q], e[q + 1] then hold the pair's elements in vload_pair's lane order
            constexpr bool pairs = Contig && Mode != 2 && kBf16Pairs<T>;
            const int64_t pe = pairs ? c + (ce - c) / (2 * L) * (2 * L) : c;
            if constexpr (pairs) {
                for (; j < pe; j += 2 * L, q += 2) {
                    V x, y;
                    vload_pair(l + j, x, y);
                    if constexpr (kExpPairs<C>) {
                        vexp2(x, y);
                        e[q] = x;
                        e[q + 1] = y;
                    } else {
                        e[q] = vexp(x);
                        e[q + 1] = vexp(y);
                    }
                }
            }
#else
            const int64_t pe = c;
#endif
            if constexpr (kExpPairs<C>)
                for (; j + 2 * L <= ce; j += 2 * L, q += 2) {
                    e[q] = vload_run<C>(l + j * lc, lc, L);
                    e[q + 1] = vload_run<C>(l + (j + L) * lc, lc, L);
                    vexp2(e[q], e[q + 1]);
                }
            for (; j < ce; j += L, ++q) e[q] = vexp(vload_run<C>(l + j * lc, lc, std::min(L, ce - j)));
            j = c, q = 0;
#if defined(__SSE2__)
            if constexpr (pairs) {
                for (; j < pe; j += 2 * L, q += 2) {
                    const vreg r = bf16_pair(elem<Mode>(e[q], k, b, V{}), elem<Mode>(e[q + 1], k, b, V{}));
                    std::memcpy(o + j, &r, sizeof r);
                }
            }
#endif
            for (; j < ce; j += L, ++q) put(j, std::min(L, ce - j), e[q]);
            if (t >= c && t < ce) {
                // t's lane in e (in a pair: vload_pair's order)
                const int64_t r = t - c, s = r % (2 * L);
                const int64_t qt = t < pe ? r / (2 * L) * 2 + pair_vector(s) : r / L;
                const int64_t lt = t < pe ? pair_lane(s) : r % L;
                store(o + t * oc, C(elem<Mode>(e[qt][lt], k, b, Mode == 2 ? w[t] : C(0)) - a));
            }
        }
    }
}

// Contiguous rows of at most 4 vectors (10 classes, say), a row per work unit, where the per-row
// work outweighs the arithmetic: each vector's length and weights worked out once for all rows,
// and the target column's -a taken in its lane (a compare and a blend) rather than by reloading
// the stored value. The same arithmetic per element as row_block.
template <int Mode, class T, class C, class RowF>
void short_rows(const T *lp, int64_t lr, T *out, int64_t orow, int64_t b, int64_t e, int64_t classes, const C *w,
                const RowF &row) {
    using V = vec_t<C>;
    using E = std::conditional_t<sizeof(C) == 4, int32_t, int64_t>;  // a lane index, as wide as C
    constexpr int64_t L = lanes<C>;
    const int nv = int((classes + L - 1) / L);
    int64_t m[4];
    V wv[4] = {};
    typename simd_of<C>::M lane;
    for (int j = 0; j < L; ++j) lane[j] = E(j);
    for (int v = 0; v < nv; ++v) {
        m[v] = std::min(L, classes - v * L);
        if constexpr (Mode == 2) wv[v] = vload_run<C>(w + v * L, 1, m[v]);
    }
    for (int64_t i = b; i < e; ++i) {
        const T *l = lp + i * lr;
        T *o = out + i * orow;
        const auto q = row(i);
        if (!q.kept) {
            for (int v = 0; v < nv; ++v) vstore_run(o + v * L, 1, m[v], V{});
            continue;
        }
        for (int v = 0; v < nv; ++v) {
            const V r = elem<Mode>(vexp(vload_run<C>(l + v * L, 1, m[v])), q.k, q.b, wv[v]);
            vstore_run(o + v * L, 1, m[v], select(lane == E(q.t - v * L), r - q.a, r));
        }
    }
}

// One weight as a double (a dtype switch per call: for the row constants, one per row).
inline double weight_at(const View &v, int64_t c) {
    double r = 1;
    dispatch_float(v.dtype, [&](auto x) { r = load<double>(reinterpret_cast<const decltype(x) *>(v.data) + c * v.stride[0]); });
    return r;
}

template <class T, class I>
void run(const CeArgs &g, const CeScan &scan) {
    using C = compute_t<T>;
    const int64_t n = g.log_prob.shape[0], classes = g.log_prob.shape[1];
    const T *lp = reinterpret_cast<const T *>(g.log_prob.data);
    T *out = reinterpret_cast<T *>(g.out.data);
    const int64_t lr = g.log_prob.stride[0], lc = g.log_prob.stride[1];
    const int64_t orow = g.out.stride[0], oc = g.out.stride[1];
    const I *tg = reinterpret_cast<const I *>(g.target.data);
    const int64_t ts = g.target.stride[0];
    const T *gl = reinterpret_cast<const T *>(g.grad_loss.data);
    const T *gz = reinterpret_cast<const T *>(g.grad_zloss.data);  // may be null
    const T *lse = reinterpret_cast<const T *>(g.lse.data);        // null unless zeta != 0
    // A 0-d or (1,) gradLoss has one element, read at offset 0 whatever its stride.
    const int64_t gls = g.grad_loss.ndim ? g.grad_loss.stride[0] : 0;
    const int64_t gzs = g.grad_zloss.ndim ? g.grad_zloss.stride[0] : 0;
    const int64_t lses = g.lse.ndim ? g.lse.stride[0] : 0;
    const bool per_row = g.reduction == CeReduction::None;
    const bool mean = g.reduction == CeReduction::Mean;
    const double eps = g.label_smoothing, zeta = g.zloss_scale;
    const bool smooth = eps != 0, zloss = zeta != 0;
    const bool weighted = g.weight.data != nullptr;
    const int mode = !smooth ? 0 : weighted ? 2 : 1;

    // S_w, summed in class order in double; the weights in the compute type only where the
    // elementwise term reads them (mode 2), once per call into the calling thread's scratch.
    double w_sum = double(classes);
    C *wc = nullptr;
    if (weighted) {
        w_sum = 0;
        if (mode == 2) wc = scratch<C>(size_t(classes));
        dispatch_float(g.weight.dtype, [&](auto x) {
            const auto *w = reinterpret_cast<const decltype(x) *>(g.weight.data);
            for (int64_t c = 0; c < classes; ++c) {
                const double v = load<double>(w + c * g.weight.stride[0]);
                w_sum += v;
                if (wc) wc[c] = C(v);
            }
        });
    }

    // Reduction scales of the scalar-gradLoss cases. 'mean' over W = 0 (every row ignored, or
    // zero weights) gives a zero gradient rather than 0/0, as PyTorch's backward does.
    double s_all = 0, z_all = 0;
    if (!per_row) {
        const double gv = load<double>(gl);
        s_all = mean ? (scan.weight_total == 0 ? 0.0 : gv / scan.weight_total) : gv;
        if (zloss) {
            const double zv = gv + (gz ? load<double>(gz) : 0.0);
            z_all = mean ? (scan.kept == 0 ? 0.0 : zv / double(scan.kept)) : zv;
        }
    }

    // Row constants in double, rounded once to the compute type.
    struct Row {
        int64_t t;
        bool kept;
        C k, b, a;
    };
    // (by value: the row loops then read the settings from the lambda, not through references)
    const auto row = [=, ignore = g.ignore_index, wview = &g.weight](int64_t i) {
        Row r{int64_t(tg[i * ts]), true, C(0), C(0), C(0)};
        if (r.t == ignore) {  // m_i = 0: the whole row is zero
            r.kept = false;
            return r;
        }
        const double s = per_row ? load<double>(gl + i * gls) : s_all;
        const double a = s * (1 - eps) * (weighted ? weight_at(*wview, r.t) : 1.0);
        const double b = smooth ? s * eps / double(classes) : 0.0;
        double k = smooth ? a + b * w_sum : a;
        if (zloss) {
            const double z = per_row ? load<double>(gl + i * gls) + (gz ? load<double>(gz + i * gzs) : 0.0) : z_all;
            k += 2 * zeta * load<double>(lse + i * lses) * z;
        }
        r.k = C(k), r.b = C(b), r.a = C(a);
        return r;
    };
    const C *w = wc;
    auto with_mode = [&](auto &&f) {
        if (mode == 0) f(std::integral_constant<int, 0>{});
        else if (mode == 1) f(std::integral_constant<int, 1>{});
        else f(std::integral_constant<int, 2>{});
    };
    // Every element is computed on its own from its row's constants, so the traversal order
    // (and the split into work units) does not change any result.
    constexpr int64_t kBlock = 4096;  // columns per work unit: wide rows still spread over threads
    const int64_t blocks = (classes + kBlock - 1) / kBlock;
    const auto mag = [](int64_t v) { return v < 0 ? -v : v; };
    if (n > 1 && mag(lr) < mag(lc)) {
        // log_prob column-major-ish: blocks of rows, walked down the columns
        constexpr int64_t kRows = 64;
        const int64_t rblocks = (n + kRows - 1) / kRows;
        parallel_for(rblocks * blocks, n * classes, [&](int64_t ub, int64_t ue) {
            Row rows[kRows];
            for (int64_t u = ub; u < ue; ++u) {
                const int64_t i0 = (u / blocks) * kRows, nr = std::min(kRows, n - i0);
                const int64_t j0 = (u % blocks) * kBlock, j1 = std::min(classes, j0 + kBlock);
                for (int64_t r = 0; r < nr; ++r) rows[r] = row(i0 + r);
                with_mode([&](auto m) {
                    constexpr int M = decltype(m)::value;
                    for (int64_t j = j0; j < j1; ++j)
                        for (int64_t r = 0; r < nr; ++r) {
                            const Row &q = rows[r];
                            T *o = out + (i0 + r) * orow + j * oc;
                            if (!q.kept) {
                                store(o, C(0));
                                continue;
                            }
                            const C v = elem<M>(exp1(load<C>(lp + (i0 + r) * lr + j * lc)), q.k, q.b,
                                                M == 2 ? w[j] : C(0));
                            store(o, j == q.t ? C(v - q.a) : v);
                        }
                });
            }
        });
        return;
    }
    const bool contig = lc == 1 && oc == 1;
    if (contig && classes <= 4 * lanes<C> && kCheapLoad<T>) {  // (else halves' long chains: row_block stages them)
        parallel_for(n, n * classes, [&](int64_t b, int64_t e) {
            with_mode([&](auto m) { short_rows<decltype(m)::value>(lp, lr, out, orow, b, e, classes, w, row); });
        });
        return;
    }
    parallel_for(n * blocks, n * classes, [&](int64_t ub, int64_t ue) {
        for (int64_t u = ub; u < ue; ++u) {
            const int64_t i = u / blocks, j0 = (u % blocks) * kBlock, j1 = std::min(classes, j0 + kBlock);
            const T *l = lp + i * lr;
            T *o = out + i * orow;
            const Row q = row(i);
            if (!q.kept) {
                for (int64_t j = j0; j < j1; j += lanes<C>)
                    vstore_run(o + j * oc, oc, std::min<int64_t>(lanes<C>, j1 - j), vec_t<C>{});
                continue;
            }
            with_mode([&](auto m) {
                constexpr int M = decltype(m)::value;
                if (contig) row_block<M, true>(l, 1, o, 1, j0, j1, q.t, q.k, q.b, q.a, w);
                else row_block<M, false>(l, lc, o, oc, j0, j1, q.t, q.k, q.b, q.a, w);
            });
        }
    });
}

}  // namespace

CeScan cross_entropy_scan_kernel(const View &target, const View &weight, int64_t classes, int64_t ignore_index) {
    CeScan r;
    if (target.dtype == DType::I32) scan_target<int32_t>(target, weight, classes, ignore_index, r);
    else scan_target<int64_t>(target, weight, classes, ignore_index, r);
    return r;
}

void cross_entropy_loss_grad_kernel(const CeArgs &a, const CeScan &scan) {
    if (a.out.numel() == 0) return;
    dispatch_float(a.log_prob.dtype, [&](auto x) {
        using T = decltype(x);
        if (a.target.dtype == DType::I32) run<T, int32_t>(a, scan);
        else run<T, int64_t>(a, scan);
    });
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
