// The judge's one pass (judge.h). Blocks of kBlock elements: a block whose values are all finite
// (nearly always) runs a branch-free loop that the compiler vectorises, its sums reassociated the
// same way on every call; a block holding NaN or inf runs the scalar loop that sorts out the
// NaN/inf mismatches. The rare per-element work (the worst elements, cann's max-abs rule) rescans
// only the blocks that hold candidates, so its cost does not grow with the tensor.
#include "judge.h"

#include <algorithm>
#include <cfloat>

namespace ag::kern {
inline namespace AG_ISA_NS {
namespace {

constexpr int64_t kBlock = 2048;

// The value rounded to the comparison dtype, as ordered bits: (magnitude, sign). Rounded once from
// double, as NumPy's astype does (half types through float rounded to odd: one rounding).
struct Ordered {
    uint64_t mag;
    bool neg;
};

Ordered ordered(double v, DType cmp) {
    uint64_t bits = 0, sign = 0;
    switch (cmp) {
        case DType::F64: std::memcpy(&bits, &v, 8), sign = uint64_t(1) << 63; break;
        case DType::F32: bits = float_to_bits(float(v)), sign = 1u << 31; break;
        case DType::F16: bits = float_to_half(double_to_float_odd(v)), sign = 1u << 15; break;
        default: bits = float_to_bf16(double_to_float_odd(v)), sign = 1u << 15; break;
    }
    return {bits & ~sign, (bits & sign) != 0};
}

uint64_t ulp_distance(double a, double g, DType cmp) {
    const Ordered x = ordered(a, cmp), y = ordered(g, cmp);
    if (x.neg == y.neg) return x.mag > y.mag ? x.mag - y.mag : y.mag - x.mag;
    return x.mag + y.mag;
}

int ulp_bucket(uint64_t d) {
    if (d <= 2) return int(d);
    const int b = 64 - __builtin_clzll(d - 1) + 1;  // (2^(b-2), 2^(b-1)]
    return std::min(b, kUlpBuckets - 1);
}

// The spacing of the comparison dtype at g rounded to it (the subnormal spacing below its
// smallest normal), as compare.ulp_of computes it.
double ulp_of(double g, DType cmp) {
    int minexp = -1022, mant = 52;
    double r = std::fabs(g);
    switch (cmp) {
        case DType::F32: minexp = -126, mant = 23, r = std::fabs(double(float(g))); break;
        case DType::F16: minexp = -14, mant = 10, r = std::fabs(double(half_to_float(float_to_half(double_to_float_odd(g))))); break;
        case DType::BF16: minexp = -126, mant = 7, r = std::fabs(double(bf16_to_float(float_to_bf16(double_to_float_odd(g))))); break;
        default: break;
    }
    int ex = 0;
    std::frexp(r, &ex);
    ex = r > 0 ? ex - 1 : minexp;
    return std::ldexp(1.0, std::max(ex, minexp) - mant);
}

// Keeps the k largest (score, index) pairs, largest score first, the lower index first among equal
// scores. Indices arrive in increasing order, so an equal score never displaces a kept one.
struct TopK {
    std::vector<std::pair<double, int64_t>> &v;
    int k;
    double floor() const { return int(v.size()) < k ? 0.0 : v.back().first; }
    void offer(double s, int64_t i) {
        if (k <= 0 || !(s > floor())) return;
        auto at = std::find_if(v.begin(), v.end(), [s](const auto &e) { return e.first < s; });
        v.insert(at, {s, i});
        if (int(v.size()) > k) v.pop_back();
    }
};

template <Score K>
inline double score_of(double err, double ag, const JudgeParams &p) {
    if constexpr (K == Score::Cann) {
        const double tol = p.atol + p.rtol * ag;
        return tol > 0 ? err / tol : (err == 0 ? 0.0 : HUGE_VAL);
    } else if constexpr (K == Score::CannV1) {
        return err / (ag + 1e-7) / p.v1_mare;
    } else {
        return err / (ag + p.ms_eps) / p.ms_t1;
    }
}

// One pair, both values finite: the scalar form of the vector loop below.
template <Score K>
double finite_pair(double a, double g, const JudgeParams &p, JudgeStats &s) {
    const double err = std::fabs(a - g), ag = std::fabs(g);
    s.finite++;
    s.sum_err += err;
    s.max_err = std::max(s.max_err, err);
    if (ag != 0) {
        const double rel = err / ag;
        s.sum_rel += rel, s.max_rel = std::max(s.max_rel, rel), s.nonzero++;
    } else if (err > 0) {
        s.rel_inf = true;
    }
    if constexpr (K == Score::CannV1) {
        const double r = err / (ag + 1e-7);
        s.v1_sum += r, s.v1_max = std::max(s.v1_max, r);
    } else if constexpr (K == Score::Msprobe) {
        const double r = err / (ag + p.ms_eps);
        s.ms_below1 += r < p.ms_t1, s.ms_below2 += r < p.ms_t2;
        s.dot += a * g, s.aa += a * a, s.gg += g * g;
        s.amax = std::max(s.amax, std::fabs(a)), s.gmax = std::max(s.gmax, ag);
    }
    return score_of<K>(err, ag, p);
}

// The ULP distances of a block, branch-free (the compiler vectorises it), then their buckets.
template <class Bits>
void ulp_block(const double *a, const double *g, int64_t m, JudgeStats &s) {
    uint64_t *d = scratch<uint64_t>(kBlock);
    uint64_t dmax = 0;
#pragma omp simd reduction(max : dmax)
    for (int64_t i = 0; i < m; ++i) {
        const bool fin = std::fabs(a[i]) <= DBL_MAX && std::fabs(g[i]) <= DBL_MAX;
        Bits x, y;
        if constexpr (sizeof(Bits) == 8) {
            std::memcpy(&x, &a[i], 8), std::memcpy(&y, &g[i], 8);
        } else {
            x = float_to_bits(float(a[i])), y = float_to_bits(float(g[i]));
        }
        constexpr Bits sign = Bits(1) << (8 * sizeof(Bits) - 1);
        const Bits xm = x & ~sign, ym = y & ~sign;
        const Bits v = ((x ^ y) & sign) ? xm + ym : (xm > ym ? xm - ym : ym - xm);
        d[i] = fin ? uint64_t(v) : ~uint64_t(0);  // (not finite: no bucket)
        dmax = std::max(dmax, fin ? uint64_t(v) : uint64_t(0));
    }
    for (int64_t i = 0; i < m; ++i)
        if (d[i] != ~uint64_t(0)) s.ulp_hist[ulp_bucket(d[i])]++;
    s.max_ulp = std::max(s.max_ulp, dmax);
}

template <Score K>
JudgeStats run(const double *a_all, const double *g_all, int64_t n, const JudgeParams &pr, int64_t base,
               JudgeStats s) {
    const JudgeParams p = pr;  // a copy: the stores to score_out cannot alias it
    TopK top{s.worst, p.worst};
    for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
        const int64_t m = std::min(kBlock, n - b0);
        const double *a = a_all + b0, *g = g_all + b0;
        double *so = p.score_out ? p.score_out + base + b0 : nullptr;
        int64_t nonfinite = 0;
#pragma omp simd reduction(+ : nonfinite)
        for (int64_t i = 0; i < m; ++i) nonfinite += !(std::fabs(a[i]) <= DBL_MAX) | !(std::fabs(g[i]) <= DBL_MAX);
        double smax = 0;
        int64_t over = 0;
        if (nonfinite == 0 && (K != Score::Cann || p.atol > 0)) {
            double sum_err = 0, max_err = 0, sum_rel = 0, max_rel = 0, v1_sum = 0, v1_max = 0;
            double dot = 0, aa = 0, gg = 0, amax = 0, gmax = 0;
            int64_t nz = 0, relinf = 0, beyond = 0, b1 = 0, b2 = 0;
#pragma omp simd reduction(+ : sum_err, sum_rel, v1_sum, dot, aa, gg, nz, relinf, beyond, b1, b2, over) \
    reduction(max : max_err, max_rel, v1_max, amax, gmax, smax)
            for (int64_t i = 0; i < m; ++i) {
                const double err = std::fabs(a[i] - g[i]), ag = std::fabs(g[i]);
                sum_err += err;
                max_err = std::max(max_err, err);
                const bool z = ag == 0;
                const double rel = z ? 0.0 : err / (z ? 1.0 : ag);
                sum_rel += rel, max_rel = std::max(max_rel, rel), nz += !z, relinf += z & (err > 0);
                if constexpr (K == Score::CannV1) {
                    const double r = err / (ag + 1e-7);
                    v1_sum += r, v1_max = std::max(v1_max, r);
                } else if constexpr (K == Score::Msprobe) {
                    const double r = err / (ag + p.ms_eps);
                    b1 += r < p.ms_t1, b2 += r < p.ms_t2;
                    dot += a[i] * g[i], aa += a[i] * a[i], gg += g[i] * g[i];
                    amax = std::max(amax, std::fabs(a[i])), gmax = std::max(gmax, ag);
                } else {
                    over += err > p.max_abs;
                }
                // (cann: atol > 0 on this path, so the tolerance is never 0)
                const double sc = K == Score::Cann ? err / (p.atol + p.rtol * ag) : score_of<K>(err, ag, p);
                beyond += sc > 1.0;
                smax = std::max(smax, sc);
                if (so) so[i] = sc;
            }
            s.finite += m, s.sum_err += sum_err, s.max_err = std::max(s.max_err, max_err);
            s.sum_rel += sum_rel, s.max_rel = std::max(s.max_rel, max_rel), s.nonzero += nz;
            s.rel_inf = s.rel_inf || relinf > 0;
            s.v1_sum += v1_sum, s.v1_max = std::max(s.v1_max, v1_max);
            s.ms_below1 += b1, s.ms_below2 += b2, s.dot += dot, s.aa += aa, s.gg += gg;
            s.amax = std::max(s.amax, amax), s.gmax = std::max(s.gmax, gmax);
            s.beyond += beyond;
            s.max_score = std::max(s.max_score, smax);
        } else {
            for (int64_t i = 0; i < m; ++i) {
                const double x = a[i], y = g[i];
                const bool xn = std::isnan(x), yn = std::isnan(y), xi = std::isinf(x), yi = std::isinf(y);
                const bool nan_bad = (xn != yn) || (xn && yn && !p.equal_nan);
                const bool inf_bad = (xi || yi) && !(xn || yn) && x != y;
                double sc = 0;
                if (nan_bad || inf_bad) {
                    s.nan_bad += nan_bad, s.inf_bad += inf_bad;
                    sc = HUGE_VAL;
                } else if (!(xn || yn || xi || yi)) {
                    sc = finite_pair<K>(x, y, p, s);
                    s.max_score = std::max(s.max_score, sc);
                    if constexpr (K == Score::Cann) over += std::fabs(x - y) > p.max_abs;
                }
                s.beyond += sc > 1.0;
                smax = std::max(smax, sc);
                if (so) so[i] = sc;
            }
        }
        if (p.worst > 0 && smax > top.floor()) {  // the block holds candidates: its scores again
            for (int64_t i = 0; i < m; ++i) {
                const double x = a[i], y = g[i];
                double sc;
                if (std::fabs(x) <= DBL_MAX && std::fabs(y) <= DBL_MAX) {
                    sc = score_of<K>(std::fabs(x - y), std::fabs(y), p);
                } else {
                    const bool xn = std::isnan(x), yn = std::isnan(y);
                    const bool bad = (xn != yn) || (xn && yn && !p.equal_nan) ||
                                     ((std::isinf(x) || std::isinf(y)) && !(xn || yn) && x != y);
                    sc = bad ? HUGE_VAL : 0.0;
                }
                top.offer(sc, base + b0 + i);
            }
        }
        if (over > 0) {  // cann's max-abs rule: only where an error exceeds max_abs
            for (int64_t i = 0; i < m; ++i) {
                if (!(std::fabs(a[i]) <= DBL_MAX && std::fabs(g[i]) <= DBL_MAX)) continue;
                const double err = std::fabs(a[i] - g[i]);
                if (!(err > p.max_abs)) continue;
                const double lim = std::max(p.max_abs, p.limit_ulps * ulp_of(g[i], p.cmp));
                const double r = err / lim;
                if (s.over_index < 0 || r > s.over_ratio)
                    s.over_index = base + b0 + i, s.over_ratio = r, s.over_err = err, s.over_lim = lim;
            }
        }
        if (p.ulp && p.cmp == DType::F64) {
            ulp_block<uint64_t>(a, g, m, s);
        } else if (p.ulp && p.cmp == DType::F32) {
            ulp_block<uint32_t>(a, g, m, s);
        } else if (p.ulp) {
            for (int64_t i = 0; i < m; ++i) {
                if (!(std::fabs(a[i]) <= DBL_MAX && std::fabs(g[i]) <= DBL_MAX)) continue;
                const uint64_t d = ulp_distance(a[i], g[i], p.cmp);
                s.ulp_hist[ulp_bucket(d)]++;
                s.max_ulp = std::max(s.max_ulp, d);
            }
        }
    }
    s.n += n;
    return s;
}

}  // namespace

JudgeStats judge_metrics_kernel(const View &actual, const double *golden, const JudgeParams &p) {
    const int64_t n = actual.numel();
    JudgeStats s;
    // The result in double, a block at a time (in cache), then the pass over the block pair.
    constexpr int64_t kChunk = 1 << 14;
    double *buf = scratch<double>(kChunk);
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
        const int64_t m = std::min(kChunk, n - c0);
        const double *a = buf;
        if (actual.dtype == DType::F64) {
            a = reinterpret_cast<const double *>(actual.data) + c0;
        } else {
            dispatch_float(actual.dtype, [&](auto t) {
                using T = decltype(t);
                const T *src = reinterpret_cast<const T *>(actual.data) + c0;
#pragma omp simd
                for (int64_t i = 0; i < m; ++i) buf[i] = load<double>(src + i);
            });
        }
        switch (p.score) {
            case Score::Cann: s = run<Score::Cann>(a, golden + c0, m, p, c0, std::move(s)); break;
            case Score::CannV1: s = run<Score::CannV1>(a, golden + c0, m, p, c0, std::move(s)); break;
            default: s = run<Score::Msprobe>(a, golden + c0, m, p, c0, std::move(s)); break;
        }
    }
    return s;
}

}  // namespace AG_ISA_NS
}  // namespace ag::kern
