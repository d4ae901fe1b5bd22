"""64-bit indexing: every operator on a float16 tensor of more than 2**31 elements (4 GiB), run
in place so that one such tensor is enough. Rows repeat with a period of 1000, which divides
neither 2**20 nor 2**21 rows (2**31 and 2**32 elements): an index that wraps at 32 bits reads or
writes another row and shows as a mismatch (or a crash), wherever it happens.

Slow (a minute or two on 2 cores, 5 GiB of memory): not in the default run. Run it with
``python -m pytest -m slow tests_py/test_scale.py``."""

import numpy as np
import pytest

import ascendgrad

pytestmark = pytest.mark.slow

COLS = 2048
ROWS = 2**20 + 3  # 2**31 + 6144 elements
PERIOD = 1000
# rows around 2**31 elements, at the end, and others
CHECK = np.unique(np.r_[0, PERIOD - 1, PERIOD, 2**20 - 2, 2**20 - 1, 2**20, 2**20 + 1, ROWS - 1,
                        np.random.default_rng(0).integers(0, ROWS, 300)])


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(autouse=True)
def enough_memory():
    if mem_available() < 6 * 2**30:
        pytest.skip("needs 6 GiB of free memory")


def periodic(block):
    """A (ROWS, COLS) array whose row i is block[i % PERIOD]."""
    big = np.empty((ROWS, COLS), block.dtype)
    for s in range(0, ROWS, PERIOD):
        n = min(PERIOD, ROWS - s)
        big[s:s + n] = block[:n]
    return big


def row_view(row):
    """A (ROWS, COLS) view of one row (stride 0 across rows: no memory)."""
    return np.lib.stride_tricks.as_strided(row, (ROWS, COLS), (0, row.strides[0]))


def block_of(seed, lo=-4.0, hi=4.0):
    return np.random.default_rng(seed).uniform(lo, hi, (PERIOD, COLS)).astype(np.float16)


def expect_periodic(big, want):
    """Every checked row of the result equals the small problem's row of the same phase."""
    assert big.shape[0] * big.shape[1] > 2**31
    got = big[CHECK]
    np.testing.assert_array_equal(got, want[CHECK % PERIOD])


def test_log_sigmoid_backward():
    xb, g = block_of(1), block_of(2)[0]
    want = ascendgrad.log_sigmoid_backward(np.broadcast_to(g, xb.shape), xb)
    x = periodic(xb)
    ascendgrad.log_sigmoid_backward(row_view(g), x, out=x)
    expect_periodic(x, want)


def test_softshrink_backward():
    xb, g = block_of(3), block_of(4)[0]
    want = ascendgrad.softshrink_backward(g, xb, 1.0)
    x = periodic(xb)
    ascendgrad.softshrink_backward(g, x, 1.0, out=x)  # g (COLS,) broadcasts
    expect_periodic(x, want)


def test_softmax_backward():
    gb = block_of(5)
    y = np.random.default_rng(6).dirichlet(np.ones(COLS)).astype(np.float16)
    want = ascendgrad.softmax_backward(gb, np.broadcast_to(y, gb.shape), 1)
    g = periodic(gb)
    ascendgrad.softmax_backward(g, row_view(y), 1, out=g)
    expect_periodic(g, want)


def test_kl_div_backward():
    gb, t = block_of(7), block_of(8, 0, 1)[0]
    x = np.zeros(COLS, np.float16)  # not read; a view of ROWS x COLS without memory
    want = ascendgrad.kl_div_backward(gb, np.broadcast_to(x, gb.shape), np.broadcast_to(t, gb.shape), "none")
    g = periodic(gb)
    ascendgrad.kl_div_backward(g, row_view(x), row_view(t), "none", out=g)
    expect_periodic(g, want)


def test_cross_entropy_loss_grad():
    logits = block_of(9)
    lb = (logits - np.log(np.exp(logits.astype(np.float32)).sum(1, keepdims=True))).astype(np.float16)
    tb = np.random.default_rng(10).integers(0, COLS, PERIOD)
    kw = dict(reduction="sum", label_smoothing=0.1)
    want = ascendgrad.cross_entropy_loss_grad(np.float16(0.5), lb, tb, **kw)
    lp = periodic(lb)
    target = np.resize(tb, ROWS)  # the same period
    ascendgrad.cross_entropy_loss_grad(np.float16(0.5), lp, target, out=lp, **kw)
    expect_periodic(lp, want)
