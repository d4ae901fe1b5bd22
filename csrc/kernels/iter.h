// Iterating over several strided views of one shape: dims merged where every view allows it,
// work split into contiguous ranges so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <atomic>

#include <omp.h>

#include "common.h"

namespace ag::kern {
inline namespace AG_ISA_NS {

// Shape and per-view strides of an iteration space, outermost dim first.
template <int N>
struct Iter {
    int ndim = 0;
    int64_t shape[kMaxRank];  // the first ndim entries (as View)
    int64_t stride[N][kMaxRank];

    int64_t numel() const {
        int64_t n = 1;
        for (int i = 0; i < ndim; ++i) n *= shape[i];
        return n;
    }
};

// Builds the iteration space of `shape` (rank `ndim`) for N views with the given strides,
// leaving out dim `skip` (or none when -1): size-1 dims dropped, neighbours merged when
// stride[i] == stride[i+1] * shape[i+1] holds for every view.
template <int N>
Iter<N> make_iter(const int64_t *shape, int ndim, const int64_t *const (&strides)[N], int skip = -1) {
    Iter<N> it;
    for (int d = 0; d < ndim; ++d) {
        if (d == skip || shape[d] == 1) continue;
        int k = it.ndim;
        bool merge = k > 0;
        for (int v = 0; v < N && merge; ++v)
            merge = it.stride[v][k - 1] == strides[v][d] * shape[d];
        if (merge) {
            it.shape[k - 1] *= shape[d];
            for (int v = 0; v < N; ++v) it.stride[v][k - 1] = strides[v][d];
        } else {
            it.shape[k] = shape[d];
            for (int v = 0; v < N; ++v) it.stride[v][k] = strides[v][d];
            it.ndim = k + 1;
        }
    }
    return it;
}

// `v` seen with shape `shape` (rank `ndim` >= v.ndim) under NumPy broadcasting: missing
// leading dims and size-1 dims that grow get stride 0. The caller has checked compatibility.
inline View broadcast_to(const View &v, const int64_t *shape, int ndim) {
    View r = v;
    r.ndim = ndim;
    const int lead = ndim - v.ndim;
    for (int d = 0; d < ndim; ++d) {
        const int s = d - lead;
        r.shape[d] = shape[d];
        r.stride[d] = (s < 0 || v.shape[s] != shape[d]) ? 0 : v.stride[s];
    }
    return r;
}

// Walks the element offsets of an Iter from a linear position, last dim fastest.
template <int N>
struct Walker {
    const Iter<N> &it;
    int64_t idx[kMaxRank];  // the first it.ndim entries
    int64_t off[N] = {};

    Walker(const Iter<N> &iter, int64_t pos) : it(iter) {
        for (int d = it.ndim - 1; d >= 0; --d) {
            idx[d] = pos % it.shape[d];
            pos /= it.shape[d];
            for (int v = 0; v < N; ++v) off[v] += idx[d] * it.stride[v][d];
        }
    }

    void next() {
        for (int d = it.ndim - 1; d >= 0; --d) {
            for (int v = 0; v < N; ++v) off[v] += it.stride[v][d];
            if (++idx[d] < it.shape[d]) return;
            for (int v = 0; v < N; ++v) off[v] -= idx[d] * it.stride[v][d];
            idx[d] = 0;
        }
    }
};

// Runs f(begin, end) over [0, n). Each thread owns one contiguous range and takes it in up to 8
// pieces (of at least 64 K elements of work), in order; a thread done with its own range takes
// the next pieces of the others'. So a thread that runs slower (a busy sibling hyperthread, a VM's
// neighbour, an efficiency core) leaves its last pieces to the others instead of keeping them
// waiting, and otherwise each thread touches the same elements call after call (its caches keep
// them). Results never depend on the split: every caller computes each element (row, block) on
// its own. `work` (the output's elements, or a kernel's like measure: softmax's rows times their
// length) decides whether threads are worth starting at all.
template <class F>
void parallel_for(int64_t n, int64_t work, F &&f) {
    constexpr int kMaxOwners = 64;  // (more threads: each its own range in one piece)
    const int t = threads_for(work);
    if (t <= 1 || n <= 1) {
        if (n > 0) f(int64_t(0), n);
        return;
    }
    struct alignas(64) Taken {  // pieces of one owner's range handed out so far
        std::atomic<int> next{0};
    };
    Taken taken[kMaxOwners];
#pragma omp parallel num_threads(t)
    {
        const int nt = omp_get_num_threads(), id = omp_get_thread_num();
        const int64_t range = (n + nt - 1) / nt;
        const int parts = nt > kMaxOwners ? 1 : int(std::clamp<int64_t>(work / nt >> 16, 1, 8));
        const auto run = [&](int r, int q) {  // piece q of owner r's range
            const int64_t rb = std::min(n, r * range), re = std::min(n, rb + range);
            const int64_t piece = (re - rb + parts - 1) / parts;
            const int64_t b = std::min(re, rb + q * piece), e = std::min(re, b + piece);
            if (b < e) f(b, e);
        };
        if (parts == 1) run(id, 0);
        else
            for (int k = 0; k < nt; ++k)  // its own range, then the others' from the next on
                for (int q; (q = taken[(id + k) % nt].next.fetch_add(1, std::memory_order_relaxed)) < parts;)
                    run((id + k) % nt, q);
    }
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
