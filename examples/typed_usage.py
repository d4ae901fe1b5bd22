"""Every public function of ascendgrad, called from fully typed code: ``mypy --strict`` must pass
on this file (tests_py/test_typing.py checks it, and runs it).

    python examples/typed_usage.py
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

import ascendgrad
from ascendgrad import aclnn, gradcheck, reference
from ascendgrad.compare import CompareReport, load, ulp_distance


def numpy_api() -> None:
    rng = np.random.default_rng(0)
    x: NDArray[np.float32] = rng.standard_normal((4, 5)).astype(np.float32)
    y: NDArray[np.float64] = reference.softmax(x, -1)
    g = np.ones_like(x)
    dx: NDArray[Any] = ascendgrad.softmax_backward(g, y.astype(np.float32), dim=-1)
    ascendgrad.softmax_backward(g, y.astype(np.float32), -1, out=dx)
    ascendgrad.log_sigmoid_backward(g, x)
    ascendgrad.log_sigmoid_backward(g, x, x, out=np.empty_like(x))
    ascendgrad.softshrink_backward(g, x.astype(ml_dtypes.bfloat16), lambd=0.5)
    target = np.array([0, 1, 2, 3])
    lp = reference.log_softmax(x, 1).astype(np.float32)
    ascendgrad.cross_entropy_loss_grad(np.float32(1.0), lp, target)
    ascendgrad.cross_entropy_loss_grad(
        np.ones(4, np.float32), lp, target, np.ones(5, np.float32), reduction="none", ignore_index=2,
        label_smoothing=0.1, grad_zloss=np.ones(4, np.float32),
        lse_for_zloss=reference.logsumexp(x, 1).astype(np.float32), lse_square_scale_for_zloss=0.2,
    )
    ascendgrad.kl_div_backward(np.float32(1.0), x, np.abs(x), "batchmean")
    ascendgrad.kl_div_backward(g, x, x, 0, log_target=True)
    n: int = ascendgrad.get_num_threads()
    ascendgrad.set_num_threads(n)
    view: NDArray[Any] = ascendgrad.asarray([1.0, 2.0])
    assert view.shape == (2,)
    assert isinstance(ascendgrad.__version__, str)
    try:
        ascendgrad.softmax_backward(g, y, dim=7)
    except ascendgrad.AclnnError as e:
        status: int = e.status
        assert status == aclnn.Status.ERR_PARAM_INVALID


def raw_api() -> None:
    g = np.ones((2, 3), np.float32)
    y = np.full((2, 3), 1 / 3, np.float32)
    out = np.empty_like(g)
    status, ws, executor = aclnn.softmax_backward_get_workspace_size(
        aclnn.Tensor(g), aclnn.Tensor(y), -1, aclnn.Tensor(out))
    assert status == aclnn.Status.SUCCESS and executor is not None
    handle: int = executor.handle
    assert handle
    workspace: Optional[NDArray[np.uint8]] = np.empty(ws, np.uint8) if ws else None
    with aclnn.Stream() as stream:
        aclnn.softmax_backward(workspace, ws, executor, stream)
        assert stream.synchronize() == aclnn.Status.SUCCESS
    message: Optional[str] = aclnn.get_recent_err_msg()
    assert message is None

    t = aclnn.Tensor(out)
    shape: Tuple[int, ...] = t.shape
    assert shape == (2, 3) and t.dtype == np.float32 and t.array is out
    s = aclnn.Scalar(0.5, np.float32)
    value: float = s.value
    assert value == 0.5 and s.dtype == aclnn.DataType.ACL_FLOAT

    def run(phase1: Tuple[int, int, Optional[aclnn.Executor]], phase2: Any) -> int:
        st, size, ex = phase1
        assert st == 0
        aclnn.set_executor_repeatable(ex)
        result: int = phase2(None, size, ex)
        aclnn.destroy_executor(ex)
        return result

    x = aclnn.Tensor(g)
    run(aclnn.log_sigmoid_backward_get_workspace_size(x, x, x, aclnn.Tensor(out)), aclnn.log_sigmoid_backward)
    run(aclnn.softshrink_backward_get_workspace_size(x, x, s, aclnn.Tensor(out)), aclnn.softshrink_backward)
    run(aclnn.kl_div_backward_get_workspace_size(x, x, x, 0, False, aclnn.Tensor(out)), aclnn.kl_div_backward)
    run(aclnn.cross_entropy_loss_grad_get_workspace_size(
        aclnn.Tensor(np.float32(1.0)), x, aclnn.Tensor(np.array([0, 1])), None, None, None, "mean", -100, 0.0, 0.0,
        aclnn.Tensor(out)), aclnn.cross_entropy_loss_grad)


def golden_model() -> None:
    x = np.linspace(-2, 2, 6).reshape(2, 3)
    t = np.array([0, 2])
    reference.softmax_backward(x, reference.softmax(x), -1)
    reference.log_sigmoid_backward(x, x)
    reference.log_sigmoid(x)
    reference.softshrink_backward(x, x, 0.5)
    reference.softshrink(x, 0.5)
    loss: NDArray[np.float64] = reference.cross_entropy(x, t)
    both: Tuple[NDArray[np.float64], NDArray[np.float64]] = reference.cross_entropy(
        x, t, lse_square_scale_for_zloss=0.1, return_zloss=True)
    assert loss.shape == () and len(both) == 2
    reference.cross_entropy_loss_grad(1.0, reference.log_softmax(x), t)
    reference.kl_div(x, np.abs(x), "sum")
    reference.kl_div_backward(1.0, x, np.abs(x), reference.KL_REDUCTIONS["sum"])


def checks(tmp: str) -> None:
    res: gradcheck.GradcheckResult = gradcheck.gradcheck("softmax_backward", dtype="float32")
    assert res and res.max_abs_err >= 0
    atol, rtol = gradcheck.dtype_tolerance("bfloat16", 1.0)
    assert atol > 0 and rtol > 0
    x = np.linspace(-1, 1, 5)
    vjp = gradcheck.check_vjp(reference.log_sigmoid, lambda v, x_: reference.log_sigmoid_backward(v, x_), [x])
    assert vjp.passed

    golden = reference.log_sigmoid_backward(np.ones(5), x)
    report: CompareReport = ascendgrad.compare(golden.astype(np.float16), golden, dtype="float16")
    assert report and report.to_dict()["passed"] and str(report)
    assert int(ulp_distance(1.0, 1.0, np.float32)[()]) == 0
    np.save(f"{tmp}/a.npy", golden)
    arrays = load(f"{tmp}/a.npy")
    assert arrays[""].shape == (5,)


if __name__ == "__main__":
    import tempfile

    numpy_api()
    raw_api()
    golden_model()
    with tempfile.TemporaryDirectory() as d:
        checks(d)
    print("typed usage: ok")
