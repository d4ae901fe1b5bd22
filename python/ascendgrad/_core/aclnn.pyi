# Stubs of ascendgrad._core.aclnn, the raw two-phase API (re-exported by ascendgrad.aclnn).
from types import TracebackType
from typing import Any, Optional, Tuple, Type

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

class Tensor:
    """An aclTensor over a NumPy array, in place (no copy); keeps the array alive."""

    def __init__(self, array: ArrayLike) -> None: ...
    @property
    def array(self) -> NDArray[Any]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...

class Scalar:
    """An aclScalar holding a copy of value converted to dtype."""

    def __init__(self, value: Any, dtype: DTypeLike) -> None: ...
    @property
    def value(self) -> float: ...
    @property
    def dtype(self) -> int: ...

class Stream:
    """A stream: work runs asynchronously, in order, on a worker thread."""

    def __init__(self) -> None: ...
    def synchronize(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> Stream: ...
    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None: ...

class Executor:
    """An aclOpExecutor made by a *_get_workspace_size call."""

    @property
    def handle(self) -> int: ...

# (status, workspace_size, executor or None when status is not 0)
_Phase1Result = Tuple[int, int, Optional[Executor]]
_Workspace = Optional[NDArray[np.uint8]]

def get_recent_err_msg() -> Optional[str]: ...
def set_executor_repeatable(executor: Optional[Executor]) -> int: ...
def destroy_executor(executor: Optional[Executor]) -> int: ...
def softmax_backward_get_workspace_size(
    grad_output: Optional[Tensor], output: Optional[Tensor], dim: int, out: Optional[Tensor]
) -> _Phase1Result: ...
def softmax_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int: ...
def log_sigmoid_backward_get_workspace_size(
    grad_output: Optional[Tensor], self: Optional[Tensor], buffer: Optional[Tensor], grad_input: Optional[Tensor]
) -> _Phase1Result: ...
def log_sigmoid_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int: ...
def softshrink_backward_get_workspace_size(
    grad_output: Optional[Tensor], self: Optional[Tensor], lambd: Optional[Scalar], grad_input: Optional[Tensor]
) -> _Phase1Result: ...
def softshrink_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int: ...
def cross_entropy_loss_grad_get_workspace_size(
    grad_loss: Optional[Tensor],
    log_prob: Optional[Tensor],
    target: Optional[Tensor],
    weight: Optional[Tensor],
    grad_zloss: Optional[Tensor],
    lse_for_zloss: Optional[Tensor],
    reduction: Optional[str],
    ignore_index: int,
    label_smoothing: float,
    lse_square_scale_for_zloss: float,
    out: Optional[Tensor],
) -> _Phase1Result: ...
def cross_entropy_loss_grad(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int: ...
def kl_div_backward_get_workspace_size(
    grad_output: Optional[Tensor],
    self: Optional[Tensor],
    target: Optional[Tensor],
    reduction: int,
    log_target: bool,
    out: Optional[Tensor],
) -> _Phase1Result: ...
def kl_div_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int: ...
