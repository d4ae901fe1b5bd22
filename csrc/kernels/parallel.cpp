// Kernel thread count: one process-wide setting, so that every caller thread (Python threads,
// stream workers) gets the same count; OpenMP's own setting is per calling thread. And the cache
// size that kernels choose their loop order by.
#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include <omp.h>

#include "common.h"

namespace ag::kern {

static std::atomic<int> g_threads{0};

// GNU libgomp's thread pool does not survive fork(): in the child of a process that has run a
// parallel region, the next one waits forever for threads that are not there. So a forked child
// runs every kernel on its calling thread (same results: they do not depend on the split).
static std::atomic<bool> g_forked{false};
[[maybe_unused]] static const int g_atfork = pthread_atfork(nullptr, nullptr, [] { g_forked.store(true); });

int num_threads() {
    if (g_forked.load(std::memory_order_relaxed)) return 1;
    int n = g_threads.load(std::memory_order_relaxed);
    if (n <= 0) {
        n = omp_get_max_threads();
        g_threads.store(n, std::memory_order_relaxed);
    }
    return n;
}

void set_num_threads(int n) { g_threads.store(n > 0 ? n : omp_get_max_threads()); }

int64_t cache_bytes() {
    static const int64_t bytes = [] {
        long b = 0;
#if defined(_SC_LEVEL3_CACHE_SIZE)
        b = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (b <= 0) b = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        return b > 0 ? int64_t(b) : int64_t(8) << 20;
    }();
    return bytes;
}

}  // namespace ag::kern
