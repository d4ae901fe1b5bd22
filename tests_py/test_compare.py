"""ascendgrad.compare and ``python -m ascendgrad compare``: ULP distances (across zero, exact in
float16/bfloat16), NaN/inf handling, the pass criterion, every file format, CLI exit codes."""

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import reference as ref
from ascendgrad.compare import CRITERIA, load, ulp_distance

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ascendgrad", "compare", *map(str, args)],
                          capture_output=True, text=True)


# ---- ULP distances ------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_ulp_neighbours_and_signed_zero(dt):
    fi = ml_dtypes.finfo(dt)
    one = np.array(1.0, dtype=dt)
    up = (np.float64(one) + float(fi.eps))  # the next value above 1 in dt
    assert ulp_distance(1.0, up, dt) == 1
    assert ulp_distance(up, 1.0, dt) == 1
    assert ulp_distance(0.0, -0.0, dt) == 0
    tiny = float(fi.smallest_subnormal)
    assert ulp_distance(-tiny, tiny, dt) == 2  # across zero the steps add up
    assert ulp_distance(0.0, tiny, dt) == 1
    assert ulp_distance(-1.0, 1.0, dt) == 2 * int(one.view(f"u{one.itemsize}"))
    assert ulp_distance(float(fi.max), np.inf, dt) == 1


def test_ulp_float64_extremes_fit():
    m = float(np.finfo(np.float64).max)
    assert int(ulp_distance(-m, m, np.float64)) == 2 * 0x7FEFFFFFFFFFFFFF


def test_ulp_rounds_to_the_dtype_first():
    # 1 + 2^-9 rounds to 1 in bfloat16 (eps 2^-7), so 0 ULP; float16 (eps 2^-10) tells 2 apart
    assert ulp_distance(1.0, 1.0 + 2.0**-9, "bfloat16") == 0
    assert ulp_distance(1.0, 1.0 + 2.0**-9, np.float16) == 2


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_exact_values_compare_exactly(dt):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000).astype(dt)
    r = ascendgrad.compare(a, a.astype(np.float64))
    assert r and r.dtype == np.dtype(dt).name
    assert r.max_abs_err == 0 and r.max_ulp == 0 and r.ulp_histogram["0"] == 1000 and r.beyond == 0


def test_histogram_buckets():
    steps = [0, 1, 2, 3, 5, 9, 2000]
    a = np.array([np.float32(1.0)] * len(steps), dtype=np.float32)
    bits = a.view(np.uint32) + np.array(steps, dtype=np.uint32)
    e = bits.view(np.float32)
    r = ascendgrad.compare(a, e, rtol=1, atol=1)
    h = r.ulp_histogram
    assert list(h)[:6] == ["0", "1", "2", "3-4", "5-8", "9-16"] and list(h)[-1] == ">1024"
    assert (h["0"], h["1"], h["2"], h["3-4"], h["5-8"], h["9-16"], h[">1024"]) == (1, 1, 1, 1, 1, 1, 1)
    assert sum(h.values()) == len(steps) and r.max_ulp == 2000


def test_histogram_of_half_precision_vs_float64():
    x = np.linspace(-3, 3, 1001)
    r = ascendgrad.compare(x.astype(np.float16), x)  # rounding to nearest: at most half an ULP
    assert r.max_ulp == 0 and r
    assert r.max_rel_err <= 2.0**-11 * (1 + 1e-12)


# ---- NaN / inf -----------------------------------------------------------------------------


def test_nan_mismatches():
    e = np.array([1.0, np.nan, 3.0, np.nan])
    a = np.array([np.nan, 2.0, 3.0, np.nan], dtype=np.float32)
    r = ascendgrad.compare(a, e)
    assert not r and r.nan_mismatch == 2 and r.inf_mismatch == 0
    assert r.finite == 1 and r.max_abs_err == 0  # errors only over elements finite in both
    assert {m.location for m in r.worst} == {(0,), (1,)}
    assert "NaN" in " ".join(r.reasons)


def test_matched_ratio_counts_nan_and_inf_mismatches_as_unmatched():
    """NaN > tolerance is False: an element whose error is NaN must still count as unmatched,
    and an agreeing NaN pair as matched, over every element (not only the finite ones)."""
    n = 1000
    e = np.linspace(-1, 1, n)
    e[[5, 6]] = np.nan  # NaN in both: agrees
    a = e.astype(np.float32)
    a[[10, 20, 30]] = np.nan
    a[40] = np.inf
    r = ascendgrad.compare(a, e)
    assert r.metrics["matched_ratio"] == (n - 4) / n
    check = {c.metric: c for c in r.checks}["matched_ratio"]
    assert check.passed and check.value == (n - 4) / n and not r  # the ratio holds; the NaN fails the call
    a[100:120] = np.nan  # 2.4 % unmatched: the ratio itself fails
    r = ascendgrad.compare(a, e)
    assert r.metrics["matched_ratio"] == (n - 24) / n and not {c.metric: c for c in r.checks}["matched_ratio"].passed
    assert r.to_dict()["metrics"]["matched_ratio"] == (n - 24) / n
    assert r.nan_mismatch == 23 and r.inf_mismatch == 1
    for standard in ("cann-v1", "msprobe"):  # the other standards fail it too
        assert not ascendgrad.compare(a, e, standard=standard), standard


def test_nan_in_both_agrees_unless_equal_nan_false():
    a = np.array([np.nan, 1.0], dtype=np.float32)
    assert ascendgrad.compare(a, a.astype(np.float64))
    r = ascendgrad.compare(a, a.astype(np.float64), equal_nan=False)
    assert not r and r.nan_mismatch == 1


def test_inf_mismatches():
    e = np.array([np.inf, np.inf, -np.inf, 5.0, np.inf])
    a = np.array([np.inf, -np.inf, 1.0, np.inf, np.nan], dtype=np.float16)
    r = ascendgrad.compare(a, e)
    assert r.inf_mismatch == 3  # sign, inf vs finite, finite vs inf
    assert r.nan_mismatch == 1
    assert not r and r.beyond == 4
    ok = ascendgrad.compare(np.array([np.inf, -np.inf], dtype=np.float16), np.array([np.inf, -np.inf]))
    assert ok and ok.finite == 0


# ---- the criterion --------------------------------------------------------------------------


def test_fraction_beyond_tolerance():
    # the cann standard in float16: atol + rtol*|1| = 2^-8 = 4 ULP; at least 99% must match
    n = 10000
    e = np.ones(n)
    a = e.astype(np.float16)
    a[:100] = np.float16(1.0 + 5 * 2.0**-10)  # 5 ULP: beyond, within the max-abs limit 0.1
    r = ascendgrad.compare(a, e)
    assert r and r.beyond == 100 and r.beyond_fraction == pytest.approx(0.01)
    assert r.metrics["matched_ratio"] == 0.99
    a[:101] = a[0]
    r = ascendgrad.compare(a, e)
    assert not r and r.beyond == 101 and "matched_ratio" in r.reasons[0]
    assert ascendgrad.compare(a, e, max_fraction=0.02)


def test_a_single_outlier_fails():
    e = np.ones(100000)
    a = e.astype(np.float32)
    a[123] = 1.1
    r = ascendgrad.compare(a, e)
    assert not r and r.beyond == 1
    assert r.worst[0].location == (123,) and r.worst[0].ulp == int(ulp_distance(1.1, 1.0, np.float32))
    assert "max_abs_error" in r.reasons[0] and [c.metric for c in r.failed] == ["max_abs_error"]
    assert ascendgrad.compare(a, e, max_abs=0.2)
    assert not ascendgrad.compare(a, e, max_abs=0.2, max_ratio=10)  # the added per-element cap


def test_defaults_and_overrides():
    assert CRITERIA["float16"].rtol == 2.0**-9 and CRITERIA["bfloat16"].rtol == 2.0**-6
    assert CRITERIA["float32"].atol == 2.0**-16 and CRITERIA["float32"].max_fraction == 0.01
    r = ascendgrad.compare(np.zeros(3, np.float32), np.zeros(3), rtol=0.5, atol=0.25, max_fraction=0.1, max_ratio=3)
    assert (r.rtol, r.atol, r.max_fraction, r.max_ratio) == (0.5, 0.25, 0.1, 3.0)
    assert ascendgrad.compare(np.zeros(3, np.float32), np.zeros(3), dtype="bfloat16").dtype == "bfloat16"
    assert ascendgrad.compare(np.arange(3), np.arange(3.0)).dtype == "float64"  # ints: float64


def test_errors():
    with pytest.raises(ValueError, match="shape"):
        ascendgrad.compare(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="dtype"):
        ascendgrad.compare(np.zeros(3), np.zeros(3), dtype=np.int32)
    with pytest.raises(TypeError):
        ascendgrad.compare(np.array(["a"]), np.zeros(1))


def test_report_str_dict_and_truth():
    e = np.array([[1.0, 2.0], [3.0, 4.0]])
    a = np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32)
    r = ascendgrad.compare(a, e)
    assert not r and "FAILED" in str(r) and "(1, 1)" in str(r) and "ULP distance in float32" in str(r)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["passed"] is False and d["worst"][0]["location"] == [1, 1] and d["beyond"] == 1
    assert d["max_abs_err"] == 0.5 and d["shape"] == [2, 2]
    good = ascendgrad.compare(e.astype(np.float32), e)
    assert good and "PASSED" in str(good) and good.to_dict()["reasons"] == []


def test_empty_arrays_pass():
    r = ascendgrad.compare(np.zeros((0, 3), np.float32), np.zeros((0, 3)))
    assert r and r.size == 0 and r.max_abs_err == 0


def test_kernel_in_each_dtype_passes_against_the_golden_model():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 33))
    g = rng.standard_normal((64, 33))
    y = ref.softmax(x, -1)
    for dt in FLOATS:
        gd, yd = g.astype(dt), y.astype(dt)
        golden = ref.softmax_backward(gd, yd, -1)  # from the inputs the kernel saw
        r = ascendgrad.compare(ascendgrad.softmax_backward(gd, yd, -1), golden)
        assert r.dtype == np.dtype(dt).name
        assert r, str(r)


def test_torch_tensors_are_compared():
    torch = pytest.importorskip("torch")
    t = torch.linspace(-2, 2, 50, dtype=torch.bfloat16)
    r = ascendgrad.compare(t, t.double())
    assert r and r.dtype == "bfloat16" and r.max_ulp == 0


# ---- files and the command line -----------------------------------------------------------


@pytest.fixture
def pair():
    rng = np.random.default_rng(2)
    g, x = rng.standard_normal((6, 5)).astype(BF16), rng.standard_normal((6, 5)).astype(BF16)
    golden = ref.log_sigmoid_backward(g, x)
    actual = ascendgrad.log_sigmoid_backward(g, x)
    return actual, golden


def test_load_formats(tmp_path, pair):
    actual, golden = pair
    np.save(tmp_path / "a.npy", actual)  # bfloat16 is saved as void |V2
    assert load(tmp_path / "a.npy")[""].dtype == BF16
    assert load(tmp_path / "a.npy", dtype="float16")[""].dtype == np.float16
    actual.tofile(tmp_path / "a.bin")
    raw = load(tmp_path / "a.bin", dtype="bfloat16", shape=(6, 5))[""]
    assert raw.dtype == BF16 and raw.shape == (6, 5) and (raw.view(np.uint16) == actual.view(np.uint16)).all()
    np.savez(tmp_path / "z.npz", grad=golden, other=golden[:2])
    assert set(load(tmp_path / "z.npz")) == {"grad", "other"}
    assert list(load(tmp_path / "z.npz", key="grad")) == ["grad"]
    with pytest.raises(ValueError, match="no array"):
        load(tmp_path / "z.npz", key="nope")
    with pytest.raises(ValueError, match="dtype"):
        load(tmp_path / "a.bin")
    with pytest.raises(ValueError, match="fit"):
        load(tmp_path / "a.bin", dtype="bfloat16", shape=(4, 4))


def test_cli_npy_pass_and_json(tmp_path, pair):
    actual, golden = pair
    np.save(tmp_path / "a.npy", actual)
    np.save(tmp_path / "e.npy", golden)
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASSED" in r.stdout and "bfloat16" in r.stdout
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--json")
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["passed"] is True and d["dtype"] == "bfloat16" and d["shape"] == [6, 5]


def test_cli_raw_bin(tmp_path, pair):
    actual, golden = pair
    actual.tofile(tmp_path / "a.bin")
    golden.tofile(tmp_path / "e.bin")
    np.save(tmp_path / "e.npy", golden)
    r = cli(tmp_path / "a.bin", tmp_path / "e.npy", "--dtype", "bfloat16")  # takes the .npy's shape
    assert r.returncode == 0, r.stdout + r.stderr
    assert "shape=(6, 5)" in r.stdout
    r = cli(tmp_path / "a.bin", tmp_path / "e.npy", "--dtype", "bfloat16", "--shape", "6,5")
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(tmp_path / "e.bin", tmp_path / "e.bin", "--dtype", "float64", "--shape", "5x6")
    assert r.returncode == 0 and "shape=(5, 6)" in r.stdout and "float64" in r.stdout
    r = cli(tmp_path / "a.bin", tmp_path / "e.npy")  # a raw file needs --dtype
    assert r.returncode == 2 and "dtype" in r.stderr


def test_cli_npz_matching_keys_and_key(tmp_path, pair):
    actual, golden = pair
    np.savez(tmp_path / "a.npz", grad=actual.astype(np.float32), extra=np.zeros(2))
    np.savez(tmp_path / "e.npz", grad=golden)
    r = cli(tmp_path / "a.npz", tmp_path / "e.npz", "--compare-dtype", "bfloat16")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[grad]" in r.stdout and "'extra'" in r.stderr
    r = cli(tmp_path / "a.npz", tmp_path / "e.npz", "--key", "grad", "--json", "--compare-dtype", "bf16")
    assert r.returncode == 0 and json.loads(r.stdout)["dtype"] == "bfloat16"
    r = cli(tmp_path / "a.npz", tmp_path / "e.npz", "--key", "grad")  # float32's criterion: too coarse
    assert r.returncode == 1
    np.savez(tmp_path / "b.npz", grad=golden, other=golden)
    r = cli(tmp_path / "b.npz", tmp_path / "e.npz", "--json")
    d = json.loads(r.stdout)
    assert r.returncode == 0 and list(d) == ["grad"]
    np.savez(tmp_path / "c.npz", nothing=golden, more=golden)
    assert cli(tmp_path / "c.npz", tmp_path / "e.npz").returncode == 2


def test_cli_fail_exit_1_and_strict_json(tmp_path, pair):
    actual, golden = pair
    bad = actual.astype(np.float32)
    bad[2, 3] = np.nan
    bad[0, 0] += 1
    np.save(tmp_path / "a.npy", bad)
    np.save(tmp_path / "e.npy", golden)
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy")
    assert r.returncode == 1 and "FAILED" in r.stdout and "(2, 3)" in r.stdout
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--json")
    assert r.returncode == 1
    d = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert d["nan_mismatch"] == 1 and d["worst"][0]["ratio"] == "inf"
    r = cli(tmp_path / "a.npy", tmp_path / "e.npy", "--rtol", "1", "--atol", "1", "--max-fraction", "0.1")
    assert r.returncode == 1  # the NaN still fails


def test_cli_usage_errors(tmp_path):
    assert cli(tmp_path / "missing.npy", tmp_path / "missing.npy").returncode == 2
    np.save(tmp_path / "a.npy", np.zeros(3))
    np.save(tmp_path / "b.npy", np.zeros(4))
    r = cli(tmp_path / "a.npy", tmp_path / "b.npy")
    assert r.returncode == 2 and "shape" in r.stderr
    assert cli(tmp_path / "a.npy").returncode == 2  # argparse: missing EXPECTED
