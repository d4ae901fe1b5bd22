// SoftmaxBackward the way CANN host programs call it: runtime init, device buffers, aclTensors,
// the two phases on a stream, synchronize, copy back, clean up. Builds unchanged against CANN
// or ascendgrad; here it also checks its result against the formula and exits 1 on mismatch.
#include "acl/acl.h"
#include "aclnnop/aclnn_softmax_backward.h"

#include "acl_example.h"

int main() {
    const int32_t device = 0;
    aclrtStream stream = nullptr;
    if (InitRuntime(device, &stream)) return 1;

    const std::vector<int64_t> shape = {4, 2};
    const std::vector<float> grad = {0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<float> prob = {1, 1, 1, 2, 2, 2, 3, 3};
    const int64_t dim = 0;
    DeviceTensor gradOutput, output, out;
    if (MakeTensor(grad, shape, ACL_FLOAT, &gradOutput) || MakeTensor(prob, shape, ACL_FLOAT, &output) ||
        MakeTensor(std::vector<float>(8, 0.f), shape, ACL_FLOAT, &out))
        return 1;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnSoftmaxBackwardGetWorkspaceSize(gradOutput.tensor, output.tensor, dim, out.tensor, &workspaceSize,
                                                  &executor),
             "aclnnSoftmaxBackwardGetWorkspaceSize");
    if (RunOnStream(aclnnSoftmaxBackward, "aclnnSoftmaxBackward", workspaceSize, executor, stream)) return 1;

    // out = y * (g - sum over dim 0 of g * y): column i % 2
    std::vector<double> expected(8);
    for (int i = 0; i < 8; ++i) {
        double s = 0;
        for (int r = 0; r < 4; ++r) s += double(grad[r * 2 + i % 2]) * prob[r * 2 + i % 2];
        expected[i] = prob[i] * (grad[i] - s);
    }
    const int bad = CheckResult(out, expected, 1e-5);

    ReleaseAll({&gradOutput, &output, &out}, device, stream);
    return bad ? 1 : 0;
}
