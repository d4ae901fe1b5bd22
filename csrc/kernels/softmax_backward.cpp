// Softmax backward: out = y * (g - s), s = sum over `dim` of g * y, accumulated in the compute
// type (float for half types) in an order fixed by the shape and the inputs' layout: where both
// inputs are contiguous along dim, 16 partial sums (element i into sum i % 16) added pairwise at
// the end; otherwise one sum per column, in index order. Vectorized with simd.h (same bits on every
// ISA); the two passes over a line or a block of columns reread it from cache.
#include "softmax_backward.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "elementwise.h"

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

constexpr int kLanes = 16;  // partial sums of a line: one float vector, two double vectors
constexpr int64_t kMaxW = 1024;  // columns per block of a reduction over an outer dim (longer runs per row: the prefetchers follow them)

// A line: n elements at element steps sg, sy, so along dim (all 1 for contiguous lines).
template <class T, class O>
struct Line {
    const T *g, *y;
    O *out;
};

// Whether a line's dot product over T goes by pairs of vectors (simd.h, vload_pair): bfloat16 on
// x86 where 16 elements are whole pairs (SSE2, AVX2: not AVX-512's 32), about half the conversion
// work. Its sums then sit in vload_pair's lane order (Dot::at), each still one sum of the same
// elements in the same order.
template <class C, class T>
constexpr bool kDotPairs = std::is_same_v<C, float> && kBf16Pairs<T> && kLanes % (2 * lanes<C>) == 0;

// The 16 partial sums of a line's dot product, in vectors: element i goes to sum i % 16; a short
// last block is zero-padded (adding +0 leaves a partial sum as it is: one that starts at +0 is
// never -0).
template <class C, bool Paired = false>
struct Dot {
    static constexpr int64_t L = lanes<C>, NV = kLanes / L;
    vec_t<C> acc[NV] = {};

    // elements [k, k + m) of the line, k a multiple of 16, 0 < m <= 16 (16 in the loop body)
    template <class T>
    AG_INLINE void add(const T *g, const T *y, int64_t k, int64_t m, int64_t sg, int64_t sy) {
        if constexpr (Paired) {
            for (int64_t p = 0; p < NV / 2; ++p) {
                const int64_t i = k + p * 2 * L, mp = std::min(2 * L, m - p * 2 * L);
                vec_t<C> g0, g1, y0, y1;
                if (mp == 2 * L && sg == 1 && sy == 1) {
                    vload_pair(g + i, g0, g1);
                    vload_pair(y + i, y0, y1);
                } else if (mp > 0) {
                    T bg[2 * L] = {}, by[2 * L] = {};
                    for (int64_t q = 0; q < mp; ++q) bg[q] = g[(i + q) * sg], by[q] = y[(i + q) * sy];
                    vload_pair(bg, g0, g1);
                    vload_pair(by, y0, y1);
                } else {
                    break;
                }
                acc[2 * p] += g0 * y0;
                acc[2 * p + 1] += g1 * y1;
            }
        } else {
            for (int64_t v = 0; v < NV; ++v) {
                const int64_t i = k + v * L, mv = std::min(L, m - v * L);
                if (mv > 0) acc[v] += vload_run<C>(g + i * sg, sg, mv) * vload_run<C>(y + i * sy, sy, mv);
            }
        }
    }
    // sum i (< 16): where acc holds it
    static constexpr int64_t at(int64_t i) {
        if (!Paired) return i;
        const int64_t r = i % (2 * L);
        return (i / (2 * L) * 2 + pair_vector(r)) * L + pair_lane(r);
    }
    // the sums added pairwise: sum l += sum l + w for l < w, w = 8, 4, 2, 1 (a fixed order)
    C total() const {
        C v[kLanes], a[kLanes];
        std::memcpy(v, acc, sizeof v);
        for (int64_t i = 0; i < kLanes; ++i) a[i] = v[at(i)];
        for (int w = kLanes / 2; w > 0; w /= 2)
            for (int l = 0; l < w; ++l) a[l] += a[l + w];
        return a[0];
    }
    // the same sum, each step one add of vectors: for short lines, whose cost it mostly is (in the
    // long lines' loops, GCC then keeps acc in memory on AVX-512: 2x slower there). acc is copied
    // first: taking its address would keep it in memory where it is accumulated.
    C total_vec() const {
        vec_t<C> r[NV];
        for (int64_t v = 0; v < NV; ++v) r[v] = acc[v];
        for (int64_t h = NV / 2; h > 0; h /= 2)  // w = h L: whole vectors
            for (int64_t v = 0; v < h; ++v) r[v] += r[v + h];
        return fold<L / 2>(r[0]);
    }
    template <int W, class A> AG_INLINE static C fold(A a) {  // w = W, ..., 1 within a vector
        if constexpr (W == 0) {
            return a[0];
        } else {
            typedef C part __attribute__((vector_size(W * sizeof(C))));
            part lo, hi;
            std::memcpy(&lo, &a, sizeof lo);
            std::memcpy(&hi, reinterpret_cast<const char *>(&a) + sizeof lo, sizeof hi);
            return fold<W / 2>(lo + hi);
        }
    }
};

// y * (g - s) for the vector at element j of a contiguous line
template <class C, class T, class O> AG_INLINE auto out_at(const Line<T, O> &l, C s, int64_t j) {
    return vload<C>(l.y + j) * (vload<C>(l.g + j) - s);
}
// y * (g - s) for elements [i, i + 2 lanes) of a contiguous bfloat16 line (x86), by a pair of
// vectors (simd.h, vload_pair) packed into one register: about half the conversion work; its lane
// order changes no value. (Dependent types: the x86-only names are looked up only where used.)
template <class C, class T, class O> AG_INLINE auto pair_of(const Line<T, O> &l, C s, int64_t i) {
    vec_t<C> g0, g1, y0, y1;
    vload_pair(l.g + i, g0, g1);
    vload_pair(l.y + i, y0, y1);
    return bf16_pair(y0 * (g0 - s), y1 * (g1 - s));
}
// out = y * (g - s) for elements [i, i + 2 lanes) of a contiguous line (bfloat16 through and
// through: by pair_of)
template <class C, class T, class O> AG_INLINE void apply_pair(const Line<T, O> &l, C s, int64_t i) {
    constexpr int64_t L = lanes<C>;
    if constexpr (kBf16Pairs<T, O> && std::is_same_v<C, float>) {
        const auto r = pair_of(l, s, i);
        std::memcpy(l.out + i, &r, sizeof r);
    } else {
        vstore2(l.out + i, out_at(l, s, i), out_at(l, s, i + L));
    }
}

// out = y * (g - s) for elements [k, k + m) of a line, 0 < m <= 16
template <class C, class T, class O>
AG_INLINE void apply(const Line<T, O> &l, C s, int64_t k, int64_t m, int64_t sg, int64_t sy, int64_t so) {
    constexpr int64_t L = lanes<C>;
    if constexpr (kLanes % (2 * L) == 0) {
        if (m == kLanes && sg == 1 && sy == 1 && so == 1) {  // whole vectors, two at a time
            for (int64_t i = k; i < k + kLanes; i += 2 * L) apply_pair(l, s, i);
            return;
        }
    }
    for (int64_t v = 0; v < kLanes / L; ++v) {
        const int64_t i = k + v * L, mv = std::min(L, m - v * L);
        if (mv > 0)
            vstore_run(l.out + i * so, so, mv,
                       vload_run<C>(l.y + i * sy, sy, mv) * (vload_run<C>(l.g + i * sg, sg, mv) - s));
    }
}

template <class C, class T, class O>
AG_INLINE C dot(const Line<T, O> &l, int64_t n, int64_t sg, int64_t sy) {
    Dot<C, kDotPairs<C, T>> d;
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes) d.add(l.g, l.y, k, kLanes, sg, sy);
    if (k < n) d.add(l.g, l.y, k, n - k, sg, sy);
    return d.total();
}

template <class C, class T, class O>
AG_INLINE void apply_all(const Line<T, O> &l, C s, int64_t n, int64_t sg, int64_t sy, int64_t so) {
    int64_t k = 0;
    if constexpr (2 * lanes<C> > kLanes && kBf16Pairs<T, O>) {  // (AVX-512: a pair is 32 elements)
        if (sg == 1 && sy == 1 && so == 1)
            for (; k + 2 * lanes<C> <= n; k += 2 * lanes<C>) apply_pair(l, s, k);
    }
    for (; k + kLanes <= n; k += kLanes) apply(l, s, k, kLanes, sg, sy, so);
    if (k < n) apply(l, s, k, n - k, sg, sy, so);
}

// A contiguous run of n elements of out, r(j) the vector at j, by streaming stores: every byte, the
// partial vectors at the ends by 16 bytes. An ordinary store into a cache line that streaming
// stores also write (or into the line next to it) costs a read and a partial write of memory: with
// a row's ends written so, 1.6-1.8 times the time (Zen 3, (32, 64, 4096) f32). False, storing
// nothing, where po's alignment or n does not allow it. r2(j), where not null, gives the pair of
// vectors at j packed into one register (bfloat16, x86: pair_of): streamed whole from where po + j
// is aligned to it, half the conversions and stores of vstream's half-register ones.
template <class C, class O, class R, class R2 = std::nullptr_t>
AG_INLINE bool stream_run(O *po, int64_t n, R &&r, R2 &&r2 = nullptr) {
    constexpr int64_t L = lanes<C>;
    const int64_t h = aligned_head<O, C>(po, n);
    if (!(stream_bytes<O, C> >= 16 && reinterpret_cast<uintptr_t>(po) % 16 == 0 && n >= L &&
          n * int64_t(sizeof(O)) % 16 == 0 && h >= 0))
        return false;
    int64_t j = 0;
    if (h > 0) vstream_part(po, r(0), 0, h), j = h;
    if constexpr (!std::is_null_pointer_v<std::remove_reference_t<R2>>) {
        constexpr int64_t P = 2 * stream_bytes<O, C>;  // (a pair's bytes)
        if (reinterpret_cast<uintptr_t>(po + j) % P != 0 && j + L <= n) vstream(po + j, r(j)), j += L;
        for (; j + 2 * L <= n; j += 2 * L) stream_reg(po + j, r2(j));
    }
    for (; j + L <= n; j += L) vstream(po + j, r(j));
    // (the lanes before j of this last vector may read inputs the vectors before overwrote, where
    // out is one: only the lanes from j on are stored)
    if (j < n) vstream_part(po + n - L, r(n - L), L - (n - j), L);
    return true;
}

// A contiguous line written by stream_run (bfloat16 by pairs where it can). r (out_at's vectors)
// comes from the caller: built here, GCC stopped inlining the baseline build's line writer.
template <class C, class T, class O, class R>
AG_INLINE bool stream_line(const Line<T, O> &l, C s, int64_t n, const R &r) {
    if constexpr (kBf16Pairs<T, O> && std::is_same_v<C, float>)
        return stream_run<C>(l.out, n, r, [&](int64_t j) { return pair_of(l, s, j); });
    else
        return stream_run<C>(l.out, n, r);
}

// Lines [b, e) of the iteration space, each summed, then written. Pipelined, line l is written in
// the same loop that sums line l + 1, so that memory is read and written all along (two passes per
// line would leave the reads idle while a line is written from cache); but its working set, two
// lines of each input, may not fit in L1 where one does: see run. Streamed (contiguous lines in two
// passes): each line written by streaming stores where its alignment allows (stream_run).
template <bool Contig, class T, class O>
void lines(const T *g, const T *y, O *out, const Iter<3> &it, int64_t b, int64_t e, int64_t n,
           const int64_t (&sd)[3], bool pipelined, bool stream = false) {
    using C = compute_t<T>;
    const int64_t sg = Contig ? 1 : sd[0], sy = Contig ? 1 : sd[1], so = Contig ? 1 : sd[2];
    const auto write = [&](const Line<T, O> &l, C s) {
        const auto r = [&](int64_t j) { return out_at(l, s, j); };
        if (!(Contig && stream && stream_line(l, s, n, r))) apply_all(l, s, n, sg, sy, so);
    };
    Walker<3> pos(it, b);
    Line<T, O> cur{g + pos.off[0], y + pos.off[1], out + pos.off[2]};
    C s = dot<C>(cur, n, sg, sy);
    for (int64_t l = b; l + 1 < e; ++l) {
        pos.next();
        const Line<T, O> next{g + pos.off[0], y + pos.off[1], out + pos.off[2]};
        if (Contig && pipelined) {
            Dot<C, kDotPairs<C, T>> d;
            int64_t k = 0;
            if constexpr (2 * lanes<C> > kLanes && kBf16Pairs<T, O>) {  // (AVX-512, as in apply_all)
                for (; k + 2 * kLanes <= n; k += 2 * kLanes) {
                    apply_pair(cur, s, k);
                    d.add(next.g, next.y, k, kLanes, 1, 1);
                    d.add(next.g, next.y, k + kLanes, kLanes, 1, 1);
                }
            }
            for (; k + kLanes <= n; k += kLanes) {
                apply(cur, s, k, kLanes, 1, 1, 1);
                d.add(next.g, next.y, k, kLanes, 1, 1);
            }
            if (k < n) {
                apply(cur, s, k, n - k, 1, 1, 1);
                d.add(next.g, next.y, k, n - k, 1, 1);
            }
            s = d.total();
        } else {
            write(cur, s);
            s = dot<C>(next, n, sg, sy);
        }
        cur = next;
    }
    write(cur, s);
    if (stream) sfence();
}

// Contiguous lines of n <= 16 NB elements, [b, e) of the iteration space: the arithmetic of dot
// and apply_all, with each vector's length worked out once for all lines (the general loops'
// per-vector tests and lengths cost more than a short line's arithmetic).
template <int NB, class T, class O>
void short_lines(const T *g, const T *y, O *out, const Iter<3> &it, int64_t b, int64_t e, int64_t n) {
    using C = compute_t<T>;
    constexpr int L = lanes<C>, NV = kLanes / L;
    int64_t m[NB][NV];
    for (int kb = 0; kb < NB; ++kb)
        for (int v = 0; v < NV; ++v) m[kb][v] = std::clamp<int64_t>(n - kb * kLanes - v * L, 0, L);
    const auto line = [&](const T *pg, const T *py, O *po) {
        Dot<C> d;
        for (int kb = 0; kb < NB; ++kb)
            for (int v = 0; v < NV; ++v) {
                const int64_t i = kb * kLanes + v * L;
                if (m[kb][v] > 0) d.acc[v] += vload_run<C>(pg + i, 1, m[kb][v]) * vload_run<C>(py + i, 1, m[kb][v]);
            }
        const C s = d.total_vec();
        for (int kb = 0; kb < NB; ++kb)
            for (int v = 0; v < NV; ++v) {
                const int64_t i = kb * kLanes + v * L;
                if (m[kb][v] > 0) vstore_run(po + i, 1, m[kb][v], vload_run<C>(py + i, 1, m[kb][v]) * (vload_run<C>(pg + i, 1, m[kb][v]) - s));
            }
    };
    if (it.ndim == 1) {  // one run of lines (a 2-d array): their offsets are multiples of one stride
        const int64_t s0 = it.stride[0][0], s1 = it.stride[1][0], s2 = it.stride[2][0];
        for (int64_t l = b; l < e; ++l) line(g + l * s0, y + l * s1, out + l * s2);
        return;
    }
    Walker<3> pos(it, b);
    for (int64_t l = b; l < e; ++l, pos.next()) line(g + pos.off[0], y + pos.off[1], out + pos.off[2]);
}

// Elements from p to the first one aligned to a vector of them (lanes<C> elements of T), where rows
// s elements apart all share p's alignment; else 0.
template <class C, class T> int64_t row_shift(const T *p, int64_t s) {
    const int64_t h = aligned_head<T, C>(p, lanes<C>);
    return h >= 0 && s * int64_t(sizeof(T)) % stream_bytes<T, C> == 0 ? h : 0;
}

// f(v, j) for the whole vectors v = 0, 1, ... of a row of n >= L elements, at j = 0, then from h
// (0 <= h < L) on every L, the last at n - L (overlapping the one before where L does not divide
// the rest).
template <int64_t L, class F> AG_INLINE void walk(int64_t n, int64_t h, F &&f) {
    int64_t v = 0, j = 0;
    if (h > 0) f(v++, j), j = h;
    for (; j + L <= n; j += L) f(v++, j);
    if (j < n) f(v, n - L);
}

// Reduction along a dim that is not the fastest-moving one: columns of the innermost other dim are
// processed in blocks of width w, their sums kept in acc while walking down `dim`, then the walk
// repeated for the output (the block rereads from L2). A large output is written with streaming
// stores: its rows are not read again.
template <class T, class O>
void columns(const T *g, const T *y, O *out, const Iter<3> &it, int64_t n, const int64_t (&sd)[3], bool from_memory) {
    using C = compute_t<T>;
    using V = vec_t<C>;
    constexpr int64_t L = lanes<C>;
    const int k = it.ndim - 1;
    const int64_t inner = it.shape[k];
    const int64_t ig = it.stride[0][k], iy = it.stride[1][k], io = it.stride[2][k];
    // A block of both inputs (n * w elements each) within 256 KiB, a part of any L2.
    int64_t w = (256 * 1024) / (n * int64_t(sizeof(T)) * 2);
    w = std::max<int64_t>(kLanes, std::min<int64_t>(kMaxW, w)) & ~int64_t(kLanes - 1);
    const int64_t numel = it.numel() * n;
    const bool stream = stream_output(out, numel * int64_t(sizeof(O)), numel * int64_t(2 * sizeof(T) + sizeof(O)));
    const int64_t blocks = (inner + w - 1) / w;
    Iter<3> outer = it;
    outer.ndim = k;
    const int64_t units = outer.numel() * blocks;
    struct Job {
        const T *g, *y;
        O *out;
        int64_t n, inner, w, blocks, ig, iy, io, sg, sy, so;
    };
    struct Block {
        const T *g, *y;
        O *out;
        int64_t cols, nv;
    };
    const Job job{g, y, out, n, inner, w, blocks, ig, iy, io, sd[0], sd[1], sd[2]};
    parallel_for(units, units * w * n, [&](int64_t b, int64_t e) {
        // a local copy: vector stores may alias memory, so values read through the closure's
        // references would be reloaded after each one
        const Job J = job;
        V acc[kMaxW / lanes<C> + 1];
        const auto block = [&](int64_t u) {
            const Walker<3> pos(outer, u / J.blocks);
            const int64_t j0 = (u % J.blocks) * J.w, cols = std::min(J.w, J.inner - j0);
            return Block{J.g + pos.off[0] + j0 * J.ig, J.y + pos.off[1] + j0 * J.iy, J.out + pos.off[2] + j0 * J.io,
                         cols, (cols + L - 1) / L};
        };
        // Rows of a block: full vectors of a contiguous row in a tight loop (the fewer instructions
        // per vector, the more loads the CPU keeps in flight: the rows sit a stride apart, each
        // a new stream for the prefetchers), then any rest element by vector run.
        // bfloat16 through and through, all contiguous: whole pairs of vectors (simd.h, vload_pair)
        // in both passes, so each column keeps its lane in a; half the conversion work
        [[maybe_unused]] const bool pairs = kBf16Pairs<T, O> && J.ig == 1 && J.iy == 1 && J.io == 1;
        const auto sum = [&](V *a, const Block &k, int64_t d) {  // row d of a block into its sums
            const T *pg = k.g + d * J.sg, *py = k.y + d * J.sy;
            int64_t v = 0;
#if defined(__SSE2__)
            if constexpr (kBf16Pairs<T, O>)
                if (pairs)
                    for (const int64_t full2 = k.cols / (2 * L) * 2; v < full2; v += 2) {
                        V g0, g1, y0, y1;
                        vload_pair(pg + v * L, g0, g1);
                        vload_pair(py + v * L, y0, y1);
                        a[v] += g0 * y0;
                        a[v + 1] += g1 * y1;
                    }
#endif
            if (J.ig == 1 && J.iy == 1)
                for (const int64_t full = k.cols / L; v < full; ++v) a[v] += vload<C>(pg + v * L) * vload<C>(py + v * L);
            for (; v < k.nv; ++v) {
                const int64_t j = v * L, m = std::min(L, k.cols - j);
                a[v] += vload_run<C>(pg + j * J.ig, J.ig, m) * vload_run<C>(py + j * J.iy, J.iy, m);
            }
        };
        const auto apply = [&](const V *a, const Block &k, int64_t d) {  // row d of a block's output
            const T *pg = k.g + d * J.sg, *py = k.y + d * J.sy;
            O *po = k.out + d * J.so;
            int64_t v = 0;
            if (J.ig == 1 && J.iy == 1 && J.io == 1) {
                const int64_t full = k.cols / L;
#if defined(__SSE2__)
                if constexpr (kBf16Pairs<T, O>) {
                    const bool st = stream && reinterpret_cast<uintptr_t>(po) % sizeof(vreg) == 0;
                    for (const int64_t full2 = k.cols / (2 * L) * 2; v < full2; v += 2) {
                        V g0, g1, y0, y1;
                        vload_pair(pg + v * L, g0, g1);
                        vload_pair(py + v * L, y0, y1);
                        const vreg r = bf16_pair(y0 * (g0 - a[v]), y1 * (g1 - a[v + 1]));
                        if (st) stream_reg(po + v * L, r);
                        else std::memcpy(po + v * L, &r, sizeof r);
                    }
                }
#endif
                if (stream && reinterpret_cast<uintptr_t>(po) % stream_bytes<O, C> == 0)
                    for (; v < full; ++v) vstream(po + v * L, vload<C>(py + v * L) * (vload<C>(pg + v * L) - a[v]));
                for (; v < full; ++v) vstore(po + v * L, vload<C>(py + v * L) * (vload<C>(pg + v * L) - a[v]));
            }
            for (; v < k.nv; ++v) {
                const int64_t j = v * L, m = std::min(L, k.cols - j);
                vstore_run(po + j * J.io, J.io, m,
                           vload_run<C>(py + j * J.iy, J.iy, m) * (vload_run<C>(pg + j * J.ig, J.ig, m) - a[v]));
            }
        };
        // Inputs from memory: while a block is written (its inputs reread from cache), the next
        // block's rows are prefetched. Each row is a separate stream, more than the hardware
        // prefetchers follow: the sums would otherwise wait on memory, and reads idle during writes.
        // (Not where a block's rows are contiguous with each other: one stream, which they follow.)
        const bool ahead = from_memory && J.ig == 1 && J.iy == 1 &&
                           !(J.w >= J.inner && J.sg == J.inner && J.sy == J.inner);
        const auto prefetch = [&](const Block &k, int64_t d) {  // row d of a block's inputs
            const char *pg = reinterpret_cast<const char *>(k.g + d * J.sg), *py = reinterpret_cast<const char *>(k.y + d * J.sy);
            for (int64_t o = 0; o < k.cols * int64_t(sizeof(T)); o += 64) {
                __builtin_prefetch(pg + o);
                __builtin_prefetch(py + o);
            }
        };
        // Rows of whole vectors (all contiguous, at least a vector a row; not bfloat16's pairs):
        // each row's first vector at its start, the next at its first aligned element and every
        // vector after, the last ending at the row's end (walk): aligned loads, and for the output
        // streaming stores, which need alignment; no partial vectors. NumPy's arrays sit 16 bytes
        // past an alignment: from the rows' starts half the loads would cross a cache line and no
        // store could stream. Each column's sum is the same operations in whichever lane: the same
        // bits. The sums go by column into lin (at sums), so that the output rows read them at
        // their own alignment.
        const bool whole = !pairs && J.ig == 1 && J.iy == 1 && J.io == 1;
        alignas(64) C lin[kMaxW + L];
        const auto wide = [&](const Block &k, const Block *next) {
            const int64_t hi = row_shift<C>(k.g, J.sg);
            int64_t nvec = 0;
            walk<L>(k.cols, hi, [&](int64_t v, int64_t) { nvec = v + 1; });
            std::fill(acc, acc + nvec, V{});
            for (int64_t d = 0; d < J.n; ++d) {
                const T *pg = k.g + d * J.sg, *py = k.y + d * J.sy;
                walk<L>(k.cols, hi, [&](int64_t v, int64_t j) { acc[v] += vload<C>(pg + j) * vload<C>(py + j); });
            }
            C *const sums = lin + (L - hi) % L;  // sums + hi aligned
            walk<L>(k.cols, hi, [&](int64_t v, int64_t j) { vstore(sums + j, acc[v]); });
            for (int64_t d = 0; d < J.n; ++d) {
                const T *pg = k.g + d * J.sg, *py = k.y + d * J.sy;
                O *po = k.out + d * J.so;
                const auto r = [&](int64_t j) { return vload<C>(py + j) * (vload<C>(pg + j) - vload<C>(sums + j)); };
                if (!(stream && stream_run<C>(po, k.cols, r))) {
                    // (the last vector, which may overlap the one before, computed first: where out
                    // is an input, the vectors before it overwrite that input)
                    const V last = r(k.cols - L);
                    int64_t j = 0;
                    for (; j + L < k.cols; j += L) vstore(po + j, r(j));
                    vstore(po + k.cols - L, last);
                }
                if (next) prefetch(*next, d);
            }
        };
        // A block of at most 4 contiguous vectors a row (a small innermost dim, or many rows): the
        // same sums and outputs in tight loops, the sums in registers and each row's vector lengths
        // fixed (the general loops cost several times more per row); streaming stores and the
        // prefetch of the next block (next, or null) as there. Where a vector of T costs a dozen
        // instructions to convert (half without F16C), the sum pass keeps the converted inputs
        // (while they fit in L2) for the output pass: each element converted once.
        const auto narrow = [&](const Block &k, const Block *next, auto nv, auto keep) {
            constexpr int NV = decltype(nv)::value;
            constexpr bool K = decltype(keep)::value;
            V *kept = K ? scratch<V>(size_t(J.n) * 2 * NV) : nullptr;
            int64_t m[NV];
            for (int v = 0; v < NV; ++v) m[v] = std::min(L, k.cols - v * L);
            V a[NV] = {};
            for (int64_t d = 0; d < J.n; ++d) {
                const T *pg = k.g + d * J.sg, *py = k.y + d * J.sy;
                for (int v = 0; v < NV; ++v) {
                    const V gv = vload_run<C>(pg + v * L, 1, m[v]), yv = vload_run<C>(py + v * L, 1, m[v]);
                    a[v] += gv * yv;
                    if constexpr (K) {
                        kept[(d * NV + v) * 2] = gv;
                        kept[(d * NV + v) * 2 + 1] = yv;
                    }
                }
            }
            // every row's whole vectors streamed where the first row's are aligned and rows keep it
            constexpr int64_t SB = stream_bytes<O, C>;
            const bool st = stream && reinterpret_cast<uintptr_t>(k.out) % SB == 0 && (J.so * int64_t(sizeof(O))) % SB == 0;
            for (int64_t d = 0; d < J.n; ++d) {
                const T *pg = k.g + d * J.sg, *py = k.y + d * J.sy;
                O *po = k.out + d * J.so;
                for (int v = 0; v < NV; ++v) {
                    V r;
                    if constexpr (K) r = kept[(d * NV + v) * 2 + 1] * (kept[(d * NV + v) * 2] - a[v]);
                    else r = vload_run<C>(py + v * L, 1, m[v]) * (vload_run<C>(pg + v * L, 1, m[v]) - a[v]);
                    if (st && m[v] == L) vstream(po + v * L, r);
                    else vstore_run(po + v * L, 1, m[v], r);
                }
                if (next) prefetch(*next, d);
            }
        };
        const auto narrow_nv = [&](const Block &k, const Block *next, auto keep) {
            switch (k.nv) {
                case 1: return narrow(k, next, std::integral_constant<int, 1>{}, keep);
                case 2: return narrow(k, next, std::integral_constant<int, 2>{}, keep);
                case 3: return narrow(k, next, std::integral_constant<int, 3>{}, keep);
                default: return narrow(k, next, std::integral_constant<int, 4>{}, keep);
            }
        };
        for (int64_t u = b; u < e; ++u) {
            const Block k = block(u);
            const Block next = ahead && u + 1 < e ? block(u + 1) : Block{};
            const Block *pn = next.g ? &next : nullptr;
            if constexpr (std::is_same_v<T, O>) {  // (see run)
                if (k.nv <= 4 && J.ig == 1 && J.iy == 1 && J.io == 1) {
                    if constexpr (!kCheapLoad<T>) {
                        if (J.n * k.nv * 2 * int64_t(sizeof(V)) <= (int64_t(512) << 10)) {
                            narrow_nv(k, pn, std::true_type{});
                            continue;
                        }
                    }
                    narrow_nv(k, pn, std::false_type{});
                    continue;
                }
            }
            if (whole && k.cols >= L) {
                wide(k, pn);
                continue;
            }
            std::fill(acc, acc + k.nv, V{});
            for (int64_t d = 0; d < J.n; ++d) sum(acc, k, d);
            for (int64_t d = 0; d < J.n; ++d) {
                apply(acc, k, d);
                if (pn) prefetch(*pn, d);
            }
        }
        if (stream) sfence();
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
    const int64_t count = it.numel();
    const bool contig = sd[0] == 1 && sd[1] == 1 && sd[2] == 1;
    const int64_t total = count * n * int64_t(2 * sizeof(T) + sizeof(O));  // bytes the call moves
    const bool in_cache = total <= cache_bytes();
    // The order of the sums follows the inputs alone (lines where both run along dim, else
    // columns): out's layout changes no value.
    if (!(sd[0] == 1 && sd[1] == 1) && it.ndim > 0) {
        columns(g, y, out, it, n, sd, !in_cache);
        return;
    }
    // Contiguous lines: pipelined, or each line summed, then written from cache (two passes), by
    // where the data sit (the same results either way).
    // - In the last-level cache: pipelined where two lines of both inputs fit in 512 KiB (the
    //   smallest L2 of the CPUs measured); two passes for longer lines, which pipelined would reread
    //   from the last level. (2 threads, NumPy's offsets: f32 256x4096 to 2048x4096 and f64
    //   256x4096 5-35% faster pipelined on Zen 3 and on an Intel Xeon, whose 300 MiB L3 holds
    //   2048x4096; f32 16x131072, 512 KiB lines, 10% slower on Zen 3.)
    // - Streamed from memory: pipelined for lines of 8 KiB and more, in every dtype (2 threads,
    //   AVX2: bf16 2048x4096 10-20% faster on Zen 3 and on an Intel Xeon, f16 512x32000 20% on
    //   Zen 3, f32 4096x4096 5% on Zen 5); two passes for shorter lines, which keep fewer streams
    //   open at once. (On Zen 5 two passes once measured faster for half types: f16 2048x4096, 1
    //   thread, 1.2-1.35x, and for f32 256x4096 in cache; the later kernels measured on Zen 3 and
    //   Intel above do not.)
    // - On AMD CPUs with AVX-512 (Zen 4 and 5) the other way round: pipelined only from memory, only
    //   f32 and f64 lines of 16 KiB and more (5-10% faster); two passes in cache (f32 256x4096 and
    //   512x4096, 15-30%), for half types from memory too (bf16 and f16 lines of 16 to 64 KiB,
    //   5-17%), and for shorter lines (8 KiB: 10-35%; bench/RESULTS.md, 2026-11-28). There f32 lines
    //   from memory whose output rows all start 16 bytes aligned go in two passes instead, written
    //   by streaming stores: 1.15-1.5x faster than pipelined (f32 2048x4096, 4096x4096; 512x32000
    //   as fast or faster); so do half types' lines of 8 KiB and more (f16 15-30% faster than two
    //   passes at 16 KiB and more, 6-17% at 8 KiB; bf16, its streamed stores by pairs, 7-18%
    //   (8192x4096 on AVX-512), up to 15% at 16 KiB; 4 KiB lines a draw).
    const int64_t line = n * int64_t(sizeof(T));
    bool rows16 = contig && reinterpret_cast<uintptr_t>(out) % 16 == 0 && n * int64_t(sizeof(O)) % 16 == 0;
    for (int d = 0; d < it.ndim; ++d) rows16 = rows16 && it.stride[2][d] * int64_t(sizeof(O)) % 16 == 0;
    const bool stream = amd_avx512() && std::is_same_v<T, O> && sizeof(T) <= 4 &&
                        (sizeof(T) == 4 || line >= (int64_t(8) << 10)) && rows16 &&
                        stream_output(out, count * n * int64_t(sizeof(O)), total);
    const bool pipelined = !stream && (amd_avx512() ? !in_cache && sizeof(T) >= 4 && line >= (int64_t(16) << 10)
                                       : in_cache   ? 4 * line <= (int64_t(512) << 10)
                                                    : line >= (int64_t(8) << 10));
    parallel_for(count, count * n, [&](int64_t b, int64_t e) {
        // (short lines and narrow blocks have their loops only where out has the inputs' dtype:
        // the other 12 pairs take the general ones, the same results, and the build stays short)
        if constexpr (std::is_same_v<T, O>) {
            if (contig && n <= 4 * kLanes) {
                switch ((n + kLanes - 1) / kLanes) {
                    case 1: return short_lines<1>(g, y, out, it, b, e, n);
                    case 2: return short_lines<2>(g, y, out, it, b, e, n);
                    case 3: return short_lines<3>(g, y, out, it, b, e, n);
                    default: return short_lines<4>(g, y, out, it, b, e, n);
                }
            }
        }
        if (contig) lines<true>(g, y, out, it, b, e, n, sd, pipelined, stream);
        else lines<false>(g, y, out, it, b, e, n, sd, false);
    });
}

// Strides of a dense tensor of v's shape with its dims in v's order (by |stride|): C order for a
// C-order v, F order for an F-order one, so that the loops walk both alike.
void dense_like(const View &v, int64_t *stride) {
    int d[kMaxRank];
    for (int k = 0; k < v.ndim; ++k) d[k] = k;
    std::stable_sort(d, d + v.ndim, [&](int a, int b) { return std::abs(v.stride[a]) > std::abs(v.stride[b]); });
    int64_t s = 1;
    for (int k = v.ndim; k-- > 0;) {
        stride[d[k]] = s;
        s *= v.shape[d[k]];
    }
}

}  // namespace

// Loops for out in the inputs' dtype or in their compute type; any other out dtype (a rare call)
// gets the values in the compute type into a buffer laid out like out, then each rounded once into
// out by map_convert, whose store is the one these loops use: the same bits, for a third of the
// build (16 dtype pairs of every loop took 3x the compile time of these 6).
void softmax_backward_kernel(const View &g, const View &y, int dim, const View &out) {
    const int64_t numel = g.numel();
    if (numel == 0) return;
    dispatch_float(g.dtype, [&](auto t) {
        using T = decltype(t);
        using C = compute_t<T>;
        const auto value = [](auto a) { return a; };  // (one map_convert for every such O)
        dispatch_float(out.dtype, [&](auto o) {
            using O = decltype(o);
            if constexpr (std::is_same_v<O, T> || std::is_same_v<O, C>) {
                run<T, O>(g, y, dim, out);
            } else {
                const std::unique_ptr<C[]> buf(new C[size_t(numel)]);
                View v = out;
                v.data = reinterpret_cast<char *>(buf.get());
                v.dtype = std::is_same_v<C, double> ? DType::F64 : DType::F32;
                dense_like(out, v.stride);
                run<T, C>(g, y, dim, v);
                map_convert<C>(out, {v}, value);
            }
        });
    });
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
