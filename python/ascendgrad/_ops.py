"""The NumPy API: each function validates through the aclnn C API and runs the kernel with
the GIL released. Inputs are read in place (any strides, negative ones included); results are
new arrays unless ``out=`` is given. Errors raise :class:`ascendgrad.AclnnError` (a
``ValueError`` with ``.status``); non-numeric input raises ``TypeError``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from . import _core


def softmax_backward(
    grad_output: ArrayLike, output: ArrayLike, dim: int = -1, *, out: np.ndarray | None = None
) -> np.ndarray:
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


def set_num_threads(n: int) -> None:
    """Threads the kernels use; ``n <= 0`` goes back to ``OMP_NUM_THREADS`` or the core count.

    Results are bitwise identical for any thread count."""
    _core.set_num_threads(int(n))


def get_num_threads() -> int:
    """Threads the kernels use."""
    return int(_core.get_num_threads())
