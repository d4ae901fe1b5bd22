"""Compare an NPU (or any) result with the golden model: errors, ULP distances, a verdict.

:func:`compare` returns a :class:`CompareReport`: maximum and mean absolute and relative error,
a histogram of ULP distances in the result's dtype, how many elements lie beyond the
tolerance, NaN/inf mismatches, the worst elements with their indices, and pass/fail. The
report is truthy when it passed, prints as a short table, and ``to_dict()`` gives JSON-ready
data. ``python -m ascendgrad compare ACTUAL EXPECTED`` does the same from ``.npy``, ``.npz`` or
raw ``.bin`` files (see :func:`load`).

The criterion (defaults per dtype in :data:`CRITERIA`, each part overridable), after
Ascend's precision standards — the "dual thousandth" rule (at most 1/1000 of the elements
beyond a relative error of 1/1000) for float16, the "dual ten-thousandth" for float32, and the
per-dtype thresholds 2⁻¹⁰ (float16), 2⁻⁷ (bfloat16), 2⁻¹³ (float32) of their threshold
standard. An element is *beyond* when ``|a − e| > atol + rtol·|e|``; a comparison passes when

1. no NaN or inf mismatches (a NaN where the other is not, an inf where the other is finite
   or an inf of the other sign; with ``equal_nan=False`` two NaNs are a mismatch too),
2. at most ``max_fraction`` of the elements are beyond, and
3. no element is beyond ``max_ratio`` (10) times its tolerance.

=========  ===========  ===========  ============
dtype      rtol         atol         max_fraction
=========  ===========  ===========  ============
float16    2⁻¹⁰ ≈ 9.8e-4  2⁻¹⁰       1e-3
bfloat16   2⁻⁷ ≈ 7.8e-3   2⁻⁷        1e-3
float32    2⁻¹³ ≈ 1.2e-4  2⁻¹³       1e-4
float64    1e-9           1e-9       1e-4
=========  ===========  ===========  ============
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike

from . import _args
from ._interop import asarray

__all__ = ["compare", "CompareReport", "Criterion", "Mismatch", "CRITERIA", "ULP_EDGES", "ulp_distance", "load"]


class Criterion(NamedTuple):
    """Tolerance of one dtype: beyond = ``|a − e| > atol + rtol·|e|``."""

    rtol: float
    atol: float
    max_fraction: float  # of the elements allowed beyond
    max_ratio: float = 10.0  # no element may be beyond this many times its tolerance


#: Default criterion per comparison dtype (see the module docstring).
CRITERIA: Dict[str, Criterion] = {
    "float16": Criterion(2.0**-10, 2.0**-10, 1e-3),
    "bfloat16": Criterion(2.0**-7, 2.0**-7, 1e-3),
    "float32": Criterion(2.0**-13, 2.0**-13, 1e-4),
    "float64": Criterion(1e-9, 1e-9, 1e-4),
}

#: Upper edges of the ULP histogram's buckets: 0, 1, 2, 3–4, 5–8, … 513–1024, then > 1024.
ULP_EDGES: Tuple[int, ...] = (0, 1, 2) + tuple(2**k for k in range(2, 11))

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


class Mismatch(NamedTuple):
    """One compared element: its index, both values, its errors and ULP distance."""

    location: Tuple[int, ...]  # the element's index
    actual: float
    expected: float
    abs_err: float
    rel_err: float  # |a − e| / |e|; inf for e = 0 ≠ a
    ulp: Optional[int]  # None where either value is NaN or inf
    ratio: float  # abs_err / (atol + rtol·|e|); inf for NaN/inf mismatches


@dataclasses.dataclass
class CompareReport:
    """Outcome of :func:`compare`; truthy when it passed.

    Errors are over the elements where both values are finite (``finite`` of ``size``);
    ``mean_rel_err`` is over those with ``expected != 0``. ``ulp_histogram`` maps bucket labels
    (``"0"``, ``"1"``, ``"2"``, ``"3-4"``, … ``">1024"``) to element counts.
    """

    passed: bool
    dtype: str
    shape: Tuple[int, ...]
    size: int
    finite: int
    max_abs_err: float
    mean_abs_err: float
    max_rel_err: float
    mean_rel_err: float
    max_ulp: int
    ulp_histogram: Dict[str, int]
    rtol: float
    atol: float
    max_fraction: float
    max_ratio: float
    beyond: int  # elements with |a − e| > atol + rtol·|e| (NaN/inf mismatches included)
    nan_mismatch: int
    inf_mismatch: int
    worst: Tuple[Mismatch, ...]
    reasons: Tuple[str, ...]  # why it failed; empty when passed

    @property
    def beyond_fraction(self) -> float:
        return self.beyond / self.size if self.size else 0.0

    def __bool__(self) -> bool:
        return bool(self.passed)

    def __str__(self) -> str:
        lines = [
            f"compare [{self.dtype}] shape={self.shape}: {'PASSED' if self.passed else 'FAILED'}"
            f" (rtol={self.rtol:.3g}, atol={self.atol:.3g}, max_fraction={self.max_fraction:g},"
            f" max_ratio={self.max_ratio:g})",
            f"  abs error  max {self.max_abs_err:.4g}  mean {self.mean_abs_err:.4g}",
            f"  rel error  max {self.max_rel_err:.4g}  mean {self.mean_rel_err:.4g}",
            f"  beyond tolerance {self.beyond}/{self.size} ({self.beyond_fraction:.3%});"
            f" NaN mismatches {self.nan_mismatch}, inf mismatches {self.inf_mismatch}",
            f"  ULP distance in {self.dtype} (max {self.max_ulp}, {self.finite} finite elements):",
        ]
        total = max(self.finite, 1)
        for label, n in self.ulp_histogram.items():
            if n:
                bar = "#" * max(1, round(30 * n / total))
                lines.append(f"    {label:>9}: {n:>10} {bar}")
        if self.worst:
            lines.append("  worst elements (index: actual, expected, |err|, rel, ulp, err/tol):")
            for m in self.worst:
                ulp = "-" if m.ulp is None else str(m.ulp)
                lines.append(f"    {m.location}: {m.actual:.7g}, {m.expected:.7g}, {m.abs_err:.3g},"
                             f" {m.rel_err:.3g}, {ulp}, {m.ratio:.3g}")
        for r in self.reasons:
            lines.append(f"  FAIL: {r}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """Plain Python data (JSON-ready; infinities stay floats, ``json`` writes Infinity)."""
        d = dataclasses.asdict(self)
        d["shape"] = list(self.shape)
        d["worst"] = [m._asdict() | {"location": list(m.location)} for m in self.worst]
        d["reasons"] = list(self.reasons)
        d["beyond_fraction"] = self.beyond_fraction
        return d


def _float_dtype(dtype: Any) -> np.dtype:
    import ml_dtypes  # registers "bfloat16" with NumPy

    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        dtype = ml_dtypes.bfloat16
    dt: np.dtype = np.dtype(dtype)
    if dt.name not in CRITERIA:
        raise ValueError(f"dtype must be float16, bfloat16, float32 or float64, got {dt.name}")
    return dt


def _ordered_bits(x: np.ndarray, dt: np.dtype) -> Tuple[np.ndarray, np.ndarray]:
    """(magnitude bits, sign) of x rounded to dt: the magnitude bits of an IEEE float count
    representable values from +0 upwards, so ULP distances are differences of them."""
    bits = x.astype(dt).view(_UINT[dt.itemsize])
    sign_bit = bits.dtype.type(1 << (8 * dt.itemsize - 1))
    return bits & ~sign_bit, (bits & sign_bit) != 0


def ulp_distance(a: Any, b: Any, dtype: Any) -> np.ndarray:
    """How many values representable in ``dtype`` lie between a and b, once both are rounded
    to it (an unsigned integer array of the broadcast shape).

    +0 and −0 are 0 apart; across zero the distances add (−tiny to +tiny is 2 for the smallest
    subnormal). Meaningful for finite values; the largest finite value is 1 from inf.
    """
    dt = _float_dtype(dtype)
    ma, sa = _ordered_bits(np.asarray(a, dtype=np.float64), dt)
    mb, sb = _ordered_bits(np.asarray(b, dtype=np.float64), dt)
    # same sign: the difference of magnitudes; opposite signs: their sum (fits: each < 2^(bits-1))
    d: np.ndarray = np.where(sa == sb, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    return d


def _histogram(ulp: np.ndarray) -> Dict[str, int]:
    edges = np.array(ULP_EDGES, dtype=np.uint64)
    counts = np.bincount(np.searchsorted(edges, ulp.astype(np.uint64), side="left"),
                         minlength=len(edges) + 1)
    labels = []
    lo = 0
    for e in ULP_EDGES:
        labels.append(str(e) if e - lo <= 1 else f"{lo + 1}-{e}")
        lo = e
    labels.append(f">{ULP_EDGES[-1]}")
    return {label: int(n) for label, n in zip(labels, counts)}


def compare(
    actual: ArrayLike,
    expected: ArrayLike,
    *,
    dtype: Any = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    max_fraction: Optional[float] = None,
    max_ratio: Optional[float] = None,
    equal_nan: bool = True,
    worst: int = 5,
) -> CompareReport:
    """Compare ``actual`` (e.g. an NPU result) with ``expected`` (e.g. :mod:`reference`'s float64).

    Args:
        actual, expected: arrays of the same shape: NumPy arrays, PyTorch tensors (bfloat16
            and device tensors included), anything :func:`ascendgrad.asarray` takes.
        dtype: the dtype whose ULPs are counted and whose default criterion applies: float16,
            bfloat16, float32 or float64. Default: actual's dtype when it is one of them, else
            float64. Both arrays are rounded to it for the ULP distances only; errors are
            computed in float64 on the values as given.
        rtol, atol, max_fraction, max_ratio: override the dtype's :data:`CRITERIA`.
        equal_nan: whether NaN in both counts as agreement (default) or as a mismatch.
        worst: how many of the worst elements to report (largest err/tol first; NaN/inf
            mismatches first of all).

    Returns:
        A :class:`CompareReport`, truthy when the comparison passed.

    Raises:
        ValueError: shapes differ, or an unsupported ``dtype``.
        TypeError: a non-numeric input.
    """
    limits = {k: _args.optional_real(v, k) for k, v in (
        ("rtol", rtol), ("atol", atol), ("max_fraction", max_fraction), ("max_ratio", max_ratio))}
    equal_nan = _args.boolean(equal_nan, "equal_nan")
    worst = _args.integer(worst, "worst")
    a_in, e_in = asarray(actual), asarray(expected)
    if a_in.shape != e_in.shape:
        raise ValueError(f"actual has shape {a_in.shape}, expected has shape {e_in.shape}")
    if dtype is None:
        dtype = a_in.dtype if a_in.dtype.name in CRITERIA else np.float64
    dt = _float_dtype(dtype)
    try:
        a = a_in.astype(np.float64)
        e = e_in.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"cannot compare arrays of dtypes {a_in.dtype} and {e_in.dtype}") from None
    crit = CRITERIA[dt.name]._replace(**{k: v for k, v in limits.items() if v is not None})

    a_nan, e_nan = np.isnan(a), np.isnan(e)
    a_inf, e_inf = np.isinf(a), np.isinf(e)
    nan_bad = (a_nan != e_nan) | (a_nan & e_nan & (not equal_nan))
    inf_bad = (a_inf | e_inf) & ~(a_nan | e_nan) & (a != e)  # inf vs finite, or +inf vs -inf
    fin = np.isfinite(a) & np.isfinite(e)
    bad = nan_bad | inf_bad

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        err = np.where(fin, np.abs(a - e), 0.0)
        rel = np.where(e != 0, err / np.abs(e), np.where(err == 0, 0.0, np.inf))
        tol = crit.atol + crit.rtol * np.abs(e)
        ratio = np.where(tol > 0, err / tol, np.where(err == 0, 0.0, np.inf))
    ratio = np.where(bad, np.inf, np.where(fin, ratio, 0.0))
    ulp = np.where(fin, ulp_distance(np.where(fin, a, 0.0), np.where(fin, e, 0.0), dt), 0).astype(np.uint64)

    size, n_fin = int(a.size), int(fin.sum())
    beyond = int(np.count_nonzero(ratio > 1.0))
    nonzero = fin & (e != 0)
    reasons: List[str] = []
    n_nan, n_inf = int(nan_bad.sum()), int(inf_bad.sum())
    if n_nan or n_inf:
        reasons.append(f"{n_nan} NaN and {n_inf} inf mismatches")
    if size and beyond / size > crit.max_fraction:
        reasons.append(f"{beyond}/{size} elements beyond atol + rtol*|expected|, more than "
                       f"max_fraction {crit.max_fraction:g}")
    worst_ratio = float(np.max(np.where(bad, 0.0, ratio), initial=0.0))
    if worst_ratio > crit.max_ratio:
        reasons.append(f"an element is {worst_ratio:.3g} times its tolerance, more than max_ratio "
                       f"{crit.max_ratio:g}")

    flat_ratio = ratio.reshape(-1)
    order = np.argsort(-flat_ratio, kind="stable")[: max(int(worst), 0)]
    order = order[flat_ratio[order] > 0]
    shown = tuple(
        Mismatch(tuple(int(i) for i in np.unravel_index(k, a.shape)), float(a.flat[k]),
                 float(e.flat[k]), float(np.abs(a.flat[k] - e.flat[k])),
                 float(rel.flat[k]) if fin.flat[k] else math.nan,
                 int(ulp.flat[k]) if fin.flat[k] else None, float(flat_ratio[k]))
        for k in order
    )
    return CompareReport(
        passed=not reasons, dtype=dt.name, shape=tuple(a.shape), size=size, finite=n_fin,
        max_abs_err=float(np.max(err, initial=0.0)),
        mean_abs_err=float(err[fin].mean()) if n_fin else 0.0,
        max_rel_err=float(np.max(np.where(fin, rel, 0.0), initial=0.0)),
        mean_rel_err=float(rel[nonzero].mean()) if nonzero.any() else 0.0,
        max_ulp=int(np.max(ulp, initial=0)), ulp_histogram=_histogram(ulp[fin]),
        rtol=crit.rtol, atol=crit.atol, max_fraction=crit.max_fraction, max_ratio=crit.max_ratio,
        beyond=beyond, nan_mismatch=n_nan, inf_mismatch=n_inf, worst=shown, reasons=tuple(reasons),
    )


# --------------------------------------------------------------------------------------------
# files


def load(
    path: Union[str, "os.PathLike[str]"],
    *,
    key: Optional[str] = None,
    dtype: Any = None,
    shape: Optional[Sequence[int]] = None,
) -> Dict[str, np.ndarray]:
    """Arrays from a file, by name: ``.npy`` → ``{"": array}``; ``.npz`` → its arrays (only
    ``key`` when given); anything else is raw bytes (an NPU dump) read as ``dtype``
    (required; float16, bfloat16, float32, float64 or any NumPy dtype) into ``shape``
    (default: flat).

    Stored arrays keep their dtype, except that a void one (how NumPy saves
    ``ml_dtypes.bfloat16``: ``|V2``) is read as ``dtype``, bfloat16 by default. ``shape``
    reshapes every array. Raises ``ValueError`` for a missing key, a raw file without
    ``dtype``, or a size that does not fit ``shape``; ``OSError`` for an unreadable file.
    """
    import ml_dtypes

    p = os.fspath(path)
    suffix = os.path.splitext(p)[1].lower()
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        dtype = ml_dtypes.bfloat16
    dt = None if dtype is None else np.dtype(dtype)
    arrays: Dict[str, np.ndarray]
    if suffix == ".npy":
        arrays = {"": np.load(p, allow_pickle=False)}
    elif suffix == ".npz":
        with np.load(p, allow_pickle=False) as z:
            names = list(z.files) if key is None else [key]
            missing = [n for n in names if n not in z.files]
            if missing:
                raise ValueError(f"{p} has no array {missing[0]!r}; it has {', '.join(z.files)}")
            arrays = {n: z[n] for n in names}
    else:
        if dt is None:
            raise ValueError(f"{p}: a raw file holds bytes only, not their dtype: give one (--dtype, e.g. bfloat16)")
        arrays = {"": np.fromfile(p, dtype=dt)}
    out = {}
    for name, arr in arrays.items():
        if arr.dtype.kind == "V" and arr.dtype.names is None:
            arr = arr.view(dt or np.dtype(ml_dtypes.bfloat16))
        if shape is not None:
            if math.prod(shape) != arr.size:
                raise ValueError(f"{p}{':' + name if name else ''}: {arr.size} elements do not fit shape {tuple(shape)}")
            arr = arr.reshape(tuple(shape))
        out[name] = arr
    return out


# --------------------------------------------------------------------------------------------
# command line: python -m ascendgrad compare


def _add_arguments(p: Any) -> None:
    p.add_argument("actual", help="the result to judge: .npy, .npz or a raw dump (.bin, any other suffix)")
    p.add_argument("expected", help="the golden result, same formats")
    p.add_argument("--key", help="the array to take from .npz files (default: every name both have)")
    p.add_argument("--dtype", help="dtype of raw files, required for them (a raw dump holds bytes only); also of "
                   ".npy/.npz arrays saved as void, as NumPy saves bfloat16 (for those, default bfloat16)")
    p.add_argument("--shape", help="shape of raw files, e.g. 4,2 (default: the other file's shape)")
    p.add_argument("--compare-dtype", help="dtype whose ULPs and criterion apply (default: actual's)")
    for name in ("rtol", "atol", "max-fraction", "max-ratio"):
        p.add_argument(f"--{name}", type=float, help="override the dtype's default")
    p.add_argument("--worst", type=int, default=5, help="worst elements to list (default 5)")
    p.add_argument("--json", action="store_true", help="print the report(s) as JSON")


def _shape_arg(text: Optional[str]) -> Optional[Tuple[int, ...]]:
    if text is None:
        return None
    parts = text.replace("x", ",").replace("(", "").replace(")", "").split(",")
    return tuple(int(s) for s in parts if s.strip())


def _strict_json(v: Any) -> Any:
    """JSON without Infinity/NaN literals (which strict parsers reject): as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _strict_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict_json(x) for x in v]
    return v


def _pairs(args: Any) -> Tuple[Dict[str, Tuple[np.ndarray, np.ndarray]], List[str]]:
    shape = _shape_arg(args.shape)
    act = load(args.actual, key=args.key, dtype=args.dtype, shape=shape)
    exp = load(args.expected, key=args.key, dtype=args.dtype, shape=shape)
    if len(act) == 1 and len(exp) == 1:
        pairs = {"": (next(iter(act.values())), next(iter(exp.values())))}
        skipped: List[str] = []
    else:
        common = [k for k in act if k in exp]
        if not common:
            raise ValueError(f"{args.actual} and {args.expected} have no array name in common (use --key)")
        pairs = {k: (act[k], exp[k]) for k in common}
        skipped = sorted(set(act) ^ set(exp))
    if shape is None:  # a flat raw dump takes the other side's shape
        for k, (a, e) in pairs.items():
            if a.shape != e.shape and a.size == e.size:
                pairs[k] = (a.reshape(e.shape), e) if a.ndim == 1 else (a, e.reshape(a.shape))
    return pairs, skipped


def _run(args: Any) -> int:
    import json
    import sys

    try:
        pairs, skipped = _pairs(args)
        reports = {k: compare(a, e, dtype=args.compare_dtype, rtol=args.rtol, atol=args.atol,
                              max_fraction=args.max_fraction, max_ratio=args.max_ratio, worst=args.worst)
                   for k, (a, e) in pairs.items()}
    except (OSError, ValueError, TypeError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    for k in skipped:
        print(f"compare: {k!r} is in only one of the files; not compared", file=sys.stderr)
    if args.json:
        data = {k: r.to_dict() for k, r in reports.items()}
        print(json.dumps(_strict_json(data[""] if list(data) == [""] else data), indent=1))
    else:
        print("\n\n".join((f"[{k}]\n" if k else "") + str(r) for k, r in reports.items()))
    return 0 if all(reports.values()) else 1
