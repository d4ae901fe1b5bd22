// Each operator's documented example, driven the way CANN host programs drive aclnn: aclInit,
// a device and a stream, device memory filled by host->device copies, contiguous ND tensors
// over it, the two phases on the stream, synchronize, device->host copy, teardown, aclFinalize.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "aclnnop/aclnn_kl_div_backward.h"
#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"

namespace {

// Runtime set-up and teardown of one host program, and the device tensors it creates.
class Program {
public:
    Program() {
        EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
        EXPECT_EQ(aclrtSetDevice(kDevice), ACL_SUCCESS);
        EXPECT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    }
    ~Program() {
        for (auto &[tensor, dev] : device_) {
            EXPECT_EQ(aclDestroyTensor(tensor), 0);
            EXPECT_EQ(aclrtFree(dev.first), ACL_SUCCESS);
        }
        EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
        EXPECT_EQ(aclrtResetDevice(kDevice), ACL_SUCCESS);
        EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
    }

    // Device copy of `host` as a contiguous ND tensor of `shape`.
    template <class T>
    aclTensor *tensor(const std::vector<T> &host, const std::vector<int64_t> &shape, aclDataType dtype) {
        const size_t bytes = host.size() * sizeof(T);
        void *dev = nullptr;
        EXPECT_EQ(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        EXPECT_EQ(aclrtMemcpy(dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
        std::vector<int64_t> strides(shape.size(), 1);
        for (int i = int(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
        aclTensor *t = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND,
                                       shape.data(), shape.size(), dev);
        EXPECT_NE(t, nullptr);
        device_[t] = {dev, bytes};
        return t;
    }

    // Phase 2 on the stream with a workspace of the size phase 1 asked for, then synchronize.
    aclError run(aclnnStatus (*phase2)(void *, uint64_t, aclOpExecutor *, aclrtStream), uint64_t workspaceSize,
                 aclOpExecutor *executor) {
        void *workspace = nullptr;
        if (workspaceSize > 0) EXPECT_EQ(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), 0);
        EXPECT_EQ(phase2(workspace, workspaceSize, executor, stream_), ACLNN_SUCCESS);
        const aclError sync = aclrtSynchronizeStream(stream_);
        if (sync != ACL_SUCCESS) {
            const char *m = aclGetRecentErrMsg();
            sync_message = m ? m : "";
        }
        if (workspace) EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
        return sync;
    }

    std::vector<float> read(aclTensor *t) {
        const auto &[dev, bytes] = device_.at(t);
        std::vector<float> host(bytes / sizeof(float));
        EXPECT_EQ(aclrtMemcpy(host.data(), bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
        return host;
    }

    std::string sync_message;

private:
    static constexpr int32_t kDevice = 0;
    aclrtStream stream_ = nullptr;
    std::map<aclTensor *, std::pair<void *, size_t>> device_;
};

}  // namespace

TEST(CannExample, SoftmaxBackward) {
    const std::vector<float> g = {0, 1, 2, 3, 4, 5, 6, 7}, y = {1, 1, 1, 2, 2, 2, 3, 3};
    for (int round = 0; round < 2; ++round) {  // aclInit works again after aclFinalize
        Program p;
        aclTensor *gradOutput = p.tensor(g, {4, 2}, ACL_FLOAT), *output = p.tensor(y, {4, 2}, ACL_FLOAT);
        aclTensor *out = p.tensor(std::vector<float>(8), {4, 2}, ACL_FLOAT);
        uint64_t ws = 0;
        aclOpExecutor *ex = nullptr;
        ASSERT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(gradOutput, output, 0, out, &ws, &ex), ACLNN_SUCCESS);
        ASSERT_EQ(p.run(aclnnSoftmaxBackward, ws, ex), ACL_SUCCESS);
        const std::vector<float> r = p.read(out);
        for (int i = 0; i < 8; ++i) {
            double s = 0;  // out = y * (g - sum over dim 0 of g * y); column i % 2
            for (int row = 0; row < 4; ++row) s += double(g[row * 2 + i % 2]) * y[row * 2 + i % 2];
            EXPECT_EQ(double(r[i]), y[i] * (g[i] - s)) << i;  // small integers: exact in float32
        }
    }
}

TEST(CannExample, LogSigmoidBackward) {
    Program p;
    const std::vector<float> x = {1, 2, 3, 4};
    aclTensor *gradOutput = p.tensor(std::vector<float>(4, 1.0f), {2, 2}, ACL_FLOAT);
    aclTensor *self = p.tensor(x, {2, 2}, ACL_FLOAT), *buffer = p.tensor(x, {2, 2}, ACL_FLOAT);
    aclTensor *gradInput = p.tensor(std::vector<float>(4), {2, 2}, ACL_FLOAT);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    ASSERT_EQ(aclnnLogSigmoidBackwardGetWorkspaceSize(gradOutput, self, buffer, gradInput, &ws, &ex), ACLNN_SUCCESS);
    ASSERT_EQ(p.run(aclnnLogSigmoidBackward, ws, ex), ACL_SUCCESS);
    const std::vector<float> r = p.read(gradInput);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(r[i], 1.0 / (1.0 + std::exp(double(x[i]))), 2e-7) << i;
}

TEST(CannExample, SoftshrinkBackward) {
    Program p;
    const std::vector<float> g = {0, 1, 2, 3, 4, 5, 6, 7}, x = {1, 1, 1, 2, 1, 2, 3, 3};
    aclTensor *gradOutput = p.tensor(g, {4, 2}, ACL_FLOAT), *self = p.tensor(x, {4, 2}, ACL_FLOAT);
    aclTensor *gradInput = p.tensor(std::vector<float>(8), {4, 2}, ACL_FLOAT);
    float lambdValue = 1.2f;
    aclScalar *lambd = aclCreateScalar(&lambdValue, ACL_FLOAT);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    ASSERT_EQ(aclnnSoftshrinkBackwardGetWorkspaceSize(gradOutput, self, lambd, gradInput, &ws, &ex), ACLNN_SUCCESS);
    ASSERT_EQ(p.run(aclnnSoftshrinkBackward, ws, ex), ACL_SUCCESS);
    EXPECT_EQ(p.read(gradInput), (std::vector<float>{0, 0, 0, 3, 0, 5, 6, 7}));  // g where |x| > 1.2
    EXPECT_EQ(aclDestroyScalar(lambd), ACLNN_SUCCESS);
}

namespace {

// CANN's CrossEntropyLossGrad example: gradLoss 0.1, logProb (2, 3) all -0.2, weight ones, mean.
aclError RunCrossEntropy(Program &p, const std::vector<int64_t> &target, std::vector<float> *result) {
    aclTensor *gradLoss = p.tensor(std::vector<float>{0.1f}, {}, ACL_FLOAT);
    aclTensor *logProb = p.tensor(std::vector<float>(6, -0.2f), {2, 3}, ACL_FLOAT);
    aclTensor *targetT = p.tensor(target, {2}, ACL_INT64);
    aclTensor *weight = p.tensor(std::vector<float>(3, 1.0f), {3}, ACL_FLOAT);
    aclTensor *out = p.tensor(std::vector<float>(6), {2, 3}, ACL_FLOAT);
    char reduction[] = "mean";
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(gradLoss, logProb, targetT, weight, nullptr, nullptr,
                                                        reduction, -100, 0.0, 0.0, out, &ws, &ex),
              ACLNN_SUCCESS);
    const aclError rc = p.run(aclnnCrossEntropyLossGrad, ws, ex);
    *result = p.read(out);
    return rc;
}

}  // namespace

TEST(CannExample, CrossEntropyLossGrad) {
    Program p;
    std::vector<float> r;
    ASSERT_EQ(RunCrossEntropy(p, {0, 0}, &r), ACL_SUCCESS) << p.sync_message;
    const char *documented[] = {"-0.0091", "0.0409", "0.0409", "-0.0091", "0.0409", "0.0409"};
    for (int i = 0; i < 6; ++i) {
        char printed[32];
        std::snprintf(printed, sizeof printed, "%.4f", r[i]);
        EXPECT_STREQ(printed, documented[i]) << i;
        // mean over 2 rows: 0.05 * (exp(-0.2) - [j == 0])
        EXPECT_NEAR(r[i], 0.05 * (std::exp(-0.2) - (i % 3 == 0)), 1e-7) << i;
    }
}

TEST(CannExample, CrossEntropyLossGradBadTargetSurfacesAtSynchronize) {
    Program p;
    std::vector<float> r;
    EXPECT_EQ(RunCrossEntropy(p, {0, 3}, &r), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(p.sync_message, "aclnnCrossEntropyLossGrad: Target 3 is out of bounds: target[1] must be in [0, 3) or "
                              "equal ignoreIndex -100.");
    EXPECT_EQ(r, std::vector<float>(6, 0.0f));  // out untouched: the zeros copied in
}

TEST(CannExample, KlDivBackward) {
    Program p;
    const std::vector<float> v = {2, 3, 5, 8};
    aclTensor *gradOutput = p.tensor(v, {2, 2}, ACL_FLOAT), *self = p.tensor(v, {2, 2}, ACL_FLOAT);
    aclTensor *target = p.tensor(v, {2, 2}, ACL_FLOAT), *out = p.tensor(std::vector<float>(4), {2, 2}, ACL_FLOAT);
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    ASSERT_EQ(aclnnKlDivBackwardGetWorkspaceSize(gradOutput, self, target, 0, false, out, &ws, &ex), ACLNN_SUCCESS);
    ASSERT_EQ(p.run(aclnnKlDivBackward, ws, ex), ACL_SUCCESS);
    EXPECT_EQ(p.read(out), (std::vector<float>{-4, -9, -25, -64}));  // -target * grad, reduction none
}
