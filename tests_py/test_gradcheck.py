"""ascendgrad.gradcheck: the harness itself, then the library kernels through it.

The harness must be able to fail: deliberately wrong VJPs built from the reference are caught in
slow and in fast mode (by the fast probes themselves, not only by the element-wise rerun), while
the right VJPs pass in both. `gradcheck(op)`'s plumbing is exercised with a stand-in for the
compiled module (the reference rounded to the dtype), then the real kernels are checked.
"""

import math
import sys
import types

import ml_dtypes
import numpy as np
import pytest

DTYPES = ["float64", "float32", "float16", "bfloat16"]


# --------------------------------------------------------------------------------------------
# wrong and right VJPs, built from the reference


def _softmax_case(ref, shape, wrong):
    x = np.random.default_rng(10).standard_normal(shape)

    def vjp(v, x_):
        out = ref.softmax_backward(v, ref.softmax(x_, -1), -1)
        return -out if wrong else out  # sign flipped

    return (lambda x_: ref.softmax(x_, -1)), vjp, x


def _log_sigmoid_case(ref, shape, wrong):
    x = np.random.default_rng(11).uniform(-5, 5, shape)
    return ref.log_sigmoid, (lambda v, x_: ref.log_sigmoid_backward(v, x_) * (1.01 if wrong else 1.0)), x


def _ce_wrong_class_case(ref, shape, wrong):
    n, c = shape
    rng = np.random.default_rng(12)
    x, t = rng.standard_normal(shape), rng.integers(0, c, n)
    w = rng.uniform(0.5, 1.5, c)
    t_bad = (t + 1) % c if wrong else t  # the gradient's -1 lands in the wrong column

    def vjp(v, x_):
        return ref.cross_entropy_loss_grad(v, ref.log_softmax(x_, 1), t_bad, w)

    return (lambda x_: ref.cross_entropy(x_, t, w)), vjp, x


def _ce_no_smoothing_case(ref, shape, wrong):
    n, c = shape
    rng = np.random.default_rng(13)
    x, t = rng.standard_normal(shape), rng.integers(0, c, n)
    t[::4] = -100  # some ignored rows
    w = rng.uniform(0.5, 1.5, c)

    def vjp(v, x_):
        lp = ref.log_softmax(x_, 1)
        if wrong:  # the (ε/C)·(S_w·p − w_j) term dropped, (1 − ε) kept
            return (1 - 0.2) * ref.cross_entropy_loss_grad(v, lp, t, w)
        return ref.cross_entropy_loss_grad(v, lp, t, w, label_smoothing=0.2)

    return (lambda x_: ref.cross_entropy(x_, t, w, label_smoothing=0.2)), vjp, x


def _kl_mean_case(ref, shape, wrong):
    rng = np.random.default_rng(14)
    x, t = rng.standard_normal(shape), rng.uniform(0, 1, shape)

    def vjp(v, x_):  # wrong: 'mean' without its 1/N (i.e. 'sum')
        return ref.kl_div_backward(v, x_, t, "sum" if wrong else "mean")

    return (lambda x_: ref.kl_div(x_, t, "mean")), vjp, x


# name: (builder, small shape for slow mode, larger shape for fast mode)
CASES = {
    "softmax_sign_flipped": (_softmax_case, (4, 7), (30, 40)),
    "log_sigmoid_scale_1pct": (_log_sigmoid_case, (5, 6), (40, 50)),
    "ce_wrong_class": (_ce_wrong_class_case, (6, 5), (150, 8)),
    "ce_smoothing_dropped": (_ce_no_smoothing_case, (8, 5), (150, 8)),
    "kl_mean_missing_1_over_n": (_kl_mean_case, (3, 4), (40, 50)),
}


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_vjp_is_caught(ref, gcheck, name, fast):
    build, small, big = CASES[name]
    f, vjp, x = build(ref, big if fast else small, wrong=True)
    res = gcheck.check_vjp(f, vjp, [x], fast_mode=fast)
    assert not res.passed and not res, str(res)
    assert res.fast_mode is fast
    if fast:
        # The random probes themselves saw it; the element-wise rerun then names the elements.
        assert len(res.probes) == gcheck.FAST_PROBES
        assert not all(p.ok for p in res.probes)
    assert res.worst and res.worst_index == res.worst[0].index
    assert res.checked == x.size
    e = res.worst[0]
    assert e.abs_err > e.tol and res.max_abs_err >= e.abs_err


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_right_vjp_passes(ref, gcheck, name, fast):
    build, small, big = CASES[name]
    f, vjp, x = build(ref, big if fast else small, wrong=False)
    res = gcheck.check_vjp(f, vjp, [x], fast_mode=fast)
    assert res.passed and res, str(res)
    if fast:
        assert all(p.ok for p in res.probes) and res.checked == 0 and res.worst_index is None
    else:
        assert res.checked == x.size


@pytest.mark.parametrize("seed", range(5))
def test_fast_mode_catches_small_errors_for_other_seeds(ref, gcheck, seed):
    # 1 % scale error and the dropped smoothing term are the subtle ones for random probes.
    for name in ("log_sigmoid_scale_1pct", "ce_smoothing_dropped"):
        build, _, big = CASES[name]
        f, vjp, x = build(ref, big, wrong=True)
        res = gcheck.check_vjp(f, vjp, [x], fast_mode=True, seed=seed)
        assert not all(p.ok for p in res.probes), f"seed {seed}: {res}"


def test_wrong_class_names_the_guilty_columns(ref, gcheck):
    n, c = 6, 5
    f, vjp, x = _ce_wrong_class_case(ref, (n, c), wrong=True)
    rng = np.random.default_rng(12)  # the builder's draws: x, then t
    rng.standard_normal((n, c))
    t = rng.integers(0, c, n)
    res = gcheck.check_vjp(f, vjp, [x])
    # The -w_t moved to the wrong column dominates (the other columns are only rescaled by
    # the wrong class weight): the worst elements are the true and the wrong target columns.
    for e in res.worst[:2]:
        row, col = e.index
        assert col in (t[row], (t[row] + 1) % c), str(res)


def test_report_is_short_and_names_worst_elements(ref, gcheck):
    f, vjp, x = _softmax_case(ref, (30, 40), wrong=True)
    res = gcheck.check_vjp(f, vjp, [x], fast_mode=True)
    text = str(res)
    lines = text.splitlines()
    assert lines[0].startswith("gradcheck") and "FAILED" in lines[0] and "fast" in lines[0]
    assert len(lines) <= 4 + gcheck.SHOW_WORST and len(text) < 1500  # never a Jacobian dump
    assert str(res.worst_index) in text
    for e in res.worst:
        assert str(e.index) in text
    assert sum(1 for ln in lines if ln.startswith("    (")) == gcheck.SHOW_WORST
    ok = gcheck.check_vjp(*_softmax_case(ref, (4, 7), wrong=False)[:2], [x[:4, :7]])
    assert "PASSED" in str(ok).splitlines()[0]


def test_result_records_settings(ref, gcheck):
    f, vjp, x = _log_sigmoid_case(ref, (3, 4), wrong=False)
    res = gcheck.check_vjp(f, vjp, [x], eps=1e-5, atol=1e-6, rtol=1e-4, seed=7)
    assert (res.eps, res.atol, res.rtol, res.seed, res.fast_mode, res.shape) == (1e-5, 1e-6, 1e-4, 7, False, (3, 4))
    assert res.dtype == "float64" and res.options == {}
    assert isinstance(res, gcheck.GradcheckResult) and res.max_rel_err < 1e-6


def test_fast_mode_is_automatic_for_large_inputs(ref, gcheck):
    big = np.random.default_rng(0).uniform(-3, 3, gcheck.AUTO_FAST_NUMEL + 1)
    small = big[: gcheck.AUTO_FAST_NUMEL]
    vjp = lambda v, x_: ref.log_sigmoid_backward(v, x_)  # noqa: E731
    assert gcheck.check_vjp(ref.log_sigmoid, vjp, [big], fast_mode=None).fast_mode is True
    assert gcheck.check_vjp(ref.log_sigmoid, vjp, [small[:50]], fast_mode=None).fast_mode is False


def test_kinks_fail_and_gradcheck_samples_away_from_them(ref, gcheck):
    # At x = ±λ the central difference sees half a slope (0.5·g) and the backward 0: a real
    # mismatch, which is why gradcheck keeps samples 10·eps away from the kinks.
    x = np.array([0.5, -0.5, 1.0])
    res = gcheck.check_vjp(lambda x_: ref.softshrink(x_, 0.5), lambda v, x_: ref.softshrink_backward(v, x_, 0.5), [x])
    assert not res
    assert {e.index for e in res.worst if e.abs_err > e.tol} == {(0,), (1,)}
    for dt in (np.float64, ml_dtypes.bfloat16):
        for lam in (0.0, 0.5, 300.0):
            pts = gcheck._softshrink_points(np.random.default_rng(1), (2000,), lam, np.dtype(dt), 1e-5)
            assert np.all(np.abs(np.abs(pts) - lam) >= 1e-5)
            assert np.array_equal(pts.astype(dt).astype(np.float64), pts)  # representable in dt
            assert (np.abs(pts) < lam).any() or lam == 0.0  # the zero band is still sampled


def test_bad_analytical_shape_or_nan_fails(ref, gcheck):
    x = np.linspace(-1, 1, 6)
    res = gcheck.check_vjp(ref.log_sigmoid, lambda v, x_: np.zeros(5), [x])
    assert not res and "shape" in res.note
    nan = gcheck.check_vjp(ref.log_sigmoid, lambda v, x_: np.full(6, np.nan), [x])
    assert not nan and math.isnan(nan.max_abs_err)
    assert not gcheck.check_vjp(ref.log_sigmoid, lambda v, x_: np.full(6, np.nan), [x], fast_mode=True)


def test_full_elementwise_rerun_overrules_a_probe(ref, gcheck, monkeypatch):
    # With a zero probe tolerance every probe "fails" on round-off; the complete element-wise
    # rerun has the last word and says the VJP is right.
    monkeypatch.setattr(gcheck, "FAST_TOL_FACTOR", 0.0)
    f, vjp, x = _softmax_case(ref, (5, 6), wrong=False)
    res = gcheck.check_vjp(f, vjp, [x], fast_mode=True)
    assert res.passed and "element-wise check passes" in res.note and res.checked == x.size


def test_partial_rerun_cannot_clear_a_failed_probe(ref, gcheck, monkeypatch):
    monkeypatch.setattr(gcheck, "SLOW_RERUN_MAX", 100)
    f, vjp, x = _softmax_case(ref, (20, 20), wrong=True)
    res = gcheck.check_vjp(f, vjp, [x], fast_mode=True)
    assert not res and res.checked == 100 and "100 of 400" in res.note


def test_grad_output_is_used_and_checked(ref, gcheck):
    x = np.linspace(-2, 2, 5)
    seen = {}

    def vjp(v, x_):
        seen["v"] = v
        return ref.log_sigmoid_backward(v, x_)

    g = np.arange(1.0, 6.0)
    assert gcheck.check_vjp(ref.log_sigmoid, vjp, [x], grad_output=g)
    assert seen["v"] is g
    with pytest.raises(ValueError, match="grad_output"):
        gcheck.check_vjp(ref.log_sigmoid, vjp, [x], grad_output=np.ones(4))


def test_dtype_tolerance_rule(gcheck):
    assert gcheck.dtype_tolerance("float64", 3.0) == (1e-5, 1e-3)
    for name, u in (("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8)):
        atol, rtol = gcheck.dtype_tolerance(name, 2.0)
        assert rtol == 16 * u and atol == pytest.approx(16 * u * 2.0 + 1e-8)
    assert gcheck.dtype_tolerance(ml_dtypes.bfloat16, 1.0) == gcheck.dtype_tolerance("bf16", 1.0)
    with pytest.raises(ValueError):
        gcheck.dtype_tolerance("int32", 1.0)


# --------------------------------------------------------------------------------------------
# gradcheck(op) plumbing, with a stand-in for the compiled module


def _fake_ascendgrad(ref, wrong=None):
    """The NumPy API, computed by the reference and rounded to the dtype the library would
    return; `wrong` plants one bug."""
    m = types.ModuleType("ascendgrad")

    def rnd(a, like):
        return np.asarray(a, dtype=np.float64).astype(like)

    def softmax_backward(g, y, dim=-1, *, out=None):
        r = ref.softmax_backward(g, y, dim)
        return rnd(-r if wrong == "softmax" else r, np.asarray(g).dtype)

    def log_sigmoid_backward(g, x, buffer=None, *, out=None):
        return rnd(ref.log_sigmoid_backward(g, x), np.asarray(x).dtype)

    def softshrink_backward(g, x, lambd=0.5, *, out=None):
        lam = 0.0 if wrong == "softshrink" else lambd  # the zero band forgotten
        return rnd(ref.softshrink_backward(g, x, lam), np.result_type(np.asarray(g), np.asarray(x)))

    def cross_entropy_loss_grad(gl, lp, t, w=None, *, reduction="mean", ignore_index=-100, label_smoothing=0.0,
                                grad_zloss=None, lse_for_zloss=None, lse_square_scale_for_zloss=0.0, out=None):
        if wrong == "ce_zloss":
            grad_zloss = None
        return rnd(ref.cross_entropy_loss_grad(gl, lp, t, w, reduction, ignore_index, label_smoothing, grad_zloss,
                                               lse_for_zloss, lse_square_scale_for_zloss), np.asarray(lp).dtype)

    def kl_div_backward(g, x, t, reduction="mean", log_target=False, *, out=None):
        if wrong == "kl" and reduction in ("mean", 1):
            reduction = "sum"
        return rnd(ref.kl_div_backward(g, x, t, reduction, log_target), np.asarray(x).dtype)

    for fn in (softmax_backward, log_sigmoid_backward, softshrink_backward, cross_entropy_loss_grad,
               kl_div_backward):
        setattr(m, fn.__name__, fn)
    return m


PLUMBING = [
    ("softmax_backward", {}),
    ("softmax_backward", {"dim": 0, "shape": (5, 3, 2)}),
    ("softmax_backward", {"strided": True}),
    ("log_sigmoid_backward", {"buffer": True}),
    ("softshrink_backward", {"lambd": 0.0}),
    ("softshrink_backward", {"lambd": 1.5, "shape": (4, 1), "grad_shape": (1, 6)}),
    ("softshrink_backward", {"shape": (3, 5), "grad_shape": (5,), "strided": True}),
    ("cross_entropy_loss_grad", {}),
    ("cross_entropy_loss_grad", {"weight": True, "ignore_index": 2, "label_smoothing": 0.2}),
    ("cross_entropy_loss_grad", {"reduction": "none", "weight": True, "ignore_index": -1,
                                 "lse_square_scale_for_zloss": 0.3, "grad_zloss": True, "target_dtype": "int32"}),
    ("cross_entropy_loss_grad", {"reduction": "sum", "lse_square_scale_for_zloss": 0.1, "strided": True}),
    ("kl_div_backward", {"reduction": "batchmean", "log_target": True}),
    ("kl_div_backward", {"reduction": 0, "target_shape": (2, 3, 4), "shape": (3, 1), "grad_shape": (3, 4)}),
    ("kl_div_backward", {"reduction": "sum", "strided": True}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,opts", PLUMBING, ids=lambda p: str(p))
def test_gradcheck_plumbing_with_stand_in(ref, gcheck, monkeypatch, op, opts, dtype):
    monkeypatch.setitem(sys.modules, "ascendgrad", _fake_ascendgrad(ref))
    res = gcheck.gradcheck(op, dtype=dtype, **opts)
    assert res, str(res)
    assert res.op == op and res.dtype == dtype and "shape" not in res.options
    if dtype != "float64":
        assert res.rtol == gcheck.dtype_tolerance(dtype, 1.0)[1]


@pytest.mark.parametrize("wrong,op,opts", [
    ("softmax", "softmax_backward", {}),
    ("softshrink", "softshrink_backward", {"lambd": 1.0}),
    ("ce_zloss", "cross_entropy_loss_grad", {"lse_square_scale_for_zloss": 1.0, "grad_zloss": True}),
    ("kl", "kl_div_backward", {"reduction": "mean"}),
    ("kl", "kl_div_backward", {"reduction": 1}),
])
@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("fast", [False, True])
def test_gradcheck_catches_a_wrong_stand_in(ref, gcheck, monkeypatch, wrong, op, opts, dtype, fast):
    monkeypatch.setitem(sys.modules, "ascendgrad", _fake_ascendgrad(ref, wrong))
    res = gcheck.gradcheck(op, dtype=dtype, fast_mode=fast, **opts)
    assert not res, str(res)


def test_gradcheck_argument_errors(ref, gcheck, monkeypatch):
    monkeypatch.setitem(sys.modules, "ascendgrad", _fake_ascendgrad(ref))
    with pytest.raises(ValueError, match="unknown operator"):
        gcheck.gradcheck("softmax")
    with pytest.raises(TypeError, match="unknown option"):
        gcheck.gradcheck("softmax_backward", lambd=0.5)
    with pytest.raises(ValueError, match="dtype"):
        gcheck.gradcheck("softmax_backward", dtype="int8")
    with pytest.raises(ValueError, match="lambd"):
        gcheck.gradcheck("softshrink_backward", lambd=-1.0)
    monkeypatch.setitem(sys.modules, "ascendgrad", None)  # what a missing compiled package looks like
    with pytest.raises(ImportError, match="compiled ascendgrad"):
        gcheck.gradcheck("softmax_backward")


# --------------------------------------------------------------------------------------------
# the library kernels (need the compiled module: pip install .)

KERNELS = [
    ("softmax_backward", {}),
    ("softmax_backward", {"shape": (3, 5, 4), "dim": 1}),
    ("softmax_backward", {"shape": (6, 3, 2), "dim": 0}),
    ("softmax_backward", {"strided": True}),
    ("softmax_backward", {"shape": ()}),
    ("softmax_backward", {"shape": (16, 300), "fast_mode": True}),
    ("log_sigmoid_backward", {}),
    ("log_sigmoid_backward", {"buffer": True, "strided": True}),
    ("log_sigmoid_backward", {"shape": ()}),
    ("softshrink_backward", {}),
    ("softshrink_backward", {"lambd": 0.0}),
    ("softshrink_backward", {"lambd": 1.5, "strided": True}),
    ("softshrink_backward", {"shape": (4, 1), "grad_shape": (1, 6)}),
    ("softshrink_backward", {"shape": (3, 5), "grad_shape": (5,)}),
    ("cross_entropy_loss_grad", {}),
    ("cross_entropy_loss_grad", {"reduction": "sum", "weight": True}),
    ("cross_entropy_loss_grad", {"weight": True, "ignore_index": 2, "label_smoothing": 0.2}),
    ("cross_entropy_loss_grad", {"reduction": "none", "ignore_index": -100, "label_smoothing": 0.1,
                                 "weight": True, "strided": True}),
    ("cross_entropy_loss_grad", {"lse_square_scale_for_zloss": 0.2, "ignore_index": -1}),
    ("cross_entropy_loss_grad", {"reduction": "none", "weight": True, "lse_square_scale_for_zloss": 0.3,
                                 "grad_zloss": True, "target_dtype": "int32"}),
    ("cross_entropy_loss_grad", {"reduction": "sum", "lse_square_scale_for_zloss": 0.1, "grad_zloss": True,
                                 "label_smoothing": 1.0}),
    ("kl_div_backward", {}),
    ("kl_div_backward", {"reduction": "sum", "log_target": True}),
    ("kl_div_backward", {"reduction": "batchmean", "strided": True}),
    ("kl_div_backward", {"reduction": "none", "log_target": True}),
    ("kl_div_backward", {"reduction": 0, "shape": (3, 1), "target_shape": (2, 3, 4), "grad_shape": (3, 4)}),
    ("kl_div_backward", {"reduction": 3, "shape": (2, 3, 4), "target_shape": (4,)}),
    ("kl_div_backward", {"reduction": "mean", "shape": ()}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,opts", KERNELS, ids=lambda p: str(p))
def test_kernel_gradcheck(gcheck, op, opts, dtype):
    res = gcheck.gradcheck(op, dtype=dtype, **opts)
    assert res, str(res)
