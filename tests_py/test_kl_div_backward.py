"""ascendgrad.kl_div_backward against the float64 reference and PyTorch autograd of F.kl_div:
every dtype (mixed too), reduction (names and codes), log_target, broadcasting with the sum back
to x's shape, strided views, out=, errors with status and message, the raw two-phase API,
determinism."""

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn
from ascendgrad import reference as ref

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
TOL = {np.float16: 2e-3, BF16: 1.6e-2, np.float32: 2e-6, np.float64: 1e-13}
S = aclnn.Status
OP = "aclnnKlDivBackward"
REDUCTIONS = ["none", "mean", "sum", "batchmean", 0, 1, 2, 3]

# (x, target, grad_output) shapes
SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3), (2, 3), ()),
    ((2, 3), (3,), (1, 3)),
    ((3,), (2, 3), (2, 3)),
    ((2, 1, 4), (2, 3, 4), (3, 1)),
    ((4, 1), (1, 5), (4, 5)),
    ((1, 5), (4, 1), (1,)),
    ((1, 1), (5, 7), (7,)),
    ((), (), ()),
    ((), (6,), (6,)),
    ((2, 1, 3, 1), (2, 5, 3, 4), (5, 1, 4)),
]


def make(xs, ts, gs, dtypes=(np.float64,) * 3, log_target=False, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 0, xs).astype(dtypes[1])
    t = rng.uniform(-3 if log_target else 0, 1.5, ts).astype(dtypes[2])
    g = rng.uniform(-2, 2, gs).astype(dtypes[0])
    return g, x, t


def check(result, g, x, t, reduction, log_target, dtype):
    expect = ref.kl_div_backward(g, x, t, reduction, log_target)
    assert result.shape == np.shape(x)
    scale = np.abs(expect).max(initial=0) + 1e-30
    np.testing.assert_allclose(result.astype(np.float64), expect, rtol=0, atol=TOL[dtype] * scale * 2)


def loosest(*dtypes):
    return max(dtypes, key=lambda d: TOL[d])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS, ids=str)
@pytest.mark.parametrize("log_target", [False, True])
def test_matches_reference(dtype, shapes, reduction, log_target):
    g, x, t = make(*shapes, dtypes=(dtype,) * 3, log_target=log_target)
    r = ascendgrad.kl_div_backward(g, x, t, reduction, log_target)
    assert r.dtype == np.dtype(dtype)
    check(r, g, x, t, reduction, log_target, dtype)


@pytest.mark.parametrize("gd", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("xd", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("td", FLOATS, ids=lambda d: np.dtype(d).name)
def test_mixed_dtypes(gd, xd, td):
    for shapes in (SHAPES[0], SHAPES[4]):
        g, x, t = make(*shapes, dtypes=(gd, xd, td), log_target=True)
        r = ascendgrad.kl_div_backward(g, x, t, "mean", True)
        assert r.dtype == np.dtype(xd)
        check(r, g, x, t, "mean", True, loosest(gd, xd, td))


@pytest.mark.parametrize("out_dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_out_any_float_dtype(out_dtype):
    g, x, t = make(*SHAPES[4])
    out = np.full(x.shape, 7, out_dtype)
    r = ascendgrad.kl_div_backward(g, x, t, "sum", out=out)
    assert r is out
    check(out, g, x, t, "sum", False, out_dtype)


def test_doc_example():
    a = np.array([[2, 3], [5, 8]], np.float32)
    r = ascendgrad.kl_div_backward(a, a, a, 0)
    np.testing.assert_array_equal(r, [[-4, -9], [-25, -64]])


def test_no_masking_and_nan_inf_propagate():
    g = np.array([1, 1, np.nan, 1, np.inf], np.float32)
    t = np.array([0, -2, 1, np.inf, 0], np.float32)
    r = ascendgrad.kl_div_backward(g, np.zeros(5, np.float32), t, "sum")
    assert r[0] == 0 and np.signbit(r[0]) and r[1] == 2 and np.isnan(r[2]) and r[3] == -np.inf and np.isnan(r[4])


def test_python_numbers_take_x_dtype():
    x = np.zeros((2, 2), np.float16)
    r = ascendgrad.kl_div_backward(1.0, x, [[1.0, 2.0], [3.0, 4.0]], "batchmean")
    assert r.dtype == np.float16
    np.testing.assert_array_equal(r, np.float16([[-0.5, -1.0], [-1.5, -2.0]]))


@pytest.mark.parametrize(
    "view",
    [lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a.T.copy().T, lambda a: a[::2, 1::3]],
    ids=["reversed", "neg-step2", "column-major", "mixed"],
)
def test_strided_views(view):
    rng = np.random.default_rng(3)
    base_x, base_t, base_g = (rng.uniform(-1, 1.5, (12, 12)) for _ in range(3))
    for lt in (False, True):
        x, t, g = view(base_x), view(base_t), view(base_g)
        check(ascendgrad.kl_div_backward(g, x, t, "mean", lt), g, x, t, "mean", lt, np.float64)
        # broadcast: x summed over rows, g a strided row
        check(ascendgrad.kl_div_backward(g[:1], x[:1], t, 3, lt), g[:1], x[:1], t, 3, lt, np.float64)


@pytest.mark.parametrize("which", ["grad_output", "x", "target"])
def test_in_place(which):
    g, x, t = make((4, 5), (4, 5), (4, 5))
    expect = ascendgrad.kl_div_backward(g, x, t, "mean", True)
    arr = {"grad_output": g, "x": x, "target": t}[which]
    r = ascendgrad.kl_div_backward(g, x, t, "mean", True, out=arr)
    assert r is arr
    np.testing.assert_array_equal(arr, expect)


def test_empty():
    for red in REDUCTIONS:
        g, x, t = make((0, 3), (0, 3), (0, 3))
        assert ascendgrad.kl_div_backward(g, x, t, red).shape == (0, 3)
        # B empty, x not: every element sums nothing -> 0, never NaN
        g, x, t = make((1, 3), (0, 3), (3,))
        r = ascendgrad.kl_div_backward(g, x, t, red)
        assert r.shape == (1, 3) and np.all(r == 0) and not np.any(np.signbit(r))


def test_determinism():
    cases = [((300, 200), (300, 200), (300, 200)), ((1, 300), (400, 300), (400, 1)),
             ((400, 1), (400, 300), ()), ((), (70000,), (70000,))]
    try:
        for shapes in cases:
            g, x, t = make(*shapes, dtypes=(np.float32,) * 3)
            results = []
            for threads in (1, 2, 3):
                ascendgrad.set_num_threads(threads)
                results.append(ascendgrad.kl_div_backward(g, x, t, "mean").tobytes())
            assert results[0] == results[1] == results[2], shapes
    finally:
        ascendgrad.set_num_threads(0)


# ----------------------------------------------------------------------------------------------
# PyTorch


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("shapes", [((6, 5), (6, 5)), ((4, 3, 2), (4, 3, 2)), ((7,), (7,)), ((5, 3), (3,))],
                         ids=str)
def test_matches_torch_autograd(reduction, log_target, shapes):
    torch = pytest.importorskip("torch")
    import warnings

    xs, ts = shapes
    rng = np.random.default_rng(11)
    x0 = rng.uniform(-3, 0, xs)
    t0 = rng.uniform(-2 if log_target else 0.01, 1.5, ts)
    for np_dtype, t_dtype, atol in [(np.float64, torch.float64, 1e-13), (np.float32, torch.float32, 2e-6)]:
        x = torch.tensor(x0, dtype=t_dtype, requires_grad=True)
        t = torch.tensor(t0, dtype=t_dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about 'mean' and about size mismatches
            loss = torch.nn.functional.kl_div(x, t, reduction=reduction, log_target=log_target)
        g = rng.uniform(0.5, 2, tuple(loss.shape))
        loss.backward(torch.tensor(g, dtype=t_dtype))
        ours = ascendgrad.kl_div_backward(g.astype(np_dtype), x0.astype(np_dtype), t0.astype(np_dtype),
                                          reduction, log_target)
        scale = np.abs(x.grad.numpy()).max() + 1e-30
        np.testing.assert_allclose(ours, x.grad.numpy(), rtol=0, atol=atol * scale * 4)


def test_matches_torch_half_types():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x0, t0 = rng.uniform(-3, 0, (8, 16)), rng.uniform(0, 1, (8, 16))
    for np_dtype, t_dtype in [(np.float16, torch.float16), (BF16, torch.bfloat16)]:
        xq, tq = x0.astype(np_dtype), t0.astype(np_dtype)
        x = torch.tensor(xq.astype(np.float32)).to(t_dtype).requires_grad_()
        t = torch.tensor(tq.astype(np.float32)).to(t_dtype)
        torch.nn.functional.kl_div(x, t, reduction="sum").backward()
        ours = ascendgrad.kl_div_backward(np.ones((), np_dtype), xq, tq, "sum")
        np.testing.assert_array_equal(ours.astype(np.float32), x.grad.float().numpy())


# ----------------------------------------------------------------------------------------------
# errors


def error_of(fn):
    with pytest.raises(ascendgrad.AclnnError) as e:
        fn()
    assert isinstance(e.value, ValueError)
    return e.value.status, str(e.value)


def test_error_statuses_and_messages():
    g, x, t = make((2, 3), (2, 3), (2, 3))
    floats = "[DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE]"
    cases = [
        ((g, x, t, "avg"), S.ERR_PARAM_INVALID,
         f"{OP}: reduction should be 'none', 'mean', 'sum', 'batchmean' or 0..3, but got 'avg'."),
        ((g, x, t, 4), S.ERR_PARAM_INVALID,
         f"{OP}: reduction should be 0 (none), 1 (mean), 2 (sum) or 3 (batchmean), but got 4."),
        ((g, x, t, -1), S.ERR_PARAM_INVALID,
         f"{OP}: reduction should be 0 (none), 1 (mean), 2 (sum) or 3 (batchmean), but got -1."),
        ((g, x, t, 2**70), S.ERR_PARAM_INVALID,
         f"{OP}: reduction should be 0 (none), 1 (mean), 2 (sum) or 3 (batchmean), but got {2**70}."),
        ((g, x, np.ones(4)), S.ERR_PARAM_INVALID,
         f"{OP}: The size of tensor x [2, 3] must match the size of tensor target [4]."),
        ((np.ones((3, 3)), x, t), S.ERR_PARAM_INVALID,
         f"{OP}: shape of grad_output must broadcast to [2, 3], but current is [3, 3]."),
        ((np.ones((1, 2, 3)), x, t), S.ERR_PARAM_INVALID,
         f"{OP}: shape of grad_output must broadcast to [2, 3], but current is [1, 2, 3]."),
        ((g, x, t.astype(np.int64)), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor target not implemented for DT_INT64, should be in dtype support list {floats}."),
        ((g.astype(np.int32), x, t), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor grad_output not implemented for DT_INT32, should be in dtype support list {floats}."),
        ((g, x.astype(np.complex64), t), S.ERR_PARAM_INVALID,
         f"{OP}: Tensor x not implemented for DT_COMPLEX64, should be in dtype support list {floats}."),
    ]
    for args, status, message in cases:
        assert error_of(lambda: ascendgrad.kl_div_backward(*args)) == (status, message), args[3:]
    assert error_of(lambda: ascendgrad.kl_div_backward(g, x, t, out=np.zeros((3, 2)))) == (
        S.ERR_PARAM_INVALID,
        f"{OP}: Expected tensor for out to have same size as tensor for x, but [3, 2] does not equal [2, 3].")
    assert error_of(lambda: ascendgrad.kl_div_backward(g, x, t, out=np.zeros((2, 3), np.int32))) == (
        S.ERR_PARAM_INVALID,
        f"{OP}: Tensor out not implemented for DT_INT32, should be in dtype support list {floats}.")
    buf = np.zeros(8)
    tt = buf[:6].reshape(2, 3)
    assert error_of(lambda: ascendgrad.kl_div_backward(g, x, tt, out=buf[2:].reshape(2, 3))) == (
        S.ERR_PARAM_INVALID,
        f"{OP}: Output out partially overlaps input target in memory; use separate memory or the identical view "
        "(in-place).")


def test_type_errors():
    g, x, t = make((2, 3), (2, 3), (2, 3))
    for bad in (True, 1.0, None):
        with pytest.raises(TypeError):
            ascendgrad.kl_div_backward(g, x, t, bad)
    with pytest.raises(TypeError):
        ascendgrad.kl_div_backward(g, "x", t)


# ----------------------------------------------------------------------------------------------
# raw two-phase API


def test_raw_round_trip_and_statuses():
    g, x, t = make((1, 5), (4, 5), (4, 1))
    out = np.zeros_like(x)
    T = aclnn.Tensor
    status, ws, ex = aclnn.kl_div_backward_get_workspace_size(T(g), T(x), T(t), 3, True, T(out))
    assert (status, ws) == (S.SUCCESS, 0) and isinstance(ex, aclnn.Executor)
    assert aclnn.kl_div_backward(None, ws, ex) == S.SUCCESS
    np.testing.assert_array_equal(out, ascendgrad.kl_div_backward(g, x, t, "batchmean", True))
    assert aclnn.kl_div_backward(None, ws, ex) == S.ERR_PARAM_INVALID  # single use
    assert "not live" in aclnn.get_recent_err_msg()
    assert aclnn.kl_div_backward_get_workspace_size(None, T(x), T(t), 0, False, T(out)) == (
        S.ERR_PARAM_NULLPTR, 0, None)
    assert aclnn.get_recent_err_msg() == f"{OP}: Expected a proper Tensor but got null for argument gradOutput."
    assert aclnn.kl_div_backward_get_workspace_size(T(g), T(x), T(t), 9, False, T(out))[0] == S.ERR_PARAM_INVALID
    assert aclnn.get_recent_err_msg().endswith("but got 9.")
    assert aclnn.kl_div_backward(None, 0, None) == S.ERR_PARAM_NULLPTR


def test_raw_on_a_stream():
    a = np.array([[2, 3], [5, 8]], np.float32)
    out = np.zeros_like(a)
    T = aclnn.Tensor
    with aclnn.Stream() as stream:
        status, ws, ex = aclnn.kl_div_backward_get_workspace_size(T(a), T(a), T(a), 0, False, T(out))
        assert status == S.SUCCESS
        assert aclnn.kl_div_backward(None, ws, ex, stream) == S.SUCCESS
        assert stream.synchronize() == S.SUCCESS
    np.testing.assert_array_equal(out, [[-4, -9], [-25, -64]])


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 37, 4099, 3_000_017])  # past a vector, and past the streaming-store size
def test_broadcast_gradient_bitwise_as_materialized(dtype, n):
    # a broadcast input is read in the same vector loops as a contiguous one: same bits
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, n)) * 5).astype(dtype)
    t = rng.uniform(-3, 1, (2, n)).astype(dtype)
    x.flat[::97], t.flat[::89] = np.nan, np.inf
    for g in (np.array(-1.75, dtype), rng.standard_normal((2, 1)).astype(dtype), rng.standard_normal(n).astype(dtype)):
        full = np.broadcast_to(g, x.shape)
        for lt in (False, True):
            for off in (0, 1):  # (the output's alignment)
                want = ascendgrad.kl_div_backward(full.copy()[:, off:], x[:, off:], t[:, off:], "none", lt)
                got = ascendgrad.kl_div_backward(full[:, off:], x[:, off:], t[:, off:], "none", lt)
                assert got.tobytes() == want.tobytes()
                if g.ndim == 0:
                    got = ascendgrad.kl_div_backward(g, x[:, off:], t[:, off:], "sum", lt)
                    assert got.tobytes() == want.tobytes()
