"""Inputs and out= from PyTorch tensors, DLPack and __array__ objects: read and written where
they lie (no copy), bfloat16 included; dtypes kept; ascendgrad.asarray."""

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import reference as ref

torch = pytest.importorskip("torch")
BF16 = ml_dtypes.bfloat16


def addr(t):
    return t.data_ptr()


@pytest.mark.parametrize("tdt", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_asarray_views_torch_memory(tdt):
    t = torch.randn(4, 6).to(tdt)
    a = ascendgrad.asarray(t)
    assert a.ctypes.data == addr(t) and a.shape == (4, 6)
    assert a.dtype == (BF16 if tdt == torch.bfloat16 else np.dtype(str(tdt).replace("torch.", "")))
    t[1, 2] = 7.0  # same memory: the view sees the write
    assert float(a[1, 2]) == 7.0
    tt = t.T  # non-contiguous: strides kept, no copy
    v = ascendgrad.asarray(tt)
    assert v.ctypes.data == addr(tt) and v.strides == tuple(s * t.element_size() for s in tt.stride())


def test_asarray_others():
    base = np.arange(6.0)
    assert ascendgrad.asarray(base) is base

    class DLPackOnly:  # a producer that only speaks DLPack
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    assert np.shares_memory(ascendgrad.asarray(DLPackOnly(base)), base)

    class ArrayOnly:
        def __array__(self, dtype=None, copy=None):
            return base

    assert np.shares_memory(ascendgrad.asarray(ArrayOnly()), base)
    assert ascendgrad.asarray([1, 2]).tolist() == [1, 2]


@pytest.mark.parametrize("tdt", [torch.float32, torch.bfloat16], ids=str)
def test_kernels_read_tensors_in_place(tdt, monkeypatch):
    g, x = torch.randn(5, 7, dtype=torch.float64).to(tdt), torch.randn(5, 7, dtype=torch.float64).to(tdt)
    expect = ascendgrad.log_sigmoid_backward(ascendgrad.asarray(g), ascendgrad.asarray(x))
    # the kernels see exactly the tensors' memory: record what the conversion hands them
    from ascendgrad import _interop

    seen = []
    real = _interop.asarray

    def spy(obj):
        arr = real(obj)
        seen.append((obj, arr))
        return arr

    monkeypatch.setattr(_interop, "asarray", spy)
    got = ascendgrad.log_sigmoid_backward(g, x.T.contiguous().T)  # a column-major tensor too
    assert len(seen) == 2 and all(arr.ctypes.data == addr(obj) for obj, arr in seen)
    assert got.dtype == expect.dtype and (got.view(np.uint8) == expect.view(np.uint8)).all()
    np.testing.assert_allclose(got.astype(np.float64), ref.log_sigmoid_backward(
        ascendgrad.asarray(g), ascendgrad.asarray(x)), rtol=1e-2, atol=1e-3)


def test_every_operator_takes_tensors():
    t = torch.randn(3, 4)
    y = torch.softmax(t, -1)
    np.testing.assert_allclose(ascendgrad.softmax_backward(t, y, -1),
                               ref.softmax_backward(t.numpy(), y.numpy(), -1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ascendgrad.softshrink_backward(t, t, 0.5),
                                  ref.softshrink_backward(t.numpy(), t.numpy(), 0.5).astype(np.float32))
    lp = torch.log_softmax(t, -1)
    tgt = torch.tensor([0, 3, 1])
    np.testing.assert_allclose(ascendgrad.cross_entropy_loss_grad(torch.tensor(1.0), lp, tgt),
                               ref.cross_entropy_loss_grad(1.0, lp.numpy(), tgt.numpy()), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ascendgrad.kl_div_backward(torch.tensor(1.0), t, y, "batchmean"),
                               ref.kl_div_backward(1.0, t.numpy(), y.numpy(), "batchmean"), rtol=1e-5)


def test_requires_grad_tensors_are_read():
    x = torch.randn(3, 4, requires_grad=True)
    g = torch.ones(3, 4)
    out = ascendgrad.log_sigmoid_backward(g, x)
    np.testing.assert_allclose(out, ref.log_sigmoid_backward(g.numpy(), x.detach().numpy()), rtol=1e-6)


def test_tensors_keep_their_dtype():
    # a tensor is typed: unlike a Python number or list it is not cast to x's dtype
    x = np.zeros(3, np.float32)
    with pytest.raises(ascendgrad.AclnnError):
        ascendgrad.log_sigmoid_backward(torch.zeros(3, dtype=torch.float64), x)
    assert ascendgrad.log_sigmoid_backward([1.0, 2.0, 3.0], x).dtype == np.float32


@pytest.mark.parametrize("tdt", [torch.float32, torch.bfloat16], ids=str)
def test_out_tensor_written_in_place(tdt):
    g, x = torch.randn(4, 5).to(tdt), torch.randn(4, 5).to(tdt)
    out = torch.zeros(4, 5, dtype=tdt)
    res = ascendgrad.log_sigmoid_backward(g, x, out=out)
    assert res.ctypes.data == addr(out)
    expect = ascendgrad.log_sigmoid_backward(ascendgrad.asarray(g), ascendgrad.asarray(x))
    np.testing.assert_array_equal(ascendgrad.asarray(out).astype(np.float64), expect.astype(np.float64))
    # the numpy view of a tensor works as out= as well
    view = torch.zeros(4, 5)
    ascendgrad.softmax_backward(torch.ones(4, 5), torch.full((4, 5), 0.2), -1, out=view.numpy())
    assert torch.allclose(view, torch.zeros(4, 5))
    ascendgrad.softmax_backward(torch.ones(4, 5), torch.full((4, 5), 0.25), -1, out=view.numpy())
    assert torch.allclose(view, torch.full((4, 5), 0.25 * (1 - 5 * 0.25)))


def test_out_never_a_copy():
    with pytest.raises(ValueError, match="host memory"):
        ascendgrad.log_sigmoid_backward(np.zeros(3, np.float32), np.zeros(3, np.float32),
                                        out=torch.empty(3, device="meta"))
    with pytest.raises(TypeError):
        ascendgrad.log_sigmoid_backward(np.zeros(3, np.float32), np.zeros(3, np.float32), out=[0.0] * 3)


def test_raw_tensor_wraps_torch_memory():
    from ascendgrad import aclnn

    t = torch.arange(6, dtype=torch.float32)
    w = aclnn.Tensor(t)
    assert w.array.ctypes.data == addr(t) and w.dtype == np.float32
