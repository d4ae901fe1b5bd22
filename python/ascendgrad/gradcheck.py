"""Finite-difference gradient checks for the five ascendgrad kernels.

Two entry points:

* :func:`check_vjp` — generic: compares a vector-Jacobian product ``vjp(v, *inputs)`` with the
  central difference of ``⟨v, forward(*inputs)⟩``, in float64.
* :func:`gradcheck` — the five library kernels by name, each checked against the float64 forward
  of :mod:`ascendgrad.reference`. The kernel is imported lazily, so this module imports without
  the compiled extension.

Both return a :class:`GradcheckResult` (true when the check passed) whose ``str`` is a short
report naming the worst elements — never a dump of a Jacobian.

Use it as ``from ascendgrad import gradcheck; gradcheck.gradcheck("softmax_backward", ...)``
(the module is not callable itself).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from . import _args, reference as _ref

__all__ = ["check_vjp", "gradcheck", "GradcheckResult", "Probe", "Element", "OPS", "dtype_tolerance"]

#: Operators that :func:`gradcheck` knows.
OPS = (
    "softmax_backward",
    "log_sigmoid_backward",
    "softshrink_backward",
    "cross_entropy_loss_grad",
    "kl_div_backward",
)

FAST_PROBES = 4  # random directions per fast check (PyTorch uses 1; more probes cost 2 forwards each)
FAST_TOL_FACTOR = 3.0  # probe tolerance = FAST_TOL_FACTOR · RMS(per-element tolerance)
AUTO_FAST_NUMEL = 2048  # fast_mode=None: slow (element-wise) up to this many input elements
SLOW_RERUN_MAX = 4096  # element-wise rerun after a failed fast check covers at most this many
DTYPE_TOL_FACTOR = 16  # low-precision tolerance = DTYPE_TOL_FACTOR · unit roundoff (see gradcheck)
KINK_MARGIN = 10  # softshrink inputs keep ||x| − λ| ≥ KINK_MARGIN · eps
SHOW_WORST = 5  # elements listed by str(result)


class Probe(NamedTuple):
    """One fast-mode probe along a random unit direction u."""

    analytical: float  # ⟨u, vjp(v)⟩
    numerical: float  # (⟨v, f(x + eps·u)⟩ − ⟨v, f(x − eps·u)⟩) / (2·eps)
    tol: float

    @property
    def error(self) -> float:
        return abs(self.analytical - self.numerical)

    @property
    def ok(self) -> bool:
        return bool(self.error <= self.tol)  # NaN → False


class Element(NamedTuple):
    """One compared element of the gradient (an index into inputs[wrt])."""

    index: Tuple[int, ...]
    numerical: float
    analytical: float
    abs_err: float
    tol: float  # atol + rtol·|numerical|


@dataclasses.dataclass
class GradcheckResult:
    """Outcome of a gradient check; truthy when it passed.

    ``max_abs_err``/``max_rel_err`` are over the compared elements (rel = abs(a − n) / abs(n); 0/0 is
    0, x/0 is inf); after a passing fast check they are over the probes instead, and
    ``worst_index`` is None. ``worst`` holds up to 5 elements, most out of tolerance first.
    """

    passed: bool
    max_abs_err: float
    max_rel_err: float
    worst_index: Optional[Tuple[int, ...]]
    op: str
    dtype: str
    shape: Tuple[int, ...]
    options: Dict[str, Any]
    eps: float
    atol: float
    rtol: float
    fast_mode: bool
    seed: int
    worst: Tuple[Element, ...] = ()
    probes: Tuple[Probe, ...] = ()
    checked: int = 0  # elements compared element-wise (0 when only probes ran)
    note: str = ""

    def __bool__(self) -> bool:
        return bool(self.passed)

    def __str__(self) -> str:
        opts = "".join(f", {k}={_short(v)}" for k, v in self.options.items())
        mode = "fast" if self.fast_mode else "slow"
        lines = [
            f"gradcheck {self.op}[{self.dtype}] shape={tuple(self.shape)}{opts}: "
            f"{'PASSED' if self.passed else 'FAILED'} ({mode} mode, eps={self.eps:g}, "
            f"atol={self.atol:.3g}, rtol={self.rtol:.3g}, seed={self.seed})",
            f"  max_abs_err={self.max_abs_err:.3g} max_rel_err={self.max_rel_err:.3g}"
            + (f" worst_index={self.worst_index}" if self.worst_index is not None else ""),
        ]
        if self.probes:
            bad = [p for p in self.probes if not p.ok]
            top = max(self.probes, key=lambda p: _ratio(p.error, p.tol))
            lines.append(
                f"  fast probes: {len(self.probes) - len(bad)}/{len(self.probes)} within tolerance; "
                f"worst |<u,vjp> - D_u| = {top.error:.3g} (tol {top.tol:.3g})"
            )
        if self.worst:
            lines.append(f"  worst elements of {self.checked} compared (index: numerical, analytical, |err| / tol):")
            for e in self.worst[:SHOW_WORST]:
                lines.append(
                    f"    {e.index}: {e.numerical:.6g}, {e.analytical:.6g}, {e.abs_err:.3g} / {e.tol:.3g}"
                )
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        from . import _display as D

        mode = "fast" if self.fast_mode else "slow"
        opts = "".join(f", {k}={_short(v, 24)}" for k, v in self.options.items())
        head = (f"<GradcheckResult: {'PASSED' if self.passed else 'FAILED'} {self.op}[{self.dtype}]"
                f" shape={tuple(self.shape)}{opts}, {mode} mode>")
        nums = (f"max_abs_err={D.num(self.max_abs_err, 3)} max_rel_err={D.num(self.max_rel_err, 3)}"
                f" (atol={self.atol:.3g}, rtol={self.rtol:.3g})")
        if self.probes:
            nums += f"; fast probes {sum(p.ok for p in self.probes)}/{len(self.probes)} within tolerance"
        worst = ""
        if self.worst:
            e = self.worst[0]
            worst = (f"worst {e.index} of {self.checked}: numerical {e.numerical:.6g}, analytical {e.analytical:.6g},"
                     f" |err| {e.abs_err:.3g} / tol {e.tol:.3g}")
        return D.lines(head, nums, worst, f"note: {self.note}" if self.note else "")

    def _repr_html_(self) -> str:
        from . import _display as D

        mode = "fast" if self.fast_mode else "slow"
        title = D.Raw(D.verdict(self.passed, "PASSED" if self.passed else "FAILED")
                      + D.esc(f" {self.op}[{self.dtype}] shape {tuple(self.shape)} · {mode} mode"))
        summary = D.pairs([("max abs err", D.num(self.max_abs_err)), ("max rel err", D.num(self.max_rel_err)),
                           ("atol / rtol", f"{self.atol:.3g} / {self.rtol:.3g}"), ("eps", f"{self.eps:g}"),
                           ("seed", self.seed), ("elements compared", self.checked),
                           *((k, _short(v)) for k, v in self.options.items())], caption="gradcheck")
        probes = D.table(("probe", "analytical <u, vjp>", "numerical D_u", "|error|", "tol", "verdict"),
                         [(i, f"{p.analytical:.6g}", f"{p.numerical:.6g}", D.num(p.error, 3), D.num(p.tol, 3),
                           D.verdict(p.ok)) for i, p in enumerate(self.probes)],
                         caption="fast-mode probes") if self.probes else ""
        worst = D.table(("index", "numerical", "analytical", "|err|", "tol", "|err| / tol", "verdict"),
                        [(e.index, f"{e.numerical:.6g}", f"{e.analytical:.6g}", D.num(e.abs_err, 3),
                          D.num(e.tol, 3), D.num(_ratio(e.abs_err, e.tol), 3), D.verdict(bool(e.abs_err <= e.tol)))
                         for e in self.worst[:SHOW_WORST]],
                        caption=f"worst elements of {self.checked} compared") if self.worst else ""
        return str(D.report("GradcheckResult", title, [summary, probes, worst],
                            notes=[f"note: {self.note}" if self.note else ""]))


def _short(v: Any, limit: int = 40) -> str:
    s = repr(v.tolist() if isinstance(v, np.ndarray) else v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _ratio(err: float, tol: float) -> float:
    """How far out of tolerance: err/tol, NaN → inf, 0/0 → 0."""
    if not err == err:
        return math.inf
    if tol > 0:
        return err / tol
    return 0.0 if err == 0 else math.inf


# --------------------------------------------------------------------------------------------
# generic check


def _draw_cotangent(rng, shape):
    # Entries ±U[0.5, 1.5]: random signs, magnitudes bounded away from 0 so that no output's
    # contribution (and so no error in it) is scaled down to nothing.
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 1.5, size=shape)


def _compare(flat_idx, n, a_flat, atol, rtol, shape):
    """Element-wise allclose of the analytical vs numerical values at `flat_idx`."""
    a = a_flat[flat_idx]
    err = np.abs(a - n)
    tol = atol + rtol * np.abs(n)
    ok = err <= tol  # NaN → False
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(tol > 0, err / np.where(tol > 0, tol, 1.0), np.where(err == 0, 0.0, np.inf))
        ratio = np.where(np.isnan(err), np.inf, ratio)
        rel = np.where(n != 0, err / np.where(n != 0, np.abs(n), 1.0), np.where(err == 0, 0.0, np.inf))
        rel = np.where(np.isnan(err), np.nan, rel)
    order = np.argsort(-ratio, kind="stable")[:SHOW_WORST]
    worst = tuple(
        Element(tuple(int(i) for i in np.unravel_index(flat_idx[k], shape)), float(n[k]), float(a[k]),
                float(err[k]), float(tol[k]))
        for k in order
    )
    max_abs = float(np.max(err)) if err.size else 0.0
    max_rel = float(np.max(rel)) if rel.size else 0.0
    return bool(np.all(ok)), max_abs, max_rel, worst


def _numerical(fdot, x, eps, flat_idx):
    """Central differences of ⟨v, f⟩ w.r.t. the elements `flat_idx` of x (float64)."""
    xp = x.copy()
    flat = xp.reshape(-1)  # a view: xp is contiguous
    out = np.empty(len(flat_idx))
    for k, j in enumerate(flat_idx):
        orig = flat[j]
        hi, lo = orig + eps, orig - eps
        flat[j] = hi
        fp = fdot(xp)
        flat[j] = lo
        fm = fdot(xp)
        flat[j] = orig
        out[k] = fdot.diff(fp, fm) / (hi - lo)  # the step actually taken, not 2·eps
    return out


class _Dot:
    """x ↦ f(x) (float64) and ⟨v, f(x+) − f(x−)⟩: differences taken before the dot product."""

    def __init__(self, forward, inputs, wrt, v):
        self.forward, self.inputs, self.wrt, self.v = forward, inputs, wrt, v

    def __call__(self, xv):
        args = list(self.inputs)
        args[self.wrt] = xv
        y = np.asarray(self.forward(*args), dtype=np.float64)
        if self.v is not None and y.shape != self.v.shape:
            raise ValueError(f"forward returned shape {y.shape}, expected {self.v.shape}")
        return y

    def diff(self, fp, fm):
        return float(np.sum(self.v * (fp - fm)))


def check_vjp(
    forward: Callable[..., Any],
    vjp: Callable[..., Any],
    inputs: Sequence[Any],
    wrt: int = 0,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    fast_mode: Optional[bool] = False,
    seed: int = 0,
    grad_output: Any = None,
) -> GradcheckResult:
    """Check ``vjp`` against central differences of ``forward`` w.r.t. ``inputs[wrt]``.

    ``forward(*inputs) -> ndarray``; ``vjp(v, *inputs) -> ndarray`` shaped like ``inputs[wrt]``.
    The upstream gradient v is drawn from ``np.random.default_rng(seed)`` (entries ±U[0.5, 1.5])
    unless ``grad_output`` is given. The forward is always evaluated on float64 copies of
    ``inputs[wrt]``; ``vjp`` receives the inputs (and ``grad_output``) as given.

    Slow mode (element-wise): for every element j, n_j = (⟨v, f(x + eps·e_j)⟩ − ⟨v, f(x −
    eps·e_j)⟩) / (2·eps) (the divisor is the step actually representable), compared like
    ``allclose``: abs(a_j − n_j) ≤ atol + rtol·abs(n_j). Costs 2·numel forward calls.

    Fast mode (``fast_mode=True``; ``None`` = fast above 2048 elements): 4 random unit
    directions u (Gaussian, normalised); each compares ⟨u, a⟩ with the directional central
    difference of ⟨v, f⟩ along u. The tolerance of a probe is 3·RMS_j(atol + rtol·abs(a_j)): if every
    element met its tolerance τ_j, the projected error ⟨u, e⟩ of a random unit u has standard
    deviation ‖e‖₂/√numel ≤ RMS(τ), so a 3σ bound (rather than PyTorch's worst-case
    atol·Σu·Σv, which grows like √numel and hides 1 % errors in large inputs). When a probe
    fails the element-wise check is rerun — over every element if there are at most 4096, else
    over the 2048 with largest abs(a) plus 2048 random others — to name the worst elements; a full
    element-wise rerun that passes has the last word (``note`` says so), a partial one cannot
    clear the failure. Sensitivity: an error coherent with the gradient (a wrong scale s) shows
    in a probe as s·⟨u, n⟩, so a 1 % scale error at rtol 1e-3 escapes all 4 probes with
    probability ≈ 0.5 % (a gross error essentially never); slow mode has no such blind spot.
    """
    inputs = list(inputs)
    x0 = np.array(inputs[wrt], dtype=np.float64)  # a contiguous float64 copy
    rng = np.random.default_rng(seed)
    fdot = _Dot(forward, inputs, wrt, None)
    y0 = fdot(x0)
    if grad_output is None:
        v = _draw_cotangent(rng, y0.shape)
        v_in = v
    else:
        v_in = grad_output
        v = np.array(grad_output, dtype=np.float64)
        if v.shape != y0.shape:
            raise ValueError(f"grad_output has shape {v.shape}, forward returns {y0.shape}")
    fdot.v = v
    numel = x0.size
    fast = numel > AUTO_FAST_NUMEL if fast_mode is None else bool(fast_mode)
    meta = dict(
        op=getattr(forward, "__name__", "forward"),
        dtype=str(np.asarray(inputs[wrt]).dtype),
        shape=tuple(x0.shape),
        options={},
        eps=float(eps),
        atol=float(atol),
        rtol=float(rtol),
        fast_mode=fast,
        seed=int(seed) if seed is not None else 0,
    )

    a = np.array(vjp(v_in, *inputs), dtype=np.float64)
    if a.shape != x0.shape:
        return GradcheckResult(False, math.inf, math.inf, None, **meta,
                               note=f"analytical gradient has shape {a.shape}, expected {x0.shape}")
    a_flat = a.reshape(-1)
    if numel == 0:
        return GradcheckResult(True, 0.0, 0.0, None, **meta)

    probes = ()
    note = ""
    if fast:
        tau = atol + rtol * np.abs(a_flat)
        tol = FAST_TOL_FACTOR * float(np.sqrt(np.mean(tau * tau)))
        plist = []
        for _ in range(FAST_PROBES):
            u = rng.standard_normal(x0.shape)
            u /= np.linalg.norm(u)
            hi, lo = x0 + eps * u, x0 - eps * u
            num = fdot.diff(fdot(hi), fdot(lo)) / (2 * eps)
            ana = float(np.sum(a * (hi - lo))) / (2 * eps)  # the step actually taken
            plist.append(Probe(ana, num, tol))
        probes = tuple(plist)
        if all(p.ok for p in probes):
            max_abs = max(p.error for p in probes)
            max_rel = max(_ratio(p.error, abs(p.numerical)) for p in probes)
            return GradcheckResult(True, max_abs, max_rel, None, **meta, probes=probes)
        # A probe failed: find the guilty elements element-wise.
        if numel <= SLOW_RERUN_MAX:
            flat_idx = np.arange(numel)
        else:
            half = SLOW_RERUN_MAX // 2
            top = np.argsort(-np.abs(a_flat), kind="stable")[:half]
            rest = np.setdiff1d(np.arange(numel), top)
            flat_idx = np.sort(np.concatenate([top, rng.choice(rest, SLOW_RERUN_MAX - half, replace=False)]))
    else:
        flat_idx = np.arange(numel)

    n = _numerical(fdot, x0, eps, flat_idx)
    ok, max_abs, max_rel, worst = _compare(flat_idx, n, a_flat, atol, rtol, x0.shape)
    passed = ok
    if fast:
        if ok and len(flat_idx) == numel:
            note = "a fast probe exceeded its statistical tolerance, but the full element-wise check passes"
        elif ok:
            passed = False
            note = (f"fast probes failed; the element-wise rerun on {len(flat_idx)} of {numel} "
                    "elements found no bad element (the bad ones are elsewhere)")
        elif len(flat_idx) < numel:
            note = f"element-wise rerun on {len(flat_idx)} of {numel} elements"
    return GradcheckResult(passed, max_abs, max_rel, worst[0].index if worst else None, **meta,
                           worst=worst, probes=probes, checked=len(flat_idx), note=note)


# --------------------------------------------------------------------------------------------
# the five kernels


def _dtype(dtype):
    """(numpy dtype, canonical name) for float64 / float32 / float16 / bfloat16."""
    import ml_dtypes

    aliases = {"double": "float64", "f64": "float64", "float": "float32", "f32": "float32",
               "half": "float16", "f16": "float16", "bf16": "bfloat16"}
    if isinstance(dtype, str):
        name = aliases.get(dtype.lower(), dtype.lower())
        table = {"float64": np.float64, "float32": np.float32, "float16": np.float16,
                 "bfloat16": ml_dtypes.bfloat16}
        if name not in table:
            raise ValueError(f"dtype must be float64, float32, float16 or bfloat16, got {dtype!r}")
        dt = np.dtype(table[name])
    else:
        dt = np.dtype(dtype)
    if dt.name not in ("float64", "float32", "float16", "bfloat16"):
        raise ValueError(f"dtype must be float64, float32, float16 or bfloat16, got {dt.name}")
    return dt, dt.name


def dtype_tolerance(dtype: Any, grad_scale: float) -> Tuple[float, float]:
    """(atol, rtol) that :func:`gradcheck` uses for a kernel run at `dtype`.

    float64: PyTorch's defaults, atol 1e-5 and rtol 1e-3 (the finite difference is the limit).
    float32 / float16 / bfloat16, with u the unit roundoff (2⁻²⁴, 2⁻¹¹, 2⁻⁸)::

        rtol = 16·u,   atol = 16·u·grad_scale + 1e-8

    grad_scale = max abs(reference gradient) at the same inputs (float64 golden model, so a wrong
    kernel cannot widen its own tolerance). Why: the kernel reads inputs rounded to the dtype
    (each off by ≤ u relative), computes in float32 and rounds the result once (≤ u relative);
    through the formulas of SPEC §2 this moves an element by a few u of itself or of the
    gradient's scale (cancellation in g − Σ g·y, p − 1, etc.); 16 leaves room for that and for
    float32 accumulation over long rows. 1e-8 absorbs the float64 finite-difference noise.
    """
    import ml_dtypes

    dt, name = _dtype(dtype)
    if name == "float64":
        return 1e-5, 1e-3
    u = float(ml_dtypes.finfo(dt).eps) / 2
    return DTYPE_TOL_FACTOR * u * float(grad_scale) + 1e-8, DTYPE_TOL_FACTOR * u


def _round(a, dt):
    """Values of `a` rounded to dtype `dt`, as float64."""
    return np.asarray(a, dtype=np.float64).astype(dt).astype(np.float64)


def _at(a, dt, strided):
    """`a` as a `dt` array for the kernel; strided: a non-contiguous, negatively strided view."""
    arr = np.asarray(a).astype(dt)
    if not strided or arr.ndim == 0:
        return arr
    buf = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=dt)
    view = buf[..., ::-2]  # every other element, last axis reversed
    view[...] = arr
    return view


class _Case(NamedTuple):
    x: np.ndarray  # the point (float64, values representable in the dtype)
    forward: Any  # x ↦ float64 output
    kernel_vjp: Any  # (v, x) ↦ kernel gradient
    ref_vjp: Any  # (v, x) ↦ golden-model gradient (float64)
    v: np.ndarray  # upstream gradient, float64, values representable in the dtype


def _take(options, op, defaults):
    unknown = set(options) - set(defaults)
    if unknown:
        raise TypeError(f"gradcheck({op!r}): unknown option(s) {sorted(unknown)}; "
                        f"known: {sorted(defaults)}")
    return {**defaults, **options}


def _f(a):
    return np.asarray(a, dtype=np.float64)


def _case_softmax(ag, rng, dt, shape, eps, o):
    o = _take(o, "softmax_backward", {"dim": -1, "strided": False})
    shape = (4, 7) if shape is None else shape
    dim, st = o["dim"], o["strided"]
    x = _round(2.0 * rng.standard_normal(shape), dt)
    v = _round(_draw_cotangent(rng, shape), dt)

    def forward(x_):
        return _ref.softmax(x_, dim)

    def kernel_vjp(v_, x_):
        y = _at(_ref.softmax(x_, dim), dt, st)  # the forward's output, stored at the dtype
        return _f(ag.softmax_backward(_at(v_, dt, st), y, dim))

    def ref_vjp(v_, x_):
        return _ref.softmax_backward(v_, _ref.softmax(x_, dim), dim)

    return _Case(x, forward, kernel_vjp, ref_vjp, v)


def _case_log_sigmoid(ag, rng, dt, shape, eps, o):
    o = _take(o, "log_sigmoid_backward", {"buffer": False, "strided": False})
    shape = (4, 6) if shape is None else shape
    st = o["strided"]
    # |x| ≤ 6: log-sigmoid's curvature stays moderate there, so the central difference is
    # accurate to ~eps², and σ(−x) ≥ 2.5e-3 stays far from float16's subnormals.
    x = _round(rng.uniform(-6.0, 6.0, shape), dt)
    v = _round(_draw_cotangent(rng, shape), dt)

    def kernel_vjp(v_, x_):
        # The buffer's contents are ignored (as CANN): NaNs prove it.
        buf = _at(np.full(np.shape(x_), np.nan), dt, st) if o["buffer"] else None
        return _f(ag.log_sigmoid_backward(_at(v_, dt, st), _at(x_, dt, st), buf))

    return _Case(x, _ref.log_sigmoid, kernel_vjp, lambda v_, x_: _ref.log_sigmoid_backward(v_, x_), v)


def _softshrink_points(rng, shape, lam, dt, margin):
    """Samples of x with every ||x| − λ| ≥ margin after rounding to dt (no kink within reach
    of the ±eps step). Offenders are moved to ±(λ + max(0.5, 16·u·λ)), then rounded again."""
    import ml_dtypes

    x = _round(rng.uniform(-(lam + 2.0), lam + 2.0, shape), dt)
    bad = np.abs(np.abs(x) - lam) < margin
    if bad.any():
        u = float(ml_dtypes.finfo(dt).eps) / 2
        away = lam + max(0.5, 16 * u * lam)
        x[bad] = _round(np.where(x[bad] >= 0, away, -away), dt)
    if (np.abs(np.abs(x) - lam) < margin).any():  # cannot happen; guards the sampling rule
        raise RuntimeError("softshrink sampling left a point within the kink margin")
    return x


def _case_softshrink(ag, rng, dt, shape, eps, o):
    o = _take(o, "softshrink_backward", {"lambd": 0.5, "grad_shape": None, "strided": False})
    shape = (4, 6) if shape is None else tuple(shape)
    lam = _ref._check_lambd(o["lambd"])
    st = o["strided"]
    gshape = shape if o["grad_shape"] is None else tuple(o["grad_shape"])
    bshape = np.broadcast_shapes(shape, gshape)
    x = _softshrink_points(rng, shape, lam, dt, KINK_MARGIN * eps)
    g = _round(_draw_cotangent(rng, gshape), dt)
    # The forward is softshrink(x) broadcast to B, whose VJP w.r.t. x sums the kernel's B-shaped
    # output back to x's shape; a g smaller than B is the cotangent broadcast_to(g, B).
    v = np.broadcast_to(g, bshape)

    def forward(x_):
        return np.broadcast_to(_ref.softshrink(x_, lam), bshape)

    def kernel_vjp(v_, x_):
        out = _f(ag.softshrink_backward(_at(g, dt, st), _at(x_, dt, st), lam))
        return _ref._sum_to_shape(out, np.shape(x_))

    def ref_vjp(v_, x_):
        return _ref._sum_to_shape(_ref.softshrink_backward(g, x_, lam), np.shape(x_))

    return _Case(x, forward, kernel_vjp, ref_vjp, v)


def _case_cross_entropy(ag, rng, dt, shape, eps, o):
    o = _take(o, "cross_entropy_loss_grad", {
        "reduction": "mean", "weight": False, "ignore_index": None, "label_smoothing": 0.0,
        "lse_square_scale_for_zloss": 0.0, "grad_zloss": False, "target_dtype": "int64",
        "strided": False})
    shape = (6, 5) if shape is None else tuple(shape)
    if len(shape) != 2:
        raise ValueError(f"cross_entropy_loss_grad: shape must be (N, C), got {shape}")
    n, c = shape
    red = _ref._ce_reduction(o["reduction"])
    eps_ls, zeta, st = float(o["label_smoothing"]), float(o["lse_square_scale_for_zloss"]), o["strided"]
    x = _round(1.5 * rng.standard_normal(shape), dt)
    target = rng.integers(0, c, n)
    ii = -100
    if o["ignore_index"] is not None:
        # Ignore about a third of the rows (at least one), keep at least one row alive.
        ii = int(o["ignore_index"])
        k = max(1, n // 3) if n > 1 else 0
        target[rng.choice(n, k, replace=False)] = ii
        if n and (target == ii).all():
            target[0] = (ii + 1) % c if 0 <= ii < c else 0
    target = target.astype(o["target_dtype"])
    w = o["weight"]
    if w is True:
        w = rng.uniform(0.5, 1.5, c).astype(np.float32)  # SPEC: weight is float32
    elif w is False or w is None:
        w = None
    else:
        w = np.asarray(w, dtype=np.float32)
    w64 = None if w is None else _f(w)
    two = bool(o["grad_zloss"])
    lshape = (n,) if red == "none" else ()
    v = _round(_draw_cotangent(rng, ((2,) if two else ()) + lshape), dt)
    kw = dict(reduction=red, ignore_index=ii, label_smoothing=eps_ls)

    def forward(x_):
        loss, z = _ref.cross_entropy(x_, target, w64, lse_square_scale_for_zloss=zeta,
                                     return_zloss=True, **kw)
        # With grad_zloss the forward has two outputs, (loss, zloss), whose cotangents are
        # (gradLoss, gradZloss).
        return np.stack([loss, z]) if two else loss

    def split(v_):
        return (v_[0], v_[1]) if two else (v_, None)

    def kernel_vjp(v_, x_):
        gl, gz = split(_f(v_))
        lse = _at(_ref.logsumexp(x_, 1), dt, st) if zeta != 0 else None
        return _f(ag.cross_entropy_loss_grad(
            _at(gl, dt, st), _at(_ref.log_softmax(x_, 1), dt, st), _at(target, target.dtype, st),
            None if w is None else _at(w, w.dtype, st),
            grad_zloss=None if gz is None else _at(gz, dt, st), lse_for_zloss=lse,
            lse_square_scale_for_zloss=zeta, **kw))

    def ref_vjp(v_, x_):
        gl, gz = split(_f(v_))
        return _ref.cross_entropy_loss_grad(
            gl, _ref.log_softmax(x_, 1), target, w64, grad_zloss=gz,
            lse_for_zloss=_ref.logsumexp(x_, 1), lse_square_scale_for_zloss=zeta, **kw)

    return _Case(x, forward, kernel_vjp, ref_vjp, v)


def _case_kl_div(ag, rng, dt, shape, eps, o):
    o = _take(o, "kl_div_backward", {"reduction": "mean", "log_target": False, "target_shape": None,
                                      "grad_shape": None, "strided": False})
    shape = (3, 4) if shape is None else tuple(shape)
    red, lt, st = o["reduction"], bool(o["log_target"]), o["strided"]
    code = _ref._kl_reduction(red)
    tshape = shape if o["target_shape"] is None else tuple(o["target_shape"])
    bshape = np.broadcast_shapes(shape, tshape)
    x = _round(rng.standard_normal(shape), dt)
    if lt:
        t = _round(rng.uniform(-3.0, 0.5, tshape), dt)
    else:
        t = rng.uniform(0.05, 1.0, tshape)
        t[rng.random(tshape) < 0.1] = 0.0  # exact zeros: the xlogy(0, 0) = 0 corner
        t = _round(t, dt)
    oshape = bshape if code == 0 else ()
    gshape = oshape if o["grad_shape"] is None else tuple(o["grad_shape"])
    g = _round(_draw_cotangent(rng, gshape), dt)
    if code == 0:
        v = np.broadcast_to(g, bshape)  # g broadcast to B is the cotangent of the B-shaped loss
    elif g.size == 1:
        v = g.reshape(())
    else:
        raise ValueError(f"kl_div_backward: a reduced loss has one element; grad_shape {gshape} has {g.size}")

    def forward(x_):
        return _ref.kl_div(x_, t, red, lt)

    def kernel_vjp(v_, x_):
        return _f(ag.kl_div_backward(_at(g, dt, st), _at(x_, dt, st), _at(t, dt, st), red, lt))

    def ref_vjp(v_, x_):
        return _ref.kl_div_backward(g, x_, t, red, lt)

    return _Case(x, forward, kernel_vjp, ref_vjp, v)


_CASES = {
    "softmax_backward": _case_softmax,
    "log_sigmoid_backward": _case_log_sigmoid,
    "softshrink_backward": _case_softshrink,
    "cross_entropy_loss_grad": _case_cross_entropy,
    "kl_div_backward": _case_kl_div,
}


def gradcheck(op: str, *, dtype: Any = "float64", shape: Optional[Sequence[int]] = None, seed: int = 0,
              fast_mode: Optional[bool] = None, eps: float = 1e-6, atol: Optional[float] = None,
              rtol: Optional[float] = None, **options: Any) -> GradcheckResult:
    """Check the library kernel `op` against finite differences of its float64 forward.

    op: one of :data:`OPS`. The forward is the golden model's (``ascendgrad.reference``) and the
    VJP under test is the kernel, run at `dtype` on inputs rounded to it; the numerical gradient
    is the float64 central difference at the rounded inputs (and the rounded upstream gradient),
    so only the kernel's own arithmetic and its result rounding count as error. Tolerances, unless
    `atol`/`rtol` are given: :func:`dtype_tolerance` — float64 atol 1e-5, rtol 1e-3; otherwise
    rtol = 16·u, atol = 16·u·max|gradient| + 1e-8 with u the dtype's unit roundoff.
    fast_mode None = automatic (fast above 2048 input elements); see :func:`check_vjp`.

    Options (defaults in brackets), all operators: ``strided`` [False] feeds every non-0-D array
    (targets and weights included) to the kernel as a non-contiguous, negatively strided view.

    * softmax_backward — shape [(4, 7)], ``dim`` [−1]. Differentiates softmax(x); the kernel gets
      y = softmax(x) rounded to the dtype.
    * log_sigmoid_backward — shape [(4, 6)], ``buffer`` [False: None; True: a NaN-filled buffer,
      which must be ignored]. x ~ U(−6, 6): no extremes where the difference quotient degrades.
    * softshrink_backward — shape [(4, 6)], ``lambd`` [0.5], ``grad_shape`` [= shape] (g and x
      broadcast; the forward is softshrink(x) broadcast to B, the kernel's B-shaped result is
      summed back to x's shape). x ~ U(−λ−2, λ+2) with every ||x| − λ| ≥ 10·eps *after* rounding
      to the dtype (offenders moved to ±(λ + max(0.5, 16·u·λ))), so x ± eps never crosses a kink.
    * cross_entropy_loss_grad — shape (N, C) [(6, 5)], ``reduction`` ['mean'], ``weight``
      [False; True: random float32 in [0.5, 1.5]; or an array], ``ignore_index`` [None: −100 and
      no row ignored; an int: about N/3 rows (≥ 1, never all) get that target],
      ``label_smoothing`` [0], ``lse_square_scale_for_zloss`` [0], ``grad_zloss`` [False; True:
      the forward is (loss, zloss) and the kernel also gets gradZloss], ``target_dtype``
      ['int64']. Differentiates :func:`ascendgrad.reference.cross_entropy` w.r.t. the logits; the kernel is
      fed log_prob = log_softmax(logits) (and lse = logsumexp(logits) when ζ ≠ 0) at the dtype.
    * kl_div_backward — shape of x [(3, 4)], ``reduction`` ['mean'; name or 0..3],
      ``log_target`` [False], ``target_shape`` [= shape], ``grad_shape`` [B for 'none', ()
      otherwise; a reduced loss needs a one-element g]. Differentiates w.r.t. x (self); targets
      are U(0.05, 1) with ~10 % exact zeros, or U(−3, 0.5) for log_target.
    """
    if _args.string(op, "op") not in _CASES:
        raise ValueError(f"unknown operator {op!r}; known: {', '.join(OPS)}")
    seed, eps = _args.integer(seed, "seed"), _args.real(eps, "eps")
    atol, rtol = _args.optional_real(atol, "atol"), _args.optional_real(rtol, "rtol")
    fast_mode = _args.optional_bool(fast_mode, "fast_mode")
    if shape is not None:
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise TypeError(f"shape must be a sequence of ints, got {type(shape).__name__}")
        shape = tuple(_args.integer(s, "shape") for s in shape)
    try:
        import ascendgrad as ag
    except ImportError as e:
        raise ImportError(f"gradcheck({op!r}) needs the compiled ascendgrad package: {e}") from e
    dt, name = _dtype(dtype)
    # Inputs come from their own stream, so that check_vjp's probe directions (drawn from
    # default_rng(seed)) are not the input values themselves.
    rng = np.random.default_rng([seed, 0x67AD])
    case = _CASES[op](ag, rng, dt, shape, eps, dict(options))
    if atol is None or rtol is None:
        scale = float(np.max(np.abs(case.ref_vjp(case.v, case.x)), initial=0.0))
        d_atol, d_rtol = dtype_tolerance(dt, scale)
        atol = d_atol if atol is None else atol
        rtol = d_rtol if rtol is None else rtol
    res = check_vjp(case.forward, case.kernel_vjp, [case.x], 0, eps=eps, atol=atol, rtol=rtol,
                    fast_mode=fast_mode, seed=seed, grad_output=case.v)
    return dataclasses.replace(res, op=op, dtype=name, shape=tuple(case.x.shape), options=dict(options))
