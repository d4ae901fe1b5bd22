// Runtime shims: initialisation, devices and memory. The "device" is the host.
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "acl/acl_rt.h"
#include "aclnn/aclnn_base.h"
#include "memcheck.h"
#include "status.h"

using ag::fail;
namespace memcheck = ag::memcheck;

namespace {
std::atomic<bool> g_initialized{false};
thread_local int32_t t_device = 0;
constexpr size_t kAlign = 64;

// The live allocations, so that freeing anything else is an error status, not a crash in free().
struct Live {
    std::mutex mu;
    std::unordered_set<void *> blocks;
};

Live &live() {
    // never destroyed: memory may be freed during static teardown
    static Live *l = [] {
        // held across fork(), so that the child's copy is consistent and unlocked
        pthread_atfork([] { live().mu.lock(); }, [] { live().mu.unlock(); }, [] { live().mu.unlock(); });
        return new Live;
    }();
    return *l;
}

aclError malloc_block(const char *fn, void **devPtr, size_t size) {
    if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr is NULL.", fn);
    if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "%s: size is 0.", fn);
    if (size > SIZE_MAX - kAlign) return fail(ACL_ERROR_BAD_ALLOC, "%s: cannot allocate %zu bytes.", fn, size);
    void *p = std::aligned_alloc(kAlign, (size + kAlign - 1) / kAlign * kAlign);
    if (!p) return fail(ACL_ERROR_BAD_ALLOC, "%s: cannot allocate %zu bytes.", fn, size);
    {
        Live &l = live();
        std::lock_guard<std::mutex> lock(l.mu);
        l.blocks.insert(p);
    }
    if (memcheck::enabled()) memcheck::on_malloc(fn, p, size);
    *devPtr = p;
    return ACL_SUCCESS;
}

aclError free_block(const char *fn, void *devPtr) {
    if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr is NULL.", fn);
    {
        Live &l = live();
        std::lock_guard<std::mutex> lock(l.mu);
        if (l.blocks.erase(devPtr) == 1) {
            // memcheck: kept poisoned in its quarantine, in the same step as it stops being live
            if (memcheck::enabled()) memcheck::on_free(fn, devPtr);
            else std::free(devPtr);
            return ACL_SUCCESS;
        }
        if (memcheck::enabled()) memcheck::on_invalid_free(fn, devPtr);
    }
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live allocation (already freed, or not returned by aclrtMalloc).",
                fn, devPtr);
}
}  // namespace

extern "C" {

aclError aclInit(const char *) {
    if (g_initialized.exchange(true))
        return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (call aclFinalize first).");
    if (memcheck::enabled()) memcheck::on_init();
    return ACL_SUCCESS;
}

aclError aclFinalize(void) {
    if (memcheck::enabled()) memcheck::on_finalize();
    g_initialized = false;
    return ACL_SUCCESS;
}

aclnnStatus aclnnInit(const char *) { return ACLNN_SUCCESS; }
aclnnStatus aclnnFinalize(void) { return ACLNN_SUCCESS; }

aclError aclrtSetDevice(int32_t deviceId) {
    if (deviceId < 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtSetDevice: invalid device id %d.", deviceId);
    t_device = deviceId;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    if (deviceId < 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtResetDevice: invalid device id %d.", deviceId);
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    if (!deviceId) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL.");
    *deviceId = t_device;
    return ACL_SUCCESS;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy) {
    return malloc_block("aclrtMalloc", devPtr, size);
}

aclError aclrtMallocHost(void **hostPtr, size_t size) { return malloc_block("aclrtMallocHost", hostPtr, size); }

aclError aclrtFree(void *devPtr) { return free_block("aclrtFree", devPtr); }

aclError aclrtFreeHost(void *hostPtr) { return free_block("aclrtFreeHost", hostPtr); }

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    if (int(kind) < ACL_MEMCPY_HOST_TO_HOST || int(kind) > ACL_MEMCPY_DEFAULT)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: invalid kind %d.", int(kind));
    if (count > destMax)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: count %zu is larger than destMax %zu.", count, destMax);
    if (count == 0) return ACL_SUCCESS;
    if (!dst || !src) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: dst or src is NULL.");
    if (memcheck::enabled()) memcheck::on_memcpy(dst, destMax, src, count, kind);
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (count > maxCount)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu is larger than maxCount %zu.", count, maxCount);
    if (count == 0) return ACL_SUCCESS;
    if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is NULL.");
    if (memcheck::enabled()) memcheck::on_memset(devPtr, count);
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

}  // extern "C"

#include "ascendgrad/ascendgrad.h"
#include "kernels/common.h"

extern "C" {

const char *ascendgradVersion(void) { return ASCENDGRAD_VERSION; }
void ascendgradSetNumThreads(int n) { ag::kern::set_num_threads(n); }
void ascendgradSetThreadNumThreads(int n) { ag::kern::set_thread_num_threads(n); }
int ascendgradGetNumThreads(void) { return ag::kern::num_threads(); }
const char *ascendgradKernelIsa(void) { return ag::kern::isa_name(ag::kern::active_isa()); }

}  // extern "C"
