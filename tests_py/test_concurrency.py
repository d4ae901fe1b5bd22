"""Threads and fork(): every operator from many Python threads at once gives exactly the serial
results (the GIL is released while kernels run, and they run in parallel themselves); one stream
fed from several threads; executors made on one thread and run on another; a child forked after
the parent ran parallel kernels computes the same results (kernels run serially in a child:
GNU libgomp's thread pool does not survive fork), and its parent's streams are not live there."""

import os
import threading
import time

import numpy as np
import pytest

import ascendgrad
from ascendgrad import aclnn

S = aclnn.Status
SHAPE = (64, 1024)  # above the kernels' threshold for going parallel


def problems():
    """One call per operator: (function, kwargs), on inputs large enough to run in parallel."""
    rng = np.random.default_rng(7)
    g = rng.standard_normal(SHAPE).astype(np.float32)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    y = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    target = rng.integers(0, SHAPE[1], SHAPE[0])
    return [
        (ascendgrad.softmax_backward, dict(grad_output=g, output=y, dim=1)),
        (ascendgrad.log_sigmoid_backward, dict(grad_output=g, x=x)),
        (ascendgrad.softshrink_backward, dict(grad_output=g, x=x, lambd=0.5)),
        (ascendgrad.cross_entropy_loss_grad, dict(grad_loss=np.float32(0.5), log_prob=np.log(y), target=target,
                                                   reduction="mean", label_smoothing=0.1)),
        (ascendgrad.kl_div_backward, dict(grad_output=g[:1], x=x, target=y, reduction="batchmean")),
    ]


@pytest.fixture
def two_threads():
    before = ascendgrad.get_num_threads()
    ascendgrad.set_num_threads(2)
    yield
    ascendgrad.set_num_threads(before)


def test_every_operator_from_many_threads_gives_the_serial_results(two_threads):
    calls = problems()
    serial = [fn(**kw).tobytes() for fn, kw in calls]
    bad = []

    def work(t):
        for _ in range(3):
            for k in range(len(calls)):
                i = (k + t) % len(calls)  # every thread in a different order
                fn, kw = calls[i]
                if fn(**kw).tobytes() != serial[i]:
                    bad.append((t, fn.__name__))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert bad == []


def raw_softmax(seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((32, 256))
    y = rng.random((32, 256))
    out = np.zeros_like(g)
    status, ws, ex = aclnn.softmax_backward_get_workspace_size(aclnn.Tensor(g), aclnn.Tensor(y), 1,
                                                               aclnn.Tensor(out))
    assert status == S.SUCCESS
    return ascendgrad.softmax_backward(g, y, 1), out, ws, ex


def test_one_stream_fed_from_several_threads():
    with aclnn.Stream() as stream:
        results = {}

        def work(t):
            for r in range(10):
                want, out, ws, ex = raw_softmax(100 * t + r)
                assert aclnn.softmax_backward(None, ws, ex, stream) == S.SUCCESS
                results[(t, r)] = (want, out)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert stream.synchronize() == S.SUCCESS
    assert len(results) == 40
    for want, out in results.values():
        np.testing.assert_array_equal(out, want)


def test_executors_made_on_one_thread_run_on_another():
    made = []
    maker = threading.Thread(target=lambda: made.extend(raw_softmax(s) for s in range(5)))
    maker.start()
    maker.join()
    statuses = []
    runner = threading.Thread(target=lambda: statuses.extend(aclnn.softmax_backward(None, ws, ex)
                                                             for _, _, ws, ex in made))
    runner.start()
    runner.join()
    assert statuses == [S.SUCCESS] * 5
    for want, out, _, _ in made:
        np.testing.assert_array_equal(out, want)


# ---- fork() ----

def in_child(body, timeout=120):
    """Runs body() in a forked child; returns its exit code (0: body returned True). A child that
    hangs is killed and fails the test."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if body() else 2
        finally:
            os._exit(code)  # never back into pytest
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def test_fork_after_parallel_kernels(two_threads):
    calls = problems()
    parent = [fn(**kw).tobytes() for fn, kw in calls]  # the parent's thread pool is up now

    def child():
        same = [fn(**kw).tobytes() for fn, kw in calls] == parent
        return same and ascendgrad.get_num_threads() == 1  # a child runs kernels serially

    assert in_child(child) == 0
    assert [fn(**kw).tobytes() for fn, kw in calls] == parent
    assert ascendgrad.get_num_threads() == 2  # the parent keeps its threads


def test_parent_stream_is_not_live_in_a_forked_child():
    stream = aclnn.Stream()
    want, out, ws, ex = raw_softmax(1)
    assert aclnn.softmax_backward(None, ws, ex, stream) == S.SUCCESS
    assert stream.synchronize() == S.SUCCESS  # its worker thread has run

    def child():
        _, out2, ws2, ex2 = raw_softmax(2)
        if aclnn.softmax_backward(None, ws2, ex2, stream) != S.ERR_PARAM_INVALID:
            return False
        if "fork()" not in aclnn.get_recent_err_msg() or np.any(out2 != 0):
            return False
        if stream.synchronize() == S.SUCCESS:  # an error, not a wait for a thread that is not there
            return False
        stream.close()  # and no hang
        with aclnn.Stream() as own:  # the child's own streams work
            want3, out3, ws3, ex3 = raw_softmax(3)
            ok = aclnn.softmax_backward(None, ws3, ex3, own) == S.SUCCESS and own.synchronize() == S.SUCCESS
        return ok and np.array_equal(out3, want3)

    assert in_child(child) == 0
    np.testing.assert_array_equal(out, want)
    _, out4, ws4, ex4 = raw_softmax(4)  # the parent's stream still works
    assert aclnn.softmax_backward(None, ws4, ex4, stream) == S.SUCCESS
    assert stream.synchronize() == S.SUCCESS
    stream.close()
