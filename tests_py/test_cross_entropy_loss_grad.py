"""ascendgrad.cross_entropy_loss_grad against the float64 reference, PyTorch autograd of
F.cross_entropy and finite differences of the reference forward (z-loss): every dtype, reduction
and option, strided views, errors with status and message (out untouched on a bad target), the
raw two-phase API (also on a stream), determinism."""

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn
from ascendgrad import reference as ref

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
# relative to the largest |gradient| of the problem: a few units of storage/compute roundoff
TOL = {np.float16: 2e-3, BF16: 1.6e-2, np.float32: 2e-6, np.float64: 1e-13}
S = aclnn.Status
OP = "aclnnCrossEntropyLossGrad"


def problem(n=9, c=5, dtype=np.float64, reduction="mean", weight=False, ignore=False, zloss=0,
            tdtype=np.int64, ignore_index=-100, seed=0):
    """kwargs for cross_entropy_loss_grad; zloss: 0 off, 1 on without grad_zloss, 2 with it."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, c)) * 2
    t = rng.integers(0, c, n)
    if ignore:
        t[1::3] = ignore_index
    grad_shape = (n,) if reduction == "none" else ()
    kw = dict(
        grad_loss=rng.uniform(0.5, 2, grad_shape).astype(dtype),
        log_prob=ref.log_softmax(logits, 1).astype(dtype),
        target=t.astype(tdtype),
        weight=rng.uniform(0.2, 2, c).astype(np.float32) if weight else None,
        reduction=reduction,
        ignore_index=ignore_index,
    )
    if zloss:
        kw["lse_square_scale_for_zloss"] = 0.3
        kw["lse_for_zloss"] = ref.logsumexp(logits, 1).astype(dtype)
        if zloss == 2:
            kw["grad_zloss"] = rng.uniform(-1, 1, grad_shape).astype(dtype)
    return kw


def expected(kw):
    k = dict(kw)
    k.pop("out", None)
    args = [k.pop("grad_loss"), k.pop("log_prob"), k.pop("target")]
    return ref.cross_entropy_loss_grad(*args, **k)


def check(result, kw, dtype):
    expect = expected(kw)
    scale = np.abs(expect).max(initial=0) + 1e-30
    np.testing.assert_allclose(result.astype(np.float64), expect, rtol=0, atol=TOL[dtype] * scale)


def call(kw, **extra):
    k = dict(kw, **extra)
    return ascendgrad.cross_entropy_loss_grad(k.pop("grad_loss"), k.pop("log_prob"), k.pop("target"), **k)


# ----------------------------------------------------------------------------------------------
# values


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none", None])
@pytest.mark.parametrize("weight,ignore", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["plain", "weight", "ignore", "weight+ignore"])
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("zloss", [0, 1, 2], ids=["no-zloss", "zloss", "zloss+grad_zloss"])
def test_matches_reference(dtype, reduction, weight, ignore, eps, zloss):
    for tdtype in (np.int64, np.int32):
        kw = problem(dtype=dtype, reduction=reduction, weight=weight, ignore=ignore, zloss=zloss, tdtype=tdtype)
        kw["label_smoothing"] = eps
        r = call(kw)
        assert r.dtype == np.dtype(dtype) and r.shape == kw["log_prob"].shape
        check(r, kw, dtype)


@pytest.mark.parametrize("wdtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_weight_of_any_float_dtype(wdtype):
    kw = problem(dtype=np.float32, weight=True, ignore=True)
    kw["weight"] = kw["weight"].astype(wdtype)
    kw["label_smoothing"] = 0.2
    check(call(kw), kw, np.float32)


@pytest.mark.parametrize("ignore_index", [0, 3, -1, -100, -(2**63), 2**63 - 1])
def test_any_ignore_index(ignore_index):
    kw = problem(n=12, reduction="mean", weight=True, ignore=True, ignore_index=ignore_index, zloss=2)
    kw["label_smoothing"] = 0.1
    r = call(kw)
    check(r, kw, np.float64)
    rows = kw["target"] == ignore_index
    assert rows.any() and np.all(r[rows] == 0)


def test_mean_with_every_row_ignored_is_zero_not_nan():
    for eps in (0.0, 0.3):
        kw = problem(weight=True, zloss=2)
        kw["target"][:] = -100
        kw["label_smoothing"] = eps
        r = call(kw)
        assert np.all(r == 0) and not np.any(np.signbit(r))


def test_probabilities_used_as_given():
    r = ascendgrad.cross_entropy_loss_grad(1.0, np.log([[0.5, 0.25]]), [0])
    np.testing.assert_allclose(r, [[-0.5, 0.25]], atol=1e-15)


def test_python_float_grad_loss_takes_log_prob_dtype():
    for dtype in FLOATS:
        lp = np.full((2, 3), -0.2, dtype)
        r = ascendgrad.cross_entropy_loss_grad(0.1, lp, np.array([0, 0]), np.ones(3, np.float32))
        assert r.dtype == np.dtype(dtype)
        want = 0.05 * np.exp(np.float64(np.asarray(-0.2, dtype))) - np.array([[0.05, 0, 0]] * 2)
        np.testing.assert_allclose(r.astype(np.float64), want, atol=TOL[dtype] * 0.05 * 4)
    # a list for 'none', and gradients given as Python floats for the z-loss
    lp = ref.log_softmax(np.arange(6.0).reshape(2, 3), 1).astype(np.float32)
    r = ascendgrad.cross_entropy_loss_grad([1.0, 2.0], lp, [2, 1], reduction="none", grad_zloss=[0.5, 0.5],
                                           lse_for_zloss=[1.0, 2.0], lse_square_scale_for_zloss=0.1)
    assert r.dtype == np.float32
    e = ref.cross_entropy_loss_grad([1.0, 2.0], lp, [2, 1], reduction="none", grad_zloss=[0.5, 0.5],
                                    lse_for_zloss=np.float32([1.0, 2.0]), lse_square_scale_for_zloss=0.1)
    np.testing.assert_allclose(r, e, atol=1e-6)


def test_cann_documented_example():
    r = ascendgrad.cross_entropy_loss_grad(
        np.float32(0.1).reshape(()), np.full((2, 3), -0.2, np.float32), np.array([0, 0], np.int64),
        np.ones(3, np.float32), reduction="mean", ignore_index=-100)
    assert [f"{v:.4f}" for v in r.ravel()] == ["-0.0091", "0.0409", "0.0409", "-0.0091", "0.0409", "0.0409"]


@pytest.mark.parametrize(
    "view",
    [lambda a: a[:16][::-1], lambda a: a[::2], lambda a: np.asfortranarray(a[:16])[:, ::-1],
     lambda a: a[:16].T.copy().T, lambda a: a[::-2, ::-1]],
    ids=["reversed-rows", "step2", "fortran-reversed-cols", "column-major", "negative-both"],
)
def test_strided_inputs_read_in_place(view):
    kw = problem(n=16, c=7, reduction="none", weight=True, ignore=True, zloss=2)
    kw["label_smoothing"] = 0.1
    for key in ("grad_loss", "target", "lse_for_zloss", "grad_zloss", "weight"):
        kw[key] = kw[key][::-1]  # 1-d negative strides
    big = ref.log_softmax(np.random.default_rng(1).standard_normal((32, 7)), 1)
    kw["log_prob"] = view(big)
    assert kw["log_prob"].shape == (16, 7)
    check(call(kw), kw, np.float64)


def test_strided_out():
    kw = problem(n=8, c=6, weight=True, ignore=True)
    buf = np.full((6, 16), 7.0)
    out = buf[::-1, ::2][:, :8].T[:, :6]  # (8, 6) view with odd strides
    assert out.shape == (8, 6) and not out.flags.c_contiguous
    before = buf.copy()
    r = call(kw, out=out)
    assert r is out
    check(out, kw, np.float64)
    mask = np.ones(buf.shape, bool)
    mask[::-1, ::2][:, :8].T[:, :6] = False
    np.testing.assert_array_equal(buf[mask], before[mask])  # nothing outside the view written


def test_in_place_into_log_prob():
    kw = problem(dtype=np.float32, weight=True, ignore=True, zloss=1)
    expect = call(kw)
    lp = kw["log_prob"]
    r = call(kw, out=lp)
    assert r is lp
    np.testing.assert_array_equal(lp, expect)


def test_empty_batch():
    for reduction in ("mean", "sum", "none"):
        kw = problem(n=0, c=4, reduction=reduction, weight=True, zloss=2)
        r = call(kw)
        assert r.shape == (0, 4) and r.dtype == np.float64


def test_large_batch_and_determinism():
    kw = problem(n=60000, c=3, dtype=np.float32, weight=True, ignore=True, zloss=2)
    kw["label_smoothing"] = 0.05
    results = []
    try:
        for threads in (1, 2, 3):
            ascendgrad.set_num_threads(threads)
            results.append(call(kw))
    finally:
        ascendgrad.set_num_threads(0)
    assert results[0].tobytes() == results[1].tobytes() == results[2].tobytes()
    check(results[0], kw, np.float32)


# ----------------------------------------------------------------------------------------------
# PyTorch autograd and finite differences


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_matches_torch_autograd(reduction, weight, eps, ignore_index):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(5)
    n, c = 11, 6
    logits = rng.standard_normal((n, c)) * 2
    t = rng.integers(0, c, n)
    t[::4] = ignore_index if ignore_index >= 0 else -100
    w = rng.uniform(0.2, 2, c) if weight else None
    g = rng.uniform(0.5, 2, (n,) if reduction == "none" else ())
    for np_dtype, t_dtype, atol in [(np.float64, torch.float64, 1e-13), (np.float32, torch.float32, 2e-6)]:
        x = torch.tensor(logits, dtype=t_dtype, requires_grad=True)
        tw = None if w is None else torch.tensor(w, dtype=t_dtype)
        loss = F.cross_entropy(x, torch.tensor(t), weight=tw, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=eps)
        loss.backward(torch.tensor(g, dtype=t_dtype))
        lp = torch.log_softmax(x.detach(), 1).numpy()
        ours = ascendgrad.cross_entropy_loss_grad(
            g.astype(np_dtype), lp, t, None if w is None else w.astype(np_dtype), reduction=reduction,
            ignore_index=ignore_index, label_smoothing=eps)
        scale = np.abs(x.grad.numpy()).max() + 1e-30
        np.testing.assert_allclose(ours, x.grad.numpy(), rtol=0, atol=atol * scale * 4)


def test_matches_torch_when_every_row_is_ignored():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    t = torch.full((4,), -100)
    torch.nn.functional.cross_entropy(x, t, label_smoothing=0.2).backward()
    ours = ascendgrad.cross_entropy_loss_grad(1.0, torch.log_softmax(x.detach(), 1).numpy(), t.numpy(),
                                              label_smoothing=0.2)
    np.testing.assert_array_equal(ours, x.grad.numpy())  # zeros, no NaN


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("with_grad_zloss", [False, True])
def test_zloss_matches_finite_differences_of_the_forward(reduction, with_grad_zloss):
    # d/dx [gl . loss(x) + gz . zloss(x)] by central differences of the reference forward
    rng = np.random.default_rng(7)
    n, c, zeta, eps = 5, 4, 0.7, 0.1
    x = rng.standard_normal((n, c))
    t = np.array([0, -100, 3, 1, 2])
    w = rng.uniform(0.5, 1.5, c)
    shp = (n,) if reduction == "none" else ()
    gl = rng.uniform(0.5, 2, shp)
    gz = rng.uniform(-1, 1, shp) if with_grad_zloss else None

    def objective(xx):
        loss, z = ref.cross_entropy(xx, t, w, reduction, -100, eps, zeta, return_zloss=True)
        return np.sum(gl * loss) + (np.sum(gz * z) if gz is not None else 0.0)

    h = 1e-6
    num = np.zeros_like(x)
    for i in range(n):
        for j in range(c):
            xp, xm = x.copy(), x.copy()
            xp[i, j] += h
            xm[i, j] -= h
            num[i, j] = (objective(xp) - objective(xm)) / (2 * h)
    ours = ascendgrad.cross_entropy_loss_grad(
        gl, ref.log_softmax(x, 1), t, w, reduction=reduction, label_smoothing=eps, grad_zloss=gz,
        lse_for_zloss=ref.logsumexp(x, 1), lse_square_scale_for_zloss=zeta)
    np.testing.assert_allclose(ours, num, rtol=0, atol=1e-7)


# ----------------------------------------------------------------------------------------------
# errors


def error_of(fn):
    with pytest.raises(ascendgrad.AclnnError) as e:
        fn()
    assert isinstance(e.value, ValueError)
    return e.value.status, str(e.value)


@pytest.mark.parametrize("tdtype", [np.int64, np.int32])
@pytest.mark.parametrize("bad", [5, -1, 1000])
def test_bad_target_fails_and_leaves_out_untouched(tdtype, bad):
    kw = problem(n=40000, c=5, dtype=np.float32, tdtype=tdtype, weight=True)
    kw["target"][39990] = bad
    out = np.full((40000, 5), 7.0, np.float32)
    status, msg = error_of(lambda: call(kw, out=out))
    assert status == S.ERR_PARAM_INVALID
    assert msg == f"{OP}: Target {bad} is out of bounds: target[39990] must be in [0, 5) or equal ignore_index -100."
    assert np.all(out == 7.0)


def test_error_statuses_and_messages():
    base = problem(weight=True, zloss=1)
    floats = "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE]"
    cases = [
        (dict(reduction="avg"), S.ERR_PARAM_INVALID,
         f'{OP}: reduction should be one of "none", "mean", "sum", but got "avg".'),
        (dict(label_smoothing=1.5), S.ERR_PARAM_INVALID, f"{OP}: label_smoothing should be in [0, 1], but got 1.5."),
        (dict(label_smoothing=-0.25), S.ERR_PARAM_INVALID,
         f"{OP}: label_smoothing should be in [0, 1], but got -0.25."),
        (dict(lse_square_scale_for_zloss=float("inf")), S.ERR_PARAM_INVALID,
         f"{OP}: lse_square_scale_for_zloss should be a finite number, but got inf."),
        (dict(lse_for_zloss=None), S.ERR_PARAM_NULLPTR,
         f"{OP}: Expected a proper Tensor but got null for argument lse_for_zloss. It is required when "
         "lse_square_scale_for_zloss (0.3) is not 0."),
        (dict(target=base["target"].astype(np.float64)), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor target not implemented for DT_DOUBLE, should be in dtype support list [DT_INT64, DT_INT32]."),
        (dict(target=base["target"][:5]), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for target to have size [9], but got [5]."),
        (dict(log_prob=base["log_prob"][None]), S.ERR_PARAM_INVALID,
         f"{OP}: Expected 2 dimension input, but got log_prob with sizes [1, 9, 5]."),
        (dict(log_prob=np.zeros((9, 0))), S.ERR_PARAM_INVALID,
         f"{OP}: log_prob must have C > 0 classes, but got sizes [9, 0]."),
        (dict(log_prob=base["log_prob"].astype(np.int32)), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor log_prob not implemented for DT_INT32, should be in dtype support list {floats}."),
        (dict(grad_loss=np.ones(9)), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for grad_loss to have size [] or [1] for reduction 'mean', but got [9]."),
        (dict(grad_loss=np.ones(3), reduction="none", lse_square_scale_for_zloss=0.0), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for grad_loss to have size [9], but got [3]."),
        (dict(grad_loss=np.array(1.0, np.float32)), S.ERR_PARAM_INVALID,
         f"{OP}: grad_loss is float32 but log_prob is float64: pass a Python float or a float64 value (Python "
         "numbers take log_prob's dtype, NumPy scalars keep theirs)."),
        (dict(weight=np.ones(4)), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for weight to have size [5], but got [4]."),
        (dict(weight=np.ones(5, np.int64)), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor weight not implemented for DT_INT64, should be in dtype support list {floats}."),
        (dict(lse_for_zloss=np.ones(8)), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for lse_for_zloss to have size [9], but got [8]."),
        (dict(grad_zloss=np.ones(9)), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for grad_zloss to have size [] or [1] for reduction 'mean', but got [9]."),
        (dict(out=np.zeros((9, 5), np.float32)), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor out expected dtype is DT_DOUBLE but found DT_FLOAT."),
        (dict(out=np.zeros((5, 9))), S.ERR_PARAM_INVALID,
         f"{OP}: Expected tensor for out to have same size as tensor for log_prob, but [5, 9] does not equal [9, 5]."),
    ]
    for change, status, message in cases:
        assert error_of(lambda: call(base, **change)) == (status, message), change


def test_out_partially_overlapping_log_prob_is_rejected():
    kw = problem(n=4, c=3)
    buf = np.zeros(15)
    kw["log_prob"] = buf[:12].reshape(4, 3)
    kw["log_prob"][:] = -1.0
    assert error_of(lambda: call(kw, out=buf[3:].reshape(4, 3))) == (
        S.ERR_PARAM_INVALID,
        f"{OP}: Output out partially overlaps input log_prob in memory; use separate memory or the identical view "
        "(in-place).")


def test_type_errors():
    kw = problem()
    with pytest.raises(TypeError):
        call(kw, reduction=3)
    with pytest.raises(TypeError):
        call(kw, log_prob="abc")
    with pytest.raises(TypeError):
        call(kw, out=[[0.0] * 5] * 9)


# ----------------------------------------------------------------------------------------------
# raw two-phase API


def raw_args(kw, out):
    T = aclnn.Tensor
    opt = lambda key: None if kw.get(key) is None else T(kw[key])  # noqa: E731
    return (T(kw["grad_loss"]), T(kw["log_prob"]), T(kw["target"]), opt("weight"), opt("grad_zloss"),
            opt("lse_for_zloss"), kw.get("reduction"), kw.get("ignore_index", -100), kw.get("label_smoothing", 0.0),
            kw.get("lse_square_scale_for_zloss", 0.0), T(out))


def test_raw_round_trip():
    kw = problem(weight=True, ignore=True, zloss=2, reduction="sum")
    kw["label_smoothing"] = 0.1
    out = np.zeros_like(kw["log_prob"])
    status, ws, ex = aclnn.cross_entropy_loss_grad_get_workspace_size(*raw_args(kw, out))
    assert (status, ws) == (S.SUCCESS, 0) and isinstance(ex, aclnn.Executor)
    assert aclnn.cross_entropy_loss_grad(None, ws, ex) == S.SUCCESS
    np.testing.assert_array_equal(out, call(kw))
    assert aclnn.cross_entropy_loss_grad(None, ws, ex) == S.ERR_PARAM_INVALID  # single use
    assert "not live" in aclnn.get_recent_err_msg()


def test_raw_null_reduction_is_mean_and_errors_are_statuses():
    kw = problem(weight=True)
    out = np.zeros_like(kw["log_prob"])
    args = list(raw_args(kw, out))
    args[6] = None
    status, ws, ex = aclnn.cross_entropy_loss_grad_get_workspace_size(*args)
    assert status == S.SUCCESS and aclnn.cross_entropy_loss_grad(None, ws, ex) == S.SUCCESS
    np.testing.assert_array_equal(out, call(kw, reduction="mean"))
    args[0] = None
    assert aclnn.cross_entropy_loss_grad_get_workspace_size(*args) == (S.ERR_PARAM_NULLPTR, 0, None)
    assert aclnn.get_recent_err_msg() == f"{OP}: Expected a proper Tensor but got null for argument gradLoss."
    args = list(raw_args(kw, out))
    args[6] = "Sum"
    assert aclnn.cross_entropy_loss_grad_get_workspace_size(*args)[0] == S.ERR_PARAM_INVALID
    assert "but got \"Sum\"" in aclnn.get_recent_err_msg()
    assert aclnn.cross_entropy_loss_grad(None, 0, None) == S.ERR_PARAM_NULLPTR


def test_raw_bad_target_on_a_stream_surfaces_at_synchronize():
    kw = problem(n=6, c=3, dtype=np.float32, weight=True)
    kw["target"][4] = 3
    out = np.full((6, 3), 7.0, np.float32)
    with aclnn.Stream() as stream:
        status, ws, ex = aclnn.cross_entropy_loss_grad_get_workspace_size(*raw_args(kw, out))
        assert status == S.SUCCESS  # phase 1 does not look at data
        assert aclnn.cross_entropy_loss_grad(None, ws, ex, stream) == S.SUCCESS  # queued
        assert stream.synchronize() == S.ERR_PARAM_INVALID
        assert aclnn.get_recent_err_msg() == (
            f"{OP}: Target 3 is out of bounds: target[4] must be in [0, 3) or equal ignoreIndex -100.")
        assert np.all(out == 7.0)
        kw["target"][4] = 2
        status, ws, ex = aclnn.cross_entropy_loss_grad_get_workspace_size(*raw_args(kw, out))
        assert aclnn.cross_entropy_loss_grad(None, ws, ex, stream) == S.SUCCESS
        assert stream.synchronize() == S.SUCCESS
    np.testing.assert_allclose(out, call(kw), atol=1e-7)
