"""ascendgrad: CPU reference of five Ascend aclnn backward operators.

NumPy API (this module), the raw two-phase C API (:mod:`ascendgrad.aclnn`), the float64 golden
model (:mod:`ascendgrad.reference`) and finite-difference checks (:mod:`ascendgrad.gradcheck`).
"""

from ._core import __version__
from ._errors import AclnnError
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
    "cross_entropy_loss_grad",
    "get_num_threads",
    "kl_div_backward",
    "log_sigmoid_backward",
    "set_num_threads",
    "softmax_backward",
    "softshrink_backward",
]
