"""The bad-input matrix through the Python API, table-driven (the C matrix is
tests_cpp/test_bad_input.cpp): for every argument of every NumPy function, each way it can be
wrong, the exact ``AclnnError.status`` (or ``TypeError``/``ValueError`` where Python itself
rejects the value), a message naming the argument, and ``out`` (a canary) left untouched; then
every tensor argument of the raw two-phase API as ``None`` and the phase-2 faults (executors,
workspaces, streams). Faults NumPy cannot express (negative dims, a view outside its storage,
numel beyond int64, NULL data) are covered by the C matrix only."""

import re

import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn

S = aclnn.Status
CANARY = 7.0

# Per function: the valid call's arguments (a fresh dict each time), the C name of each Python
# argument, and the output's C name (NumPy-API messages use the Python names, the raw API's the C names).
OPS = {
    "softmax_backward": (
        lambda: dict(grad_output=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                     output=np.full((2, 3), 1 / 3, np.float32), dim=1),
        {"grad_output": "gradOutput", "output": "output", "out": "out"},
    ),
    "log_sigmoid_backward": (
        lambda: dict(grad_output=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                     x=np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)),
        {"grad_output": "gradOutput", "x": "self", "buffer": "buffer", "out": "gradInput"},
    ),
    "softshrink_backward": (
        lambda: dict(grad_output=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                     x=np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3), lambd=0.5),
        {"grad_output": "gradOutput", "x": "self", "out": "gradInput"},
    ),
    "cross_entropy_loss_grad": (
        lambda: dict(grad_loss=np.float32(0.5), log_prob=np.log(np.full((2, 3), 1 / 3, np.float32)),
                     target=np.array([0, 2]), weight=np.array([1, 2, 0.5], np.float32),
                     grad_zloss=np.float32(0.25), lse_for_zloss=np.array([1.5, 2.5], np.float32),
                     lse_square_scale_for_zloss=0.5, label_smoothing=0.1),
        {"grad_loss": "gradLoss", "log_prob": "logProb", "target": "target", "weight": "weightOptional",
         "grad_zloss": "gradZlossOptional", "lse_for_zloss": "lseForZlossOptional", "out": "out"},
    ),
    "kl_div_backward": (
        lambda: dict(grad_output=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                     x=np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3),
                     target=np.linspace(0.1, 0.6, 6, dtype=np.float32).reshape(2, 3), reduction="mean"),
        {"grad_output": "gradOutput", "x": "self", "target": "target", "out": "out"},
    ),
}
C_OP = {"softmax_backward": "aclnnSoftmaxBackward", "log_sigmoid_backward": "aclnnLogSigmoidBackward",
        "softshrink_backward": "aclnnSoftshrinkBackward", "cross_entropy_loss_grad": "aclnnCrossEntropyLossGrad",
        "kl_div_backward": "aclnnKlDivBackward"}
OPTIONAL = {"weight", "grad_zloss", "buffer"}  # None means absent (buffer: x is passed)
# The C arguments CANN's op_api limits to rank 8 (OP_CHECK_MAX_DIM); the others take any rank an
# aclTensor describes (25) and are held to it by their shape rules.
RANK_LIMITED = {"softmax_backward": {"gradOutput"}, "softshrink_backward": {"gradOutput", "self"},
                "kl_div_backward": {"gradOutput", "self", "target", "out"}}


def arrays(op):
    return [k for k, v in OPS[op][0]().items() if isinstance(v, (np.ndarray, np.generic))]


def valid_out(op):
    """A canary-filled out of the valid call's result shape and dtype."""
    kw = OPS[op][0]()
    return np.full(getattr(ascendgrad, op)(**kw).shape, CANARY, np.float32)


# ---- rows: (id, op, change(kw) -> None, expected exception, status or None, fragments) ----

def _set(name, value):
    def change(kw):
        kw[name] = value(kw) if callable(value) else value
    return change


def _overlap(inp):
    """out as a view that starts just before input `inp` and runs into it."""
    def change(kw):
        src = np.asarray(kw[inp])
        shape = kw["out"].shape
        n = int(np.prod(shape))
        memory = np.full(src.nbytes // 4 + n + 2, CANARY, np.float32)
        # the input moves to memory[itemsize:] (aligned for its dtype), out starts at 0
        moved = np.frombuffer(memory.data, src.dtype, src.size, src.itemsize).reshape(src.shape)
        moved[...] = src
        kw[inp] = moved
        kw["out"] = memory[:n].reshape(shape)
        kw["_memory"] = memory
    return change


def _bad_shape(a, shape):
    """A shape argument `a` rejects: its last dim + 1, or one it reports itself."""
    own = {"log_prob": (2, 3, 1), "grad_loss": (2,), "grad_zloss": (2,)}
    return own[a] if a in own else shape[:-1] + (shape[-1] + 1,)


def rows():
    r = []
    inv = (ascendgrad.AclnnError, S.ERR_PARAM_INVALID)
    ok = (None, S.SUCCESS)
    for op, (make, names) in OPS.items():
        shapes = {k: np.shape(v) for k, v in make().items()}
        kinds = {k: np.asarray(v).dtype.kind for k, v in make().items()}
        shapes["out"] = valid_out(op).shape
        for a in arrays(op) + ["out"]:
            # LogSigmoid's buffer is never read (as CANN): only its presence matters
            unread = ok if a == "buffer" else None

            def row(fault, change, exc, frags):
                r.append((f"{op}-{a}-{fault}", op, change, exc[0], exc[1], frags))
            if a in OPTIONAL:
                row("None", _set(a, None), ok, [])
            elif a not in ("out", "lse_for_zloss"):  # out=None allocates; lse: see below
                row("None", _set(a, None), (TypeError, None), [a])
            integral = a in kinds and kinds[a] == "i"  # CE's target: a float one is wrong
            wrong = np.float32 if integral else np.int32
            row("dtype", _set(a, lambda kw, a=a, w=wrong: np.asarray(kw[a]).astype(w)), unread or inv,
                [a, "DT_FLOAT" if integral else "DT_INT32"])
            row("strings", _set(a, lambda kw, a=a: np.full(np.shape(kw[a]), "x")), (TypeError, None),
                ["dtype"] if a == "out" else [a])
            # CANN's rank limit of 8 where its op_api has one for the argument (RANK_LIMITED);
            # elsewhere rank 9 is only a shape the other arguments do not match
            row("rank9", _set(a, lambda kw, a=a: np.ones((1,) * 9, np.asarray(kw[a]).dtype)), unread or inv,
                [a, "larger than 8" if names[a] in RANK_LIMITED.get(op, ()) else "[" + ", ".join(["1"] * 9) + "]"])
            bad = _bad_shape(a, shapes[a])
            row("shape", _set(a, lambda kw, a=a, bad=bad: np.zeros(bad, np.asarray(kw[a]).dtype)), unread or inv,
                ["[" + ", ".join(map(str, bad)) + "]"])
            if a != "out":
                continue
            row("not-ndarray", _set("out", lambda kw: kw["out"].tolist()), (TypeError, None), ["out"])
            row("read-only", _set("out", lambda kw: np.lib.stride_tricks.as_strided(kw["out"], writeable=False)),
                (ValueError, None), ["out"])
            row("overlaps-itself",
                _set("out", lambda kw: np.lib.stride_tricks.as_strided(kw["out"], kw["out"].shape, (0, 4))), inv,
                [a, "overlap itself"])
            for inp in arrays(op):
                row(f"overlaps-{inp}", _overlap(inp), ok if inp == "buffer" else inv,
                    [a, inp, "partially overlaps"])
    for name, change, exc, frags in [
        ("softmax_backward-dim-2", _set("dim", 2), inv, ["provided dim 2 not in the range of input size 2."]),
        ("softmax_backward-dim--3", _set("dim", -3), inv, ["provided dim -3"]),
        ("softmax_backward-dim-str", _set("dim", "1"), (TypeError, None), []),
        ("softshrink_backward-lambd-negative", _set("lambd", -0.5), inv,
         ["lambd should be greater or equal to 0, but found to be [-0.500000]."]),
        ("softshrink_backward-lambd-nan", _set("lambd", float("nan")), inv, ["lambd should be greater"]),
        ("softshrink_backward-lambd-None", _set("lambd", None), (ascendgrad.AclnnError, S.ERR_PARAM_NULLPTR),
         ["lambd"]),
        ("softshrink_backward-lambd-bool", _set("lambd", True), inv, ["lambd", "DT_BOOL"]),
        ("softshrink_backward-lambd-array", _set("lambd", [0.5, 1.0]), (TypeError, None), ["lambd"]),
        ("softshrink_backward-lambd-str", _set("lambd", "0.5"), (TypeError, None), ["lambd"]),
        ("softshrink_backward-x-does-not-broadcast", _set("x", np.zeros((3, 1), np.float32)), inv, ["[3, 1]"]),
        ("cross_entropy_loss_grad-reduction-avg", _set("reduction", "avg"), inv, ["reduction", '"avg"']),
        ("cross_entropy_loss_grad-reduction-int", _set("reduction", 1), (TypeError, None), ["reduction"]),
        ("cross_entropy_loss_grad-reduction-none-scalar-grad", _set("reduction", "none"), inv, ["grad_loss", "[2]"]),
        ("cross_entropy_loss_grad-label_smoothing--0.1", _set("label_smoothing", -0.1), inv, ["label_smoothing"]),
        ("cross_entropy_loss_grad-label_smoothing-1.5", _set("label_smoothing", 1.5), inv, ["label_smoothing"]),
        ("cross_entropy_loss_grad-label_smoothing-nan", _set("label_smoothing", float("nan")), inv,
         ["label_smoothing"]),
        ("cross_entropy_loss_grad-zloss-inf", _set("lse_square_scale_for_zloss", float("inf")), inv,
         ["lse_square_scale_for_zloss"]),
        ("cross_entropy_loss_grad-lse-None-needed", _set("lse_for_zloss", None),
         (ascendgrad.AclnnError, S.ERR_PARAM_NULLPTR), ["lse_for_zloss"]),
        ("cross_entropy_loss_grad-ignore_index-2**63", _set("ignore_index", 2**63), (ValueError, None),
         ["ignore_index must fit in int64"]),
        ("cross_entropy_loss_grad-target-equal-C", _set("target", np.array([0, 3])), inv, ["Target 3", "bounds"]),
        ("cross_entropy_loss_grad-target-negative", _set("target", np.array([-1, 0], np.int32)), inv,
         ["Target -1", "bounds"]),
        ("cross_entropy_loss_grad-target-int16", _set("target", np.array([0, 2], np.int16)), inv,
         ["target", "DT_INT16"]),
        ("kl_div_backward-reduction-4", _set("reduction", 4), inv, ["reduction", "but got 4"]),
        ("kl_div_backward-reduction--1", _set("reduction", -1), inv, ["reduction", "but got -1"]),
        ("kl_div_backward-reduction-2**70", _set("reduction", 2**70), inv, ["reduction"]),
        ("kl_div_backward-reduction-typo", _set("reduction", "batch_mean"), inv, ["reduction", "batch_mean"]),
        ("kl_div_backward-reduction-float", _set("reduction", 1.0), (TypeError, None), ["reduction"]),
        ("kl_div_backward-grad_output-does-not-broadcast", _set("grad_output", np.zeros((2, 2, 3), np.float32)),
         inv, ["shape of grad_output must broadcast to [2, 3], but current is [2, 2, 3]"]),
    ]:
        r.append((name, name.split("-")[0], change, exc[0], exc[1], frags))
    return r


ROWS = rows()


@pytest.mark.parametrize("case", ROWS, ids=[r[0] for r in ROWS])
def test_numpy_api(case):
    _, op, change, exc, status, frags = case
    kw = OPS[op][0]()
    kw["out"] = valid_out(op)
    change(kw)
    memory = kw.pop("_memory", kw["out"])  # out's memory (shared with an input in overlap rows)
    fn = getattr(ascendgrad, op)
    if exc is None:
        fn(**kw)
        return
    arrays_now = lambda: [v for v in kw.values() if isinstance(v, np.ndarray)] + [np.asarray(memory)]  # noqa: E731
    before = [np.array(v, copy=True) for v in arrays_now()]
    with pytest.raises(exc) as e:
        fn(**kw)
    if exc is ascendgrad.AclnnError:
        assert e.value.status == status, str(e.value)
        assert C_OP[op] in str(e.value)
        for py_name, c_name in OPS[op][1].items():  # the NumPy API's names, not the C API's
            assert c_name == py_name or not re.search(rf"\b{c_name}\b", str(e.value)), str(e.value)
    for f in frags:
        assert f in str(e.value), str(e.value)
    for b, a in zip(before, arrays_now()):  # nothing written: out's canary, every input
        np.testing.assert_array_equal(a, b)


def test_matrix_size():
    """The matrix has a row for every argument of every function (a guard against a table that
    silently lost rows)."""
    per_op = {op: sum(1 for r in ROWS if r[1] == op) for op in OPS}
    assert all(n >= 10 for n in per_op.values()), per_op
    assert len(ROWS) >= 150


# ---- the raw two-phase API ----

def raw_tensors(op):
    """The raw phase-1 call of the valid problem: (function, positional args with aclnn.Tensor
    in place of arrays, C names in order, the output array)."""
    kw = OPS[op][0]()
    out = valid_out(op)
    T = aclnn.Tensor
    if op == "softmax_backward":
        return [T(kw["grad_output"]), T(kw["output"]), 1, T(out)], ["gradOutput", "output", None, "out"], out
    if op == "log_sigmoid_backward":
        return ([T(kw["grad_output"]), T(kw["x"]), T(kw["x"]), T(out)], ["gradOutput", "self", "buffer", "gradInput"],
                out)
    if op == "softshrink_backward":
        return ([T(kw["grad_output"]), T(kw["x"]), aclnn.Scalar(0.5, np.float32), T(out)],
                ["gradOutput", "self", "lambd", "gradInput"], out)
    if op == "cross_entropy_loss_grad":
        return ([T(np.asarray(kw["grad_loss"])), T(kw["log_prob"]), T(kw["target"]), T(kw["weight"]),
                 T(np.asarray(kw["grad_zloss"])), T(kw["lse_for_zloss"]), "mean", -100, 0.1, 0.5, T(out)],
                ["gradLoss", "logProb", "target", "weightOptional", "gradZlossOptional", "lseForZlossOptional",
                 None, None, None, None, "out"], out)
    return ([T(kw["grad_output"]), T(kw["x"]), T(kw["target"]), 1, False, T(out)],
            ["gradOutput", "self", "target", None, None, "out"], out)


RAW_NULLS = [(op, i, name) for op in OPS for i, name in enumerate(raw_tensors(op)[1]) if name]


@pytest.mark.parametrize("op,index,name", RAW_NULLS, ids=[f"{op}-{n}" for op, _, n in RAW_NULLS])
def test_raw_none_argument(op, index, name):
    args, _, out = raw_tensors(op)
    args[index] = None
    status, ws, ex = getattr(aclnn, op + "_get_workspace_size")(*args)
    msg = aclnn.get_recent_err_msg()
    if name in ("weightOptional", "gradZlossOptional"):
        assert status == S.SUCCESS and ex is not None
        assert getattr(aclnn, op)(None, ws, ex) == S.SUCCESS
        return
    assert (status, ws, ex) == (S.ERR_PARAM_NULLPTR, 0, None), msg
    assert C_OP[op] in msg and name in msg
    assert np.all(out == CANARY)


def prepared(op):
    args, _, out = raw_tensors(op)
    status, ws, ex = getattr(aclnn, op + "_get_workspace_size")(*args)
    assert status == S.SUCCESS, aclnn.get_recent_err_msg()
    return ws, ex, out


PHASE2 = ["executor-None", "executor-reused", "executor-destroyed-twice", "workspace-None-with-size",
          "workspace-too-small", "workspace-not-uint8", "executor-of-another-operator", "stream-closed"]


@pytest.mark.parametrize("fault", PHASE2)
@pytest.mark.parametrize("op", list(OPS))
def test_raw_phase2(op, fault):
    run = getattr(aclnn, op)
    ws, ex, out = prepared(op)
    if fault == "executor-None":
        assert run(None, 0, None) == S.ERR_PARAM_NULLPTR
        assert "executor" in aclnn.get_recent_err_msg()
        ex = None
    elif fault == "executor-reused":
        assert run(None, ws, ex) == S.SUCCESS
        out[...] = CANARY
        assert run(None, ws, ex) == S.ERR_PARAM_INVALID
        assert "not live" in aclnn.get_recent_err_msg()
    elif fault == "executor-destroyed-twice":
        assert aclnn.set_executor_repeatable(ex) == S.SUCCESS
        assert aclnn.destroy_executor(ex) == S.SUCCESS
        assert aclnn.destroy_executor(ex) == S.ERR_PARAM_INVALID
        assert "not live" in aclnn.get_recent_err_msg()
        assert run(None, ws, ex) == S.ERR_PARAM_INVALID
        assert aclnn.destroy_executor(None) == S.ERR_INNER_NULLPTR
    elif fault == "workspace-None-with-size":
        assert run(None, ws + 64, ex) == S.ERR_PARAM_INVALID
        assert "workspace is NULL" in aclnn.get_recent_err_msg()
    elif fault == "workspace-too-small":
        with pytest.raises(ValueError, match="fewer than workspace_size"):
            run(np.zeros(8, np.uint8), 64, ex)
    elif fault == "workspace-not-uint8":
        with pytest.raises(TypeError, match="uint8"):
            run(np.zeros(64, np.float32), 64, ex)
    elif fault == "executor-of-another-operator":
        other = "kl_div_backward" if op != "kl_div_backward" else "softmax_backward"
        assert getattr(aclnn, other)(None, ws, ex) == S.ERR_PARAM_INVALID
        assert C_OP[op] + "GetWorkspaceSize" in aclnn.get_recent_err_msg()
    elif fault == "stream-closed":
        stream = aclnn.Stream()
        stream.close()
        assert run(None, ws, ex, stream) == S.ERR_PARAM_INVALID
        assert "not a live stream" in aclnn.get_recent_err_msg()
    assert np.all(out == CANARY)
    if ex is not None:
        aclnn.destroy_executor(ex)  # the executors the faults left live (the rest answer 161002)
        aclnn.get_recent_err_msg()
