"""Golden data for operator tests: inputs plus a trustworthy golden output, in files any test
harness reads, from a shape or from a CANN ATK case file; and the verdict on a device's output.

``python -m ascendgrad golden`` is this module's command line::

    golden OP --shape S [--shape S2 ...] --dtype D [attributes] [--seed N] --out DIR
    golden --cases atk_aclnnXxx.json --out DIR [--filter ID|NAME ...]
    golden --check GOLDEN_DIR --actual ACTUAL_DIR [--standard NAME] [--json FILE]

Layout, one folder per case: ``manifest.json`` plus each tensor as raw little-endian
``NAME.bin`` (what ``ndarray.tofile`` writes) and ``NAME.npy``. The manifest::

    {"op": "softmax_backward", "aclnn": "aclnnSoftmaxBackward",
     "case": {"id": 3, "name": "...", "source": "atk_aclnnSoftmaxBackward.json"},
     "attrs": {"dim": 1}, "seed": 3,
     "inputs": [{"name": "grad_output", "dtype": "float16", "shape": [4, 44],
                 "bin": "grad_output.bin", "npy": "grad_output.npy"}, ...],
     "outputs": [{"name": "grad_input", ...}]}

Input and attribute names are the NumPy function's keywords; an optional tensor that is absent
is not listed. bfloat16 tensors are stored as 2-byte words (``uint16`` in the ``.npy``) with
``"dtype": "bfloat16"`` in the manifest; :func:`load_case` restores them. Non-finite float
attributes are written as the strings ``"inf"``, ``"-inf"``, ``"nan"`` (strict JSON has no
literal for them).

Inputs follow CANN's ecosystem-standard distribution unless told otherwise: each tensor is, by a
coin from the seed, uniform on [-5, 5] or normal with mean in [-5, 5] and spread in [0.1, 2].
Every number comes from the seed: tensor k of a case is drawn from
``numpy.random.default_rng([seed, k])`` (its slices of 2^20 elements from generators seeded by
it, so the numbers do not depend on the thread count), and a case regenerates alone (a case of a
file has the seed ``--seed`` + its position in the file).

The golden output is :mod:`ascendgrad.reference` (float64) rounded once to the output's dtype,
computed in slices so that only the case itself is held in memory. Before it is written, the
compiled kernel computes the same case in the output's dtype and must agree within the precision
standard; a disagreement raises :class:`GoldenMismatchError`, never a silent golden.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import os
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

from . import _args, _files, _ops, judge
from . import reference as _ref
from .compare import CRITERIA, CompareReport

__all__ = [
    "Case",
    "Skipped",
    "CheckReport",
    "GoldenMismatchError",
    "OPS",
    "make_case",
    "cases_from_atk",
    "write_case",
    "load_case",
    "check",
    "round_to",
    "softmax_grad_golden",
    "log_sigmoid_grad_golden",
    "soft_shrink_grad_golden",
    "kl_div_loss_grad_golden",
    "cross_entropy_loss_grad_golden",
]

PathLike = Union[str, "os.PathLike[str]"]
BF16 = np.dtype(ml_dtypes.bfloat16)

#: Tensor bytes (inputs and output) above which a case of a file is skipped: a case is held in
#: memory whole, and CANN's files hold cases of several GiB.
MAX_CASE_BYTES = 4 << 30

_CHUNK = 1 << 20  # elements per slice of the float64 reference and of the generators


class GoldenMismatchError(RuntimeError):
    """The float64 reference and the compiled kernel disagree beyond the precision standard."""


class _Rejected(Exception):
    """The operator refuses the case (its message says why): a case file's case is skipped."""


# --------------------------------------------------------------------------------------------
# the operators


@dataclasses.dataclass(frozen=True)
class _Arg:
    name: str  # the NumPy function's keyword
    kind: str  # "tensor" or "attr"
    aliases: Tuple[str, ...] = ()  # other names in case files (aclnn's), compared normalised
    optional: bool = False
    default: Any = None


@dataclasses.dataclass(frozen=True)
class _Op:
    aclnn: str
    args: Tuple[_Arg, ...]  # in the aclnn call's order: how unnamed case-file inputs map
    output: str
    kernel: Callable[..., Any]
    reference: Callable[..., Any]

    def arg(self, name: str) -> _Arg:
        return next(a for a in self.args if a.name == name)


def _t(name: str, *aliases: str, optional: bool = False) -> _Arg:
    return _Arg(name, "tensor", aliases, optional)


def _a(name: str, default: Any, *aliases: str) -> _Arg:
    return _Arg(name, "attr", aliases, True, default)


#: The five operators by NumPy function name.
OPS: Dict[str, _Op] = {
    "softmax_backward": _Op(
        "aclnnSoftmaxBackward", (_t("grad_output"), _t("output"), _a("dim", -1)), "grad_input",
        _ops.softmax_backward, _ref.softmax_backward),
    "log_sigmoid_backward": _Op(
        "aclnnLogSigmoidBackward", (_t("grad_output"), _t("x", "self", "input"), _t("buffer", optional=True)),
        "grad_input", _ops.log_sigmoid_backward, _ref.log_sigmoid_backward),
    "softshrink_backward": _Op(
        "aclnnSoftshrinkBackward", (_t("grad_output"), _t("x", "self", "input"), _a("lambd", 0.5)),
        "grad_input", _ops.softshrink_backward, _ref.softshrink_backward),
    "cross_entropy_loss_grad": _Op(
        "aclnnCrossEntropyLossGrad",
        (_t("grad_loss"), _t("log_prob"), _t("target", "targets"), _t("weight", optional=True),
         _t("grad_zloss", optional=True), _t("lse_for_zloss", optional=True), _a("reduction", "mean"),
         _a("ignore_index", -100), _a("label_smoothing", 0.0), _a("lse_square_scale_for_zloss", 0.0)),
        "x_grad", _ops.cross_entropy_loss_grad, _ref.cross_entropy_loss_grad),
    "kl_div_backward": _Op(
        "aclnnKlDivBackward",
        (_t("grad_output"), _t("x", "self", "input"), _t("target"), _a("reduction", "mean"),
         _a("log_target", False)),
        "grad_input", _ops.kl_div_backward, _ref.kl_div_backward),
}

_KL_NAMES = {v: k for k, v in _ref.KL_REDUCTIONS.items()}


def _norm(name: str) -> str:
    """Compare names the way they vary across files: case, underscores, an 'Optional' suffix."""
    n = name.replace("_", "").lower()
    return n[: -len("optional")] if n.endswith("optional") and n != "optional" else n


def _op_of(aclnn_name: str) -> Optional[str]:
    key = _norm(aclnn_name)
    key = key[len("aclnn"):] if key.startswith("aclnn") else key
    for name, spec in OPS.items():
        if _norm(spec.aclnn)[len("aclnn"):] == key or _norm(name) == key:
            return name
    return None


# --------------------------------------------------------------------------------------------
# dtypes and files

_DTYPE_NAMES = {
    "fp16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp32": "float32", "float32": "float32", "float": "float32",
    "fp64": "float64", "float64": "float64", "double": "float64",
    "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8",
    "bool": "bool",
}


def _dtype(name: Any) -> np.dtype:
    """A dtype from a case file's or the command line's spelling (fp16, bf16, float32, ...)."""
    if isinstance(name, np.dtype):
        return name
    key = _DTYPE_NAMES.get(str(name).lower())
    if key is None:
        raise ValueError(f"dtype {name!r} is not one ascendgrad can make")
    return BF16 if key == "bfloat16" else np.dtype(key)


def _stored(arr: NDArray[Any]) -> NDArray[Any]:
    """What goes into the files: little-endian, bfloat16 as its 2-byte words."""
    if arr.dtype == BF16:
        return arr.view(np.uint16)
    return arr.astype(arr.dtype.newbyteorder("<"), copy=False)


def _entry(name: str, arr: NDArray[Any]) -> Dict[str, Any]:
    return {"name": name, "dtype": arr.dtype.name, "shape": list(arr.shape),
            "bin": f"{name}.bin", "npy": f"{name}.npy"}


def _attr_json(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _safe_name(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")
    return s[:80] or "case"


# --------------------------------------------------------------------------------------------
# cases


@dataclasses.dataclass
class Case:
    """One case: the inputs given to the operator (absent optional tensors left out), its
    attributes, the golden outputs, and where it came from. ``folder`` is its folder's name."""

    op: str
    inputs: Dict[str, NDArray[Any]]
    attrs: Dict[str, Any]
    outputs: Dict[str, NDArray[Any]]
    seed: int = 0
    id: Any = 0
    name: str = ""
    source: str = ""
    folder: str = ""

    @property
    def aclnn(self) -> str:
        return OPS[self.op].aclnn

    def manifest(self) -> Dict[str, Any]:
        return {
            "op": self.op, "aclnn": self.aclnn,
            "case": {"id": self.id, "name": self.name, "source": self.source},
            "attrs": {k: _attr_json(v) for k, v in self.attrs.items()}, "seed": self.seed,
            "inputs": [_entry(k, a) for k, a in self.inputs.items()],
            "outputs": [_entry(k, a) for k, a in self.outputs.items()],
        }

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (*self.inputs.values(), *self.outputs.values()))


@dataclasses.dataclass
class Skipped:
    """A case of a file that was not generated, and why."""

    id: Any
    name: str
    reason: str


# A case before its data exists: per tensor (shape, dtype, distribution) or None when absent.
_TensorPlan = Optional[Tuple[Tuple[int, ...], np.dtype, Tuple[Any, ...]]]


@dataclasses.dataclass
class _Plan:
    op: str
    tensors: Dict[str, _TensorPlan]
    attrs: Dict[str, Any]
    seed: int
    id: Any = 0
    name: str = ""
    source: str = ""
    ignore_fraction: float = 0.0

    def nbytes(self) -> int:
        sizes = [math.prod(t[0]) * t[1].itemsize for t in self.tensors.values() if t is not None]
        return sum(sizes) + max(sizes, default=0)  # the output is at most the largest input


# --------------------------------------------------------------------------------------------
# input distributions: ("eco",), ("uniform", lo, hi), ("const", v), ("choice", values),
# ("normal", (mean_lo, mean_hi), (std_lo, std_hi))

ECO = ("eco",)


def _number(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return float(v.strip())  # "inf", "-inf", "nan", "1e-3"
    raise ValueError(f"{v!r} is not a number")


def _pair(v: Any) -> Tuple[float, float]:
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return _number(v[0]), _number(v[0])
        if len(v) == 2:
            return _number(v[0]), _number(v[1])
        raise ValueError(f"{v!r} is not a [lo, hi] pair")
    return _number(v), _number(v)


def _distribution(rv: Any) -> Tuple[Any, ...]:
    """A case file's ``range_values`` as a distribution (ValueError for forms it cannot be)."""
    if rv is None or rv == "default":
        return ECO
    if isinstance(rv, dict):
        if str(rv.get("name", "")).lower() not in ("nd", "normal"):
            raise ValueError(f"range_values {rv!r}: only the normal form {{'name': 'nd', ...}} is known")
        return ("normal", _pair(rv.get("mean", [0, 0])), _pair(rv.get("std", [1, 1])))
    if isinstance(rv, str):
        m = re.fullmatch(r"\s*[\[(]\s*([^,]+),\s*([^,\])]+)\s*[\])]\s*", rv)
        if m:  # "(0, 1)": a range written as text
            return ("uniform", _number(m.group(1)), _number(m.group(2)))
        return ("const", _number(rv))
    if isinstance(rv, (bool, int, float)):
        return ("const", _number(rv))
    if isinstance(rv, (list, tuple)):
        vals = [_number(v) for v in rv]
        if len(vals) == 1:
            return ("const", vals[0])
        if len(vals) == 2 and all(math.isfinite(v) for v in vals):
            lo, hi = vals
            if lo > hi:
                raise ValueError(f"range_values {rv!r}: low end above high end")
            return ("uniform", lo, hi) if lo < hi else ("const", lo)
        if not vals:
            raise ValueError("range_values [] is empty")
        return ("choice", tuple(vals))  # more than two values, or a pair with inf/nan in it
    raise ValueError(f"range_values {rv!r} is not a form ascendgrad knows")


def _fill(rng: np.random.Generator, shape: Tuple[int, ...], dt: np.dtype, dist: Tuple[Any, ...]) -> NDArray[Any]:
    """A new array of `shape` and `dt` drawn from `dist`, generated in slices (no float64 copy
    of a half-precision tensor); integers are drawn inclusive of both ends."""
    out = np.empty(shape, dt)
    flat = out.reshape(-1)
    n = flat.size
    kind = dist[0]
    if kind == "eco":  # CANN's ecosystem standard: half the tensors uniform, half normal
        if rng.random() < 0.5:
            kind, dist = "uniform", ("uniform", -5.0, 5.0)
        else:
            kind, dist = "normal", ("normal", (float(rng.uniform(-5, 5)),) * 2, (float(rng.uniform(0.1, 2)),) * 2)
    if kind == "normal":
        mean = float(rng.uniform(*dist[1])) if dist[1][0] != dist[1][1] else dist[1][0]
        std = float(rng.uniform(*dist[2])) if dist[2][0] != dist[2][1] else dist[2][0]
    integer = dt.kind in "iub"
    gen_dt = np.float64 if dt == np.float64 else np.float32
    if kind == "const":
        with np.errstate(invalid="ignore", over="ignore"):
            flat[...] = np.asarray(dist[1]).astype(dt) if not integer else int(dist[1])
        return out
    if kind == "choice":
        vals = np.asarray(dist[1]).astype(dt) if not integer else np.asarray(dist[1], np.int64).astype(dt)
    base = int(rng.integers(0, 2**63))

    def chunk(i: int) -> None:
        # slice i of the tensor from its own generator: the same numbers for any thread count
        r = np.random.default_rng([base, i // _CHUNK])
        m = min(_CHUNK, n - i)
        with np.errstate(invalid="ignore", over="ignore"):
            if kind == "choice":
                flat[i:i + m] = vals[r.integers(0, len(vals), m)]
            elif integer:
                lo, hi = (dist[1], dist[2]) if kind == "uniform" else (mean - 3 * std, mean + 3 * std)
                flat[i:i + m] = r.integers(math.ceil(lo), math.floor(hi) + 1, m, dtype=np.int64)
            elif kind == "uniform":
                buf = r.random(m, dtype=gen_dt)
                buf *= dist[2] - dist[1]
                buf += dist[1]
                flat[i:i + m] = buf
            else:
                buf = r.standard_normal(m, dtype=gen_dt)
                buf *= std
                buf += mean
                flat[i:i + m] = buf

    starts = range(0, n, _CHUNK)
    if len(starts) > 1:
        with ThreadPoolExecutor(max(1, _ops.get_num_threads())) as pool:
            list(pool.map(chunk, starts))
    else:
        for i in starts:
            chunk(i)
    return out


# --------------------------------------------------------------------------------------------
# the golden


def _round_bf16(x: NDArray[np.float64]) -> NDArray[Any]:
    """float64 → bfloat16 with one rounding: round to odd into float32 first (exact for the
    final rounding, float32 having 16 more bits), then to nearest; a plain cast goes through
    float32 with two round-to-nearest steps."""
    with np.errstate(invalid="ignore", over="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        inexact = back != x
        toward_zero = np.abs(back) > np.abs(x)
    bits = f.view(np.uint32)
    bits -= toward_zero.astype(np.uint32)  # sign-magnitude: one step down is one ULP toward 0
    bits |= inexact.astype(np.uint32) & ~np.isnan(x).astype(np.uint32)
    return f.astype(BF16)


def _round_f16(x: NDArray[np.float64]) -> NDArray[Any]:
    """float64 → float16; results below the smallest normal (2^-14) are built from their bits,
    round(|x|·2^24) (exact scaling, ties to even), as NumPy's cast takes ~100x longer on them."""
    small = np.abs(x) < 2.0**-14  # False for NaN
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(small, 0.0, x).astype(np.float16)
    if small.any():
        m = np.where(small, np.rint(np.abs(x) * 2.0**24), 0.0).astype(np.uint16)
        bits = m | (np.signbit(x).astype(np.uint16) << np.uint16(15))
        out.view(np.uint16)[small] = bits[small]
    return out


def round_to(x: NDArray[np.float64], dt: np.dtype) -> NDArray[Any]:
    """x (float64) rounded once to dt; float16 and bfloat16 correctly, subnormals included."""
    if dt == BF16:
        return _round_bf16(x)
    if dt == np.float16:
        return _round_f16(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dt)


def _agree(kernel: NDArray[Any], golden: NDArray[Any], standard: Optional[str]) -> Optional[CompareReport]:
    """None when the kernel's result agrees with the golden; else the failing report.

    A quick pass first, with the default standard's table (:data:`compare.CRITERIA`): every
    element within atol + rtol·|golden| (or equal, NaN included), or the few that are not (at
    most half the allowed share) all within its max abs error, is agreement. Anything else is
    decided by :func:`compare` under the standard."""
    crit = CRITERIA.get(golden.dtype.name, CRITERIA["float64"])
    k, g = kernel.astype(np.float64), golden.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(k - g)
        ok = (err <= crit.atol + crit.rtol * np.abs(g)) | (k == g) | (np.isnan(k) & np.isnan(g))
    if ok.all():
        return None
    max_abs = getattr(crit, "max_abs", None)
    if standard is None and max_abs is not None:
        off = err[~ok]
        if off.size <= ok.size * crit.max_fraction / 2 and bool(np.all(off <= max_abs)):  # NaN is not <=
            return None
    rep = _judge(kernel, golden, standard)
    return None if rep else rep


def _golden(op: str, inputs: Dict[str, NDArray[Any]], attrs: Dict[str, Any],
            standard: Optional[str] = None) -> Dict[str, NDArray[Any]]:
    """{output name: golden}: the float64 reference per slice, rounded once to the dtype of the
    kernel's output, each slice checked against the kernel's own result (AclnnError when the
    operator rejects the case; GoldenMismatchError when the two disagree)."""
    spec = OPS[op]
    try:
        kernel = np.asarray(spec.kernel(**inputs, **attrs))
    except (ValueError, TypeError) as e:  # AclnnError is a ValueError
        raise _Rejected(f"the operator rejects it: {e}") from None
    golden = np.empty_like(kernel)

    def one_slice(index: Any, view: Callable[[NDArray[Any]], NDArray[Any]], ref: NDArray[np.float64]
                  ) -> Optional[CompareReport]:
        g_view, k_view = view(golden), view(kernel)
        g_view[index] = round_to(ref, golden.dtype).reshape(g_view[index].shape)
        return _agree(k_view[index], g_view[index], standard)

    for bad in judge.map_reference(op, inputs, attrs, kernel.shape, one_slice):
        if bad is not None:
            raise GoldenMismatchError(
                f"{op}: the float64 reference and the compiled kernel disagree on this case; no golden "
                f"is written.\n{bad}")
    return {spec.output: golden}


# --------------------------------------------------------------------------------------------
# making cases


def _shape(s: Any) -> Tuple[int, ...]:
    if isinstance(s, (int, np.integer)):
        return (int(s),)
    return tuple(int(d) for d in s)


def _default_tensors(op: str, shapes: Sequence[Tuple[int, ...]], dt: np.dtype, attrs: Dict[str, Any],
                     optional: Sequence[str], dist: Tuple[Any, ...]) -> Dict[str, _TensorPlan]:
    """Shapes of every tensor of `op` from the ones given (in argument order; the rest follow)."""
    if not shapes:
        raise ValueError(f"{op}: give at least one shape")
    spec = OPS[op]
    unknown = [o for o in optional if o not in {a.name for a in spec.args if a.kind == "tensor" and a.optional}]
    if unknown:
        raise ValueError(f"{op} has no optional tensor {unknown[0]!r}")
    s0 = shapes[0]
    if op == "cross_entropy_loss_grad":
        if len(s0) != 2:
            raise ValueError("cross_entropy_loss_grad: the shape is log_prob's, (N, C)")
        n, c = s0
        red = attrs.get("reduction") or "mean"
        g = (n,) if red == "none" else ()
        plan: Dict[str, _TensorPlan] = {
            "grad_loss": (g, dt, dist), "log_prob": (s0, dt, dist),
            "target": ((n,), np.dtype(np.int64), ("uniform", 0, c - 1)),
            "weight": ((c,), dt, dist) if "weight" in optional else None,
            "grad_zloss": (g, dt, dist) if "grad_zloss" in optional else None,
            "lse_for_zloss": ((n,), dt, dist) if "lse_for_zloss" in optional else None,
        }
        return plan
    if op == "kl_div_backward":
        t = shapes[1] if len(shapes) > 1 else s0
        red = attrs.get("reduction", "mean")
        gs: Tuple[int, ...] = shapes[2] if len(shapes) > 2 else (
            tuple(np.broadcast_shapes(s0, t)) if red in ("none", 0) else ())
        return {"grad_output": (gs, dt, dist), "x": (s0, dt, dist), "target": (t, dt, dist)}
    names = [a.name for a in spec.args if a.kind == "tensor"]
    if op == "softshrink_backward":  # grad_output first, x second (they may broadcast)
        return {"grad_output": (s0, dt, dist), "x": (shapes[1] if len(shapes) > 1 else s0, dt, dist)}
    plan = {}
    for i, name in enumerate(names):
        if spec.arg(name).optional and name not in optional:
            plan[name] = None
        else:
            plan[name] = (shapes[i] if i < len(shapes) else s0, dt, dist)
    return plan


def _rng(seed: int, k: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, k])


def _realize(plan: _Plan, standard: Optional[str] = None) -> Case:
    """Draw the inputs of a plan and compute its golden."""
    inputs: Dict[str, NDArray[Any]] = {}
    spec = OPS[plan.op]
    for k, arg in enumerate(a for a in spec.args if a.kind == "tensor"):
        tp = plan.tensors.get(arg.name)
        if tp is None:
            continue
        rng = _rng(plan.seed, k)
        try:
            arr = _fill(rng, *tp)
        except (ValueError, OverflowError) as e:  # e.g. an integer tensor filled with "nan"
            raise _Rejected(f"cannot draw {arg.name} ({tp[1].name}) from its range_values: {e}") from None
        if arg.name == "target" and plan.ignore_fraction > 0 and arr.size:
            hit = rng.random(arr.size) < plan.ignore_fraction
            arr.reshape(-1)[hit] = plan.attrs.get("ignore_index", -100)
        inputs[arg.name] = arr
    outputs = _golden(plan.op, inputs, plan.attrs, standard)
    return Case(plan.op, inputs, dict(plan.attrs), outputs, plan.seed, plan.id, plan.name, plan.source)


def _check_attrs(op: str, attrs: Dict[str, Any]) -> Dict[str, Any]:
    spec = OPS[op]
    names = {a.name for a in spec.args if a.kind == "attr"}
    bad = [k for k in attrs if k not in names]
    if bad:
        raise ValueError(f"{op} has no attribute {bad[0]!r} (it has: {', '.join(sorted(names)) or 'none'})")
    out = {a.name: attrs[a.name] for a in spec.args if a.kind == "attr" and a.name in attrs}
    if op == "kl_div_backward" and isinstance(out.get("reduction"), (int, np.integer)):
        out["reduction"] = _KL_NAMES.get(int(out["reduction"]), out["reduction"])
    return out


def make_case(op: str, shapes: Union[int, Sequence[int], Sequence[Sequence[int]]], dtype: Any = "float32", *,
              seed: int = 0, range: Optional[Tuple[float, float]] = None, optional: Sequence[str] = (),
              ignore_fraction: float = 0.0, standard: Optional[str] = None, **attrs: Any) -> Case:
    """One case of `op` (a NumPy function name) with its golden.

    Args:
        shapes: one shape, or several in the function's argument order; tensors without one
            follow the first (cross_entropy_loss_grad: log_prob's (N, C), the rest derived;
            kl_div_backward: x, then target, then grad_output, which is 0-D unless 'none').
        dtype: of every float tensor (fp16, bf16, float32, float64 or NumPy's spellings).
        seed: every number derives from it.
        range: (lo, hi) uniform instead of the ecosystem-standard mix.
        optional: optional tensors to include ("weight", "grad_zloss", "lse_for_zloss", "buffer").
        ignore_fraction: share of cross-entropy targets set to ``ignore_index``.
        **attrs: the function's keyword attributes (dim, lambd, reduction, ignore_index, ...).

    Raises ValueError for an unknown op, attribute or shape set, AclnnError when the operator
    rejects the case, GoldenMismatchError when kernel and reference disagree.
    """
    if op not in OPS:
        raise ValueError(f"unknown operator {op!r}; one of {', '.join(OPS)}")
    if isinstance(shapes, (int, np.integer)):
        shapes = (int(shapes),)
    if shapes and all(isinstance(d, (int, np.integer)) for d in shapes):
        shape_list = [_shape(shapes)]
    else:
        shape_list = [_shape(s) for s in shapes] if shapes else [()]
    attrs = _check_attrs(op, attrs)
    dist = ECO if range is None else ("uniform", float(range[0]), float(range[1]))
    tensors = _default_tensors(op, shape_list, _dtype(dtype), attrs, optional, dist)
    plan = _Plan(op, tensors, attrs, int(seed), 0, _cli_name(op, shape_list, _dtype(dtype)), "make_case",
                 float(ignore_fraction))
    try:
        case = _realize(plan, standard)
    except _Rejected as e:
        raise ValueError(str(e)) from None
    case.folder = _safe_name(case.name)
    return case


def _cli_name(op: str, shapes: Sequence[Tuple[int, ...]], dt: np.dtype) -> str:
    return f"{op}_{dt.name}_" + "_".join("x".join(map(str, s)) or "scalar" for s in shapes)


# --------------------------------------------------------------------------------------------
# CANN ATK case files


def _attr_value(arg: _Arg, entry: Dict[str, Any], rng: np.random.Generator) -> Any:
    rv = entry.get("range_values")
    dt = str(entry.get("dtype") or "").lower()
    if isinstance(rv, list) and len(rv) == 2 and not any(isinstance(v, str) for v in rv) and rv[0] != rv[1]:
        if isinstance(arg.default, bool) or isinstance(arg.default, str):
            v: Any = rv[int(rng.integers(0, 2))]
        elif isinstance(arg.default, int) or dt.startswith("int"):
            v = int(rng.integers(int(rv[0]), int(rv[1]) + 1))
        else:
            v = float(rng.uniform(float(rv[0]), float(rv[1])))
    elif isinstance(rv, list) and rv:
        v = rv[int(rng.integers(0, len(rv)))] if len(rv) > 2 else rv[0]
    else:
        v = rv
    if isinstance(arg.default, bool):
        v = v if isinstance(v, bool) else str(v).lower() in ("1", "true")
    elif isinstance(arg.default, float):
        v = _number(v)
        if dt in ("fp32", "float32", "float") or entry.get("type") == "scalar" and dt in ("fp16", "bf16"):
            v = float(np.float32(v))  # the value an fp32 aclScalar holds
    elif isinstance(arg.default, int):
        v = int(_number(v))
    return v


def _plan_atk(entry: Any, index: int, source: str, seed: int) -> Union[_Plan, Skipped]:
    """A case file's entry as a plan, or why it cannot be one."""
    if not isinstance(entry, dict):
        return Skipped(index, "", f"entry {index} is not an object")
    cid, cname = entry.get("id", index), str(entry.get("name") or "")
    skip = lambda why: Skipped(cid, cname, why)  # noqa: E731
    op = _op_of(str(entry.get("aclnn_name") or entry.get("api_name") or ""))
    if op is None:
        return skip(f"aclnn_name {entry.get('aclnn_name')!r} is none of the five operators")
    spec = OPS[op]
    items = entry.get("inputs")
    if not isinstance(items, list):
        return skip("no 'inputs' list")
    by_name = {}
    for a in spec.args:
        by_name[_norm(a.name)] = a
        for al in a.aliases:
            by_name[_norm(al)] = a
    case_seed = int(seed) + index
    attr_rng = _rng(case_seed, 1000)
    tensors: Dict[str, _TensorPlan] = {a.name: None for a in spec.args if a.kind == "tensor"}
    attrs: Dict[str, Any] = {}
    seen = set()
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            return skip(f"input {pos} is not an object (a {type(item).__name__})")
        nm = item.get("name")
        if nm is None:  # unnamed inputs (CANN's softshrink file) take the argument at their position
            if pos >= len(spec.args):
                return skip(f"unnamed input {pos}: {op} has only {len(spec.args)} arguments")
            arg = spec.args[pos]
        else:
            found = by_name.get(_norm(str(nm)))
            if found is None:
                return skip(f"input {nm!r} is no argument of {op}")
            arg = found
        if arg.name in seen:
            return skip(f"argument {arg.name!r} given twice")
        seen.add(arg.name)
        kind = item.get("type")
        try:
            if arg.kind == "tensor":
                if kind not in (None, "tensor"):
                    return skip(f"input {arg.name!r} is a {kind!r}, {op} takes a tensor")
                if item.get("shape") is None or item.get("dtype") is None:
                    if not arg.optional:
                        return skip(f"tensor {arg.name!r} has no shape or dtype")
                    continue  # an absent optional tensor
                tensors[arg.name] = (_shape(item["shape"]), _dtype(item["dtype"]),
                                     _distribution(item.get("range_values")))
            else:
                if kind == "tensor":
                    return skip(f"input {arg.name!r} is a tensor, {op} takes an attribute")
                attrs[arg.name] = _attr_value(arg, item, attr_rng)
        except ValueError as e:
            return skip(f"input {arg.name!r}: {e}")
    if op == "cross_entropy_loss_grad" and not attrs.get("lse_square_scale_for_zloss"):
        # CANN's runner passes NULL for the z-loss tensors (its docs: without the z-loss scale
        # they have no effect), and its files give them shapes the operator would refuse
        tensors["grad_zloss"] = tensors["lse_for_zloss"] = None
    missing = [a.name for a in spec.args if a.kind == "tensor" and not a.optional and tensors[a.name] is None]
    if missing:
        return skip(f"no tensor {missing[0]!r}")
    return _Plan(op, tensors, _check_attrs(op, attrs), case_seed, cid, cname, source)


def _matches(patterns: Sequence[str], cid: Any, name: str, folder: str) -> bool:
    for p in patterns:
        for part in str(p).split(","):
            part = part.strip()
            m = re.fullmatch(r"(-?\d+)-(-?\d+)", part)
            if m and isinstance(cid, int) and int(m.group(1)) <= cid <= int(m.group(2)):
                return True
            if part == str(cid) or fnmatch.fnmatchcase(name, part) or fnmatch.fnmatchcase(folder, part):
                return True
    return False


def _folder(cid: Any, name: str) -> str:
    ident = f"{cid:04d}" if isinstance(cid, int) else str(cid)
    return _safe_name(f"{ident}_{name}" if name else ident)


def cases_from_atk(path: PathLike, *, seed: int = 0, filter: Optional[Sequence[str]] = None,
                   max_case_bytes: int = MAX_CASE_BYTES, standard: Optional[str] = None,
                   ) -> Iterator[Union[Case, Skipped]]:
    """Every case of a CANN ATK case file, one at a time: a :class:`Case` with its golden, or a
    :class:`Skipped` with the reason (an unsupported dtype or form, a case the operator rejects,
    one of more than `max_case_bytes` of tensors). `filter`: ids (``7``, ``10-19``) or
    names/folder names (shell patterns); cases that match none are left out.

    Raises ValueError when the file is no case list; GoldenMismatchError from the case where
    kernel and reference disagree.
    """
    p = os.fspath(path)
    entries = _files.read_json(p, "a CANN ATK case file (a JSON list of cases)")
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise ValueError(f"{p}: a case file is a list of cases, got {type(entries).__name__}")
    source = os.path.basename(p)
    used: Dict[str, int] = {}
    for index, entry in enumerate(entries):
        plan = _plan_atk(entry, index, source, seed)
        cid, cname = (plan.id, plan.name) if isinstance(plan, (_Plan, Skipped)) else (index, "")
        folder = _folder(cid, cname)
        if filter and not _matches(filter, cid, cname, folder):
            continue
        used[folder] = used.get(folder, 0) + 1
        if used[folder] > 1:  # two cases with one id and name
            folder = f"{folder}-{used[folder]}"
        if isinstance(plan, Skipped):
            yield plan
            continue
        size = plan.nbytes()
        if size > max_case_bytes:
            yield Skipped(cid, cname, f"{size / 2**30:.1f} GiB of tensors, more than the limit of "
                                      f"{max_case_bytes / 2**30:g} GiB per case")
            continue
        try:
            case = _realize(plan, standard)
        except _Rejected as e:
            yield Skipped(cid, cname, str(e))
            continue
        case.folder = folder
        yield case


# --------------------------------------------------------------------------------------------
# files


def _write_array(path: str, arr: NDArray[Any]) -> None:
    with open(path, "wb") as f:
        arr.tofile(f)


def write_case(case: Case, dir: PathLike) -> str:
    """Write `case` into the folder `dir` (created; written under a temporary name and renamed,
    so a folder with a manifest is always complete). Returns the folder's path."""
    final = os.fspath(dir)
    parent = os.path.dirname(os.path.abspath(final))
    os.makedirs(parent, exist_ok=True)
    tmp = final.rstrip("/\\") + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name, arr in (*case.inputs.items(), *case.outputs.items()):
        stored = np.asarray(_stored(arr), order="C")  # not ascontiguousarray: it makes a 0-D array 1-D
        _write_array(os.path.join(tmp, f"{name}.bin"), stored)
        np.save(os.path.join(tmp, f"{name}.npy"), stored, allow_pickle=False)
    with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(case.manifest(), f, indent=1, allow_nan=False)
        f.write("\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final


class _FileProblem(Exception):
    """A file of a case is missing, truncated, or of the wrong dtype or shape (exit 2)."""


def _read_manifest(folder: str) -> Dict[str, Any]:
    path = os.path.join(folder, "manifest.json")
    try:
        m = _files.read_json(path, "a golden case's manifest (JSON)")
    except FileNotFoundError:
        raise _FileProblem(f"{path}: missing") from None
    except OSError as e:
        raise _FileProblem(f"{path}: unreadable ({e})") from None
    if not isinstance(m, dict) or m.get("op") not in OPS or not isinstance(m.get("outputs"), list) \
            or not isinstance(m.get("inputs", []), list):
        raise _FileProblem(f"{path}: not a golden manifest; it should have an op and outputs")
    for t in m.get("inputs", []) + m["outputs"]:
        if not (isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("shape"), list)
                and isinstance(t.get("dtype"), str)):
            raise _FileProblem(f"{path}: not a golden manifest; each tensor should have a name, dtype and shape")
    return m


def _read_tensor(folder: str, entry: Dict[str, Any]) -> NDArray[Any]:
    """A tensor of a case folder by its manifest entry: the .bin if there is one, else the
    .npy; _FileProblem names the file when it is missing, truncated or of another dtype or
    shape."""
    dt = _dtype(entry["dtype"])
    shape = _shape(entry["shape"])
    words = np.dtype(np.uint16) if dt == BF16 else dt.newbyteorder("<")
    name = entry["name"]
    npy = os.path.join(folder, entry.get("npy") or f"{name}.npy")
    binp = os.path.join(folder, entry.get("bin") or f"{name}.bin")
    if os.path.exists(binp):  # raw first: what a device harness writes
        want = math.prod(shape) * words.itemsize
        if os.path.isdir(binp):
            raise _FileProblem(f"{binp}: a folder; it should be {dt.name} {list(shape)}, raw ({want} bytes)")
        got = os.path.getsize(binp)
        if got != want:
            what = "truncated" if got < want else "too long"
            raise _FileProblem(f"{binp}: {got} bytes, {what}; it should be {dt.name} {list(shape)}, raw ({want} bytes)")
        arr = np.fromfile(binp, dtype=words).reshape(shape)
    elif os.path.exists(npy):
        try:
            arr = _files.read_npy(npy, f"a .npy file of {dt.name} {list(shape)}")
        except OSError as e:
            raise _FileProblem(f"{npy}: unreadable ({e})") from None
        if not (arr.dtype == words or (dt == BF16 and arr.dtype in (np.dtype("V2"), BF16))):
            raise _FileProblem(f"{npy}: dtype {arr.dtype}, the manifest says {dt.name}")
        if arr.shape != shape:
            raise _FileProblem(f"{npy}: shape {list(arr.shape)}, the manifest says {list(shape)}")
        arr = arr.view(words)
    else:
        raise _FileProblem(f"{binp}: missing (no {name}.bin or {name}.npy)")
    return arr.view(BF16) if dt == BF16 else arr.astype(dt, copy=False)


def _attrs_from_json(op: str, attrs: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(attrs)
    for a in OPS[op].args:
        if a.kind == "attr" and isinstance(a.default, float) and isinstance(out.get(a.name), str):
            out[a.name] = float(out[a.name])
    return out


def load_case(dir: PathLike) -> Case:
    """A case folder as written by :func:`write_case` (bfloat16 restored, non-finite attributes
    restored). ValueError names the file that is missing, truncated or of the wrong dtype."""
    folder = os.fspath(dir)
    try:
        m = _read_manifest(folder)
        inputs = {e["name"]: _read_tensor(folder, e) for e in m.get("inputs", [])}
        outputs = {e["name"]: _read_tensor(folder, e) for e in m["outputs"]}
    except (_FileProblem, _files.BadFile) as e:
        raise ValueError(str(e)) from None
    c = m.get("case") or {}
    return Case(m["op"], inputs, _attrs_from_json(m["op"], m.get("attrs") or {}), outputs, int(m.get("seed", 0)),
                c.get("id", 0), str(c.get("name", "")), str(c.get("source", "")), os.path.basename(folder.rstrip("/\\")))


# --------------------------------------------------------------------------------------------
# judging a device's output


def _judge(actual: NDArray[Any], golden: NDArray[Any], standard: Optional[str], **extra: Any) -> CompareReport:
    """The comparison under a named precision standard (None: compare's default); `extra`:
    the benchmark result and level of the dual-benchmark standard."""
    with np.errstate(invalid="ignore"):  # casting a bfloat16 NaN warns
        if standard is None:
            return judge.compare_arrays(actual, golden, dtype=golden.dtype)[0]
        return judge.compare_arrays(actual, golden, dtype=golden.dtype, standard=standard, **extra)[0]


@dataclasses.dataclass
class CaseVerdict:
    """One case of :func:`check`: 'pass', 'fail' or 'error' (a file problem), with the reports
    of its outputs or the error's text."""

    case: str
    verdict: str
    reports: Dict[str, CompareReport] = dataclasses.field(default_factory=dict)
    error: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"case": self.case, "verdict": self.verdict, "error": self.error,
                "outputs": {k: r.to_dict() for k, r in self.reports.items()}}

    def _rows(self) -> List[Tuple[Any, ...]]:
        """Table rows (case, output, verdict cell, max abs err, worst element, why) for HTML."""
        from . import _display as D

        if self.verdict == "error":
            return [(self.case, "-", D.verdict("error", "ERROR"), "-", "-", self.error)]
        rows: List[Tuple[Any, ...]] = []
        for name, r in self.reports.items():
            w = r.worst[0] if r.worst else None
            rows.append((self.case, name, D.verdict(r.passed), D.num(r.max_abs_err, 3),
                         f"{list(w.location)}: {w.actual:.7g} vs {w.expected:.7g}" if w else "-",
                         "; ".join(r.reasons)))
        return rows

    def __repr__(self) -> str:
        from . import _display as D

        if self.verdict == "error":
            return D.lines(f"<CaseVerdict {self.case}: error>", self.error)
        outs = "; ".join(f"{k} {'pass' if r.passed else 'FAIL'} (max abs err {D.num(r.max_abs_err, 3)}"
                         + (f": {', '.join(r.reasons)}" if r.reasons else "") + ")" for k, r in self.reports.items())
        return D.lines(f"<CaseVerdict {self.case}: {self.verdict}>", outs)

    def _repr_html_(self) -> str:
        from . import _display as D

        return str(D.table(_CASE_HEADER, self._rows()))


_CASE_HEADER = ("case", "output", "verdict", "max abs err", "worst element (index: actual vs golden)", "why")


@dataclasses.dataclass
class CheckReport:
    """Outcome of :func:`check`; truthy when every case passed. ``exit_code``: 0 all passed,
    1 some failed, 2 some file was missing, truncated or of the wrong size or dtype."""

    standard: str
    cases: List[CaseVerdict]

    @property
    def failed(self) -> List[str]:
        return [c.case for c in self.cases if c.verdict == "fail"]

    @property
    def errors(self) -> List[str]:
        return [c.case for c in self.cases if c.verdict == "error"]

    @property
    def exit_code(self) -> int:
        return 2 if self.errors else (1 if self.failed else 0)

    def __bool__(self) -> bool:
        return self.exit_code == 0

    def to_dict(self) -> Dict[str, Any]:
        return {"standard": self.standard, "passed": sum(c.verdict == "pass" for c in self.cases),
                "failed": self.failed, "errors": self.errors, "exit_code": self.exit_code,
                "cases": [c.to_dict() for c in self.cases]}

    def __repr__(self) -> str:
        from . import _display as D

        n = len(self.cases)
        word = "PASSED" if self else ("ERROR" if self.errors else "FAILED")
        ok = n - len(self.failed) - len(self.errors)
        head = f"<CheckReport: {word} under {self.standard}, {ok}/{n} cases passed>"
        failed = f"failed ({len(self.failed)}): {', '.join(self.failed)}" if self.failed else ""
        errors = f"file errors ({len(self.errors)}): {', '.join(self.errors)}" if self.errors else ""
        worst = ""
        scored = [(r.max_abs_err, c.case, k, r) for c in self.cases if c.verdict == "fail"
                  for k, r in c.reports.items() if not r.passed]
        if scored:
            _, case, k, r = max(scored, key=lambda t: t[0] if t[0] == t[0] else math.inf)
            worst = f"worst: {case} {k}: max abs err {D.num(r.max_abs_err, 3)}; {'; '.join(r.reasons)}"
        return D.lines(head, failed, errors, worst)

    def _repr_html_(self) -> str:
        from . import _display as D

        n = len(self.cases)
        ok = n - len(self.failed) - len(self.errors)
        word = "PASSED" if self else ("ERROR" if self.errors else "FAILED")
        title = D.Raw(D.verdict(bool(self), word) + D.esc(f" under {self.standard} · {ok}/{n} cases passed"))
        # the cases that did not pass first of all, then the passing ones, up to the table's cap
        bad = [row for c in self.cases if c.verdict != "pass" for row in c._rows()]
        good = [row for c in self.cases if c.verdict == "pass" for row in c._rows()]
        rows = (bad + good)[:D.MAX_ROWS]
        hidden = len(bad) + len(good) - len(rows)
        note = ""
        if hidden:
            note = f"{hidden} more rows not shown" + (" (all passing)" if len(bad) <= len(rows) else "")
        return str(D.report("CheckReport", title, [D.table(_CASE_HEADER, rows, max_rows=len(rows))],
                            notes=[(("cases that did not pass first; " if bad and good else "") + note) if note
                                   else ""]))

    def __str__(self) -> str:
        rows = [("case", "output", "verdict", "max abs err", "worst element (index: actual vs golden)")]
        for c in self.cases:
            if c.verdict == "error":
                rows.append((c.case, "-", "ERROR", "-", c.error))
            for name, r in c.reports.items():
                w = r.worst[0] if r.worst else None
                worst = f"{list(w.location)}: {w.actual:.7g} vs {w.expected:.7g}" if w else "-"
                rows.append((c.case, name, "pass" if r.passed else "FAIL", f"{r.max_abs_err:.3g}", worst))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows]
        n = len(self.cases)
        lines.append(f"{n - len(self.failed) - len(self.errors)}/{n} cases passed under '{self.standard}'"
                     + (f"; failed: {', '.join(self.failed)}" if self.failed else "")
                     + (f"; file errors: {', '.join(self.errors)}" if self.errors else ""))
        return "\n".join(lines)


def _case_folders(golden_dir: str) -> List[str]:
    # exists, not isfile: a manifest that is no file is a case's error, not a case left out
    if os.path.exists(os.path.join(golden_dir, "manifest.json")):
        return [""]
    return sorted(d for d in os.listdir(golden_dir)
                  if not d.endswith(".partial") and os.path.exists(os.path.join(golden_dir, d, "manifest.json")))


def check(golden_dir: PathLike, actual_dir: PathLike, standard: str = "cann", *,
          benchmark_dir: Optional[PathLike] = None, level: Optional[str] = None) -> CheckReport:
    """Judge a device's outputs against the goldens, case by case.

    `golden_dir` holds case folders (or is one); `actual_dir` has the same folders with each
    output as ``NAME.bin`` (raw, the manifest's dtype and shape) or ``NAME.npy``. Each output is
    compared under the named standard (``dual-benchmark`` also reads the third-party chip's
    outputs from `benchmark_dir`, same layout, and takes `level`). Missing, truncated or
    mistyped files make a case's verdict 'error' (exit code 2), naming the file. Raises
    FileNotFoundError when `golden_dir` holds no case, ValueError for an unknown standard.
    """
    if standard == "dual-benchmark" and benchmark_dir is None:
        raise ValueError("the dual-benchmark standard needs the third-party outputs (benchmark_dir, --benchmark)")
    g_root, a_root = os.fspath(golden_dir), os.fspath(actual_dir)
    folders = _case_folders(g_root) if os.path.isdir(g_root) else []
    if not folders:
        raise FileNotFoundError(f"{g_root}: no case folder with a manifest.json")
    verdicts = []
    for folder in folders:
        g_case, a_case = os.path.join(g_root, folder), os.path.join(a_root, folder)
        label = folder or os.path.basename(g_root.rstrip("/\\"))
        try:
            m = _read_manifest(g_case)
            if not os.path.isdir(a_case):
                raise _FileProblem(f"{a_case}: missing (no such case folder)")
            reports = {}
            for e in m["outputs"]:
                gold = _read_tensor(g_case, e)
                act = _read_tensor(a_case, e)
                extra: Dict[str, Any] = {}
                if benchmark_dir is not None:
                    extra = {"benchmark": _read_tensor(os.path.join(os.fspath(benchmark_dir), folder), e),
                             "level": level}
                reports[e["name"]] = _judge(act, gold, standard, **extra)
        except (_FileProblem, _files.BadFile) as e:
            verdicts.append(CaseVerdict(label, "error", error=str(e)))
            continue
        verdicts.append(CaseVerdict(label, "pass" if all(reports.values()) else "fail", reports))
    return CheckReport(standard, verdicts)


# --------------------------------------------------------------------------------------------
# drop-ins for the golden functions of hicann/ops-nn (tests/assets/golden.py): same arguments,
# same return type (an ndarray of the input's dtype); float64 inside, rounded once.


def _out(x: NDArray[np.float64], like: Any) -> NDArray[Any]:
    return round_to(x, np.asarray(like).dtype)


def softmax_grad_golden(softmax_data: NDArray[Any], grad_softmax_data: NDArray[Any], *, axes: Any = -1,
                        **kwargs: Any) -> NDArray[Any]:
    """Kernel SoftmaxGrad: ``(grad - sum(grad * y, axes)) * y`` with y = `softmax_data` first."""
    ax = list(axes) if isinstance(axes, (list, tuple)) else [axes]
    if len(ax) != 1:
        raise ValueError(f"softmax_grad_golden: one axis is supported, got {axes!r}")
    return _out(_ref.softmax_backward(grad_softmax_data, softmax_data, int(ax[0])), softmax_data)


def log_sigmoid_grad_golden(grads: NDArray[Any], features: NDArray[Any], **kwargs: Any) -> NDArray[Any]:
    """Kernel LogSigmoidGrad: ``grads * sigmoid(-features)``."""
    return _out(_ref.log_sigmoid_backward(grads, features), features)


def soft_shrink_grad_golden(input_grad: NDArray[Any], input_x: NDArray[Any], *, lambd: float = 0.5,
                            **kwargs: Any) -> NDArray[Any]:
    """Kernel SoftShrinkGrad (inputs input_grad, input_x; attribute lambd, as its op definition):
    input_grad where ``|input_x| > lambd``, else 0."""
    return _out(_ref.softshrink_backward(input_grad, input_x, lambd), input_grad)


def kl_div_loss_grad_golden(grad: NDArray[Any], input_: NDArray[Any], target: NDArray[Any], *,
                            reduction: Any = "mean", log_target: bool = False, **kwargs: Any) -> NDArray[Any]:
    """Kernel KlDivLossGrad: ``-target * grad`` (``exp(target)`` with log_target) at the shape all
    three broadcast to, divided by ``input_``'s size ('mean') or first dimension ('batchmean')."""
    shape = np.broadcast_shapes(np.shape(grad), np.shape(input_), np.shape(target))
    red = _KL_NAMES.get(reduction, reduction) if isinstance(reduction, int) else reduction
    size = np.size(input_)
    scale = {"mean": 1.0 / max(size, 1), "batchmean": 1.0 / max(np.shape(input_)[0] if np.ndim(input_) else 1, 1)}
    _ref._kl_reduction(red)  # an unknown name raises here
    g = np.asarray(grad, np.float64) * scale.get(str(red), 1.0)
    x = np.broadcast_to(np.asarray(input_), shape)
    return _out(_ref.kl_div_backward(g, x, target, "sum", log_target), input_)


def cross_entropy_loss_grad_golden(grad_loss: NDArray[Any], log_prob: NDArray[Any], target: NDArray[Any],
                                   weight: Optional[NDArray[Any]] = None, grad_zloss: Optional[NDArray[Any]] = None,
                                   lse_for_zloss: Optional[NDArray[Any]] = None, *, reduction: str = "mean",
                                   ignore_index: int = -100, label_smoothing: float = 0.0,
                                   **kwargs: Any) -> NDArray[Any]:
    """Kernel CrossEntropyLossGrad: the gradient w.r.t. the logits, of grad_loss's dtype; the
    z-loss inputs are taken as the kernel takes them (``lse_square_scale_for_zloss`` in kwargs,
    0 by default: no z-loss term)."""
    zeta = float(kwargs.get("lse_square_scale_for_zloss", 0.0))
    r = _ref.cross_entropy_loss_grad(grad_loss, log_prob, np.asarray(target).astype(np.int64), weight, reduction,
                                     ignore_index, label_smoothing, grad_zloss if zeta else None,
                                     lse_for_zloss if zeta else None, zeta)
    return _out(r, grad_loss)


__golden__ = {"kernel": {
    "softmax_grad": "softmax_grad_golden",
    "log_sigmoid_grad": "log_sigmoid_grad_golden",
    "soft_shrink_grad": "soft_shrink_grad_golden",
    "kl_div_loss_grad": "kl_div_loss_grad_golden",
    "cross_entropy_loss_grad": "cross_entropy_loss_grad_golden",
}}


# --------------------------------------------------------------------------------------------
# command line: python -m ascendgrad golden


def add_arguments(p: Any) -> None:
    p.add_argument("op", nargs="?", choices=sorted(OPS), metavar="OP",
                   help=f"one case of this operator ({', '.join(OPS)})")
    p.add_argument("--shape", action="append", default=[], metavar="S",
                   help="a tensor's shape, e.g. 4,44 or 4x44 ('' for 0-D); repeat in argument order")
    p.add_argument("--dtype", default="float32", help="float16|bfloat16|float32|float64 (fp16, bf16, ...)")
    p.add_argument("--dim", type=int)
    p.add_argument("--lambd", type=float)
    p.add_argument("--reduction")
    p.add_argument("--ignore-index", type=int)
    p.add_argument("--label-smoothing", type=float)
    p.add_argument("--lse-square-scale-for-zloss", type=float)
    p.add_argument("--log-target", action="store_true", default=None)
    p.add_argument("--with", dest="optional", action="append", default=[], metavar="TENSOR",
                   help="include an optional tensor (weight, grad_zloss, lse_for_zloss, buffer)")
    p.add_argument("--ignore-fraction", type=float, default=0.0,
                   help="share of cross-entropy targets set to ignore_index (default 0)")
    p.add_argument("--range", nargs=2, type=float, metavar=("LO", "HI"),
                   help="uniform on [LO, HI] instead of the ecosystem-standard mix")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", metavar="FILE.json", help="every case of a CANN ATK case file")
    p.add_argument("--filter", action="append", default=[], metavar="ID|NAME",
                   help="with --cases: only these ids (7, 10-19) or names / folder names (patterns)")
    p.add_argument("--max-case-gib", type=float, default=MAX_CASE_BYTES / 2**30,
                   help="with --cases: skip cases of more tensor data (default %(default)g)")
    p.add_argument("--out", metavar="DIR", help="where the case folders go")
    p.add_argument("--check", metavar="GOLDEN_DIR", help="judge ACTUAL_DIR against these goldens")
    p.add_argument("--actual", metavar="ACTUAL_DIR")
    p.add_argument("--standard", default="cann",
                   help="precision standard of --check: cann (default), cann-v1, dual-benchmark, msprobe")
    p.add_argument("--benchmark", metavar="BENCH_DIR", help="dual-benchmark: the third-party chip's outputs")
    p.add_argument("--level", help="dual-benchmark: L0 (default), L1 or L2")
    p.add_argument("--json", metavar="FILE", help="with --check: the verdicts as JSON ('-': stdout)")


def _progress(text: str, final: bool = False) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K" + text + ("\n" if final else ""))
    else:
        sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _run_cases(args: Any) -> int:
    out = args.out
    gen: List[str] = []
    skipped: List[Skipped] = []
    mismatched: List[str] = []
    written = 0
    t0 = time.perf_counter()
    it = cases_from_atk(args.cases, seed=args.seed, filter=args.filter or None,
                        max_case_bytes=int(args.max_case_gib * 2**30))
    k = 0
    while True:
        try:
            item = next(it)
        except StopIteration:
            break
        except GoldenMismatchError as e:  # loud: stop here, nothing of this case is written
            mismatched.append(str(e))
            break
        k += 1
        if isinstance(item, Skipped):
            skipped.append(item)
            status = f"skipped ({item.reason})"
            label = _folder(item.id, item.name)
        else:
            write_case(item, os.path.join(out, item.folder))
            gen.append(item.folder)
            written += 2 * item.nbytes + 1024
            status = f"{item.nbytes / 2**20:.1f} MiB"
            label = item.folder
        rate = written / 2**20 / max(time.perf_counter() - t0, 1e-9)
        _progress(f"[{k}] {len(gen)} generated, {len(skipped)} skipped, {rate:.0f} MiB/s  {label}: {status}")
    _progress(f"{args.cases}: {len(gen)} cases generated, {len(skipped)} skipped -> {out}", final=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "index.json"), "w", encoding="utf-8") as f:
        json.dump({"source": os.path.basename(args.cases), "seed": args.seed, "generated": gen,
                   "skipped": [dataclasses.asdict(s) for s in skipped]}, f, indent=1)
    print(f"{len(gen)} generated, {len(skipped)} skipped")
    for s in skipped:
        print(f"skipped {_folder(s.id, s.name)}: {s.reason}")
    if mismatched:
        print(f"golden: ERROR after {k} cases: {mismatched[0]}", file=sys.stderr)
        return 1
    return 0


def _run_check(args: Any) -> int:
    if not args.actual:
        print("golden: --check needs --actual ACTUAL_DIR", file=sys.stderr)
        return 2
    try:
        rep = check(args.check, args.actual, standard=args.standard, benchmark_dir=args.benchmark, level=args.level)
    except (OSError, ValueError, TypeError) as e:
        print(f"golden: {e}", file=sys.stderr)
        return 2
    print(rep)
    for c in rep.cases:  # the table is on stdout; what could not be read is said on stderr too
        if c.verdict == "error":
            print(f"golden: {c.error}", file=sys.stderr)
    if args.json:

        text = json.dumps(_files.strict_json(rep.to_dict()), indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    return rep.exit_code


def run(args: Any) -> int:
    """``python -m ascendgrad golden``: exit 0 on success; with --check 0/1/2 (see check)."""

    try:
        if args.check:
            return _run_check(args)
        if not args.out:
            print("golden: --out DIR is needed", file=sys.stderr)
            return 2
        if args.cases:
            if args.op:
                print("golden: give an operator or --cases, not both", file=sys.stderr)
                return 2
            return _run_cases(args)
        if not args.op:
            print("golden: give an operator, --cases FILE or --check DIR", file=sys.stderr)
            return 2
        attrs = {k: getattr(args, k) for k in ("dim", "lambd", "reduction", "ignore_index", "label_smoothing",
                                                "lse_square_scale_for_zloss", "log_target")
                 if getattr(args, k) is not None}
        spec_attrs = {a.name for a in OPS[args.op].args if a.kind == "attr"}
        extra = sorted(set(attrs) - spec_attrs)
        if extra:
            print(f"golden: {args.op} has no attribute --{extra[0].replace('_', '-')}", file=sys.stderr)
            return 2
        shapes = [_args.shape_arg(s) or () for s in args.shape] or [()]
        case = make_case(args.op, shapes, args.dtype, seed=args.seed, range=tuple(args.range) if args.range else None,
                         optional=args.optional, ignore_fraction=args.ignore_fraction, **attrs)
        path = write_case(case, os.path.join(args.out, case.folder))
        print(f"{path}: {', '.join(f'{k} {a.dtype.name}{list(a.shape)}' for k, a in {**case.inputs, **case.outputs}.items())}")
        return 0
    except GoldenMismatchError as e:
        print(f"golden: ERROR {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError, TypeError) as e:
        print(f"golden: {e}", file=sys.stderr)
        return 2
