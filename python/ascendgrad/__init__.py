"""ascendgrad: CPU reference of five Ascend aclnn backward operators.

NumPy API (this module), the raw two-phase C API (:mod:`ascendgrad.aclnn`), the float64 golden
model (:mod:`ascendgrad.reference`) and finite-difference checks (:mod:`ascendgrad.gradcheck`).
"""

from ._core import __version__
from ._errors import AclnnError
from ._ops import get_num_threads, set_num_threads, softmax_backward

__all__ = [
    "AclnnError",
    "__version__",
    "get_num_threads",
    "set_num_threads",
    "softmax_backward",
]
