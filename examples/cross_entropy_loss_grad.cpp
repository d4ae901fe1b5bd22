// CrossEntropyLossGrad in the style of CANN's example program, with its data: gradLoss 0.1
// (0-D), logProb (2, 3) all -0.2, target {0, 0} (int64), weight ones, reduction "mean",
// ignoreIndex -100, no label smoothing or z-loss. With p = exp(logProb) and W = sum of the
// targets' weights, out[i][j] = gradLoss / W * w[t_i] * (p[i][j] - [j == t_i]), i.e.
// {-0.0091, 0.0409, 0.0409, -0.0091, 0.0409, 0.0409}. Exits 1 when a value differs.
#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"

#include "acl_example.h"

int main() {
    const int32_t device = 0;
    aclrtStream stream = nullptr;
    if (InitRuntime(device, &stream)) return 1;

    const int64_t n = 2, c = 3;
    const std::vector<float> gradLossHost = {0.1f};
    const std::vector<float> logProbHost(n * c, -0.2f);
    const std::vector<int64_t> targetHost = {0, 0};
    const std::vector<float> weightHost(c, 1.0f);
    char reduction[] = "mean";
    const int64_t ignoreIndex = -100;
    DeviceTensor gradLoss, logProb, target, weight, out;
    if (MakeTensor(gradLossHost, {}, ACL_FLOAT, &gradLoss) || MakeTensor(logProbHost, {n, c}, ACL_FLOAT, &logProb) ||
        MakeTensor(targetHost, {n}, ACL_INT64, &target) || MakeTensor(weightHost, {c}, ACL_FLOAT, &weight) ||
        MakeTensor(std::vector<float>(n * c, 0.f), {n, c}, ACL_FLOAT, &out))
        return 1;

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    CHECK_OK(aclnnCrossEntropyLossGradGetWorkspaceSize(gradLoss.tensor, logProb.tensor, target.tensor, weight.tensor,
                                                       nullptr, nullptr, reduction, ignoreIndex, 0.0, 0.0, out.tensor,
                                                       &workspaceSize, &executor),
             "aclnnCrossEntropyLossGradGetWorkspaceSize");
    if (RunOnStream(aclnnCrossEntropyLossGrad, "aclnnCrossEntropyLossGrad", workspaceSize, executor, stream)) return 1;

    double totalWeight = 0;
    for (int64_t i = 0; i < n; ++i) totalWeight += weightHost[targetHost[i]];
    std::vector<double> expected(n * c);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < c; ++j)
            expected[i * c + j] = gradLossHost[0] / totalWeight * weightHost[targetHost[i]] *
                                  (std::exp(double(logProbHost[i * c + j])) - (j == targetHost[i]));
    const int bad = CheckResult(out, expected, 1e-5);

    ReleaseAll({&gradLoss, &logProb, &target, &weight, &out}, device, stream);
    return bad ? 1 : 0;
}
