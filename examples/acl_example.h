// Pieces shared by the CANN-style example programs: error checks, device tensors, phase 2 on a
// stream, printing and checking the result, and the runtime's setup and teardown. Only the
// public ACL/aclnn API is used, so every example builds unchanged against CANN too.
#pragma once

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

// Returns 1 from the calling function, with the library's message, when `expr` fails.
#define CHECK_OK(expr, what)                                                     \
    do {                                                                         \
        auto rc_ = (expr);                                                       \
        if (rc_ != ACL_SUCCESS) {                                                \
            const char *msg_ = aclGetRecentErrMsg();                             \
            std::printf("%s failed: %d %s\n", what, int(rc_), msg_ ? msg_ : ""); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

// A device buffer and the aclTensor that describes it.
struct DeviceTensor {
    void *data = nullptr;
    aclTensor *tensor = nullptr;
};

// Copies host data to a new device buffer and describes it as a contiguous ND tensor.
template <class T>
int MakeTensor(const std::vector<T> &host, const std::vector<int64_t> &shape, aclDataType dtype, DeviceTensor *t) {
    const size_t bytes = host.size() * sizeof(T);
    CHECK_OK(aclrtMalloc(&t->data, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    CHECK_OK(aclrtMemcpy(t->data, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = int(shape.size()) - 2; i >= 0; --i) strides[i] = shape[i + 1] * strides[i + 1];
    t->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), t->data);
    return t->tensor ? 0 : 1;
}

// Phase 2 the way CANN programs run it: a workspace if phase 1 asked for one, the launch on
// the stream, then a synchronize (which reports errors of the asynchronous work).
using Phase2Fn = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);
inline int RunOnStream(Phase2Fn op, const char *name, uint64_t workspaceSize, aclOpExecutor *executor,
                       aclrtStream stream) {
    void *workspace = nullptr;
    if (workspaceSize > 0) CHECK_OK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    CHECK_OK(op(workspace, workspaceSize, executor, stream), name);
    CHECK_OK(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
    if (workspaceSize > 0) aclrtFree(workspace);
    return 0;
}

// Copies `count` floats of the result back to the host, prints them as CANN's examples do,
// and returns how many differ from `expected` by more than tol * (1 + |expected|) (-1 when
// the copy fails).
inline int CheckResult(const DeviceTensor &out, const std::vector<double> &expected, double tol) {
    std::vector<float> result(expected.size());
    const size_t bytes = result.size() * sizeof(float);
    if (aclrtMemcpy(result.data(), bytes, out.data, bytes, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) return -1;
    int bad = 0;
    for (size_t i = 0; i < result.size(); ++i) {
        std::printf("result[%zu] is: %f\n", i, result[i]);
        bad += !(std::fabs(result[i] - expected[i]) <= tol * (1 + std::fabs(expected[i])));
    }
    if (bad) std::printf("%d values differ from the formula\n", bad);
    return bad;
}

// aclInit, aclrtSetDevice, aclrtCreateStream.
inline int InitRuntime(int32_t device, aclrtStream *stream) {
    CHECK_OK(aclInit(nullptr), "aclInit");
    CHECK_OK(aclrtSetDevice(device), "aclrtSetDevice");
    CHECK_OK(aclrtCreateStream(stream), "aclrtCreateStream");
    return 0;
}

// Destroys the tensors, frees their device memory, then releases the stream, the device and ACL.
inline void ReleaseAll(std::initializer_list<DeviceTensor *> tensors, int32_t device, aclrtStream stream) {
    for (DeviceTensor *t : tensors) aclDestroyTensor(t->tensor);
    for (DeviceTensor *t : tensors) aclrtFree(t->data);
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
}
