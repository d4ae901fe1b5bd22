"""The raw two-phase aclnn API, one Python function per C function.

Phase 1, ``<op>_get_workspace_size(...)``, validates the arguments and returns
``(status, workspace_size, executor)``; phase 2, ``<op>(workspace, workspace_size, executor,
stream=None)``, runs the executor and returns a status. Calls return statuses and never raise
for a bad status: read the message with :func:`get_recent_err_msg`. ``None`` passes NULL.

Tensors wrap NumPy arrays in place (:class:`Tensor`); work on a :class:`Stream` runs
asynchronously until ``stream.synchronize()``.

Phase 1 of each operator (tensors are :class:`Tensor` or None; the formulas, shapes and dtypes
are those of the NumPy functions of the same name in :mod:`ascendgrad`, and SPEC §2):

==============================================  ================================================
``softmax_backward_get_workspace_size``         (grad_output, output, dim, out)
``log_sigmoid_backward_get_workspace_size``     (grad_output, self, buffer, grad_input)
``softshrink_backward_get_workspace_size``      (grad_output, self, lambd: Scalar, grad_input)
``cross_entropy_loss_grad_get_workspace_size``  (grad_loss, log_prob, target, weight, grad_zloss,
                                                lse_for_zloss, reduction: str | None,
                                                ignore_index, label_smoothing,
                                                lse_square_scale_for_zloss, out)
``kl_div_backward_get_workspace_size``          (grad_output, self, target, reduction: 0..3,
                                                log_target, out)
==============================================  ================================================

Phase 2, ``<op>(workspace, workspace_size, executor, stream=None) -> status``, runs the
executor of the matching phase 1. ``workspace``: None or a writable C-contiguous uint8 array of
at least ``workspace_size`` bytes; ``stream``: None runs synchronously, a :class:`Stream` queues
the work (its errors then come from ``stream.synchronize()``). 161001 for a None executor;
161002 for a workspace smaller than phase 1 asked, or an executor that is not live (single-use
executors are consumed by any phase-2 call, failed ones included).

Statuses (:class:`Status`): 161001 for a None where a tensor/scalar/executor is required,
161002 for an invalid dtype, shape, value, overlap, a too small workspace or an executor that is
not live, 561103 for ``set_executor_repeatable(None)``/``destroy_executor(None)``. Each
function's own docstring is in the type stubs (``_core/aclnn.pyi``), which editors show.
"""

from enum import IntEnum

from ._core.aclnn import (
    Executor,
    Scalar,
    Stream,
    Tensor,
    cross_entropy_loss_grad,
    cross_entropy_loss_grad_get_workspace_size,
    destroy_executor,
    get_recent_err_msg,
    kl_div_backward,
    kl_div_backward_get_workspace_size,
    log_sigmoid_backward,
    log_sigmoid_backward_get_workspace_size,
    set_executor_repeatable,
    softmax_backward,
    softmax_backward_get_workspace_size,
    softshrink_backward,
    softshrink_backward_get_workspace_size,
)


class Status(IntEnum):
    """aclnnStatus codes."""

    SUCCESS = 0
    ERR_PARAM_NULLPTR = 161001
    ERR_PARAM_INVALID = 161002
    ERR_RUNTIME_ERROR = 361001
    ERR_INNER = 561000
    ERR_INNER_NULLPTR = 561103


class DataType(IntEnum):
    """aclDataType values (as CANN)."""

    ACL_DT_UNDEFINED = -1
    ACL_FLOAT = 0
    ACL_FLOAT16 = 1
    ACL_INT8 = 2
    ACL_INT32 = 3
    ACL_UINT8 = 4
    ACL_INT16 = 6
    ACL_UINT16 = 7
    ACL_UINT32 = 8
    ACL_INT64 = 9
    ACL_UINT64 = 10
    ACL_DOUBLE = 11
    ACL_BOOL = 12
    ACL_COMPLEX64 = 16
    ACL_COMPLEX128 = 17
    ACL_BF16 = 27


__all__ = [
    "DataType",
    "Executor",
    "Scalar",
    "Status",
    "Stream",
    "Tensor",
    "cross_entropy_loss_grad",
    "cross_entropy_loss_grad_get_workspace_size",
    "destroy_executor",
    "get_recent_err_msg",
    "kl_div_backward",
    "kl_div_backward_get_workspace_size",
    "log_sigmoid_backward",
    "log_sigmoid_backward_get_workspace_size",
    "set_executor_repeatable",
    "softmax_backward",
    "softmax_backward_get_workspace_size",
    "softshrink_backward",
    "softshrink_backward_get_workspace_size",
]
