"""ascendgrad.log_sigmoid_backward against the float64 reference and PyTorch: every dtype
(bfloat16 via ml_dtypes), extremes, strided and negatively strided views, out= in every float
dtype and in place, the ignored buffer, errors with their status and message (out untouched),
the raw two-phase API, determinism across thread counts."""

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn
from ascendgrad import reference as ref

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
NAMES = lambda d: np.dtype(d).name  # noqa: E731
# Relative tolerance of a result rounded once into the dtype after float32 (float64) compute.
RTOL = {np.float16: 1e-3, BF16: 8e-3, np.float32: 2e-6, np.float64: 4e-15}
# x where e^(-|x|) is subnormal or zero in float32 / float64, and the usual extremes.
X_SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 3e-8, -3e-8, 1e4, -1e4, np.inf, -np.inf, np.nan,
             20.0, -20.0, 88.0, -88.0, 100.0, -100.0, 700.0, -700.0, 745.0, -745.0]


def make(shape, dtype, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    g = rng.uniform(-3, 3, shape)
    x = rng.uniform(-12, 12, shape)
    if specials and x.size:
        flat = x.reshape(-1)
        k = min(flat.size, len(X_SPECIAL))
        flat[:k] = X_SPECIAL[:k]
    return g.astype(dtype), x.astype(dtype)


def assert_same(a, b):
    """Equal values, NaN where NaN (bfloat16 compared through float64: NumPy's NaN check misses it)."""
    np.testing.assert_array_equal(np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64))


def rtol_for(*dtypes):
    return max(RTOL[d] for d in dtypes)


def check(result, g, x, *dtypes):
    """result vs the float64 reference on the (already rounded) inputs."""
    expect = ref.log_sigmoid_backward(g.astype(np.float64), x.astype(np.float64))
    # the reference rounded into the result's dtype: overflow there is expected
    expect = expect.astype(result.dtype).astype(np.float64)
    tiny = float(np.finfo(np.float32).smallest_subnormal) * 8
    np.testing.assert_allclose(result.astype(np.float64), expect, rtol=rtol_for(*dtypes), atol=tiny)


@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (5, 9), (3, 4, 5), (2, 1, 2, 1, 2, 1, 2, 3), (4, 1000)])
def test_matches_reference(shape, dtype):
    g, x = make(shape, dtype)
    r = ascendgrad.log_sigmoid_backward(g, x)
    assert r.dtype == np.dtype(dtype) and r.shape == x.shape
    check(r, g, x, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
def test_extremes_exactly(dtype):
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, -1e4, 1e4, -np.inf, 2.0], dtype)
    g = np.array([3.0, 3.0, 3.0, 3.0, -3.0, 2.0, 2.0, np.inf, np.nan], dtype)
    r = ascendgrad.log_sigmoid_backward(g, x).astype(np.float64)
    np.testing.assert_array_equal(r, [3.0, 0.0, np.nan, 1.5, -1.5, 2.0, 0.0, np.inf, np.nan])
    assert not np.signbit(r[1])


@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
@pytest.mark.parametrize(
    "view",
    [lambda a: a[:, ::2], lambda a: a[::-1], lambda a: a[:, ::-3], lambda a: a.T,
     lambda a: a[::-2, 1::3].T, lambda a: np.broadcast_to(a[:1], a.shape), lambda a: a[::-1, ::-1]],
    ids=["step2", "reversed", "neg-step3", "transposed", "mixed", "broadcast", "reversed2"],
)
def test_strided_views(view, dtype):
    base_g, base_x = make((12, 30), dtype, seed=3)
    g, x = view(base_g), view(base_x)
    r = ascendgrad.log_sigmoid_backward(g, x)
    assert r.shape == x.shape
    check(r, g, x, dtype)
    # mixed layouts: only one of the two strided
    check(ascendgrad.log_sigmoid_backward(np.ascontiguousarray(g), x), g, x, dtype)
    check(ascendgrad.log_sigmoid_backward(g, np.ascontiguousarray(x)), g, x, dtype)


@pytest.mark.parametrize("in_dtype", FLOATS, ids=NAMES)
@pytest.mark.parametrize("out_dtype", FLOATS, ids=NAMES)
def test_out_any_float_dtype(in_dtype, out_dtype):
    g, x = make((6, 40), in_dtype)
    out = np.full(g.shape, 7, dtype=out_dtype)
    r = ascendgrad.log_sigmoid_backward(g, x, out=out)
    assert r is out
    check(out, g, x, in_dtype, out_dtype)
    if in_dtype == np.float64 and out_dtype == np.float32:
        # computed in float64, rounded once
        np.testing.assert_array_equal(out, ascendgrad.log_sigmoid_backward(g, x).astype(np.float32))


def test_strided_out():
    g, x = make((8, 10), np.float32)
    base = np.full((16, 20), 7, np.float32)
    out = base[::-2, ::2]
    r = ascendgrad.log_sigmoid_backward(g, x, out=out)
    assert r is out
    check(out, g, x, np.float32)
    assert np.all(base[::-2, 1::2] == 7) and np.all(base[-2::-2] == 7)


def test_half_inputs_computed_in_float32():
    g, x = make((8, 64), np.float16, specials=False)
    wide = ascendgrad.log_sigmoid_backward(g, x, out=np.empty(g.shape, np.float64))
    narrow = ascendgrad.log_sigmoid_backward(g, x)
    assert np.any(wide != narrow.astype(np.float64))  # float32 digits, not f16 widened
    assert_same(wide.astype(np.float16), narrow)


@pytest.mark.parametrize("which", ["grad_output", "x"])
@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
def test_in_place(which, dtype):
    g, x = make((5, 33), dtype)
    expect = ascendgrad.log_sigmoid_backward(g, x)
    target = g if which == "grad_output" else x
    r = ascendgrad.log_sigmoid_backward(g, x, out=target)
    assert r is target
    assert_same(target, expect)


def test_in_place_strided():
    base = make((10, 20), np.float32)[0]
    x = make((5, 10), np.float32, seed=4)[1]
    g = base[::-2, ::2]
    expect = ascendgrad.log_sigmoid_backward(g.copy(), x)
    assert ascendgrad.log_sigmoid_backward(g, x, out=g) is g
    np.testing.assert_array_equal(g, expect)


def test_buffer_is_ignored():
    g, x = make((4, 6), np.float32)
    expect = ascendgrad.log_sigmoid_backward(g, x)
    for buffer in [None, np.exp(-np.abs(x)), np.zeros(3, np.int8), np.ones((2, 2, 2), np.float64), x, g,
                   np.float32(5), [1, 2]]:
        np.testing.assert_array_equal(ascendgrad.log_sigmoid_backward(g, x, buffer), expect)
        np.testing.assert_array_equal(ascendgrad.log_sigmoid_backward(g, x, buffer=buffer), expect)


def test_python_numbers_take_x_dtype():
    x = np.array([-1.0, 0.0, 2.0], BF16)
    r = ascendgrad.log_sigmoid_backward([1, 1, 1], x)
    assert r.dtype == BF16
    check(r, np.ones(3, BF16), x, BF16)
    r0 = ascendgrad.log_sigmoid_backward(2.0, np.float16(0.0))
    assert r0.dtype == np.float16 and r0.shape == () and r0 == 1.0
    r1 = ascendgrad.log_sigmoid_backward([[1.0, 2.0]], [[0.0, 0.0]])  # both lists: float64
    assert r1.dtype == np.float64
    np.testing.assert_array_equal(r1, [[0.5, 1.0]])


def test_empty():
    for shape in [(0,), (3, 0), (0, 4)]:
        g = np.zeros(shape, np.float32)
        r = ascendgrad.log_sigmoid_backward(g, g)
        assert r.shape == shape and r.dtype == np.float32


def test_byteswapped_and_unaligned_inputs_are_copied():
    g, x = make((4, 8), np.float64)
    swapped = g.astype(g.dtype.newbyteorder(">"))
    raw = np.zeros(x.size * 8 + 1, np.uint8)[1:].view(np.float64).reshape(x.shape)  # misaligned
    raw[...] = x
    check(ascendgrad.log_sigmoid_backward(swapped, raw), g, x, np.float64)


def test_cann_example():
    x = np.array([[1, 2], [3, 4]], np.float32)
    r = ascendgrad.log_sigmoid_backward(np.ones((2, 2), np.float32), x, x)
    np.testing.assert_allclose(r, [[0.268941, 0.119203], [0.047426, 0.017986]], atol=1e-6)


# ---- PyTorch ----

def torch_grad(torch, g, x, tdtype):
    tx = torch.from_numpy(x.astype(np.float32)).to(tdtype)
    tg = torch.from_numpy(g.astype(np.float32)).to(tdtype)
    _, buffer = torch.ops.aten.log_sigmoid_forward(tx)
    return torch.ops.aten.log_sigmoid_backward(tg, tx, buffer).float().numpy()


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for dtype, tdtype in [(np.float32, torch.float32), (np.float64, torch.float64)]:
        for shape in [(16, 100), (3, 4, 5), (1000,)]:
            g, x = make(shape, dtype)
            tx, tg = torch.from_numpy(x), torch.from_numpy(g)
            _, buffer = torch.ops.aten.log_sigmoid_forward(tx)
            t = torch.ops.aten.log_sigmoid_backward(tg, tx, buffer).numpy()
            ours = ascendgrad.log_sigmoid_backward(g, x, buffer.numpy())
            # PyTorch computes 1 - z/(1+z) for x < 0: a few units in the last place apart
            np.testing.assert_allclose(ours, t, rtol=8 * float(np.finfo(dtype).eps), atol=1e-30)
            assert np.array_equal(np.isnan(ours), np.isnan(t))


def test_matches_torch_half_types():
    torch = pytest.importorskip("torch")
    for dtype, tdtype in [(np.float16, torch.float16), (BF16, torch.bfloat16)]:
        g, x = make((16, 100), dtype)
        t = torch_grad(torch, g, x, tdtype)
        ours = ascendgrad.log_sigmoid_backward(g, x).astype(np.float32)
        # both compute in float32 and round once: at most one unit in the last place apart
        np.testing.assert_allclose(ours, t, rtol=2 * float(ml_dtypes.finfo(dtype).eps), atol=1e-7)


def test_matches_torch_strided():
    torch = pytest.importorskip("torch")
    g, x = make((20, 30), np.float64, seed=7)
    gv, xv = g[::-1, ::2], x[:, ::-2]
    tx = torch.from_numpy(np.ascontiguousarray(xv))
    _, buffer = torch.ops.aten.log_sigmoid_forward(tx)
    t = torch.ops.aten.log_sigmoid_backward(torch.from_numpy(np.ascontiguousarray(gv)), tx, buffer).numpy()
    np.testing.assert_allclose(ascendgrad.log_sigmoid_backward(gv, xv), t, rtol=1e-14)


# ---- determinism ----

def test_bitwise_identical_for_any_thread_count():
    cases = [make((256, 1024), np.float32), make((300, 400), BF16), make((300, 400), np.float64)]
    views = [lambda a: a, lambda a: a.T, lambda a: a[::-1, ::2]]
    before = ascendgrad.get_num_threads()
    try:
        for (g, x), view in zip(cases, views):
            results = []
            for n in (1, 2, 3):
                ascendgrad.set_num_threads(n)
                results.append(ascendgrad.log_sigmoid_backward(view(g), view(x)).tobytes())
            assert all(r == results[0] for r in results)
    finally:
        ascendgrad.set_num_threads(before)


# ---- errors ----

def expect_error(status, fragments, *args, **kwargs):
    with pytest.raises(ascendgrad.AclnnError) as e:
        ascendgrad.log_sigmoid_backward(*args, **kwargs)
    assert e.value.status == status
    assert isinstance(e.value, ValueError)
    for f in fragments:
        assert f in str(e.value), str(e.value)
    return str(e.value)


def test_shape_mismatch_names_both_shapes():
    g, x = make((2, 3), np.float32)
    msg = expect_error(161002, [], g, x.reshape(3, 2))
    assert msg == ("aclnnLogSigmoidBackward: Expected tensor for x to have same size as tensor for grad_output, "
                   "but [3, 2] does not equal [2, 3].")
    out = np.full((2, 4), 5, np.float32)
    expect_error(161002, ["aclnnLogSigmoidBackward", "out", "[2, 4]", "[2, 3]"], g, x, out=out)
    assert np.all(out == 5)
    expect_error(161002, ["x", "[3]", "[2, 3]"], g, x[0])  # no broadcasting


def test_dtype_errors():
    g, x = make((2, 3), np.float32)
    msg = expect_error(161002, [], g, x.astype(np.float16))
    assert msg == "aclnnLogSigmoidBackward: Tensor x expected dtype is DT_FLOAT but found DT_FLOAT16."
    msg = expect_error(161002, [], g.astype(np.int32), x.astype(np.int32))
    assert msg == ("aclnnLogSigmoidBackward: Tensor grad_output not implemented for DT_INT32, should be in dtype "
                   "support list [DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE].")
    out = np.full((2, 3), 9, np.int64)
    expect_error(161002, ["aclnnLogSigmoidBackward", "Tensor out not implemented for DT_INT64"], g, x,
                 out=out)
    assert np.all(out == 9)


@pytest.mark.parametrize("rank", [9, 25])
def test_any_rank_an_acl_tensor_describes(rank):
    # CANN's op_api has no rank limit here (a 9-D pair succeeds); an aclTensor holds 25 dims.
    # Sizes 2 and 3 in many dims, transposed: no dims merge, the kernel walks every one.
    shape = tuple(2 if (rank <= 12 or d % 2) else 1 for d in range(rank - 1)) + (3,)
    g, x = make(shape, np.float32, seed=rank)
    g, x = g.T, x.T  # reversed strides
    got = ascendgrad.log_sigmoid_backward(g, x)
    want = ref.log_sigmoid_backward(g.astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=RTOL[np.float32], atol=1e-30)


def test_rank_above_25():
    g = np.ones((1,) * 26, np.float32)
    expect_error(161002, ["aclnnLogSigmoidBackward", "grad_output", "25 dimensions", "26"], g, g)


def test_out_partial_overlap_is_rejected_and_untouched():
    buf = (np.arange(40, dtype=np.float32).reshape(4, 10) - 20) / 4
    g, x = buf[:, :5], buf[:, 5:].copy()
    out = buf[:, 2:7]  # shares memory with g but is not g
    before = buf.copy()
    msg = expect_error(161002, [], g, x, out=out)
    assert msg == ("aclnnLogSigmoidBackward: Output out partially overlaps input grad_output in memory; use "
                   "separate memory or the identical view (in-place).")
    np.testing.assert_array_equal(buf, before)
    expect_error(161002, ["out", "partially overlaps input x"], x, g, out=out)  # overlaps self
    np.testing.assert_array_equal(buf, before)


def test_out_overlapping_itself_is_rejected():
    g, x = make((4, 5), np.float32)
    out = np.lib.stride_tricks.as_strided(np.zeros(5, np.float32), (4, 5), (0, 4))  # rows share memory
    expect_error(161002, ["out", "overlap itself"], g, x, out=out)


def test_type_errors():
    g, x = make((2, 3), np.float32)
    with pytest.raises(TypeError):
        ascendgrad.log_sigmoid_backward(None, x)
    with pytest.raises(TypeError):
        ascendgrad.log_sigmoid_backward(g, "abc")
    with pytest.raises(TypeError):
        ascendgrad.log_sigmoid_backward(g, x, "abc")
    with pytest.raises(TypeError):
        ascendgrad.log_sigmoid_backward(g, x, out=[0.0] * 6)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        ascendgrad.log_sigmoid_backward(g, x, out=ro)


# ---- raw two-phase API ----

S = aclnn.Status


def test_raw_round_trip():
    g, x = make((4, 6), np.float32)
    out = np.zeros_like(g)
    status, ws, ex = aclnn.log_sigmoid_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x), aclnn.Tensor(x), aclnn.Tensor(out))
    assert (status, ws) == (S.SUCCESS, 0) and isinstance(ex, aclnn.Executor)
    assert aclnn.log_sigmoid_backward(None, ws, ex) == S.SUCCESS
    np.testing.assert_array_equal(out, ascendgrad.log_sigmoid_backward(g, x))
    assert aclnn.log_sigmoid_backward(None, ws, ex) == S.ERR_PARAM_INVALID  # single use
    assert "not live" in aclnn.get_recent_err_msg()


def test_raw_on_a_stream_with_workspace():
    g, x = make((64, 64), np.float64)
    out = np.zeros_like(g)
    status, ws, ex = aclnn.log_sigmoid_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x), aclnn.Tensor(np.zeros(1, np.float16)), aclnn.Tensor(out))
    assert status == S.SUCCESS
    with aclnn.Stream() as stream:
        assert aclnn.log_sigmoid_backward(np.zeros(16, np.uint8), ws, ex, stream) == S.SUCCESS
        assert stream.synchronize() == S.SUCCESS
    check(out, g, x, np.float64)


def test_raw_null_buffer_and_statuses():
    g, x = make((2, 3), np.float32)
    out = np.full((2, 3), 4, np.float32)
    status, ws, ex = aclnn.log_sigmoid_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x), None, aclnn.Tensor(out))
    assert (status, ws, ex) == (S.ERR_PARAM_NULLPTR, 0, None)
    assert aclnn.get_recent_err_msg() == ("aclnnLogSigmoidBackward: Expected a proper Tensor but got null for "
                                          "argument buffer.")
    assert aclnn.get_recent_err_msg() is None
    status, _, ex = aclnn.log_sigmoid_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x.astype(np.float64)), aclnn.Tensor(x), aclnn.Tensor(out))
    assert status == S.ERR_PARAM_INVALID and ex is None
    assert "self" in aclnn.get_recent_err_msg()
    assert aclnn.log_sigmoid_backward(None, 0, None) == S.ERR_PARAM_NULLPTR
    assert np.all(out == 4)


def test_raw_repeatable_executor():
    g, x = make((3, 5), np.float32)
    out = np.zeros_like(g)
    status, ws, ex = aclnn.log_sigmoid_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x), aclnn.Tensor(x), aclnn.Tensor(out))
    assert aclnn.set_executor_repeatable(ex) == S.SUCCESS
    for _ in range(3):
        assert aclnn.log_sigmoid_backward(None, ws, ex) == S.SUCCESS
    assert aclnn.destroy_executor(ex) == S.SUCCESS
    np.testing.assert_array_equal(out, ascendgrad.log_sigmoid_backward(g, x))
