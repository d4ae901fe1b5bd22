// Runtime shims: initialisation, devices and memory. The "device" is the host.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "acl/acl_rt.h"
#include "aclnn/aclnn_base.h"
#include "status.h"

using ag::fail;

namespace {
std::atomic<bool> g_initialized{false};
thread_local int32_t t_device = 0;
constexpr size_t kAlign = 64;
}  // namespace

extern "C" {

aclError aclInit(const char *) {
    if (g_initialized.exchange(true))
        return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (call aclFinalize first).");
    return ACL_SUCCESS;
}

aclError aclFinalize(void) {
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
    if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is NULL.");
    if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size is 0.");
    if (size > SIZE_MAX - kAlign) return fail(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: cannot allocate %zu bytes.", size);
    void *p = std::aligned_alloc(kAlign, (size + kAlign - 1) / kAlign * kAlign);
    if (!p) return fail(ACL_ERROR_BAD_ALLOC, "aclrtMalloc: cannot allocate %zu bytes.", size);
    *devPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
    return aclrtMalloc(hostPtr, size, ACL_MEM_MALLOC_HUGE_FIRST);
}

aclError aclrtFree(void *devPtr) {
    if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is NULL.");
    std::free(devPtr);
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr) { return aclrtFree(hostPtr); }

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    if (int(kind) < ACL_MEMCPY_HOST_TO_HOST || int(kind) > ACL_MEMCPY_DEFAULT)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: invalid kind %d.", int(kind));
    if (count > destMax)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: count %zu is larger than destMax %zu.", count, destMax);
    if (count == 0) return ACL_SUCCESS;
    if (!dst || !src) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: dst or src is NULL.");
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    if (count > maxCount)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu is larger than maxCount %zu.", count, maxCount);
    if (count == 0) return ACL_SUCCESS;
    if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is NULL.");
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

}  // extern "C"

#include "ascendgrad/ascendgrad.h"
#include "kernels/common.h"

extern "C" {

const char *ascendgradVersion(void) { return ASCENDGRAD_VERSION; }
void ascendgradSetNumThreads(int n) { ag::kern::set_num_threads(n); }
int ascendgradGetNumThreads(void) { return ag::kern::num_threads(); }
const char *ascendgradKernelIsa(void) { return ag::kern::isa_name(ag::kern::active_isa()); }

}  // extern "C"
