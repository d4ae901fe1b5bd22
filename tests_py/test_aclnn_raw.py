"""The raw two-phase API: Tensor/Scalar/Stream objects, statuses and messages, executor
lifecycle (single-use, repeatable, destroyed), streams, workspaces."""

import gc

import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn
from ascendgrad import reference as ref

S = aclnn.Status


def inputs(shape=(4, 6), dim=1, seed=0):
    rng = np.random.default_rng(seed)
    y = ref.softmax(rng.standard_normal(shape), dim)
    g = rng.standard_normal(shape)
    return g, y, ref.softmax_backward(g, y, dim)


def prepare(g, y, out, dim=1):
    return aclnn.softmax_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y), dim, aclnn.Tensor(out))


def test_status_values():
    assert [int(s) for s in S] == [0, 161001, 161002, 361001, 561000, 561103]
    assert aclnn.DataType.ACL_BF16 == 27 and aclnn.DataType.ACL_DOUBLE == 11


def test_round_trip():
    g, y, expect = inputs()
    out = np.zeros_like(g)
    status, ws, ex = prepare(g, y, out)
    assert (status, ws) == (S.SUCCESS, 0) and isinstance(ex, aclnn.Executor)
    assert aclnn.softmax_backward(None, ws, ex) == S.SUCCESS
    np.testing.assert_allclose(out, expect, atol=1e-14)


def test_phase1_failure_reports_status_and_message_once():
    g, y, _ = inputs()
    status, ws, ex = aclnn.softmax_backward_get_workspace_size(None, aclnn.Tensor(y), 1, aclnn.Tensor(g))
    assert (status, ws, ex) == (S.ERR_PARAM_NULLPTR, 0, None)
    msg = aclnn.get_recent_err_msg()
    assert "aclnnSoftmaxBackward" in msg and "gradOutput" in msg
    assert aclnn.get_recent_err_msg() is None  # read once, then cleared
    status, _, ex = prepare(g, y, np.zeros((4, 6)), dim=5)
    assert status == S.ERR_PARAM_INVALID and ex is None
    assert "provided dim 5" in aclnn.get_recent_err_msg()


def test_single_use_executor_cannot_run_twice():
    g, y, _ = inputs()
    status, ws, ex = prepare(g, y, np.zeros_like(g))
    assert aclnn.softmax_backward(None, ws, ex) == S.SUCCESS
    assert aclnn.softmax_backward(None, ws, ex) == S.ERR_PARAM_INVALID
    assert "not live" in aclnn.get_recent_err_msg()
    assert aclnn.destroy_executor(ex) == S.ERR_PARAM_INVALID


def test_repeatable_executor():
    g, y, expect = inputs()
    out = np.zeros_like(g)
    _, ws, ex = prepare(g, y, out)
    assert aclnn.set_executor_repeatable(ex) == S.SUCCESS
    for _ in range(3):
        out[...] = 0
        assert aclnn.softmax_backward(None, ws, ex) == S.SUCCESS
        np.testing.assert_allclose(out, expect, atol=1e-14)
    g[...] = 0  # the executor reads the arrays in place, at run time
    assert aclnn.softmax_backward(None, ws, ex) == S.SUCCESS
    np.testing.assert_array_equal(out, 0 * y)
    assert aclnn.destroy_executor(ex) == S.SUCCESS
    assert aclnn.destroy_executor(ex) == S.ERR_PARAM_INVALID
    assert aclnn.softmax_backward(None, ws, ex) == S.ERR_PARAM_INVALID


def test_null_executor_arguments():
    assert aclnn.softmax_backward(None, 0, None) == S.ERR_PARAM_NULLPTR
    assert aclnn.destroy_executor(None) == S.ERR_INNER_NULLPTR
    assert aclnn.set_executor_repeatable(None) == S.ERR_INNER_NULLPTR


def test_workspace_checks():
    g, y, _ = inputs()
    _, ws, ex = prepare(g, y, np.zeros_like(g))
    with pytest.raises(ValueError):  # a buffer smaller than the size it claims is a caller bug
        aclnn.softmax_backward(np.zeros(4, np.uint8), 16, ex)
    with pytest.raises(TypeError):
        aclnn.softmax_backward(np.zeros(16, np.float32), 16, ex)
    # NULL workspace with a non-zero size is an invalid argument (status, not exception)
    assert aclnn.softmax_backward(None, 16, ex) == S.ERR_PARAM_INVALID
    _, ws, ex = prepare(g, y, np.zeros_like(g))
    assert aclnn.softmax_backward(np.zeros(64, np.uint8), 64, ex) == S.SUCCESS


def test_tensor_keeps_array_alive():
    g, y, expect = inputs()
    tg, ty = aclnn.Tensor(g.copy()), aclnn.Tensor(y.copy())
    out = np.zeros_like(g)
    _, ws, ex = aclnn.softmax_backward_get_workspace_size(tg, ty, 1, aclnn.Tensor(out))
    del tg, ty
    gc.collect()
    assert aclnn.softmax_backward(None, ws, ex) == S.SUCCESS
    np.testing.assert_allclose(out, expect, atol=1e-14)


def test_tensor_wraps_in_place():
    a = np.arange(12.0).reshape(3, 4)[:, ::-2]
    t = aclnn.Tensor(a)
    assert t.array is a and t.shape == (3, 2) and t.dtype == np.float64
    with pytest.raises(ValueError):
        aclnn.Tensor(np.zeros(4, np.dtype(">f8")))  # cannot be wrapped without a copy
    assert aclnn.Tensor([1.0, 2.0]).array.dtype == np.float64


def test_scalar():
    s = aclnn.Scalar(1.5, aclnn.DataType.ACL_FLOAT)
    assert s.value == 1.5 and s.dtype == aclnn.DataType.ACL_FLOAT
    assert aclnn.Scalar(0.1, np.float16).value == float(np.float16(0.1))
    assert aclnn.Scalar(2, "int64").dtype == aclnn.DataType.ACL_INT64


def test_stream_runs_in_order_and_synchronizes():
    cases = [inputs(shape=(64, 300), seed=s) for s in range(6)]
    outs = [np.zeros((64, 300)) for _ in cases]
    with aclnn.Stream() as stream:
        for (g, y, _), out in zip(cases, outs):
            _, ws, ex = prepare(g, y, out)
            assert aclnn.softmax_backward(None, ws, ex, stream) == S.SUCCESS
        assert stream.synchronize() == S.SUCCESS
        for (_, _, expect), out in zip(cases, outs):
            np.testing.assert_allclose(out, expect, atol=1e-14)
        # in order: a second run into the same output after a first one
        g, y, expect = cases[0]
        out = outs[0]
        _, ws, ex1 = prepare(g, y, out)
        _, ws, ex2 = prepare(g, y, out)
        aclnn.set_executor_repeatable(ex2)
        assert aclnn.softmax_backward(None, ws, ex1, stream) == S.SUCCESS
        assert aclnn.softmax_backward(None, ws, ex2, stream) == S.SUCCESS
        assert stream.synchronize() == S.SUCCESS
        np.testing.assert_allclose(out, expect, atol=1e-14)
        assert aclnn.destroy_executor(ex2) == S.SUCCESS
    g, y, _ = cases[0]
    _, ws, ex = prepare(g, y, np.zeros_like(g))
    assert aclnn.softmax_backward(None, ws, ex, stream) == S.ERR_PARAM_INVALID  # closed stream
    assert "stream" in aclnn.get_recent_err_msg()


def test_stream_keeps_arrays_until_synchronize():
    stream = aclnn.Stream()
    out = np.zeros((256, 512))
    g, y, expect = inputs(shape=(256, 512))
    _, ws, ex = aclnn.softmax_backward_get_workspace_size(aclnn.Tensor(g.copy()), aclnn.Tensor(y.copy()), 1,
                                                          aclnn.Tensor(out))
    assert aclnn.softmax_backward(None, ws, ex, stream) == S.SUCCESS
    del ex
    gc.collect()
    assert stream.synchronize() == S.SUCCESS
    np.testing.assert_allclose(out, expect, atol=1e-14)
    stream.close()


def test_raw_calls_do_not_raise_for_bad_status():
    g, y, _ = inputs()
    status, _, _ = aclnn.softmax_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y.astype(np.float32)), 1,
                                                             aclnn.Tensor(np.zeros_like(g)))
    assert status == S.ERR_PARAM_INVALID
    with pytest.raises(TypeError):  # wrong Python types are still TypeErrors
        aclnn.softmax_backward_get_workspace_size(g, y, 1, None)


def test_error_type():
    e = ascendgrad.AclnnError("msg", 161002)
    assert isinstance(e, ValueError) and e.status == 161002 and str(e) == "msg"
