// LogSigmoidBackward in the style of CANN's example program, with its data: gradOutput all 1,
// self = buffer = {1, 2, 3, 4}, shape [2, 2]. gradInput = gradOutput / (1 + exp(self)); the
// buffer's contents are not read. Exits 1 when a value differs from that formula.
#include "acl/acl.h"
#include "aclnnop/aclnn_logsigmoid_backward.h"

#include "acl_example.h"

int main() {
    const int32_t device = 0;
    aclrtStream stream = nullptr;
    if (InitRuntime(device, &stream)) return 1;

    const std::vector<int64_t> shape = {2, 2};
    const std::vector<float> grad = {1, 1, 1, 1};
    const std::vector<float> x = {1, 2, 3, 4};
    DeviceTensor gradOutput, self, buffer, gradInput;
    if (MakeTensor(grad, shape, ACL_FLOAT, &gradOutput) || MakeTensor(x, shape, ACL_FLOAT, &self) ||
        MakeTensor(x, shape, ACL_FLOAT, &buffer) || MakeTensor(std::vector<float>(4, 0.f), shape, ACL_FLOAT, &gradInput))
        return 1;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnLogSigmoidBackwardGetWorkspaceSize(gradOutput.tensor, self.tensor, buffer.tensor, gradInput.tensor,
                                                     &workspaceSize, &executor),
             "aclnnLogSigmoidBackwardGetWorkspaceSize");
    if (RunOnStream(aclnnLogSigmoidBackward, "aclnnLogSigmoidBackward", workspaceSize, executor, stream)) return 1;

    std::vector<double> expected(4);
    for (int i = 0; i < 4; ++i) expected[i] = grad[i] / (1.0 + std::exp(double(x[i])));
    const int bad = CheckResult(gradInput, expected, 1e-5);

    ReleaseAll({&gradOutput, &self, &buffer, &gradInput}, device, stream);
    return bad ? 1 : 0;
}
