# Stubs of the compiled module ascendgrad._core (private: use the ascendgrad package). Kept
# honest by `python -m mypy.stubtest ascendgrad._core ascendgrad._core.aclnn` (tests_py/test_typing.py).
from typing import Any, Dict, Optional, Union

from numpy.typing import ArrayLike, NDArray

from . import aclnn as aclnn

__version__: str

def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def set_thread_num_threads(n: int) -> None: ...
def kernel_isa() -> str: ...
def judge_metrics(
    actual: NDArray[Any], golden: NDArray[Any], compare_dtype: Any, score: str, equal_nan: bool, ulp: bool,
    rtol: float, atol: float, max_abs: float, limit_ulps: int, v1_mare: float, ms_eps: float,
    ms_t1: float, ms_t2: float, worst: int, score_out: Optional[NDArray[Any]] = None,
) -> Dict[str, Any]: ...
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
