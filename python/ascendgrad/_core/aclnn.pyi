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

def get_recent_err_msg() -> Optional[str]:
    """The newest error message of this thread, then cleared; None when there is none."""

def set_executor_repeatable(executor: Optional[Executor]) -> int:
    """Makes an executor reusable until :func:`destroy_executor`; 561103 for None."""

def destroy_executor(executor: Optional[Executor]) -> int:
    """Destroys a (repeatable) executor; 561103 for None, 161002 for one not live."""
def softmax_backward_get_workspace_size(
    grad_output: Optional[Tensor], output: Optional[Tensor], dim: int, out: Optional[Tensor]
) -> _Phase1Result:
    """Phase 1 of aclnnSoftmaxBackward: out = output * (grad_output - sum_dim(grad_output * output)).

    grad_output, output: same shape (rank 0..8) and dtype (float16, bfloat16, float32, float64);
    dim in [-n, n) (a 0-D tensor counts as 1-D); out: grad_output's shape, any of the four
    dtypes. Returns (status, workspace_size, executor); 161001 for a None tensor, 161002 for a
    dim out of range, mismatched shapes or dtypes, or out partially overlapping an input."""
def softmax_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int:
    """Phase 2 of aclnnSoftmaxBackward: runs the executor; see "Phase 2" in :mod:`ascendgrad.aclnn`."""
def log_sigmoid_backward_get_workspace_size(
    grad_output: Optional[Tensor], self: Optional[Tensor], buffer: Optional[Tensor], grad_input: Optional[Tensor]
) -> _Phase1Result:
    """Phase 1 of aclnnLogSigmoidBackward: grad_input = grad_output / (1 + exp(self)), stably.

    grad_output, self: same shape (rank 0..8) and dtype (float16, bfloat16, float32, float64);
    buffer: required (None gives 161001) and never read; grad_input: the same shape, any of the
    four dtypes. Returns (status, workspace_size, executor); 161002 for mismatched shapes or
    dtypes, or grad_input partially overlapping an input."""
def log_sigmoid_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int:
    """Phase 2 of aclnnLogSigmoidBackward: runs the executor; see "Phase 2" in :mod:`ascendgrad.aclnn`."""
def softshrink_backward_get_workspace_size(
    grad_output: Optional[Tensor], self: Optional[Tensor], lambd: Optional[Scalar], grad_input: Optional[Tensor]
) -> _Phase1Result:
    """Phase 1 of aclnnSoftshrinkBackward: grad_input = grad_output where |self| > lambd, else 0.

    grad_output and self broadcast (NumPy rules) and may differ in float dtype; lambd: a
    :class:`Scalar` >= 0 (None gives 161001; < 0 or NaN 161002); grad_input: the broadcast
    shape, any float dtype. Returns (status, workspace_size, executor); 161002 for shapes that
    do not broadcast, a grad_input of another shape, or a partial overlap."""
def softshrink_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int:
    """Phase 2 of aclnnSoftshrinkBackward: runs the executor; see "Phase 2" in :mod:`ascendgrad.aclnn`."""
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
) -> _Phase1Result:
    """Phase 1 of aclnnCrossEntropyLossGrad: the gradient of cross-entropy w.r.t. the logits.

    out[i, j] = m_i * s_i * ((1 - eps) * w[t_i] * (p[i, j] - [j == t_i]) + eps / C * (S_w * p[i, j] - w[j]))
    with p = exp(log_prob), plus the z-loss term 2 * zeta * lse[i] * m_i * z_i * p[i, j] when
    lse_square_scale_for_zloss (zeta) != 0 (SPEC 2.4). log_prob (N, C) and out: same float dtype;
    grad_loss (and grad_zloss): (N,) for "none", 0-D or (1,) otherwise, log_prob's dtype; target
    (N,) int64 or int32; weight (C,) any float dtype or None; lse_for_zloss (N,), required when
    zeta != 0 (161001); reduction "none" | "mean" | "sum" (None: "mean"), else 161002;
    label_smoothing in [0, 1]. A target outside [0, C) that is not ignore_index is found by
    phase 2 (161002, out untouched)."""
def cross_entropy_loss_grad(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int:
    """Phase 2 of aclnnCrossEntropyLossGrad: runs the executor; see "Phase 2" in :mod:`ascendgrad.aclnn`."""
def kl_div_backward_get_workspace_size(
    grad_output: Optional[Tensor],
    self: Optional[Tensor],
    target: Optional[Tensor],
    reduction: int,
    log_target: bool,
    out: Optional[Tensor],
) -> _Phase1Result:
    """Phase 1 of aclnnKlDivBackward: grad = -target * grad_output * c (log_target: -exp(target) * ...).

    self and target broadcast to B; grad_output must broadcast to B; c = 1/numel(B) (reduction 1,
    mean), 1/B[0] (3, batchmean), 1 (0 none, 2 sum); the result is summed back to self's shape.
    Any float dtypes, mixed; out: self's shape. Returns (status, workspace_size, executor);
    161002 for a reduction outside 0..3 or shapes that do not broadcast."""
def kl_div_backward(
    workspace: _Workspace, workspace_size: int, executor: Optional[Executor], stream: Optional[Stream] = None
) -> int:
    """Phase 2 of aclnnKlDivBackward: runs the executor; see "Phase 2" in :mod:`ascendgrad.aclnn`."""
