"""ascendgrad.reference: the float64 golden model.

Checked three ways: documented values (CANN's example, SPEC §2's special values), PyTorch
autograd in float64 (where torch is installed), and finite differences of the reference forward
through check_vjp. No compiled module needed.
"""

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

RNG = np.random.default_rng(1234)


def _torch():
    return pytest.importorskip("torch")


def _vjp_torch(torch, f, x, v):
    """(f(x), vᵀ∂f/∂x) by torch autograd in float64."""
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = f(xt)
    (g,) = torch.autograd.grad(y, xt, torch.tensor(v, dtype=torch.float64))
    return y.detach().numpy(), g.numpy()


def close(a, b, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


# --------------------------------------------------------------------------------------------
# documented values and special cases (no torch)


def test_cross_entropy_cann_documented_example(ref):
    # CANN's aclnnCrossEntropyLossGrad example (SPEC §2.4), p = exp(-0.2) used as given.
    out = ref.cross_entropy_loss_grad(
        np.float32(0.1), np.full((2, 3), -0.2, np.float32), np.array([0, 0]), np.ones(3, np.float32),
        reduction="mean", ignore_index=-100)
    expect = np.array([[-0.0091, 0.0409, 0.0409], [-0.0091, 0.0409, 0.0409]])
    np.testing.assert_allclose(out, expect, atol=5e-5)
    assert out.dtype == np.float64


def test_results_are_float64_for_every_input_dtype(ref):
    for dt in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64):
        g = np.array([0.5, -1.0, 2.0], dt)
        x = np.array([-1.0, 0.25, 3.0], dt)
        for out in (ref.softmax_backward(g, x), ref.log_sigmoid_backward(g, x),
                    ref.softshrink_backward(g, x), ref.kl_div_backward(np.array(1.0, dt), x, x)):
            assert out.dtype == np.float64
    # The bfloat16 values are read exactly, not via a lossy path.
    np.testing.assert_array_equal(ref.log_sigmoid_backward(np.ones(1, ml_dtypes.bfloat16),
                                                           np.array([0.0], ml_dtypes.bfloat16)), [0.5])


def test_softmax_forward_and_rank0(ref):
    x = RNG.standard_normal((3, 4, 5)) * 10
    for d in range(-3, 3):
        y = ref.softmax(x, d)
        close(y.sum(axis=d), 1.0)
        close(np.exp(ref.log_softmax(x, d)), y)
        close(ref.logsumexp(x, d), np.log(np.exp(x).sum(axis=d)))
    # Softmax of huge logits stays finite (max subtracted).
    assert np.isfinite(ref.softmax(np.array([1000.0, 1001.0]))).all()
    # A 0-D tensor counts as rank 1: dim in {-1, 0}; softmax of one element is 1.
    assert ref.softmax(np.float64(3.0)) == 1.0
    assert ref.softmax_backward(np.float64(2.0), np.float64(1.0), 0).shape == ()
    assert ref.softmax_backward(np.float64(2.0), np.float64(1.0), 0) == 0.0


def test_softmax_backward_validation(ref):
    g = np.ones((2, 3))
    with pytest.raises(ValueError, match="provided dim 2 not in the range of input size 2"):
        ref.softmax_backward(g, g, 2)
    with pytest.raises(ValueError, match=r"provided dim -3"):
        ref.softmax_backward(g, g, -3)
    with pytest.raises(ValueError, match="provided dim 1 not in the range of input size 1"):
        ref.softmax_backward(np.float64(1), np.float64(1), 1)
    with pytest.raises(ValueError, match=r"\[2, 3\].*\[3, 2\]"):
        ref.softmax_backward(g, g.T, 0)
    with pytest.raises(TypeError):
        ref.softmax_backward("abc", g)


def test_softmax_backward_formula(ref):
    g, y = RNG.standard_normal((4, 6)), ref.softmax(RNG.standard_normal((4, 6)), 0)
    close(ref.softmax_backward(g, y, 0), y * (g - (g * y).sum(axis=0, keepdims=True)))
    # The output of a softmax backward sums to 0 along dim when y sums to 1.
    close(ref.softmax_backward(g, y, 0).sum(axis=0), 0.0, atol=1e-15)


def test_log_sigmoid_special_values(ref):
    x = np.array([-np.inf, -1e4, -800.0, 0.0, 800.0, 1e4, np.inf, np.nan])
    g = np.full(x.shape, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow anywhere: the stable forms never exp(+big)
        y = ref.log_sigmoid(x)
        gi = ref.log_sigmoid_backward(g, x)
    np.testing.assert_array_equal(y[:3], [-np.inf, -1e4, -800.0])
    assert y[3] == pytest.approx(-np.log(2.0))
    np.testing.assert_array_equal(y[4:7], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gi[:3], [2.0, 2.0, 2.0])  # x = -inf → g
    assert gi[3] == 1.0
    np.testing.assert_array_equal(gi[4:7], [0.0, 0.0, 0.0])  # x = +inf → 0
    assert np.isnan(y[7]) and np.isnan(gi[7])
    # log1p keeps precision where log(1 + z) would round to 0.
    assert ref.log_sigmoid(np.array(40.0)) == pytest.approx(-np.exp(-40.0), rel=1e-12)
    with pytest.raises(ValueError, match="shape"):
        ref.log_sigmoid_backward(np.ones(3), np.ones(4))


def test_softshrink_closed_band_nan_and_broadcast(ref):
    lam = 0.5
    x = np.array([-1.0, -0.5, -0.25, 0.0, 0.5, 0.75, np.nan])
    g = np.arange(1.0, 8.0)
    np.testing.assert_array_equal(ref.softshrink(x, lam)[:6], [-0.5, 0, 0, 0, 0, 0.25])
    assert np.isnan(ref.softshrink(x, lam)[6])
    out = ref.softshrink_backward(g, x, lam)
    np.testing.assert_array_equal(out[:6], [1, 0, 0, 0, 0, 6])  # zero at exactly ±λ
    assert np.isnan(out[6])
    # A NaN g inside the band is a select, not a product: 0.
    assert ref.softshrink_backward(np.nan, 0.1, lam) == 0.0
    # Broadcast (3,1) × (1,4) → (3,4).
    gb, xb = RNG.standard_normal((3, 1)), RNG.standard_normal((1, 4))
    ob = ref.softshrink_backward(gb, xb, lam)
    assert ob.shape == (3, 4)
    close(ob, np.where(np.abs(xb) > lam, gb, 0.0))
    # λ = 0: only x = 0 is in the band.
    np.testing.assert_array_equal(ref.softshrink_backward(1.0, np.array([-1e-300, 0.0, 1e-300]), 0.0), [1, 0, 1])


@pytest.mark.parametrize("lam", [-0.1, float("nan")])
def test_softshrink_rejects_bad_lambda(ref, lam):
    with pytest.raises(ValueError, match="lambd should be greater or equal to 0"):
        ref.softshrink_backward(np.ones(2), np.ones(2), lam)
    with pytest.raises(ValueError):
        ref.softshrink(np.ones(2), lam)


def test_softshrink_rejects_non_broadcastable(ref):
    with pytest.raises(ValueError, match="broadcast"):
        ref.softshrink_backward(np.ones((2, 3)), np.ones((4,)), 0.5)


def test_cross_entropy_validation(ref):
    lp = np.log(np.full((3, 4), 0.25))
    t = np.array([0, 1, 3])
    g = np.float64(1.0)
    with pytest.raises(ValueError, match="reduction"):
        ref.cross_entropy_loss_grad(g, lp, t, reduction="avg")
    with pytest.raises(ValueError, match="labelSmoothing"):
        ref.cross_entropy_loss_grad(g, lp, t, label_smoothing=1.5)
    with pytest.raises(ValueError, match="labelSmoothing"):
        ref.cross_entropy(lp, t, label_smoothing=-0.1)
    with pytest.raises(ValueError, match="out of bounds"):
        ref.cross_entropy_loss_grad(g, lp, np.array([0, 4, 1]))
    with pytest.raises(ValueError, match="out of bounds"):
        ref.cross_entropy(lp, np.array([0, -1, 1]))  # -1 is not the ignore index (-100)
    with pytest.raises(ValueError, match="integer"):
        ref.cross_entropy_loss_grad(g, lp, t.astype(np.float32))
    with pytest.raises(ValueError, match="gradLoss"):
        ref.cross_entropy_loss_grad(np.ones(3), lp, t, reduction="mean")
    with pytest.raises(ValueError, match="gradLoss"):
        ref.cross_entropy_loss_grad(g, lp, t, reduction="none")
    with pytest.raises(ValueError, match="lseForZloss"):
        ref.cross_entropy_loss_grad(g, lp, t, lse_square_scale_for_zloss=0.1)
    with pytest.raises(ValueError, match="weight"):
        ref.cross_entropy_loss_grad(g, lp, t, np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        ref.cross_entropy_loss_grad(g, lp[0], t)
    # reduction None means "mean"; gradLoss of shape (1,) is accepted for mean/sum.
    close(ref.cross_entropy_loss_grad(g, lp, t, reduction=None), ref.cross_entropy_loss_grad(np.ones(1), lp, t))


def test_cross_entropy_ignore_index_rules(ref):
    lp = ref.log_softmax(RNG.standard_normal((4, 3)), 1)
    t = np.array([2, -7, 1, -7])
    full = ref.cross_entropy_loss_grad(np.float64(1.0), lp, t, ignore_index=-7)
    np.testing.assert_array_equal(full[[1, 3]], 0.0)  # ignored rows are exactly zero
    # The mean divides by the kept rows only: same rows as a 2-row problem.
    close(full[[0, 2]], ref.cross_entropy_loss_grad(np.float64(1.0), lp[[0, 2]], t[[0, 2]]))
    # A negative ignore_index that no target equals ignores nothing.
    t2 = np.array([2, 0, 1, 0])
    close(ref.cross_entropy_loss_grad(np.float64(1.0), lp, t2, ignore_index=-7),
          ref.cross_entropy_loss_grad(np.float64(1.0), lp, t2))
    # An in-range ignore_index ignores that class's rows.
    g1 = ref.cross_entropy_loss_grad(np.float64(1.0), lp, t2, ignore_index=0)
    np.testing.assert_array_equal(g1[[1, 3]], 0.0)
    assert np.abs(g1[[0, 2]]).min() > 0


def test_cross_entropy_mean_all_ignored_is_zero_gradient_nan_loss(ref):
    x = RNG.standard_normal((3, 4))
    t = np.full(3, -100)
    lp = ref.log_softmax(x, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for ls, zeta in ((0.0, 0.0), (0.3, 0.0), (0.3, 0.5)):
            gi = ref.cross_entropy_loss_grad(np.float64(1.0), lp, t, np.ones(4), label_smoothing=ls,
                                             lse_for_zloss=ref.logsumexp(x, 1), lse_square_scale_for_zloss=zeta)
            np.testing.assert_array_equal(gi, 0.0)
        # As PyTorch: the forward 'mean' over zero weight is NaN.
        assert np.isnan(ref.cross_entropy(x, t))
        assert ref.cross_entropy(x, t, reduction="sum") == 0.0


def test_cross_entropy_forward_zloss_parts(ref):
    x = RNG.standard_normal((5, 3))
    t = np.array([0, 2, -100, 1, 1])
    m = t != -100
    lse = ref.logsumexp(x, 1)
    base = ref.cross_entropy(x, t, reduction="none")
    loss, z = ref.cross_entropy(x, t, reduction="none", lse_square_scale_for_zloss=0.25, return_zloss=True)
    close(z, np.where(m, 0.25 * lse**2, 0.0))
    close(loss, base + z)
    loss_m, z_m = ref.cross_entropy(x, t, lse_square_scale_for_zloss=0.25, return_zloss=True)
    close(z_m, z.sum() / m.sum())  # z-loss 'mean' divides by the kept rows, not by W
    close(loss_m, ref.cross_entropy(x, t) + z_m)
    assert ref.cross_entropy(x, t, return_zloss=True)[1] == 0.0


def test_cross_entropy_grad_zloss_formula(ref):
    x = RNG.standard_normal((4, 5))
    t = np.array([0, 4, 2, 2])
    lp, lse = ref.log_softmax(x, 1), ref.logsumexp(x, 1)
    gl, gz = np.float64(0.7), np.float64(-1.3)
    base = ref.cross_entropy_loss_grad(gl, lp, t, reduction="sum")
    full = ref.cross_entropy_loss_grad(gl, lp, t, reduction="sum", grad_zloss=gz, lse_for_zloss=lse,
                                       lse_square_scale_for_zloss=0.1)
    close(full - base, 2 * 0.1 * lse[:, None] * (gl + gz) * np.exp(lp))
    # ζ = 0 switches the branch off: gradZloss and lse are ignored.
    close(ref.cross_entropy_loss_grad(gl, lp, t, reduction="sum", grad_zloss=gz, lse_for_zloss=lse), base)


def test_kl_div_reductions_and_validation(ref):
    x, t = RNG.standard_normal((4, 5)), RNG.uniform(0.1, 1.0, (4, 5))
    pw = t * (np.log(t) - x)
    close(ref.kl_div(x, t, "none"), pw)
    close(ref.kl_div(x, t, "sum"), pw.sum())
    close(ref.kl_div(x, t, "mean"), pw.mean())
    close(ref.kl_div(x, t, "batchmean"), pw.sum() / 4)
    close(ref.kl_div(x, t, "none", log_target=True), np.exp(t) * (t - x))
    for name, code in ref.KL_REDUCTIONS.items():
        close(ref.kl_div(x, t, code), ref.kl_div(x, t, name))
        close(ref.kl_div_backward(np.float64(1.5), x, t, code), ref.kl_div_backward(np.float64(1.5), x, t, name))
    # target 0 contributes 0 (xlogy), not NaN; its gradient is (-)0.
    assert ref.kl_div(np.array([3.0]), np.array([0.0]), "sum") == 0.0
    assert ref.kl_div_backward(np.float64(1), np.array([3.0]), np.array([0.0]), "sum") == 0.0
    # batchmean of a 0-D problem divides by 1.
    assert ref.kl_div(np.float64(0.5), np.float64(0.25), "batchmean") == pytest.approx(0.25 * (np.log(0.25) - 0.5))
    close(ref.kl_div_backward(np.float64(2.0), x, t, "batchmean"), -t * 2.0 / 4)
    close(ref.kl_div_backward(np.float64(2.0), x, t, "mean"), -t * 2.0 / 20)
    for bad in ("avg", 4, -1, True, None, 1.0):
        with pytest.raises(ValueError, match="reduction"):
            ref.kl_div_backward(np.float64(1), x, t, bad)
        with pytest.raises(ValueError, match="reduction"):
            ref.kl_div(x, t, bad)
    with pytest.raises(ValueError, match=r"shape of gradOutput must broadcast to \[4, 5\], but current is \[3\]"):
        ref.kl_div_backward(np.ones(3), x, t, "none")
    with pytest.raises(ValueError, match=r"broadcast"):
        ref.kl_div_backward(np.float64(1), x, np.ones(3), "sum")


def test_kl_div_backward_sums_broadcast_dims(ref):
    x = RNG.standard_normal((3, 1))
    t = RNG.uniform(0.1, 1.0, (2, 3, 4))
    g = RNG.standard_normal((3, 4))  # broadcast to B = (2, 3, 4) as well
    out = ref.kl_div_backward(g, x, t, "batchmean")
    assert out.shape == (3, 1)
    close(out, (-t * g / 2).sum(axis=(0, 2)).reshape(3, 1))  # batchmean: B[0] = 2, not x's 3


# --------------------------------------------------------------------------------------------
# backward = exact VJP of forward (finite differences, no torch)

FD_CASES = {
    "softmax_last": lambda r: (lambda x: r.softmax(x, -1),
                               lambda v, x: r.softmax_backward(v, r.softmax(x, -1), -1), RNG.standard_normal((3, 5))),
    "softmax_mid": lambda r: (lambda x: r.softmax(x, 1),
                              lambda v, x: r.softmax_backward(v, r.softmax(x, 1), 1), RNG.standard_normal((2, 4, 3))),
    "log_sigmoid": lambda r: (r.log_sigmoid, lambda v, x: r.log_sigmoid_backward(v, x),
                              RNG.uniform(-8, 8, (4, 5))),
    "softshrink": lambda r: (lambda x: r.softshrink(x, 0.5), lambda v, x: r.softshrink_backward(v, x, 0.5),
                             np.array([-2.0, -0.7, -0.4, 0.0, 0.3, 0.6, 1.5])),
    "kl_none_log_target": lambda r: (
        lambda x: r.kl_div(x, T_KL, "none", True), lambda v, x: r.kl_div_backward(v, x, T_KL, "none", True),
        RNG.standard_normal((3, 4))),
    "kl_batchmean_broadcast": lambda r: (
        lambda x: r.kl_div(x, T_KL, "batchmean"), lambda v, x: r.kl_div_backward(v, x, T_KL, "batchmean"),
        RNG.standard_normal((1, 4))),
}
T_KL = RNG.uniform(0.0, 1.0, (3, 4))


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_backward_matches_finite_differences(ref, gcheck, name, fast):
    f, vjp, x = FD_CASES[name](ref)
    res = gcheck.check_vjp(f, vjp, [x], fast_mode=fast, seed=3)
    assert res.passed, str(res)
    assert res.max_abs_err < 1e-7


CE_CONFIGS = [
    dict(reduction=r, weight=w, ignore_index=ii, label_smoothing=ls, lse_square_scale_for_zloss=z)
    for r, w, ii, ls, z in [
        ("mean", False, -100, 0.0, 0.0), ("mean", True, 2, 0.2, 0.0), ("sum", True, -100, 0.1, 0.3),
        ("none", False, 1, 0.0, 0.2), ("none", True, -100, 1.0, 0.0), ("mean", True, 0, 0.3, 0.5),
    ]
]


@pytest.mark.parametrize("cfg", CE_CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_cross_entropy_grad_matches_finite_differences(ref, gcheck, cfg):
    n, c = 6, 4
    x = RNG.standard_normal((n, c))
    t = np.array([0, 1, 2, 3, 1, 2])
    w = RNG.uniform(0.5, 1.5, c) if cfg["weight"] else None
    kw = dict(reduction=cfg["reduction"], ignore_index=cfg["ignore_index"], label_smoothing=cfg["label_smoothing"])
    zeta = cfg["lse_square_scale_for_zloss"]

    def fwd(x_):
        return ref.cross_entropy(x_, t, w, lse_square_scale_for_zloss=zeta, **kw)

    def vjp(v, x_):
        return ref.cross_entropy_loss_grad(v, ref.log_softmax(x_, 1), t, w, lse_for_zloss=ref.logsumexp(x_, 1),
                                           lse_square_scale_for_zloss=zeta, **kw)

    for fast in (False, True):
        res = gcheck.check_vjp(fwd, vjp, [x], fast_mode=fast)
        assert res.passed, str(res)


# --------------------------------------------------------------------------------------------
# against PyTorch autograd (float64)


@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 7), -1), ((3, 7), 0), ((2, 5, 4), 1)])
def test_softmax_vs_torch(ref, shape, dim):
    torch = _torch()
    x, v = RNG.standard_normal(shape), RNG.standard_normal(shape)
    y, gx = _vjp_torch(torch, lambda t: torch.softmax(t, dim), x, v)
    close(ref.softmax(x, dim), y)
    close(ref.softmax_backward(v, ref.softmax(x, dim), dim), gx)
    close(ref.log_softmax(x, dim), torch.log_softmax(torch.tensor(x), dim).numpy())


def test_log_sigmoid_vs_torch(ref):
    torch = _torch()
    x = np.concatenate([RNG.uniform(-30, 30, 50), [-np.inf, -1e4, -40, 0.0, 40, 1e4, np.inf]])
    v = RNG.standard_normal(x.shape)
    y, gx = _vjp_torch(torch, torch.nn.functional.logsigmoid, x, v)
    close(ref.log_sigmoid(x), y)
    close(ref.log_sigmoid_backward(v, x), gx)


@pytest.mark.parametrize("lam", [0.0, 0.5, 2.0])
def test_softshrink_vs_torch(ref, lam):
    torch = _torch()
    x = np.concatenate([RNG.uniform(-3, 3, 40), [lam, -lam, 0.0]])
    v = RNG.standard_normal(x.shape)
    y, gx = _vjp_torch(torch, lambda t: torch.nn.functional.softshrink(t, lam), x, v)
    close(ref.softshrink(x, lam), y)
    close(ref.softshrink_backward(v, x, lam), gx)  # includes the closed band at ±λ
    gb, xb = RNG.standard_normal((3, 1)), RNG.uniform(-3, 3, (1, 4))
    tb = torch.ops.aten.softshrink_backward(torch.tensor(gb), torch.tensor(xb), lam).numpy()
    close(ref.softshrink_backward(gb, xb, lam), tb)


CE_TORCH = list(itertools.product(["none", "mean", "sum"], [False, True], [-100, 1], [0.0, 0.25]))


@pytest.mark.parametrize("red,weighted,ii,ls", CE_TORCH)
def test_cross_entropy_vs_torch(ref, red, weighted, ii, ls):
    torch = _torch()
    F = torch.nn.functional
    n, c = 7, 4
    x = RNG.standard_normal((n, c)) * 2
    t = np.array([0, 1, 2, 3, 1, 3, 2])
    w = RNG.uniform(0.3, 2.0, c) if weighted else None
    v = RNG.standard_normal(n if red == "none" else ())
    kw = dict(reduction=red, ignore_index=ii, label_smoothing=ls)
    wt = None if w is None else torch.tensor(w)
    y, gx = _vjp_torch(torch, lambda z: F.cross_entropy(z, torch.tensor(t), weight=wt, **kw), x, v)
    close(ref.cross_entropy(x, t, w, **kw), y)
    close(ref.cross_entropy_loss_grad(v, ref.log_softmax(x, 1), t, w, **kw), gx)


@pytest.mark.parametrize("red", ["none", "mean", "sum"])
@pytest.mark.parametrize("with_gz", [False, True])
def test_cross_entropy_zloss_vs_torch(ref, red, with_gz):
    torch = _torch()
    F = torch.nn.functional
    n, c, zeta, ii, ls = 6, 5, 0.3, -100, 0.1
    x = RNG.standard_normal((n, c)) * 2
    t = np.array([0, ii, 2, 4, 1, ii])
    w = RNG.uniform(0.5, 1.5, c)
    shape = (n,) if red == "none" else ()
    gl, gz = RNG.standard_normal(shape), RNG.standard_normal(shape)
    xt = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(t)
    ce = F.cross_entropy(xt, tt, weight=torch.tensor(w), reduction=red, ignore_index=ii, label_smoothing=ls)
    keep = tt != ii
    lse = torch.logsumexp(xt, 1)
    zi = torch.where(keep, zeta * lse**2, torch.zeros_like(lse))
    z = {"none": zi, "sum": zi.sum(), "mean": zi.sum() / keep.sum()}[red]
    total = ce + z
    obj = (torch.tensor(gl) * total).sum() + ((torch.tensor(gz) * z).sum() if with_gz else 0)
    (gx,) = torch.autograd.grad(obj, xt)
    loss, zref = ref.cross_entropy(x, t, w, red, ii, ls, zeta, return_zloss=True)
    close(loss, total.detach().numpy())
    close(zref, z.detach().numpy())
    out = ref.cross_entropy_loss_grad(gl, ref.log_softmax(x, 1), t, w, red, ii, ls,
                                      grad_zloss=gz if with_gz else None, lse_for_zloss=ref.logsumexp(x, 1),
                                      lse_square_scale_for_zloss=zeta)
    close(out, gx.numpy())


@pytest.mark.parametrize("red", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_vs_torch(ref, red, log_target):
    torch = _torch()
    F = torch.nn.functional
    x = RNG.standard_normal((3, 4))
    t = RNG.uniform(-2, 0.5, (3, 4)) if log_target else RNG.uniform(0, 1, (3, 4))
    if not log_target:
        t[0, 0] = 0.0  # xlogy(0, 0) = 0
    v = RNG.standard_normal((3, 4) if red == "none" else ())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about 'mean'
        y, gx = _vjp_torch(torch, lambda z: F.kl_div(z, torch.tensor(t), reduction=red, log_target=log_target), x, v)
    close(ref.kl_div(x, t, red, log_target), y)
    close(ref.kl_div_backward(v, x, t, red, log_target), gx)


@pytest.mark.parametrize("red", ["none", "mean", "sum"])
def test_kl_div_broadcast_vs_torch(ref, red):
    torch = _torch()
    x = RNG.standard_normal((3, 1))
    t = RNG.uniform(0, 1, (2, 3, 4))
    v = RNG.standard_normal((2, 3, 4) if red == "none" else ())
    code = {"none": 0, "mean": 1, "sum": 2}[red]
    y, gx = _vjp_torch(torch, lambda z: torch.kl_div(z, torch.tensor(t), code), x, v)
    close(ref.kl_div(x, t, red), y)
    close(ref.kl_div_backward(v, x, t, red), gx)
