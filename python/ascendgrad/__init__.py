"""ascendgrad: CPU reference of five Ascend aclnn backward operators.

NumPy API (this module), the raw two-phase C API (:mod:`ascendgrad.aclnn`), the float64 golden
model (:mod:`ascendgrad.reference`), finite-difference checks (:mod:`ascendgrad.gradcheck`) and
the comparison of NPU results with the golden model (:func:`compare`).
"""

from ._core import __version__
from ._errors import AclnnError
from ._interop import asarray
from .compare import CompareReport, compare
from ._ops import (
    cross_entropy_loss_grad,
    get_num_threads,
    kl_div_backward,
    log_sigmoid_backward,
    set_num_threads,
    softmax_backward,
    softshrink_backward,
)

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
