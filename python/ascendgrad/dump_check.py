"""``python -m ascendgrad dump-check DUMP``: judge the gradients in an msprobe dump against the
float64 golden model, call by call, under a named precision standard.

DUMP is an msprobe (MindStudio Probe) dump folder: its root (``step*/rank*/``, or ``proc*/``
without distributed ranks) or one rank folder holding ``dump.json`` and ``dump_tensor_data/``
(``.pt`` tensors from PyTorch, ``.npy`` from MindSpore). Every step and rank is checked.

The calls checked, in the forms msprobe 26.2.0 writes them (confirmed with real dumps on CPU):

================================  ================================================================
``Functional.softmax``,           backward entry: input[0] = g, output[0] = the input gradient;
``Tensor.softmax``,               the forward entry gives ``dim`` (``dtype``) and the forward
``Torch.softmax``                 output y; golden ``softmax_backward(g, y, dim)``
``Functional.logsigmoid``         golden ``log_sigmoid_backward(g, x)``
``Functional.softshrink``         golden ``softshrink_backward(g, x, lambd)``
``Functional.cross_entropy``      (N, C) logits with class indices; ``weight``, ``ignore_index``,
                                  ``reduction``, ``label_smoothing``; golden
                                  ``cross_entropy_loss_grad(g, log_softmax(x), ...)``
``Functional.kl_div``,            ``reduction`` (a name, or ``Torch.kl_div``'s int code),
``Torch.kl_div``                  ``log_target``; golden ``kl_div_backward(g, x, target, ...)``
``Torch._softmax_backward_data``  the aten backward operator as a call of its own: its forward
                                  entry holds (g, y, dim, input_dtype) and the gradient as output
``NPU.npu_cross_entropy_loss``    torch_npu's fused cross entropy, mapped from its documented
                                  signature (input, target, weight, reduction, ignore_index,
                                  label_smoothing, lse_square_scale_for_zloss, return_zloss;
                                  outputs loss, log_prob, zloss, lse); not confirmed with a real
                                  dump (no NPU here)
================================  ================================================================

On CPU, msprobe records for ``cross_entropy`` and ``kl_div`` the gradient at the last internal
autograd node of the call (w.r.t. log_softmax(input) for cross_entropy; w.r.t. the pointwise loss
for kl_div; a 0-D tensor where that node is a scalar one), not the input gradient an NPU's fused
kernel records. Such a record is ``not comparable``; when it matches a known internal-node
gradient, the reason says which, so that the user knows the dump, not the kernel, is the cause.
Gradients far below a standard's absolute tolerance pass whatever they hold: a record that passes
but lies at least 4 times nearer a known internal-node gradient than the golden is named too.

Verdicts: ``pass``, ``fail`` (the worst element named: index, dumped and golden values, the
metric that failed), ``not comparable`` (with the reason). Exit status: 0 when no call fails, 1
when one does, 2 when the dump cannot be read, holds no checkable call, or the command line is
wrong (one line on stderr says which).

Safety: ``.pt`` files are read with ``torch.load(weights_only=True)`` (no arbitrary unpickling;
without torch installed a ``.pt`` dump is refused with a message saying to install it), ``.npy``
with ``allow_pickle=False``; a ``data_name`` resolving outside ``dump_tensor_data/`` is refused;
truncated files, dtype or shape disagreeing with ``dump.json`` and missing entries are reasons
of the call concerned. Calls are streamed: one is read (and its golden computed) while the one
before is judged on the other core, so at most two calls are in memory, whatever the dump's size.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import os
import re
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _display, _files, judge, reference
from .compare import DEFAULT_STANDARD, STANDARDS, CompareReport

__all__ = ["DumpError", "NotComparable", "CallResult", "Prepared", "Call", "Rank", "DumpResult", "find_ranks",
           "check_dump", "check_call", "judge_prepared", "run_task", "table", "rank_table", "plot_ranks", "result_html",
           "main"]

PASS, FAIL, NC = "pass", "fail", "not comparable"


class DumpError(Exception):
    """The dump as a whole cannot be read (one line saying why): exit status 2."""


class NotComparable(Exception):
    """This call cannot be judged; the message says why."""


# --------------------------------------------------------------------------------------------
# the dump's layout


class Rank(NamedTuple):
    path: str  # the folder holding dump.json
    step: Optional[int]
    rank: Any  # int for rank<N>, else the folder's name (proc<pid>), None for a bare folder


def _label(name: str, prefix: str) -> Optional[int]:
    m = re.fullmatch(prefix + r"(\d+)", name)
    return int(m.group(1)) if m else None


def find_ranks(root: str) -> List[Rank]:
    """The rank folders (those holding dump.json) under an msprobe dump root, a step folder or
    a rank folder, labelled with their step and rank, in step then rank order."""
    if not os.path.isdir(root):
        raise DumpError(f"{root}: no such folder")
    found: List[str] = []
    if os.path.exists(os.path.join(root, "dump.json")):  # a folder there is named when read
        found.append(root)
    else:
        for dirpath, dirnames, filenames in os.walk(root):
            depth = os.path.relpath(dirpath, root).count(os.sep) + (dirpath != root)
            if "dump.json" in filenames + dirnames and dirpath != root:
                found.append(dirpath)
            dirnames[:] = sorted(d for d in dirnames if d not in ("dump_tensor_data", "dump.json")) if depth < 2 else []
    if not found:
        raise DumpError(f"{root}: no dump.json found (expected an msprobe dump: step*/rank*/dump.json)")
    ranks = []
    for f in found:
        name = os.path.basename(os.path.normpath(f))
        parent = os.path.basename(os.path.dirname(os.path.normpath(f)))
        step = _label(parent, "step") if _label(name, "step") is None else _label(name, "step")
        r_num = _label(name, "rank")
        rank: Any = r_num if r_num is not None else (None if name.startswith("step") else name)
        ranks.append(Rank(f, step, rank))

    def key(r: Rank) -> Tuple[int, str]:
        return (-1 if r.step is None else r.step, f"{r.rank:>12}" if isinstance(r.rank, int) else str(r.rank))

    return sorted(ranks, key=key)


def _read_dump_json(rank: Rank) -> Dict[str, Any]:
    p = os.path.join(rank.path, "dump.json")
    try:
        d = _files.read_json(p, "msprobe's dump.json")
    except _files.BadFile as e:
        raise DumpError(str(e)) from None
    except OSError as e:
        raise DumpError(f"{p}: cannot be read ({e})") from None
    if not isinstance(d, dict) or not isinstance(d.get("data"), dict):
        raise DumpError(f"{p}: not an msprobe dump.json (no \"data\" object)")
    return d


# --------------------------------------------------------------------------------------------
# tensors


_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
           "float": "float32", "float64": "float64", "double": "float64", "int64": "int64",
           "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "int8": "int8",
           "uint8": "uint8", "bool": "bool"}


def _dtype_name(s: Any) -> str:
    """msprobe's dtype string (torch.float32, Float32, BFloat16 …) as a NumPy name."""
    t = str(s).split(".")[-1].lower()
    return _DTYPES.get(t, t)


class Reader:
    """Reads the tensors of one rank folder safely, counting the bytes read."""

    def __init__(self, rank: Rank, meta: Dict[str, Any]) -> None:
        self.rank = rank
        self.dir = os.path.realpath(os.path.join(rank.path, "dump_tensor_data"))
        self.task = str(meta.get("task", ""))
        self.nbytes = 0

    def tensor(self, rec: Any, what: str) -> np.ndarray:
        if not isinstance(rec, dict) or "Tensor" not in str(rec.get("type", "")):
            raise NotComparable(f"{what} is not a tensor in dump.json")
        name = rec.get("data_name")
        if not name:
            raise NotComparable(f"{what} has no tensor data (a statistics-only dump"
                                f"{', task ' + repr(self.task) if self.task else ''})")
        path = os.path.realpath(os.path.join(self.dir, str(name)))
        if os.path.commonpath([path, self.dir]) != self.dir or os.path.isabs(str(name)):
            raise NotComparable(f"{what}: data_name {name!r} points outside dump_tensor_data; refused")
        if not os.path.exists(path):
            raise NotComparable(f"{what}: tensor file {name} is missing")
        try:
            arr = _load_tensor(path, str(name))
        except _files.BadFile as e:
            raise NotComparable(f"{what}: {e}") from None
        self.nbytes += arr.nbytes
        want_dt, want_shape = _dtype_name(rec.get("dtype")), rec.get("shape")
        if arr.dtype.name != want_dt:
            raise NotComparable(f"{what}: {name} holds {arr.dtype.name}, dump.json says {want_dt}")
        if isinstance(want_shape, list) and list(arr.shape) != want_shape:
            raise NotComparable(f"{what}: {name} has shape {list(arr.shape)}, dump.json says {want_shape}")
        return arr


def _load_tensor(path: str, name: str) -> np.ndarray:
    if name.endswith(".npy"):
        arr = _files.read_npy(path, "a .npy tensor file")
        if arr.dtype.kind == "V" and arr.dtype.names is None and arr.dtype.itemsize == 2:
            import ml_dtypes

            arr = arr.view(ml_dtypes.bfloat16)
        return np.asarray(arr)
    if name.endswith(".pt"):
        try:
            import torch
        except ImportError:
            raise DumpError(f"{name}: reading .pt tensors needs PyTorch (pip install torch)") from None
        what = "a PyTorch tensor file (torch.save's zip archive)"
        _files.check_file(path, what)
        if _files.head(path, 2) not in (b"PK", b"\x80\x02"):  # zip, or torch.save's legacy pickle
            raise _files.BadFile(f"{path}: no zip header; it should be {what}")
        try:
            t = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises many types for a bad file: all mean "unreadable"
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if "weights_only" in str(e) or "Unsupported global" in str(e) or "Unpickl" in type(e).__name__:
                raise _files.BadFile(f"{path}: asks to unpickle other objects than tensors (refused); "
                                     f"it should be {what}") from None
            raise _files.BadFile(f"{path}: truncated or unreadable ({msg[:120]}); it should be {what}") from None
        if not isinstance(t, torch.Tensor):
            raise NotComparable(f"{name}: holds a {type(t).__name__}, not a tensor")
        t = t.detach().cpu()
        if t.dtype == torch.bfloat16:
            import ml_dtypes

            return np.asarray(t.view(torch.int16).numpy().view(ml_dtypes.bfloat16))
        try:
            return np.asarray(t.numpy())
        except TypeError as e:
            raise NotComparable(f"{name}: tensor of dtype {t.dtype} cannot be read ({e})") from None
    raise NotComparable(f"{name}: unknown tensor file type (expected .pt or .npy)")


# --------------------------------------------------------------------------------------------
# arguments of the forward entry


def _is_tensor(rec: Any) -> bool:
    return isinstance(rec, dict) and "Tensor" in str(rec.get("type", ""))


def _value(rec: Any, what: str) -> Any:
    """A non-tensor argument's value (None for a missing or null one)."""
    if rec is None or rec == {}:
        return None
    if isinstance(rec, dict) and "value" in rec:
        return rec["value"]
    if _is_tensor(rec):
        raise NotComparable(f"{what} is a tensor; a plain value was expected")
    raise NotComparable(f"{what}: cannot read the argument {json.dumps(rec)[:80]}")


class Args:
    """Positional and keyword arguments of a forward entry, by the API's signature."""

    def __init__(self, entry: Dict[str, Any], names: Sequence[str], api: str) -> None:
        pos = entry.get("input_args") or []
        kw = entry.get("input_kwargs") or {}
        if not isinstance(pos, list) or not isinstance(kw, dict):
            raise NotComparable(f"{api}: malformed forward entry in dump.json")
        if len(pos) > len(names):
            raise NotComparable(f"{api}: {len(pos)} positional arguments, more than {api} takes")
        self.rec = dict(zip(names, pos))
        aliases = {"axis": "dim", "self": "input", "x": "input"}
        for key, v in kw.items():
            k = aliases.get(str(key), str(key))
            if k not in names:
                raise NotComparable(f"{api}: argument {k!r} is not mapped")
            self.rec[k] = v
        self.api = api

    def has(self, name: str) -> bool:
        return self.rec.get(name) is not None and self.rec.get(name) != {}

    def value(self, name: str, default: Any = None) -> Any:
        v = _value(self.rec.get(name), f"{self.api} argument {name}")
        return default if v is None else v

    def tensor(self, name: str, reader: Reader) -> np.ndarray:
        if name not in self.rec:
            raise NotComparable(f"{self.api}: argument {name} is missing from the forward entry")
        return reader.tensor(self.rec[name], f"{self.api} argument {name}")


def _out(entry: Dict[str, Any], key: str, i: int) -> Any:
    v = entry.get(key)
    if isinstance(v, dict):  # a single output recorded as one record
        v = [v]
    return v[i] if isinstance(v, list) and i < len(v) else None


# --------------------------------------------------------------------------------------------
# the operators: from the entries to (inputs, golden, dumped gradient, internal-node candidates)


class Internal(NamedTuple):
    what: str  # which internal-node gradient, for the reason
    value: np.ndarray  # float64, the shape msprobe records it in


@dataclasses.dataclass
class Prepared:
    """One call ready to judge: what its golden needs (``gold_inputs``, the NumPy function's
    keywords, and ``params``), the recorded gradient, and the internal-node gradients it may be."""

    op: str  # the ascendgrad function
    inputs: Dict[str, np.ndarray]  # arrays the reproduction needs
    params: Dict[str, Any]  # scalars the reproduction needs (and the golden's attributes)
    gold_inputs: Dict[str, Any]  # the golden's inputs (cross entropy: log_prob per slice of rows)
    dumped: Optional[np.ndarray]  # the recorded input gradient (None: not recorded)
    dumped_what: str
    input_shape: Tuple[int, ...]
    other_records: List[Tuple[str, np.ndarray]] = dataclasses.field(default_factory=list)
    internal: List[Internal] = dataclasses.field(default_factory=list)
    _golden: Optional[np.ndarray] = None

    @property
    def golden(self) -> np.ndarray:
        """The float64 input gradient (computed on first use, by slices; softshrink's nearest-λ
        rule against the recorded gradient, as :func:`ascendgrad.judge.softshrink_golden`)."""
        if self._golden is None:
            attrs = self.attrs
            if self.op == "softshrink_backward":
                self._golden = judge.softshrink_golden(self.gold_inputs["grad_output"], self.gold_inputs["x"],
                                                       attrs["lambd"], self.dumped)
            else:
                self._golden = judge.golden(self.op, self.gold_inputs, attrs, self.input_shape)
        return self._golden

    @property
    def attrs(self) -> Dict[str, Any]:
        """The golden's attributes, the parameters (a z-loss scale only where it is not 0)."""
        return {k: v for k, v in self.params.items() if k != "lse_square_scale_for_zloss" or v}


def _dim(dim: Any, ndim: int, api: str) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise NotComparable(f"{api}: dim {dim!r} is not an integer")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise NotComparable(f"{api}: dim {dim} is out of range for {ndim}-D input")
    return dim


def _grad_records(bwd: Dict[str, Any], reader: Reader, api: str) -> Tuple[np.ndarray, Optional[np.ndarray], List[Tuple[str, np.ndarray]]]:
    """(upstream gradient, recorded gradient of the first input or None, other records)."""
    g_rec = _out(bwd, "input", 0)
    if g_rec is None:
        raise NotComparable(f"{api}: the backward entry holds no upstream gradient (input[0])")
    g = reader.tensor(g_rec, f"{api} backward input[0]")
    outs = bwd.get("output")
    outs = [outs] if isinstance(outs, dict) else (outs if isinstance(outs, list) else [])
    first = reader.tensor(outs[0], f"{api} backward output[0]") if outs and outs[0] is not None else None
    others = []
    for i, rec in enumerate(outs[1:], 1):
        if _is_tensor(rec):
            try:
                others.append((f"output[{i}]", reader.tensor(rec, f"{api} backward output[{i}]")))
            except NotComparable:
                pass  # only the first input's gradient is judged
    return g, first, others


def _softmax(api: str, fwd: Dict[str, Any], bwd: Dict[str, Any], reader: Reader) -> Prepared:
    names = ("input", "dim", "_stacklevel", "dtype") if api.startswith("Functional.") else ("input", "dim", "dtype")
    a = Args(fwd, names, api)
    x_rec = a.rec.get("input")
    if not isinstance(x_rec, dict) or not _is_tensor(x_rec):
        raise NotComparable(f"{api}: the forward entry holds no input tensor")
    shape = tuple(x_rec.get("shape") or ())
    dim = a.value("dim")
    if dim is None:  # PyTorch's implicit dim (deprecated): 0 for 0-, 1- and 3-D inputs, else 1
        dim = 0 if len(shape) in (0, 1, 3) else 1
    dim = _dim(dim, len(shape), api)
    y_rec = _out(fwd, "output", 0)
    if y_rec is None:
        raise NotComparable(f"{api}: the forward entry holds no output (the softmax y the gradient needs)")
    y = reader.tensor(y_rec, f"{api} forward output[0]")
    g, dumped, others = _grad_records(bwd, reader, api)
    if g.shape != y.shape:
        raise NotComparable(f"{api}: upstream gradient of shape {list(g.shape)} is not the output's {list(y.shape)}")
    if g.shape != y.shape or len(shape) != y.ndim:
        raise NotComparable(f"{api}: output {list(y.shape)} is not the input's shape {list(shape)}")
    inputs = {"grad_output": g, "output": y}
    return Prepared("softmax_backward", inputs, {"dim": dim % max(y.ndim, 1)}, inputs, dumped, "backward output[0]",
                    shape, others)


def _softmax_backward_data(api: str, fwd: Dict[str, Any], reader: Reader) -> Prepared:
    a = Args(fwd, ("grad_output", "output", "dim", "input_dtype"), api)
    g = a.tensor("grad_output", reader)
    y = a.tensor("output", reader)
    if g.shape != y.shape:
        raise NotComparable(f"{api}: grad_output {list(g.shape)} and output {list(y.shape)} differ in shape")
    dim = _dim(a.value("dim"), y.ndim, api)
    rec = _out(fwd, "output", 0)
    dumped = reader.tensor(rec, f"{api} forward output[0]") if rec is not None else None
    inputs = {"grad_output": g, "output": y}
    return Prepared("softmax_backward", inputs, {"dim": dim % max(y.ndim, 1)}, inputs, dumped, "forward output[0]",
                    y.shape)


def _elementwise(op: str) -> Callable[[str, Dict[str, Any], Dict[str, Any], Reader], Prepared]:
    def prep(api: str, fwd: Dict[str, Any], bwd: Dict[str, Any], reader: Reader) -> Prepared:
        names = ("input", "lambd") if op == "softshrink_backward" else ("input",)
        a = Args(fwd, names, api)
        x = a.tensor("input", reader)
        g, dumped, others = _grad_records(bwd, reader, api)
        if g.shape != x.shape:
            raise NotComparable(f"{api}: upstream gradient {list(g.shape)} is not the input's shape {list(x.shape)}")
        if op == "softshrink_backward":
            lambd = a.value("lambd", 0.5)
            if not isinstance(lambd, (int, float)) or isinstance(lambd, bool) or not lambd >= 0:
                raise NotComparable(f"{api}: lambd {lambd!r} is not a number >= 0")
            inputs = {"grad_output": g, "x": x}
            return Prepared(op, inputs, {"lambd": float(lambd)}, inputs, dumped, "backward output[0]", x.shape, others)
        inputs = {"grad_output": g, "x": x}
        return Prepared(op, inputs, {}, inputs, dumped, "backward output[0]", x.shape, others)

    return prep


def _ce_args(a: Args, reader: Reader, api: str) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray], str, int, float]:
    x = a.tensor("input", reader)
    t_rec = a.rec.get("target")
    if not isinstance(t_rec, dict) or not _is_tensor(t_rec):
        raise NotComparable(f"{api}: target is not a tensor in the forward entry")
    if x.ndim != 2 or len(t_rec.get("shape") or [None, None]) != 1 or \
            not _dtype_name(t_rec.get("dtype")).startswith(("int", "uint")):
        raise NotComparable(f"{api}: only (N, C) logits with (N,) class-index targets are mapped "
                            f"(input {list(x.shape)}, target {t_rec.get('shape')} {_dtype_name(t_rec.get('dtype'))})")
    t = a.tensor("target", reader)
    w = a.tensor("weight", reader) if a.has("weight") else None
    for legacy in ("size_average", "reduce"):
        if legacy in a.rec and a.value(legacy) is not None:
            raise NotComparable(f"{api}: the legacy argument {legacy} is not mapped (use reduction)")
    red = a.value("reduction", "mean")
    ii = a.value("ignore_index", -100)
    eps = a.value("label_smoothing", 0.0)
    if red not in ("none", "mean", "sum") or not isinstance(ii, int) or not isinstance(eps, (int, float)):
        raise NotComparable(f"{api}: reduction {red!r}, ignore_index {ii!r}, label_smoothing {eps!r} not mapped")
    return x, t, w, str(red), int(ii), float(eps)


def _ce_gold_inputs(g: np.ndarray, x: np.ndarray, t: np.ndarray, w: Optional[np.ndarray], red: str, ii: int,
                    eps: float, api: str, **zloss: Any) -> Dict[str, Any]:
    """The golden's inputs: log_softmax(x) per slice of rows; the arguments checked here (a
    target out of range, a wrong shape) as the reference checks them."""
    gl = g.reshape(()) if g.size == 1 and red != "none" else g
    inputs: Dict[str, Any] = {"grad_loss": gl, "log_prob": judge.LogSoftmaxRows(x), "target": t,
                              **({"weight": w} if w is not None else {}),
                              **{k: v for k, v in zloss.items() if k != "lse_square_scale_for_zloss" and v is not None}}
    try:  # the reference's checks on a row: the same messages, without the whole golden
        reference.cross_entropy_loss_grad(gl if red != "none" else gl[:1], reference.log_softmax(x[:1], -1),
                                          t[:1], w, red, ii, eps, **{k: (v[:1] if k in ("grad_zloss", "lse_for_zloss")
                                                                      and v is not None and np.ndim(v) else v)
                                                                  for k, v in zloss.items()})
        if x.shape[0] != t.shape[0]:
            raise ValueError(f"target has {t.shape[0]} rows, input has {x.shape[0]}")
        if t.size and (np.any((t != ii) & ((t < 0) | (t >= x.shape[1])))):
            bad = int(t[(t != ii) & ((t < 0) | (t >= x.shape[1]))][0])
            raise ValueError(f"target {bad} is out of range [0, {x.shape[1]})")
    except ValueError as e:
        raise NotComparable(f"{api}: {e}") from None
    return inputs


def _cross_entropy(api: str, fwd: Dict[str, Any], bwd: Dict[str, Any], reader: Reader) -> Prepared:
    a = Args(fwd, ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
                   "label_smoothing"), api)
    x, t, w, red, ii, eps = _ce_args(a, reader, api)
    g, dumped, others = _grad_records(bwd, reader, api)
    gold = _ce_gold_inputs(g, x, t, w, red, ii, eps, api)
    inputs = {"grad_loss": g, "x": x, "target": t, **({"weight": w} if w is not None else {})}
    p = Prepared("cross_entropy_loss_grad", inputs, {"reduction": red, "ignore_index": ii, "label_smoothing": eps},
                 gold, dumped, "backward output[0]", x.shape, others)
    # the gradient at PyTorch's internal NLL node, w.r.t. log_softmax(input): -s_i*w[t_i]*onehot
    n, c = x.shape
    ww = np.ones(c) if w is None else w.astype(np.float64)
    m = t != ii
    ts = np.where(m, t, 0).astype(np.int64)
    gl = g.astype(np.float64)
    if red == "none":
        s = gl.reshape(-1) if gl.size == n else np.full(n, np.nan)
    elif red == "sum":
        s = np.full(n, gl.reshape(-1)[0] if gl.size else np.nan)
    else:
        big_w = float(np.sum(np.where(m, ww[ts], 0.0)))
        s = np.full(n, (gl.reshape(-1)[0] if gl.size else np.nan) / big_w if big_w else 0.0)
    if eps == 0.0 and (ts < c).all() and (ts >= 0).all():
        nll = np.zeros((n, c))
        nll[np.arange(n), ts] = np.where(m, -s * ww[ts], 0.0)
        p.internal.append(Internal("the gradient w.r.t. log_softmax(input) (-g*weight[target]*onehot, "
                                   "at cross_entropy's internal NLL node)", nll))
    p.internal.append(Internal("the upstream gradient passed on by cross_entropy's last internal node",
                               gl))
    return p


def _kl_div(api: str, fwd: Dict[str, Any], bwd: Dict[str, Any], reader: Reader) -> Prepared:
    torch_form = api.startswith("Torch.")
    names = ("input", "target", "reduction", "log_target") if torch_form else \
        ("input", "target", "size_average", "reduce", "reduction", "log_target")
    a = Args(fwd, names, api)
    x = a.tensor("input", reader)
    t = a.tensor("target", reader)
    for legacy in ("size_average", "reduce"):
        if legacy in a.rec and a.value(legacy) is not None:
            raise NotComparable(f"{api}: the legacy argument {legacy} is not mapped (use reduction)")
    red = a.value("reduction", "mean")
    if torch_form and not a.has("reduction"):
        # torch.kl_div's schema says Mean, yet PyTorch 2.13 computes none when it is left out:
        # the recorded forward output's shape says which one ran (a 0-D input is the same for all)
        out = _out(fwd, "output", 0)
        red = 1 if isinstance(out, dict) and out.get("shape") == [] else 0
    lt = a.value("log_target", False)
    try:
        code = int(reference._kl_reduction(red))  # type: ignore[no-untyped-call]
    except ValueError:
        raise NotComparable(f"{api}: reduction {red!r} is not mapped") from None
    if not isinstance(lt, bool):
        raise NotComparable(f"{api}: log_target {lt!r} is not a bool")
    g, dumped, others = _grad_records(bwd, reader, api)
    try:
        shape = np.broadcast_shapes(x.shape, t.shape)  # the reference's checks, without its golden
        if np.broadcast_shapes(g.shape, shape) != shape:
            raise ValueError(f"shape of gradOutput must broadcast to {list(shape)}, but current is {list(g.shape)}")
    except ValueError as e:
        raise NotComparable(f"{api}: {e}") from None
    name = {0: "none", 1: "mean", 2: "sum", 3: "batchmean"}[code]
    inputs = {"grad_output": g, "x": x, "target": t}
    p = Prepared("kl_div_backward", inputs, {"reduction": name, "log_target": lt}, inputs, dumped,
                 "backward output[0]", x.shape, others)
    c = float(reference._kl_scale(code, shape))  # type: ignore[no-untyped-call]
    gc = np.broadcast_to(g.astype(np.float64), shape) * c
    tt = np.broadcast_to(t.astype(np.float64), shape)
    p.internal.append(Internal("g*c, the gradient w.r.t. kl_div's pointwise loss (before its reduction)", gc))
    if lt:
        with np.errstate(over="ignore"):
            p.internal.append(Internal("g*c*exp(target), the gradient w.r.t. (target - input) inside the "
                                       "pointwise loss", gc * np.exp(tt)))
    else:
        p.internal.append(Internal("-g*c, the gradient w.r.t. target*input inside the pointwise loss", -gc))
    if gc.size and np.all(gc == gc.flat[0]):
        p.internal.append(Internal("g*c, the gradient at kl_div's scalar reduction node", np.asarray(gc.flat[0])))
    return p


def _npu_cross_entropy_loss(api: str, fwd: Dict[str, Any], bwd: Dict[str, Any], reader: Reader) -> Prepared:
    a = Args(fwd, ("input", "target", "weight", "reduction", "ignore_index", "label_smoothing",
                   "lse_square_scale_for_zloss", "return_zloss"), api)
    x, t, w, red, ii, eps = _ce_args(a, reader, api)
    zeta = a.value("lse_square_scale_for_zloss", 0.0)
    if not isinstance(zeta, (int, float)):
        raise NotComparable(f"{api}: lse_square_scale_for_zloss {zeta!r} is not a number")
    g, dumped, others = _grad_records(bwd, reader, api)
    # gradients flowing into the log_prob and lse outputs (input[1], input[3]) are not part of
    # CrossEntropyLossGrad: a call with them cannot be judged
    for i, what in ((1, "log_prob"), (3, "lse")):
        rec = _out(bwd, "input", i)
        if _is_tensor(rec):
            v = reader.tensor(rec, f"{api} backward input[{i}]")
            if np.any(v != 0):
                raise NotComparable(f"{api}: a gradient flows into the {what} output; not mapped")
    zl: Dict[str, Any] = {}
    inputs = {"grad_loss": g, "x": x, "target": t, **({"weight": w} if w is not None else {})}
    if zeta != 0.0:
        gz_rec = _out(bwd, "input", 2)
        gz = reader.tensor(gz_rec, f"{api} backward input[2]") if _is_tensor(gz_rec) else None
        zl = {"grad_zloss": gz, "lse_for_zloss": reference.logsumexp(x, -1), "lse_square_scale_for_zloss": float(zeta)}
        if gz is not None:
            inputs["grad_zloss"] = gz
    gold = _ce_gold_inputs(g, x, t, w, red, ii, eps, api, **zl)
    return Prepared("cross_entropy_loss_grad", inputs,
                    {"reduction": red, "ignore_index": ii, "label_smoothing": eps,
                     "lse_square_scale_for_zloss": float(zeta)}, gold, dumped, "backward output[0]", x.shape, others)


_BACKWARD_OPS: Dict[str, Callable[[str, Dict[str, Any], Dict[str, Any], Reader], Prepared]] = {
    "Functional.softmax": _softmax, "Tensor.softmax": _softmax, "Torch.softmax": _softmax,
    "Functional.logsigmoid": _elementwise("log_sigmoid_backward"),
    "Functional.softshrink": _elementwise("softshrink_backward"),
    "Functional.cross_entropy": _cross_entropy,
    "Functional.kl_div": _kl_div, "Torch.kl_div": _kl_div,
    "NPU.npu_cross_entropy_loss": _npu_cross_entropy_loss,
}
_SELF_OPS = {"Torch._softmax_backward_data": _softmax_backward_data}  # backward operators as calls


# --------------------------------------------------------------------------------------------
# calls and verdicts


class Call(NamedTuple):
    name: str  # msprobe's name without .forward/.backward, e.g. Functional.softmax.0
    api: str  # e.g. Functional.softmax
    rank: Rank
    fwd: Optional[Dict[str, Any]]
    bwd: Optional[Dict[str, Any]]


def _calls(rank: Rank, data: Dict[str, Any], pattern: Optional[str]) -> List[Call]:
    """The calls of the five operators in one dump.json, in its order."""
    seen: Dict[str, Call] = {}
    for key in data:
        base, _, kind = key.rpartition(".")
        if kind not in ("forward", "backward"):
            continue
        api, _, idx = base.rpartition(".")
        if not idx.isdigit() or (api not in _BACKWARD_OPS and api not in _SELF_OPS):
            continue
        if api in _SELF_OPS and kind == "backward":
            continue
        if pattern and not (fnmatch.fnmatchcase(base, pattern) or base.startswith(pattern + ".")
                            or base == pattern):
            continue
        if base not in seen:
            seen[base] = Call(base, api, rank, None, None)
        entry = data[key] if isinstance(data[key], dict) else {}
        seen[base] = seen[base]._replace(fwd=entry) if kind == "forward" else seen[base]._replace(bwd=entry)
    # a forward call whose output needs no gradient (inference, no_grad) has nothing to check
    return [c for c in seen.values() if c.bwd is not None or c.api in _SELF_OPS or c.fwd is None
            or _needs_grad(c.fwd)]


def _needs_grad(fwd: Dict[str, Any]) -> bool:
    outs = fwd.get("output")
    outs = [outs] if isinstance(outs, dict) else (outs if isinstance(outs, list) else [])
    return any(isinstance(o, dict) and o.get("requires_grad") is True for o in outs)


@dataclasses.dataclass
class CallResult:
    api: str
    step: Optional[int]
    rank: Any
    dtype: Optional[str]
    shape: Optional[List[int]]
    verdict: str
    reason: str
    metrics: Dict[str, float]
    worst: Optional[Dict[str, Any]]

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def _prepare(call: Call, reader: Reader) -> Prepared:
    if call.fwd is None:
        raise NotComparable(f"no forward entry ({call.name}.forward) in dump.json")
    if call.api in _SELF_OPS:
        return _SELF_OPS[call.api](call.name, call.fwd, reader)
    if call.bwd is None:
        raise NotComparable(f"no backward entry ({call.name}.backward) in dump.json")
    return _BACKWARD_OPS[call.api](call.name, call.fwd, call.bwd, reader)


def _internal_match(p: Prepared, standard: str, to_golden: Optional[float] = None) -> Optional[str]:
    """Which known internal-node gradient one of the records matches (under the standard), if any.
    ``to_golden`` (the largest error of a record that passed): only one at least 4 times nearer
    the internal-node gradient than the golden (tiny gradients, all within the tolerance, cannot
    tell them apart)."""
    records = ([(p.dumped_what, p.dumped)] if p.dumped is not None else []) + \
        [(f"backward {w}", v) for w, v in p.other_records]
    for where, rec in records:
        for cand in p.internal:
            if rec.shape != cand.value.shape:
                continue
            if to_golden is not None:
                with np.errstate(invalid="ignore"):
                    to_cand = np.nanmax(np.abs(rec.astype(np.float64) - cand.value), initial=0.0)
                if not to_cand * 4 < to_golden:
                    continue
            try:
                if judge.compare_arrays(rec, cand.value, standard=standard, worst=0, ulp_stats=False)[0].passed:
                    return f"the record ({where}) is {cand.what}, as msprobe writes it on CPU"
            except ValueError:  # e.g. a dtype no standard has thresholds for
                continue
    return None


def check_call(call: Call, reader: Reader, standard: str, want_score: bool = False
               ) -> Tuple[CallResult, Optional[Prepared], Optional[np.ndarray]]:
    """Judge one call: (result, prepared arrays or None, per-element score or None)."""
    try:
        p: Union[Prepared, NotComparable] = _prepare(call, reader)
    except NotComparable as e:
        p = e
    return judge_prepared(call, p, standard, want_score)


def judge_prepared(call: Call, p: Union[Prepared, NotComparable], standard: str, want_score: bool = False
                   ) -> Tuple[CallResult, Optional[Prepared], Optional[np.ndarray]]:
    """The verdict on a prepared call (or the reason it cannot be judged): (result, prepared or
    None, per-element score or None). The golden and the metrics: :func:`ascendgrad.judge.judge_op`."""
    step, rank = call.rank.step, call.rank.rank
    if isinstance(p, NotComparable):
        return CallResult(call.name, step, rank, None, None, NC, str(p), {}, None), None, None
    shape = list(p.input_shape)
    if p.dumped is None:
        why = f"no gradient recorded for the input ({p.dumped_what} is empty)"
        hint = _internal_match(p, standard)
        return CallResult(call.name, step, rank, None, shape, NC, why + ("; " + hint if hint else ""), {}, None), p, None
    dt = p.dumped.dtype.name
    if p.dumped.dtype.kind != "f" and dt != "bfloat16":
        return CallResult(call.name, step, rank, dt, shape, NC, f"the recorded gradient is {dt}, not a float",
                          {}, None), p, None
    if tuple(p.dumped.shape) != tuple(p.input_shape):
        why = (f"the record ({p.dumped_what}) has shape {list(p.dumped.shape)}, not the input's "
               f"{list(p.input_shape)}")
        hint = _internal_match(p, standard)
        return CallResult(call.name, step, rank, dt, shape, NC, why + ("; " + hint if hint else ""), {}, None), p, None
    try:
        with np.errstate(all="ignore"):
            report, _, score = judge.judge_op(p.op, p.gold_inputs, p.attrs, p.dumped, standard=standard, worst=1,
                                              want_score=want_score)
    except ValueError as e:  # the reference refuses the call's arguments
        return CallResult(call.name, step, rank, dt, shape, NC, f"{call.name}: {e}", {}, None), p, None
    worst = _worst(report)
    hint = _internal_match(p, standard, report.max_abs_err) if report.passed and p.internal else None
    if hint:
        return CallResult(call.name, step, rank, dt, shape, NC,
                          f"{hint}: it passes only because its values are within the standard's absolute "
                          f"tolerance, and it is nearer that gradient than the input gradient",
                          dict(report.metrics), worst), p, (score if want_score else None)
    if report.passed:
        return CallResult(call.name, step, rank, dt, shape, PASS, "", dict(report.metrics), worst), p, \
            (score if want_score else None)
    hint = _internal_match(p, standard)
    reason = "; ".join(report.reasons)
    if hint:
        return CallResult(call.name, step, rank, dt, shape, NC,
                          f"{hint}, not the input gradient: the dump, not the kernel, differs from the golden "
                          f"({reason})", dict(report.metrics), worst), p, (score if want_score else None)
    return CallResult(call.name, step, rank, dt, shape, FAIL, reason, dict(report.metrics), worst), p, \
        (score if want_score else None)


def _worst(report: CompareReport) -> Optional[Dict[str, Any]]:
    if not report.worst:
        return None
    m = report.worst[0]
    failed = report.failed
    return {"index": list(m.location), "dumped": m.actual, "golden": m.expected, "abs_err": m.abs_err,
            "rel_err": m.rel_err, "metric": failed[0].metric if failed else None}


# --------------------------------------------------------------------------------------------
# the whole dump


@dataclasses.dataclass
class DumpResult:
    standard: str
    dump: str
    calls: List[CallResult]
    nbytes: int
    seconds: float
    plots: List[str] = dataclasses.field(default_factory=list)  # PNG files written (--plots)

    def by_rank(self) -> List[Dict[str, Any]]:
        """One entry per (step, rank), in the calls' order: ``{"step", "rank", "pass", "fail",
        "not comparable"}``."""
        out: Dict[Tuple[Any, Any], Dict[str, Any]] = {}
        for c in self.calls:
            e = out.setdefault((c.step, c.rank), {"step": c.step, "rank": c.rank, PASS: 0, FAIL: 0, NC: 0})
            e[c.verdict] += 1
        return list(out.values())

    def summary(self) -> Dict[str, Any]:
        n = {v: sum(c.verdict == v for c in self.calls) for v in (PASS, FAIL, NC)}
        return {"calls": len(self.calls), **n, "tensor_bytes": self.nbytes, "seconds": round(self.seconds, 3),
                "by_rank": self.by_rank()}

    def __repr__(self) -> str:
        s = self.summary()
        word = "FAILED" if s[FAIL] else ("PASSED" if s[PASS] else "NOT JUDGED")
        pairs = len(s["by_rank"])
        head = (f"<DumpResult: {word} under {self.standard}, {s['calls']} calls: {s[PASS]} pass, {s[FAIL]} fail, "
                f"{s[NC]} not comparable" + (f"; {pairs} step/rank pairs" if pairs > 1 else "") + ">")
        first = next((c for c in self.calls if c.verdict == FAIL), None)
        return _display.lines(head, _first_failure(first) if first else "")

    def _repr_html_(self) -> str:
        return str(result_html(self, "dump-check", self.dump))

    def plot_call(self, name: str, step: Any = None, rank: Any = None) -> Any:
        """The figure of one call (:func:`ascendgrad._display.figure`: where its errors lie and
        their histogram against the standard's threshold), the call read again from the dump and
        judged again; ``step``/``rank`` pick it where several rank folders hold that name.
        Raises ValueError for a call that is not in the result or cannot be judged."""
        hits = [c for c in self.calls if c.api == name and (step is None or c.step == step) and
                (rank is None or c.rank == rank)]
        if len(hits) != 1:
            raise ValueError(f"{name}: {len(hits)} calls of that name" + ("" if not hits else
                             " (give step= and rank=)") + f" in {self.dump}")
        c = hits[0]
        folder = next(r for r in find_ranks(self.dump) if (r.step, r.rank) == (c.step, c.rank))
        meta = _read_dump_json(folder)
        call = next(k for k in _calls(folder, meta["data"], None) if k.name == name)
        res, p, score = check_call(call, Reader(folder, meta), self.standard, want_score=True)
        if p is None or score is None:
            raise ValueError(f"{name}: no figure for a call that is {res.verdict}: {res.reason}")
        return _display.figure(score, name, res.verdict, res.reason, self.standard)

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = _files.strict_json({"standard": self.standard, "dump": self.dump,
                                          "calls": [c.to_dict() for c in self.calls], "summary": self.summary()})
        return d


class _Task(NamedTuple):
    """A batch of one rank folder's calls, judged in the order of its dump.json: the unit of work
    of a process (``--jobs``) or of a Dask worker (``--scheduler``)."""

    rank: Rank
    names: Tuple[str, ...]
    standard: str
    plots: Optional[str]  # the folder for the PNG of each failed call, or None
    threads: Optional[int]  # ascendgrad's threads while the task runs (None: as they are)


def _judged(task: _Task) -> Iterator[Tuple[Call, CallResult, Optional[Prepared], Optional[np.ndarray], int, str]]:
    """(call, result, prepared, score, bytes read, plot path or '') per call of the task; one call's
    arrays at a time."""
    meta = _read_dump_json(task.rank)
    reader = Reader(task.rank, meta)
    wanted = set(task.names)
    for call in _calls(task.rank, meta["data"], None):
        if call.name not in wanted:
            continue
        before = reader.nbytes
        res, p, score = check_call(call, reader, task.standard, want_score=task.plots is not None)
        plot = ""
        if task.plots and res.verdict == FAIL and p is not None and score is not None:
            plot = _plot_path(task.plots, res, call.name)
            _plot(plot, call.name, p, score, res, task.standard)
        yield call, res, p, score, reader.nbytes - before, plot


def run_task(task: _Task) -> Tuple[List[CallResult], int, List[str]]:
    """Judge a task where it runs (a worker process, a Dask worker): (results, bytes read, plots).
    The worker reads the dump itself: only the task's description and its verdicts travel."""
    from . import _ops

    _keep_freed_memory()
    before = _ops.get_num_threads()
    if task.threads:
        _ops.set_num_threads(task.threads)
    try:
        out = [(r, n, plot) for _, r, _, _, n, plot in _judged(task)]
    finally:
        _ops.set_num_threads(before)
    return [r for r, _, _ in out], sum(n for _, n, _ in out), [p for _, _, p in out if p]


def _keep_freed_memory() -> None:
    """Where a worker's glibc was told to give freed memory back at once (Dask's nanny starts
    workers with MALLOC_TRIM_THRESHOLD_=65536, which also pins the mmap threshold at 128 KiB), every
    large temporary of a call is faulted in afresh: judging ran 2.4 times slower per byte. Such a
    worker keeps up to 256 MiB of freed memory for reuse instead (glibc only; elsewhere nothing)."""
    if not os.environ.get("MALLOC_TRIM_THRESHOLD_") or getattr(_keep_freed_memory, "done", False):
        return
    _keep_freed_memory.done = True  # type: ignore[attr-defined]
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD: blocks below it come from the heap, reused
    except (OSError, AttributeError):
        pass


def _tasks(ranks: List[Rank], api: Optional[str], standard: str, plots: Optional[str], jobs: int,
           threads: Optional[int]) -> List[_Task]:
    """One task per rank folder, split into batches of calls where there are fewer ranks than
    four per job (so that the jobs finish together)."""
    per_rank = []
    for r in ranks:
        per_rank.append((r, [c.name for c in _calls(r, _read_dump_json(r)["data"], api)]))
    total = sum(len(n) for _, n in per_rank)
    size = max(1, math.ceil(total / (4 * jobs))) if jobs > 1 else max(total, 1)
    return [_Task(r, tuple(names[i:i + size]), standard, plots, threads)
            for r, names in per_rank for i in range(0, len(names), size)]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _local_pool(jobs: int) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork on Linux, as PyTorch's DataLoader: workers start at once, with what this process has
    # imported, and never re-run the user's main script (a notebook's, or stdin's: spawn cannot).
    # The kernels run single-threaded in a forked child (csrc/kernels/parallel.cpp), as tasks ask.
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method))


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _worker_sees(root: str) -> bool:
    return os.path.isdir(root)


def _dask_results(tasks: List[_Task], address: str, root: str) -> Iterator[Tuple[List[CallResult], int, List[str]]]:
    """The tasks on a Dask cluster (``local:N`` starts a LocalCluster of N processes), results in
    task order; a worker lost mid-task has its task run again elsewhere (Dask reschedules it)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise DumpError("--scheduler needs Dask's distributed: pip install 'ascendgrad[cluster]'") from None
    import logging

    log = logging.getLogger("distributed")
    level = log.level
    environ = dict(os.environ)  # a LocalCluster leaves its workers' settings (OMP_NUM_THREADS=1...) here
    log.setLevel(logging.CRITICAL)  # a lost worker is retried and reported by its task: no log noise
    cluster = None
    try:
        if address.startswith("local:"):
            try:
                n = int(address[len("local:"):])
            except ValueError:
                raise DumpError(f"--scheduler {address}: local:N wants a number of worker processes") from None
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            _listens(address)
            try:
                client = Client(address, timeout="10s")
            except (OSError, TimeoutError, ValueError) as e:
                raise DumpError(f"--scheduler {address}: no Dask scheduler answers there "
                                f"({str(e).splitlines()[0][:120] if str(e) else type(e).__name__})") from None
        with client:
            try:
                client.wait_for_workers(1, timeout=60)
                seen = client.run(_worker_sees, os.path.abspath(root))
            except (ImportError, ModuleNotFoundError) as e:
                raise DumpError(f"--scheduler {address}: the workers cannot import ascendgrad ({e}); install "
                                f"ascendgrad on every worker") from None
            except TimeoutError:
                raise DumpError(f"--scheduler {address}: no worker joined the scheduler within 60 s") from None
            blind = sorted(w for w, ok in seen.items() if not ok)
            if blind:
                raise DumpError(f"--scheduler {address}: {len(blind)} of {len(seen)} workers cannot see {root} "
                                f"(e.g. {blind[0]}); the dump must be on a file system every worker mounts at "
                                f"the same path")
            # tasks are descriptions (a folder and call names): workers read the tensors themselves
            for fut in client.map(run_task, tasks, pure=False, retries=2):
                yield fut.result()
    finally:
        if cluster is not None:
            cluster.close()
            os.environ.clear()
            os.environ.update(environ)
        log.setLevel(level)


def _listens(address: str) -> None:
    """A refused connection at once, rather than Dask's retries until its timeout."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(address if "://" in address else "tcp://" + address)
    if u.scheme not in ("tcp", "tls") or not u.hostname:
        return  # (another transport: Dask's own connect says what is wrong)
    try:
        socket.create_connection((u.hostname, u.port or 8786), timeout=5).close()
    except OSError as e:
        raise DumpError(f"--scheduler {address}: no Dask scheduler answers there ({e.strerror or e})") from None


def check_dump(root: str, *, standard: str = DEFAULT_STANDARD, api: Optional[str] = None,
               on_call: Optional[Callable[[Call, CallResult, Optional[Prepared], Optional[np.ndarray], int, int], None]] = None,
               want_score: bool = False, jobs: Optional[int] = None, scheduler: Optional[str] = None,
               plots: Optional[str] = None) -> DumpResult:
    """Check every call of the five operators in an msprobe dump (see the module docstring).

    ``jobs``: processes judging calls side by side, each on one core (None: every core this
    process may use for a dump of several rank folders, else this process on ascendgrad's
    threads; 1: this process, one thread).
    ``scheduler``: a Dask scheduler's address (or ``local:N``) to run on instead. ``plots``: a
    folder for one PNG per failed call (written where the call is judged). The result is the same
    whatever runs it: the calls in the dump's order.

    ``on_call(call, result, prepared, score, bytes_so_far, index)`` is called after each call, in
    order (progress, reproduction); ``prepared`` and ``score`` only where the call was judged in
    this process (None otherwise). Raises :class:`DumpError`.
    """
    if standard not in STANDARDS:
        raise DumpError(f"unknown standard {standard!r}; choose one of {', '.join(STANDARDS)}")
    if standard == "dual-benchmark":
        raise DumpError("the dual-benchmark standard needs a third-party chip's result, which a dump does not hold")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise DumpError(f"jobs must be a whole number >= 1, got {jobs!r}")
    t0 = time.perf_counter()
    ranks = find_ranks(root)
    # by default, a dump of several rank folders on every core in processes; one rank folder here,
    # on ascendgrad's threads (its calls' slices side by side), with no process to start
    n_jobs = jobs if jobs is not None else (min(_cores(), len(ranks)) if len(ranks) > 1 else 1)
    # a Dask task costs tens of milliseconds of the scheduler's: one per rank folder there (a
    # single rank folder in eight batches), where processes here take a rank's calls in batches
    tasks = _tasks(ranks, api, standard, plots, n_jobs if scheduler is None else (1 if len(ranks) > 1 else 2), 1)
    results: List[CallResult] = []
    plot_files: List[str] = []
    nbytes = 0

    def done(call: Call, res: CallResult, p: Optional[Prepared], score: Optional[np.ndarray]) -> None:
        results.append(res)
        if on_call is not None:
            on_call(call, res, p, score, nbytes, len(results) - 1)

    if scheduler is None and (n_jobs == 1 or len(tasks) <= 1):
        for task in tasks:  # here: one thread for --jobs 1, ascendgrad's threads for a single task
            t = task._replace(threads=1 if jobs == 1 else None)  # (processes and Dask workers: 1)
            for call, res, p, score, n, plot in _judged(t):
                nbytes += n
                plot_files += [plot] if plot else []
                done(call, res, p, score if want_score else None)
    else:
        if scheduler is not None:
            batches: Iterator[Tuple[List[CallResult], int, List[str]]] = _dask_results(tasks, scheduler, root)
        else:
            pool = _local_pool(min(n_jobs, len(tasks)))
            # every task submitted at once (descriptions only); each worker holds one call's arrays
            batches = (f.result() for f in [pool.submit(run_task, t) for t in tasks])
        try:
            for task, (res_list, n, plot_list) in zip(tasks, batches):
                nbytes += n
                plot_files += plot_list
                for res in res_list:
                    done(Call(res.api, res.api.rpartition(".")[0], task.rank, None, None), res, None, None)
        finally:
            if scheduler is None:
                pool.shutdown(cancel_futures=True)
    return DumpResult(standard, root, results, nbytes, time.perf_counter() - t0, plot_files)


# --------------------------------------------------------------------------------------------
# output


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table(res: DumpResult) -> str:
    """The text report: one line per call, the reasons of the calls that did not pass, the rank ×
    API table where there is more than one rank (:func:`rank_table`), the summary line."""
    rows = [("api", "step/rank", "dtype", "shape", "metrics", "verdict")]
    for c in res.calls:
        sr = f"{'-' if c.step is None else c.step}/{'-' if c.rank is None else c.rank}"
        shape = "-" if c.shape is None else "[" + ",".join(map(str, c.shape)) + "]"
        metrics = " ".join(f"{k}={_fmt(v)}" for k, v in c.metrics.items()) or "-"
        rows.append((c.api, sr, c.dtype or "-", shape, metrics, c.verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(s.ljust(w) for s, w in zip(r, widths)).rstrip() for r in rows]
    notes = []
    for c in res.calls:
        if c.verdict == FAIL and c.worst:
            w = c.worst
            notes.append(f"{c.api}: FAIL: {c.reason}; worst element {tuple(w['index'])}: dumped "
                         f"{_fmt(w['dumped'])}, golden {_fmt(w['golden'])} ({w['metric']})")
        elif c.verdict == FAIL:
            notes.append(f"{c.api}: FAIL: {c.reason}")
        elif c.verdict == NC:
            notes.append(f"{c.api}: not comparable: {c.reason}")
    s = res.summary()
    summary = (f"{s['calls']} calls: {s[PASS]} pass, {s[FAIL]} fail, {s[NC]} not comparable "
               f"(standard {res.standard}; {s['tensor_bytes'] / 1e6:.1f} MB of tensors in {s['seconds']:.2f} s)")
    ranks = rank_table(res)
    return "\n".join(lines + ([""] + notes if notes else []) + ([""] + [ranks] if ranks else []) + ["", summary])


def _first_failure(c: CallResult) -> str:
    w = c.worst
    where = f"; worst {tuple(w['index'])}: {_fmt(w['dumped'])} vs golden {_fmt(w['golden'])}" if w else ""
    return f"first failure: {c.api} ({_rank_label(c.step, c.rank)}): {c.reason}{where}"


def result_html(res: DumpResult, kind: str, where: Optional[str], extra: Sequence[str] = ()) -> Any:
    """A result as HTML (a notebook's display of :class:`DumpResult` and of autocompare's report):
    the verdicts' counts, the calls (those that did not pass first), the step/rank × API table of
    failures where there is more than one rank; ``kind`` and ``where`` title it, ``extra`` are
    notes below."""
    D = _display
    s = res.summary()
    word = "FAILED" if s[FAIL] else ("PASSED" if s[PASS] else "NOT JUDGED")
    title = D.Raw(D.verdict(FAIL if s[FAIL] else (PASS if s[PASS] else NC), word) + D.esc(
        f" under {res.standard} · {s['calls']} calls: {s[PASS]} pass, {s[FAIL]} fail, {s[NC]} not comparable"
        + (f" · {where}" if where else "")))
    order = [c for c in res.calls if c.verdict == FAIL] + [c for c in res.calls if c.verdict == NC] + \
        [c for c in res.calls if c.verdict == PASS]
    rows = []
    for c in order:
        w = c.worst
        worst = f"{tuple(w['index'])}: {_fmt(w['dumped'])} vs {_fmt(w['golden'])}" if w else "-"
        metrics = " ".join(f"{k}={_fmt(v)}" for k, v in c.metrics.items()) or "-"
        rows.append((c.api, _rank_label(c.step, c.rank), c.dtype or "-",
                     "-" if c.shape is None else "[" + ",".join(map(str, c.shape)) + "]",
                     D.verdict(c.verdict), metrics, worst, c.reason or ""))
    blocks = [str(D.table(("call", "step/rank", "dtype", "shape", "verdict", "metrics", "worst element", "why"),
                          rows))]
    ranks, apis, fails = _failures(res)
    if len(ranks) > 1:
        cols = [a for a in apis if any(k[2] == a for k in fails)] or apis
        grid = [[_rank_label(*sr)] + [str(fails.get((sr[0], sr[1], a), 0) or ".") for a in cols] for sr in ranks
                if any(k[:2] == sr for k in fails)]
        blocks.append(str(D.table(["step/rank"] + cols, grid, caption="failures per step/rank and API (failing "
                                  f"ones: {len(grid)} of {len(ranks)})")))
    return D.report(kind, title, blocks, notes=list(extra))


def _rank_label(step: Any, rank: Any) -> str:
    return f"{'-' if step is None else step}/{'-' if rank is None else rank}"


def _failures(res: DumpResult) -> Tuple[List[Tuple[Any, Any]], List[str], Dict[Tuple[Any, Any, str], int]]:
    """(step, rank) pairs and APIs in the calls' order, failures per (step, rank, API)."""
    ranks: Dict[Tuple[Any, Any], None] = {}
    apis: Dict[str, None] = {}
    fails: Dict[Tuple[Any, Any, str], int] = {}
    for c in res.calls:
        api = c.api.rpartition(".")[0] or c.api
        ranks[(c.step, c.rank)] = None
        apis[api] = None
        if c.verdict == FAIL:
            fails[(c.step, c.rank, api)] = fails.get((c.step, c.rank, api), 0) + 1
    return list(ranks), list(apis), fails


def rank_table(res: DumpResult) -> str:
    """Where there is more than one rank: failures per step/rank (rows) and API (columns), then the
    first failing call of each failing rank ('' for one rank)."""
    ranks, apis, fails = _failures(res)
    if len(ranks) <= 1:
        return ""
    failing = [sr for sr in ranks if any(k[:2] == sr for k in fails)]
    cols = [a for a in apis if any(k[2] == a for k in fails)] or apis
    rows = [["step/rank"] + cols + ["failed"]]
    for sr in ranks:
        counts = [fails.get((sr[0], sr[1], a), 0) for a in cols]
        rows.append([_rank_label(*sr)] + [str(n) if n else "." for n in counts] + [str(sum(counts))])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    bad = sorted({sr[1] for sr in failing}, key=str)
    lines = [f"failures per step/rank and API: rank{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} "
             f"({len(failing)} of {len(ranks)} step/rank pairs fail):" if failing else
             f"failures per step/rank and API: none of {len(ranks)} step/rank pairs fails:"]
    lines += ["  " + "  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip()
              for r in rows]
    for sr in failing:
        first = next(c for c in res.calls if (c.step, c.rank) == sr and c.verdict == FAIL)
        w = first.worst
        where = f"; worst element {tuple(w['index'])}: dumped {_fmt(w['dumped'])}, golden {_fmt(w['golden'])}" \
            if w else ""
        lines.append(f"first failure of {_rank_label(*sr)}: {first.api}: {first.reason}{where}")
    return "\n".join(lines)


def plot_ranks(path: str, res: DumpResult) -> None:
    """A heat map of failures, step/rank (rows) by API (columns), as a PNG (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks, apis, fails = _failures(res)
    m = np.array([[fails.get((sr[0], sr[1], a), 0) for a in apis] for sr in ranks], dtype=float)
    fig, ax = plt.subplots(figsize=(2 + 0.9 * len(apis), 1.5 + 0.18 * len(ranks)))
    im = ax.imshow(np.where(m > 0, m, np.nan), aspect="auto", interpolation="nearest", cmap="Reds",
                   vmin=0, vmax=max(1.0, float(m.max(initial=0.0))))
    ax.set_xticks(range(len(apis)), apis, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(ranks)), [_rank_label(*sr) for sr in ranks], fontsize=max(4, 9 - len(ranks) // 16))
    ax.set_xlabel("API")
    ax.set_ylabel("step/rank")
    n_bad = sum(1 for sr in ranks if any(k[:2] == sr for k in fails))
    ax.set_title(f"failed calls: {n_bad} of {len(ranks)} step/rank pairs fail (standard {res.standard})", fontsize=9)
    fig.colorbar(im, ax=ax, label="failed calls")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _plot_path(folder: str, res: CallResult, name: str) -> str:
    tag = "" if res.step is None else f"step{res.step}_"
    tag += "" if res.rank is None else f"{res.rank}_" if not isinstance(res.rank, int) else f"rank{res.rank}_"
    return os.path.join(folder, f"{tag}{name}.png")


def _plot(path: str, name: str, p: Prepared, score: np.ndarray, res: CallResult, standard: str) -> None:
    """One PNG: the error over the tensor's two largest dims, and its histogram against the
    standard's per-element threshold (a score of 1): :func:`ascendgrad._display.figure`."""
    _display.figure(score, name, res.verdict, res.reason, standard).savefig(path, dpi=80)


# --------------------------------------------------------------------------------------------
# reproduction of one call


_REPRO = '''"""Reproduction of {name} ({where}) from the msprobe dump {dump}.

Inputs: the .npy files beside this script (bfloat16 saved as 2-byte void; read back by
ascendgrad.compare.load). Runs ascendgrad's kernel and the float64 golden model on them and
judges the dumped gradient under the {standard} standard; exit status 1 when it fails.
"""
import pathlib
import sys

import numpy as np

import ascendgrad
from ascendgrad import reference
from ascendgrad.compare import compare, load

HERE = pathlib.Path(__file__).resolve().parent


def arr(name):
    return load(HERE / f"{{name}}.npy")[""]


dumped = arr("dumped_grad")
{body}
print("ascendgrad kernel vs golden:", "PASSED" if compare(ours, golden, standard="{standard}") else "FAILED")
report = compare(dumped, golden, standard="{standard}")
print("dumped gradient vs golden:")
print(report)
sys.exit(0 if report else 1)
'''

_BODIES = {
    "softmax_backward": '''g, y = arr("grad_output"), arr("output")
golden = reference.softmax_backward(g, y, {dim})
ours = ascendgrad.softmax_backward(g, y, {dim})''',
    "log_sigmoid_backward": '''g, x = arr("grad_output"), arr("x")
golden = reference.log_sigmoid_backward(g, x)
ours = ascendgrad.log_sigmoid_backward(g, x)''',
    "softshrink_backward": '''g, x = arr("grad_output"), arr("x")
golden = reference.softshrink_backward(g, x, {lambd!r})
# PyTorch compares |x| with lambd rounded to x's dtype: between the two, either gradient is right
alt = reference.softshrink_backward(g, x, float(np.float64({lambd!r}).astype(x.dtype)))
d = dumped.astype(np.float64)
golden = np.where(np.abs(d - alt) < np.abs(d - golden), alt, golden)
ours = ascendgrad.softshrink_backward(g, x, {lambd!r})''',
    "cross_entropy_loss_grad": '''g, x, target = arr("grad_loss"), arr("x"), arr("target")
weight = arr("weight") if (HERE / "weight.npy").exists() else None
golden_z, ours_z = dict({zloss}), dict({zloss})
if golden_z:  # the z-loss branch: lse from the logits, the z-loss's own upstream gradient if any
    lse = reference.logsumexp(x, -1)
    gz = arr("grad_zloss") if (HERE / "grad_zloss.npy").exists() else None
    golden_z.update(lse_for_zloss=lse, grad_zloss=gz)
    ours_z.update(lse_for_zloss=lse.astype(x.dtype), grad_zloss=None if gz is None else gz.astype(x.dtype))
golden = reference.cross_entropy_loss_grad(g, reference.log_softmax(x, -1), target, weight, {reduction!r},
                                           {ignore_index!r}, {label_smoothing!r}, **golden_z)
log_prob = reference.log_softmax(x, -1).astype(x.dtype)  # what the forward hands the kernel
ours = ascendgrad.cross_entropy_loss_grad(g.astype(x.dtype), log_prob, target, weight, reduction={reduction!r},
                                          ignore_index={ignore_index!r}, label_smoothing={label_smoothing!r},
                                          **ours_z)''',
    "kl_div_backward": '''g, x, target = arr("grad_output"), arr("x"), arr("target")
golden = reference.kl_div_backward(g, x, target, {reduction!r}, {log_target!r})
ours = ascendgrad.kl_div_backward(g, x, target, {reduction!r}, {log_target!r})''',
}


def write_repro(p: Prepared, res: CallResult, call: Call, out: str, standard: str) -> List[str]:
    """Write the call's inputs (.npy) and repro.py into ``out``; returns the files written."""
    os.makedirs(out, exist_ok=True)
    files = []
    for name, a in list(p.inputs.items()) + [("dumped_grad", p.dumped)]:
        if a is None:
            continue
        path = os.path.join(out, f"{name}.npy")
        np.save(path, a, allow_pickle=False)
        files.append(path)
    params = dict(p.params)
    zeta = params.pop("lse_square_scale_for_zloss", 0.0)
    params["zloss"] = repr({"lse_square_scale_for_zloss": zeta} if zeta else {})
    body = _BODIES[p.op].format(**params)
    where = f"step {res.step}, rank {res.rank}"
    script = _REPRO.format(name=call.name, where=where, dump=call.rank.path, standard=standard, body=body)
    path = os.path.join(out, "repro.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)
    files.append(path)
    return files


# --------------------------------------------------------------------------------------------
# command line


def add_arguments(p: Any) -> None:
    p.add_argument("dump", help="msprobe dump folder: its root (step*/rank*) or one rank folder")
    p.add_argument("--standard", default=DEFAULT_STANDARD, choices=[s for s in STANDARDS if s != "dual-benchmark"],
                   help=f"precision standard (default {DEFAULT_STANDARD})")
    p.add_argument("--api", metavar="PATTERN",
                   help="check only calls matching PATTERN (glob, e.g. 'Functional.softmax.*', or a name prefix)")
    p.add_argument("--json", metavar="FILE", help="write the verdicts as JSON to FILE ('-' for stdout)")
    p.add_argument("--plots", metavar="DIR", help="one PNG per failed call in DIR (needs matplotlib)")
    p.add_argument("--jobs", type=int, metavar="N", help="processes judging calls side by side, one core each "
                   "(default: every core this process may use; 1: this process alone)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask cluster: its scheduler's address "
                   "(tcp://host:8786), or local:N for a LocalCluster of N processes (pip install 'ascendgrad[cluster]'); "
                   "every worker must see DUMP at the same path")
    p.add_argument("--repro", metavar="API", help="write this call (e.g. Functional.softmax.0) as a standalone reproduction")
    p.add_argument("--out", metavar="DIR", help="folder for --repro")


class _Progress:
    """A progress line on stderr, at most a few times a second (a rewritten line on a terminal)."""

    def __init__(self) -> None:
        self.t0 = self.last = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.shown = False

    def __call__(self, k: int, name: str, nbytes: int) -> None:
        now = time.perf_counter()
        if now - self.last < (0.2 if self.tty else 2.0):
            return
        self.last = now
        line = f"dump-check: call {k + 1} ({name}), {nbytes / 1e6:.0f} MB read, {now - self.t0:.1f} s"
        sys.stderr.write(("\r" + line[:100].ljust(100)) if self.tty else line + "\n")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\n")


def run(args: Any) -> int:
    err = sys.stderr
    if args.repro and not args.out:
        print("dump-check: --repro API needs --out DIR", file=err)
        return 2
    if args.out and not args.repro:
        print("dump-check: --out DIR goes with --repro API", file=err)
        return 2
    if args.plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("dump-check: --plots needs matplotlib (pip install matplotlib)", file=err)
            return 2
        os.makedirs(args.plots, exist_ok=True)
    if args.jobs is not None and args.scheduler is not None:
        print("dump-check: --jobs and --scheduler exclude each other (the cluster's workers are the jobs)", file=err)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print(f"dump-check: --jobs {args.jobs}: give a number of processes >= 1", file=err)
        return 2
    progress = _Progress()
    repro_files: List[str] = []

    def on_call(call: Call, res: CallResult, p: Optional[Prepared], score: Optional[np.ndarray],
                nbytes: int, k: int) -> None:
        progress(k, call.name, nbytes)
        if args.repro and call.name == args.repro and not repro_files:
            if p is None:
                raise DumpError(f"{call.name} cannot be reproduced: {res.reason}")
            repro_files.extend(write_repro(p, res, call, args.out, args.standard))

    try:
        # a reproduction needs the call's arrays here: judged in this process
        res = check_dump(args.dump, standard=args.standard, api=args.repro or args.api, on_call=on_call,
                         jobs=1 if args.repro else args.jobs, scheduler=None if args.repro else args.scheduler,
                         plots=args.plots)
        if args.plots and len(res.by_rank()) > 1:
            res.plots.append(os.path.join(args.plots, "ranks.png"))
            plot_ranks(res.plots[-1], res)
    except DumpError as e:
        progress.done()
        print(f"dump-check: {e}", file=err)
        return 2
    progress.done()
    if args.repro:
        if not repro_files:
            print(f"dump-check: no call {args.repro} of the five operators in {args.dump}", file=err)
            return 2
        print(f"wrote {len(repro_files)} files to {args.out}: python {os.path.join(args.out, 'repro.py')}")
    print(table(res))
    for path in res.plots:
        print(f"plot: {path}")
    if args.json:
        text = json.dumps(res.to_dict(), indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    s = res.summary()
    if not res.calls:
        what = f" matching {args.api!r}" if args.api else ""
        print(f"dump-check: {args.dump} holds no call{what} of softmax, logsigmoid, softshrink, cross_entropy "
              f"or kl_div", file=err)
        return 2
    if s[FAIL]:
        return 1
    if not s[PASS]:
        first = res.calls[0]
        print(f"dump-check: no call in {args.dump} could be judged (all {s[NC]} not comparable; "
              f"{first.api}: {first.reason})", file=err)
        return 2
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m ascendgrad dump-check``: the command line; returns the exit status."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m ascendgrad dump-check")
    add_arguments(p)
    return run(p.parse_args(argv))
