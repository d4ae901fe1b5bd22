# Stubs of the compiled module ascendgrad._core (private: use the ascendgrad package). Kept
# honest by `python -m mypy.stubtest ascendgrad._core ascendgrad._core.aclnn` (tests_py/test_typing.py).
from typing import Any, Optional, Union

from numpy.typing import ArrayLike, NDArray

from . import aclnn as aclnn

__version__: str

def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def kernel_isa() -> str: ...
def softmax_backward(grad_output: ArrayLike, output: ArrayLike, dim: int = -1, out: Any = None) -> NDArray[Any]: ...
def log_sigmoid_backward(
    grad_output: ArrayLike, x: ArrayLike, buffer: Optional[ArrayLike] = None, out: Any = None
) -> NDArray[Any]: ...
def softshrink_backward(
    grad_output: ArrayLike, x: ArrayLike, lambd: Optional[ArrayLike] = 0.5, out: Any = None
) -> NDArray[Any]: ...
def cross_entropy_loss_grad(
    grad_loss: ArrayLike,
    log_prob: ArrayLike,
    target: ArrayLike,
    weight: Optional[ArrayLike] = None,
    reduction: Optional[str] = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    grad_zloss: Optional[ArrayLike] = None,
    lse_for_zloss: Optional[ArrayLike] = None,
    lse_square_scale_for_zloss: float = 0.0,
    out: Any = None,
) -> NDArray[Any]: ...
def kl_div_backward(
    grad_output: ArrayLike,
    x: ArrayLike,
    target: ArrayLike,
    reduction: Union[str, int] = "mean",
    log_target: bool = False,
    out: Any = None,
) -> NDArray[Any]: ...
