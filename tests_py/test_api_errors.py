"""How the Python API reports a wrong call: a one-line TypeError naming the argument for a wrong
Python type (every argument of every function), messages in the NumPy API's argument names (every
C argument name that can appear in one), one dtype rule for scalars (NEP 50) with an error that
teaches it, and ``ascendgrad.AclnnError`` as the exception's public name."""

import pathlib
import pickle
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import gradcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]
f32 = np.float32


def valid(op):
    """A valid call of `op`: its keyword arguments."""
    x = np.linspace(-2, 2, 6, dtype=f32).reshape(2, 3)
    if op == "softmax_backward":
        return dict(grad_output=x, output=np.full((2, 3), 1 / 3, f32), dim=1, out=np.zeros_like(x))
    if op == "log_sigmoid_backward":
        return dict(grad_output=x, x=x, buffer=x, out=np.zeros_like(x))
    if op == "softshrink_backward":
        return dict(grad_output=x, x=x, lambd=0.5, out=np.zeros_like(x))
    if op == "cross_entropy_loss_grad":
        return dict(grad_loss=f32(1), log_prob=np.log(np.full((2, 3), 1 / 3, f32)), target=np.array([0, 2]),
                    weight=np.ones(3, f32), reduction="mean", ignore_index=-100, label_smoothing=0.1,
                    grad_zloss=f32(0.5), lse_for_zloss=np.ones(2, f32), lse_square_scale_for_zloss=0.1,
                    out=np.zeros((2, 3), f32))
    return dict(grad_output=x, x=x, target=np.abs(x), reduction="sum", log_target=False, out=np.zeros_like(x))


OPS = ["softmax_backward", "log_sigmoid_backward", "softshrink_backward", "cross_entropy_loss_grad",
       "kl_div_backward"]
# a value of the wrong Python type for each kind of argument, and the start of the message
WRONG = {
    "dim": (1.0, "dim must be an int, got float"),
    "ignore_index": (np.float64(1.0), "ignore_index must be an int, got float64"),
    "lambd": ("0.5", "lambd must be a single real number, got str"),
    "label_smoothing": ("0.1", "label_smoothing must be a float, got str"),
    "lse_square_scale_for_zloss": (None, "lse_square_scale_for_zloss must be a float, got NoneType"),
    "log_target": ("yes", "log_target must be a bool, got str"),
    "out": ("out", "out must be a numpy.ndarray, a PyTorch CPU tensor or a DLPack array, got str"),
}
REDUCTION = {"cross_entropy_loss_grad": (1, "reduction must be a str or None, got int"),
             "kl_div_backward": (1.5, "reduction must be a str or an int, got float")}
CASES = [(op, arg) for op in OPS for arg in valid(op)]


@pytest.mark.parametrize("op,arg", CASES, ids=[f"{op}-{arg}" for op, arg in CASES])
def test_wrong_python_type_is_a_short_type_error(op, arg):
    kw = valid(op)
    getattr(ascendgrad, op)(**kw)  # the valid call works
    value, message = REDUCTION[op] if arg == "reduction" else WRONG.get(
        arg, ("abc", f"{arg} must be an array of numbers, got dtype <U3"))
    kw[arg] = value
    with pytest.raises(TypeError) as e:
        getattr(ascendgrad, op)(**kw)
    text = str(e.value)
    assert text == message, text  # one line, naming the argument; no pybind11 overload list


def test_int_arguments_reject_bool_and_overflow():
    kw = valid("softmax_backward")
    kw["dim"] = True
    with pytest.raises(TypeError, match="^dim must be an int, got bool$"):
        ascendgrad.softmax_backward(**kw)
    kw["dim"] = np.int64(-1)  # NumPy integers are ints
    ascendgrad.softmax_backward(**kw)
    kw = valid("cross_entropy_loss_grad")
    kw["ignore_index"] = 2**64
    with pytest.raises(ValueError, match="^ignore_index must fit in int64, got 18446744073709551616$"):
        ascendgrad.cross_entropy_loss_grad(**kw)
    kw["ignore_index"], kw["label_smoothing"] = np.int32(5), ml_dtypes.bfloat16(0.25)  # NumPy scalars are numbers
    ascendgrad.cross_entropy_loss_grad(**kw)


PY_WRONG = [
    ("compare", "rtol", "x", "rtol must be a float or None, got str"),
    ("compare", "atol", [1e-3], "atol must be a float or None, got list"),
    ("compare", "max_fraction", True, "max_fraction must be a float or None, got bool"),
    ("compare", "max_ratio", "10", "max_ratio must be a float or None, got str"),
    ("compare", "equal_nan", None, "equal_nan must be a bool, got NoneType"),
    ("compare", "worst", 2.5, "worst must be an int, got float"),
    ("gradcheck", "op", 1, "op must be a str, got int"),
    ("gradcheck", "seed", "0", "seed must be an int, got str"),
    ("gradcheck", "eps", "1e-6", "eps must be a float, got str"),
    ("gradcheck", "atol", "0", "atol must be a float or None, got str"),
    ("gradcheck", "rtol", [0.1], "rtol must be a float or None, got list"),
    ("gradcheck", "fast_mode", "yes", "fast_mode must be a bool or None, got str"),
    ("gradcheck", "shape", 4, "shape must be a sequence of ints, got int"),
    ("gradcheck", "shape", (4, 2.5), "shape must be an int, got float"),
]


@pytest.mark.parametrize("fn,arg,value,message", PY_WRONG, ids=[f"{r[0]}-{r[1]}-{type(r[2]).__name__}"
                                                                 for r in PY_WRONG])
def test_python_api_wrong_type(fn, arg, value, message):
    if fn == "compare":
        call = lambda **kw: ascendgrad.compare(np.ones(3, f32), np.ones(3), **kw)  # noqa: E731
    else:
        call = lambda op="softmax_backward", **kw: gradcheck.gradcheck(op, **kw)  # noqa: E731
    with pytest.raises(TypeError) as e:
        call(**{arg: value})
    assert str(e.value) == message


# ---- names: every C argument name that can reach a NumPy-API message, per operator ----

def _param_names(op):
    """The C phase-1 function's parameter names, from its header."""
    header = (ROOT / "csrc/include/aclnnop" / f"aclnn_{op.replace('log_sigmoid', 'logsigmoid')}.h").read_text()
    sig = re.search(r"GetWorkspaceSize\s*\((.*?)\)\s*;", header, re.S).group(1)
    return [re.findall(r"\w+", p)[-1] for p in sig.split(",")]


def _set(**changes):
    def change(kw):
        kw.update({k: (v(kw) if callable(v) else v) for k, v in changes.items()})
    return change


as_int32 = lambda name: _set(**{name: lambda kw: np.asarray(kw[name]).astype(np.int32)})  # noqa: E731
# (operator, C name, NumPy name, a change of the valid call whose message names the argument)
NAMED = [
    ("softmax_backward", "gradOutput", "grad_output", as_int32("grad_output")),
    ("softmax_backward", "output", "output", _set(output=np.ones((2, 4), f32))),
    ("softmax_backward", "dim", "dim", _set(dim=5)),
    ("softmax_backward", "out", "out", as_int32("out")),
    ("log_sigmoid_backward", "gradOutput", "grad_output", as_int32("grad_output")),
    ("log_sigmoid_backward", "self", "x", _set(x=np.ones((2, 4), f32))),
    ("log_sigmoid_backward", "gradInput", "out", as_int32("out")),
    ("softshrink_backward", "gradOutput", "grad_output", as_int32("grad_output")),
    ("softshrink_backward", "self", "x", as_int32("x")),
    ("softshrink_backward", "lambd", "lambd", _set(lambd=-1.0)),
    ("softshrink_backward", "gradInput", "out", as_int32("out")),
    ("cross_entropy_loss_grad", "gradLoss", "grad_loss", as_int32("grad_loss")),
    ("cross_entropy_loss_grad", "logProb", "log_prob", _set(log_prob=np.zeros((2, 3, 1), f32))),
    ("cross_entropy_loss_grad", "target", "target", _set(target=np.array([0, 1, 2]))),
    ("cross_entropy_loss_grad", "weightOptional", "weight", as_int32("weight")),
    ("cross_entropy_loss_grad", "gradZlossOptional", "grad_zloss", as_int32("grad_zloss")),
    ("cross_entropy_loss_grad", "lseForZlossOptional", "lse_for_zloss", _set(lse_for_zloss=None)),
    ("cross_entropy_loss_grad", "reductionOptional", "reduction", _set(reduction="avg")),
    ("cross_entropy_loss_grad", "ignoreIndex", "ignore_index", _set(target=np.array([0, 7]))),
    ("cross_entropy_loss_grad", "labelSmoothing", "label_smoothing", _set(label_smoothing=2.0)),
    ("cross_entropy_loss_grad", "lseSquareScaleForZloss", "lse_square_scale_for_zloss",
     _set(lse_square_scale_for_zloss=float("inf"))),
    ("cross_entropy_loss_grad", "out", "out", as_int32("out")),
    ("kl_div_backward", "gradOutput", "grad_output", as_int32("grad_output")),
    ("kl_div_backward", "self", "x", as_int32("x")),
    ("kl_div_backward", "target", "target", as_int32("target")),
    ("kl_div_backward", "reduction", "reduction", _set(reduction=7)),
    ("kl_div_backward", "out", "out", as_int32("out")),
]
# C parameters no NumPy-API call can get into a message: the buffer is never read (only its
# presence is checked, and the NumPy API always passes one), logTarget is any bool, and the
# phase-1 outputs are the binding's own.
NEVER_IN_A_MESSAGE = {"buffer", "logTarget", "workspaceSize", "executor"}


@pytest.mark.parametrize("op", OPS)
def test_every_c_argument_is_covered(op):
    covered = {c for o, c, _, _ in NAMED if o == op}
    assert set(_param_names(op)) - NEVER_IN_A_MESSAGE == covered


@pytest.mark.parametrize("op,c_name,py_name,change", NAMED, ids=[f"{r[0]}-{r[1]}" for r in NAMED])
def test_messages_use_numpy_names(op, c_name, py_name, change):
    kw = valid(op)
    change(kw)
    with pytest.raises(ascendgrad.AclnnError) as e:
        getattr(ascendgrad, op)(**kw)
    text = str(e.value)
    assert re.search(rf"\b{py_name}\b", text), text
    if c_name != py_name:
        assert not re.search(rf"\b{c_name}\b", text), text
    assert text.startswith("aclnn"), text  # still the operator's message


def test_c_api_messages_keep_cann_names():
    from ascendgrad import aclnn

    kw = valid("cross_entropy_loss_grad")
    T = aclnn.Tensor
    status, _, _ = aclnn.cross_entropy_loss_grad_get_workspace_size(
        T(np.asarray(kw["grad_loss"])), T(kw["log_prob"]), T(kw["target"]), None, None, None, "avg", -100, 0.0, 0.0,
        T(kw["out"]))
    assert status == aclnn.Status.ERR_PARAM_INVALID
    assert "reductionOptional" in aclnn.get_recent_err_msg()


# ---- one dtype rule for scalars (NEP 50) ----

def test_python_float_takes_the_dtype_numpy_scalar_keeps_its_own():
    kw = valid("cross_entropy_loss_grad")
    kw["grad_loss"] = 1.0  # a Python float: log_prob's dtype
    a = ascendgrad.cross_entropy_loss_grad(**kw)
    kw["grad_loss"] = np.float32(1.0)
    np.testing.assert_array_equal(ascendgrad.cross_entropy_loss_grad(**kw), a)
    kw["grad_loss"] = np.float64(1.0)
    with pytest.raises(ascendgrad.AclnnError) as e:
        ascendgrad.cross_entropy_loss_grad(**kw)
    assert e.value.status == 161002
    assert "grad_loss is float64 but log_prob is float32: pass a Python float or a float32 value" in str(e.value)


@pytest.mark.parametrize("name", ["grad_zloss", "lse_for_zloss"])
def test_zloss_inputs_follow_the_rule(name):
    kw = valid("cross_entropy_loss_grad")
    kw[name] = np.asarray(kw[name], np.float16)
    # a scalar gets the rule's message; an array (lse_for_zloss is (N,)) the library's, in these names
    message = (f"{name} is float16 but log_prob is float32: pass a Python float or a float32 value"
               if kw[name].ndim == 0 else f"Tensor {name} expected dtype is DT_FLOAT but found DT_FLOAT16")
    with pytest.raises(ascendgrad.AclnnError, match=re.escape(message)):
        ascendgrad.cross_entropy_loss_grad(**kw)
    kw[name] = np.asarray(kw[name], f32).tolist()  # a Python number or list: log_prob's dtype
    ascendgrad.cross_entropy_loss_grad(**kw)


@pytest.mark.parametrize("op,a,b", [("softmax_backward", "output", "grad_output"),
                                    ("log_sigmoid_backward", "x", "grad_output")])
def test_same_dtype_operators_follow_the_rule(op, a, b):
    kw = {b: np.float32(0.5), a: np.float32(0.25)}  # 0-D: the inputs must have one shape
    if op == "log_sigmoid_backward":
        kw = {"grad_output": kw["grad_output"], "x": kw["x"]}
    want = getattr(ascendgrad, op)(**kw)
    assert want.dtype == f32
    kw[a] = 0.25  # a Python float takes the other input's dtype
    np.testing.assert_array_equal(getattr(ascendgrad, op)(**kw), want)
    kw[a] = np.float64(0.25)
    with pytest.raises(ascendgrad.AclnnError,
                       match=f"^aclnn\\w+: {a} is float64 but {b} is float32: pass a Python float or a float32 value"):
        getattr(ascendgrad, op)(**kw)
    kw[a] = np.ones((2, 3), ml_dtypes.bfloat16)  # arrays: the library's message, in these names
    kw[b] = np.ones((2, 3), f32)
    with pytest.raises(ascendgrad.AclnnError, match=f"Tensor {a} expected dtype is DT_FLOAT but found DT_BF16"):
        getattr(ascendgrad, op)(**kw)


@pytest.mark.parametrize("op", ["softshrink_backward", "kl_div_backward"])
def test_mixed_dtype_operators_promote_numpy_scalars(op):
    kw = valid(op)
    kw.pop("out")
    kw["grad_output"] = np.float64(2.0)
    assert getattr(ascendgrad, op)(**kw).dtype == (np.float64 if op == "softshrink_backward" else f32)
    kw["grad_output"] = 2.0
    assert getattr(ascendgrad, op)(**kw).dtype == f32


# ---- the exception's public name ----

def test_aclnn_error_public_name():
    assert ascendgrad.AclnnError.__module__ == "ascendgrad"
    e = ascendgrad.AclnnError("aclnnX: bad", 161002)
    assert repr(e).startswith("AclnnError(") and type(e).__qualname__ == "AclnnError"
    data = pickle.dumps(e)
    assert b"ascendgrad._errors" not in data and b"ascendgrad" in data
    back = pickle.loads(data)
    assert type(back) is ascendgrad.AclnnError and back.status == 161002 and str(back) == "aclnnX: bad"


def test_traceback_shows_public_name(tmp_path):
    r = subprocess.run([sys.executable, "-c", "import numpy as np, ascendgrad\n"
                        "ascendgrad.softmax_backward(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), 2)"],
                       capture_output=True, text=True, cwd=tmp_path)
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ascendgrad.AclnnError: aclnnSoftmaxBackward: provided dim 2"), r.stderr
