"""The judge every tool shares: a result against its float64 golden under a named precision
standard, by slices on all of ascendgrad's threads.

``compare``, ``golden --check``, ``dump-check`` and :mod:`ascendgrad.torch`'s ``autocompare``
all judge through this module::

    from ascendgrad import judge
    report = judge.compare_arrays(actual, golden, standard="cann")          # as compare.compare
    report, gold = judge.judge_op("softmax_backward", {"grad_output": g, "output": y},
                                  {"dim": -1}, actual, standard="cann", keep_golden=True)
    gold = judge.golden("log_sigmoid_backward", {"grad_output": g, "x": x}, {})

The metrics of every standard but ``dual-benchmark`` come from one pass of the compiled core over
each slice of 2^20 elements (``csrc/kernels/judge.cpp``); the slices' sums merge in slice order,
so a verdict and its numbers do not depend on the thread count. :func:`judge_op` computes the
golden slice by slice and judges each slice while it is in cache: the whole float64 golden is
never held unless asked for. The golden comes from the compiled kernels run in float64 on the
slice's inputs widened to float64 (each thread's kernels on that thread alone);
:mod:`ascendgrad.reference` stays their independent oracle in the tests (they agree to a few
float64 ULPs) and makes the golden where a kernel refuses a slice (CANN's rank limits). The golden
data of :mod:`ascendgrad.golden` remain the reference's, checked against the kernel.
``dual-benchmark`` (which needs a third result) runs :func:`ascendgrad.compare.compare_numpy`.

The NumPy implementation of the standards, :func:`ascendgrad.compare.compare_numpy`, is the
oracle the tests hold this module to: the same verdicts, checks and worst elements; sums (mean
errors, MERE, cosine) equal within 1e-9 relative (they are added in another order).
"""

from __future__ import annotations

import contextlib
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core, _ops, reference
from ._interop import asarray
from .compare import (CRITERIA, DEFAULT_STANDARD, LIMIT_ULPS, STANDARDS, ULP_EDGES, Check, CompareReport,
                      Mismatch, _compare_scored, _float_dtype, _f64, ulp_distance)

__all__ = ["compare_arrays", "judge_op", "golden", "map_reference", "softshrink_golden", "LogSoftmaxRows",
           "SLICE", "limit_threads"]

#: Elements per slice, the unit of the golden's and the metrics' work and of their merge order.
SLICE = 1 << 20
_MAX_WORST = 256  # beyond this many worst elements, compare_numpy (a top-k list per slice)

_T = TypeVar("_T")
_View = Callable[[NDArray[Any]], NDArray[Any]]


# --------------------------------------------------------------------------------------------
# the golden by slices


def _slices(n: int, step: int) -> Iterator[slice]:
    for i in range(0, n, max(step, 1)):
        yield slice(i, min(i + max(step, 1), n))


class LogSoftmaxRows:
    """``reference.log_softmax(x, -1)`` of (N, C) logits, computed per slice of rows where it is
    read by slices, whole where it is read as an array."""

    def __init__(self, x: np.ndarray) -> None:
        self.x, self.shape = x, x.shape

    def __getitem__(self, rows: Any) -> np.ndarray:
        # reference.log_softmax's operations in its order (the same bits), in place: fewer passes
        xs = _f64(np.asarray(self.x[rows]))
        if xs.ndim != 2 or xs.shape[-1] == 0:
            return reference.log_softmax(xs, -1)
        xs = xs.copy() if np.shares_memory(xs, self.x) else xs
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            np.subtract(xs, np.max(xs, axis=-1, keepdims=True), out=xs)
            lse = np.log(np.sum(np.exp(xs), axis=-1, keepdims=True))
            np.subtract(xs, lse, out=xs)
        return xs

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return reference.log_softmax(self.x, -1)


def _reference_slices(op: str, inputs: Dict[str, Any], attrs: Dict[str, Any], out_shape: Tuple[int, ...]
                      ) -> Iterator[Tuple[Any, _View, Dict[str, Any]]]:
    """(index, view-maker, reference kwargs) per slice of the output: the float64 reference of a
    slice needs only that slice's inputs. ``view(a)[index]`` is the slice in an output-shaped a."""
    kw: Dict[str, Any] = dict(inputs, **attrs)
    whole = (Ellipsis, lambda a: a, kw)
    n = math.prod(out_shape)
    if n <= SLICE:
        yield whole
        return
    if op == "log_sigmoid_backward" or (
            op == "softshrink_backward" and inputs["grad_output"].shape == inputs["x"].shape == out_shape):
        flat: _View = lambda a: a.reshape(-1)
        for s in _slices(n, SLICE):
            yield s, flat, dict(kw, grad_output=flat(inputs["grad_output"])[s], x=flat(inputs["x"])[s],
                                **({"buffer": None} if "buffer" in kw else {}))
        return
    if op == "softmax_backward":
        shape = out_shape if out_shape else (1,)
        d = attrs.get("dim", -1) % len(shape)
        outer, size, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1:])
        view3: _View = lambda a: a.reshape(outer, size, inner)
        g3, y3 = view3(inputs["grad_output"]), view3(inputs["output"])
        if outer > 1:
            for s in _slices(outer, SLICE // max(size * inner, 1)):
                yield s, view3, dict(kw, grad_output=g3[s], output=y3[s], dim=1)
        else:
            for s in _slices(inner, SLICE // max(size, 1)):
                yield (slice(None), slice(None), s), view3, dict(kw, grad_output=g3[:, :, s], output=y3[:, :, s], dim=1)
        return
    if op == "cross_entropy_loss_grad" and not attrs.get("lse_square_scale_for_zloss"):
        red = attrs.get("reduction") or "mean"
        gl = inputs["grad_loss"]
        lp, t = inputs["log_prob"], inputs["target"]
        rows, c = lp.shape
        if red == "mean":  # the mean's divisor is over every row: divide once, then sum per slice
            w = inputs.get("weight")
            ii = attrs.get("ignore_index", -100)
            mask = t != ii
            w64 = np.ones(c) if w is None else np.asarray(w).astype(np.float64)
            big_w = float(np.sum(np.where(mask, w64[np.where(mask, t, 0)], 0.0)))  # as the reference sums
            glv = float(np.asarray(gl, np.float64).reshape(()))
            gl = np.asarray(glv / big_w if big_w != 0 else 0.0)
            kw = dict(kw, reduction="sum", grad_loss=gl)
        for s in _slices(rows, SLICE // max(c, 1)):
            yield s, lambda a: a, dict(kw, log_prob=lp[s], target=t[s],
                                       grad_loss=gl[s] if red == "none" else kw["grad_loss"])
        return
    if op == "kl_div_backward" and inputs["x"].shape == inputs["target"].shape == out_shape and (
            inputs["grad_output"].size == 1 or inputs["grad_output"].shape == out_shape):
        code = reference._kl_reduction(attrs.get("reduction", "mean"))  # type: ignore[no-untyped-call]
        scale = reference._kl_scale(code, out_shape)  # type: ignore[no-untyped-call]
        g = inputs["grad_output"]
        flat = lambda a: a.reshape(-1)
        for s in _slices(n, SLICE):
            gs = _f64(np.asarray(g)).reshape(()) if g.size == 1 else _f64(flat(g)[s])
            yield s, flat, dict(kw, grad_output=gs * scale, x=flat(inputs["x"])[s], target=flat(inputs["target"])[s],
                                reduction="sum")
        return
    kw = {k: (np.asarray(v) if isinstance(v, LogSoftmaxRows) else v) for k, v in kw.items()}
    yield Ellipsis, lambda a: a, kw


_local = threading.local()


@contextlib.contextmanager
def limit_threads(n: int) -> Iterator[None]:
    """Judging on the calling thread uses at most ``n`` threads while the context lasts (the
    kernels it runs included): a caller judging beside other work (``autocompare`` beside the
    training step) leaves the cores to it. Thread-local; nestable."""
    before = getattr(_local, "threads", None)
    _local.threads = max(1, int(n))
    _core.set_thread_num_threads(_local.threads)
    try:
        yield
    finally:
        _local.threads = before
        _core.set_thread_num_threads(before or 0)


def _map(fn: Callable[[Any], _T], jobs: Iterator[Any], n: int) -> Iterator[_T]:
    """fn over the jobs in order, on ascendgrad's threads when there is more than one slice (each
    running its kernels on itself alone: no OpenMP team per thread)."""
    threads = max(1, getattr(_local, "threads", None) or _ops.get_num_threads())
    if n <= SLICE or threads == 1:
        yield from map(fn, jobs)
        return

    def alone(job: Any) -> _T:
        _core.set_thread_num_threads(1)
        return fn(job)

    with ThreadPoolExecutor(threads) as pool:
        yield from pool.map(alone, jobs)


def _widened(v: Any) -> Any:
    """A float array (or lazy rows) as float64; anything else as it is."""
    if isinstance(v, LogSoftmaxRows):
        return np.asarray(v)
    if isinstance(v, np.ndarray) and (v.dtype.kind == "f" or v.dtype.name == "bfloat16"):
        return v.astype(np.float64)
    return v


def _kernel_golden(op: str, kw: Dict[str, Any]) -> NDArray[np.float64]:
    """The slice's golden from the compiled kernel run in float64 (its inputs widened in cache);
    where the kernel refuses what the reference takes (CANN's rank limits, say), the reference."""
    wide = {k: _widened(v) for k, v in kw.items()}
    try:
        out: NDArray[np.float64] = np.asarray(getattr(_ops, op)(**wide))
        return out
    except (ValueError, TypeError):  # AclnnError is a ValueError
        return np.asarray(getattr(reference, op)(**wide), dtype=np.float64)


def map_reference(op: str, inputs: Dict[str, Any], attrs: Dict[str, Any], out_shape: Tuple[int, ...],
                  fn: Callable[[Any, _View, NDArray[np.float64]], _T], *, kernel: bool = False) -> Iterator[_T]:
    """``fn(index, view, reference)`` for each slice of the operator's float64 reference, in
    order, on ascendgrad's thread count (NumPy releases the GIL inside its loops; slices of 2^20
    elements keep the reference's temporaries in cache). ``view(a)[index]`` is the slice's place
    in an output-shaped array ``a``. Inputs may be lazy: anything with ``shape``,
    ``__getitem__`` and ``__array__`` (e.g. :class:`LogSoftmaxRows`). ``kernel``: each slice
    from the compiled kernel run in float64 instead (as :func:`golden`), the reference where the
    kernel refuses the slice."""
    ref_fn = getattr(reference, op)

    def one(job: Tuple[Any, _View, Dict[str, Any]]) -> _T:
        index, view, kw = job
        with np.errstate(all="ignore"):  # inf and NaN inputs are cases too
            ref = _kernel_golden(op, kw) if kernel else np.asarray(ref_fn(**kw), dtype=np.float64)
        return fn(index, view, ref)

    yield from _map(one, _reference_slices(op, inputs, attrs, out_shape), math.prod(out_shape))


def _softshrink_pick(g: NDArray[np.float64], alt: NDArray[np.float64], d: NDArray[Any]) -> NDArray[np.float64]:
    dd = _f64(np.asarray(d))
    with np.errstate(invalid="ignore"):
        out: NDArray[np.float64] = np.where(np.abs(dd - alt) < np.abs(dd - g), alt, g)
    return out


def _lambd_in(x: Any, lambd: float) -> float:
    return float(np.asarray(lambd, dtype=np.float64).astype(np.asarray(x).dtype))


def softshrink_golden(g: ArrayLike, x: ArrayLike, lambd: float, actual: Optional[ArrayLike]) -> NDArray[np.float64]:
    """Softshrink's golden gradient; where abs(x) lies between λ and λ rounded to x's dtype
    (PyTorch compares with the rounded λ, the aclnn API takes λ as float32) either answer is
    right: the one nearer ``actual`` is taken."""
    kw = {"grad_output": np.asarray(g), "x": np.asarray(x)}
    gold = _kernel_golden("softshrink_backward", dict(kw, lambd=lambd))
    lam_dt = _lambd_in(kw["x"], lambd)
    if lam_dt == lambd or actual is None or np.shape(actual) != gold.shape:
        return gold
    return _softshrink_pick(gold, _kernel_golden("softshrink_backward", dict(kw, lambd=lam_dt)), np.asarray(actual))


def golden(op: str, inputs: Dict[str, Any], attrs: Dict[str, Any], out_shape: Optional[Sequence[int]] = None
           ) -> NDArray[np.float64]:
    """The operator's float64 golden, computed by slices on ascendgrad's threads: the compiled
    kernel run in float64 on each slice's inputs widened to float64 (the reference's formulas;
    :mod:`ascendgrad.reference` where the kernel refuses a slice, and as the tests' independent
    oracle: they agree to a few float64 ULPs). ``inputs`` are the NumPy function's keywords
    (cross entropy's ``log_prob`` may be a :class:`LogSoftmaxRows`); ``out_shape`` defaults to
    the first input's shape."""
    shape = tuple(out_shape) if out_shape is not None else tuple(next(iter(inputs.values())).shape)
    out = np.empty(shape)

    def put(index: Any, view: _View, ref: NDArray[np.float64]) -> None:
        view(out)[index] = ref.reshape(view(out)[index].shape)

    for _ in map_reference(op, inputs, attrs, shape, put, kernel=True):
        pass
    return out


# --------------------------------------------------------------------------------------------
# the metrics


class _Setup:
    """A standard as applied to one comparison: the thresholds, the C++ pass's parameters."""

    def __init__(self, standard: str, dt: np.dtype, overrides: Dict[str, float], equal_nan: bool, ulp: bool,
                 worst: int) -> None:
        self.standard, self.dt = standard, dt
        self.th: Dict[str, float] = dict(STANDARDS[standard].thresholds[dt.name])
        self.crit = CRITERIA[dt.name]._replace(**{k: float(v) for k, v in overrides.items() if k != "max_ratio"})
        self.max_ratio = float(overrides.get("max_ratio", math.inf))
        half = dt.name in ("float16", "bfloat16")
        t1, t2 = (0.01, 0.001) if half else (0.001, 0.0001)
        self.worst = worst
        self.kw = dict(compare_dtype=dt, score=standard, equal_nan=equal_nan, ulp=ulp, rtol=self.crit.rtol,
                       atol=self.crit.atol, max_abs=self.crit.max_abs, limit_ulps=LIMIT_ULPS,
                       v1_mare=self.th.get("mare", 1.0), ms_eps=self.th.get("eps", 0.0), ms_t1=t1, ms_t2=t2,
                       worst=worst)


_SUMS = ("n", "finite", "nan_bad", "inf_bad", "beyond", "nonzero", "sum_err", "sum_rel", "v1_sum", "ms_below1",
         "ms_below2", "dot", "aa", "gg")
_MAXES = ("max_err", "max_rel", "v1_max", "amax", "gmax", "max_ulp", "max_score")


def _flat_index(shape: Tuple[int, ...], index: Any, view: _View, local: int, sub_shape: Tuple[int, ...]) -> int:
    """The flat index in an output of ``shape`` of element ``local`` of ``view(out)[index]``."""
    if index is Ellipsis:
        return local
    vshape = view(_Shape(shape)).shape  # type: ignore[arg-type]
    pos = list(np.unravel_index(local, sub_shape)) if sub_shape else []
    idx = index if isinstance(index, tuple) else (index,)
    for k, s in enumerate(idx):
        if isinstance(s, slice):
            pos[k] += s.start or 0
    return int(np.ravel_multi_index(tuple(pos), vshape)) if vshape else 0


class _Shape:
    """A stand-in with a shape, for a view-maker's reshape (only the shape is asked for)."""

    def __init__(self, shape: Tuple[int, ...]) -> None:
        self.shape = shape

    def reshape(self, *s: Any) -> "_Shape":
        dims = s[0] if len(s) == 1 and isinstance(s[0], tuple) else s
        if -1 in dims:
            return _Shape((math.prod(self.shape),))
        return _Shape(tuple(dims))


class _Acc:
    """The partials of the slices, merged in slice order."""

    def __init__(self, setup: _Setup) -> None:
        self.setup = setup
        self.s: Dict[str, Any] = {k: 0 for k in _SUMS + _MAXES}
        self.s.update(rel_inf=False, over=None, hist=[0] * (len(ULP_EDGES) + 1))
        self.worst: List[Tuple[float, int, float, float]] = []  # (score, flat index, actual, golden)

    def add(self, d: Dict[str, Any], to_global: Callable[[int], int], a: NDArray[Any], g: NDArray[np.float64]) -> None:
        s = self.s
        for k in _SUMS:
            s[k] += d[k]
        for k in _MAXES:
            s[k] = max(s[k], d[k])
        s["rel_inf"] = s["rel_inf"] or d["rel_inf"]
        s["hist"] = [x + y for x, y in zip(s["hist"], d["ulp_hist"])]
        if d["over_index"] >= 0 and (s["over"] is None or d["over_ratio"] > s["over"][0]):
            s["over"] = (d["over_ratio"], d["over_err"], d["over_lim"])
        for sc, i in d["worst"]:
            self.worst.append((sc, to_global(i), float(a[i]), float(g[i])))
        if len(self.worst) > self.setup.kw["worst"]:
            self.worst.sort(key=lambda w: (-w[0], w[1]))
            del self.worst[self.setup.kw["worst"]:]

    def report(self, shape: Tuple[int, ...], ulp: bool) -> CompareReport:
        st, s, dt = self.setup, self.s, self.setup.dt
        th, crit = st.th, st.crit
        n, fin = int(s["n"]), int(s["finite"])
        self.worst.sort(key=lambda w: (-w[0], w[1]))
        checks: List[Check] = []
        metrics: Dict[str, float] = {}
        crit_fields: Tuple[Optional[float], ...] = (None,) * 4
        if st.standard == "cann":
            th.update(rtol=crit.rtol, atol=crit.atol, required_matched_ratio=1 - crit.max_fraction,
                      max_abs_error=crit.max_abs)
            ratio = (n - int(s["beyond"])) / n if n else 1.0
            if s["over"] is not None:
                r, err, lim = s["over"]
                abs_check = Check("max_abs_error", float(err), "<=", float(lim), bool(r <= 1.0))
            else:
                abs_check = Check("max_abs_error", float(s["max_err"]), "<=", crit.max_abs, True)
            checks = [Check("matched_ratio", ratio, ">=", 1 - crit.max_fraction, ratio >= 1 - crit.max_fraction),
                      abs_check]
            if math.isfinite(st.max_ratio):
                th["max_err_over_tolerance"] = st.max_ratio
                top = float(s["max_score"])  # over pairs finite in both: NaN/inf fail on their own check
                checks.append(Check("max_err_over_tolerance", top, "<=", st.max_ratio, top <= st.max_ratio))
            metrics = {"matched_ratio": ratio, "max_abs_error": float(s["max_err"])}
            crit_fields = (crit.rtol, crit.atol, crit.max_fraction, st.max_ratio)
        elif st.standard == "cann-v1":
            mere = s["v1_sum"] / fin if fin else 0.0
            mare = float(s["v1_max"])
            checks = [Check("mere", mere, "<", th["mere"], mere < th["mere"]),
                      Check("mare", mare, "<", th["mare"], mare < th["mare"])]
            metrics = {"mere": mere, "mare": mare}
        else:
            checks, metrics = self._msprobe(fin)
        n_nan, n_inf = int(s["nan_bad"]), int(s["inf_bad"])
        checks.insert(0, Check("nan_inf_mismatches", float(n_nan + n_inf), "==", 0.0, not (n_nan or n_inf)))
        reasons = [f"{n_nan} NaN and {n_inf} inf mismatches" if c.metric == "nan_inf_mismatches" else str(c)
                   for c in checks if not c.passed]
        shown = tuple(_mismatch(sc, k, a, e, shape, dt) for sc, k, a, e in self.worst[: st.worst])
        labels = ["0"] + [str(e) if e - lo <= 1 else f"{lo + 1}-{e}" for lo, e in zip(ULP_EDGES, ULP_EDGES[1:])] + \
            [f">{ULP_EDGES[-1]}"]
        return CompareReport(
            passed=not reasons, dtype=dt.name, shape=shape, size=n, finite=fin, max_abs_err=float(s["max_err"]),
            mean_abs_err=s["sum_err"] / fin if fin else 0.0,
            max_rel_err=math.inf if s["rel_inf"] else float(s["max_rel"]),
            mean_rel_err=s["sum_rel"] / s["nonzero"] if s["nonzero"] else 0.0,
            max_ulp=int(s["max_ulp"]) if ulp else -1,
            ulp_histogram=dict(zip(labels, map(int, s["hist"]))) if ulp else {},
            rtol=crit_fields[0], atol=crit_fields[1], max_fraction=crit_fields[2], max_ratio=crit_fields[3],
            beyond=int(s["beyond"]), nan_mismatch=n_nan, inf_mismatch=n_inf, worst=shown, reasons=tuple(reasons),
            standard=st.standard, level=None, thresholds=th, metrics=metrics, checks=tuple(checks))

    def _msprobe(self, fin: int) -> Tuple[List[Check], Dict[str, float]]:
        s, th = self.s, self.setup.th
        half = self.setup.dt.name in ("float16", "bfloat16")
        metrics: Dict[str, float] = {}
        checks: List[Check] = []
        eps = float(np.finfo(np.float64).eps)
        cos: Optional[float] = None
        if fin > 1 and not (s["amax"] <= eps and s["gmax"] <= eps):
            if s["amax"] <= eps or s["gmax"] <= eps:
                cos = 0.0
            else:
                cos = float(np.clip(s["dot"] / (math.sqrt(s["aa"]) * math.sqrt(s["gg"])), -1.0, 1.0))
        if cos is not None:
            metrics["cosine"] = cos
            checks.append(Check("cosine", cos, ">", th["cosine"], cos > th["cosine"]))
            if cos <= th["cosine"]:
                return checks, metrics
        max_abs = float(s["max_err"])
        metrics["max_abs_error"] = max_abs
        if max_abs < th["max_abs_error"]:
            checks.append(Check("max_abs_error", max_abs, "<", th["max_abs_error"], True))
            return checks, metrics
        names = (("rel_err_hundredth", "ms_below1"), ("rel_err_thousandth", "ms_below2")) if half else \
            (("rel_err_thousandth", "ms_below1"), ("rel_err_ten_thousandth", "ms_below2"))
        for name, key in names:
            share = s[key] / fin if fin else 1.0
            metrics[name] = share
            checks.append(Check(name, share, ">", th[name], share > th[name]))
            if share <= th[name]:  # the first is msprobe's error, the second its warning: both fail
                break
        return checks, metrics


def _mismatch(score: float, k: int, a: float, e: float, shape: Tuple[int, ...], dt: np.dtype) -> Mismatch:
    fin = math.isfinite(a) and math.isfinite(e)
    loc = tuple(int(i) for i in np.unravel_index(k, shape)) if shape else ()
    rel = (abs(a - e) / abs(e) if e != 0 else (0.0 if a == 0 else math.inf)) if fin else math.nan
    ulp = int(ulp_distance(np.float64(a), np.float64(e), dt)) if fin else None
    with np.errstate(invalid="ignore"):
        return Mismatch(loc, a, e, float(np.abs(np.float64(a) - np.float64(e))), rel, ulp, score)


def _contig(a: NDArray[Any]) -> NDArray[Any]:
    if a.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
        a = _f64(a)
    return np.ascontiguousarray(a).reshape(-1)


def _native_ok(standard: str, worst: int) -> bool:
    return standard != "dual-benchmark" and worst <= _MAX_WORST


def compare_arrays(
    actual: ArrayLike, expected: ArrayLike, *, standard: str = DEFAULT_STANDARD, benchmark: Optional[ArrayLike] = None,
    level: Optional[str] = None, dtype: Any = None, rtol: Optional[float] = None, atol: Optional[float] = None,
    max_fraction: Optional[float] = None, max_abs: Optional[float] = None, max_ratio: Optional[float] = None,
    equal_nan: bool = True, worst: int = 5, ulp_stats: bool = True, want_score: bool = False,
) -> Tuple[CompareReport, Optional[NDArray[np.float64]]]:
    """:func:`ascendgrad.compare.compare` (same arguments and report) and, with ``want_score``,
    every element's score under the standard (for plots)."""
    ov = {k: v for k, v in (("rtol", rtol), ("atol", atol), ("max_fraction", max_fraction), ("max_abs", max_abs),
                            ("max_ratio", max_ratio)) if v is not None}
    args = dict(standard=standard, benchmark=benchmark, level=level, dtype=dtype, equal_nan=equal_nan, worst=worst,
                **ov)
    if not isinstance(worst, int) or isinstance(worst, bool) or not _native_ok(standard, worst) \
            or standard not in STANDARDS or (ov and standard != "cann") or benchmark is not None or level is not None:
        report, score = _compare_scored(actual, expected, ulp_stats=ulp_stats, **args)  # type: ignore[arg-type]
        return report, (score if want_score else None)
    from . import _args

    for k, v in ov.items():
        ov[k] = _args.optional_real(v, k)
    equal_nan = _args.boolean(equal_nan, "equal_nan")
    a_in, e_in = asarray(actual), asarray(expected)
    if a_in.shape != e_in.shape:
        raise ValueError(f"actual has shape {a_in.shape}, expected has shape {e_in.shape}")
    if dtype is None:
        dtype = a_in.dtype if a_in.dtype.name in CRITERIA else np.float64
    dt = _float_dtype(dtype)
    try:
        a = _contig(a_in)
        e = np.ascontiguousarray(_f64(e_in)).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"cannot compare arrays of dtypes {a_in.dtype} and {e_in.dtype}") from None
    setup = _Setup(standard, dt, ov, equal_nan, ulp_stats, max(worst, 0))
    acc = _Acc(setup)
    score = np.empty(a.size) if want_score else None

    def one(s: slice) -> Tuple[Dict[str, Any], slice]:
        return _core.judge_metrics(a[s], e[s], score_out=None if score is None else score[s], **setup.kw), s

    for d, s in _map(one, _slices(a.size, SLICE), a.size):
        acc.add(d, lambda i, s=s: s.start + i, a[s], e[s])
    report = acc.report(tuple(a_in.shape), ulp_stats)
    return report, (None if score is None else score.reshape(a_in.shape))


def judge_op(op: str, inputs: Dict[str, Any], attrs: Dict[str, Any], actual: ArrayLike, *,
             standard: str = DEFAULT_STANDARD, dtype: Any = None, worst: int = 1, ulp_stats: bool = False,
             want_score: bool = False, keep_golden: bool = False, softshrink_nearest: bool = True,
             ) -> Tuple[CompareReport, Optional[NDArray[np.float64]], Optional[NDArray[np.float64]]]:
    """Judge ``actual``, the operator's result, against its float64 golden computed slice by
    slice from ``inputs`` (the NumPy function's keywords; cross entropy's ``log_prob`` may be a
    :class:`LogSoftmaxRows` of the logits) under ``standard``. Returns (report, golden or None,
    score or None): the golden only with ``keep_golden``, the per-element score only with
    ``want_score``. Softshrink takes, where abs(x) lies between λ and λ rounded to x's dtype,
    the golden nearer the result (:func:`softshrink_golden`)."""
    a_in = asarray(actual)
    shape = tuple(a_in.shape)
    if dtype is None:
        dtype = a_in.dtype if a_in.dtype.name in CRITERIA else np.float64
    dt = _float_dtype(dtype)
    if not _native_ok(standard, worst):
        gold = golden(op, inputs, attrs, shape)
        rep, score = compare_arrays(a_in, gold, standard=standard, dtype=dt, worst=worst, ulp_stats=ulp_stats,
                                    want_score=want_score)
        return rep, (gold if keep_golden else None), score
    setup = _Setup(standard, dt, {}, True, ulp_stats, max(worst, 0))
    acc = _Acc(setup)
    gold_out = np.empty(shape) if keep_golden else None
    score = np.empty(shape) if want_score else None
    lam_alt: Optional[float] = None
    if op == "softshrink_backward" and softshrink_nearest:
        lam = float(attrs.get("lambd", 0.5))
        alt = _lambd_in(np.asarray(inputs["x"]), lam)
        lam_alt = None if alt == lam else alt

    def one(index: Any, view: _View, ref: NDArray[np.float64]) -> Tuple[Dict[str, Any], Callable[[int], int],
                                                                        NDArray[Any], NDArray[np.float64]]:
        a_sl = view(a_in)[index]
        sub = tuple(a_sl.shape)
        if lam_alt is not None:
            kw = {k: (view(v)[index] if index is not Ellipsis else v) for k, v in
                  (("grad_output", inputs["grad_output"]), ("x", inputs["x"]))}
            with np.errstate(all="ignore"):
                ref = _softshrink_pick(ref.reshape(sub), _kernel_golden(op, dict(kw, lambd=lam_alt)), a_sl)
        g = np.ascontiguousarray(ref, dtype=np.float64).reshape(-1)
        a = _contig(a_sl)
        if gold_out is not None:
            view(gold_out)[index] = g.reshape(sub)
        so = None if score is None else np.empty(a.size)
        d = _core.judge_metrics(a, g, score_out=so, **setup.kw)
        if score is not None:
            view(score)[index] = so.reshape(sub)  # type: ignore[union-attr]
        return d, (lambda i: _flat_index(shape, index, view, i, sub)), a, g

    for d, to_global, a, g in map_reference(op, inputs, attrs, shape, one, kernel=True):
        acc.add(d, to_global, a, g)
    return acc.report(shape, ulp_stats), gold_out, score
