// Kernel thread count: one process-wide setting, so that every caller thread (Python threads,
// stream workers) gets the same count; OpenMP's own setting is per calling thread. And the cache
// size and CPU kind that kernels choose their loop order by.
#include <pthread.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <omp.h>

#include "common.h"

namespace ag::kern {

static std::atomic<int> g_threads{0};

// GNU libgomp's thread pool does not survive fork(): in the child of a process that has run a
// parallel region, the next one waits forever for threads that are not there. So a forked child
// runs every kernel on its calling thread (same results: they do not depend on the split).
static std::atomic<bool> g_forked{false};
[[maybe_unused]] static const int g_atfork = pthread_atfork(nullptr, nullptr, [] { g_forked.store(true); });

// A calling thread's own count (0: the process-wide one): a caller that runs kernels on several
// threads of its own (ascendgrad.judge's slices) asks for one each, rather than a team per thread.
static thread_local int t_threads = 0;

void set_thread_num_threads(int n) { t_threads = n > 0 ? n : 0; }

int num_threads() {
    if (t_threads > 0) return t_threads;
    if (g_forked.load(std::memory_order_relaxed)) return 1;
    int n = g_threads.load(std::memory_order_relaxed);
    if (n <= 0) {
        n = omp_get_max_threads();
        g_threads.store(n, std::memory_order_relaxed);
    }
    return n;
}

void set_num_threads(int n) { g_threads.store(n > 0 ? n : omp_get_max_threads()); }

// One token of a sysfs file ("%d", "%63s"), read with stdio, not iostreams: an istream goes through
// the locale's facets, and where the toolchain linked part of libstdc++ into this library while the
// process had loaded another libstdc++, those facets came from the other copy and the first call
// crashed in codecvt (seen with g++ 13 on Ubuntu 24.04).
template <class T>
static bool read_token(const std::string& path, const char* format, T* value) {
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return false;
    const bool ok = std::fscanf(f, format, value) == 1;
    std::fclose(f);
    return ok;
}

// The largest cache level's size from sysfs: the instance a core shares (glibc's sysconf can report
// another, e.g. 384 MiB in a VM whose sysfs and lscpu say 32 MiB).
int64_t cache_bytes() {
    static const int64_t bytes = [] {
        int64_t best = 0;
        int best_level = 0;
        for (int i = 0; i < 16; ++i) {
            const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
            int level = 0;
            char size[64] = {};
            if (!read_token(dir + "level", "%d", &level) || !read_token(dir + "size", "%63s", size) || !size[0])
                continue;
            const char unit_char = size[std::strlen(size) - 1];
            const int64_t unit = unit_char == 'K' ? 1 << 10 : unit_char == 'M' ? 1 << 20 : 1;
            const int64_t b = std::atoll(size) * unit;
            if (level > best_level || (level == best_level && b > best)) best_level = level, best = b;
        }
        return best > 0 ? best : int64_t(8) << 20;
    }();
    return bytes;
}

bool amd_avx512() {
    static const bool yes = [] {
#if defined(__x86_64__) || defined(__i386__)
        unsigned a, b, c, d;
        return __get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163 &&
               __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F);  // "AuthenticAMD"
#else
        return false;
#endif
    }();
    return yes;
}

bool page_resident(const void *p) {
#if defined(__linux__)
    static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    unsigned char in = 0;
    void *start = reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(p) / page * page);
    return mincore(start, 1, &in) != 0 || (in & 1) != 0;  // (an error, not mapped say: yes, as before this test)
#else
    (void)p;
    return true;
#endif
}

}  // namespace ag::kern
