// A host program in the shape of CANN's published aclnnSoftmaxBackward example, unchanged in
// its API use: acl init, device and stream, device memory with host->device copies, contiguous
// aclTensors, the two phases on the stream, synchronize, device->host copy, and the teardown in
// the documented order. Same data as the documentation: gradOutput {0..7} and output
// {1,1,1,2,2,2,3,3}, shape [4, 2], dim 0, ACL_FLOAT.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_softmax_backward.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

namespace {

int64_t ShapeSize(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

int InitAcl(int32_t deviceId, aclrtStream *stream) {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); aclFinalize(); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret);
              aclrtResetDevice(deviceId); aclFinalize(); return ret);
    return 0;
}

// Device buffer filled from host data, and a contiguous ND tensor over it.
template <typename T>
int MakeDeviceTensor(const std::vector<T> &hostData, const std::vector<int64_t> &shape, void **deviceAddr,
                     aclDataType dataType, aclTensor **tensor) {
    const auto size = ShapeSize(shape) * sizeof(T);
    auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = int64_t(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                              shape.data(), shape.size(), *deviceAddr);
    return 0;
}

// The example's main(), returning its status and handing the printed result back.
int RunExample(const std::vector<float> &gradOutputHostData, const std::vector<float> &outputHostData,
               std::vector<float> *result) {
    int32_t deviceId = 0;
    aclrtStream stream;
    auto ret = InitAcl(deviceId, &stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    std::vector<int64_t> gradOutputShape = {4, 2};
    std::vector<int64_t> outputShape = {4, 2};
    std::vector<int64_t> outShape = {4, 2};
    void *gradOutputDeviceAddr = nullptr;
    void *outputDeviceAddr = nullptr;
    void *outDeviceAddr = nullptr;
    aclTensor *gradOutput = nullptr;
    aclTensor *output = nullptr;
    aclTensor *out = nullptr;
    std::vector<float> outHostData(8, 0.0f);
    ret = MakeDeviceTensor(gradOutputHostData, gradOutputShape, &gradOutputDeviceAddr, aclDataType::ACL_FLOAT,
                           &gradOutput);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = MakeDeviceTensor(outputHostData, outputShape, &outputDeviceAddr, aclDataType::ACL_FLOAT, &output);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    ret = MakeDeviceTensor(outHostData, outShape, &outDeviceAddr, aclDataType::ACL_FLOAT, &out);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    int64_t dim = 0;
    ret = aclnnSoftmaxBackwardGetWorkspaceSize(gradOutput, output, dim, out, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnSoftmaxBackwardGetWorkspaceSize failed. ERROR: %d\n", ret); return ret);
    void *workspaceAddr = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnSoftmaxBackward(workspaceAddr, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnSoftmaxBackward failed. ERROR: %d\n", ret); return ret);

    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    auto size = ShapeSize(outShape);
    std::vector<float> resultData(size, 0);
    ret = aclrtMemcpy(resultData.data(), resultData.size() * sizeof(resultData[0]), outDeviceAddr,
                      size * sizeof(resultData[0]), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
    for (int64_t i = 0; i < size; i++) LOG_PRINT("result[%ld] is: %f\n", long(i), resultData[i]);
    *result = resultData;

    aclDestroyTensor(gradOutput);
    aclDestroyTensor(output);
    aclDestroyTensor(out);

    aclrtFree(gradOutputDeviceAddr);
    aclrtFree(outputDeviceAddr);
    aclrtFree(outDeviceAddr);
    if (workspaceSize > 0) aclrtFree(workspaceAddr);
    aclrtDestroyStream(stream);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return 0;
}

}  // namespace

TEST(CannExample, SoftmaxBackwardDocumentationExample) {
    const std::vector<float> g = {0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<float> y = {1, 1, 1, 2, 2, 2, 3, 3};
    std::vector<float> result;
    ASSERT_EQ(RunExample(g, y, &result), 0);
    ASSERT_EQ(result.size(), 8u);
    // out = output * (g - sum_dim0(g * output)), shape [4, 2] row-major, reduced over rows.
    const int rows = 4, cols = 2;
    for (int c = 0; c < cols; ++c) {
        double s = 0;
        for (int r = 0; r < rows; ++r) s += double(g[r * cols + c]) * y[r * cols + c];
        for (int r = 0; r < rows; ++r) {
            const double want = y[r * cols + c] * (g[r * cols + c] - s);
            // small integers throughout: every float32 step is exact, so equality is required
            EXPECT_EQ(double(result[r * cols + c]), want) << "result[" << r * cols + c << "]";
        }
    }
    // The whole program runs again after aclFinalize (aclInit is once per init/finalize pair).
    std::vector<float> again;
    ASSERT_EQ(RunExample(g, y, &again), 0);
    EXPECT_EQ(again, result);
}
