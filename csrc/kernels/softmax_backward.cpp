// Softmax backward: out = y * (g - s), s = sum over `dim` of g * y, accumulated in the compute
// type (float for half types) in an order fixed by the data layout alone.
#include "softmax_backward.h"

#include "iter.h"

namespace ag::kern {
namespace {

constexpr int kLanes = 16;  // independent partial sums: vectorizable and order-fixed

// One reduction line of length n (strides sg, sy, so along dim). Contig: all strides are 1.
template <bool Contig, class T, class O>
inline void line(const T *g, const T *y, O *out, int64_t n, int64_t sg, int64_t sy, int64_t so) {
    using C = compute_t<T>;
    if (Contig) sg = sy = so = 1;
    C acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l)
            acc[l] += load<C>(g + (i + l) * sg) * load<C>(y + (i + l) * sy);
    for (int l = 0; i < n; ++i, ++l) acc[l] += load<C>(g + i * sg) * load<C>(y + i * sy);
    for (int w = kLanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
    const C s = acc[0];
    for (i = 0; i < n; ++i) {
        const C yv = load<C>(y + i * sy), gv = load<C>(g + i * sg);
        store(out + i * so, yv * (gv - s));
    }
}

// Reduction along a dim that is not the fastest-moving one: columns of the innermost other
// dim are processed in blocks of width w, their sums kept in acc while walking down `dim`.
template <class T, class O>
void columns(const T *g, const T *y, O *out, const Iter<3> &it, int64_t n, const int64_t (&sd)[3]) {
    using C = compute_t<T>;
    constexpr int64_t kMaxW = 256;
    const int k = it.ndim - 1;
    const int64_t inner = it.shape[k];
    const int64_t ig = it.stride[0][k], iy = it.stride[1][k], io = it.stride[2][k];
    // Keep one block of the inputs (n * w elements each) near L2 size between the two passes.
    int64_t w = (64 * 1024) / (n * int64_t(sizeof(T)) * 2);
    w = std::max<int64_t>(16, std::min<int64_t>(kMaxW, w)) & ~int64_t(15);
    const int64_t blocks = (inner + w - 1) / w;
    Iter<3> outer = it;
    outer.ndim = k;
    const int64_t units = outer.numel() * blocks;
    parallel_for(units, units * w * n, [&](int64_t b, int64_t e) {
        C acc[kMaxW];
        for (int64_t u = b; u < e; ++u) {
            const Walker<3> pos(outer, u / blocks);
            const int64_t j0 = (u % blocks) * w, cols = std::min(w, inner - j0);
            const T *gb = g + pos.off[0] + j0 * ig;
            const T *yb = y + pos.off[1] + j0 * iy;
            O *ob = out + pos.off[2] + j0 * io;
            for (int64_t j = 0; j < cols; ++j) acc[j] = C(0);
            if (ig == 1 && iy == 1) {
                for (int64_t d = 0; d < n; ++d) {
                    const T *gr = gb + d * sd[0], *yr = yb + d * sd[1];
                    for (int64_t j = 0; j < cols; ++j) acc[j] += load<C>(gr + j) * load<C>(yr + j);
                }
            } else {
                for (int64_t d = 0; d < n; ++d)
                    for (int64_t j = 0; j < cols; ++j)
                        acc[j] += load<C>(gb + d * sd[0] + j * ig) * load<C>(yb + d * sd[1] + j * iy);
            }
            for (int64_t d = 0; d < n; ++d)
                for (int64_t j = 0; j < cols; ++j) {
                    const C yv = load<C>(yb + d * sd[1] + j * iy), gv = load<C>(gb + d * sd[0] + j * ig);
                    store(ob + d * sd[2] + j * io, yv * (gv - acc[j]));
                }
        }
    });
}

template <class T, class O>
void run(const View &gv, const View &yv, int dim, const View &ov) {
    const T *g = reinterpret_cast<const T *>(gv.data);
    const T *y = reinterpret_cast<const T *>(yv.data);
    O *out = reinterpret_cast<O *>(ov.data);
    const bool scalar = gv.ndim == 0;
    const int64_t n = scalar ? 1 : gv.shape[dim];
    const int64_t sd[3] = {scalar ? 0 : gv.stride[dim], scalar ? 0 : yv.stride[dim],
                           scalar ? 0 : ov.stride[dim]};
    const int64_t *strides[3] = {gv.stride, yv.stride, ov.stride};
    const Iter<3> it = make_iter<3>(gv.shape, gv.ndim, strides, scalar ? -1 : dim);
    const int64_t lines = it.numel();
    const bool contig = sd[0] == 1 && sd[1] == 1 && sd[2] == 1;
    if (!contig && it.ndim > 0) {
        columns(g, y, out, it, n, sd);
        return;
    }
    parallel_for(lines, lines * n, [&](int64_t b, int64_t e) {
        Walker<3> pos(it, b);
        for (int64_t l = b; l < e; ++l, pos.next()) {
            if (contig)
                line<true>(g + pos.off[0], y + pos.off[1], out + pos.off[2], n, 1, 1, 1);
            else
                line<false>(g + pos.off[0], y + pos.off[1], out + pos.off[2], n, sd[0], sd[1], sd[2]);
        }
    });
}

}  // namespace

void softmax_backward(const View &g, const View &y, int dim, const View &out) {
    if (g.numel() == 0) return;
    dispatch_float(g.dtype, [&](auto t) {
        dispatch_float(out.dtype, [&](auto o) { run<decltype(t), decltype(o)>(g, y, dim, out); });
    });
}

}  // namespace ag::kern
