// SoftmaxBackward the way CANN host programs call it: runtime init, device buffers, aclTensors,
// the two phases on a stream, synchronize, copy back, clean up. Builds unchanged against CANN
// or ascendgrad; here it also checks its result against the formula and exits 1 on mismatch.
#include <cmath>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_softmax_backward.h"

#define CHECK_OK(expr, what)                                                   \
    do {                                                                       \
        auto rc_ = (expr);                                                     \
        if (rc_ != ACL_SUCCESS) {                                              \
            const char *msg_ = aclGetRecentErrMsg();                           \
            std::printf("%s failed: %d %s\n", what, int(rc_), msg_ ? msg_ : ""); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

// Copies host data to a new device buffer and describes it as a contiguous ND tensor.
static int MakeTensor(const std::vector<float> &host, const std::vector<int64_t> &shape, void **dev,
                      aclTensor **tensor) {
    const size_t bytes = host.size() * sizeof(float);
    CHECK_OK(aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    CHECK_OK(aclrtMemcpy(*dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = int(shape.size()) - 2; i >= 0; --i) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), aclDataType::ACL_FLOAT, strides.data(), 0,
                              aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), *dev);
    return *tensor ? 0 : 1;
}

int main() {
    const int32_t device = 0;
    aclrtStream stream = nullptr;
    CHECK_OK(aclInit(nullptr), "aclInit");
    CHECK_OK(aclrtSetDevice(device), "aclrtSetDevice");
    CHECK_OK(aclrtCreateStream(&stream), "aclrtCreateStream");

    const std::vector<int64_t> shape = {4, 2};
    const std::vector<float> grad = {0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<float> prob = {1, 1, 1, 2, 2, 2, 3, 3};
    const int64_t dim = 0;
    void *gradDev = nullptr, *probDev = nullptr, *outDev = nullptr;
    aclTensor *gradOutput = nullptr, *output = nullptr, *out = nullptr;
    if (MakeTensor(grad, shape, &gradDev, &gradOutput) || MakeTensor(prob, shape, &probDev, &output) ||
        MakeTensor(std::vector<float>(8, 0.f), shape, &outDev, &out))
        return 1;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnSoftmaxBackwardGetWorkspaceSize(gradOutput, output, dim, out, &workspaceSize, &executor),
             "aclnnSoftmaxBackwardGetWorkspaceSize");
    void *workspace = nullptr;
    if (workspaceSize > 0) CHECK_OK(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    CHECK_OK(aclnnSoftmaxBackward(workspace, workspaceSize, executor, stream), "aclnnSoftmaxBackward");
    CHECK_OK(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");

    std::vector<float> result(8);
    CHECK_OK(aclrtMemcpy(result.data(), result.size() * sizeof(float), outDev, result.size() * sizeof(float),
                         ACL_MEMCPY_DEVICE_TO_HOST),
             "aclrtMemcpy");
    int bad = 0;
    for (int i = 0; i < 8; ++i) {
        // out = y * (g - sum over dim 0 of g * y), column i % 2
        double s = 0;
        for (int r = 0; r < 4; ++r) s += double(grad[r * 2 + i % 2]) * prob[r * 2 + i % 2];
        const double expect = prob[i] * (grad[i] - s);
        std::printf("result[%d] is: %f\n", i, result[i]);
        bad += std::fabs(result[i] - expect) > 1e-5 * (1 + std::fabs(expect));
    }

    aclDestroyTensor(gradOutput);
    aclDestroyTensor(output);
    aclDestroyTensor(out);
    aclrtFree(gradDev);
    aclrtFree(probDev);
    aclrtFree(outDev);
    if (workspaceSize > 0) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
    if (bad) std::printf("%d values differ from the formula\n", bad);
    return bad ? 1 : 0;
}
