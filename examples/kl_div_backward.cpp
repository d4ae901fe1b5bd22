// KlDivBackward in the style of CANN's example program, with its data: gradOutput, self and
// target all {2, 3, 5, 8} of shape [2, 2] (ACL_FLOAT), reduction 0 ("none"), logTarget
// false. The gradient with respect to self is -target * gradOutput: {-4, -9, -25, -64}.
// Exits 1 when a value differs.
#include "acl/acl.h"
#include "aclnnop/aclnn_kl_div_backward.h"

#include "acl_example.h"

int main() {
    const int32_t device = 0;
    aclrtStream stream = nullptr;
    if (InitRuntime(device, &stream)) return 1;

    const std::vector<int64_t> shape = {2, 2};
    const std::vector<float> values = {2, 3, 5, 8};
    const int64_t reduction = 0;
    const bool logTarget = false;
    DeviceTensor gradOutput, self, target, out;
    if (MakeTensor(values, shape, ACL_FLOAT, &gradOutput) || MakeTensor(values, shape, ACL_FLOAT, &self) ||
        MakeTensor(values, shape, ACL_FLOAT, &target) || MakeTensor(std::vector<float>(4, 0.f), shape, ACL_FLOAT, &out))
        return 1;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnKlDivBackwardGetWorkspaceSize(gradOutput.tensor, self.tensor, target.tensor, reduction, logTarget,
                                                out.tensor, &workspaceSize, &executor),
             "aclnnKlDivBackwardGetWorkspaceSize");
    if (RunOnStream(aclnnKlDivBackward, "aclnnKlDivBackward", workspaceSize, executor, stream)) return 1;

    std::vector<double> expected(4);
    for (int i = 0; i < 4; ++i) expected[i] = -double(values[i]) * values[i];
    const int bad = CheckResult(out, expected, 1e-6);

    ReleaseAll({&gradOutput, &self, &target, &out}, device, stream);
    return bad ? 1 : 0;
}
