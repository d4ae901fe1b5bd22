"""The NumPy API: each function validates through the aclnn C API and runs the kernel with
the GIL released. Inputs are read in place (any strides, negative ones included); results are
new arrays unless ``out=`` is given. Errors raise :class:`ascendgrad.AclnnError` (a
``ValueError`` with ``.status``), its message naming these functions' arguments (``x``, not the C
API's ``self``); non-numeric input or an option of the wrong Python type raises a one-line
``TypeError`` naming the argument (``dim must be an int, got float``).

Python numbers and sequences have no dtype of their own and take that of the array they go
with; NumPy scalars, arrays and tensors keep theirs (NumPy 2's NEP 50). Where an operator needs
equal float dtypes, a typed input of another one is ``AclnnError`` 161002 saying what to pass.

Inputs may be NumPy arrays, PyTorch tensors (bfloat16 included; ones that require grad are
detached), any DLPack or ``__array__`` object, or Python numbers and sequences; all but the
last are read where they lie (:func:`ascendgrad.asarray`). ``out=`` may be an ndarray or a
PyTorch CPU tensor / DLPack array, written in place; the function returns an ndarray over the
result's memory (for a tensor ``out``, a view of it).
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike, NDArray

from . import _core
from ._interop import OutArray


def softmax_backward(
    grad_output: ArrayLike, output: ArrayLike, dim: int = -1, *, out: OutArray | None = None
) -> NDArray[Any]:
    """Gradient of softmax with respect to its input.

    ``out = output * (grad_output - sum(grad_output * output, axis=dim, keepdims=True))``

    Args:
        grad_output: upstream gradient g, any shape of rank 0..8; float16, bfloat16
            (``ml_dtypes.bfloat16``), float32 or float64.
        output: the softmax forward's result y; same shape and dtype as ``grad_output``.
        dim: the softmax dimension, in ``[-n, n)`` (a 0-D input counts as 1-D).
        out: optional array of ``grad_output``'s shape and any of the four float dtypes;
            may be ``grad_output`` or ``output`` itself (in place).

    Returns:
        The gradient, of ``grad_output``'s dtype unless ``out`` is given. Half types are
        computed in float32, float64 in float64, and rounded once into the result.

    Raises:
        AclnnError: status 161002 for a dim out of range, mismatched shapes or dtypes,
            unsupported dtypes, rank > 8, or ``out`` partially overlapping an input.
        TypeError: non-numeric input.
    """
    return _core.softmax_backward(grad_output, output, dim, out)


def log_sigmoid_backward(
    grad_output: ArrayLike, x: ArrayLike, buffer: ArrayLike | None = None, *, out: OutArray | None = None
) -> NDArray[Any]:
    """Gradient of ``log_sigmoid(x) = log(1 / (1 + exp(-x)))`` with respect to x.

    ``out = grad_output / (1 + exp(x))``, computed stably as ``z = exp(-|x|)``;
    ``x < 0 ? g / (1 + z) : g * z / (1 + z)``: x = -inf gives g, x = +inf gives 0, NaN gives NaN,
    and no x overflows.

    Args:
        grad_output: upstream gradient g, x's shape and dtype (a Python number or sequence
            takes x's dtype).
        x: the forward's input, rank 0..25 (as CANN, no limit of its own); float16, bfloat16
            (``ml_dtypes.bfloat16``), float32 or float64.
        buffer: the forward's intermediate (PyTorch's ``log_sigmoid_forward`` buffer); accepted
            for parity and ignored, as in CANN (``None``: x is passed, the C API wants one).
        out: optional array of x's shape and any of the four float dtypes; may be
            ``grad_output`` or ``x`` itself (in place).

    Returns:
        The gradient, of x's dtype unless ``out`` is given. Half types are computed in float32,
        float64 in float64, and rounded once into the result.

    Raises:
        AclnnError: status 161002 for mismatched shapes or dtypes, unsupported dtypes,
            rank > 25, or ``out`` partially overlapping an input.
        TypeError: non-numeric input.
    """
    return _core.log_sigmoid_backward(grad_output, x, buffer, out)


def softshrink_backward(
    grad_output: ArrayLike, x: ArrayLike, lambd: float = 0.5, *, out: OutArray | None = None
) -> NDArray[Any]:
    """Gradient of ``softshrink(x, lambd)`` with respect to x.

    ``out = grad_output`` where ``|x| > lambd``, 0 where ``-lambd <= x <= lambd`` (the band is
    closed: the gradient at ±lambd is 0, even for an infinite or NaN g), NaN where x is NaN.

    Args:
        grad_output: upstream gradient g; broadcasts with x (NumPy rules).
        x: the forward's input. Both float16, bfloat16 (``ml_dtypes.bfloat16``), float32 or
            float64, and they may differ: computed in float64 if either is float64, else in
            float32. A Python number or sequence takes the other operand's dtype.
        lambd: λ >= 0, a real number (a Python float is passed as float64, an int as int64; a
            NumPy scalar keeps its dtype); λ is rounded to the compute type.
        out: optional array of the broadcast shape and any float dtype; may be ``grad_output``
            or ``x`` itself when it has the broadcast shape (in place).

    Returns:
        The gradient, of the broadcast shape and dtype ``numpy.result_type(grad_output, x)``
        (float32 for float16 with bfloat16, which NumPy cannot promote) unless ``out`` is given.

    Raises:
        AclnnError: status 161002 for λ < 0 or NaN (``lambd should be greater or equal to 0,
            but found to be [...]``), shapes that do not broadcast, ``out`` of another shape,
            unsupported dtypes, or ``out`` partially overlapping an input; 161001 for
            ``lambd=None``.
        TypeError: non-numeric input, or a λ that is not a single number.
    """
    return _core.softshrink_backward(grad_output, x, lambd, out)


def cross_entropy_loss_grad(
    grad_loss: ArrayLike,
    log_prob: ArrayLike,
    target: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    reduction: str | None = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    grad_zloss: ArrayLike | None = None,
    lse_for_zloss: ArrayLike | None = None,
    lse_square_scale_for_zloss: float = 0.0,
    out: OutArray | None = None,
) -> NDArray[Any]:
    """Gradient of cross-entropy with respect to the logits, given ``log_prob = log_softmax(logits)``.

    With p = exp(log_prob) (used as given), m_i = [target_i != ignore_index], w = weight (ones
    if None), eps = label_smoothing, S_w = sum(w), C classes and s_i = grad_loss / W ('mean',
    W = sum_i w[target_i] * m_i; W = 0 gives zeros), grad_loss ('sum'), grad_loss[i] ('none')::

        out[i, j] = m_i * s_i * ((1 - eps) * w[t_i] * (p[i, j] - [j == t_i])
                                 + eps / C * (S_w * p[i, j] - w[j]))

    plus, when ``lse_square_scale_for_zloss`` (zeta) is not 0, the z-loss term
    ``2 * zeta * lse_for_zloss[i] * m_i * z_i * p[i, j]`` with gz = grad_loss (+ grad_zloss when
    given) and z_i = gz / sum(m) ('mean'), gz ('sum'), gz[i] ('none').

    Args:
        grad_loss: upstream gradient; shape (N,) for 'none', 0-D or (1,) otherwise, of
            ``log_prob``'s dtype. A Python number or sequence is converted to that dtype; a
            NumPy scalar of another float dtype is an error (``np.float64(1.0)`` with float32
            ``log_prob``).
        log_prob: (N, C), C > 0; float16, bfloat16 (``ml_dtypes.bfloat16``), float32 or float64.
        target: (N,) int64 or int32 class indices, each in [0, C) or equal to ``ignore_index``.
        weight: optional (C,) class weights, any float dtype.
        reduction: "none", "mean" or "sum"; None means "mean".
        ignore_index: any int64; rows whose target equals it get a zero gradient.
        label_smoothing: in [0, 1].
        grad_zloss: optional upstream gradient of the separately returned z-loss (shaped as
            ``grad_loss``); used only when ``lse_square_scale_for_zloss`` is not 0.
        lse_for_zloss: (N,) logsumexp of the logits; required when ``lse_square_scale_for_zloss``
            is not 0.
        lse_square_scale_for_zloss: zeta, finite; 0 turns the z-loss term off.
        out: optional (N, C) array of ``log_prob``'s dtype; may be ``log_prob`` itself.

    Returns:
        The (N, C) gradient, of ``log_prob``'s dtype unless ``out`` is given.

    Raises:
        AclnnError: status 161001 for a missing ``lse_for_zloss``; 161002 for a target outside
            [0, C) that is not ``ignore_index`` (``out`` is left untouched), an unknown
            reduction, ``label_smoothing`` outside [0, 1], mismatched shapes or dtypes, or
            ``out`` partially overlapping an input.
        TypeError: non-numeric input.
    """
    return _core.cross_entropy_loss_grad(
        grad_loss, log_prob, target, weight, reduction, ignore_index, label_smoothing,
        grad_zloss, lse_for_zloss, lse_square_scale_for_zloss, out,
    )


def kl_div_backward(
    grad_output: ArrayLike,
    x: ArrayLike,
    target: ArrayLike,
    reduction: str | int = "mean",
    log_target: bool = False,
    *,
    out: OutArray | None = None,
) -> NDArray[Any]:
    """Gradient of ``kl_div(x, target)`` (x: log-probabilities) with respect to x.

    With B = broadcast(x.shape, target.shape) and g = grad_output broadcast to B::

        grad = -target * g * c          (log_target False)
        grad = -exp(target) * g * c     (log_target True)

    c = 1/numel(B) ('mean'), 1/B[0] ('batchmean'; 1 for 0-D B), 1 ('none', 'sum'), and grad is
    summed over the broadcast dims back to x's shape. No masking of target <= 0.

    Args:
        grad_output: upstream gradient; must broadcast to B (a 0-D one fits any reduction).
        x: the forward's input (its values are not needed, its shape and dtype are).
        target: broadcastable with ``x``.
        reduction: "none", "mean", "sum", "batchmean" or 0..3.
        log_target: whether ``target`` holds log-probabilities.
        out: optional array of x's shape, any float dtype.

    The float dtypes (float16, bfloat16, float32, float64) may be mixed: computed in float64 if
    any input is float64, else in float32. Python numbers and sequences take x's dtype.

    Returns:
        The gradient, of x's shape and dtype unless ``out`` is given.

    Raises:
        AclnnError: status 161002 for an unknown reduction, shapes that do not broadcast,
            unsupported dtypes, or ``out`` partially overlapping an input.
        TypeError: non-numeric input.
    """
    return _core.kl_div_backward(grad_output, x, target, reduction, log_target, out)


def set_num_threads(n: int) -> None:
    """Threads the kernels use; ``n <= 0`` goes back to ``OMP_NUM_THREADS`` or the core count.

    Results are bitwise identical for any thread count."""
    _core.set_num_threads(int(n))


def get_num_threads() -> int:
    """Threads the kernels use."""
    return int(_core.get_num_threads())
