"""Compare an NPU (or any) result with the golden model under a named precision standard.

API (stable; other modules call it)::

    from ascendgrad.compare import compare, STANDARDS
    report = compare(actual, golden, standard="cann")                    # the default
    report = compare(actual, golden, standard="dual-benchmark", benchmark=gpu_result, level="L1")
    report.passed        # bool (the report is also truthy when it passed)
    report.standard      # "cann", "cann-v1", "dual-benchmark" or "msprobe"
    report.thresholds    # {name: value}: the thresholds the standard applied to this dtype
    report.metrics       # {name: value}: the standard's metrics (matched_ratio, mere, cosine, ...)
    report.checks        # (Check(metric, value, op, limit, passed), ...): the rules that decided
    report.failed        # the checks that failed (empty when passed)
    report.worst         # (Mismatch(location, actual, expected, abs_err, rel_err, ulp, ratio), ...)
    report.to_dict()     # JSON-ready (json.dumps writes Infinity for infinite values)

``ratio`` of a :class:`Mismatch` is the element's *score* under the standard: above 1 the element
alone is out of the standard's per-element tolerance (inf for a NaN/inf mismatch); the worst
elements are the highest scores. :data:`STANDARDS` maps each name to a :class:`Standard` (title,
source, per-dtype thresholds); ``python -m ascendgrad compare --list-standards`` prints them.
Every report also carries the standard-independent statistics: maximum and mean absolute and
relative error, a histogram of ULP distances in the comparison dtype, NaN/inf mismatches.

The standards, each as published (sources: hicann/opbase docs/zh/ops_precision_standard/;
Ascend/msprobe python/msprobe/pytorch/api_accuracy_checker/compare/):

``cann`` — CANN's ecosystem precision standard v2, mixed tolerance (experimental_standard.md
  since 2026-07). An element matches when ``|a − g| ≤ atol + rtol·|g|``; a result passes when the
  matched ratio ≥ 0.99 and every element's absolute error ≤ its limit, "X or 32 ULP", read as
  max(X, 32 · ULP of the golden value in the dtype):

  =========  =====  =====  ==============
  dtype      rtol   atol   max abs error
  =========  =====  =====  ==============
  float16    2⁻⁹    2⁻⁹    0.1 or 32 ULP
  bfloat16   2⁻⁶    2⁻⁶    1.0 or 32 ULP
  float32    2⁻¹⁰   2⁻¹⁶   0.01 or 32 ULP
  =========  =====  =====  ==============

``cann-v1`` — the same standard's first version: MERE = mean(abs(a − g) / (abs(g) + 1e-7)), MARE = the
  maximum of the same; passes when MERE < T and MARE < 10·T, T = 2⁻¹⁰ (float16), 2⁻⁷ (bfloat16),
  2⁻¹³ (float32).

``dual-benchmark`` — CANN's commercial standard (commercial_standard.md, 2026-04): the NPU result
  and a third-party chip's result (``benchmark``) are each measured against the golden. Over the
  elements with abs(g) ≥ the small-value threshold, MARE, MERE and RMSE of each; the ratios
  NPU / (third party + 1e-7) must stay within 10 / 2 / 2 (level L0, the default), 5 / 1.5 / 1.5
  (L1), 2 / 1.2 / 1.2 (L2). Elements with abs(g) below 2⁻¹¹ (float16), 2⁻⁸ (bfloat16), 2⁻¹⁴
  (float32) are counted as errors when abs(a − g) exceeds 2⁻¹⁶, 2⁻¹⁶, 2⁻³⁰ respectively;
  NPU count / max(third-party count, 1) ≤ 2. inf/NaN: correct where the NPU equals the third
  party or the golden; a mismatch otherwise.

``msprobe`` — msprobe's API accuracy checker: cosine similarity > 0.99 (values scaled by their
  maximum magnitude; skipped for one element or all zeros), else error; then max abs error
  < 0.001 passes; else, with relative error abs(a − g) / (abs(g) + eps) (eps 2⁻¹⁰ float16, 2⁻⁸ bfloat16,
  2⁻²³ float32, 2⁻⁵² float64): float16/bfloat16 need the share of elements with relative error
  < 1/100 above 0.99 (else error) and < 1/1000 above 0.999 (else warning); float32/float64 the
  share < 1/1000 above 0.999 (else error) and < 1/10000 above 0.9999 (else warning). msprobe
  counts a warning as not passed; so does this report.

float64 has no published thresholds; ``cann``, ``cann-v1`` and ``dual-benchmark`` carry a row of
ascendgrad's own for it (marked so by ``--list-standards``). NaN and inf, in every standard except
``dual-benchmark`` (which has its own rule, above): a NaN where the golden is not NaN, an inf
where it is finite or of the other sign, is a mismatch and fails the result; matching infinities
(and NaN in both, unless ``equal_nan=False``) agree and are left out of the error metrics.

The ``cann`` standard's thresholds can be overridden (``rtol``, ``atol``, ``max_fraction`` =
1 − matched ratio, ``max_abs``), and ``max_ratio`` adds the rule that no element exceeds
``max_ratio`` times its tolerance. ``python -m ascendgrad compare ACTUAL EXPECTED`` does the same
from ``.npy``, ``.npz`` or raw ``.bin`` files (see :func:`load`), ``--standard NAME``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _args, _files
from ._interop import asarray

__all__ = ["compare", "compare_numpy", "CompareReport", "Check", "Criterion", "Mismatch", "Standard", "STANDARDS",
           "DEFAULT_STANDARD", "CRITERIA", "ULP_EDGES", "ulp_distance", "ulp_of", "load"]

_F64 = NDArray[np.float64]


class Criterion(NamedTuple):
    """The ``cann`` standard's tolerance of one dtype: an element matches when
    ``|a − g| ≤ atol + rtol·|g|``."""

    rtol: float
    atol: float
    max_fraction: float  # of the elements allowed not to match (1 − required matched ratio)
    max_abs: float  # the "X" of the max-abs-error limit "X or 32 ULP"


#: The ``cann`` standard per comparison dtype (float64: ascendgrad's own row).
CRITERIA: Dict[str, Criterion] = {
    "float16": Criterion(2.0**-9, 2.0**-9, 0.01, 0.1),
    "bfloat16": Criterion(2.0**-6, 2.0**-6, 0.01, 1.0),
    "float32": Criterion(2.0**-10, 2.0**-16, 0.01, 0.01),
    "float64": Criterion(2.0**-30, 2.0**-40, 0.01, 1e-6),
}

#: How many ULPs of the golden value the max-abs-error limit allows at least.
LIMIT_ULPS = 32

#: The upper edges of the ULP histogram's buckets (0, 1, 2, 3–4, 5–8, … 513–1024, then > 1024).
ULP_EDGES: Tuple[int, ...] = (0, 1, 2) + tuple(2**k for k in range(2, 11))

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


class Check(NamedTuple):
    """One rule of a standard as applied: ``value op limit`` held (``passed``) or not."""

    metric: str
    value: float
    op: str  # "<", "<=", ">", ">=", "=="
    limit: float
    passed: bool

    def __str__(self) -> str:
        neg = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!="}[self.op]
        return f"{self.metric} {self.value:.4g} {self.op if self.passed else neg} {self.limit:.4g}"


class Standard(NamedTuple):
    """A named precision standard: thresholds per dtype (name → value) and where they come from."""

    name: str
    title: str
    source: str
    thresholds: Dict[str, Dict[str, float]]
    own_rows: Tuple[str, ...] = ()  # dtypes whose row is ascendgrad's, not published


_T_V1 = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-13, "float64": 2.0**-40}
_SMALL = {  # dual benchmark: (small-value threshold, small-value error)
    "float16": (2.0**-11, 2.0**-16), "bfloat16": (2.0**-8, 2.0**-16), "float32": (2.0**-14, 2.0**-30),
    "float64": (2.0**-30, 2.0**-60),
}
LEVELS: Dict[str, Tuple[float, float, float]] = {"L0": (10.0, 2.0, 2.0), "L1": (5.0, 1.5, 1.5),
                                                   "L2": (2.0, 1.2, 1.2)}  # MARE, MERE, RMSE ratios
_MSPROBE_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-8, "float32": 2.0**-23, "float64": 2.0**-52}

#: Every precision standard by name (``--list-standards`` prints them).
STANDARDS: Dict[str, Standard] = {
    "cann": Standard(
        "cann", "CANN ecosystem precision standard v2 (mixed tolerance)",
        "hicann/opbase docs/zh/ops_precision_standard/experimental_standard.md (2026-07)",
        {d: {"rtol": c.rtol, "atol": c.atol, "required_matched_ratio": 1 - c.max_fraction,
             "max_abs_error": c.max_abs, "max_abs_error_ulps": LIMIT_ULPS} for d, c in CRITERIA.items()},
        ("float64",)),
    "cann-v1": Standard(
        "cann-v1", "CANN ecosystem precision standard v1 (MERE < T, MARE < 10 T)",
        "hicann/opbase docs/zh/ops_precision_standard/experimental_standard.md (2026-04)",
        {d: {"mere": t, "mare": 10 * t} for d, t in _T_V1.items()}, ("float64",)),
    "dual-benchmark": Standard(
        "dual-benchmark", "CANN commercial precision standard (dual benchmark, levels L0/L1/L2)",
        "hicann/opbase docs/zh/ops_precision_standard/commercial_standard.md (2026-04)",
        {d: {"small_value": s, "small_value_error": e, "small_error_count_ratio": 2.0}
         for d, (s, e) in _SMALL.items()}, ("float64",)),
    "msprobe": Standard(
        "msprobe", "msprobe API accuracy checker (cosine, max abs error, dual thousandth)",
        "Ascend/msprobe python/msprobe/pytorch/api_accuracy_checker/compare/compare.py",
        {d: {"cosine": 0.99, "max_abs_error": 0.001, "eps": eps,
             **({"rel_err_hundredth": 0.99, "rel_err_thousandth": 0.999} if d in ("float16", "bfloat16")
                else {"rel_err_thousandth": 0.999, "rel_err_ten_thousandth": 0.9999})}
         for d, eps in _MSPROBE_EPS.items()}),
}
#: The standard a comparison follows when none is named.
DEFAULT_STANDARD = "cann"


class Mismatch(NamedTuple):
    """One compared element: its index, both values, its errors, ULP distance and score."""

    location: Tuple[int, ...]  # the element's index
    actual: float
    expected: float
    abs_err: float
    rel_err: float  # |a − e| / |e|; inf for e = 0 ≠ a; NaN where either is not finite
    ulp: Optional[int]  # None where either value is NaN or inf
    ratio: float  # the standard's score: > 1 out of its per-element tolerance; inf for NaN/inf mismatches


@dataclasses.dataclass
class CompareReport:
    """Outcome of :func:`compare`; truthy when it passed.

    Errors are over the elements where both values are finite (``finite`` of ``size``);
    ``mean_rel_err`` is over those with ``expected != 0``. ``ulp_histogram`` maps bucket labels
    (``"0"``, ``"1"``, ``"2"``, ``"3-4"``, … ``">1024"``) to element counts (empty, and ``max_ulp``
    -1, from bulk checks that skip it). ``rtol``, ``atol``,
    ``max_fraction`` (1 − the required matched ratio), ``max_ratio`` are the ``cann`` standard's
    (``max_ratio`` inf unless asked for); None under the other standards.

    ``repr()`` is a few lines (verdict, the checks that decided, the worst element), ``str()``
    the full report; in a notebook it shows as a table. A report made by :func:`compare` keeps
    references to the arrays it compared, for :meth:`plot`.
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
    rtol: Optional[float]
    atol: Optional[float]
    max_fraction: Optional[float]
    max_ratio: Optional[float]
    beyond: int  # elements with a score above 1 (NaN/inf mismatches included)
    nan_mismatch: int
    inf_mismatch: int
    worst: Tuple[Mismatch, ...]
    reasons: Tuple[str, ...]  # why it failed; empty when passed
    standard: str = DEFAULT_STANDARD
    level: Optional[str] = None  # dual-benchmark only
    thresholds: Dict[str, float] = dataclasses.field(default_factory=dict)
    metrics: Dict[str, float] = dataclasses.field(default_factory=dict)
    checks: Tuple[Check, ...] = ()

    @property
    def beyond_fraction(self) -> float:
        return self.beyond / self.size if self.size else 0.0

    @property
    def failed(self) -> Tuple[Check, ...]:
        """The checks that failed (empty when the comparison passed)."""
        return tuple(c for c in self.checks if not c.passed)

    def __bool__(self) -> bool:
        return bool(self.passed)

    def __str__(self) -> str:
        th = ", ".join(f"{k}={v:.3g}" for k, v in self.thresholds.items())
        lvl = f" {self.level}" if self.level else ""
        lines = [
            f"compare [{self.dtype}] shape={self.shape}: {'PASSED' if self.passed else 'FAILED'}"
            f" under {self.standard}{lvl} ({th})",
            "  " + "  ".join(f"{k} {v:.4g}" for k, v in self.metrics.items()),
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
            lines.append("  worst elements (index: actual, expected, |err|, rel, ulp, score):")
            for m in self.worst:
                ulp = "-" if m.ulp is None else str(m.ulp)
                lines.append(f"    {m.location}: {m.actual:.7g}, {m.expected:.7g}, {m.abs_err:.3g},"
                             f" {m.rel_err:.3g}, {ulp}, {m.ratio:.3g}")
        for r in self.reasons:
            lines.append(f"  FAIL: {r}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        from . import _display as D

        lvl = f" {self.level}" if self.level else ""
        head = (f"<CompareReport: {'PASSED' if self.passed else 'FAILED'} under {self.standard}{lvl},"
                f" {self.dtype} shape={self.shape}, max abs err {D.num(self.max_abs_err)},"
                f" beyond tolerance {self.beyond}/{self.size}>")
        # the checks that decided: those that failed, else all of them (each held)
        checks = ("checks: " + "; ".join(map(str, self.checks)) if self.checks else "") if self.passed \
            else "failed: " + "; ".join(self.reasons)
        w = self.worst[0] if self.worst else None
        worst = (f"worst {w.location}: actual {w.actual:.7g}, expected {w.expected:.7g}, |err| {w.abs_err:.3g},"
                 f" score {w.ratio:.3g}") if w else ""
        return D.lines(head, checks, worst)

    def _repr_html_(self) -> str:
        from . import _display as D

        lvl = f" {self.level}" if self.level else ""
        what = f" under {self.standard}{lvl} · {self.dtype} · shape {self.shape} · {self.size} elements"
        title = D.Raw(D.verdict(self.passed, "PASSED" if self.passed else "FAILED") + D.esc(what))
        checks = D.table(("check", "value", "op", "limit", "verdict"),
                         [(c.metric, D.num(c.value), c.op, D.num(c.limit), D.verdict(c.passed)) for c in self.checks],
                         caption="checks (the standard's rules)")
        stats = D.pairs([*((k, D.num(v)) for k, v in self.metrics.items()),
                         ("abs error max / mean", f"{D.num(self.max_abs_err)} / {D.num(self.mean_abs_err)}"),
                         ("rel error max / mean", f"{D.num(self.max_rel_err)} / {D.num(self.mean_rel_err)}"),
                         ("beyond tolerance", f"{self.beyond}/{self.size} ({self.beyond_fraction:.3%})"),
                         ("NaN / inf mismatches", f"{self.nan_mismatch} / {self.inf_mismatch}"),
                         *([("max ULP", self.max_ulp)] if self.max_ulp >= 0 else [])],
                        caption="metrics")
        worst = D.table(("index", "actual", "expected", "|err|", "rel", "ulp", "score"),
                        [(m.location, f"{m.actual:.7g}", f"{m.expected:.7g}", D.num(m.abs_err, 3),
                          D.num(m.rel_err, 3), "-" if m.ulp is None else m.ulp, D.num(m.ratio, 3))
                         for m in self.worst], caption="worst elements") if self.worst else ""
        hist = {k: n for k, n in self.ulp_histogram.items() if n}
        ulp = D.table(tuple(hist), [tuple(hist.values())],
                      caption=f"ULP distance in {self.dtype} (elements)") if hist else ""
        th = "thresholds: " + ", ".join(f"{k}={v:.4g}" for k, v in self.thresholds.items())
        return str(D.report("CompareReport", title, [checks, stats, worst, ulp], notes=[th]))

    def plot(self, name: Optional[str] = None) -> Any:
        """The figure of this comparison, a ``matplotlib.figure.Figure`` (shown inline in a
        notebook; ``.savefig(path)`` writes it): the error over the tensor's two largest dims
        and its histogram against the standard's per-element threshold (dump-check's
        ``--plots`` picture). ``name`` titles it (default: ``compare [dtype] shape``).

        The per-element scores are computed again from the arrays that :func:`compare` was
        given (the report keeps references to them, not copies; a report that went through
        pickle or ``dataclasses.replace`` keeps none).

        Raises:
            ImportError: without matplotlib (``pip install matplotlib``).
            ValueError: the report keeps no arrays (it did not come from :func:`compare` or
                :func:`compare_numpy`), or they have changed since it was made.
        """
        from . import _display

        _display.require_matplotlib()
        src = self.__dict__.get("_source")
        if src is None:
            raise ValueError("this report keeps no arrays to plot: only reports made by ascendgrad.compare() "
                             "(or compare_numpy()) do; compare the arrays with it to plot them")
        actual, expected, kw, with_numpy = src
        score: Optional[_F64]
        if with_numpy:
            again, score = _compare_scored(actual, expected, **kw)
        else:
            from .judge import compare_arrays

            again, score = compare_arrays(actual, expected, want_score=True, **kw)
        same = (again.passed, again.beyond, again.nan_mismatch, again.inf_mismatch) == \
            (self.passed, self.beyond, self.nan_mismatch, self.inf_mismatch) and \
            (again.max_abs_err == self.max_abs_err or (math.isnan(again.max_abs_err) and math.isnan(self.max_abs_err)))
        if not same or score is None:
            raise ValueError("the arrays of this report have changed since it was made (modified in place?); "
                             "compare them again to plot them")
        return _display.figure(score, f"compare [{self.dtype}] {self.shape}" if name is None else name,
                               "pass" if self.passed else "fail", "; ".join(self.reasons), self.standard)

    def _keep(self, actual: Any, expected: Any, kw: Dict[str, Any], with_numpy: bool = False) -> "CompareReport":
        """Keep references to the compared arrays (for :meth:`plot`), outside the fields: not in
        :meth:`to_dict`, ``asdict``, ``==``, nor in a pickle."""
        self.__dict__["_source"] = (actual, expected, kw, with_numpy)
        return self

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_source", None)  # the arrays stay here: a pickled report carries its numbers only
        return state

    def to_dict(self) -> Dict[str, Any]:
        """Plain Python data (JSON-ready; infinities stay floats, ``json`` writes Infinity)."""
        d = dataclasses.asdict(self)
        d["shape"] = list(self.shape)
        d["worst"] = [m._asdict() | {"location": list(m.location)} for m in self.worst]
        d["reasons"] = list(self.reasons)
        d["checks"] = [c._asdict() for c in self.checks]
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
    bits = x.astype(dt, copy=False).view(_UINT[dt.itemsize])
    sign_bit = bits.dtype.type(1 << (8 * dt.itemsize - 1))
    return bits & ~sign_bit, (bits & sign_bit) != 0


def _in_dtype(x: Any, dt: np.dtype) -> np.ndarray:
    """x rounded to dt (from float64, so that the rounding is the correct one)."""
    if isinstance(x, np.ndarray) and x.dtype == dt:
        return x
    out: np.ndarray = np.asarray(x, dtype=np.float64).astype(dt)
    return out


def _f64(x: np.ndarray) -> _F64:
    """x as float64 (bfloat16 widened through its bits: exact, and faster than a cast)."""
    if x.dtype.name == "bfloat16":
        return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    out: _F64 = x.astype(np.float64, copy=False)
    return out


def ulp_distance(a: Any, b: Any, dtype: Any) -> np.ndarray:
    """How many values representable in ``dtype`` lie between a and b, once both are rounded
    to it (an unsigned integer array of the broadcast shape).

    +0 and −0 are 0 apart; across zero the distances add (−tiny to +tiny is 2 for the smallest
    subnormal). Meaningful for finite values; the largest finite value is 1 from inf.
    """
    dt = _float_dtype(dtype)
    ma, sa = _ordered_bits(_in_dtype(a, dt), dt)
    mb, sb = _ordered_bits(_in_dtype(b, dt), dt)
    # same sign: the difference of magnitudes; opposite signs: their sum (fits: each < 2^(bits-1))
    d: np.ndarray = np.where(sa == sb, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)
    return d


# (smallest normal exponent, mantissa bits) per dtype
_EXP_MANT = {"float16": (-14, 10), "bfloat16": (-126, 7), "float32": (-126, 23), "float64": (-1022, 52)}


def ulp_of(x: Any, dtype: Any) -> _F64:
    """The spacing of ``dtype`` at each value of x once rounded to it (float64; the subnormal
    spacing below the smallest normal)."""
    dt = _float_dtype(dtype)
    minexp, nmant = _EXP_MANT[dt.name]
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.abs(np.asarray(x, dtype=np.float64).astype(dt).astype(np.float64))
    _, ex = np.frexp(r)  # r = m · 2^ex, m in [0.5, 1): floor(log2 r) = ex − 1
    ex = np.maximum(np.where(r > 0, ex - 1, minexp), minexp)
    out: _F64 = np.ldexp(1.0, ex - nmant)
    return out


def _histogram(ulp: np.ndarray) -> Dict[str, int]:
    top = ULP_EDGES[-1] + 1  # everything above the last edge counts in one bucket
    clipped = np.minimum(ulp.reshape(-1), top)
    if clipped.dtype.kind == "u" and clipped.dtype.itemsize == np.dtype(np.intp).itemsize:
        clipped = clipped.view(np.intp)  # values <= top: the same bits, no conversion pass
    c = np.bincount(clipped.astype(np.intp, copy=False), minlength=top + 1)
    out = {"0": int(c[0])}
    lo = 0
    for e in ULP_EDGES[1:]:
        out[str(e) if e - lo <= 1 else f"{lo + 1}-{e}"] = int(c[lo + 1: e + 1].sum())
        lo = e
    out[f">{ULP_EDGES[-1]}"] = int(c[top])
    return out


# --------------------------------------------------------------------------------------------
# the standards: each gets the arrays in float64 (a, e; b for the benchmark), the mask of
# elements finite in both, the dtype's name; returns (checks, per-element score, metrics)

_Judged = Tuple[List[Check], _F64, Dict[str, float]]


class _Arrays(NamedTuple):
    a: _F64
    e: _F64
    fin: NDArray[np.bool_]  # finite in both
    err: _F64  # |a − e| where fin, else 0
    bad: NDArray[np.bool_]  # NaN/inf mismatches
    dt: str
    all_fin: bool  # every element finite in both (then fin is all True and e == ez)
    ez: _F64  # e where fin, else 0


def _rel(err: _F64, e: _F64, eps: float) -> _F64:
    out: _F64 = err / (np.abs(e) + eps)
    return out


def _judge_cann(x: _Arrays, crit: Criterion, max_ratio: float) -> _Judged:
    tol = np.abs(x.ez)
    tol *= crit.rtol
    tol += crit.atol
    if crit.atol > 0:
        score: _F64 = x.err / tol
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(tol > 0, x.err / tol, np.where(x.err == 0, 0.0, np.inf))
    n = x.a.size
    if x.all_fin:
        matched = n - int(np.count_nonzero(score > 1.0))
    else:
        matched = int(np.count_nonzero((score <= 1.0) & ~x.bad))  # agreeing NaN/inf pairs match
    ratio = matched / n if n else 1.0
    # the limit max(X, 32 ULP of g) needs the ULPs only where an error exceeds X
    err_flat = x.err.reshape(-1)
    idx = np.flatnonzero(err_flat > crit.max_abs)
    if idx.size:
        lim = np.maximum(crit.max_abs, LIMIT_ULPS * ulp_of(x.ez.reshape(-1)[idx], x.dt))
        over = err_flat[idx] / lim
        kk = int(np.argmax(over))
        abs_check = Check("max_abs_error", float(err_flat[idx[kk]]), "<=", float(lim[kk]), bool(over[kk] <= 1.0))
    else:
        abs_check = Check("max_abs_error", float(np.max(err_flat, initial=0.0)), "<=", crit.max_abs, True)
    checks = [Check("matched_ratio", ratio, ">=", 1 - crit.max_fraction, ratio >= 1 - crit.max_fraction),
              abs_check]
    if math.isfinite(max_ratio):
        worst = float(np.max(score, initial=0.0))
        checks.append(Check("max_err_over_tolerance", worst, "<=", max_ratio, worst <= max_ratio))
    return checks, score, {"matched_ratio": ratio, "max_abs_error": float(np.max(x.err, initial=0.0))}


def _judge_v1(x: _Arrays, th: Dict[str, float]) -> _Judged:
    rel_all = _rel(x.err, x.ez, 1e-7)  # 0 where not finite (err is 0 there)
    rel = rel_all if x.all_fin else rel_all[x.fin]
    mere = float(rel.mean()) if rel.size else 0.0
    mare = float(rel.max(initial=0.0))
    score: _F64 = rel_all / th["mare"]
    return ([Check("mere", mere, "<", th["mere"], mere < th["mere"]),
             Check("mare", mare, "<", th["mare"], mare < th["mare"])], score, {"mere": mere, "mare": mare})


def _cosine(a: _F64, e: _F64) -> Optional[float]:
    """msprobe's cosine similarity (None where it skips the check: one element, or all zeros)."""
    if a.size <= 1:
        return None
    am, em = float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(e), initial=0.0))
    eps = float(np.finfo(np.float64).eps)
    if am <= eps and em <= eps:
        return None
    if am <= eps or em <= eps:
        return 0.0
    an, en = (a / am).reshape(-1), (e / em).reshape(-1)
    return float(np.clip(np.dot(an, en) / (np.linalg.norm(an) * np.linalg.norm(en)), -1.0, 1.0))


def _judge_msprobe(x: _Arrays, th: Dict[str, float]) -> _Judged:
    a, e, err = (x.a, x.e, x.err) if x.all_fin else (x.a[x.fin], x.e[x.fin], x.err[x.fin])
    rel = _rel(err, e, th["eps"])
    half = x.dt in ("float16", "bfloat16")
    first = 0.01 if half else 0.001  # the relative error whose share decides error or not
    if x.all_fin:
        score: _F64 = (rel / first).reshape(x.a.shape)
    else:
        score = np.zeros(x.a.shape)
        score[x.fin] = rel / first
    metrics: Dict[str, float] = {}
    checks: List[Check] = []
    cos = _cosine(a, e)
    if cos is not None:
        metrics["cosine"] = cos
        checks.append(Check("cosine", cos, ">", th["cosine"], cos > th["cosine"]))
        if cos <= th["cosine"]:
            return checks, score, metrics
    max_abs = float(err.max(initial=0.0))
    metrics["max_abs_error"] = max_abs
    if max_abs < th["max_abs_error"]:
        checks.append(Check("max_abs_error", max_abs, "<", th["max_abs_error"], True))
        return checks, score, metrics

    def share(t: float) -> float:
        return float(np.count_nonzero(rel < t)) / rel.size if rel.size else 1.0

    names = (("rel_err_hundredth", 0.01), ("rel_err_thousandth", 0.001)) if half else \
        (("rel_err_thousandth", 0.001), ("rel_err_ten_thousandth", 0.0001))
    for name, t in names:
        s = share(t)
        metrics[name] = s
        checks.append(Check(name, s, ">", th[name], s > th[name]))
        if s <= th[name]:  # the first is msprobe's error, the second its warning: both fail
            break
    return checks, score, metrics


def _judge_dual(x: _Arrays, b: _F64, th: Dict[str, float], level: str,
                equal_nan: bool) -> Tuple[List[Check], _F64, Dict[str, float], NDArray[np.bool_]]:
    a, e = x.a, x.e
    same = (a == b) | (np.isnan(a) & np.isnan(b) & equal_nan)
    same_g = (a == e) | (np.isnan(a) & np.isnan(e) & equal_nan)
    special = ~np.isfinite(a) | ~np.isfinite(b) | ~np.isfinite(e)
    # correct where the NPU equals the third party or the golden; otherwise an error
    # (the standard asks to investigate where all three differ: also reported here)
    bad = special & ~same & ~same_g & ~(np.isfinite(a) & np.isfinite(e))
    use = ~special
    small = use & (np.abs(e) < th["small_value"])
    normal = use & ~small
    err_b = np.abs(np.where(use, b, 0.0) - np.where(use, e, 0.0))
    err_a = np.where(use, x.err, 0.0)
    m: Dict[str, float] = {}
    for who, err in (("npu", err_a), ("benchmark", err_b)):
        rel = _rel(err, e, 1e-7)[normal]
        m[f"mare_{who}"] = float(rel.max(initial=0.0))
        m[f"mere_{who}"] = float(rel.mean()) if rel.size else 0.0
        m[f"rmse_{who}"] = float(np.sqrt(np.mean(np.square(err[normal])))) if rel.size else 0.0
        m[f"small_error_count_{who}"] = float(np.count_nonzero(small & (err > th["small_value_error"])))
    limits = dict(zip(("mare", "mere", "rmse"), LEVELS[level]))
    checks = [Check("special_value_errors", float(np.count_nonzero(bad)), "==", 0.0, not bad.any())]
    for k, lim in limits.items():
        r = m[f"{k}_npu"] / (m[f"{k}_benchmark"] + 1e-7)
        m[f"{k}_ratio"] = r
        checks.append(Check(f"{k}_ratio", r, "<=", lim, r <= lim))
    sr = m["small_error_count_npu"] / max(m["small_error_count_benchmark"], 1.0)
    m["small_error_count_ratio"] = sr
    checks.append(Check("small_error_count_ratio", sr, "<=", th["small_error_count_ratio"],
                        sr <= th["small_error_count_ratio"]))
    # score: > 1 where the element alone breaks the MARE ratio, or counts as a small-value error
    mare_cap = limits["mare"] * (m["mare_benchmark"] + 1e-7)
    score: _F64 = np.where(normal, _rel(err_a, e, 1e-7) / mare_cap,
                           np.where(small, err_a / th["small_value_error"], 0.0))
    return checks, score, m, bad


def _top(flat: _F64, k: int) -> NDArray[np.intp]:
    """Indices of the k largest values, largest first, ties by index (as a stable sort would
    give them) without sorting the whole array."""
    n = flat.size
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.intp)
    if k >= n:
        return np.argsort(-flat, kind="stable")
    if k == 1:  # argmax: the first of the largest, as the stable sort
        return np.array([int(np.argmax(flat))], dtype=np.intp)
    v = np.partition(flat, n - k)[n - k]  # the k-th largest
    above = np.flatnonzero(flat > v)
    cand = np.concatenate([above, np.flatnonzero(flat == v)[: k - above.size]])
    out: NDArray[np.intp] = cand[np.argsort(-flat[cand], kind="stable")]
    return out


def compare(
    actual: ArrayLike,
    expected: ArrayLike,
    *,
    standard: str = DEFAULT_STANDARD,
    benchmark: Optional[ArrayLike] = None,
    level: Optional[str] = None,
    dtype: Any = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    max_fraction: Optional[float] = None,
    max_abs: Optional[float] = None,
    max_ratio: Optional[float] = None,
    equal_nan: bool = True,
    worst: int = 5,
) -> CompareReport:
    """Judge ``actual`` (e.g. an NPU result) against ``expected`` (the golden, e.g. :mod:`ascendgrad.reference`'s
    float64) under a named precision standard.

    Args:
        actual, expected: arrays of the same shape: NumPy arrays, PyTorch tensors (bfloat16
            and device tensors included), anything :func:`ascendgrad.asarray` takes.
        standard: ``"cann"`` (default), ``"cann-v1"``, ``"dual-benchmark"`` or ``"msprobe"``
            (see the module docstring and :data:`STANDARDS`).
        benchmark: the third-party chip's result, same shape; required by ``dual-benchmark``.
        level: ``"L0"`` (default), ``"L1"`` or ``"L2"``; ``dual-benchmark`` only.
        dtype: the dtype whose thresholds and ULPs apply: float16, bfloat16, float32 or
            float64. Default: actual's dtype when it is one of them, else float64. Errors are
            computed in float64 on the values as given.
        rtol, atol, max_fraction, max_abs, max_ratio: override the ``cann`` standard's
            thresholds (:data:`CRITERIA`); ``max_ratio`` adds "no element beyond max_ratio
            times its tolerance". Not accepted with the other standards.
        equal_nan: whether NaN in both counts as agreement (default) or as a mismatch.
        worst: how many of the worst elements to report (highest score first; NaN/inf
            mismatches first of all).

    Returns:
        A :class:`CompareReport`, truthy when the comparison passed.

    Raises:
        ValueError: shapes differ, an unknown standard or level, a missing or extra
            ``benchmark``, overrides with a standard other than ``cann``, an unsupported dtype.
        TypeError: a non-numeric input.
    """
    from .judge import compare_arrays  # the one judge (compiled, by slices on every thread)

    kw = dict(standard=standard, benchmark=benchmark, level=level, dtype=dtype, rtol=rtol, atol=atol,
              max_fraction=max_fraction, max_abs=max_abs, max_ratio=max_ratio, equal_nan=equal_nan, worst=worst)
    return compare_arrays(actual, expected, **kw)[0]._keep(actual, expected, kw)


def compare_numpy(
    actual: ArrayLike,
    expected: ArrayLike,
    *,
    standard: str = DEFAULT_STANDARD,
    benchmark: Optional[ArrayLike] = None,
    level: Optional[str] = None,
    dtype: Any = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    max_fraction: Optional[float] = None,
    max_abs: Optional[float] = None,
    max_ratio: Optional[float] = None,
    equal_nan: bool = True,
    worst: int = 5,
) -> CompareReport:
    """:func:`compare` computed by NumPy alone, element arrays and all: the standards as written
    (the tests' oracle for :mod:`ascendgrad.judge`, and what ``dual-benchmark`` runs). Same
    arguments, same report; several times slower and larger in memory."""
    kw = dict(standard=standard, benchmark=benchmark, level=level, dtype=dtype, rtol=rtol, atol=atol,
              max_fraction=max_fraction, max_abs=max_abs, max_ratio=max_ratio, equal_nan=equal_nan, worst=worst)
    return _compare_scored(actual, expected, **kw)[0]._keep(actual, expected, kw, True)


def _compare_scored(
    actual: ArrayLike,
    expected: ArrayLike,
    *,
    standard: str = DEFAULT_STANDARD,
    benchmark: Optional[ArrayLike] = None,
    level: Optional[str] = None,
    dtype: Any = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    max_fraction: Optional[float] = None,
    max_abs: Optional[float] = None,
    max_ratio: Optional[float] = None,
    equal_nan: bool = True,
    worst: int = 5,
    ulp_stats: bool = True,
) -> Tuple[CompareReport, _F64]:
    """:func:`compare`, and the per-element score array (for plots). ``ulp_stats=False`` leaves
    the ULP histogram out (empty, ``max_ulp`` -1; the worst elements keep their ULP distance):
    a third of the time of a large comparison, which bulk checks (dump-check) do not show."""
    rtol, atol, max_fraction, max_abs, max_ratio = (_args.optional_real(v, k) for k, v in (
        ("rtol", rtol), ("atol", atol), ("max_fraction", max_fraction), ("max_abs", max_abs), ("max_ratio", max_ratio)))
    equal_nan = _args.boolean(equal_nan, "equal_nan")
    worst = _args.integer(worst, "worst")
    if standard not in STANDARDS:
        raise ValueError(f"unknown standard {standard!r}; choose one of {', '.join(STANDARDS)}")
    overrides = {k: v for k, v in (("rtol", rtol), ("atol", atol), ("max_fraction", max_fraction),
                                   ("max_abs", max_abs), ("max_ratio", max_ratio)) if v is not None}
    if overrides and standard != "cann":
        raise ValueError(f"{', '.join(overrides)}: thresholds of the cann standard, not of {standard}")
    if standard == "dual-benchmark":
        if benchmark is None:
            raise ValueError("the dual-benchmark standard needs the third-party result (benchmark)")
        level = "L0" if level is None else str(level).upper()
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}; choose L0, L1 or L2")
    elif benchmark is not None or level is not None:
        raise ValueError(f"benchmark and level belong to the dual-benchmark standard, not {standard}")
    a_in, e_in = asarray(actual), asarray(expected)
    if a_in.shape != e_in.shape:
        raise ValueError(f"actual has shape {a_in.shape}, expected has shape {e_in.shape}")
    b_in = None if benchmark is None else asarray(benchmark)
    if b_in is not None and b_in.shape != e_in.shape:
        raise ValueError(f"benchmark has shape {b_in.shape}, expected has shape {e_in.shape}")
    if dtype is None:
        dtype = a_in.dtype if a_in.dtype.name in CRITERIA else np.float64
    dt = _float_dtype(dtype)
    try:
        a, e = _f64(a_in), _f64(e_in)
        b = None if b_in is None else _f64(b_in)
    except (TypeError, ValueError):
        raise TypeError(f"cannot compare arrays of dtypes {a_in.dtype} and {e_in.dtype}") from None

    fin = np.isfinite(a)
    all_fin = bool(fin.all()) and bool(np.isfinite(e).all())
    if all_fin:  # the common case: no masks, fewer passes over the data
        nan_bad = inf_bad = np.zeros(a.shape, dtype=bool)
        err = np.empty(a.shape)
        with np.errstate(over="ignore"):
            np.subtract(a, e, out=err)
        np.abs(err, out=err)
        ez = e
    else:
        a_nan, e_nan = np.isnan(a), np.isnan(e)
        a_inf, e_inf = np.isinf(a), np.isinf(e)
        nan_bad = (a_nan != e_nan) | (a_nan & e_nan & (not equal_nan))
        inf_bad = (a_inf | e_inf) & ~(a_nan | e_nan) & (a != e)  # inf vs finite, or +inf vs -inf
        fin &= np.isfinite(e)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(fin, np.abs(a - e), 0.0)
        ez = np.where(fin, e, 0.0)
    x = _Arrays(a, e, fin, err, nan_bad | inf_bad, dt.name, all_fin, ez)

    th = dict(STANDARDS[standard].thresholds[dt.name])
    crit_fields: Tuple[Optional[float], ...] = (None,) * 4
    if standard == "cann":
        crit = CRITERIA[dt.name]._replace(**{k: float(v) for k, v in overrides.items() if k != "max_ratio"})
        mr = float(overrides.get("max_ratio", math.inf))
        th.update(rtol=crit.rtol, atol=crit.atol, required_matched_ratio=1 - crit.max_fraction,
                  max_abs_error=crit.max_abs)
        if math.isfinite(mr):
            th["max_err_over_tolerance"] = mr
        checks, score, metrics = _judge_cann(x, crit, mr)
        crit_fields = (crit.rtol, crit.atol, crit.max_fraction, mr)
    elif standard == "cann-v1":
        checks, score, metrics = _judge_v1(x, th)
    elif standard == "msprobe":
        checks, score, metrics = _judge_msprobe(x, th)
    else:
        assert b is not None and level is not None
        checks, score, metrics, special_bad = _judge_dual(x, b, th, level, equal_nan)
        th.update(zip(("mare_ratio", "mere_ratio", "rmse_ratio"), LEVELS[level]))
        nan_bad &= special_bad
        inf_bad &= special_bad
    bad = nan_bad | inf_bad
    n_nan, n_inf = int(nan_bad.sum()), int(inf_bad.sum())
    if standard != "dual-benchmark":
        checks.insert(0, Check("nan_inf_mismatches", float(n_nan + n_inf), "==", 0.0, not (n_nan or n_inf)))
    if not all_fin:
        score = np.where(bad, np.inf, np.where(fin, score, 0.0))

    abs_e = np.asarray(np.abs(ez))  # an array even for 0-D inputs (out= below)
    nonzero = abs_e != 0  # and finite
    n_nonzero = int(np.count_nonzero(nonzero))
    if n_nonzero == abs_e.size:
        rel, rel_inf = np.divide(err, abs_e, out=abs_e), False
    else:
        rel = np.divide(err, abs_e, out=np.zeros(err.shape), where=nonzero)
        rel_inf = bool(np.any(err[~nonzero] > 0))  # |a − e| > 0 where e = 0
    if not ulp_stats:
        ulp = ulp_fin = None
    elif all_fin:
        ulp = ulp_distance(a_in if a_in.dtype == dt else a, e, dt).astype(np.uint64, copy=False)
        ulp_fin = ulp
    else:
        ulp = np.where(fin, ulp_distance(np.where(fin, a, 0.0), ez, dt), 0).astype(np.uint64)
        ulp_fin = ulp[fin]
    size, n_fin = int(a.size), (int(a.size) if all_fin else int(fin.sum()))
    reasons = [f"{n_nan} NaN and {n_inf} inf mismatches" if c.metric == "nan_inf_mismatches" else str(c)
               for c in checks if not c.passed]

    flat = score.reshape(-1)
    order = _top(flat, max(int(worst), 0))
    order = order[flat[order] > 0]
    shown = tuple(
        Mismatch(tuple(int(i) for i in np.unravel_index(k, a.shape)), float(a.flat[k]),
                 float(e.flat[k]), float(np.abs(a.flat[k] - e.flat[k])),
                 (float(rel.flat[k]) if e.flat[k] != 0 else (0.0 if a.flat[k] == 0 else math.inf))
                 if fin.flat[k] else math.nan,
                 (int(ulp.flat[k]) if ulp is not None else int(ulp_distance(a.flat[k], e.flat[k], dt)))
                 if fin.flat[k] else None, float(flat[k]))
        for k in order
    )
    report = CompareReport(
        passed=not reasons, dtype=dt.name, shape=tuple(a.shape), size=size, finite=n_fin,
        max_abs_err=float(np.max(err, initial=0.0)),
        mean_abs_err=(float(err.mean()) if all_fin else float(err[fin].mean())) if n_fin else 0.0,
        max_rel_err=math.inf if rel_inf else float(np.max(rel, initial=0.0)),
        mean_rel_err=float(rel.sum()) / n_nonzero if n_nonzero else 0.0,
        max_ulp=int(np.max(ulp, initial=0)) if ulp is not None else -1,
        ulp_histogram=_histogram(ulp_fin) if ulp_fin is not None else {},
        rtol=crit_fields[0], atol=crit_fields[1], max_fraction=crit_fields[2], max_ratio=crit_fields[3],
        beyond=int(np.count_nonzero(score > 1.0)), nan_mismatch=n_nan, inf_mismatch=n_inf, worst=shown,
        reasons=tuple(reasons), standard=standard, level=level, thresholds=th, metrics=metrics,
        checks=tuple(checks),
    )
    return report, score


def describe_standards() -> str:
    """The standards with their thresholds per dtype, as ``--list-standards`` prints them."""
    out = []
    for s in STANDARDS.values():
        out.append(f"{s.name}{' (default)' if s.name == DEFAULT_STANDARD else ''}: {s.title}\n  source: {s.source}")
        for d, th in s.thresholds.items():
            own = "  (ascendgrad's own row: not published)" if d in s.own_rows else ""
            out.append(f"  {d:9} " + ", ".join(f"{k}={v:.6g}" for k, v in th.items()) + own)
        if s.name == "dual-benchmark":
            out.append("  levels (MARE / MERE / RMSE ratio limits): " +
                       ", ".join(f"{k} {m:g}/{r:g}/{q:g}" for k, (m, r, q) in LEVELS.items()) +
                       " (default L0); needs --benchmark FILE")
    return "\n".join(out)


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
    ``dtype``, a size that does not fit ``shape``, or a file that is not what its suffix says
    (a folder, empty, truncated, another format; the message names it); ``OSError`` for an
    unreadable file.
    """
    import ml_dtypes

    p = os.fspath(path)
    suffix = os.path.splitext(p)[1].lower()
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        dtype = ml_dtypes.bfloat16
    dt = None if dtype is None else np.dtype(dtype)
    arrays: Dict[str, np.ndarray]
    if suffix == ".npy":
        arrays = {"": _files.read_npy(p)}
    elif suffix == ".npz":
        arrays = _files.read_npz(p, None if key is None else [key])
    else:
        if dt is None:
            raise ValueError(f"{p}: a raw file holds bytes only, not their dtype: give one (--dtype, e.g. bfloat16)")
        what = f"a raw dump of {dt.name} elements"
        _files.check_file(p, what, empty_ok=True)  # an empty tensor's dump is an empty file
        if os.path.getsize(p) % dt.itemsize:
            raise _files.BadFile(f"{p}: {os.path.getsize(p)} bytes, not a whole number of elements "
                                 f"({dt.itemsize} bytes each); it should be {what}")
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
    p.add_argument("actual", nargs="?", help="the result to judge: .npy, .npz or a raw dump (.bin, any other suffix)")
    p.add_argument("expected", nargs="?", help="the golden result, same formats")
    p.add_argument("--standard", default=DEFAULT_STANDARD, choices=list(STANDARDS),
                   help=f"the precision standard (default {DEFAULT_STANDARD}; see --list-standards)")
    p.add_argument("--benchmark", metavar="FILE", help="the third-party chip's result (dual-benchmark), same formats")
    p.add_argument("--level", choices=list(LEVELS), help="dual-benchmark level (default L0)")
    p.add_argument("--list-standards", action="store_true", help="print the standards and their thresholds")
    p.add_argument("--key", help="the array to take from .npz files (default: every name both have)")
    p.add_argument("--dtype", help="dtype of raw files, required for them (a raw dump holds bytes only); also of "
                   ".npy/.npz arrays saved as void, as NumPy saves bfloat16 (for those, default bfloat16)")
    p.add_argument("--shape", help="shape of raw files, e.g. 4,2 (default: the other file's shape)")
    p.add_argument("--compare-dtype", help="dtype whose ULPs and thresholds apply (default: actual's)")
    for name in ("rtol", "atol", "max-fraction", "max-abs", "max-ratio"):
        p.add_argument(f"--{name}", type=float, help="override the cann standard's threshold")
    p.add_argument("--worst", type=int, default=5, help="worst elements to list (default 5)")
    p.add_argument("--json", action="store_true", help="print the report(s) as JSON")


def _pairs(args: Any) -> Tuple[Dict[str, Tuple[np.ndarray, ...]], List[str]]:
    shape = _args.shape_arg(args.shape)
    files = [args.actual, args.expected] + ([args.benchmark] if args.benchmark else [])
    loaded = [load(f, key=args.key, dtype=args.dtype, shape=shape) for f in files]
    if all(len(d) == 1 for d in loaded):
        pairs = {"": tuple(next(iter(d.values())) for d in loaded)}
        skipped: List[str] = []
    else:
        common = [k for k in loaded[0] if all(k in d for d in loaded[1:])]
        if not common:
            raise ValueError(f"{', '.join(map(str, files))} have no array name in common (use --key)")
        pairs = {k: tuple(d[k] for d in loaded) for k in common}
        skipped = sorted(set().union(*loaded) - set(common))
    if shape is None:  # a flat raw dump takes the golden's shape (or gives it its own)
        for k, arrs in pairs.items():
            e = arrs[1]
            if e.ndim == 1 and arrs[0].ndim > 1 and arrs[0].size == e.size:
                e = e.reshape(arrs[0].shape)
            pairs[k] = tuple(x.reshape(e.shape) if x.shape != e.shape and x.ndim == 1 and x.size == e.size
                             else x for x in (arrs[0], e) + arrs[2:])
    for k, arrs in pairs.items():  # the files named (one may be truncated), not "actual" and "expected"
        if len({x.shape for x in arrs}) > 1:
            shapes = ", ".join(f"{f}{':' + k if k else ''}: shape {list(x.shape)}" for f, x in zip(files, arrs))
            raise ValueError(f"{shapes}; they should have the same shape (one is truncated, or they are not "
                             f"the same tensor)")
    return pairs, skipped


def _run(args: Any) -> int:
    import json
    import sys

    if args.list_standards:
        print(describe_standards())
        return 0
    if args.actual is None or args.expected is None:
        print("compare: ACTUAL and EXPECTED are required (or --list-standards)", file=sys.stderr)
        return 2
    if args.standard == "dual-benchmark" and not args.benchmark:
        print("compare: the dual-benchmark standard needs --benchmark FILE (the third-party chip's result)",
              file=sys.stderr)
        return 2
    try:
        pairs, skipped = _pairs(args)
        reports = {k: compare(arrs[0], arrs[1], benchmark=arrs[2] if len(arrs) > 2 else None,
                              standard=args.standard, level=args.level, dtype=args.compare_dtype,
                              rtol=args.rtol, atol=args.atol, max_fraction=args.max_fraction,
                              max_abs=args.max_abs, max_ratio=args.max_ratio, worst=args.worst)
                   for k, arrs in pairs.items()}
    except (OSError, ValueError, TypeError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    for k in skipped:
        print(f"compare: {k!r} is not in every file; not compared", file=sys.stderr)
    if args.json:
        data = {k: r.to_dict() for k, r in reports.items()}
        print(json.dumps(_files.strict_json(data[""] if list(data) == [""] else data), indent=1))
    else:
        print("\n\n".join((f"[{k}]\n" if k else "") + str(r) for k, r in reports.items()))
    return 0 if all(reports.values()) else 1
