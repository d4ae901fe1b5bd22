// Kernel thread count: one process-wide setting, so that every caller thread (Python threads,
// stream workers) gets the same count; OpenMP's own setting is per calling thread.
#include <atomic>

#include <omp.h>

#include "common.h"

namespace ag::kern {

static std::atomic<int> g_threads{0};

int num_threads() {
    int n = g_threads.load(std::memory_order_relaxed);
    if (n <= 0) {
        n = omp_get_max_threads();
        g_threads.store(n, std::memory_order_relaxed);
    }
    return n;
}

void set_num_threads(int n) { g_threads.store(n > 0 ? n : omp_get_max_threads()); }

}  // namespace ag::kern
