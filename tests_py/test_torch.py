"""ascendgrad.torch: the five operators as autograd functions, ascend_backward, autocompare.

Oracles: ascendgrad's NumPy functions (bitwise: the backward is the same kernel), the float64
reference and ascendgrad.compare (verdicts), PyTorch itself (forward results, gradcheck, the
gradients of an unmodified model) and torch.library (faults injected into PyTorch's CPU kernels).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the test extra installs it: this skips nothing in CI
import torch.nn.functional as F  # noqa: E402

import ascendgrad as ag  # noqa: E402
import ascendgrad.torch as agt  # noqa: E402
from ascendgrad import reference  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import torch_model as tm  # noqa: E402

HALF = (torch.float16, torch.bfloat16)
DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def bits(t):
    """The tensor's bytes, to compare results bit for bit (NaN included)."""
    return t.detach().contiguous().view(torch.uint8 if t.element_size() == 1 else
                                        {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def assert_bitwise(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert torch.equal(bits(a), bits(b))


def rnd(*shape, dtype=torch.float32, lo=-5.0, hi=5.0, seed=0, grad=True):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    return x.requires_grad_(grad)


def as_np(t):
    return ag.asarray(t.detach())


# --------------------------------------------------------------------------------------------
# 1. the functions


def _cases(dtype):
    """(name, fn(x) -> output, x, extra tensors, NumPy backward(g, x, y) -> gradient)."""
    t = torch.tensor([0, 3, -100, 6, 2])
    w = rnd(7, lo=0.5, hi=2, seed=9, grad=False, dtype=torch.float32)
    tgt = rnd(5, 7, lo=0, hi=1, seed=3, grad=False, dtype=dtype)
    return [
        ("softmax", lambda x: agt.softmax(x, 0), lambda g, x, y: ag.softmax_backward(g, y, 0)),
        ("softmax_dtype", lambda x: agt.softmax(x, 1, dtype=torch.float64),
         lambda g, x, y: ag.softmax_backward(g, y, 1, out=np.empty(x.shape, as_np(x).dtype))),
        ("logsigmoid", agt.logsigmoid, lambda g, x, y: ag.log_sigmoid_backward(g, x)),
        ("softshrink", lambda x: agt.softshrink(x, 1.5), lambda g, x, y: ag.softshrink_backward(g, x, 1.5)),
        ("kl_div", lambda x: agt.kl_div(x, tgt, reduction="none"),
         lambda g, x, y: ag.kl_div_backward(g, x, tgt, "none")),
        ("kl_div_batchmean_logt", lambda x: agt.kl_div(x, tgt, reduction="batchmean", log_target=True),
         lambda g, x, y: ag.kl_div_backward(g, x, tgt, "batchmean", True)),
        ("cross_entropy", lambda x: agt.cross_entropy(x, t, w, label_smoothing=0.2),
         lambda g, x, y: ag.cross_entropy_loss_grad(g, ag.asarray(_log_prob(x)), t, w, label_smoothing=0.2)),
        ("cross_entropy_none", lambda x: agt.cross_entropy(x, t.abs() % 7, reduction="none", ignore_index=3),
         lambda g, x, y: ag.cross_entropy_loss_grad(g, ag.asarray(_log_prob(x)), t.abs() % 7, reduction="none",
                                                    ignore_index=3)),
    ]


def _log_prob(x):
    """The logProb the forward saves (CANN's output, in the input's dtype), as the fused loss returns it."""
    lp = agt.npu_cross_entropy_loss(x.detach(), torch.zeros(x.shape[0], dtype=torch.long))[1]
    xf = x.detach().double()
    eps = 8 * torch.finfo(x.dtype).eps  # within a few ULPs of x − logsumexp(x)
    torch.testing.assert_close(lp.double(), xf - torch.logsumexp(xf, 1, keepdim=True), rtol=eps, atol=eps)
    return lp


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("case", range(8), ids=lambda i: _cases(torch.float32)[i][0])
def test_backward_is_the_numpy_function_bitwise(case, dtype):
    name, fn, numpy_backward = _cases(dtype)[case]
    x = rnd(5, 7, dtype=dtype, seed=case)
    y = fn(x)
    g = rnd(*y.shape, dtype=y.dtype, seed=100 + case, grad=False)
    (gx,) = torch.autograd.grad(y, x, g)
    want = numpy_backward(g, x.detach(), y.detach())  # the NumPy functions read tensors in place
    assert gx.dtype == x.dtype
    assert np.array_equal(as_np(gx).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)), name


@pytest.mark.parametrize("case", range(8), ids=lambda i: _cases(torch.float32)[i][0])
def test_gradcheck_float64(case):
    _, fn, _ = _cases(torch.float64)[case]
    x = rnd(5, 7, dtype=torch.float64, seed=case, lo=-2, hi=2)
    if case == 3:  # softshrink: keep away from the kinks at ±λ
        x = (x.detach() + 0.3 * torch.sign(x.detach())).requires_grad_()
    assert torch.autograd.gradcheck(fn, (x,))


def test_forward_results_are_pytorchs():
    x = rnd(6, 9, seed=1)
    t = torch.tensor([0, 8, 3, -100, 5, 1])
    t8 = torch.tensor([0, 8, 3, 2, 5, 1])
    w = rnd(9, lo=0.2, hi=2, seed=2, grad=False)
    tgt = rnd(6, 9, lo=0, hi=1, seed=3, grad=False)
    assert_bitwise(agt.softmax(x, 1), F.softmax(x, 1))
    assert_bitwise(agt.softmax(x, 0, dtype=torch.float64), F.softmax(x, 0, dtype=torch.float64))
    assert_bitwise(agt.logsigmoid(x), F.logsigmoid(x))
    assert_bitwise(agt.softshrink(x, 0.7), F.softshrink(x, 0.7))
    for red in ("none", "mean", "sum", "batchmean"):
        for lt in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert_bitwise(agt.kl_div(x, tgt, red, lt), F.kl_div(x, tgt, reduction=red, log_target=lt))
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        xd = x.detach().to(dtype)
        for kw in ({}, {"weight": w.to(dtype)}, {"label_smoothing": 0.3, "reduction": "sum"},
                   {"reduction": "none", "ignore_index": 8, "weight": w.to(dtype), "label_smoothing": 0.1}):
            tk = t8 if "ignore_index" in kw else t
            ours = agt.cross_entropy(xd, tk, **kw)
            theirs = F.cross_entropy(xd.double(), tk, **{k: (v.double() if torch.is_tensor(v) else v)
                                                       for k, v in kw.items()})
            assert ours.dtype == dtype and ours.shape == theirs.shape
            tol = {torch.float32: 1e-6, torch.float64: 1e-13, torch.bfloat16: 1e-2}[dtype]
            torch.testing.assert_close(ours.double(), theirs, rtol=tol, atol=tol)


def test_target_out_of_range_raises_as_pytorch():
    x = rnd(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        agt.cross_entropy(x, torch.tensor([0, 4, 1]))


def test_uncovered_forms_are_refused_by_the_functions():
    x = rnd(2, 3, 4)
    with pytest.raises(ValueError, match=r"\(N, C\) input"):
        agt.cross_entropy(x, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="probability targets"):
        agt.cross_entropy(rnd(2, 3), rnd(2, 3, grad=False))
    with pytest.raises(ValueError, match="dtype int32"):
        agt.logsigmoid(torch.ones(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="broadcasts input"):
        agt.kl_div(rnd(1, 3), rnd(2, 3, grad=False))


def test_npu_cross_entropy_loss():
    x = rnd(5, 6, dtype=torch.float64, seed=4)
    t = torch.tensor([1, 0, 5, -100, 2])
    loss, lp, zloss, lse = agt.npu_cross_entropy_loss(x, t)
    assert loss.shape == (1,) and lp.shape == (5, 6) and zloss.numel() == 0 and lse.numel() == 0
    torch.testing.assert_close(loss[0], F.cross_entropy(x, t))
    torch.testing.assert_close(lp, F.log_softmax(x, 1))
    zeta = 1e-2
    loss, lp, zloss, lse = agt.npu_cross_entropy_loss(x, t, reduction="none", lse_square_scale_for_zloss=zeta,
                                                      return_zloss=True)
    want = reference.cross_entropy(as_np(x), t.numpy(), None, "none", -100, 0.0, zeta, return_zloss=True)
    np.testing.assert_allclose(loss.detach().numpy(), want[0], rtol=1e-13)
    np.testing.assert_allclose(zloss.detach().numpy(), want[1], rtol=1e-13)
    np.testing.assert_allclose(lse.numpy(), reference.logsumexp(as_np(x), -1), rtol=1e-13)
    # both loss and zloss carry gradient; log_prob and lse none
    assert torch.autograd.gradcheck(
        lambda a: agt.npu_cross_entropy_loss(a, t, label_smoothing=0.1, lse_square_scale_for_zloss=zeta,
                                             return_zloss=True)[0:3:2], (x,))
    assert not lp.requires_grad and not lse.requires_grad


def test_kl_div_target_gradient_is_pytorchs():
    x = rnd(4, 5, dtype=torch.float64, seed=1)
    for lt in (False, True):
        t1 = rnd(4, 5, dtype=torch.float64, lo=0.1, hi=1, seed=2)
        t2 = t1.detach().clone().requires_grad_()
        (g1,) = torch.autograd.grad(agt.kl_div(x, t1, "batchmean", lt), t1)
        (g2,) = torch.autograd.grad(F.kl_div(x, t2, reduction="batchmean", log_target=lt), t2)
        assert_bitwise(g1, g2)


def test_second_derivative_raises():
    x = rnd(3, 4, dtype=torch.float64)
    for fn in (lambda a: agt.softmax(a, 1), agt.logsigmoid, agt.softshrink,
               lambda a: agt.cross_entropy(a, torch.tensor([0, 1, 2]))):
        (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError, match="no second derivative"):
            g.sum().backward()
    (g,) = torch.autograd.grad(agt.softmax(x, 1)[:, 0].sum(), x)  # first order alone: no graph, no error
    assert not g.requires_grad


# --------------------------------------------------------------------------------------------
# 2. ascend_backward


def _train(dtype, steps, mode=None, seed=0):
    model, opt, batches = tm.make(seed=seed, dtype=dtype)
    losses, grads = [], []
    for s in range(steps):
        if mode is None:
            losses.append(tm.step(model, opt, batches(s)))
        else:
            with mode:
                losses.append(tm.step(model, opt, batches(s)))
        grads = [p.grad.clone() for p in model.parameters()]
    return losses, grads


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=lambda d: str(d)[6:])
def test_ascend_backward_trains_as_pytorch(dtype):
    mode = agt.ascend_backward()
    plain_losses, plain_grads = _train(dtype, 5)
    ours_losses, ours_grads = _train(dtype, 5, mode)
    std = "float32" if dtype == torch.float32 else "bfloat16"
    # the same loss curve and parameter gradients within the standard of the dtype
    assert ag.compare(np.array(ours_losses, np.float32), np.array(plain_losses), dtype=std)
    for a, b in zip(ours_grads, plain_grads):
        r = ag.compare(a, b.double())
        assert r, r
    c = mode.counts
    per_step = {"Functional.softmax": 3, "Functional.logsigmoid": 2, "Functional.softshrink": 2,
                "Functional.cross_entropy": 1, "Functional.kl_div": 1}
    for api, n in per_step.items():
        assert c[api]["routed"] == 5 * n - (5 if api == "Functional.softmax" else 0), (api, c)
    assert c["Functional.softmax"]["no input requires grad"] == 5  # the teacher's softmax
    assert "Functional.softmax" in mode.summary() and "no input requires grad" in mode.summary()


def test_ascend_backward_gradients_are_the_kernels():
    """A routed call's gradient is bitwise the NumPy function's on the same tensors."""
    x = rnd(4, 6, dtype=torch.bfloat16)
    g = rnd(4, 6, dtype=torch.bfloat16, seed=5, grad=False)
    t = torch.tensor([1, 5, -100, 0])
    tgt = rnd(4, 6, lo=0, hi=1, seed=6, grad=False, dtype=torch.bfloat16)
    with agt.ascend_backward():
        calls = [
            (lambda: torch.softmax(x, 0), lambda y: ag.softmax_backward(g, y, 0)),
            (lambda: x.softmax(dim=1), lambda y: ag.softmax_backward(g, y, 1)),
            (lambda: torch.nn.Softmax(-1)(x), lambda y: ag.softmax_backward(g, y, -1)),
            (lambda: torch.nn.LogSigmoid()(x), lambda y: ag.log_sigmoid_backward(g, x)),
            (lambda: torch.nn.Softshrink(0.25)(x), lambda y: ag.softshrink_backward(g, x, 0.25)),
            (lambda: torch.nn.KLDivLoss(reduction="none")(x, tgt), lambda y: ag.kl_div_backward(g, x, tgt, "none")),
        ]
        for fwd, numpy_backward in calls:
            y = fwd()
            (gx,) = torch.autograd.grad(y, x, g)
            want = numpy_backward(as_np(y))
            assert np.array_equal(as_np(gx).view(np.uint16), want.view(np.uint16))
        loss = torch.nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1)(x, t)
        (gx,) = torch.autograd.grad(loss, x)
    want = ag.cross_entropy_loss_grad(np.ones((), as_np(x).dtype), ag.asarray(_log_prob(x)), t, reduction="sum",
                                      label_smoothing=0.1)
    assert np.array_equal(as_np(gx).view(np.uint16), want.view(np.uint16))


def test_ascend_backward_passes_other_forms_through():
    x = rnd(2, 3, 4)
    with agt.ascend_backward() as mode:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = F.softmax(x)  # implicit dim
        assert y.grad_fn.name() == "SoftmaxBackward0"
        F.cross_entropy(x, torch.zeros(2, 4, dtype=torch.long)).backward()  # K-dim
        F.cross_entropy(x[:, :, 0], F.softmax(rnd(2, 3, grad=False), 1)).backward()  # probabilities
        F.logsigmoid(torch.ones(3, dtype=torch.int32).float()).sum()  # no grad needed
        z = F.softshrink(x.double(), 0.5)  # float64 is ours: routed
        assert "Softshrink" in z.grad_fn.name() and "Backward0" not in z.grad_fn.name()
        F.kl_div(rnd(1, 3), rnd(2, 3, grad=False), reduction="sum")  # broadcasts the input
        with torch.no_grad(), pytest.warns(UserWarning, match="no_grad"):
            F.softmax(x, -1)
    c = mode.counts
    assert c["Functional.softmax"] == {"dim=None (PyTorch's implicit dim)": 1, "no input requires grad": 1,
                                       "grad disabled": 1}
    assert c["Functional.cross_entropy"] == {
        "input [2, 3, 4] with target [2, 4] (CrossEntropyLossGrad covers (N, C) input with (N,) targets)": 1,
        "probability targets (CrossEntropyLossGrad takes class indices)": 1}
    assert c["Functional.logsigmoid"] == {"no input requires grad": 1}
    assert c["Functional.softshrink"] == {"routed": 1}
    assert c["Functional.kl_div"] == {"target [2, 3] broadcasts input [1, 3] to [2, 3]": 1}
    s = mode.summary()
    assert "probability targets" in s and "grad disabled" in s


def test_ascend_backward_is_a_decorator_nestable_and_exception_safe():
    mode = agt.ascend_backward()

    @mode
    def f(x):
        with agt.ascend_backward() as inner:
            y = F.logsigmoid(x)
        assert inner.counts == {"Functional.logsigmoid": {"routed": 1}}
        return F.softmax(y, -1)

    y = f(rnd(3))
    assert "CustomFunction" in type(y.grad_fn).__name__ or "Backward" in y.grad_fn.name()
    assert mode.counts == {"Functional.softmax": {"routed": 1}}
    with pytest.raises(ZeroDivisionError):
        with mode:
            1 / 0
    assert F.softmax(rnd(3), 0).grad_fn.name() == "SoftmaxBackward0"  # the mode is gone
    assert agt._stack() == []


def test_ascend_backward_is_per_thread():
    import threading

    seen = {}
    mode = agt.ascend_backward()

    def other():
        seen["name"] = F.softmax(rnd(3), 0).grad_fn.name()

    with mode:
        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert F.softmax(rnd(3), 0).grad_fn.name() != "SoftmaxBackward0"
    assert seen["name"] == "SoftmaxBackward0"


def test_modes_under_torch_compile_and_inference_mode_say_what_they_do():
    @torch.compile(backend="eager")
    def f(x):
        return F.softmax(x, -1)

    mode = agt.ascend_backward()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with mode:
            f(rnd(3, 4))
            with torch.inference_mode():
                F.logsigmoid(rnd(3, grad=False))
                F.logsigmoid(rnd(3, grad=False))
    texts = [str(x.message) for x in w if "ascendgrad" in str(x.message)]
    assert sum("torch.compile" in t for t in texts) == 1 and sum("no_grad" in t for t in texts) == 1, texts
    assert mode.counts["Functional.softmax"]["torch.compile"] >= 1
    assert mode.counts["Functional.logsigmoid"] == {"grad disabled": 2}
    with agt.autocompare() as report:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.no_grad():
                F.softmax(rnd(3), 0)
            torch._dynamo.reset()
            f(rnd(2, 2))
    assert report.calls == []
    assert report.not_judged["Functional.softmax"]["grad disabled"] == 1
    assert report.not_judged["Functional.softmax"]["torch.compile"] >= 1


# --------------------------------------------------------------------------------------------
# 3. autocompare


def _single_calls(dtype):
    """(api, forward(x) -> y) for each API, the first input x of (6, 40)."""
    t = torch.tensor([3, 0, 39, -100, 7, 21])
    t7 = torch.tensor([3, 0, 39, 12, 7, 21])
    w = rnd(40, lo=0.5, hi=2, seed=9, grad=False)
    tgt = rnd(6, 40, lo=0, hi=1, seed=3, grad=False, dtype=dtype)
    return [
        ("Functional.softmax", lambda x: F.softmax(x, 0)),
        ("Torch.softmax", lambda x: torch.softmax(x, -1)),
        ("Tensor.softmax", lambda x: x.softmax(1)),
        ("Functional.logsigmoid", F.logsigmoid),
        ("Functional.softshrink", lambda x: F.softshrink(x, 1.0)),
        ("Functional.cross_entropy", lambda x: F.cross_entropy(x, t7, w.to(dtype), label_smoothing=0.2, ignore_index=7)),
        ("Functional.kl_div", lambda x: F.kl_div(x, tgt, reduction="batchmean")),
        ("NPU.npu_cross_entropy_loss",
         lambda x: agt.npu_cross_entropy_loss(x, t, reduction="sum", lse_square_scale_for_zloss=1e-3)[0]),
    ]


def _golden(api, x, g, dtype):
    """The test's own float64 golden of each call."""
    xs = as_np(x).astype(np.float64)
    gs = as_np(g).astype(np.float64)
    t = np.array([3, 0, 39, -100, 7, 21])
    if api == "Functional.softmax":
        return reference.softmax_backward(gs, reference.softmax(xs, 0), 0)
    if api in ("Torch.softmax", "Tensor.softmax"):
        return reference.softmax_backward(gs, reference.softmax(xs, 1), 1)
    if api == "Functional.logsigmoid":
        return reference.log_sigmoid_backward(gs, xs)
    if api == "Functional.softshrink":
        return reference.softshrink_backward(gs, xs, 1.0)
    if api == "Functional.cross_entropy":
        w = as_np(rnd(40, lo=0.5, hi=2, seed=9, grad=False).to(dtype)).astype(np.float64)
        t7 = np.array([3, 0, 39, 12, 7, 21])
        return reference.cross_entropy_loss_grad(gs, reference.log_softmax(xs, 1), t7, w, "mean", 7, 0.2)
    if api == "Functional.kl_div":
        tgt = as_np(rnd(6, 40, lo=0, hi=1, seed=3, grad=False, dtype=dtype)).astype(np.float64)
        return reference.kl_div_backward(gs, xs, tgt, "batchmean")
    return reference.cross_entropy_loss_grad(gs.reshape(()), reference.log_softmax(xs, 1), t, None, "sum",
                                             lse_for_zloss=reference.logsumexp(xs, 1),
                                             lse_square_scale_for_zloss=1e-3)


@pytest.mark.parametrize("standard", ("cann", "cann-v1", "msprobe"))
@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32), ids=lambda d: str(d)[6:])
def test_verdicts_agree_with_compare_on_the_same_tensors(dtype, standard):
    """Over PyTorch CPU's own kernels: each call judged; its verdict and metrics are those of
    ascendgrad.compare on the gradient PyTorch computed (x.grad: x feeds that call alone)."""
    for api, fwd in _single_calls(dtype):
        x = rnd(6, 40, dtype=dtype, seed=1)
        with agt.autocompare(standard=standard) as report:
            y = fwd(x)
            g = rnd(*y.shape, dtype=y.dtype, seed=2, grad=False)
            y.backward(g)
        (call,) = report.calls
        assert call.api == f"{api}.0" and call.dtype == str(dtype)[6:] and call.shape == [6, 40]
        want = ag.compare(x.grad, _golden(api, x, g, dtype), standard=standard, dtype=str(dtype)[6:])
        assert call.verdict == ("pass" if want.passed else "fail"), (api, call)
        assert set(call.metrics) == set(want.metrics)
        for k, v in want.metrics.items():
            assert call.metrics[k] == pytest.approx(v, rel=1e-12, nan_ok=True), (api, k)


@pytest.fixture(params=("in the hook", "beside the step"))
def where_judged(request, monkeypatch):
    """Calls judged in the hook, or all of them on the report's threads (as large calls are)."""
    if request.param == "beside the step":
        monkeypatch.setattr(agt, "_BESIDE", 0)
    return request.param


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=lambda d: str(d)[6:])
def test_autocompare_judges_every_call_of_the_model(dtype, where_judged):
    model, opt, batches = tm.make(dtype=dtype)
    with agt.autocompare() as report:
        for s in range(3):
            tm.step(model, opt, batches(s))
    per_step = {"Functional.softmax": 3, "Functional.logsigmoid": 2, "Functional.softshrink": 2,
                "Functional.cross_entropy": 1, "Functional.kl_div": 1}
    names = [c.api for c in report.calls]
    for api, n in per_step.items():
        judged = [c for c in names if c.startswith(api + ".")]
        assert len(judged) == 3 * (n - (api == "Functional.softmax")), (api, names)
    # PyTorch's CPU kernels meet CANN's standard at this size: every call passes
    assert all(c.verdict == "pass" for c in report.calls), report.summary()
    assert report.not_judged == {"Functional.softmax": {"input does not require grad": 3}}
    assert report.pending == 0
    d = json.loads(json.dumps(report.to_dict()))
    assert d["summary"]["calls"] == len(names) and d["summary"]["pass"] == len(names)


def test_gradients_are_bitwise_those_without_autocompare(where_judged):
    for dtype in (torch.float32, torch.bfloat16):
        _, plain = _train(dtype, 3)
        _, tapped = _train(dtype, 3, agt.autocompare())
        _, both = _train(dtype, 3, agt.autocompare(every=2))
        for a, b, c in zip(plain, tapped, both):
            assert_bitwise(a, b)
            assert_bitwise(a, c)


def _fault_softmax(shape):
    """A CPU softmax backward with its dot-product term dropped for one shape only."""
    def fn(grad_output, output, dim, input_dtype):
        g, y = grad_output.float(), output.float()
        if tuple(output.shape) == tuple(shape):
            r = g * y
        else:
            r = y * (g - (g * y).sum(dim, keepdim=True))
        return r.to(input_dtype)
    return fn


def _fault_log_sigmoid(shape, index, calls=1):
    """A CPU log_sigmoid backward writing NaN at `index` in its first `calls` calls of `shape`
    (the first in backward order: the last block's gate; NaN then flows into every earlier call's
    upstream gradient, where the golden has it too)."""
    seen = [0]

    def fn(grad_output, self, buffer):
        r = (grad_output.float() * torch.sigmoid(-self.float())).to(self.dtype)
        if tuple(self.shape) == tuple(shape) and seen[0] < calls:
            seen[0] += 1
            r[index] = float("nan")
        return r
    return fn


class _Fault:
    """A CPU backward kernel of PyTorch replaced through torch.library while inside."""

    def __init__(self, op, fn):
        self.op, self.fn = op, fn

    def __enter__(self):
        self.lib = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
            self.lib.impl(self.op, self.fn, "CPU")

    def __exit__(self, *exc):
        self.lib._destroy()


def _check_saved(folder, worst_index):
    """`golden --check` on a saved case gives the same verdict and the same worst element."""
    js = os.path.join(folder, "verdict.json")
    r = subprocess.run([sys.executable, "-m", "ascendgrad", "golden", "--check", folder, "--actual",
                        os.path.join(folder, "actual"), "--json", js], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    with open(js) as f:
        v = json.load(f)
    (out,) = v["cases"][0]["outputs"].values()
    assert not out["passed"]
    assert list(out["worst"][0]["location"]) == list(worst_index), out["worst"][0]


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=lambda d: str(d)[6:])
def test_injected_faults_fail_exactly_the_faulty_calls(dtype, tmp_path):
    """The loss is scaled (as mixed-precision training does) so that bfloat16's gradients are
    large enough for a dropped term to exceed its tolerance."""
    model, opt, batches = tm.make(dtype=dtype)
    tokens, targets, teacher = batches(0)
    attn_block1 = (4, 4, 16, 16)  # the second block's attention (4 heads); the first has 2
    gate_shape, nan_at = (4, 16, 32), (1, 3, 5)
    with _Fault("_softmax_backward_data", _fault_softmax(attn_block1)), \
            _Fault("log_sigmoid_backward", _fault_log_sigmoid(gate_shape, nan_at)):
        with agt.autocompare(save_dir=tmp_path) as report:
            (tm.loss_fn(model(tokens), targets, teacher) * 1024).backward()
    failed = {c.api for c in report.failed}
    # softmax.1: block 1's attention; logsigmoid.1: block 1's gate
    assert failed == {"Functional.softmax.1", "Functional.logsigmoid.1"}, report.summary()
    assert all(c.verdict == "pass" for c in report.calls if c.api not in failed)
    for c in report.failed:
        if c.api.startswith("Functional.logsigmoid"):
            assert tuple(c.worst["index"]) == nan_at and np.isnan(c.worst["dumped"])
    assert sorted(os.path.basename(p) for p in report.saved_cases) == sorted(failed)
    for c in report.failed:
        _check_saved(os.path.join(tmp_path, c.api), c.worst["index"])
    # the fault removed, the same run passes
    model, opt, batches = tm.make(dtype=dtype)
    with agt.autocompare() as report:
        (tm.loss_fn(model(tokens), targets, teacher) * 1024).backward()
    assert report.failed == [] and len(report.calls) == 8


def test_on_fail_raise_and_warn():
    x = rnd(4, 16, 32)
    with _Fault("log_sigmoid_backward", _fault_log_sigmoid((4, 16, 32), (0, 1, 2), calls=2)):
        with agt.autocompare(on_fail="raise"):
            y = F.logsigmoid(x)
        with pytest.raises(agt.GradientMismatchError, match=r"Functional\.logsigmoid\.0 .*worst element \(0, 1, 2\)"):
            y.sum().backward()
        assert issubclass(agt.GradientMismatchError, AssertionError)
        with agt.autocompare(on_fail="warn") as report:
            with pytest.warns(agt.GradientMismatchWarning, match=r"worst element \(0, 1, 2\): backend nan"):
                F.logsigmoid(x).sum().backward()
    assert [c.verdict for c in report.calls] == ["fail"]


def test_apis_every_and_forward_only(tmp_path):
    x = rnd(3, 5)
    with agt.autocompare(apis=["*softmax*"], every=3) as report:
        for _ in range(7):
            F.softmax(x, -1).sum().backward()
            F.logsigmoid(x).sum().backward()
        y = torch.softmax(x, 0)  # Torch.softmax.0: its graph freed without a backward
        del y
    assert [c.api for c in report.calls] == ["Functional.softmax.0", "Functional.softmax.3", "Functional.softmax.6",
                                             "Torch.softmax.0"]
    assert report.calls[-1].verdict == "not comparable" and "forward only" in report.calls[-1].reason
    assert report.not_judged == {"Functional.softmax": {"every=3": 4}, "Functional.logsigmoid": {"not in apis": 7}}
    report.to_json(tmp_path / "r.json")
    d = json.loads((tmp_path / "r.json").read_text())
    assert [c["api"] for c in d["calls"]][-1] == "Torch.softmax.0" and d["summary"]["not comparable"] == 1
    assert "every=3" in report.summary()
    with pytest.raises(ValueError, match="on_fail"):
        agt.autocompare(on_fail="explode")
    with pytest.raises(ValueError, match="every"):
        agt.autocompare(every=0)
    with pytest.raises(ValueError, match="standard"):
        agt.autocompare(standard="dual-benchmark")


def test_autocompare_judges_ascendgrad_itself_under_ascend_backward():
    """Either nesting order: the routed call is judged once, and CANN's kernel passes."""
    model, opt, batches = tm.make(dtype=torch.bfloat16)
    for outer_is_check in (True, False):
        check, route = agt.autocompare(), agt.ascend_backward()
        first, second = (check, route) if outer_is_check else (route, check)
        with first, second:
            tm.step(model, opt, batches(0))
        assert len(check.report.calls) == 8 and all(c.verdict == "pass" for c in check.report.calls)
        assert route.counts["Functional.cross_entropy"] == {"routed": 1}


def test_memory_stays_flat_over_1000_steps(where_judged):
    psutil = pytest.importorskip("psutil")
    proc = psutil.Process()
    model, opt, batches = tm.make(dtype=torch.float32, d=64, seq=32)
    data = batches(0)
    with agt.autocompare() as report:
        for s in range(1000):
            tm.step(model, opt, data)
            if s == 99:
                rss_100 = proc.memory_info().rss
            assert report.pending == 0
    grown = proc.memory_info().rss - rss_100
    # each step saves ~0.4 MB of inputs for the golden: kept, 900 steps would hold ~360 MB
    assert grown < 64 << 20, grown
    assert len(report.calls) == 8000 and not report.failed


def test_import_without_torch_says_how_to_install(tmp_path):
    code = "import sys; sys.modules['torch'] = None\nimport ascendgrad\nimport ascendgrad.torch"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1
    assert "ImportError: ascendgrad.torch needs PyTorch" in r.stderr and "ascendgrad[torch]" in r.stderr
