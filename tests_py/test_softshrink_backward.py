"""ascendgrad.softshrink_backward against the float64 reference (bit for bit) and PyTorch: every
dtype pair (bfloat16 via ml_dtypes), the closed band, NaN, broadcasting (0-D, stride-0 views),
strided and negatively strided views, lambd's types and values, out= and in place, errors with
their status and message (out untouched), the raw two-phase API, determinism."""

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn
from ascendgrad import reference as ref

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
NAMES = lambda d: np.dtype(d).name  # noqa: E731
LAMBD_MSG = "aclnnSoftshrinkBackward: lambd should be greater or equal to 0, but found to be "


def make(gshape, xshape, gdtype, xdtype, seed=0, specials=True):
    """Random g in [-3, 3), x in [-2, 2), x's specials: ±λ for λ in (0.5, 1.25), NaN, ±inf, ±0,
    subnormals, ±1e4, and values a hair either side of ±0.5."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(-3, 3, gshape)
    x = rng.uniform(-2, 2, xshape)
    if specials and x.size:
        sp = [0.5, -0.5, 1.25, -1.25, np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e4, -1e4,
              np.nextafter(0.5, 1), -np.nextafter(0.5, 1), np.nextafter(0.5, 0), 0.5 * (1 + 2**-8), 0.5 * (1 - 2**-9)]
        flat = x.reshape(-1)
        k = min(flat.size, len(sp))
        flat[:k] = sp[:k]
    if specials and g.size > 3:
        g.reshape(-1)[1:4] = [np.nan, np.inf, -0.0]
    return g.astype(gdtype), x.astype(xdtype)


def result_dtype(gdtype, xdtype):
    try:
        return np.result_type(np.dtype(gdtype), np.dtype(xdtype))
    except TypeError:  # float16 with bfloat16: float32
        return np.dtype(np.float32)


def expected(g, x, lambd, out_dtype):
    """The reference on the rounded inputs, λ rounded to the compute type, rounded into out_dtype."""
    wide = np.float64 in (g.dtype, x.dtype)
    lam = float(lambd) if wide else float(np.float32(lambd))
    return ref.softshrink_backward(g.astype(np.float64), x.astype(np.float64), lam).astype(out_dtype)


def assert_same(got, want):
    """Bit-level agreement: equal values, NaN where NaN, zeros of the same sign."""
    a, b = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a) | np.isnan(a), np.signbit(b) | np.isnan(b))


@pytest.mark.parametrize("gdtype", FLOATS, ids=NAMES)
@pytest.mark.parametrize("xdtype", FLOATS, ids=NAMES)
def test_every_dtype_pair(gdtype, xdtype):
    for shape in [(), (7,), (5, 9), (4, 1000)]:
        for lambd in (0.5, 1.25, 0.0):
            g, x = make(shape, shape, gdtype, xdtype)
            r = ascendgrad.softshrink_backward(g, x, lambd)
            assert r.dtype == result_dtype(gdtype, xdtype) and r.shape == shape
            assert_same(r, expected(g, x, lambd, r.dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
def test_closed_band_nan_and_infinite_g(dtype):
    x = np.array([0.5, -0.5, 0.0, -0.0, 0.25, np.nan, np.inf, -np.inf, 1e4, 0.25, 0.25, 1.0, 1.0, np.nan], dtype)
    g = np.array([3.0, 3.0, 3.0, 3.0, -3.0, 1.0, 2.0, -2.0, 4.0, np.inf, np.nan, np.nan, -0.0, 0.0], dtype)
    r = ascendgrad.softshrink_backward(g, x, 0.5)
    assert_same(r, np.array([0, 0, 0, 0, 0, np.nan, 2, -2, 4, 0, 0, np.nan, -0.0, np.nan], dtype))
    # default λ is 0.5
    assert_same(ascendgrad.softshrink_backward(g, x), r)


@pytest.mark.parametrize("n", [1, 3, 8, 17, 64, 1001])
def test_nan_is_nan_on_every_path(n):
    x = np.where(np.arange(n) % 3 == 0, np.nan, np.where(np.arange(n) % 3 == 1, 0.25, 1.0))
    want = np.where(np.arange(n) % 3 == 0, np.nan, np.where(np.arange(n) % 3 == 1, 0.0, 2.0))
    for dtype in FLOATS:
        xd = x.astype(dtype)
        g = np.full(n, 2, dtype)
        assert_same(ascendgrad.softshrink_backward(g, xd), want.astype(dtype))            # contiguous
        assert_same(ascendgrad.softshrink_backward(g, xd[::-1].copy()[::-1]), want.astype(dtype))  # reversed
        assert_same(ascendgrad.softshrink_backward(np.float32(2), xd), want.astype(np.float32)
                    if dtype != np.float64 else want)                                       # broadcast
        col = ascendgrad.softshrink_backward(np.full((1, 5), 2, dtype), xd[:, None])      # column
        assert_same(col, np.repeat(want[:, None], 5, axis=1).astype(dtype))


@pytest.mark.parametrize(
    "gshape,xshape",
    [((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((2, 3, 4), (4,)), ((), (2, 3)), ((2, 3), ()), ((), ()),
     ((2, 1, 4), (3, 1)), ((1,), (5,)), ((5, 1, 1), (1, 6, 7)), ((3, 40), (3, 1)), ((3, 1), (3, 40)),
     ((1,) * 7 + (2,), (3,) + (1,) * 7)],
)
def test_broadcasting(gshape, xshape):
    for gdtype, xdtype in [(np.float32, np.float32), (np.float16, np.float64), (BF16, np.float32),
                           (np.float16, BF16)]:
        g, x = make(gshape, xshape, gdtype, xdtype, seed=len(gshape))
        r = ascendgrad.softshrink_backward(g, x, 0.5)
        assert r.shape == np.broadcast_shapes(gshape, xshape)
        assert r.dtype == result_dtype(gdtype, xdtype)
        assert_same(r, expected(g, x, 0.5, r.dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
@pytest.mark.parametrize(
    "view",
    [lambda a: a[:, ::2], lambda a: a[::-1], lambda a: a[:, ::-3], lambda a: a.T,
     lambda a: a[::-2, 1::3].T, lambda a: np.broadcast_to(a[:1], a.shape),
     lambda a: np.broadcast_to(a[:, :1], a.shape), lambda a: a[::-1, ::-1]],
    ids=["step2", "reversed", "neg-step3", "transposed", "mixed", "stride0-rows", "stride0-cols", "reversed2"],
)
def test_strided_views(view, dtype):
    base_g, base_x = make((12, 30), (12, 30), dtype, dtype, seed=3)
    g, x = view(base_g), view(base_x)
    for gg, xx in [(g, x), (np.ascontiguousarray(g), x), (g, np.ascontiguousarray(x))]:
        assert_same(ascendgrad.softshrink_backward(gg, xx), expected(g, x, 0.5, dtype))


def test_lambd_types_and_values():
    g = np.arange(1, 7, dtype=np.float32)
    x = np.array([0.0, -1.0, 1.5, 2.0, -2.5, np.inf], np.float32)
    cases = [(1.0, [0, 0, 3, 4, 5, 6]), (2, [0, 0, 0, 0, 5, 6]), (np.float16(1.5), [0, 0, 0, 4, 5, 6]),
             (BF16(1.0), [0, 0, 3, 4, 5, 6]), (np.float32(2.0), [0, 0, 0, 0, 5, 6]), (np.int8(0), [0, 2, 3, 4, 5, 6]),
             (np.uint64(3), [0, 0, 0, 0, 0, 6]), (0, [0, 2, 3, 4, 5, 6]), (-0.0, [0, 2, 3, 4, 5, 6]),
             (np.inf, [0, 0, 0, 0, 0, 0]), (np.array(1.0), [0, 0, 3, 4, 5, 6])]
    for lambd, want in cases:
        assert_same(ascendgrad.softshrink_backward(g, x, lambd), np.array(want, np.float32))
        assert_same(ascendgrad.softshrink_backward(g, x, lambd=lambd), np.array(want, np.float32))


def test_lambd_rounded_to_the_compute_type():
    # λ = 0.1 (float64): float32 compute rounds it to 0.1f, so x = 0.1f is in the band; with a
    # float64 operand λ stays 0.1 and 0.1f > 0.1 passes.
    x = np.array([0.1, -0.1], np.float32)
    assert_same(ascendgrad.softshrink_backward(np.ones(2, np.float32), x, 0.1), [0.0, 0.0])
    assert_same(ascendgrad.softshrink_backward(np.ones(2, np.float64), x, 0.1), [1.0, 1.0])
    x64 = np.array([0.1, np.nextafter(0.1, 1)])
    assert_same(ascendgrad.softshrink_backward(np.ones(2, np.float16), x64, 0.1), [0.0, 1.0])


@pytest.mark.parametrize("in_dtype", FLOATS, ids=NAMES)
@pytest.mark.parametrize("out_dtype", FLOATS, ids=NAMES)
def test_out_any_float_dtype(in_dtype, out_dtype):
    g, x = make((6, 40), (40,), in_dtype, in_dtype)
    out = np.full((6, 40), 7, dtype=out_dtype)
    r = ascendgrad.softshrink_backward(g, x, 0.5, out=out)
    assert r is out
    assert_same(out, expected(g, x, 0.5, out_dtype))


def test_strided_out_outside_untouched():
    g, x = make((8, 10), (10,), np.float32, np.float16)
    base = np.full((16, 20), 7, np.float64)
    out = base[::-2, ::2]
    assert ascendgrad.softshrink_backward(g, x, out=out) is out
    assert_same(out, expected(g, x, 0.5, np.float64))
    assert np.all(base[::-2, 1::2] == 7) and np.all(base[-2::-2] == 7)


@pytest.mark.parametrize("which", ["grad_output", "x"])
@pytest.mark.parametrize("dtype", FLOATS, ids=NAMES)
def test_in_place(which, dtype):
    g, x = make((5, 33), (5, 33), dtype, dtype)
    want = ascendgrad.softshrink_backward(g, x)
    target = g if which == "grad_output" else x
    assert ascendgrad.softshrink_backward(g, x, out=target) is target
    assert_same(target, want)


def test_in_place_strided_with_broadcast_x():
    base = make((10, 20), (10, 20), np.float32, np.float32)[0]
    g = base[::-2, ::2]
    x = make((10,), (10,), np.float32, np.float32, seed=5)[1]
    want = expected(g.copy(), x, 0.5, np.float32)
    assert ascendgrad.softshrink_backward(g, x, out=g) is g
    assert_same(g, want)


def test_python_numbers_take_the_other_dtype():
    x = np.array([0.25, 1.0, -2.0], BF16)
    r = ascendgrad.softshrink_backward([1, 2, 3], x)
    assert r.dtype == BF16
    assert_same(r, np.array([0, 2, 3], BF16))
    r = ascendgrad.softshrink_backward(2.0, np.array([0.25, 1.0], np.float16))  # 0-D g broadcast
    assert r.dtype == np.float16 and r.shape == (2,)
    assert_same(r, np.array([0, 2], np.float16))
    g = np.array([1, 2], np.float16)
    r = ascendgrad.softshrink_backward(g, [0.1, 3.0])  # sequence x takes g's dtype
    assert r.dtype == np.float16
    assert_same(r, np.array([0, 2], np.float16))
    assert ascendgrad.softshrink_backward(np.float64(1), g).dtype == np.float64  # NumPy scalars keep theirs
    assert ascendgrad.softshrink_backward([1.0], [2.0]).dtype == np.float64


def test_empty():
    for gshape, xshape in [((0,), (0,)), ((0, 4), (1, 4)), ((2, 1), (2, 0)), ((), (3, 0)), ((0,), (1,))]:
        r = ascendgrad.softshrink_backward(np.zeros(gshape, np.float32), np.zeros(xshape, np.float16))
        assert r.shape == np.broadcast_shapes(gshape, xshape) and r.dtype == np.float32


def test_cann_example():
    g = np.arange(8, dtype=np.float32).reshape(4, 2)
    x = np.array([1, 1, 1, 2, 1, 2, 3, 3], np.float32).reshape(4, 2)
    r = ascendgrad.softshrink_backward(g, x, np.float32(1.2))
    np.testing.assert_array_equal(r, [[0, 0], [0, 3], [0, 5], [6, 7]])


# ---- PyTorch ----

def test_matches_torch():
    torch = pytest.importorskip("torch")
    tmap = {np.float16: torch.float16, BF16: torch.bfloat16, np.float32: torch.float32, np.float64: torch.float64}
    for dtype in FLOATS:
        for gshape, xshape in [((16, 100), (16, 100)), ((3, 1), (1, 4)), ((5,), (2, 3, 5)), ((), (7,))]:
            for lambd in (0.5, 1.25, 0.0):
                g, x = make(gshape, xshape, dtype, dtype, specials=False)
                x.reshape(-1)[: min(4, x.size)] = [0.5, -0.5, 1.25, -1.25][: min(4, x.size)]  # band edges, no NaN
                tg = torch.from_numpy(g.astype(np.float64)).to(tmap[dtype])
                tx = torch.from_numpy(x.astype(np.float64)).to(tmap[dtype])
                t = torch.ops.aten.softshrink_backward(tg, tx, lambd).double().numpy()
                ours = ascendgrad.softshrink_backward(g, x, lambd)
                np.testing.assert_array_equal(ours.astype(np.float64), t)


# ---- determinism ----

def test_bitwise_identical_for_any_thread_count():
    cases = [make((256, 1024), (256, 1024), np.float32, np.float32), make((1, 1024), (200, 1024), np.float16, BF16),
             make((300, 1), (300, 500), np.float64, np.float32), make((300, 400), (300, 400), np.float32, np.float32)]
    views = [lambda a: a, lambda a: a, lambda a: a, lambda a: a[::-1, ::2].T]
    before = ascendgrad.get_num_threads()
    try:
        for (g, x), view in zip(cases, views):
            results = []
            for n in (1, 2, 3):
                ascendgrad.set_num_threads(n)
                results.append(ascendgrad.softshrink_backward(view(g), view(x)).tobytes())
            assert all(r == results[0] for r in results)
    finally:
        ascendgrad.set_num_threads(before)


# ---- errors ----

def expect_error(status, fragments, *args, **kwargs):
    with pytest.raises(ascendgrad.AclnnError) as e:
        ascendgrad.softshrink_backward(*args, **kwargs)
    assert e.value.status == status
    assert isinstance(e.value, ValueError)
    for f in fragments:
        assert f in str(e.value), str(e.value)
    return str(e.value)


def test_lambd_errors():
    g, x = make((2, 3), (2, 3), np.float32, np.float32)
    out = np.full((2, 3), 5, np.float32)
    assert expect_error(161002, [], g, x, -0.5, out=out) == LAMBD_MSG + "[-0.500000]."
    assert expect_error(161002, [], g, x, -3, out=out) == LAMBD_MSG + "[-3.000000]."
    assert expect_error(161002, [], g, x, -np.inf, out=out) == LAMBD_MSG + "[-inf]."
    assert expect_error(161002, [LAMBD_MSG + "[", "nan]."], g, x, np.nan, out=out)
    assert expect_error(161002, [LAMBD_MSG], g, x, np.float16(-1), out=out).endswith("[-1.000000].")
    expect_error(161001, ["aclnnSoftshrinkBackward", "lambd", "null"], g, x, None, out=out)
    expect_error(161002, ["Scalar lambd not implemented for DT_BOOL"], g, x, True, out=out)
    assert np.all(out == 5)
    for bad in ["abc", [0.5, 0.6], object()]:
        with pytest.raises(TypeError):
            ascendgrad.softshrink_backward(g, x, bad)


def test_shape_errors_name_both_shapes():
    g, x = make((2, 3), (4,), np.float32, np.float32)
    msg = expect_error(161002, [], g, x)
    assert msg == "aclnnSoftshrinkBackward: The size of tensor grad_output [2, 3] must match the size of tensor x [4]."
    out = np.full((2, 4), 5, np.float32)
    msg = expect_error(161002, [], g, x[:3], out=out)
    assert msg == "aclnnSoftshrinkBackward: Expected tensor for out to have size [2, 3], but got [2, 4]."
    assert np.all(out == 5)
    g13, x31 = make((1, 3), (3, 1), np.float32, np.float32)
    expect_error(161002, ["out", "[3, 3]", "[1, 3]"], g13, x31, out=g13)  # in place needs the full shape
    expect_error(161002, ["[0]", "[2]"], np.zeros(0, np.float32), np.zeros(2, np.float32))


def test_dtype_errors():
    g, x = make((2, 3), (2, 3), np.float32, np.float32, specials=False)
    msg = expect_error(161002, [], g.astype(np.int32), x)
    assert msg == ("aclnnSoftshrinkBackward: Tensor grad_output not implemented for DT_INT32, should be in dtype "
                   "support list [DT_FLOAT16, DT_BF16, DT_FLOAT, DT_DOUBLE].")
    expect_error(161002, ["Tensor x not implemented for DT_INT64"], g, x.astype(np.int64))
    out = np.full((2, 3), 9, np.int16)
    expect_error(161002, ["Tensor out not implemented for DT_INT16"], g, x, out=out)
    assert np.all(out == 9)


def test_rank_above_8():
    g = np.ones((1,) * 9, np.float32)
    expect_error(161002, ["grad_output", "8 dimensions", "9"], g, np.ones(1, np.float32))


def test_out_partial_overlap_is_rejected_and_untouched():
    buf = (np.arange(40, dtype=np.float32).reshape(4, 10) - 20) / 4
    g, x = buf[:, :5], buf[:, 5:].copy()
    out = buf[:, 2:7]
    before = buf.copy()
    msg = expect_error(161002, [], g, x, out=out)
    assert msg == ("aclnnSoftshrinkBackward: Output out partially overlaps input grad_output in memory; use "
                   "separate memory or the identical view (in-place).")
    expect_error(161002, ["partially overlaps input x"], x, g, out=out)
    # a broadcast gradOutput whose memory is out's first row
    row = buf[0, :5]
    expect_error(161002, ["partially overlaps input grad_output"], row, x, out=buf[:, :5])
    np.testing.assert_array_equal(buf, before)
    selfish = np.lib.stride_tricks.as_strided(np.zeros(5, np.float32), (4, 5), (0, 4))
    expect_error(161002, ["out", "overlap itself"], g, x, out=selfish)


def test_type_errors():
    g, x = make((2, 3), (2, 3), np.float32, np.float32)
    with pytest.raises(TypeError):
        ascendgrad.softshrink_backward(None, x)
    with pytest.raises(TypeError):
        ascendgrad.softshrink_backward(g, "abc")
    with pytest.raises(TypeError):
        ascendgrad.softshrink_backward(g, x, out=[0.0] * 6)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        ascendgrad.softshrink_backward(g, x, out=ro)


# ---- raw two-phase API ----

S = aclnn.Status


def test_raw_round_trip():
    g, x = make((3, 1), (1, 4), np.float32, np.float16)
    out = np.zeros((3, 4), np.float32)
    status, ws, ex = aclnn.softshrink_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x), aclnn.Scalar(0.5, np.float32), aclnn.Tensor(out))
    assert (status, ws) == (S.SUCCESS, 0) and isinstance(ex, aclnn.Executor)
    assert aclnn.softshrink_backward(None, ws, ex) == S.SUCCESS
    assert_same(out, expected(g, x, 0.5, np.float32))
    assert aclnn.softshrink_backward(None, ws, ex) == S.ERR_PARAM_INVALID  # single use
    assert "not live" in aclnn.get_recent_err_msg()


def test_raw_scalar_dtypes_and_stream():
    g, x = make((64, 64), (64, 64), np.float64, np.float64)
    for value, dtype in [(1.25, np.float64), (1.25, np.float16), (1, np.int32), (1.25, aclnn.DataType.ACL_BF16)]:
        out = np.zeros_like(g)
        status, ws, ex = aclnn.softshrink_backward_get_workspace_size(
            aclnn.Tensor(g), aclnn.Tensor(x), aclnn.Scalar(value, dtype), aclnn.Tensor(out))
        assert status == S.SUCCESS, aclnn.get_recent_err_msg()
        with aclnn.Stream() as stream:
            assert aclnn.softshrink_backward(np.zeros(8, np.uint8), ws, ex, stream) == S.SUCCESS
            assert stream.synchronize() == S.SUCCESS
        assert_same(out, expected(g, x, float(value), np.float64))


def test_raw_statuses_and_messages():
    g, x = make((2, 3), (2, 3), np.float32, np.float32)
    out = np.full((2, 3), 4, np.float32)
    status, ws, ex = aclnn.softshrink_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(x), None,
                                                                  aclnn.Tensor(out))
    assert (status, ws, ex) == (S.ERR_PARAM_NULLPTR, 0, None)
    msg = aclnn.get_recent_err_msg()
    assert "aclnnSoftshrinkBackward" in msg and "lambd" in msg
    assert aclnn.get_recent_err_msg() is None
    status, _, ex = aclnn.softshrink_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(x), aclnn.Scalar(-2, np.float32), aclnn.Tensor(out))
    assert status == S.ERR_PARAM_INVALID and ex is None
    assert aclnn.get_recent_err_msg() == LAMBD_MSG + "[-2.000000]."
    status, _, _ = aclnn.softshrink_backward_get_workspace_size(
        None, aclnn.Tensor(x), aclnn.Scalar(1, np.float32), aclnn.Tensor(out))
    assert status == S.ERR_PARAM_NULLPTR
    assert aclnn.get_recent_err_msg() == ("aclnnSoftshrinkBackward: Expected a proper Tensor but got null for "
                                          "argument gradOutput.")
    assert aclnn.softshrink_backward(None, 0, None) == S.ERR_PARAM_NULLPTR
    assert np.all(out == 4)
    with pytest.raises(TypeError):
        aclnn.softshrink_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(x), 0.5, aclnn.Tensor(out))
