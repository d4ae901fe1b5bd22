"""Float64 NumPy golden model of the five ascendgrad operators (SPEC §2).

Every function converts its array arguments to ``float64`` (whatever their dtype: float16,
``ml_dtypes.bfloat16``, float32, integers...), computes in float64 and returns a new float64
ndarray. Nothing here imports the compiled module: this is the model the kernels are checked
against, and the forward functions are what :mod:`ascendgrad.gradcheck` differentiates
numerically.

Arguments are validated the way the library validates them (reduction names, ``dim`` range,
``lambd`` sign, label smoothing range, shapes, target range); a violation raises ``ValueError``
(a non-numeric array raises ``TypeError``).

Forward / backward pairs (``g`` is the upstream gradient):

===========================  ==================================================================
``softmax``                  y = exp(x - max) / Σ_dim exp(x - max)
``softmax_backward``         out = y ⊙ (g − Σ_dim(g ⊙ y))
``log_sigmoid``              y = min(x, 0) − log1p(exp(−abs(x)))
``log_sigmoid_backward``     g·σ(−x), z = exp(−abs(x)): x < 0 ? g/(1+z) : g·z/(1+z)
``softshrink``               x − λ (x > λ), x + λ (x < −λ), 0 otherwise, NaN for NaN
``softshrink_backward``      g where abs(x) > λ, 0 on the closed band −λ ≤ x ≤ λ, NaN for NaN x
``cross_entropy``            CE from logits (weights, ignore_index, label smoothing) + z-loss
``cross_entropy_loss_grad``  SPEC §2.4, from log_prob = log_softmax(logits)
``kl_div``                   t·(log t − x) or exp(t)·(t − x), reduced
``kl_div_backward``          −t·g·c or −exp(t)·g·c, summed back to x's shape
===========================  ==================================================================
"""

from __future__ import annotations

import math
import operator
from typing import Literal, Optional, Tuple, Union, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: What every function here returns: a new float64 array.
F64 = NDArray[np.float64]

__all__ = [
    "softmax",
    "softmax_backward",
    "log_softmax",
    "logsumexp",
    "log_sigmoid",
    "log_sigmoid_backward",
    "softshrink",
    "softshrink_backward",
    "cross_entropy",
    "cross_entropy_loss_grad",
    "kl_div",
    "kl_div_backward",
    "KL_REDUCTIONS",
]

#: KlDivBackward's int64 reduction codes (SPEC §2.5).
KL_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}
_CE_REDUCTIONS = ("none", "mean", "sum")


# --------------------------------------------------------------------------------------------
# helpers


def _f64(a, name):
    """`a` as a float64 ndarray (a copy only when a conversion is needed)."""
    try:
        arr = np.asarray(a)
        if arr.dtype.kind not in "biuf" and arr.dtype.name != "bfloat16":
            raise TypeError
        return arr.astype(np.float64, copy=False)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real numeric array, got {type(a).__name__}") from None


def _shape_str(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def _broadcast(op, name_a, a, name_b, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(
            f"{op}: the shapes of {name_a} {_shape_str(a)} and {name_b} {_shape_str(b)} "
            "cannot broadcast."
        ) from None


def _same_shape(op, name_a, a, name_b, b):
    if a.shape != b.shape:
        raise ValueError(
            f"{op}: the shape of {name_a} {_shape_str(a.shape)} must be the same as "
            f"{name_b} {_shape_str(b.shape)}."
        )


def _norm_dim(op, dim, ndim):
    """Library rule: a rank-0 tensor counts as rank 1; dim in [-n, n)."""
    try:
        d = operator.index(dim)
    except TypeError:
        raise TypeError(f"{op}: dim must be an integer, got {type(dim).__name__}") from None
    n = max(ndim, 1)
    if not -n <= d < n:
        raise ValueError(f"{op}: provided dim {d} not in the range of input size {n}.")
    return d % n


def _as_rank1(x):
    return x.reshape(1) if x.ndim == 0 else x


def _sum_to_shape(a, shape):
    """Sum a broadcast result back to `shape` (the inverse of NumPy broadcasting)."""
    shape = tuple(shape)
    lead = a.ndim - len(shape)
    if lead:
        a = a.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and a.shape[i] != 1)
    if axes:
        a = a.sum(axis=axes, keepdims=True)
    return a.reshape(shape)


# --------------------------------------------------------------------------------------------
# softmax


def softmax(x: ArrayLike, dim: int = -1) -> F64:
    """Softmax along `dim`: y = exp(x − max_dim x) / Σ_dim exp(x − max_dim x).

    A 0-D `x` counts as rank 1 (its softmax is 1). dim in [−n, n) else ValueError.
    """
    x = _f64(x, "x")
    d = _norm_dim("softmax", dim, x.ndim)
    x1 = _as_rank1(x)
    if x1.shape[d] == 0:
        return np.empty(x.shape)
    with np.errstate(invalid="ignore"):
        e = np.exp(x1 - np.max(x1, axis=d, keepdims=True))
        y = e / np.sum(e, axis=d, keepdims=True)
    return y.reshape(x.shape)


def log_softmax(x: ArrayLike, dim: int = -1) -> F64:
    """log_softmax along `dim`: x − max − log Σ_dim exp(x − max)."""
    x = _f64(x, "x")
    d = _norm_dim("log_softmax", dim, x.ndim)
    x1 = _as_rank1(x)
    if x1.shape[d] == 0:
        return np.empty(x.shape)
    with np.errstate(invalid="ignore"):
        m = np.max(x1, axis=d, keepdims=True)
        y = x1 - m - np.log(np.sum(np.exp(x1 - m), axis=d, keepdims=True))
    return y.reshape(x.shape)


def logsumexp(x: ArrayLike, dim: int = -1) -> F64:
    """log Σ_dim exp(x), stable (the `lse` that the z-loss branch consumes)."""
    x = _f64(x, "x")
    d = _norm_dim("logsumexp", dim, x.ndim)
    x1 = _as_rank1(x)
    with np.errstate(invalid="ignore"):
        m = np.max(x1, axis=d, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(x1 - m), axis=d, keepdims=True)) + m
    r = np.squeeze(r, axis=d)
    return r.reshape(()) if x.ndim == 0 else r


def softmax_backward(grad_output: ArrayLike, output: ArrayLike, dim: int = -1) -> F64:
    """SoftmaxBackward (SPEC §2.1): out = y ⊙ (g − Σ_dim(g ⊙ y)), y = softmax output.

    grad_output and output must have the same shape; a 0-D pair counts as rank 1 for `dim`.
    """
    g = _f64(grad_output, "grad_output")
    y = _f64(output, "output")
    _same_shape("softmax_backward", "gradOutput", g, "output", y)
    d = _norm_dim("softmax_backward", dim, g.ndim)
    g1, y1 = _as_rank1(g), _as_rank1(y)
    out = y1 * (g1 - np.sum(g1 * y1, axis=d, keepdims=True))
    return out.reshape(g.shape)


# --------------------------------------------------------------------------------------------
# log-sigmoid


def log_sigmoid(x: ArrayLike) -> F64:
    """log σ(x) = min(x, 0) − log1p(exp(−|x|)), stable for every x (−inf → −inf, +inf → 0)."""
    x = _f64(x, "x")
    return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))


def log_sigmoid_backward(grad_output: ArrayLike, x: ArrayLike, buffer: Optional[ArrayLike] = None) -> F64:
    """LogSigmoidBackward (SPEC §2.2): g·σ(−x) = g / (1 + eˣ), computed stably.

    z = exp(−|x|); x < 0 ? g/(1+z) : g·z/(1+z). x = −inf → g, x = +inf → 0, NaN → NaN.
    grad_output and x must have the same shape. `buffer` is accepted for parity with the
    library and ignored (as CANN).
    """
    g = _f64(grad_output, "grad_output")
    x = _f64(x, "x")
    _same_shape("log_sigmoid_backward", "gradOutput", g, "self", x)
    z = np.exp(-np.abs(x))
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(x < 0, g / (1.0 + z), g * z / (1.0 + z))


# --------------------------------------------------------------------------------------------
# softshrink


def _check_lambd(lambd):
    try:
        lam = float(lambd)
    except (TypeError, ValueError):
        raise TypeError(f"lambd must be a real number, got {type(lambd).__name__}") from None
    if not lam >= 0:  # also rejects NaN
        raise ValueError(f"lambd should be greater or equal to 0, but found to be [{lam:f}].")
    return lam


def softshrink(x: ArrayLike, lambd: float = 0.5) -> F64:
    """Softshrink: x − λ where x > λ, x + λ where x < −λ, 0 on [−λ, λ]; NaN stays NaN.

    λ < 0 or NaN → ValueError.
    """
    lam = _check_lambd(lambd)
    x = _f64(x, "x")
    with np.errstate(invalid="ignore"):
        y = np.where(x > lam, x - lam, np.where(x < -lam, x + lam, 0.0))
    return np.where(np.isnan(x), x, y)


def softshrink_backward(grad_output: ArrayLike, x: ArrayLike, lambd: float = 0.5) -> F64:
    """SoftshrinkBackward (SPEC §2.3).

    out = g where x > λ or x < −λ, 0 where −λ ≤ x ≤ λ (closed band: the gradient at ±λ is 0),
    NaN where x is NaN (whatever g). g and x broadcast (NumPy rules); the result has the
    broadcast shape. It is a select, not a product: a NaN g inside the band gives 0.
    λ < 0 or NaN → ValueError.
    """
    lam = _check_lambd(lambd)
    g = _f64(grad_output, "grad_output")
    x = _f64(x, "x")
    shape = _broadcast("softshrink_backward", "gradOutput", g.shape, "self", x.shape)
    g, x = np.broadcast_to(g, shape), np.broadcast_to(x, shape)
    out = np.where((x > lam) | (x < -lam), g, 0.0)
    return np.where(np.isnan(x), np.nan, out)


# --------------------------------------------------------------------------------------------
# cross entropy


def _ce_reduction(reduction):
    if reduction is None:  # NULL means "mean" (SPEC §2.4)
        return "mean"
    if not isinstance(reduction, str) or reduction not in _CE_REDUCTIONS:
        raise ValueError(
            f"cross_entropy: reduction should be 'none', 'mean' or 'sum', but got {reduction!r}."
        )
    return reduction


def _ce_common(op, x, target, weight, ignore_index, label_smoothing, xname):
    """Validate the shared CE arguments; return (x, safe target, mask, weight, ε)."""
    x = _f64(x, xname)
    if x.ndim != 2:
        raise ValueError(f"{op}: {xname} must be 2-D (N, C), but got shape {_shape_str(x.shape)}.")
    n, c = x.shape
    if c == 0:
        raise ValueError(f"{op}: the class dimension C of {xname} must be > 0.")
    t = np.asarray(target)
    if t.dtype.kind not in "iu":
        raise ValueError(f"{op}: target must be an integer array, but got dtype {t.dtype}.")
    if t.shape != (n,):
        raise ValueError(
            f"{op}: the shape of target {_shape_str(t.shape)} must be [{n}] for {xname} "
            f"{_shape_str(x.shape)}."
        )
    t = t.astype(np.int64)
    ii = operator.index(ignore_index)
    m = t != ii
    bad = m & ((t < 0) | (t >= c))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{op}: target {int(t[i])} at row {i} is out of bounds [0, {c}).")
    if weight is None:
        w = np.ones(c)
    else:
        w = _f64(weight, "weight")
        if w.shape != (c,):
            raise ValueError(f"{op}: the shape of weight {_shape_str(w.shape)} must be [{c}].")
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{op}: labelSmoothing must be in [0, 1], but got {eps}.")
    return x, np.where(m, t, 0), m, w, eps


@overload
def cross_entropy(
    logits: ArrayLike, target: ArrayLike, weight: Optional[ArrayLike] = ..., reduction: Optional[str] = ...,
    ignore_index: int = ..., label_smoothing: float = ..., lse_square_scale_for_zloss: float = ...,
    *, return_zloss: Literal[False] = ...,
) -> F64: ...
@overload
def cross_entropy(
    logits: ArrayLike, target: ArrayLike, weight: Optional[ArrayLike] = ..., reduction: Optional[str] = ...,
    ignore_index: int = ..., label_smoothing: float = ..., lse_square_scale_for_zloss: float = ...,
    *, return_zloss: Literal[True],
) -> Tuple[F64, F64]: ...
def cross_entropy(
    logits: ArrayLike,
    target: ArrayLike,
    weight: Optional[ArrayLike] = None,
    reduction: Optional[str] = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale_for_zloss: float = 0.0,
    *,
    return_zloss: bool = False,
) -> Union[F64, Tuple[F64, F64]]:
    """Cross-entropy forward from logits x (N, C) with integer targets t (N,).

    With lp = log_softmax(x), lse_i = log Σ_c exp(x_ic), m_i = [t_i ≠ ignore_index],
    w = weight (ones if None), ε = label_smoothing, ζ = lse_square_scale_for_zloss::

        ℓ_i = m_i·[ (1−ε)·(−w_{t_i}·lp_{i,t_i}) + (ε/C)·(−Σ_c w_c·lp_ic) ]   (PyTorch's CE)
        ζ_i = m_i·ζ·lse_i²                                                    (z-loss)
        'none': loss_i = ℓ_i + ζ_i
        'sum' : loss   = Σ_i ℓ_i + Σ_i ζ_i
        'mean': loss   = Σ_i ℓ_i / W + Σ_i ζ_i / M,   W = Σ_i m_i·w_{t_i},  M = Σ_i m_i

    'mean' with W = 0 gives NaN, as PyTorch (the backward gives zeros). The z-loss part is
    exactly 0 when ζ = 0. With ``return_zloss=True`` the result is ``(loss, zloss)``, zloss being
    the z-loss part alone (what the CANN forward returns separately).

    Why this is the forward of SPEC §2.4: with p = softmax(x), ∂lp_ic/∂x_ij = δ_cj − p_ij, so
    ∂ℓ_i/∂x_ij = m_i[(1−ε)·w_{t_i}(p_ij − δ_{j,t_i}) + (ε/C)(S_w·p_ij − w_j)] (S_w = Σ_c w_c),
    and ∂lse_i/∂x_ij = p_ij, so ∂ζ_i/∂x_ij = 2·ζ·lse_i·m_i·p_ij. Multiplying by the upstream
    gradient (and 1/W resp. 1/M for 'mean') gives SPEC's ``out_ij`` with s_i and z_i — i.e.
    :func:`cross_entropy_loss_grad` with gradZloss absent is the exact VJP of this function.
    With gradZloss given it is the VJP of (loss, zloss) with cotangents (gradLoss, gradZloss).
    """
    op = "cross_entropy"
    red = _ce_reduction(reduction)
    x, t, m, w, eps = _ce_common(op, logits, target, weight, ignore_index, label_smoothing, "logits")
    zeta = float(lse_square_scale_for_zloss)
    n, c = x.shape
    lse = logsumexp(x, 1) if n else np.zeros(0)
    lp = x - lse[:, None]
    rows = np.arange(n)
    with np.errstate(invalid="ignore", over="ignore"):
        nll = -w[t] * lp[rows, t]
        li = (1.0 - eps) * nll
        if eps != 0.0:
            li = li + (eps / c) * -(lp * w).sum(axis=1)
        li = np.where(m, li, 0.0)
        zi = np.where(m, zeta * lse**2, 0.0) if zeta != 0.0 else np.zeros(n)
        if red == "none":
            ce, z = li, zi
        elif red == "sum":
            ce, z = li.sum(), zi.sum()
        else:
            big_w = np.sum(np.where(m, w[t], 0.0))
            ce = li.sum() / big_w if big_w != 0 else np.float64(np.nan)
            if zeta == 0.0:
                z = np.float64(0.0)
            else:
                cnt = m.sum()
                z = zi.sum() / cnt if cnt else np.float64(np.nan)
        loss = np.asarray(ce + z, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    return (loss, z) if return_zloss else loss


def _grad_loss_value(op, name, a, red, n):
    g = _f64(a, name)
    if red == "none":
        if g.shape != (n,):
            raise ValueError(f"{op}: {name} must have shape [{n}] for reduction 'none', "
                             f"but got {_shape_str(g.shape)}.")
        return g
    if g.shape not in ((), (1,)):
        raise ValueError(f"{op}: {name} must be 0-D or [1] for reduction '{red}', "
                         f"but got {_shape_str(g.shape)}.")
    return np.full(n, g.reshape(()))


def cross_entropy_loss_grad(
    grad_loss: ArrayLike,
    log_prob: ArrayLike,
    target: ArrayLike,
    weight: Optional[ArrayLike] = None,
    reduction: Optional[str] = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    grad_zloss: Optional[ArrayLike] = None,
    lse_for_zloss: Optional[ArrayLike] = None,
    lse_square_scale_for_zloss: float = 0.0,
) -> F64:
    """CrossEntropyLossGrad (SPEC §2.4): gradient w.r.t. the logits, given log_prob (N, C).

    p = exp(log_prob) used as given (not renormalised), m_i = [t_i ≠ ignore_index], w = weight
    (ones if None), ε = label_smoothing, S_w = Σ_c w_c, and
    s_i = gradLoss/W ('mean', W = Σ_i w_{t_i}·m_i; W = 0 → s_i = 0, so every-row-ignored gives
    zeros, never NaN), gradLoss ('sum'), gradLoss_i ('none')::

        out_ij = m_i·s_i·[ (1−ε)·w_{t_i}·(p_ij − [j = t_i]) + (ε/C)·(S_w·p_ij − w_j) ]

    z-loss branch, only when ζ = lse_square_scale_for_zloss ≠ 0 (lse_for_zloss (N,) required):
    gz = gradLoss + gradZloss (gradZloss given) or gradLoss; z_i = gz/Σ_i m_i ('mean', 0 when
    every row is ignored), gz ('sum'), gz_i ('none')::

        out_ij += 2·ζ·lse_i·m_i·z_i·p_ij

    Ignored rows are exactly 0 (a select, as the kernel and PyTorch's NLL backward). The ε term
    is left out entirely when ε = 0 (so an inf weight does not turn it into NaN), like the
    kernel. gradLoss: (N,) for 'none', 0-D or [1] otherwise; reduction None means 'mean'.
    """
    op = "cross_entropy_loss_grad"
    red = _ce_reduction(reduction)
    lp, t, m, w, eps = _ce_common(op, log_prob, target, weight, ignore_index, label_smoothing,
                                  "logProb")
    zeta = float(lse_square_scale_for_zloss)
    n, c = lp.shape
    gl = _grad_loss_value(op, "gradLoss", grad_loss, red, n)
    lse = gz = None
    if zeta != 0.0:
        if lse_for_zloss is None:
            raise ValueError(f"{op}: lseForZloss is required when lseSquareScaleForZloss != 0.")
        lse = _f64(lse_for_zloss, "lseForZloss")
        if lse.shape != (n,):
            raise ValueError(f"{op}: the shape of lseForZloss {_shape_str(lse.shape)} must be [{n}].")
        gz = gl if grad_zloss is None else gl + _grad_loss_value(op, "gradZloss", grad_zloss, red, n)

    p = np.exp(lp)
    rows = np.arange(n)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if red == "mean":
            big_w = np.sum(np.where(m, w[t], 0.0))
            s = gl / big_w if big_w != 0 else np.zeros(n)
        else:
            s = gl
        onehot = np.zeros((n, c))
        onehot[rows, t] = 1.0
        core = (1.0 - eps) * w[t][:, None] * (p - onehot)
        if eps != 0.0:
            core = core + (eps / c) * (w.sum() * p - w[None, :])
        out = s[:, None] * core
        if zeta != 0.0:
            if red == "mean":
                cnt = m.sum()
                z = gz / cnt if cnt else np.zeros(n)
            else:
                z = gz
            out = out + (2.0 * zeta * lse * z)[:, None] * p
        return np.where(m[:, None], out, 0.0)


# --------------------------------------------------------------------------------------------
# KL divergence


def _kl_reduction(reduction):
    """Name or code → code 0..3 (none, mean, sum, batchmean); anything else → ValueError."""
    if isinstance(reduction, str):
        if reduction in KL_REDUCTIONS:
            return KL_REDUCTIONS[reduction]
    elif not isinstance(reduction, (bool, np.bool_)):
        try:
            r = operator.index(reduction)
        except TypeError:
            r = None
        if r is not None and 0 <= r <= 3:
            return r
    raise ValueError(
        "kl_div: reduction should be 'none', 'mean', 'sum', 'batchmean' or 0..3, "
        f"but got {reduction!r}."
    )


def _kl_scale(code, shape):
    """c of SPEC §2.5: 1/numel(B) (mean), 1/B[0] (batchmean; 1 for 0-D), 1 otherwise."""
    if code == 1:
        return 1.0 / max(math.prod(shape), 1)
    if code == 3:
        return 1.0 / max(shape[0], 1) if shape else 1.0
    return 1.0


def kl_div(x: ArrayLike, target: ArrayLike, reduction: Union[str, int] = "mean", log_target: bool = False) -> F64:
    """KL-divergence loss with x = log-probabilities (PyTorch's ``F.kl_div``).

    Pointwise, at the broadcast shape B of x and target::

        log_target False: L = t·(log t − x), written xlogy(t, t) − t·x so that t = 0 gives 0
        log_target True : L = exp(t)·(t − x)

    Reductions ('none' 0, 'mean' 1, 'sum' 2, 'batchmean' 3): L itself, Σ L / numel(B), Σ L,
    Σ L / B[0] (no division for 0-D B). A negative target gives NaN (log of a negative).
    """
    code = _kl_reduction(reduction)
    x = _f64(x, "self")
    t = _f64(target, "target")
    shape = _broadcast("kl_div", "self", x.shape, "target", t.shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if log_target:
            pw = np.exp(t) * (t - x)
        else:
            pw = np.where(t == 0, 0.0, t * np.log(t)) - t * x
        pw = np.broadcast_to(pw, shape)
        if code == 0:
            return np.array(pw)
        total = np.sum(pw)
        if code == 2:
            return np.asarray(total)
        if code == 1:
            return np.asarray(total / math.prod(shape) if pw.size else np.nan)
        return np.asarray(total / shape[0] if shape else total)


def kl_div_backward(
    grad_output: ArrayLike, x: ArrayLike, target: ArrayLike, reduction: Union[str, int] = "mean", log_target: bool = False
) -> F64:
    """KlDivBackward (SPEC §2.5): gradient of :func:`kl_div` w.r.t. x (self).

    B = broadcast(x, target); g must broadcast to B (else ValueError)::

        grad = −t·g·c  (log_target False)      grad = −exp(t)·g·c  (log_target True)

    c = 1/numel(B) ('mean'), 1/B[0] ('batchmean'; 1 for 0-D B), 1 ('none', 'sum'). The B-shaped
    result is summed over the broadcast dims back to x's shape. No masking of t ≤ 0.
    """
    code = _kl_reduction(reduction)
    g = _f64(grad_output, "gradOutput")
    x = _f64(x, "self")
    t = _f64(target, "target")
    shape = _broadcast("kl_div_backward", "self", x.shape, "target", t.shape)
    try:
        ok = np.broadcast_shapes(g.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"kl_div_backward: shape of gradOutput must broadcast to {_shape_str(shape)}, "
            f"but current is {_shape_str(g.shape)}."
        )
    c = _kl_scale(code, shape)
    with np.errstate(invalid="ignore", over="ignore"):
        tt = np.exp(t) if log_target else t
        grad = np.broadcast_to(-tt * g * c, shape)
    return _sum_to_shape(grad, x.shape)
