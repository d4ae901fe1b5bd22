"""ascendgrad inside a PyTorch training step (PyTorch is optional: ``pip install 'ascendgrad[torch]'``).

Three uses, one table of the five operators' PyTorch forms (:data:`APIS`):

1. The operators as autograd functions: :func:`softmax`, :func:`logsigmoid`, :func:`softshrink`,
   :func:`kl_div`, :func:`cross_entropy` (``torch.nn.functional``'s signatures and forward
   results) and :func:`npu_cross_entropy_loss` (torch_npu's fused loss). Their forward is
   PyTorch's (cross entropy: ``log_prob = x − logsumexp(x)``, as CANN's aclnnCrossEntropyLoss);
   their backward is ascendgrad's kernel, CANN's semantics, on the saved tensors (read in place
   when they are CPU tensors; other devices' tensors are copied to host and the result back),
   in the input's dtype. A second derivative raises ``RuntimeError``. Where ``kl_div``'s target
   requires grad, its gradient is PyTorch's formula (CANN's KlDivBackward gives only the
   input's).
2. :class:`ascend_backward`: a ``TorchFunctionMode`` (context manager or decorator) under which
   an unmodified model's calls of the five go through (1) where CANN's operator covers the
   form; every other form runs PyTorch's own code; :meth:`ascend_backward.summary` counts both.
3. :class:`autocompare`: judges, during backward, the gradient that the backend (PyTorch's CPU
   kernels, an NPU under torch_npu, or ascendgrad's own under :class:`ascend_backward`)
   computes for each call of the five w.r.t. its first input, against the float64 golden
   (:mod:`ascendgrad.judge`) under a named precision standard; failing calls can be saved as
   :mod:`ascendgrad.golden` case folders; a budget bounds its cost; under ``torch.distributed``
   :meth:`AutocompareReport.gather` makes one report of every rank's.

``import ascendgrad`` never imports this module or PyTorch.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import threading
import time
import warnings
import weakref
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

try:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
except ImportError as _e:  # pragma: no cover - exercised by a test in an environment without torch
    raise ImportError(
        "ascendgrad.torch needs PyTorch, an optional dependency: pip install 'ascendgrad[torch]' "
        "(or pip install torch)") from _e

import numpy as np

from . import _display, _files, _ops, judge, reference
from . import dump_check as _dc
from . import golden as _golden
from ._interop import asarray
from .compare import STANDARDS

__all__ = [
    "APIS",
    "Api",
    "softmax",
    "logsigmoid",
    "softshrink",
    "kl_div",
    "cross_entropy",
    "npu_cross_entropy_loss",
    "ascend_backward",
    "autocompare",
    "AutocompareReport",
    "GradientMismatchError",
    "GradientMismatchWarning",
    "FUSED_ATTENTION_REASON",
]

Tensor = torch.Tensor
_F = TypeVar("_F", bound=Callable[..., Any])
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_HALF = (torch.float16, torch.bfloat16)


# --------------------------------------------------------------------------------------------
# the kernels on tensors


def _host(t: Tensor) -> Tensor:
    """A host tensor over the same memory for CPU tensors, a copy for other devices."""
    t = t.detach()
    return t if t.device.type == "cpu" else t.cpu()


def _kernel(fn: Callable[..., Any], shape: Sequence[int], dtype: torch.dtype, device: torch.device,
            *args: Any, **kwargs: Any) -> Tensor:
    """Run an ascendgrad NumPy function on tensors: the result, of `shape` and `dtype`, is
    written by the kernel into a new host tensor (rounded once), then moved to `device`."""
    out = torch.empty(tuple(shape), dtype=dtype)
    fn(*(_host(a) if isinstance(a, Tensor) else a for a in args), out=out,
       **{k: _host(v) if isinstance(v, Tensor) else v for k, v in kwargs.items()})
    return out if device.type == "cpu" else out.to(device)


class _NoSecondDerivative(torch.autograd.Function):
    """Stands between a first derivative computed by a kernel and a graph built on it
    (create_graph=True), so that asking for the second derivative fails loudly instead of
    silently giving zero."""

    @staticmethod
    def forward(ctx: Any, name: str, result: Tensor, *deps: Tensor) -> Tensor:  # type: ignore[override]
        ctx.name = name
        return result.clone()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:  # type: ignore[override]
        raise RuntimeError(
            f"ascendgrad.torch.{ctx.name}: no second derivative: its backward is ascendgrad's kernel of "
            f"CANN's backward operator, which has no derivative of its own; use torch.nn.functional "
            f"(outside ascend_backward) for higher-order gradients")


def _first_order(name: str, result: Tensor, *deps: Optional[Tensor]) -> Tensor:
    if torch.is_grad_enabled():  # backward with create_graph=True
        live = [d for d in deps if d is not None and d.requires_grad]
        if live:
            return _NoSecondDerivative.apply(name, result, *live)  # type: ignore[no-any-return]
    return result


#: Inside a forward: PyTorch's own functions, unseen by any TorchFunctionMode (ours or a user's),
#: so that the call is seen once, as the operator it is.
_PyTorchOnly = torch._C.DisableTorchFunction


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, dim: int, dtype: Optional[torch.dtype]) -> Tensor:  # type: ignore[override]
        with _PyTorchOnly():
            y = torch.softmax(x, dim, dtype=dtype)
        ctx.save_for_backward(y)
        ctx.dim, ctx.x_dtype = dim, x.dtype
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        (y,) = ctx.saved_tensors
        gx = _kernel(_ops.softmax_backward, y.shape, ctx.x_dtype, y.device, g, y, ctx.dim)
        return _first_order("softmax", gx, g, y), None, None


class _LogSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:  # type: ignore[override]
        with _PyTorchOnly():
            y = F.logsigmoid(x)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        gx = _kernel(_ops.log_sigmoid_backward, x.shape, x.dtype, x.device, g, x)
        return _first_order("logsigmoid", gx, g, x)


class _Softshrink(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, lambd: float) -> Tensor:  # type: ignore[override]
        with _PyTorchOnly():
            y = F.softshrink(x, lambd)
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        return y

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        (x,) = ctx.saved_tensors
        gx = _kernel(_ops.softshrink_backward, x.shape, x.dtype, x.device, g, x, ctx.lambd)
        return _first_order("softshrink", gx, g, x), None


class _KlDiv(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, target: Tensor, reduction: str, log_target: bool) -> Tensor:  # type: ignore[override]
        with _PyTorchOnly():
            loss = F.kl_div(x, target, reduction=reduction, log_target=log_target)
        ctx.save_for_backward(x, target)
        ctx.reduction, ctx.log_target = reduction, log_target
        return loss

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:  # type: ignore[override]
        x, target = ctx.saved_tensors
        gx = gt = None
        if ctx.needs_input_grad[0]:
            gx = _kernel(_ops.kl_div_backward, x.shape, x.dtype, x.device, g, x, target, ctx.reduction,
                         ctx.log_target)
            gx = _first_order("kl_div", gx, g, x, target)
        if ctx.needs_input_grad[1]:  # not CANN's operator: PyTorch's own derivative w.r.t. target
            with torch.enable_grad(), _PyTorchOnly(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # 'mean' warns about 'batchmean' once, in forward
                t = target.detach().requires_grad_()
                loss = F.kl_div(x.detach(), t, reduction=ctx.reduction, log_target=ctx.log_target)
                (gt,) = torch.autograd.grad(loss, t, g)
        return gx, gt, None, None


class _CrossEntropy(torch.autograd.Function):
    """aclnnCrossEntropyLoss forward, aclnnCrossEntropyLossGrad backward; outputs (loss,
    log_prob, zloss, lse_for_zloss) as torch_npu's npu_cross_entropy_loss; ``fused`` False gives
    F.cross_entropy's loss shape (0-D for 'mean' and 'sum')."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, target: Tensor, weight: Optional[Tensor], reduction: str,  # type: ignore[override]
                ignore_index: int, label_smoothing: float, zscale: float, return_zloss: bool, fused: bool) -> Any:
        with _PyTorchOnly():
            loss, log_prob, zloss, lse = _ce_forward(x, target, weight, reduction, ignore_index,
                                                     label_smoothing, zscale, return_zloss, fused)
        # the loss (an output, a few bytes) is saved only to tie a second derivative to this node
        ctx.save_for_backward(log_prob, target, weight, lse, loss)
        ctx.args = (reduction, ignore_index, label_smoothing, zscale)
        ctx.mark_non_differentiable(log_prob, lse)
        if not return_zloss:
            ctx.mark_non_differentiable(zloss)
        return loss, log_prob, zloss, lse

    @staticmethod
    def backward(ctx: Any, g: Optional[Tensor], _glp: Any, gz: Optional[Tensor], _glse: Any) -> Any:  # type: ignore[override]
        log_prob, target, weight, lse, loss = ctx.saved_tensors
        reduction, ignore_index, label_smoothing, zscale = ctx.args
        if g is None:  # only the z-loss output was used
            g = torch.zeros((log_prob.shape[0],) if reduction == "none" else (), dtype=log_prob.dtype,
                            device=log_prob.device)
        z = {"grad_zloss": gz if gz is not None and gz.numel() else None,
             "lse_for_zloss": lse if zscale != 0.0 else None, "lse_square_scale_for_zloss": zscale}
        gx = _kernel(_ops.cross_entropy_loss_grad, log_prob.shape, log_prob.dtype, log_prob.device, g, log_prob,
                     target, weight, reduction=reduction, ignore_index=ignore_index,
                     label_smoothing=label_smoothing, **z)
        return (_first_order("cross_entropy", gx, g, gz, loss), None, None, None, None, None, None, None, None)


def _ce_forward(x: Tensor, target: Tensor, weight: Optional[Tensor], reduction: str, ignore_index: int,
                eps: float, zscale: float, return_zloss: bool, fused: bool) -> Tuple[Tensor, ...]:
    n, c = x.shape
    # x − logsumexp(x) by PyTorch's fused kernel; half types computed in float32, rounded once
    lp = torch.log_softmax(x, 1, dtype=torch.float32 if x.dtype in _HALF else x.dtype)
    lse = torch.logsumexp(x.to(lp.dtype), 1) if zscale else None
    m = target != ignore_index
    bad = m & ((target < 0) | (target >= c))
    if bool(bad.any()):
        raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")  # PyTorch's words
    t = torch.where(m, target, torch.zeros_like(target))
    w = None if weight is None else weight.to(lp.dtype)
    wt = torch.ones_like(lp[:, 0]) if w is None else w[t]
    li = (1.0 - eps) * wt * -lp.gather(1, t[:, None])[:, 0]
    if eps:
        li = li + (eps / c) * -(lp if w is None else lp * w).sum(1)
    zero = torch.zeros((), dtype=lp.dtype, device=x.device)
    li = torch.where(m, li, zero)
    zi = torch.where(m, zscale * lse * lse, zero) if lse is not None else None
    if reduction == "none":
        loss, zl = li, zi
    elif reduction == "sum":
        loss, zl = li.sum(), (zi.sum() if zi is not None else None)
    else:
        loss = li.sum() / torch.where(m, wt, zero).sum()
        zl = zi.sum() / m.sum() if zi is not None else None
    if zl is not None:
        loss = loss + zl
    if fused and reduction != "none":  # torch_npu's loss and zloss are [1]
        loss = loss.reshape(1)
        zl = zl.reshape(1) if zl is not None else None
    empty = x.new_empty((0,))
    zloss = (zl if zl is not None else torch.zeros_like(loss)).to(x.dtype) if return_zloss else empty
    return loss.to(x.dtype), lp.to(x.dtype), zloss, (lse.to(x.dtype) if lse is not None else empty)


# --------------------------------------------------------------------------------------------
# the PyTorch forms of the five: one entry each, read by the functions and both modes


@dataclasses.dataclass(frozen=True)
class Api:
    """One PyTorch form of an operator: msprobe's API name, its signature (parameter names in
    order, defaults), and the ascendgrad operator that computes its backward."""

    name: str
    params: Tuple[str, ...]
    defaults: Dict[str, Any]
    op: str


_SOFTMAX_DEFAULTS = {"dim": None, "_stacklevel": 3, "dtype": None}
_CE_PARAMS = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing")
_CE_DEFAULTS = {"weight": None, "size_average": None, "ignore_index": -100, "reduce": None, "reduction": "mean",
                "label_smoothing": 0.0}

#: The calls ascendgrad knows, by msprobe's API name.
APIS: Dict[str, Api] = {a.name: a for a in (
    Api("Functional.softmax", ("input", "dim", "_stacklevel", "dtype"), _SOFTMAX_DEFAULTS, "softmax_backward"),
    Api("Torch.softmax", ("input", "dim", "dtype"), {"dtype": None}, "softmax_backward"),
    Api("Tensor.softmax", ("input", "dim", "dtype"), {"dtype": None}, "softmax_backward"),
    Api("Functional.logsigmoid", ("input",), {}, "log_sigmoid_backward"),
    Api("Functional.softshrink", ("input", "lambd"), {"lambd": 0.5}, "softshrink_backward"),
    Api("Functional.cross_entropy", _CE_PARAMS, _CE_DEFAULTS, "cross_entropy_loss_grad"),
    Api("Functional.kl_div", ("input", "target", "size_average", "reduce", "reduction", "log_target"),
        {"size_average": None, "reduce": None, "reduction": "mean", "log_target": False}, "kl_div_backward"),
    Api("NPU.npu_cross_entropy_loss",
        ("input", "target", "weight", "reduction", "ignore_index", "label_smoothing", "lse_square_scale_for_zloss",
         "return_zloss"),
        {"weight": None, "reduction": "mean", "ignore_index": -100, "label_smoothing": 0.0,
         "lse_square_scale_for_zloss": 0.0, "return_zloss": False}, "cross_entropy_loss_grad"),
)}

# What a TorchFunctionMode sees for each (F.logsigmoid and F.softshrink are torch._C._nn's).
_API_OF_FUNC: Dict[Any, str] = {
    F.softmax: "Functional.softmax", torch.softmax: "Torch.softmax", Tensor.softmax: "Tensor.softmax",
    F.logsigmoid: "Functional.logsigmoid", F.softshrink: "Functional.softshrink",
    F.cross_entropy: "Functional.cross_entropy", F.kl_div: "Functional.kl_div",
}


# Attention whose softmax runs inside one call that ascendgrad does not see into (on the NPU:
# FlashAttentionScore, not SoftmaxBackward): counted with the reason, never routed or judged.
_FUSED_ATTENTION: Dict[Any, str] = {
    F.scaled_dot_product_attention: "Functional.scaled_dot_product_attention",
    F.multi_head_attention_forward: "Functional.multi_head_attention_forward",  # nn.MultiheadAttention
}
if hasattr(torch, "_native_multi_head_attention"):  # nn.MultiheadAttention's inference fast path
    _FUSED_ATTENTION[torch._native_multi_head_attention] = "Torch._native_multi_head_attention"
#: Why a fused attention call is neither routed nor judged (its count's reason).
FUSED_ATTENTION_REASON = ("fused attention: its softmax runs inside this one call (FlashAttentionScore on the NPU, "
                          "not SoftmaxBackward); eager attention (softmax(q @ k^T / sqrt(d)) @ v) is judged")


def _bind(api: Api, args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The call's arguments by name, defaults filled in; None when they do not fit the
    signature (PyTorch then raises its own error)."""
    if len(args) > len(api.params):
        return None
    b = dict(zip(api.params, args))
    for k, v in kwargs.items():
        k = "input" if k == "self" else k
        if k not in api.params or k in b:
            return None
        b[k] = v
    for k in api.params:
        if k not in b:
            if k not in api.defaults:
                return None
            b[k] = api.defaults[k]
    return b


def _real(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _tensor_problem(name: str, t: Any, dtypes: Tuple[torch.dtype, ...] = _FLOATS) -> Optional[str]:
    if not isinstance(t, Tensor):
        return f"{name} is {type(t).__name__}, not a tensor"
    if type(t) not in (Tensor, torch.nn.Parameter):
        return f"{name} is a tensor subclass ({type(t).__name__})"
    if t.device.type == "meta":
        return f"{name} is on the meta device"
    if t.dtype not in dtypes:
        return f"{name} dtype {str(t.dtype)[6:]} (the operator takes {', '.join(str(d)[6:] for d in dtypes)})"
    return None


def _uncovered(api: Api, b: Dict[str, Any]) -> Optional[str]:
    """Why CANN's operator does not cover this form of the call (None: it does)."""
    x = b["input"]
    why = _tensor_problem("input", x)
    if why:
        return why
    op = api.op
    if op == "softmax_backward":
        if b["dim"] is None:
            return "dim=None (PyTorch's implicit dim)"
        if not isinstance(b["dim"], int) or isinstance(b["dim"], bool):
            return f"dim {b['dim']!r} is not an int"
        if b["dtype"] is not None and b["dtype"] not in _FLOATS:
            return f"dtype={b['dtype']}"
        if x.dim() > 8:
            return f"rank {x.dim()} > 8 (SoftmaxBackward's limit)"
    elif op == "softshrink_backward":
        if not _real(b["lambd"]) or not b["lambd"] >= 0:
            return f"lambd {b['lambd']!r} is not a number >= 0"
    elif op == "cross_entropy_loss_grad":
        t, w = b["target"], b["weight"]
        if api.name == "Functional.cross_entropy" and (b["size_average"] is not None or b["reduce"] is not None):
            return "legacy size_average/reduce"
        if isinstance(t, Tensor) and t.is_floating_point():
            return "probability targets (CrossEntropyLossGrad takes class indices)"
        why = _tensor_problem("target", t, (torch.int64,))
        if why:
            return why
        if x.dim() != 2 or t.shape != x.shape[:1]:
            return (f"input {list(x.shape)} with target {list(t.shape)} "
                    f"(CrossEntropyLossGrad covers (N, C) input with (N,) targets)")
        if w is not None and (_tensor_problem("weight", w) or w.shape != x.shape[1:]):
            return f"weight {getattr(w, 'shape', w)} is not a float tensor of shape [{x.shape[1]}]"
        if b["reduction"] not in ("none", "mean", "sum"):
            return f"reduction {b['reduction']!r}"
        if not isinstance(b["ignore_index"], int) or not _real(b["label_smoothing"]) or \
                not 0.0 <= b["label_smoothing"] <= 1.0:
            return f"ignore_index {b['ignore_index']!r}, label_smoothing {b['label_smoothing']!r}"
        if not _real(b.get("lse_square_scale_for_zloss", 0.0)):
            return f"lse_square_scale_for_zloss {b['lse_square_scale_for_zloss']!r}"
    elif op == "kl_div_backward":
        t = b["target"]
        why = _tensor_problem("target", t)
        if why:
            return why
        if b["size_average"] is not None or b["reduce"] is not None:
            return "legacy size_average/reduce"
        if b["reduction"] not in reference.KL_REDUCTIONS or not isinstance(b["log_target"], bool):
            return f"reduction {b['reduction']!r}, log_target {b['log_target']!r}"
        try:
            shape = torch.broadcast_shapes(x.shape, t.shape)
        except RuntimeError:
            return f"target {list(t.shape)} does not broadcast with input {list(x.shape)}"
        if shape != x.shape:
            return f"target {list(t.shape)} broadcasts input {list(x.shape)} to {list(shape)}"
    return None


def _forward(api: Api, b: Dict[str, Any]) -> Any:
    """The call through the autograd functions above."""
    x, op = b["input"], api.op
    if op == "softmax_backward":
        return _Softmax.apply(x, b["dim"], b["dtype"])
    if op == "log_sigmoid_backward":
        return _LogSigmoid.apply(x)
    if op == "softshrink_backward":
        return _Softshrink.apply(x, float(b["lambd"]))
    if op == "kl_div_backward":
        return _KlDiv.apply(x, b["target"], b["reduction"], b["log_target"])
    fused = api.name == "NPU.npu_cross_entropy_loss"
    out = _CrossEntropy.apply(x, b["target"], b["weight"], b["reduction"], b["ignore_index"],
                              float(b["label_smoothing"]), float(b.get("lse_square_scale_for_zloss", 0.0)),
                              bool(b.get("return_zloss", False)), fused)
    return out if fused else out[0]


# --------------------------------------------------------------------------------------------
# the modes: a thread's stack of ours, so that a call routed by ascend_backward is also tapped by
# the autocompare modes entered before it (those never see the routed call)

_local = threading.local()


def _stack() -> List["_Mode"]:
    s: Optional[List[_Mode]] = getattr(_local, "modes", None)
    if s is None:
        s = _local.modes = []
    return s


class _Mode(TorchFunctionMode):
    _kind = ""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._warned: set = set()

    def __enter__(self) -> Any:
        super().__enter__()
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        s = _stack()
        for i in range(len(s) - 1, -1, -1):
            if s[i] is self:
                del s[i]
                break
        super().__exit__(*exc)

    def _warn_once(self, key: str, text: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        warnings.warn(f"ascendgrad.torch.{self._kind}: {text}", stacklevel=4)

    def _not_now(self) -> Optional[str]:
        """Why no call can be routed or checked right now (warned once per mode)."""
        if torch.compiler.is_compiling():
            self._warn_once("compile", "calls inside torch.compile are traced once and run PyTorch's kernels; "
                                       "they are passed through, counted as 'torch.compile'")
            return "torch.compile"
        if not torch.is_grad_enabled():
            self._warn_once("nograd", "calls under torch.no_grad() or inference mode have no backward; they are "
                                      "passed through, counted as 'grad disabled'")
            return "grad disabled"
        return None

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: Optional[Dict[str, Any]] = None) -> Any:
        kwargs = kwargs or {}
        try:
            name = _API_OF_FUNC.get(func)
            fused = None if name is not None else _FUSED_ATTENTION.get(func)
        except TypeError:  # an unhashable callable
            name = fused = None
        if fused is not None:
            self._passed(fused, FUSED_ATTENTION_REASON)
        if name is None:
            return func(*args, **kwargs)
        return self._call(APIS[name], func, args, kwargs)

    def _call(self, api: Api, func: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        raise NotImplementedError

    def _passed(self, api: str, why: str) -> None:
        """A call this mode sees but neither routes nor judges, counted with the reason."""
        raise NotImplementedError


def _run(api: Api, b: Dict[str, Any], taps: Iterable["autocompare"]) -> Any:
    """The call through ascendgrad, tapped by the given autocompare modes."""
    recs = [r for r in (m._start(api, b) for m in taps) if r is not None]
    for r in recs:
        b = dict(b, input=r.tap_input(b["input"]))
    out = _forward(api, b)
    for r in recs:
        r.tap_output(out)
    return out


def _direct(api_name: str, b: Dict[str, Any]) -> Any:
    """A direct call of one of this module's functions: refused where CANN's operator does not
    cover the form; tapped by every active autocompare (no mode sees these calls)."""
    api = APIS[api_name]
    why = _uncovered(api, b)
    if why:
        raise ValueError(f"ascendgrad.torch: {api_name} in this form is not CANN's operator: {why}")
    return _run(api, b, [m for m in _stack() if isinstance(m, autocompare)])


# --------------------------------------------------------------------------------------------
# 1. the functions


def softmax(input: Tensor, dim: int, dtype: Optional[torch.dtype] = None) -> Tensor:
    """``torch.nn.functional.softmax`` whose backward is SoftmaxBackward (ascendgrad's kernel).

    ``dtype``: as PyTorch, the input is cast to it first; the gradient comes back in the
    input's dtype (computed in ``dtype``'s compute type, rounded once). float16, bfloat16,
    float32, float64; rank 0..8. ValueError for another form.
    """
    return _direct("Functional.softmax", {"input": input, "dim": dim, "dtype": dtype})


def logsigmoid(input: Tensor) -> Tensor:
    """``torch.nn.functional.logsigmoid`` whose backward is LogSigmoidBackward (g·σ(−x), stable)."""
    return _direct("Functional.logsigmoid", {"input": input})


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``torch.nn.functional.softshrink`` whose backward is SoftshrinkBackward (g outside the
    closed band [−λ, λ], 0 inside, NaN for NaN input)."""
    return _direct("Functional.softshrink", {"input": input, "lambd": lambd})


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``torch.nn.functional.kl_div`` whose backward w.r.t. ``input`` is KlDivBackward.

    ``target`` must broadcast to ``input``'s shape. Where ``target`` requires grad, its
    gradient is PyTorch's formula (CANN's operator computes only the input's).
    """
    return _direct("Functional.kl_div", {"input": input, "target": target, "size_average": None, "reduce": None,
                                         "reduction": reduction, "log_target": log_target})


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """``torch.nn.functional.cross_entropy`` for (N, C) logits and (N,) int64 class indices:
    forward as CANN's aclnnCrossEntropyLoss (``log_prob = x − logsumexp(x)``, half types in
    float32), backward w.r.t. the logits by CrossEntropyLossGrad (the fused kernel). The loss
    is 0-D for 'mean' and 'sum', (N,) for 'none', in the input's dtype; a target outside
    [0, C) that is not ``ignore_index`` raises IndexError, as PyTorch.
    """
    return _direct("Functional.cross_entropy", {
        "input": input, "target": target, "weight": weight, "size_average": None, "ignore_index": ignore_index,
        "reduce": None, "reduction": reduction, "label_smoothing": label_smoothing})


def npu_cross_entropy_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                           reduction: str = "mean", ignore_index: int = -100, label_smoothing: float = 0.0,
                           lse_square_scale_for_zloss: float = 0.0, return_zloss: bool = False
                           ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """torch_npu's fused ``npu_cross_entropy_loss``, so that code written for it runs on a CPU.

    Returns ``(loss, log_prob, zloss, lse_for_zloss)``: loss (N,) for 'none', else (1,), in the
    input's dtype, including the z-loss term ``ζ·lse²`` when ``lse_square_scale_for_zloss`` = ζ
    is not 0; log_prob (N, C); zloss shaped as loss when ``return_zloss``, else empty;
    lse_for_zloss (N,) when ζ ≠ 0, else empty. The gradient w.r.t. the logits flows from loss
    and zloss through CrossEntropyLossGrad; log_prob and lse_for_zloss carry none.
    """
    out = _direct("NPU.npu_cross_entropy_loss", {
        "input": input, "target": target, "weight": weight, "reduction": reduction, "ignore_index": ignore_index,
        "label_smoothing": label_smoothing, "lse_square_scale_for_zloss": lse_square_scale_for_zloss,
        "return_zloss": return_zloss})
    return tuple(out)  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# 2. ascend_backward


class ascend_backward(_Mode):
    """Context manager and decorator: inside it, every call of ``F.softmax`` / ``torch.softmax``
    / ``Tensor.softmax``, ``F.logsigmoid``, ``F.softshrink``, ``F.cross_entropy`` and
    ``F.kl_div`` (so ``nn.Softmax``, ``nn.LogSigmoid``, ``nn.Softshrink``,
    ``nn.CrossEntropyLoss``, ``nn.KLDivLoss`` too) in a form CANN's operator covers runs through
    this module's functions: PyTorch's forward, CANN's backward. Other forms (probability
    targets, K-dim cross entropy, integer dtypes, ...) and calls that need no backward
    (``torch.no_grad()``, inference mode, inputs without grad) or are traced by
    ``torch.compile`` run PyTorch's own code unchanged (the last two warned once).

    Nestable, exception-safe, per thread (PyTorch's mode stack is). :meth:`summary` and
    :attr:`counts` say, per API, how many calls were routed and how many passed through, and why.
    """

    _kind = "ascend_backward"

    def __init__(self) -> None:
        super().__init__()
        self._counts: Dict[str, Counter] = defaultdict(Counter)

    def __call__(self, fn: _F) -> _F:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    @property
    def counts(self) -> Dict[str, Dict[str, int]]:
        """How many calls were routed, and passed through by reason, per API (msprobe's name), as
        ``{"Functional.softmax": {"routed": n, "<reason>": n, ...}, ...}``."""
        with self._lock:
            return {k: dict(v) for k, v in self._counts.items()}

    def __repr__(self) -> str:
        counts = self.counts
        routed = sum(c.get("routed", 0) for c in counts.values())
        passed = sum(n for c in counts.values() for why, n in c.items() if why != "routed")
        why: Counter = Counter()
        for c in counts.values():
            why.update({k: n for k, n in c.items() if k != "routed"})
        top = "; ".join(f"{n} {k}" for k, n in why.most_common(2))
        return _display.lines(f"<ascend_backward: {routed} calls routed through ascendgrad, {passed} passed through>",
                              f"passed through: {top}" if top else "")

    def _repr_html_(self) -> str:
        D = _display
        rows = [(api, c.get("routed", 0), "; ".join(f"{n} {why}" for why, n in sorted(c.items()) if why != "routed")
                 or "-") for api, c in sorted(self.counts.items())]
        routed = sum(r[1] for r in rows)
        return str(D.report("ascend_backward", f"{routed} calls routed through ascendgrad",
                            [str(D.table(("api", "routed", "passed through (why)"), rows))]))

    def summary(self) -> str:
        """A table: per API, calls routed through ascendgrad and calls passed through, by reason."""
        rows = [("api", "routed", "passed through (why)")]
        for api, c in sorted(self.counts.items()):
            other = ", ".join(f"{n} {why}" for why, n in sorted(c.items()) if why != "routed")
            rows.append((api, str(c.get("routed", 0)), other or "-"))
        w = [max(len(r[i]) for r in rows) for i in range(2)]
        return "\n".join(f"{r[0].ljust(w[0])}  {r[1].rjust(w[1])}  {r[2]}" for r in rows)

    def _passed(self, api: str, why: str) -> None:
        with self._lock:
            self._counts[api][why] += 1

    def _call(self, api: Api, func: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        b = _bind(api, args, kwargs)
        why = self._not_now() or ("arguments do not fit the signature" if b is None else _uncovered(api, b))
        if not why and not any(isinstance(v, Tensor) and v.requires_grad for v in b.values()):  # type: ignore[union-attr]
            why = "no input requires grad"
        with self._lock:
            self._counts[api.name][why or "routed"] += 1
        if why:
            return func(*args, **kwargs)
        s = _stack()
        outer = s[: max(i for i, m in enumerate(s) if m is self)] if self in s else []
        return _run(api, b, [m for m in outer if isinstance(m, autocompare)])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# 3. autocompare


class GradientMismatchError(AssertionError):
    """A backend's gradient failed the precision standard (``autocompare(on_fail="raise")``)."""


class GradientMismatchWarning(UserWarning):
    """A backend's gradient failed the precision standard (``autocompare(on_fail="warn")``)."""


def _golden_of(api: Api, attrs: Dict[str, Any], saved: Dict[str, Tensor], g: Tensor, gz: Optional[Tensor],
               actual: np.ndarray) -> Tuple[_dc.Prepared, Callable[[], Dict[str, np.ndarray]]]:
    """The call as dump-check prepares it (the golden's inputs; the judge computes it by slices)
    and a maker of its golden case's inputs (the NumPy function's keywords, in the call's dtypes)."""
    x = asarray(saved["input"])
    gn = asarray(g)
    dt = x.dtype
    op = api.op
    gold: Dict[str, Any]
    if op == "softmax_backward":
        y = reference.softmax(x, attrs["dim"])
        gold = {"grad_output": gn, "output": y}
        case = lambda: {"grad_output": gn, "output": _golden.round_to(y, gn.dtype)}  # noqa: E731
    elif op in ("log_sigmoid_backward", "softshrink_backward"):
        gold = {"grad_output": gn, "x": x}
        case = lambda: {"grad_output": gn, "x": x}  # noqa: E731
    elif op == "kl_div_backward":
        t = asarray(saved["target"])
        gold = {"grad_output": gn, "x": x, "target": t}
        case = lambda: {"grad_output": gn, "x": x, "target": t}  # noqa: E731
    else:
        gold = {"grad_loss": gn.reshape(()) if gn.size == 1 and attrs["reduction"] != "none" else gn,
                "log_prob": judge.LogSoftmaxRows(x), "target": asarray(saved["target"])}
        if "weight" in saved:
            gold["weight"] = asarray(saved["weight"])
        if attrs.get("lse_square_scale_for_zloss"):
            gold["lse_for_zloss"] = reference.logsumexp(x, -1)
            if gz is not None:
                gold["grad_zloss"] = asarray(gz).reshape(gold["grad_loss"].shape)

        def case() -> Dict[str, np.ndarray]:
            c = dict(gold, log_prob=_golden.round_to(np.asarray(gold["log_prob"]), dt))
            if "lse_for_zloss" in c:
                c["lse_for_zloss"] = _golden.round_to(c["lse_for_zloss"], dt)
            return c
    return _dc.Prepared(op, {}, attrs, gold, actual, "the gradient w.r.t. the call's input", x.shape), case


class _Record:
    """One tapped call, from its forward to its judgement: its saved inputs (host copies), the
    upstream gradient(s) seen by the output hooks. Held only by the hooks in the autograd graph:
    freed with the graph, reported as forward-only if no input gradient reached it."""

    def __init__(self, report: "AutocompareReport", seq: int, name: str, api: Api, attrs: Dict[str, Any],
                 saved: Dict[str, Tensor], step: int, key: Tuple[Any, ...], cost: float) -> None:
        self.report, self.seq, self.name, self.api, self.attrs = report, seq, name, api, attrs
        self.step, self.key, self.cost = step, key, cost  # cost: the CPU seconds reserved for it (budget)
        self.saved: Optional[Dict[str, Tensor]] = saved
        self.versions = {k: t._version for k, t in saved.items() if t.device.type == "cpu" and
                         k in _KEPT_BY_AUTOGRAD.get(api.op, ())}
        x = saved["input"]
        self.dtype, self.shape = str(x.dtype)[6:], list(x.shape)
        self.g: Optional[Tensor] = None
        self.gz: Optional[Tensor] = None
        self._finalizer = weakref.finalize(self, report._forward_only, seq, name, self.dtype, self.shape, step, cost)

    def tap_input(self, x: Tensor) -> Tensor:
        xt = x.view_as(x)  # used by this call alone: its gradient is this call's
        xt.register_hook(self._input_grad)
        return xt

    def tap_output(self, out: Any) -> None:
        outs = out if isinstance(out, tuple) else (out,)
        outs[0].register_hook(self._grad_output)
        if len(outs) > 2 and outs[2].requires_grad:  # npu_cross_entropy_loss's zloss
            outs[2].register_hook(self._grad_zloss)

    def _grad_output(self, g: Tensor) -> None:
        self.g = g.detach()

    def _grad_zloss(self, g: Tensor) -> None:
        self.gz = g.detach()

    def _input_grad(self, gx: Tensor) -> None:
        saved, self.saved = self.saved, None
        if saved is None:  # a second backward through a retained graph: judged once
            return
        self._finalizer.detach()
        g, gz, self.g, self.gz = self.g, self.gz, None, None
        self.report._backward_ran(self, saved, gx, g, gz)


def _background() -> None:
    """This thread (a judging thread beside the step) yields to the step's threads: a lower
    scheduling priority where the OS has one per thread (Linux), once."""
    if getattr(_local, "background", False):
        return
    _local.background = True
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):  # not Linux, or not allowed: the same results, later
        pass


_GLOO: Dict[Any, Any] = {}


def _gloo_group() -> Any:
    """A gloo group of every rank, made once per default group: reports travel as Python objects,
    whatever backend the training uses."""
    import torch.distributed as dist

    key = id(dist.group.WORLD)
    if key not in _GLOO:
        _GLOO[key] = dist.new_group(backend="gloo")
    return _GLOO[key]


#: Gradients of this many elements and more are judged beside the step (on_fail="record");
#: smaller ones in the hook, where judging costs less than handing the call to a thread.
_BESIDE = 1 << 20


class AutocompareReport:
    """What :class:`autocompare` found: :attr:`~AutocompareReport.calls` (one entry per call,
    dump-check's JSON schema), :attr:`~AutocompareReport.failed`, :meth:`~AutocompareReport.summary`,
    :meth:`~AutocompareReport.to_json`."""

    def __init__(self, standard: str, on_fail: str, save_dir: Optional[str]) -> None:
        self.standard, self.on_fail, self.save_dir = standard, on_fail, save_dir
        self._lock = threading.Lock()
        self._results: List[Tuple[int, _dc.CallResult]] = []
        self._not_judged: Dict[str, Counter] = defaultdict(Counter)
        self._pending = 0
        self._bytes = 0
        self._seconds = 0.0
        self._rank: Any = None
        self._saved_cases: List[str] = []
        self._cpu = 0.0  # CPU seconds the judging took (measured), and those reserved by calls to come
        self._reserved = 0.0
        self._cost: Dict[Tuple[Any, ...], float] = {}  # the last CPU seconds per (API, shape, dtype)
        self._pool: Optional[ThreadPoolExecutor] = None  # on_fail="record": judged beside the step
        self._futures: List[Future] = []
        self._slots = threading.Semaphore(2)  # calls waiting for their verdict: bounded memory

    def _drain(self) -> None:
        """Wait for the verdicts still being computed (every reader does, first)."""
        with self._lock:
            futures, self._futures = self._futures, []
        for f in futures:
            f.result()

    # -- reading

    @property
    def calls(self) -> List[_dc.CallResult]:
        """Every call judged (pass / fail / not comparable), in the order the calls were made."""
        self._drain()
        with self._lock:
            return [r for _, r in sorted(self._results, key=lambda sr: sr[0])]

    @property
    def failed(self) -> List[_dc.CallResult]:
        """The calls whose verdict is ``fail``."""
        return [c for c in self.calls if c.verdict == _dc.FAIL]

    @property
    def not_judged(self) -> Dict[str, Dict[str, int]]:
        """Per API, calls seen but not judged, by reason (``every``, ``apis``, no grad, ...)."""
        self._drain()
        with self._lock:
            return {k: dict(v) for k, v in self._not_judged.items()}

    @property
    def pending(self) -> int:
        """Calls whose forward ran and whose backward has not (yet)."""
        self._drain()
        with self._lock:
            return self._pending

    @property
    def saved_cases(self) -> List[str]:
        """Folders written under ``save_dir`` (one per failed call)."""
        self._drain()
        with self._lock:
            return list(self._saved_cases)

    def _result(self) -> _dc.DumpResult:
        return _dc.DumpResult(self.standard, "autocompare", self.calls, self._bytes, self._seconds)

    def by_rank(self) -> List[Dict[str, Any]]:
        """One entry per (step, rank), as dump-check's ``summary.by_rank``: ``{"step", "rank",
        "pass", "fail", "not comparable"}`` (the step: which entry of the ``autocompare`` object,
        from 0; the rank: ``torch.distributed``'s, None without it)."""
        return self._result().by_rank()

    def plot(self, path: Union[str, os.PathLike[str]]) -> str:
        """A heat map of failures, step/rank by API, as a PNG at ``path`` (dump-check's
        ``ranks.png``; needs matplotlib). Returns the path."""
        out = os.fspath(path)
        _dc.plot_ranks(out, self._result())
        return out

    def gather(self, dst: int = 0) -> Optional["AutocompareReport"]:
        """Every rank's report in one, on rank ``dst`` (None on the others): a collective that
        every rank of ``torch.distributed``'s default group calls, over a gloo group of its own
        (whatever the training's backend: hccl, nccl, gloo). The calls keep their ranks, in rank
        order; ``summary()`` then ends with the rank × API table of failures."""
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("AutocompareReport.gather needs torch.distributed initialised (every rank calls it)")
        group = _gloo_group()
        rank, world = dist.get_rank(), dist.get_world_size()
        mine = {"rank": rank, "calls": [c.to_dict() for c in self.calls], "not_judged": self.not_judged,
                "pending": self.pending, "bytes": self._bytes, "seconds": self._seconds, "cpu": self._cpu,
                "saved_cases": self.saved_cases}
        parts: Optional[List[Any]] = [None] * world if rank == dst else None
        dist.gather_object(mine, parts, dst=dst, group=group)
        if parts is None:
            return None
        out = AutocompareReport(self.standard, self.on_fail, self.save_dir)
        for part in sorted(parts, key=lambda d: d["rank"]):
            for i, c in enumerate(part["calls"]):
                out._results.append(((part["rank"], i), _dc.CallResult(**c)))  # type: ignore[arg-type]
            for api, reasons in part["not_judged"].items():
                out._not_judged[api].update(reasons)
            out._pending += part["pending"]
            out._bytes += part["bytes"]
            out._seconds += part["seconds"]
            out._cpu += part["cpu"]
            out._saved_cases += part["saved_cases"]
        out._rank = rank
        return out

    def __repr__(self) -> str:
        r = self._result()
        s = r.summary()
        word = "FAILED" if s["fail"] else ("PASSED" if s["pass"] else "NOTHING JUDGED")
        skipped = sum(n for c in self.not_judged.values() for n in c.values())
        pairs = len(s["by_rank"])
        head = (f"<AutocompareReport: {word} under {self.standard}, {s['calls']} calls: {s['pass']} pass, "
                f"{s['fail']} fail, {s['not comparable']} not comparable; {skipped} not judged"
                + (f"; {pairs} step/rank pairs" if pairs > 1 else "") + ">")
        first = next((c for c in r.calls if c.verdict == _dc.FAIL), None)
        return _display.lines(head, _describe(first) if first else "")

    def _repr_html_(self) -> str:
        nj = self.not_judged
        notes = ["not judged: " + "; ".join(f"{api}: " + ", ".join(f"{n} {why}" for why, n in sorted(c.items()))
                                            for api, c in sorted(nj.items()))] if nj else []
        return str(_dc.result_html(self._result(), "autocompare", None, notes))

    def plot_call(self, name: str, rank: Any = None) -> Any:
        """The figure of one failed call (where its errors lie, their histogram against the
        standard's threshold: :func:`ascendgrad._display.figure`), from its case folder under
        ``save_dir``: the golden recomputed from the saved inputs (cross entropy's log_prob as saved,
        in the call's dtype). ValueError where no folder was saved for it."""
        root = self.save_dir
        rank = self._rank_now() if rank is None else rank
        folder = None if root is None else os.path.join(root, *([f"rank{rank}"] if rank is not None else []), name)
        if folder is None or not os.path.isdir(folder):
            raise ValueError(f"{name}: no case folder of it (autocompare(save_dir=...) keeps one per failed call)")
        case = _golden.load_case(folder)
        actual = next(iter(_golden.load_case(os.path.join(folder, "actual")).outputs.values()))
        rep, _, score = judge.judge_op(case.op, case.inputs, case.attrs, actual, standard=self.standard,
                                       want_score=True)
        verdict = "pass" if rep.passed else "fail"
        return _display.figure(score, name, verdict, "; ".join(rep.reasons), self.standard)

    def summary(self) -> str:
        """The calls as dump-check prints them (with more than one rank, the rank × API table of
        failures), then the calls not judged and why."""
        lines = [_dc.table(self._result())]
        nj = self.not_judged
        if nj:
            lines.append("not judged: " + "; ".join(
                f"{api}: " + ", ".join(f"{n} {why}" for why, n in sorted(c.items())) for api, c in sorted(nj.items())))
        if self.pending:
            lines.append(f"{self.pending} calls still wait for their backward")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """``dump-check --json``'s document (standard, calls, summary) plus ``not_judged`` and
        ``pending``."""
        d = self._result().to_dict()
        d["dump"] = None
        d["not_judged"] = self.not_judged
        d["pending"] = self.pending
        return d

    def to_json(self, path: Union[str, os.PathLike[str]]) -> None:
        """Write :meth:`~AutocompareReport.to_dict` as strict JSON (NaN and infinities as strings)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(_files.strict_json(self.to_dict()), f, indent=1, allow_nan=False)
            f.write("\n")

    # -- writing (from the modes and the hooks)

    def _skip(self, api: str, why: str) -> None:
        with self._lock:
            self._not_judged[api][why] += 1

    def _add(self, seq: int, res: _dc.CallResult) -> None:
        with self._lock:
            self._results.append((seq, res))

    def _rank_now(self) -> Any:
        if self._rank is None and torch.distributed.is_available() and torch.distributed.is_initialized():
            self._rank = torch.distributed.get_rank()
        return self._rank

    def _started(self, nbytes: int, cpu: float) -> None:
        """A call to judge: its inputs' host copies made (their CPU time is the judging's)."""
        with self._lock:
            self._pending += 1
            self._bytes += nbytes
            self._cpu += cpu

    def _forward_only(self, seq: int, name: str, dtype: str, shape: List[int], step: int, cost: float) -> None:
        with self._lock:
            self._pending -= 1
            self._reserved -= cost
        self._add(seq, _dc.CallResult(name, step, self._rank_now(), dtype, shape, _dc.NC,
                                      "forward only: no gradient w.r.t. its input was computed before its graph "
                                      "was freed", {}, None))

    def _backward_ran(self, rec: _Record, saved: Dict[str, Tensor], gx: Tensor, g: Optional[Tensor],
                      gz: Optional[Tensor]) -> None:
        """From the input's hook: judged now when a failure is to warn or raise there, or when
        the call is small; else on the report's own threads while the step goes on, from host
        copies of the gradients (autograd may write into their memory once the hook returns: a
        parameter's .grad)."""
        with self._lock:
            self._pending -= 1
        if self.on_fail != "record" or gx.numel() < _BESIDE:
            self._judge(rec, saved, gx, g, gz)
            return
        c0 = time.process_time()
        gx, g, gz = (None if t is None else t.detach().to("cpu", copy=True) for t in (gx, g, gz))
        with self._lock:
            self._cpu += time.process_time() - c0
        self._slots.acquire()
        with self._lock:
            if self._pool is None:
                # two calls judged at once: a step's largest calls (the losses' 2-D gradients over
                # a vocabulary) come one after the other in its backward
                self._pool = ThreadPoolExecutor(2, thread_name_prefix="ascendgrad-autocompare")
                weakref.finalize(self, self._pool.shutdown, wait=False)
            self._futures.append(self._pool.submit(self._judge_beside, rec, saved, gx, g, gz))

    def _judge_beside(self, rec: _Record, saved: Dict[str, Tensor], gx: Tensor, g: Optional[Tensor],
                      gz: Optional[Tensor]) -> None:
        _background()
        try:
            with judge.limit_threads(1):  # one core each: the step keeps the others
                self._judge(rec, saved, gx, g, gz)
        finally:
            self._slots.release()

    def _judge(self, rec: _Record, saved: Dict[str, Tensor], gx: Tensor, g: Optional[Tensor],
               gz: Optional[Tensor]) -> None:
        t0, c0, th0 = time.perf_counter(), time.process_time(), time.thread_time()
        call = _dc.Call(rec.name, rec.api.name, _dc.Rank("", rec.step, self._rank_now()), None, None)
        actual = asarray(_host(gx))
        case: Callable[[], Dict[str, np.ndarray]] = dict
        p: Union[_dc.Prepared, _dc.NotComparable]
        changed = _changed(saved, rec.versions)
        if g is None:
            p = _dc.NotComparable("no upstream gradient reached the call's output")
        elif changed:
            p = _dc.NotComparable(f"{', '.join(changed)} changed in place after the call: its values at the call "
                                  f"are gone")
        else:
            try:
                p, case = _golden_of(rec.api, rec.attrs, saved, _host(g), None if gz is None else _host(gz), actual)
            except _dc.NotComparable as e:
                p = e
            except Exception as e:  # never break the user's backward over a golden
                p = _dc.NotComparable(f"no golden: {type(e).__name__}: {e}")
        res = _dc.judge_prepared(call, p, self.standard)[0]
        if res.verdict == _dc.FAIL and self.save_dir is not None and isinstance(p, _dc.Prepared):
            self._save(rec, p, case, actual)
        with self._lock:
            self._seconds += time.perf_counter() - t0
            # beside the step it runs on this thread alone (limit_threads(1)): this thread's CPU
            # time; in the hook, on ascendgrad's threads while the step waits: the process's
            cpu = time.thread_time() - th0 if getattr(_local, "background", False) else time.process_time() - c0
            self._cpu += cpu
            self._reserved -= rec.cost
            self._cost[rec.key] = cpu
        self._add(rec.seq, res)
        if res.verdict == _dc.FAIL and self.on_fail != "record":
            msg = _describe(res)
            if self.on_fail == "raise":
                raise GradientMismatchError(msg)
            warnings.warn(msg, GradientMismatchWarning, stacklevel=2)

    def _save(self, rec: _Record, p: _dc.Prepared, inputs: Callable[[], Dict[str, np.ndarray]],
              actual: np.ndarray) -> None:
        """The failed call as a golden case folder, the backend's gradient in its ``actual/``:
        ``python -m ascendgrad golden --check DIR --actual DIR/actual`` gives the verdict again."""
        root = os.fspath(self.save_dir)  # type: ignore[arg-type]
        rank = self._rank_now()
        if rank is not None:
            root = os.path.join(root, f"rank{rank}")
        spec = _golden.OPS[rec.api.op]
        dt = actual.dtype
        attrs = {k: v for k, v in p.params.items() if any(a.name == k and a.kind == "attr" for a in spec.args)}
        case = _golden.Case(rec.api.op, inputs(), attrs, {spec.output: _golden.round_to(p.golden, dt)},
                            id=rec.seq, name=rec.name, source="autocompare")
        folder = _golden.write_case(case, os.path.join(root, rec.name))
        _golden.write_case(dataclasses.replace(case, inputs={}, outputs={spec.output: actual}),
                           os.path.join(folder, "actual"))
        with self._lock:
            self._saved_cases.append(folder)


def _describe(res: _dc.CallResult) -> str:
    w = res.worst
    where = (f"; worst element {tuple(w['index'])}: backend {w['dumped']!r}, golden {w['golden']!r}"
             if w else "")
    return f"{res.api} ({res.dtype} {res.shape}): gradient fails: {res.reason}{where}"


# The inputs whose values at the call autograd itself keeps for the backward (it refuses a backward
# after an in-place change): a CPU tensor among them is kept as it is, not copied. kl_div's
# gradient does not read its input's values at all (only its shape).
_KEPT_BY_AUTOGRAD = {"log_sigmoid_backward": ("input",), "softshrink_backward": ("input",),
                     "kl_div_backward": ("input", "target")}


def _saved_inputs(api: Api, b: Dict[str, Any]) -> Dict[str, Tensor]:
    """What the golden needs, as the call saw it: host copies (the model may change its tensors
    later), but the CPU tensors autograd keeps itself (:data:`_KEPT_BY_AUTOGRAD`), which stay as
    they are; their versions are checked when the call is judged."""
    names = ("input",) if api.op in ("softmax_backward", "log_sigmoid_backward", "softshrink_backward") else \
        ("input", "target", "weight")
    kept = _KEPT_BY_AUTOGRAD.get(api.op, ())
    out = {}
    for k in names:
        t = b.get(k)
        if isinstance(t, Tensor):
            t = t.detach()
            out[k] = t if k in kept and t.device.type == "cpu" else t.to("cpu", copy=True)
    return out


def _changed(saved: Dict[str, Tensor], versions: Dict[str, int]) -> List[str]:
    """The inputs kept as they are that changed in place since the call."""
    return [k for k, v in versions.items() if saved[k]._version != v]


def _attrs(api: Api, b: Dict[str, Any]) -> Dict[str, Any]:
    """The call's attributes under the NumPy function's names (the golden case's)."""
    op = api.op
    if op == "softmax_backward":
        return {"dim": b["dim"] % max(b["input"].dim(), 1)}
    if op == "softshrink_backward":
        return {"lambd": float(b["lambd"])}
    if op == "kl_div_backward":
        return {"reduction": b["reduction"], "log_target": b["log_target"]}
    if op == "cross_entropy_loss_grad":
        a = {"reduction": b["reduction"], "ignore_index": int(b["ignore_index"]),
             "label_smoothing": float(b["label_smoothing"])}
        if b.get("lse_square_scale_for_zloss"):
            a["lse_square_scale_for_zloss"] = float(b["lse_square_scale_for_zloss"])
        return a
    return {}


class autocompare(_Mode):
    """Judge a backend's gradients of the five operators while the step runs.

    ``with autocompare(...) as report:`` — every call of the APIs :class:`ascend_backward`
    routes (any device), and of this module's functions, is tapped: a hook on a view of its
    first input and one on its output capture, during backward, the gradient the backend
    computed for that call alone and the upstream gradient it received. The golden and the
    verdict are the judge's (:mod:`ascendgrad.judge`: float64, by slices on ascendgrad's
    threads, under the named standard) on host copies of the forward's inputs, with the call's
    attributes. The taps change nothing: every gradient is bitwise what it is without them.

    Args:
        standard: ``"cann"`` (default), ``"cann-v1"`` or ``"msprobe"`` (``dual-benchmark``
            needs a third-party result and is refused).
        on_fail: ``"record"`` (default) only records, judging on a thread of the report's own
            while the step goes on (gradients of 2^20 elements and more; at most two calls
            wait for a verdict; reading the report waits for them); ``"warn"`` warns
            (:class:`GradientMismatchWarning`) per failed call; ``"raise"`` raises
            :class:`GradientMismatchError` (an ``AssertionError``) out of ``backward()`` at
            the first failed call, naming it and its worst element.
        save_dir: where each failed call is written as a :mod:`ascendgrad.golden` case folder
            (``save_dir/[rank<r>/]<call>/``, the backend's gradient in its ``actual/``).
        apis: patterns (fnmatch) of API or call names to judge, e.g. ``"*softmax*"``; default all.
        every: judge every N-th call of each API (1: all).
        budget: a bound on the judging's cost instead: the CPU time spent judging stays at most
            this fraction of the CPU time of the steps it was entered around (e.g. 0.02). Calls are chosen so that, over the steps, every (API, shape, dtype) the model
            calls is judged, the least judged first; a call is judged when the time saved up
            covers its cost (measured on its last judgement; before that, estimated from its
            size). The calls left out are counted in ``not_judged`` as ``"budget"``.

    The object may be entered again (e.g. once per step): its report, its call numbers and its
    budget's state carry over; each call's ``step`` in the report is the entry it ran in (from 0).
    Fused attention (``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``) holds its
    softmax inside one call that ascendgrad does not see into: such calls are counted in
    ``not_judged`` with the reason (:data:`FUSED_ATTENTION_REASON`).

    A call's saved tensors are dropped as soon as it is judged, or with its autograd graph when
    no backward reaches it (reported ``not comparable``, forward only). Calls under
    ``torch.no_grad()``/inference mode and calls traced by ``torch.compile`` are not judged:
    warned once, counted in :attr:`AutocompareReport.not_judged`. Under ``torch.distributed``
    each rank keeps its own report and writes under ``save_dir/rank<r>/``.
    """

    _kind = "autocompare"

    def __init__(self, standard: str = "cann", on_fail: str = "record",
                 save_dir: Optional[Union[str, os.PathLike[str]]] = None,
                 apis: Optional[Union[str, Sequence[str]]] = None, every: int = 1,
                 budget: Optional[float] = None) -> None:
        super().__init__()
        if standard not in STANDARDS or standard == "dual-benchmark":
            raise ValueError(f"standard must be one of {', '.join(s for s in STANDARDS if s != 'dual-benchmark')}, "
                             f"got {standard!r}")
        if on_fail not in ("record", "warn", "raise"):
            raise ValueError(f"on_fail must be 'record', 'warn' or 'raise', got {on_fail!r}")
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"every must be an int >= 1, got {every!r}")
        if budget is not None and (not _real(budget) or not 0.0 < budget < 1.0):
            raise ValueError(f"budget must be a fraction in (0, 1), e.g. 0.02, got {budget!r}")
        if budget is not None and every != 1:
            raise ValueError("budget and every choose the calls to judge each their own way: give one")
        self.budget = budget
        self.apis = (apis,) if isinstance(apis, str) else (tuple(apis) if apis is not None else None)
        self.every = every
        self.report = AutocompareReport(standard, on_fail, None if save_dir is None else os.fspath(save_dir))
        self._seen: Counter = Counter()  # calls per API: msprobe's call numbers
        self._calls = 0  # calls of all APIs: the report's order
        self._entries = 0  # times entered: the step of the calls made inside
        self._judged: Counter = Counter()  # budget: judgements per (API, shape, dtype)
        self._inside = 0.0  # budget: the process's CPU time inside the entries before this one
        self._entered: Optional[float] = None  # ... and when this one began (None: outside)

    def __enter__(self) -> AutocompareReport:  # type: ignore[override]
        super().__enter__()
        with self._lock:
            self._entries += 1
            self._entered = time.process_time()
        return self.report

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            if self._entered is not None:
                self._inside += time.process_time() - self._entered
                self._entered = None
        super().__exit__(*exc)

    def _passed(self, api: str, why: str) -> None:
        self.report._skip(api, why)

    def _afford(self, key: Tuple[Any, ...], nbytes: int) -> Optional[float]:
        """Budget: the cost to reserve when the call is to be judged now, else None."""
        r = self.report
        with self._lock, r._lock:
            self._judged.setdefault(key, 0)  # (seen: it competes for the next judgement)
            if self._judged[key] > min(self._judged.values()):
                return None  # a (API, shape, dtype) judged fewer times goes first
            cost = r._cost.get(key, nbytes / 5e8)  # never judged: the judge's ~1 GB/s, copies and all, halved
            # the steps' CPU time: inside the entries, this one so far (the judging's taken out)
            elapsed = self._inside + (time.process_time() - self._entered if self._entered is not None else 0.0)
            spent = r._cpu + r._reserved
            if spent + cost > self.budget * max(elapsed - r._cpu, 0.0):  # type: ignore[operator]
                return None
            self._judged[key] += 1
            r._reserved += cost
            return cost

    def _selected(self, api: str, name: str) -> bool:
        return self.apis is None or any(fnmatch.fnmatchcase(api, p) or fnmatch.fnmatchcase(name, p)
                                        for p in self.apis)

    def _start(self, api: Api, b: Dict[str, Any]) -> Optional[_Record]:
        """A record for the call, or None when it is not judged (counted, with the reason)."""
        with self._lock:
            k, seq = self._seen[api.name], self._calls
            self._seen[api.name] += 1
            self._calls += 1
        name = f"{api.name}.{k}"
        why = self._not_now()
        if not why and not self._selected(api.name, name):
            why = "not in apis"
        if not why and k % self.every:
            why = f"every={self.every}"
        x = b["input"]
        if not why and not (isinstance(x, Tensor) and x.requires_grad):
            why = "input does not require grad"
        if why:
            self.report._skip(api.name, why)
            return None
        step = self._entries - 1
        uncovered = _uncovered(api, b)
        if uncovered:
            self.report._add(seq, _dc.CallResult(name, step, self.report._rank_now(), str(x.dtype)[6:], list(x.shape),
                                               _dc.NC, f"no golden for this form: {uncovered}", {}, None))
            return None
        key = (api.name, tuple(x.shape), str(x.dtype)[6:])
        nbytes = sum(t.numel() * t.element_size() for t in b.values() if isinstance(t, Tensor))
        cost = 0.0
        if self.budget is not None:
            reserved = self._afford(key, nbytes)
            if reserved is None:
                self.report._skip(api.name, "budget")
                return None
            cost = reserved
        c0 = time.process_time()
        saved = _saved_inputs(api, b)
        self.report._started(sum(t.numel() * t.element_size() for t in saved.values()), time.process_time() - c0)
        return _Record(self.report, seq, name, api, _attrs(api, b), saved, step, key, cost)

    def _call(self, api: Api, func: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        b = _bind(api, args, kwargs)
        rec = self._start(api, b) if b is not None else None
        if rec is None:
            return func(*args, **kwargs)
        xt = rec.tap_input(b["input"])  # type: ignore[index]
        if args:
            args = (xt, *args[1:])
        else:
            kwargs = {("self" if "self" in kwargs else "input"): xt,
                      **{k: v for k, v in kwargs.items() if k not in ("self", "input")}}
        out = func(*args, **kwargs)
        rec.tap_output(out)
        return out
