"""Memcheck through the raw API: each program runs in a subprocess with ASCENDGRAD_MEMCHECK set
(it is read when the library loads) and the exact lines on stderr are asserted. NumPy arrays are
known allocations of their size; device memory comes from the library's own aclrtMalloc (through
ctypes), so that a bug made in Python meets the same checks as in C."""

import os
import subprocess
import sys
import textwrap

import pytest

# The library _core is linked to, with aclrtMalloc/aclrtFree/aclrtMemcpy as the C program sees them.
PRELUDE = textwrap.dedent("""
    import ctypes, re
    import numpy as np
    from ascendgrad import aclnn
    lib_path = next(l.split()[-1] for l in open("/proc/self/maps") if "libascendgrad.so" in l)
    lib = ctypes.CDLL(lib_path)
    lib.aclrtMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_int]
    lib.aclrtFree.argtypes = [ctypes.c_void_p]
    lib.aclrtMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    def malloc(n):
        p = ctypes.c_void_p()
        assert lib.aclrtMalloc(ctypes.byref(p), n, 0) == 0
        print(f"@p={p.value:#x}")
        return p.value

    def device_array(p, ctype, n):  # an ndarray over device memory
        return np.ctypeslib.as_array((ctype * n).from_address(p))

    def softmax(g, y, out):
        s, ws, ex = aclnn.softmax_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y), 0, aclnn.Tensor(out))
        assert s == 0, aclnn.get_recent_err_msg()
        assert aclnn.softmax_backward(None, ws, ex) == 0
""")

CORRECT = """
rng = np.random.default_rng(0)
g, y, out = rng.standard_normal((3, 4)), rng.random((3, 4)), np.zeros((3, 4))
softmax(g, y, out)
softmax(g, y, g)  # in place
with aclnn.Stream() as st:
    s, ws, ex = aclnn.log_sigmoid_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y), aclnn.Tensor(y),
                                                               aclnn.Tensor(out))
    assert aclnn.set_executor_repeatable(ex) == 0
    for _ in range(3):
        assert aclnn.log_sigmoid_backward(None, ws, ex, st) == 0
    assert st.synchronize() == 0
    assert aclnn.destroy_executor(ex) == 0
s, ws, ex = aclnn.softshrink_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y), aclnn.Scalar(0.5, np.float64),
                                                         aclnn.Tensor(out))
del ex  # never run: destroyed with the object
s, ws, ex = aclnn.cross_entropy_loss_grad_get_workspace_size(
    aclnn.Tensor(np.float64(0.5)), aclnn.Tensor(np.log(y)), aclnn.Tensor(np.array([0, 1, 2])), None, None, None,
    "mean", -100, 0.0, 0.0, aclnn.Tensor(out))
assert aclnn.cross_entropy_loss_grad(None, ws, ex) == 0
s, ws, ex = aclnn.kl_div_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y), aclnn.Tensor(y), 1, False,
                                                     aclnn.Tensor(out))
assert aclnn.kl_div_backward(None, ws, ex) == 0
# device memory, filled by a copy, viewed as an array
p = malloc(96)
assert lib.aclrtMemcpy(p, 96, g.ctypes.data, 96, 1) == 0
softmax(device_array(p, ctypes.c_double, 12).reshape(3, 4), y, out)
assert lib.aclrtFree(p) == 0
import ascendgrad
ascendgrad.softmax_backward(g, y, 1)
"""

# The cross-entropy example's bug: int32 targets copied into 8 bytes, viewed as INT64 [2].
OUT_OF_BOUNDS = """
p = malloc(8)
assert lib.aclrtMemcpy(p, 8, np.zeros(2, np.int32).ctypes.data, 8, 1) == 0
target = device_array(p, ctypes.c_int64, 2)
log_prob, out = np.full((2, 3), -0.2, np.float32), np.zeros((2, 3), np.float32)
s, ws, ex = aclnn.cross_entropy_loss_grad_get_workspace_size(
    aclnn.Tensor(np.float32(0.1)), aclnn.Tensor(log_prob), aclnn.Tensor(target), None, None, None, "mean", -100, 0.0,
    0.0, aclnn.Tensor(out))
assert s == 0
lib.aclrtFree(p)
"""

USE_AFTER_FREE = """
p = malloc(32)
assert lib.aclrtMemcpy(p, 32, np.ones(4).ctypes.data, 32, 1) == 0
g = device_array(p, ctypes.c_double, 4)
assert lib.aclrtFree(p) == 0
softmax(g, np.ones(4), np.zeros(4))
"""

DOUBLE_FREE = """
p = malloc(16)
assert lib.aclrtFree(p) == 0
assert lib.aclrtFree(p) == 100000  # ACL_ERROR_INVALID_PARAM, not a crash
"""

UNINITIALISED = """
p = malloc(32)
softmax(device_array(p, ctypes.c_double, 4), np.ones(4), np.zeros(4))
lib.aclrtFree(p)
"""

LEAK = """
p = malloc(16)
"""

# CANN's op_api test logsigmoid_backward_testcase_026_exception_negative_dim through the raw C API:
# every tensor with view and storage dims {-1, -1}, then a valid view over a storage dim of -8
# reaching far past its 32 bytes. aclCreateTensor accepts them; phase 1 answers 161002 naming the
# argument and the dim, and nothing is read (memcheck would report the view past the block).
NEGATIVE_DIMS = """
P64 = ctypes.POINTER(ctypes.c_int64)
lib.aclCreateTensor.restype = ctypes.c_void_p
lib.aclCreateTensor.argtypes = [P64, ctypes.c_uint64, ctypes.c_int, P64, ctypes.c_int64, ctypes.c_int, P64,
                                ctypes.c_uint64, ctypes.c_void_p]
lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
lib.aclDestroyTensor.argtypes = [ctypes.c_void_p]
for fn in (lib.aclnnLogSigmoidBackwardGetWorkspaceSize, lib.aclnnSoftmaxBackwardGetWorkspaceSize):
    fn.restype = ctypes.c_int
ws, ex = ctypes.c_uint64(), ctypes.c_void_p()
p = malloc(32)

def tensor(view, storage, offset=0):
    v, s = (ctypes.c_int64 * len(view))(*view), (ctypes.c_int64 * len(storage))(*storage)
    t = lib.aclCreateTensor(v, len(view), 0, None, offset, 2, s, len(storage), ctypes.c_void_p(p))
    assert t, lib.aclGetRecentErrMsg()
    return ctypes.c_void_p(t)

ts = [tensor([-1, -1], [-1, -1]) for _ in range(4)]
assert lib.aclnnLogSigmoidBackwardGetWorkspaceSize(*ts, ctypes.byref(ws), ctypes.byref(ex)) == 161002
msg = lib.aclGetRecentErrMsg().decode()
assert "gradOutput" in msg and "negative size -1 in dimension 0" in msg, msg
wide, ok = tensor([1000], [-8], offset=5), tensor([8], [8])
lib.aclnnSoftmaxBackwardGetWorkspaceSize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
assert lib.aclnnSoftmaxBackwardGetWorkspaceSize(ok, wide, 0, ok, ctypes.byref(ws), ctypes.byref(ex)) == 161002
msg = lib.aclGetRecentErrMsg().decode()
assert "output" in msg and "negative storage size -8 in dimension 0" in msg, msg
assert not ex.value
for t in ts + [wide, ok]:
    assert lib.aclDestroyTensor(t) == 0
assert lib.aclrtFree(p) == 0
"""


def run(program, mode="1"):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCENDGRAD_MEMCHECK")}
    if mode:
        env["ASCENDGRAD_MEMCHECK"] = mode
    r = subprocess.run([sys.executable, "-c", PRELUDE + program], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    at = dict(line[1:].split("=") for line in r.stdout.splitlines() if line.startswith("@"))
    return r.stderr, at


def lines(*findings):
    return "".join(f"ascendgrad memcheck: {f}\n" for f in findings)


def test_correct_program_is_silent():
    assert run(CORRECT)[0] == ""


def test_negative_dims_are_rejected_and_never_read():
    assert run(NEGATIVE_DIMS)[0] == ""


@pytest.mark.parametrize("program, expected", [
    (OUT_OF_BOUNDS, ["out-of-bounds view: aclnnCrossEntropyLossGradGetWorkspaceSize argument 'target' (INT64 [2]) "
                     "reads bytes [0, 16) of an allocation of 8 bytes at {p} (aclrtMalloc #1): 8 bytes after the block",
                     "summary: 1 finding: out-of-bounds view 1"]),
    (USE_AFTER_FREE, ["use after free: aclnnSoftmaxBackwardGetWorkspaceSize argument 'gradOutput' (DOUBLE [4]) reads "
                      "bytes [0, 32) inside a block of 32 bytes at {p} freed by aclrtFree #1 (allocated by aclrtMalloc #1)",
                      "summary: 1 finding: use after free 1"]),
    (DOUBLE_FREE, ["double free: aclrtFree({p}): a block of 16 bytes already freed by aclrtFree #1 (allocated by "
                   "aclrtMalloc #1)", "summary: 1 finding: double or invalid free 1"]),
    (UNINITIALISED, ["uninitialised read: aclnnSoftmaxBackward argument 'gradOutput' (DOUBLE [4]) reads bytes [0, 32) "
                     "of an allocation of 32 bytes at {p} (aclrtMalloc #1): bytes [0, 32) were never written",
                     "summary: 1 finding: uninitialised read 1"]),
    (LEAK, ["leak: allocation of 16 bytes at {p} (aclrtMalloc #1) still live at exit", "summary: 1 finding: leak 1"]),
], ids=["out_of_bounds", "use_after_free", "double_free", "uninitialised", "leak"])
def test_bug_is_reported_exactly(program, expected):
    err, at = run(program)
    assert err == lines(*expected).replace("{p}", at["p"])
    assert run(program, mode="")[0] == ""  # off: nothing printed
