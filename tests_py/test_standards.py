"""The named precision standards of ascendgrad.compare at their edges: for every threshold, per
dtype, a case just inside and one just outside, with the numbers worked out by hand from the
published definitions (CANN v2 mixed tolerance, CANN v1 MERE/MARE, the dual benchmark with its
levels and small-value rule, msprobe's accuracy checker); NaN/inf handling; the CLI."""

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from ascendgrad.compare import CRITERIA, LEVELS, STANDARDS, compare, ulp_of

BF16 = ml_dtypes.bfloat16
HALF = ["float16", "bfloat16"]
DTYPES = ["float16", "bfloat16", "float32"]
IN, OUT = 1 - 1e-6, 1 + 1e-6  # just inside / just outside a threshold (relative)


def failed(r):
    return [c.metric for c in r.failed]


# ---- cann: CANN ecosystem standard v2 (mixed tolerance) -------------------------------------

# atol + rtol*|1| in ULPs of 1.0: float16 2^-9 + 2^-9 = 2^-8 = 4 ULP (2^-10); bfloat16 2^-6 + 2^-6 =
# 2^-5 = 4 ULP (2^-7); float32 2^-10 + 2^-16 = 8192 + 128 ULP (2^-23)
TOL_ULPS = {"float16": (4, 2.0**-10), "bfloat16": (4, 2.0**-7), "float32": (8320, 2.0**-23)}


@pytest.mark.parametrize("dt", DTYPES)
def test_cann_element_tolerance_and_matched_ratio(dt):
    n_ulp, ulp = TOL_ULPS[dt]
    e = np.ones(100)
    a = np.ones(100)
    a[:] = 1 + n_ulp * ulp  # |err| = atol + rtol: every element matches
    r = compare(a.astype(dt), e)
    assert r and r.beyond == 0 and r.metrics["matched_ratio"] == 1.0
    a[:] = 1.0
    a[0] = 1 + (n_ulp + 1) * ulp  # one beyond: matched 99/100 = 0.99 >= 0.99
    r = compare(a.astype(dt), e)
    assert r and r.beyond == 1 and r.metrics["matched_ratio"] == 0.99
    a[1] = a[0]  # two beyond: 0.98
    r = compare(a.astype(dt), e)
    assert not r and failed(r) == ["matched_ratio"] and r.metrics["matched_ratio"] == 0.98
    assert r.standard == "cann" and r.thresholds["required_matched_ratio"] == 0.99
    assert r.thresholds["rtol"] == CRITERIA[dt].rtol and r.thresholds["atol"] == CRITERIA[dt].atol


# the max-abs-error limit at golden 1.0 (32 ULP there is below X): float16 0.1, bfloat16 1.0,
# float32 0.01; the neighbours in the dtype on either side of 1 + X
EDGE_AT_ONE = {
    "float16": (1.099609375, 1.1005859375),  # errors 0.0996 <= 0.1 < 0.1006
    "bfloat16": (2.0, 2.015625),  # errors 1.0 <= 1.0 < 1.0156
    "float32": (float(np.float32(1.01)), float(np.nextafter(np.float32(1.01), np.float32(2)))),
}


@pytest.mark.parametrize("dt", DTYPES)
def test_cann_max_abs_error_limit_x(dt):
    inside, outside = EDGE_AT_ONE[dt]
    assert np.asarray(inside).astype(dt).astype(float) == inside  # representable
    e = np.ones(200)
    a = np.ones(200)
    a[7] = inside
    r = compare(a.astype(dt), e)
    assert r, str(r)  # one element beyond the mixed tolerance of 200 (0.995 matched) is allowed
    a[7] = outside
    r = compare(a.astype(dt), e)
    assert not r and failed(r) == ["max_abs_error"]
    assert r.worst[0].location == (7,) and r.failed[0].limit == CRITERIA[dt].max_abs


@pytest.mark.parametrize("dt,g", [("float16", 1024.0), ("bfloat16", 256.0), ("float32", 65536.0)])
def test_cann_max_abs_error_limit_32_ulp(dt, g):
    # at these goldens 32 ULP is above X: float16 ULP(1024) = 1 -> 32; bfloat16 ULP(256) = 2 -> 64;
    # float32 ULP(65536) = 2^-7 -> 0.25
    step = float(ulp_of(g, dt))
    assert step == {"float16": 1.0, "bfloat16": 2.0, "float32": 2.0**-7}[dt]
    e = np.full(200, g)
    a = e.copy()
    a[3] = g + 32 * step
    assert compare(a.astype(dt), e)
    a[3] = g + 33 * step
    r = compare(a.astype(dt), e)
    assert not r and failed(r) == ["max_abs_error"] and r.failed[0].limit == 32 * step


def test_ulp_of():
    assert ulp_of(1.0, "float16") == 2.0**-10 and ulp_of(1.5, "bfloat16") == 2.0**-7
    assert ulp_of(0.0, "float16") == 2.0**-24  # the subnormal spacing
    assert ulp_of(-3.0, "float32") == 2.0**-22
    assert ulp_of(0.99999, "float16") == 2.0**-10  # rounds to 1.0 first


@pytest.mark.parametrize("standard", ["cann", "cann-v1", "msprobe"])
@pytest.mark.parametrize("dt", DTYPES)
def test_nan_and_inf(standard, dt):
    e = np.array([1.0, np.inf, -np.inf, np.nan, 2.0, 3.0])
    ok = compare(e.astype(dt), e, standard=standard)  # matching infinities and NaNs agree
    assert ok and ok.finite == 3
    for i, v in ((0, np.nan), (1, -np.inf), (4, np.inf), (3, 1.0)):
        a = e.copy()
        a[i] = v
        r = compare(a.astype(dt), e, standard=standard)
        assert not r and "nan_inf_mismatches" in failed(r) and r.worst[0].location == (i,)
    assert not compare(e.astype(dt), e, standard=standard, equal_nan=False)


# ---- cann-v1: MERE < T, MARE < 10 T --------------------------------------------------------

T_V1 = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-13}


@pytest.mark.parametrize("dt", DTYPES)
def test_cann_v1_mere_and_mare(dt):
    t = T_V1[dt]
    e = np.ones(100)

    def with_rel(rel):  # relative error as the standard defines it: |a - g| / (|g| + 1e-7)
        return e + rel * (1 + 1e-7)

    # every element at T: MERE = MARE = T
    r = compare(with_rel(np.full(100, t * IN)), e, standard="cann-v1", dtype=dt)
    assert r and r.metrics["mere"] == pytest.approx(t * IN, rel=1e-9)
    r = compare(with_rel(np.full(100, t * OUT)), e, standard="cann-v1", dtype=dt)
    assert not r and failed(r) == ["mere"]
    # one element at 10 T: MARE = 10 T, MERE = T / 10
    rel = np.zeros(100)
    rel[5] = 10 * t * IN
    assert compare(with_rel(rel), e, standard="cann-v1", dtype=dt)
    rel[5] = 10 * t * OUT
    r = compare(with_rel(rel), e, standard="cann-v1", dtype=dt)
    assert not r and failed(r) == ["mare"] and r.worst[0].location == (5,)
    assert r.thresholds == {"mere": t, "mare": 10 * t}


def test_cann_v1_small_golden_uses_1e_7():
    # golden 0: relative error = |a| / 1e-7; in float32 T = 2^-13, so |a| < 1e-7 * 10 * 2^-13 passes MARE
    e = np.zeros(1000)
    a = np.zeros(1000)
    a[0] = 1e-7 * 10 * T_V1["float32"] * IN
    assert compare(a, e, standard="cann-v1", dtype="float32")
    a[0] = 1e-7 * 10 * T_V1["float32"] * OUT
    assert failed(compare(a, e, standard="cann-v1", dtype="float32")) == ["mare"]


# ---- msprobe: the API accuracy checker --------------------------------------------------------

EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-8, "float32": 2.0**-23}


@pytest.mark.parametrize("dt", DTYPES)
def test_msprobe_cosine(dt):
    # a = [1, s], g = [1, 0]: cos = 1 / sqrt(1 + s^2) > 0.99  <=>  s < sqrt(1/0.99^2 - 1) = 0.142492
    s_edge = np.sqrt(1 / 0.99**2 - 1)
    r = compare(np.array([1.0, s_edge * IN]), np.array([1.0, 0.0]), standard="msprobe", dtype=dt)
    assert r.checks[1].metric == "cosine" and r.checks[1].passed
    assert r.metrics["cosine"] == pytest.approx(0.99, abs=1e-7)
    r = compare(np.array([1.0, s_edge * OUT]), np.array([1.0, 0.0]), standard="msprobe", dtype=dt)
    assert not r and failed(r) == ["cosine"] and len(r.checks) == 2  # an error: nothing else checked
    assert compare(np.zeros(4), np.zeros(4), standard="msprobe", dtype=dt)  # all zero: skipped
    assert not compare(np.zeros(4), np.ones(4), standard="msprobe", dtype=dt)  # one side all zero


@pytest.mark.parametrize("dt", DTYPES)
def test_msprobe_max_abs_error_passes_early(dt):
    e = np.ones(1000)
    r = compare(e + 0.001 * IN, e, standard="msprobe", dtype=dt)  # every relative error ~ 1/1000
    assert r and [c.metric for c in r.checks] == ["nan_inf_mismatches", "cosine", "max_abs_error"]
    r = compare(e + 0.001 * OUT * (1 + EPS[dt]), e, standard="msprobe", dtype=dt)
    assert not r  # relative errors just above 1/1000 everywhere: the dual-thousandth rule fails
    assert failed(r) == ["rel_err_thousandth"]


@pytest.mark.parametrize("dt", HALF)
def test_msprobe_dual_hundredth_and_thousandth(dt):
    def case(n, k, rel_k, rel_rest):
        e = np.ones(n)
        rel = np.full(n, rel_rest)
        rel[:k] = rel_k
        return compare(e + rel * (1 + EPS[dt]), e, standard="msprobe", dtype=dt)

    # hundredth: share of relative errors < 0.01 must be > 0.99 (1000 elements: at most 9 above)
    r = case(1000, 9, 0.02, 0.0005)
    assert r.metrics["rel_err_hundredth"] == 0.991 and "rel_err_hundredth" not in failed(r)
    assert failed(r) == ["rel_err_thousandth"]  # 0.991 below 1/1000: msprobe's warning, a failure
    r = case(1000, 10, 0.02, 0.0005)
    assert failed(r) == ["rel_err_hundredth"] and r.metrics["rel_err_hundredth"] == 0.99
    # thousandth: share < 0.001 must be > 0.999 (10000 elements: at most 9 above)
    r = case(10000, 9, 0.002, 0.0005)
    assert r and r.metrics["rel_err_thousandth"] == 0.9991
    r = case(10000, 10, 0.002, 0.0005)
    assert failed(r) == ["rel_err_thousandth"] and r.metrics["rel_err_thousandth"] == 0.999


def test_msprobe_dual_thousandth_and_ten_thousandth_float32():
    def case(n, k, rel_k, rel_rest, g=1.0):
        e = np.full(n, g)
        rel = np.full(n, rel_rest)
        rel[:k] = rel_k
        return compare(e + rel * (g + EPS["float32"]), e, standard="msprobe", dtype="float32")

    r = case(10000, 9, 0.002, 0.00005)
    assert r.metrics["rel_err_thousandth"] == 0.9991 and "rel_err_thousandth" not in failed(r)
    assert failed(r) == ["rel_err_ten_thousandth"]  # the same 9 are above 1/10000: 0.9991
    r = case(10000, 10, 0.002, 0.00005)
    assert failed(r) == ["rel_err_thousandth"]  # msprobe's error
    # golden 10: relative 0.0005 is an absolute 0.005, above the early pass at 0.001
    r = case(100000, 9, 0.0005, 0.00005, g=10.0)
    assert r and r.metrics["rel_err_ten_thousandth"] == 0.99991
    r = case(100000, 10, 0.0005, 0.00005, g=10.0)
    assert failed(r) == ["rel_err_ten_thousandth"]  # msprobe's warning: not passed either
    assert r.metrics["rel_err_thousandth"] == 1.0


# ---- dual-benchmark: CANN's commercial standard --------------------------------------------------


def dual(a, e, b, dt, level=None):
    return compare(a, e, standard="dual-benchmark", benchmark=b, level=level, dtype=dt)


@pytest.mark.parametrize("level", ["L0", "L1", "L2"])
@pytest.mark.parametrize("dt", DTYPES)
def test_dual_mare_ratio(dt, level):
    mare_lim = LEVELS[level][0]
    n, rb = 1000, 1e-3
    e = np.ones(n)
    b = e + rb * (1 + 1e-7)  # third party: relative error rb everywhere
    for f, ok in ((IN, True), (OUT, False)):
        rel = np.full(n, rb / 2)  # NPU: half the error, but one element at the MARE ratio limit
        rel[17] = mare_lim * (rb + 1e-7) * f
        r = dual(e + rel * (1 + 1e-7), e, b, dt, level)
        assert bool(r) is ok and r.level == level and r.metrics["mare_ratio"] == pytest.approx(mare_lim * f)
        if not ok:
            assert failed(r) == ["mare_ratio"] and r.worst[0].location == (17,)


@pytest.mark.parametrize("level", ["L0", "L1", "L2"])
def test_dual_mere_ratio(level):
    lim = LEVELS[level][1]
    n, r_ = 1000, 1e-3
    e = np.ones(n)
    b = e.copy()
    b[::2] += 2 * r_ * (1 + 1e-7)  # third party: half the elements at 2r: MERE r, RMSE r*sqrt(2), MARE 2r
    for f, ok in ((IN, True), (OUT, False)):
        m = lim * (r_ + 1e-7) * f  # NPU uniform: MERE = RMSE ~ MARE = m
        r = dual(e + m * (1 + 1e-7), e, b, "float32", level)
        assert bool(r) is ok, str(r)
        assert r.metrics["mere_ratio"] == pytest.approx(lim * f, rel=1e-6)
        if not ok:
            assert failed(r) == ["mere_ratio"]


@pytest.mark.parametrize("level", ["L0", "L1", "L2"])
def test_dual_rmse_ratio(level):
    lim = LEVELS[level][2]
    n, r_ = 1600, 1e-3
    e = np.ones(n)
    b = e + r_  # third party: absolute error r everywhere: RMSE r (MERE ~ r, MARE ~ r)
    # (MARE ratio 1.25 * lim stays within every level's MARE limit)
    rmse_b = r_
    for f, ok in ((IN, True), (OUT, False)):
        big = lim * (rmse_b + 1e-7) * f / 0.8  # NPU: 64% of the elements at E: RMSE = 0.8 E, MERE = 0.64 E
        a = e.copy()
        a[:1024] += big
        r = dual(a, e, b, "float32", level)
        assert r.metrics["rmse_ratio"] == pytest.approx(lim * f, rel=1e-9)
        assert bool(r) is ok, str(r)
        if not ok:
            assert failed(r) == ["rmse_ratio"]


SMALL = {"float16": (2.0**-11, 2.0**-16), "bfloat16": (2.0**-8, 2.0**-16), "float32": (2.0**-14, 2.0**-30)}


@pytest.mark.parametrize("dt", DTYPES)
def test_dual_small_value_rule(dt):
    thr, err = SMALL[dt]
    assert STANDARDS["dual-benchmark"].thresholds[dt]["small_value"] == thr
    e = np.full(100, thr / 2)  # all small values: judged by counting errors above `err`
    b = e.copy()
    a = e.copy()
    a[:10] += err  # exactly the error threshold: not counted
    r = dual(a, e, b, dt)
    assert r and r.metrics["small_error_count_npu"] == 0
    a[:2] = e[:2] + err * OUT  # 2 errors / max(0, 1) = 2 <= 2
    r = dual(a, e, b, dt)
    assert r and r.metrics["small_error_count_ratio"] == 2
    a[2] = a[0]  # 3 > 2
    r = dual(a, e, b, dt)
    assert not r and failed(r) == ["small_error_count_ratio"] and r.worst[0].location[0] < 3
    b[50:52] += err * 2  # the third party errs twice: 3 / 2 = 1.5
    assert dual(a, e, b, dt)
    # a golden at the threshold is a normal value (the rule is |g| < threshold)
    r = dual(np.full(4, thr) + err * 2, np.full(4, thr), np.full(4, thr) + err * 2, dt)
    assert r.metrics["small_error_count_npu"] == 0 and r.metrics["mare_npu"] > 0


def test_dual_special_values():
    e = np.array([1.0, 2.0, np.inf, np.nan, 3.0])
    b = np.array([1.0, np.nan, np.inf, 7.0, 3.0])
    a = np.array([1.0, np.nan, np.inf, np.nan, 3.0])  # NPU equals the third party or the golden
    assert dual(a, e, b, "float32")
    a2 = a.copy()
    a2[2] = -np.inf  # golden inf, third party agrees, NPU differs: an error
    r = dual(a2, e, b, "float32")
    assert not r and failed(r) == ["special_value_errors"] and r.worst[0].location == (2,)
    a3 = a.copy()
    a3[4] = np.nan  # NaN where golden and third party are finite
    assert failed(dual(a3, e, b, "float32")) == ["special_value_errors"]


def test_dual_needs_benchmark_and_levels():
    e = np.ones(3)
    with pytest.raises(ValueError, match="benchmark"):
        compare(e, e, standard="dual-benchmark")
    with pytest.raises(ValueError, match="level"):
        compare(e, e, standard="dual-benchmark", benchmark=e, level="L9")
    with pytest.raises(ValueError, match="dual-benchmark"):
        compare(e, e, benchmark=e)
    with pytest.raises(ValueError, match="shape"):
        compare(e, e, standard="dual-benchmark", benchmark=np.ones(4))
    assert dual(e, e, e, "float16").level == "L0"


def test_unknown_standard_and_overrides():
    with pytest.raises(ValueError, match="unknown standard"):
        compare(np.ones(2), np.ones(2), standard="ieee")
    with pytest.raises(ValueError, match="cann"):
        compare(np.ones(2), np.ones(2), standard="msprobe", rtol=0.1)


@pytest.mark.parametrize("standard", ["cann", "cann-v1", "msprobe", "dual-benchmark"])
def test_zero_d_and_all_finite_fast_path(standard):
    b = {"benchmark": np.array(0.5)} if standard == "dual-benchmark" else {}
    assert compare(np.array(0.5, np.float32), np.array(0.5), standard=standard, **b)
    r = compare(np.array(0.75, np.float32), np.array(0.5), standard=standard, **b)
    assert not r and r.worst[0].location == ()
    assert compare(np.array(0.5, np.float32), np.array(0.5), standard=standard, worst=0, **b).worst == ()


def test_report_names_the_standard_and_thresholds():
    e = np.ones(10)
    for name in STANDARDS:
        r = compare(e.astype(np.float16), e, standard=name, benchmark=e if name == "dual-benchmark" else None)
        d = json.loads(json.dumps(r.to_dict()))
        assert d["standard"] == name and d["thresholds"] and d["passed"] and d["checks"]
        assert name in str(r)


# ---- the command line ----------------------------------------------------------------------


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ascendgrad", "compare", *map(str, args)],
                          capture_output=True, text=True)


def test_cli_standards(tmp_path):
    r = cli("--list-standards")
    assert r.returncode == 0
    for name in STANDARDS:
        assert name in r.stdout
    assert "rtol=0.00195312" in r.stdout and "L2 2/1.2/1.2" in r.stdout
    e = np.ones(100)
    a = e.astype(np.float16)
    a[0] = np.float16(1.1005859375)  # beyond cann's 0.1 limit; MARE 0.1 > 10 * 2^-10 in v1 too
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "e.npy", e)
    np.save(tmp_path / "b.npy", a)
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy")
    assert r.returncode == 1 and "under cann" in r.stdout and "max_abs_error" in r.stdout
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--standard", "cann-v1", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["standard"] == "cann-v1"
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--standard", "dual-benchmark",
            "--benchmark", tmp_path / "b.npy", "--level", "L2")
    assert r.returncode == 0 and "dual-benchmark L2" in r.stdout  # no worse than the third party
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--standard", "dual-benchmark")
    assert r.returncode == 2 and "--benchmark" in r.stderr
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--standard", "nope")
    assert r.returncode == 2
