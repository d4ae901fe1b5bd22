// ascendgradJudgeMetrics: the C face of the judge's pass (csrc/kernels/judge.h), so that the Python
// module reaches it through the library's C API like everything else.
#include <algorithm>

#include "aclnn/acl_meta.h"
#include "ascendgrad/ascendgrad.h"
#include "kernels/judge.h"

namespace {
bool float_dtype(aclDataType t, ag::kern::DType *out) {
    switch (t) {
        case ACL_FLOAT16: *out = ag::kern::DType::F16; return true;
        case ACL_BF16: *out = ag::kern::DType::BF16; return true;
        case ACL_FLOAT: *out = ag::kern::DType::F32; return true;
        case ACL_DOUBLE: *out = ag::kern::DType::F64; return true;
        default: return false;
    }
}
}  // namespace

extern "C" int ascendgradJudgeMetrics(const void *actual, aclDataType dtype, const double *golden, int64_t n,
                                      const ascendgradJudgeParams *params, ascendgradJudgeStats *stats) {
    if (!params || !stats || n < 0 || ((!actual || !golden) && n > 0)) return ACLNN_ERR_PARAM_NULLPTR;
    if (params->worst > 0 && (!params->worstScore || !params->worstIndex)) return ACLNN_ERR_PARAM_NULLPTR;
    namespace k = ag::kern;
    k::View v;
    k::JudgeParams p;
    if (!float_dtype(dtype, &v.dtype) || !float_dtype(params->compareDtype, &p.cmp)) return ACLNN_ERR_PARAM_INVALID;
    if (params->score < 0 || params->score > 2) return ACLNN_ERR_PARAM_INVALID;
    v.data = static_cast<char *>(const_cast<void *>(actual));
    v.ndim = 1, v.shape[0] = n, v.stride[0] = 1;
    p.score = k::Score(params->score);
    p.equal_nan = params->equalNan != 0, p.ulp = params->ulp != 0;
    p.rtol = params->rtol, p.atol = params->atol, p.max_abs = params->maxAbs, p.limit_ulps = params->limitUlps;
    p.v1_mare = params->v1Mare, p.ms_eps = params->msEps;
    p.ms_t1 = params->msT1, p.ms_t2 = params->msT2, p.worst = std::max(params->worst, 0);
    p.score_out = params->scoreOut;
    const k::JudgeStats s = n > 0 ? k::judge_metrics(v, golden, p) : k::JudgeStats{};
    *stats = ascendgradJudgeStats{};
    stats->n = s.n, stats->finite = s.finite, stats->nanBad = s.nan_bad, stats->infBad = s.inf_bad;
    stats->beyond = s.beyond, stats->nonzero = s.nonzero, stats->relInf = s.rel_inf;
    stats->sumErr = s.sum_err, stats->maxErr = s.max_err, stats->sumRel = s.sum_rel, stats->maxRel = s.max_rel;
    stats->overIndex = s.over_index, stats->overRatio = s.over_ratio, stats->overErr = s.over_err;
    stats->overLim = s.over_lim, stats->maxScore = s.max_score, stats->v1Sum = s.v1_sum, stats->v1Max = s.v1_max;
    stats->msBelow1 = s.ms_below1, stats->msBelow2 = s.ms_below2;
    stats->dot = s.dot, stats->aa = s.aa, stats->gg = s.gg, stats->amax = s.amax, stats->gmax = s.gmax;
    stats->maxUlp = s.max_ulp;
    std::copy(s.ulp_hist, s.ulp_hist + k::kUlpBuckets, stats->ulpHist);
    stats->worstCount = int(s.worst.size());
    for (size_t i = 0; i < s.worst.size(); ++i)
        params->worstScore[i] = s.worst[i].first, params->worstIndex[i] = s.worst[i].second;
    return ACLNN_SUCCESS;
}
