// The judge's one pass (ascendgradJudgeMetrics) for ascendgrad.judge: the GIL is released while it
// runs, so that Python threads judge slices of one tensor side by side.
#include "ascendgrad/ascendgrad.h"
#include "common.h"

namespace agpy {

void bind_judge(py::module_ &m) {
    m.def(
        "judge_metrics",
        [](const py::array &actual, const py::array_t<double, py::array::c_style | py::array::forcecast> &golden,
           const py::dtype &compare_dtype, const std::string &score, bool equal_nan, bool ulp, double rtol,
           double atol, double max_abs, int limit_ulps, double v1_mare, double ms_eps,
           double ms_t1, double ms_t2, int worst, py::object score_out) {
            if (!(actual.flags() & py::array::c_style)) throw py::value_error("actual must be C-contiguous");
            if (actual.size() != golden.size()) throw py::value_error("actual and golden differ in size");
            ascendgradJudgeParams p{};
            p.compareDtype = acl_dtype(compare_dtype);
            p.score = score == "cann" ? 0 : score == "cann-v1" ? 1 : score == "msprobe" ? 2 : -1;
            p.equalNan = equal_nan, p.ulp = ulp, p.rtol = rtol, p.atol = atol, p.maxAbs = max_abs;
            p.limitUlps = limit_ulps, p.v1Mare = v1_mare, p.msEps = ms_eps;
            p.msT1 = ms_t1, p.msT2 = ms_t2, p.worst = std::max(worst, 0);
            std::vector<double> wscore(size_t(p.worst) + 1);
            std::vector<int64_t> windex(size_t(p.worst) + 1);
            p.worstScore = wscore.data(), p.worstIndex = windex.data();
            py::array_t<double, py::array::c_style> so;
            if (!score_out.is_none()) {
                so = score_out.cast<py::array_t<double, py::array::c_style>>();
                if (so.size() != actual.size() || !so.writeable())
                    throw py::value_error("score_out: a writable float64 array of actual's size");
                p.scoreOut = so.mutable_data();
            }
            const aclDataType dt = acl_dtype(actual.dtype());
            ascendgradJudgeStats s{};
            int status;
            {
                py::gil_scoped_release nogil;
                status = ascendgradJudgeMetrics(actual.data(), dt, golden.data(), actual.size(), &p, &s);
            }
            if (status != 0) throw py::value_error("judge_metrics: status " + std::to_string(status));
            py::list hist, worst_list;
            for (int64_t c : s.ulpHist) hist.append(c);
            for (int i = 0; i < s.worstCount; ++i) worst_list.append(py::make_tuple(wscore[i], windex[i]));
            py::dict d;
            d["n"] = s.n, d["finite"] = s.finite, d["nan_bad"] = s.nanBad, d["inf_bad"] = s.infBad;
            d["beyond"] = s.beyond, d["nonzero"] = s.nonzero, d["rel_inf"] = bool(s.relInf);
            d["sum_err"] = s.sumErr, d["max_err"] = s.maxErr, d["sum_rel"] = s.sumRel, d["max_rel"] = s.maxRel;
            d["over_index"] = s.overIndex, d["over_ratio"] = s.overRatio, d["over_err"] = s.overErr;
            d["over_lim"] = s.overLim, d["max_score"] = s.maxScore, d["v1_sum"] = s.v1Sum, d["v1_max"] = s.v1Max;
            d["ms_below1"] = s.msBelow1, d["ms_below2"] = s.msBelow2, d["dot"] = s.dot, d["aa"] = s.aa;
            d["gg"] = s.gg, d["amax"] = s.amax, d["gmax"] = s.gmax, d["max_ulp"] = s.maxUlp;
            d["ulp_hist"] = hist, d["worst"] = worst_list;
            return d;
        },
        py::arg("actual"), py::arg("golden"), py::arg("compare_dtype"), py::arg("score"), py::arg("equal_nan"),
        py::arg("ulp"), py::arg("rtol"), py::arg("atol"), py::arg("max_abs"), py::arg("limit_ulps"),
        py::arg("v1_mare"), py::arg("ms_eps"), py::arg("ms_t1"), py::arg("ms_t2"),
        py::arg("worst"), py::arg("score_out") = py::none(),
        "One pass of the judge over a slice (private: ascendgrad.judge merges the slices).");
}

}  // namespace agpy
