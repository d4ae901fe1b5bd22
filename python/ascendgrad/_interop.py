"""Array-likes from other libraries as NumPy arrays, without a copy where memory allows.

The compiled functions call :func:`asarray` for every input that is not already an ndarray,
and :func:`output_array` for an ``out=`` that is not one. Kept free of the compiled module and
of a PyTorch import (torch is only looked up when the object is one of its tensors).
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, Union, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["asarray", "OutArray", "SupportsDLPack"]


class SupportsDLPack(Protocol):
    """An array exporting DLPack (a PyTorch tensor, a JAX or CuPy array, an ndarray)."""

    def __dlpack__(self) -> Any: ...


#: What ``out=`` takes: an ndarray, or a host array written through an ndarray view.
OutArray = Union[NDArray[Any], SupportsDLPack]


def _torch_tensor(obj: object) -> bool:
    torch = sys.modules.get("torch")  # a tensor exists only if torch is already imported
    return torch is not None and isinstance(obj, torch.Tensor)


def _from_torch(t: Any, copy: bool) -> NDArray[Any]:
    torch = sys.modules["torch"]
    t = t.detach()  # reading a tensor that requires grad is harmless; Tensor.numpy() refuses it
    if t.device.type != "cpu":
        if not copy:
            raise ValueError(f"a tensor on {t.device} is not in host memory; pass a CPU tensor")
        t = t.cpu()
    t = t.resolve_conj().resolve_neg()  # no-ops unless a lazy conj/neg bit is set
    if t.dtype == torch.bfloat16:
        # NumPy has no bfloat16 and torch exports none to it: reinterpret the same bytes as
        # int16, then as ml_dtypes.bfloat16 (two views, no copy).
        import ml_dtypes

        return cast(np.ndarray, t.view(torch.int16).numpy().view(ml_dtypes.bfloat16))
    return cast(np.ndarray, t.numpy())


def asarray(obj: Union[ArrayLike, SupportsDLPack]) -> NDArray[Any]:
    """``obj`` as a NumPy array, sharing its memory where that is possible.

    * ``numpy.ndarray``: returned as it is.
    * PyTorch tensor: detached and viewed in place (``Tensor.numpy()``); ``torch.bfloat16``
      becomes an ``ml_dtypes.bfloat16`` view of the same memory; a tensor on another device
      (an NPU, a GPU) is copied to host memory first — the only copy.
    * any other object with ``__dlpack__`` (JAX, CuPy on host, …): ``numpy.from_dlpack``, in
      place; if NumPy cannot import its dtype, the next rule.
    * anything else (``__array__``, sequences, numbers): ``numpy.asarray``.

    Arrays that the kernels cannot read in place (misaligned, byte-swapped) are copied later by
    the functions, never here. Raises ``TypeError``/``ValueError`` as ``numpy.asarray`` does.
    """
    if isinstance(obj, np.ndarray):
        return obj
    if _torch_tensor(obj):
        return _from_torch(obj, copy=True)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.generic):
        try:
            return np.from_dlpack(cast(Any, obj))
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass  # e.g. a dtype NumPy's DLPack import lacks: __array__ may still know it
    return np.asarray(obj)


def output_array(obj: Any) -> NDArray[Any]:
    """An ``out=`` argument as an ndarray over the same memory; never a copy (a result written
    into a copy would be lost). ``TypeError`` for objects that are not arrays."""
    if isinstance(obj, np.ndarray):
        return obj
    if _torch_tensor(obj):
        return _from_torch(obj, copy=False)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.generic):
        return np.from_dlpack(obj)
    raise TypeError(f"out must be a numpy.ndarray, a PyTorch CPU tensor or a DLPack array, got {type(obj).__name__}")
