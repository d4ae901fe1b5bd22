// Elementwise driver, shared by the pointwise kernels (LogSigmoid, Softshrink, KlDiv backward):
// visits every element of N strided views of one shape, in parallel, in runs along one dim.
//
//   for_each_run<N>(views, body)  low level: N views of one shape (broadcast them first with
//                                 broadcast_to; stride 0 and negative strides are fine) ->
//                                 body(contig, off, step, n) for runs of n elements.
//   map<C, O, T...>(out, {in...}, op)
//                                 typed: out[i] = op(in_0[i], ...), loads converted to the
//                                 compute type C, the result rounded once into O; inputs are
//                                 broadcast (NumPy) to out's shape. op works on vectors
//                                 (simd.h) when it can, else on scalars.
//
// Every element is computed on its own, so results do not depend on how the work is split:
// bitwise identical for any thread count. Visiting order is unspecified; a body must not depend
// on it. `out` may be one of the inputs (the identical view: read and written at the same
// index); a partial overlap gives undefined results and is rejected by the API layer.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "iter.h"
#include "simd.h"

namespace ag::kern {
inline namespace AG_ISA_NS {

// Compute type of an operation over inputs of several element types: double if any of them is
// double, else float (f16/bf16/f32 compute in float).
template <class... T>
using common_compute_t = std::conditional_t<(std::is_same_v<T, double> || ...), double, float>;

// An op in two stages: out = second(first(in...), in...). In a contiguous run map computes
// first over a chunk of kStage (simd.h) elements into an L1 buffer, then second over the chunk. Why: one
// vector's long chain of dependent operations (an e^x, then a division) outgrows what the CPU's
// out-of-order window can overlap across iterations; two shorter loops run at the ports' speed.
// Every element gets the same operations as with the fused op. Where kExpPairs<C>, first also
// takes vf2 arguments (two vectors side by side, simd.h) and is given them.
template <class F, class S> struct staged {
    F first;
    S second;
    template <class... V> AG_INLINE auto operator()(V... v) const { return second(first(v...), v...); }
};
template <class F, class S> staged(F, S) -> staged<F, S>;
template <class Op> constexpr bool is_staged = false;
template <class F, class S> constexpr bool is_staged<staged<F, S>> = true;

namespace detail {

// The inputs of two vectors as one tuple of vf2 (a's vector first in each).
template <class... V, std::size_t... K>
AG_INLINE auto zip2(std::index_sequence<K...>, const std::tuple<V...> &a, const std::tuple<V...> &b) {
    return std::make_tuple(vf2{{std::get<K>(a), std::get<K>(b)}}...);
}
template <class... V> AG_INLINE auto zip2(const std::tuple<V...> &a, const std::tuple<V...> &b) {
    return zip2(std::index_sequence_for<V...>{}, a, b);
}

// out(j, op(in(j)...)) for the full vectors j = i, i + L, ... < e of a contiguous run (e - i a
// multiple of L); in(j) gives the inputs' vectors at j as a tuple. A staged op runs in two passes.
template <class C, class Op, class In, class Out>
AG_INLINE void run_vectors(const Op &op, int64_t i, int64_t e, In in, Out out) {
    constexpr int64_t L = lanes<C>;
    if constexpr (is_staged<Op>) {
        alignas(64) vec_t<C> s[kStage / L];
        for (; i < e; i += kStage) {
            const int64_t nv = std::min(e - i, kStage) / L;
            int64_t q = 0;
            if constexpr (kExpPairs<C>)
                for (; q + 2 <= nv; q += 2) {  // two vectors side by side
                    const vf2 r = std::apply(op.first, zip2(in(i + q * L), in(i + (q + 1) * L)));
                    s[q] = r.v[0];
                    s[q + 1] = r.v[1];
                }
            // (unrolled by 2: fewer loop instructions in loops bound by how many they issue)
#pragma GCC unroll 2
            for (; q < nv; ++q) s[q] = std::apply(op.first, in(i + q * L));
#pragma GCC unroll 2
            for (q = 0; q < nv; ++q)
                out(i + q * L, std::apply([&](auto... v) { return op.second(s[q], v...); }, in(i + q * L)));
        }
    } else {
        for (; i < e; i += L) out(i, std::apply(op, in(i)));
    }
}

// map's bfloat16 loops in pairs of vectors (simd.h, vload_pair): all operands and out bf16.
template <class C, class O, class... T>
constexpr bool kPairs = std::is_same_v<C, float> && kBf16Pairs<O, T...>;

#if defined(__SSE2__)

// out(j, a, b) for the pairs of vectors at j = i, i + 2L, ... < e (e - i a multiple of 2L), a and b
// in vload_pair's order; in2(j) gives the inputs' pairs as two tuples. A staged op in two passes.
template <class Op, class In2, class Out2>
AG_INLINE void run_pairs(const Op &op, int64_t i, int64_t e, In2 in2, Out2 out2) {
    constexpr int64_t L = lanes<float>;
    if constexpr (is_staged<Op>) {
        alignas(64) vf s[kStage / L];
        for (; i < e; i += kStage) {
            const int64_t m = std::min(e - i, kStage);
            for (int64_t q = 0; q * L < m; q += 2) {
                const auto [a, b] = in2(i + q * L);
                if constexpr (kExpPairs<float>) {
                    const vf2 r = std::apply(op.first, zip2(a, b));
                    s[q] = r.v[0];
                    s[q + 1] = r.v[1];
                } else {
                    s[q] = std::apply(op.first, a);
                    s[q + 1] = std::apply(op.first, b);
                }
            }
            for (int64_t q = 0; q * L < m; q += 2) {
                const auto [a, b] = in2(i + q * L);
                out2(i + q * L, std::apply([&](auto... v) { return op.second(s[q], v...); }, a),
                     std::apply([&](auto... v) { return op.second(s[q + 1], v...); }, b));
            }
        }
    } else {
        for (; i < e; i += 2 * L) {
            const auto [a, b] = in2(i);
            out2(i, std::apply(op, a), std::apply(op, b));
        }
    }
}
#endif

// True when every view has the same strides over its dims of size > 1 and those strides lay
// the elements out densely (each element exactly once, dims in any order, strides of any sign).
// Then view k's elements are the flat range [base, base + numel) of element offsets, in the same
// order for every view; *base is the offset of the lowest address relative to element 0.
template <int N>
bool same_dense_layout(const View (&v)[N], int64_t *base) {
    int64_t st[kMaxRank], sz[kMaxRank];
    int m = 0;
    int64_t lo = 0;
    for (int d = 0; d < v[0].ndim; ++d) {
        if (v[0].shape[d] == 1) continue;
        for (int k = 1; k < N; ++k)
            if (v[k].stride[d] != v[0].stride[d]) return false;
        const int64_t s = v[0].stride[d];
        if (s < 0) lo += (v[0].shape[d] - 1) * s;
        st[m] = s < 0 ? -s : s;
        sz[m++] = v[0].shape[d];
    }
    // insertion sort by |stride| (rank <= 8); dense means 1, n0, n0*n1, ...
    for (int i = 1; i < m; ++i)
        for (int j = i; j > 0 && st[j] < st[j - 1]; --j) {
            std::swap(st[j], st[j - 1]);
            std::swap(sz[j], sz[j - 1]);
        }
    int64_t expect = 1;
    for (int i = 0; i < m; ++i) {
        if (st[i] != expect) return false;
        expect *= sz[i];
    }
    *base = lo;
    return true;
}

}  // namespace detail

// Calls body(contig, off, step, n) for runs of n consecutive elements along one dim, where for
// view k the run's elements sit at element offsets off[k] + i * step[k], i in [0, n), from
// views[k].data. `contig` is std::true_type when every step is 1 (loops over it vectorize),
// else std::false_type. All views must have views[0]'s shape; numel() == 0 calls nothing.
//
// Fast path: all views dense with the same strides (C order, F order, any permutation, reversed
// dims) -> one flat run per thread. Otherwise dims are ordered by views[0]'s |stride|, largest
// first (views[0], conventionally the output, is then written as sequentially as its layout
// allows), merged with make_iter, and walked with Walker; the innermost merged dim is the run.
// The element range [0, numel) is split into one contiguous range per thread (parallel_for), so
// a single long strided dim is parallel too.
template <int N, class Body>
void for_each_run(const View (&views)[N], Body &&body) {
    const View &v0 = views[0];
    const int64_t numel = v0.numel();
    if (numel == 0) return;
    // Threads from kParallelMin output elements on, as every kernel here counts (and PyTorch's
    // grain): counting each input too forked 2 threads for 16 K elements (a few us of work), and on a
    // VM a call after a pause then waited milliseconds for its second thread to wake (bench.py --sweep,
    // 4x4096: softshrink and kl_div 0.3-1.3 ms against PyTorch's 0.2-0.4, serial there).
    const int64_t work = numel;
    int64_t base = 0;
    if (detail::same_dense_layout(views, &base)) {
        parallel_for(numel, work, [&](int64_t b, int64_t e) {
            int64_t off[N], step[N];
            for (int k = 0; k < N; ++k) off[k] = base + b, step[k] = 1;
            body(std::true_type{}, off, step, e - b);
        });
        return;
    }
    // stable insertion sort of the dims by |stride|, largest first (rank <= 8)
    const auto mag = [&](int d) { return v0.stride[d] < 0 ? -v0.stride[d] : v0.stride[d]; };
    int order[kMaxRank];
    for (int d = 0; d < v0.ndim; ++d) {
        int j = d;
        for (; j > 0 && mag(order[j - 1]) < mag(d); --j) order[j] = order[j - 1];
        order[j] = d;
    }
    int64_t shape[kMaxRank], strides[N][kMaxRank];
    const int64_t *sp[N];
    for (int d = 0; d < v0.ndim; ++d) {
        shape[d] = v0.shape[order[d]];
        for (int k = 0; k < N; ++k) strides[k][d] = views[k].stride[order[d]];
    }
    for (int k = 0; k < N; ++k) sp[k] = strides[k];
    Iter<N> it = make_iter<N>(shape, v0.ndim, sp);
    // it.ndim >= 1 here: a single element (no dim of size > 1) takes the fast path.
    const int in = it.ndim - 1;
    const int64_t inner = it.shape[in];
    int64_t step[N];
    bool unit = true;
    for (int k = 0; k < N; ++k) {
        step[k] = it.stride[k][in];
        unit = unit && step[k] == 1;
    }
    it.ndim = in;  // the outer dims, walked (in place: a copy of the iterator is most of a KiB)
    parallel_for(numel, work, [&](int64_t b, int64_t e) {
        int64_t j = b % inner;
        Walker<N> w(it, b / inner);
        for (int64_t pos = b; pos < e; w.next()) {
            const int64_t n = std::min(inner - j, e - pos);
            int64_t off[N];
            for (int k = 0; k < N; ++k) off[k] = w.off[k] + j * step[k];
            if (unit)
                body(std::true_type{}, off, step, n);
            else
                body(std::false_type{}, off, step, n);
            pos += n;
            j = 0;
        }
    });
}

namespace detail {

template <class A, class> using first_t = A;

// M elements, left uninitialized in a std::tuple (which zeroes a std::array: a `rep stos` per call)
template <class T, int64_t M> struct copies {
    T v[M];
    copies() {}
};

template <class C, class O, class... T, class Op, std::size_t... K>
void map_impl(std::index_sequence<K...>, const View &out, const View *in, Op &op) {
    constexpr int N = 1 + int(sizeof...(T));
    constexpr int64_t L = lanes<C>;
    O *const o = reinterpret_cast<O *>(out.data);
    const std::tuple<const T *...> src{reinterpret_cast<const T *>(in[K].data)...};
    const View v[N] = {out, broadcast_to(in[K], out.shape, out.ndim)...};
    // streaming stores for outputs well past the caches (common.h)
    const int64_t obytes = out.numel() * int64_t(sizeof(O));
    const bool stream = stream_output(out.data, obytes, obytes + (... + (in[K].numel() * int64_t(sizeof(T)))));
    using P = std::tuple<const T *...>;

    // A run with out contiguous, each input contiguous (unit step 1) or broadcast along it (0: p
    // points at its element repeated, read at offset j * 0 for every j). (p + j * step: the
    // compiler keeps one pointer per input, advanced by an add per vector, where an index mask
    // took a copy and an AND per load: 7% of LogSigmoid's instructions.) One instantiation
    // (noinline) for both; flatten: op and what it calls inlined into the loops (GCC otherwise
    // keeps some ops out of line, a call per vector). op and the pointers are copied into locals:
    // the stores may alias anything in memory, so what is read through a reference is reloaded
    // after each one.
    const auto unit = [&](O *po, const auto &pin, const int64_t *ustep, int64_t n) __attribute__((flatten, noinline)) {
        const Op f = op;
        const auto p = pin;  // (auto: instantiated only where op takes vectors)
        const int64_t us[] = {ustep[K]...};
        const auto in = [&](int64_t j) { return std::make_tuple(vload<C>(std::get<K>(p) + j * us[K])...); };
        const auto tail = [&](int64_t j, int64_t m) { return f(vload_run<C>(std::get<K>(p) + j * us[K], 1, m)...); };
        int64_t i = 0;
#if defined(__SSE2__)
        if constexpr (kPairs<C, O, T...>) {
            const auto in2 = [&](int64_t j) {
                std::tuple<first_t<vf, T>...> a, b;
                (vload_pair(std::get<K>(p) + j * us[K], std::get<K>(a), std::get<K>(b)), ...);
                return std::make_pair(a, b);
            };
            // streaming stores want po + i aligned to a register: a few elements before, by vectors
            constexpr uintptr_t R = sizeof(vreg);
            const auto mis = reinterpret_cast<uintptr_t>(po) % R;
            const bool st = stream && mis % 2 == 0;
            const int64_t h = st ? std::min<int64_t>(n, int64_t((R - mis) % R / 2)) : 0;
            for (; i + L <= h; i += L) vstore(po + i, std::apply(f, in(i)));
            if (i < h) vstore_run(po + i, 1, h - i, tail(i, h - i));
            i = h;
            const int64_t pairs = i + (n - i) / (2 * L) * (2 * L);
            if (st) {
                run_pairs(f, i, pairs, in2, [&](int64_t j, vf a, vf b) { stream_reg(po + j, bf16_pair(a, b)); });
                sfence();
            } else {
                run_pairs(f, i, pairs, in2, [&](int64_t j, vf a, vf b) {
                    const vreg r = bf16_pair(a, b);
                    std::memcpy(po + j, &r, sizeof r);
                });
            }
            i = pairs;  // (at most one full vector left, done below)
        } else
#endif
        if (stream && (i = aligned_head<O, C>(po, n)) >= 0) {
            // a partial vector up to the alignment, then streaming stores
            if (i > 0) vstore_run(po, 1, i, tail(0, i));
            const int64_t e = i + (n - i) / L * L;
            run_vectors<C>(f, i, e, in, [&](int64_t j, vec_t<C> r) { vstream(po + j, r); });
            sfence();
            i = e;
        } else {
            i = n / L * L;
            run_vectors<C>(f, 0, i, in, [&](int64_t j, vec_t<C> r) { vstore(po + j, r); });
        }
        for (; i + L <= n; i += L) vstore(po + i, std::apply(f, in(i)));
        if (i < n) vstore_run(po + i, 1, n - i, tail(i, n - i));
    };

    // Any other run: vectors gathered and scattered by steps.
    const auto strided = [&](O *po, const auto &pin, int64_t so, const int64_t *step, int64_t n) __attribute__((flatten, noinline)) {
        const Op f = op;  // (locals, as in unit)
        const auto p = pin;
        const int64_t si[] = {step[K]...};
        // a broadcast input (step 0) converted once per run
        const vec_t<C> bc[] = {(si[K] == 0 ? splat<vec_t<C>>(load<C>(std::get<K>(p))) : vec_t<C>{})...};
        const auto in = [&](auto k, int64_t i, int64_t m) {
            constexpr std::size_t q = decltype(k)::value;
            return si[q] == 0 ? bc[q] : vload_run<C>(std::get<q>(p) + i * si[q], si[q], m);
        };
        int64_t i = 0;
        if (stream && so == 1) {  // (an input strided along the run, out contiguous)
            const int64_t h = aligned_head<O, C>(po, n);
            if (h >= 0) {
                if (h > 0) vstore_run(po, 1, h, f(in(std::integral_constant<std::size_t, K>{}, 0, h)...));
                for (i = h; i + L <= n; i += L) vstream(po + i, f(in(std::integral_constant<std::size_t, K>{}, i, L)...));
                sfence();
            }
        }
        for (; i < n; i += L) {
            const int64_t m = std::min(L, n - i);
            vstore_run(po + i * so, so, m, f(in(std::integral_constant<std::size_t, K>{}, i, m)...));
        }
    };

    for_each_run<N>(v, [&](auto contig, const int64_t *off, const int64_t *step, int64_t n) __attribute__((flatten)) {
        O *const po = o + off[0];
        const P p{std::get<K>(src) + off[K + 1]...};
        if constexpr (std::is_invocable_v<Op &, first_t<vec_t<C>, T>...>) {
            // vectors of lanes<C> elements; a run's tail is a partial vector, same arithmetic
            if constexpr (decltype(contig)::value) {
                const int64_t all[] = {(void(K), int64_t(1))...};
                unit(po, p, all, n);
            } else if (step[0] == 1 && (((step[K + 1] == 0 && kCheapLoad<T>) || step[K + 1] == 1) && ...)) {
                // (an input broadcast along the run, a scalar gradient say: read like a contiguous
                // one where its loads are cheap (simd.h, kCheapLoad), else converted once per run)
                std::tuple<copies<T, 2 * lanes<C>>...> rep;
                ((step[K + 1] == 0 ? void(std::fill_n(std::get<K>(rep).v, 2 * lanes<C>, *std::get<K>(p))) : void()), ...);
                const P q{(step[K + 1] == 0 ? std::get<K>(rep).v : std::get<K>(p))...};
                const int64_t us[] = {(step[K + 1] == 0 ? int64_t(0) : int64_t(1))...};
                unit(po, q, us, n);
            } else {
                strided(po, p, step[0], step + 1, n);
            }
        } else if constexpr (decltype(contig)::value) {
            for (int64_t i = 0; i < n; ++i) store(po + i, op(load<C>(std::get<K>(p) + i)...));
        } else {
            for (int64_t i = 0; i < n; ++i)
                store(po + i * step[0], op(load<C>(std::get<K>(p) + i * step[K + 1])...));
        }
    });
}

}  // namespace detail

// ---- mixed dtypes: a conversion step instead of an instantiation per dtype combination ----
//
// A kernel instantiated for every combination of input and output dtypes grows as their product
// (and is compiled once per ISA). Mixed-dtype calls instead convert chunks of each input into the
// compute type C with a converter chosen at run time per dtype, run the op on C buffers, and
// convert the result into the output dtype: instantiations grow with the number of dtypes. The
// values are those of map (the same exact loads into C, the same op lane by lane, one rounding
// into O by the same vstore), only the loop is split differently.

// Elements per chunk: a few KiB per buffer, all of them in L1.
constexpr int64_t kConvChunk = 512;

// n elements p[0], p[s], ... (s may be 0: one element broadcast) converted into dst[0, n).
template <class C> using to_compute_fn = void (*)(const char *p, int64_t s, int64_t n, C *dst);
// src[0, n) rounded once into p[0], p[s], ...
template <class C> using from_compute_fn = void (*)(const C *src, char *p, int64_t s, int64_t n);

namespace detail {

template <class C, class T>
void to_compute(const char *pc, int64_t s, int64_t n, C *dst) {
    const T *p = reinterpret_cast<const T *>(pc);
    constexpr int64_t L = lanes<C>;
    for (int64_t i = 0; i < n; i += L) {
        const int64_t m = std::min(L, n - i);
        const vec_t<C> v = vload_run<C>(p + i * s, s, m);
        std::memcpy(dst + i, &v, size_t(m) * sizeof(C));
    }
}

template <class C, class O>
void from_compute(const C *src, char *pc, int64_t s, int64_t n) {
    O *p = reinterpret_cast<O *>(pc);
    constexpr int64_t L = lanes<C>;
    for (int64_t i = 0; i < n; i += L) {
        const int64_t m = std::min(L, n - i);
        vstore_run(p + i * s, s, m, vload_run<C>(src + i, 1, m));
    }
}

}  // namespace detail

template <class C> to_compute_fn<C> to_compute_for(DType t) {
    to_compute_fn<C> f = nullptr;
    dispatch_float(t, [&](auto x) { f = detail::to_compute<C, decltype(x)>; });
    return f;
}

template <class C> from_compute_fn<C> from_compute_for(DType t) {
    from_compute_fn<C> f = nullptr;
    dispatch_float(t, [&](auto x) { f = detail::from_compute<C, decltype(x)>; });
    return f;
}

inline int64_t dtype_size(DType t) { return t == DType::F64 ? 8 : t == DType::F32 ? 4 : 2; }

namespace detail {

// o[0, m) = op(b[0][0, m), b[1][0, m), ...) on C buffers, a partial vector last (zero-padded, as map)
template <class C, class Op, std::size_t... K>
AG_INLINE void apply_chunk(std::index_sequence<K...>, Op &op, const C (*b)[kConvChunk], C *o, int64_t m) {
    constexpr int64_t L = lanes<C>;
    const int64_t i = m / L * L;
    run_vectors<C>(op, 0, i, [&](int64_t j) { return std::make_tuple(vload<C>(b[K] + j)...); },
                   [&](int64_t j, vec_t<C> r) { vstore(o + j, r); });
    if (i < m) vstore_run(o + i, 1, m - i, op(vload_run<C>(b[K] + i, 1, m - i)...));
}

}  // namespace detail

// out[i] = op(in[0][i], in[1][i], ...) for inputs and out of any float dtypes, computed in C:
// the values of map<C, O, T...> with the dtypes read from the views (see above).
template <class C, int N, class Op>
void map_convert(const View &out, const View (&in)[N], Op op) {
    View v[N + 1];
    v[0] = out;
    to_compute_fn<C> ld[N];
    int64_t es[N + 1];
    es[0] = dtype_size(out.dtype);
    for (int k = 0; k < N; ++k) {
        v[k + 1] = broadcast_to(in[k], out.shape, out.ndim);
        ld[k] = to_compute_for<C>(in[k].dtype);
        es[k + 1] = dtype_size(in[k].dtype);
    }
    const from_compute_fn<C> st = from_compute_for<C>(out.dtype);
    for_each_run<N + 1>(v, [&](auto, const int64_t *off, const int64_t *step, int64_t n) __attribute__((flatten)) {
        alignas(64) C buf[N][kConvChunk];
        alignas(64) C res[kConvChunk];
        for (int64_t c = 0; c < n; c += kConvChunk) {
            const int64_t m = std::min(kConvChunk, n - c);
            for (int k = 0; k < N; ++k)
                ld[k](v[k + 1].data + (off[k + 1] + c * step[k + 1]) * es[k + 1], step[k + 1], m, buf[k]);
            detail::apply_chunk<C>(std::make_index_sequence<N>{}, op, buf, res, m);
            st(res, v[0].data + (off[0] + c * step[0]) * es[0], step[0], m);
        }
    });
}

// out[i] = op(load<C>(in[0][i]), load<C>(in[1][i]), ...), stored (rounded once) as O, where
// in[k] (element type T_k) is broadcast to out's shape. A generic op (auto parameters, simd.h
// helpers: select, vabs, vexp) gets and returns vec_t<C>, every element in some lane of a full
// or zero-padded vector, so no element's arithmetic depends on where a thread's range starts.
// An op taking C runs element by element (no vector math then: libmvec exp differs from libm's).
// Example: map<float, float, half_t, half_t>(out, {g, x}, [](auto g, auto x) { return g * x; });
template <class C, class O, class... T, class Op>
void map(const View &out, const View (&in)[sizeof...(T)], Op op) {
    detail::map_impl<C, O, T...>(std::index_sequence_for<T...>{}, out, in, op);
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
