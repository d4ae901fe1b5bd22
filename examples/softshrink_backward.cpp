// SoftshrinkBackward in the style of CANN's example program, with its data: gradOutput
// {0..7}, self {1, 1, 1, 2, 1, 2, 3, 3}, shape [4, 2], lambd 1.2 as an ACL_FLOAT aclScalar.
// gradInput = gradOutput where |self| > lambd, else 0. Exits 1 when a value differs.
#include "acl/acl.h"
#include "aclnnop/aclnn_softshrink_backward.h"

#include "acl_example.h"

int main() {
    const int32_t device = 0;
    aclrtStream stream = nullptr;
    if (InitRuntime(device, &stream)) return 1;

    const std::vector<int64_t> shape = {4, 2};
    const std::vector<float> grad = {0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<float> x = {1, 1, 1, 2, 1, 2, 3, 3};
    float lambdValue = 1.2f;
    DeviceTensor gradOutput, self, gradInput;
    if (MakeTensor(grad, shape, ACL_FLOAT, &gradOutput) || MakeTensor(x, shape, ACL_FLOAT, &self) ||
        MakeTensor(std::vector<float>(8, 0.f), shape, ACL_FLOAT, &gradInput))
        return 1;
    aclScalar *lambd = aclCreateScalar(&lambdValue, ACL_FLOAT);  // copies the value
    if (!lambd) return 1;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnSoftshrinkBackwardGetWorkspaceSize(gradOutput.tensor, self.tensor, lambd, gradInput.tensor,
                                                     &workspaceSize, &executor),
             "aclnnSoftshrinkBackwardGetWorkspaceSize");
    if (RunOnStream(aclnnSoftshrinkBackward, "aclnnSoftshrinkBackward", workspaceSize, executor, stream)) return 1;

    std::vector<double> expected(8);
    for (int i = 0; i < 8; ++i) expected[i] = std::fabs(x[i]) > lambdValue ? grad[i] : 0.0;
    const int bad = CheckResult(gradInput, expected, 0.0);  // a select: exact

    aclDestroyScalar(lambd);
    ReleaseAll({&gradOutput, &self, &gradInput}, device, stream);
    return bad ? 1 : 0;
}
