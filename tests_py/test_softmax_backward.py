"""ascendgrad.softmax_backward against the float64 reference and PyTorch: every dtype, dim and
layout, out= in every float dtype, errors with their status and message, determinism."""

import threading

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import reference as ref

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
# Per-dtype tolerance relative to the row's scale: a few units of the compute or storage roundoff.
TOL = {np.float16: 2e-3, BF16: 2e-2, np.float32: 2e-6, np.float64: 1e-13}


def make(shape, dim, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2
    y = ref.softmax(x, dim) if x.ndim else np.ones(())
    g = rng.standard_normal(shape)
    return g.astype(dtype), y.astype(dtype)


def check(result, g, y, dim, dtype):
    expect = ref.softmax_backward(g.astype(np.float64), y.astype(np.float64), dim)
    scale = 1 + np.abs(expect).max(initial=0)
    np.testing.assert_allclose(result.astype(np.float64), expect, rtol=0, atol=TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "shape,dim",
    [((7,), 0), ((5, 9), -1), ((5, 9), 0), ((3, 4, 5), 1), ((3, 4, 5), -2), ((2, 3, 4, 5), 0),
     ((4, 300, 70), 1), ((3, 5000), 1), ((), 0), ((), -1), ((1, 1, 1), 2),
     ((2, 1, 2, 1, 2, 1, 2, 3), 7), ((2, 1, 2, 1, 2, 1, 2, 3), 3)],
)
def test_matches_reference(shape, dim, dtype):
    g, y = make(shape, dim, dtype)
    r = ascendgrad.softmax_backward(g, y, dim)
    assert r.dtype == np.dtype(dtype) and r.shape == g.shape
    check(r, g, y, dim, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_default_dim_is_last(dtype):
    g, y = make((4, 6), -1, dtype)
    np.testing.assert_array_equal(ascendgrad.softmax_backward(g, y), ascendgrad.softmax_backward(g, y, 1))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "view",
    [lambda a: a[:, ::2], lambda a: a[::-1], lambda a: a[:, ::-3], lambda a: a.T,
     lambda a: a[::-2, 1::3].T, lambda a: np.broadcast_to(a[:1], a.shape)],
    ids=["step2", "reversed", "neg-step3", "transposed", "mixed", "broadcast"],
)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_strided_views(view, dim, dtype):
    base_g, base_y = make((12, 30), 1, np.float64, seed=3)
    g, y = view(base_g).astype(dtype, copy=False), view(base_y).astype(dtype, copy=False)
    if np.dtype(dtype) != np.float64:  # keep the view's strides after the dtype change
        g, y = view(base_g.astype(dtype)), view(base_y.astype(dtype))
    r = ascendgrad.softmax_backward(g, y, dim)
    check(r, g, y, dim, dtype)


@pytest.mark.parametrize("in_dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("out_dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_out_any_float_dtype(in_dtype, out_dtype):
    g, y = make((6, 40), 1, in_dtype)
    out = np.full(g.shape, 7, dtype=out_dtype)
    r = ascendgrad.softmax_backward(g, y, 1, out=out)
    assert r is out
    loosest = max(in_dtype, out_dtype, key=lambda d: TOL[d])
    check(out, g, y, 1, loosest)
    if in_dtype == np.float64 and out_dtype != np.float64:
        # computed in float64, rounded once: equals the correctly rounded float64 result
        np.testing.assert_array_equal(out, ascendgrad.softmax_backward(g, y, 1).astype(out_dtype))


def test_half_inputs_computed_in_float32():
    g, y = make((8, 64), 1, np.float16)
    wide = ascendgrad.softmax_backward(g, y, 1, out=np.empty(g.shape, np.float64))
    narrow = ascendgrad.softmax_backward(g, y, 1)
    # the f64 result is not merely the f16 one widened: it keeps float32 digits
    assert np.any(wide != narrow.astype(np.float64))
    np.testing.assert_array_equal(wide.astype(np.float16), narrow)


@pytest.mark.parametrize("which", ["grad_output", "output"])
def test_in_place(which):
    g, y = make((5, 33), 1, np.float32)
    expect = ascendgrad.softmax_backward(g, y, 1)
    target = g if which == "grad_output" else y
    r = ascendgrad.softmax_backward(g, y, 1, out=target)
    assert r is target
    np.testing.assert_array_equal(target, expect)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for dtype, tdtype in [(np.float32, torch.float32), (np.float64, torch.float64)]:
        for shape, dim in [((16, 100), 1), ((8, 50, 9), 1), ((6, 7), 0)]:
            g, y = make(shape, dim, dtype)
            t = torch.ops.aten._softmax_backward_data(torch.from_numpy(g), torch.from_numpy(y), dim, tdtype)
            np.testing.assert_allclose(ascendgrad.softmax_backward(g, y, dim), t.numpy(),
                                       rtol=0, atol=TOL[dtype] * 4)


def test_matches_torch_half_types():
    torch = pytest.importorskip("torch")
    for dtype, tdtype in [(np.float16, torch.float16), (BF16, torch.bfloat16)]:
        g, y = make((16, 100), 1, dtype)
        tg = torch.from_numpy(g.astype(np.float32)).to(tdtype)
        ty = torch.from_numpy(y.astype(np.float32)).to(tdtype)
        t = torch.ops.aten._softmax_backward_data(tg, ty, 1, tdtype).float().numpy()
        ours = ascendgrad.softmax_backward(g, y, 1).astype(np.float32)
        # both compute in float32 and round once: at most one unit in the last place apart
        np.testing.assert_allclose(ours, t, rtol=2 * float(ml_dtypes.finfo(dtype).eps), atol=1e-6)


def test_empty():
    for shape, dim in [((0,), 0), ((3, 0), 1), ((0, 4), 1)]:
        g = np.zeros(shape, np.float32)
        assert ascendgrad.softmax_backward(g, g, dim).shape == shape


def test_array_likes():
    r = ascendgrad.softmax_backward([[1.0, 2.0]], [[0.25, 0.75]])
    np.testing.assert_allclose(r, ref.softmax_backward(np.array([[1.0, 2.0]]), np.array([[0.25, 0.75]])))


def test_byteswapped_and_unaligned_inputs_are_copied():
    g, y = make((4, 8), 1, np.float64)
    swapped = g.astype(g.dtype.newbyteorder(">"))
    raw = np.zeros(g.size * 8 + 1, np.uint8)[1:].view(np.float64).reshape(g.shape)  # misaligned
    raw[...] = y
    check(ascendgrad.softmax_backward(swapped, raw, 1), g, y, 1, np.float64)


def test_bitwise_identical_for_any_thread_count():
    cases = [make((64, 4096), 1, np.float32), make((64, 1024, 8), 1, np.float32),
             make((64, 1024, 8), 1, BF16)]
    before = ascendgrad.get_num_threads()
    try:
        for (g, y), dim in zip(cases, [1, 1, 1]):
            results = []
            for n in (1, 2, 3, 7):
                ascendgrad.set_num_threads(n)
                assert ascendgrad.get_num_threads() == n
                results.append(ascendgrad.softmax_backward(g, y, dim).tobytes())
            assert all(r == results[0] for r in results)
    finally:
        ascendgrad.set_num_threads(before)


@pytest.mark.parametrize("dtype, shape", [(np.float32, (400, 40000)), (BF16, (12000, 2048))],
                         ids=["float32", "bfloat16"])
def test_each_line_as_alone_whatever_the_loop_order(dtype, shape):
    # Contiguous lines are summed and written in two passes or pipelined, by line length and by
    # whether the data outgrow the last-level cache (these shapes: 74-192 MiB, more than most
    # hold; a line or two: less). f32 lines of 40000 (160 KiB) are pipelined from memory and in
    # two passes from cache; bf16 lines of 2048 (4 KiB) the other way round (on AMD CPUs with
    # AVX-512, f32 the same, bf16 in two passes both ways). Each line's result is bitwise the same.
    g, y = make(shape, 1, dtype)
    got = ascendgrad.softmax_backward(g, y, 1)
    for i in (0, 1, shape[0] // 2 + 1, shape[0] - 1):
        assert got[i].tobytes() == ascendgrad.softmax_backward(g[i:i + 1], y[i:i + 1], 1).tobytes(), i
        assert got[i].tobytes() == ascendgrad.softmax_backward(g[i:i + 2], y[i:i + 2], 1)[0].tobytes(), i


@pytest.mark.parametrize("shift", [0, 1, 4], ids=["numpy-offset", "shift-1", "shift-4"])
@pytest.mark.parametrize("dtype, shape", [(np.float32, (2500, 4096)), (np.float32, (300, 32003)), (np.float16, (2500, 4096)),
                                          (BF16, (2500, 4096)), (BF16, (600, 32003))],
                         ids=["f32-4096", "f32-32003", "f16-4096", "bf16-4096", "bf16-32003"])
def test_each_line_as_alone_into_a_resident_out(dtype, shape, shift):
    # Lines past the last-level cache into an out= whose pages are in memory: on AMD CPUs with
    # AVX-512 written by streaming stores (f32 lines, and half types' of 8 KiB and more; bfloat16's
    # by pairs of vectors from a pair's alignment) where every row starts 16 bytes aligned (the
    # partial vectors at a row's ends by 16 bytes), elsewhere and otherwise by ordinary stores.
    # Lines of 32003 start at every alignment and shift 1 puts all rows off 16 bytes: ordinary
    # stores. Bitwise the same either way.
    g, y = make(shape, 1, dtype)
    out = at_shift(np.full(shape, np.nan, dtype), shift)  # every page touched
    r = ascendgrad.softmax_backward(g, y, 1, out=out)
    assert r is out
    for i in (0, 1, 2, 3, shape[0] // 2 + 1, shape[0] - 1):
        assert out[i].tobytes() == ascendgrad.softmax_backward(g[i:i + 1], y[i:i + 1], 1).tobytes(), i
    check(out[-3:], g[-3:], y[-3:], 1, dtype)


def at_shift(a, shift):
    """A contiguous copy of a whose data start `shift` elements past its own allocation's start."""
    raw = np.zeros(a.size + shift, a.dtype)
    out = raw[shift:].reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.parametrize("dtype, out_dtype", [(np.float32, np.float32), (np.float16, np.float16),
                                              (np.float64, np.float64), (np.float32, BF16), (BF16, BF16)],
                         ids=["float32", "float16", "float64", "float32-bfloat16", "bfloat16"])
@pytest.mark.parametrize("in_shift, out_shift", [(0, 0), (0, 3), (4, 4), (1, 13), (5, 0)])
def test_middle_dim_streamed_at_any_offset(dtype, out_dtype, in_shift, out_shift):
    # An output of 8 MiB and more, already in memory, is written with streaming stores, which need
    # aligned addresses: each row of a block (4100 columns: 8 blocks and a rest) by whole vectors
    # from its first aligned element, the ends by 16 bytes, the inputs' vectors at their own
    # alignment. Whatever the arrays' offsets, every element is as when its outer slice is computed
    # alone (in cache: ordinary stores).
    a = (8 << 20) // (64 * 4100 * np.dtype(out_dtype).itemsize) + 1
    g, y = make((a, 64, 4100), 1, dtype)
    g, y = at_shift(g, in_shift), at_shift(y, in_shift)
    out = at_shift(np.zeros(g.shape, out_dtype), out_shift)  # written: its pages in memory
    assert out.nbytes >= 8 << 20
    r = ascendgrad.softmax_backward(g, y, 1, out=out)
    for i in range(a):
        alone = ascendgrad.softmax_backward(g[i:i + 1], y[i:i + 1], 1, out=np.empty((1, 64, 4100), out_dtype))
        assert r[i].tobytes() == alone[0].tobytes(), i
    check(r[:1], g[:1], y[:1], 1, max(dtype, out_dtype, key=lambda d: TOL[d]))


@pytest.mark.parametrize("shape", [(3, 7, 77), (9, 64, 4100)], ids=["in-cache", "streamed"])
@pytest.mark.parametrize("which", ["grad_output", "output"])
def test_middle_dim_in_place(shape, which):
    # Rows of 77 (not a whole number of vectors on any path) and of 4100 in blocks: the last vector
    # of a block row overlaps the one before; where out is an input, it must not read what that
    # one wrote.
    g, y = make(shape, 1, np.float32)
    expect = ascendgrad.softmax_backward(g, y, 1)
    target = g if which == "grad_output" else y
    assert ascendgrad.softmax_backward(g, y, 1, out=target) is target
    assert target.tobytes() == expect.tobytes()


def test_threads_give_serial_results():
    cases = [make((32, 2000), 1, np.float32, seed=s) for s in range(8)]
    serial = [ascendgrad.softmax_backward(g, y, 1) for g, y in cases]
    got = [None] * len(cases)

    def work(i):
        for _ in range(5):
            got[i] = ascendgrad.softmax_backward(*cases[i], 1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(serial, got):
        np.testing.assert_array_equal(a, b)


# ---- errors ----

def expect_error(status, fragments, *args, **kwargs):
    with pytest.raises(ascendgrad.AclnnError) as e:
        ascendgrad.softmax_backward(*args, **kwargs)
    assert e.value.status == status
    assert isinstance(e.value, ValueError)
    for f in fragments:
        assert f in str(e.value), str(e.value)


def test_dim_out_of_range():
    g, y = make((2, 3), 1, np.float32)
    expect_error(161002, ["aclnnSoftmaxBackward", "provided dim 2 not in the range of input size 2."], g, y, 2)
    expect_error(161002, ["provided dim -3 not in the range of input size 2."], g, y, -3)
    s = np.float32(1.0)
    expect_error(161002, ["provided dim 1 not in the range of input size 1."], np.asarray(s), np.asarray(s), 1)


def test_shape_mismatch_names_both_shapes():
    g, _ = make((2, 3), 1, np.float32)
    _, y = make((3, 2), 1, np.float32)
    expect_error(161002, ["output", "grad_output", "[3, 2]", "[2, 3]"], g, y, 1)
    out = np.full((2, 4), 5, np.float32)
    expect_error(161002, ["out", "[2, 4]", "[2, 3]"], g, g, 1, out=out)
    assert np.all(out == 5)


def test_dtype_errors():
    g, y = make((2, 3), 1, np.float32)
    expect_error(161002, ["output", "DT_FLOAT", "DT_DOUBLE"], g, y.astype(np.float64), 1)
    expect_error(161002, ["grad_output", "not implemented for DT_INT32", "dtype support list"],
                 g.astype(np.int32), y.astype(np.int32), 1)
    out = np.zeros((2, 3), np.int64)
    expect_error(161002, ["out", "DT_INT64"], g, y, 1, out=out)


def test_rank_above_8():
    g = np.ones((1,) * 9, np.float32)
    expect_error(161002, ["grad_output", "8"], g, g, 0)


def test_out_partial_overlap_is_rejected_and_untouched():
    buf = np.arange(40, dtype=np.float32).reshape(4, 10) / 40
    g, y = buf[:, :5], buf[:, 5:].copy()
    out = buf[:, 2:7]  # shares memory with g but is not g
    before = buf.copy()
    expect_error(161002, ["out", "overlap"], g, y, 1, out=out)
    np.testing.assert_array_equal(buf, before)


def test_out_overlapping_itself_is_rejected():
    g, y = make((4, 5), 1, np.float32)
    out = np.lib.stride_tricks.as_strided(np.zeros(5, np.float32), (4, 5), (0, 4))  # rows share memory
    expect_error(161002, ["out", "overlap"], g, y, 1, out=out)


def test_type_errors():
    g, y = make((2, 3), 1, np.float32)
    with pytest.raises(TypeError):
        ascendgrad.softmax_backward(None, y, 1)
    with pytest.raises(TypeError):
        ascendgrad.softmax_backward("abc", y, 1)
    with pytest.raises(TypeError):
        ascendgrad.softmax_backward(g, y, 1, out=[0.0] * 6)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        ascendgrad.softmax_backward(g, y, 1, out=ro)
