"""ascendgrad: CPU reference of five Ascend aclnn backward operators.

NumPy API (this module), the raw two-phase C API (:mod:`ascendgrad.aclnn`), the float64 golden
model (:mod:`ascendgrad.reference`), finite-difference checks (:mod:`ascendgrad.gradcheck`),
the comparison of NPU results with the golden model (:func:`compare`) and golden data for
operator tests (:mod:`ascendgrad.golden`), and the bridge into a PyTorch training step
(:mod:`ascendgrad.torch`, with PyTorch installed).

The submodules are attributes of the package, imported on first use (PEP 562): ``import
ascendgrad`` loads only the compiled core and the NumPy API.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any, List

from ._core import __version__
from ._errors import AclnnError
from ._interop import asarray
from ._ops import (
    cross_entropy_loss_grad,
    get_num_threads,
    kl_div_backward,
    log_sigmoid_backward,
    set_num_threads,
    softmax_backward,
    softshrink_backward,
)

# The public submodules, each imported when first named (ascendgrad.<name>). A new public
# module is added here and to the TYPE_CHECKING import below (tests_py/test_package.py checks
# that every public module of the package is in both).
_SUBMODULES = ("aclnn", "compare", "dump_check", "golden", "gradcheck", "judge", "reference", "torch")
# Names re-exported from a submodule, imported on first use too: name -> submodule.
_FROM_SUBMODULES = {"compare": "compare", "CompareReport": "compare"}

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports on first use
    from . import aclnn as aclnn, dump_check as dump_check, golden as golden, gradcheck as gradcheck
    from . import judge as judge, reference as reference, torch as torch
    from .compare import CompareReport as CompareReport, compare as compare

__all__ = [
    "AclnnError",
    "__version__",
    "asarray",
    "compare",
    "CompareReport",
    "cross_entropy_loss_grad",
    "get_num_threads",
    "kl_div_backward",
    "log_sigmoid_backward",
    "set_num_threads",
    "softmax_backward",
    "softshrink_backward",
]


if not TYPE_CHECKING:  # hidden from type checkers, which would then take any name as Any

    def __getattr__(name: str) -> Any:
        if name in _FROM_SUBMODULES:
            value = getattr(importlib.import_module(f".{_FROM_SUBMODULES[name]}", __name__), name)
        elif name in _SUBMODULES:
            value = importlib.import_module(f".{name}", __name__)
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value  # later lookups skip this function
        return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_SUBMODULES) | set(_FROM_SUBMODULES))


class _Package(types.ModuleType):
    """``ascendgrad.compare`` is the function, like ``from ascendgrad.compare import compare``.

    The import system binds every submodule it loads as an attribute of its package, so
    ``from ascendgrad.compare import load`` would otherwise replace the function by the module
    of the same name."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _FROM_SUBMODULES:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
