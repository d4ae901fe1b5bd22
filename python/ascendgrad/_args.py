"""Argument checks of the Python-level API (compare, gradcheck), in one place: a wrong Python
type is a one-line ``TypeError`` naming the argument, as in the compiled NumPy API
(csrc/python/common.cpp)."""

from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple


def _is_real(value: Any) -> bool:
    """int, float or a NumPy integer/float scalar (ml_dtypes.bfloat16 too); not bool."""
    if isinstance(value, (bool, complex)) or type(value).__name__ == "bool_":
        return False
    return isinstance(value, numbers.Real) or type(value).__name__ == "bfloat16"


def real(value: Any, name: str) -> float:
    if not _is_real(value):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    return float(value)


def optional_real(value: Any, name: str) -> Optional[float]:
    if value is not None and not _is_real(value):
        raise TypeError(f"{name} must be a float or None, got {type(value).__name__}")
    return None if value is None else float(value)


def integer(value: Any, name: str) -> int:
    """An int or NumPy integer, not bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return int(value)


def optional_bool(value: Any, name: str) -> Optional[bool]:
    """None, bool or numpy.bool_."""
    if value is not None and not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise TypeError(f"{name} must be a bool or None, got {type(value).__name__}")
    return None if value is None else bool(value)


def string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def boolean(value: Any, name: str) -> bool:
    """bool or numpy.bool_."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def shape_arg(text: Optional[str]) -> Optional[Tuple[int, ...]]:
    if text is None:
        return None
    parts = text.replace("x", ",").replace("(", "").replace(")", "").split(",")
    return tuple(int(s) for s in parts if s.strip())
