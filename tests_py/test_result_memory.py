"""Results of 1 MiB and more get memory that earlier results of their size class gave back
(bounded pool, _core's new_array): a loop calling an operator reuses pages instead of faulting
in fresh ones. Reused memory must be fully overwritten and never shared by live results."""

from __future__ import annotations

import numpy as np

import ascendgrad as ag
from ascendgrad import reference

SHAPE = (512, 1024)  # 2 MiB of float32


def _inputs(seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(SHAPE).astype(np.float32)
    y = rng.random(SHAPE).astype(np.float32)
    return g, y


def test_a_freed_result_is_reused_and_fully_overwritten():
    g, y = _inputs(0)
    a = ag.log_sigmoid_backward(g, y)
    address = a.ctypes.data
    a[...] = np.nan  # garbage the next result must not show
    del a
    g2, y2 = _inputs(1)
    b = ag.softshrink_backward(g2, y2, 0.5)
    assert b.ctypes.data == address
    np.testing.assert_array_equal(b, reference.softshrink_backward(g2, y2, 0.5).astype(np.float32))


def test_live_results_never_share_memory():
    g, y = _inputs(2)
    live = [ag.softmax_backward(g, y, -1) for _ in range(4)]
    del live[1]
    live += [ag.softmax_backward(g, y, -1) for _ in range(3)]
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            assert not np.shares_memory(a, b)
    want = ag.softmax_backward(g, y, -1, out=np.empty(SHAPE, np.float32))  # NumPy's memory
    for a in live:
        np.testing.assert_array_equal(a, want)


def test_results_are_ordinary_writeable_arrays():
    g, y = _inputs(3)
    a = ag.log_sigmoid_backward(g, y)
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    assert a.ctypes.data % 64 == 0
    a += 1  # usable like any array
    c = a.copy()
    del a
    assert c.shape == SHAPE
