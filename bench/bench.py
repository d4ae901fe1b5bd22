"""Benchmark: ascendgrad against PyTorch CPU and a same-size memory copy, in one process, at one
thread count for both libraries.

For every operator x dtype (f32, f16, bf16, f64) x size (1x1000, 16x4096, 256x4096 and 2048x4096,
which sit in L1/L2/L3, then 64 MiB per tensor; with --sweep every 4x from 1x4096 to 16384x4096 =
64 M elements, 2048x4096 and 64 MiB per tensor among them;
softmax also over the middle dim of (64, 1024, 64), (32, 64, 4096) and (16, 4096, 8) and over last
dims of 32000 and 10; cross entropy also with label smoothing, and over 10 classes) it times:

  ours    the NumPy call (ascendgrad.<op>)
  torch   the computation PyTorch runs for the same gradient: _softmax_backward_data;
          log_sigmoid_backward (with the forward's buffer); softshrink_backward; nll_loss_backward
          then _log_softmax_backward_data, plus the ops autograd adds for label smoothing;
          kl_div: the ops autograd runs for F.kl_div(reduction="batchmean") (div, neg, mul)
  copy    a memory copy of the output's size: the faster of NumPy's copyto (memcpy, one thread)
          and torch's copy_ (all threads), so that fractions of it are conservative
  alloc   np.empty of the output's shape and dtype + fill(0): what allocating and first-touching a
          result costs (an end-to-end call should cost at most its kernel + this)

in two modes (see shared notes on calibration): "kernel", every output preallocated (out=; where
PyTorch needs temporaries they are preallocated too), and "end to end", the call allocates its
result as users call it, timed twice: results freed after each call, and results kept alive (as a
notebook keeps them; fresh pages every call). Repetitions are interleaved, in a new (seeded
random) order each time, and medians reported (end to end also the spread, the interquartile
range, as PyTorch's: an allocating call must not swing more than theirs). The kernel mode is timed once more "warm": each
library's same call back to back, in blocks (inputs in cache where they fit, as in a loop of that
call; the interleaved calls find them evicted by the others' data). Bandwidth =
the bytes the operator must move at least (each input read once, the output written once) /
kernel time, as a fraction of the copy's (bytes read + written) / time.

Every ISA path the CPU has runs side by side (one process each: ASCENDGRAD_ISA=baseline|avx2|...
for ours, ATEN_CPU_CAPABILITY=default|avx2|avx512 for PyTorch's matching kernels); each row records
the CPU model, the ISA path and the thread count, and RESULTS.md has one table per path.

Also the per-call overhead on a tiny tensor (1 x 8 float32): the NumPy call, and the two-phase C
call (bench/overhead.cpp, built with the C++ compiler against the installed package).

    pip install '.[bench]'
    python bench/bench.py [--threads N] [--reps 7] [--quick | --sweep] [--isa all|best|NAME]
                          [--record bench/RESULTS.md] [--json FILE] [--chart FILE]

prints the tables and every target missed; --record replaces this CPU's section of a RESULTS.md ("##
Operator benchmarks on CPU, N threads": one table per ISA path, a line per operator and dtype;
the file's other sections stay), --json writes every row, --chart the bandwidth fraction of the
large sizes per operator and dtype (needs matplotlib). Nothing is written unless asked.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import ml_dtypes
import numpy as np

import ascendgrad
from ascendgrad import _core

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the tables then have no PyTorch columns
    torch = None

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}
LARGE_BYTES = 64 << 20  # per tensor
PAUSE_S = 0.005  # before each timed call (time_interleaved)
# before each block of warm calls (time_warm): longer than either OpenMP runtime spins after a
# parallel region (libgomp's default: 300,000 pauses, 5-15 ms), so that no block shares the cores
# with the other library's spinning threads
WARM_PAUSE_S = 0.05
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench/_cpu.py, also when this file is loaded by path
from _cpu import cpu_model, replace_section  # noqa: E402


@dataclass
class Case:
    op: str
    case: str
    dtype: str
    bytes_moved: int  # the least an operator must read and write
    copy_bytes: int  # size of the copied buffer (the output's)
    ours_k: object
    ours_e: object
    torch_k: object = None
    torch_e: object = None
    out_shape: tuple = ()
    out_dtype: object = None


@dataclass
class Row:
    op: str
    case: str
    dtype: str
    ours_ms: float
    torch_ms: float | None
    ours_e2e_ms: float
    torch_e2e_ms: float | None
    copy_ms: float
    bytes_moved: int
    copy_bytes: int
    alloc_ms: float = 0.0  # np.empty + fill(0) of the output, interleaved with the e2e calls
    ours_keep_ms: float = 0.0  # end to end with every result kept alive
    torch_keep_ms: float | None = None
    alloc_keep_ms: float = 0.0
    ours_warm_ms: float = 0.0  # kernel, the same call back to back (inputs in cache where they fit)
    torch_warm_ms: float | None = None
    # end to end spreads (interquartile ranges, ms) of the same interleaved calls: freed, kept alive
    ours_e2e_iqr: float = 0.0
    torch_e2e_iqr: float | None = None
    ours_keep_iqr: float = 0.0
    torch_keep_iqr: float | None = None
    cpu: str = ""
    isa: str = ""
    threads: int = 0
    speedup: float | None = field(default=None)
    speedup_e2e: float | None = field(default=None)
    speedup_keep: float | None = field(default=None)
    speedup_warm: float | None = field(default=None)
    bw_fraction: float = 0.0

    def finish(self):
        self.speedup = None if self.torch_ms is None else self.torch_ms / self.ours_ms
        self.speedup_e2e = None if self.torch_e2e_ms is None else self.torch_e2e_ms / self.ours_e2e_ms
        self.speedup_keep = None if self.torch_keep_ms is None else self.torch_keep_ms / self.ours_keep_ms
        self.speedup_warm = None if self.torch_warm_ms is None else self.torch_warm_ms / self.ours_warm_ms
        copy_bw = 2 * self.copy_bytes / self.copy_ms
        self.bw_fraction = (self.bytes_moved / self.ours_ms) / copy_bw
        return self


# ---- data and the two libraries' calls ----


def to_torch(a):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def torch_dtype(dt):
    return {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16,
            np.dtype(ml_dtypes.bfloat16): torch.bfloat16, np.dtype(np.float64): torch.float64}[np.dtype(dt)]


def rand(shape, dt, kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        a = rng.standard_normal(shape, dtype=np.float32)
    elif kind == "prob":  # rows of a softmax along `kind`'s dim are made by the caller
        a = rng.random(shape, dtype=np.float32) + np.float32(0.01)
    else:
        raise ValueError(kind)
    return a.astype(dt)


def sizes(dname, quick, sweep=False):
    """(name, shape) of the 2-D sizes: L1/L2/L3-resident ones, then LARGE_BYTES per tensor; with sweep
    every 4x from 4 K to 64 M elements (the single-thread / parallel boundary, 32 K, falls between 16 K
    and 64 K; each level of cache gets at least one size)."""
    if quick:
        return [("1x1000", (1, 1000)), ("256x4096", (256, 4096))]
    rows = LARGE_BYTES // (4096 * np.dtype(DTYPES[dname]).itemsize)
    steps = (1, 4, 16, 64, 256, 1024, 2048) if sweep else (16, 256, 2048)
    out = [("1x1000", (1, 1000))] + [(f"{r}x4096", (r, 4096)) for r in steps] + [(f"{rows}x4096", (rows, 4096))]
    if sweep:
        out.append(("16384x4096", (16384, 4096)))
    return sorted(dict.fromkeys(out), key=lambda s: np.prod(s[1]))


def guarded(fn):
    """fn, or None when PyTorch cannot run it (dtype unsupported on CPU)."""
    if fn is None:
        return None
    try:
        fn()
        return fn
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def softmax_case(dname, name, shape, dim):
    dt = DTYPES[dname]
    y = rand(shape, np.float32, "prob", 1)
    y = (y / y.sum(dim, keepdims=True)).astype(dt)
    g = rand(shape, dt, "normal", 2)
    out = np.empty_like(g)
    c = Case("softmax_backward", name, dname, 3 * g.nbytes, g.nbytes,
             lambda: ascendgrad.softmax_backward(g, y, dim, out=out),
             lambda: ascendgrad.softmax_backward(g, y, dim))
    c.out_shape, c.out_dtype = out.shape, out.dtype
    if torch is not None:
        tg, ty, to, tdt = to_torch(g), to_torch(y), to_torch(out).clone(), torch_dtype(dt)
        c.torch_k = guarded(lambda: torch.ops.aten._softmax_backward_data.out(tg, ty, dim, tdt, grad_input=to))
        c.torch_e = guarded(lambda: torch.ops.aten._softmax_backward_data(tg, ty, dim, tdt))
    return c


def logsigmoid_case(dname, name, shape):
    dt = DTYPES[dname]
    x, g = rand(shape, dt, "normal", 3) * dt(4), rand(shape, dt, "normal", 4)
    out = np.empty_like(g)
    c = Case("log_sigmoid_backward", name, dname, 3 * g.nbytes, g.nbytes,
             lambda: ascendgrad.log_sigmoid_backward(g, x, out=out),
             lambda: ascendgrad.log_sigmoid_backward(g, x))
    c.out_shape, c.out_dtype = out.shape, out.dtype
    if torch is not None:
        tg, tx, to = to_torch(g), to_torch(x), to_torch(out).clone()
        buf = guarded(lambda: torch.ops.aten.log_sigmoid_forward(tx)) and torch.ops.aten.log_sigmoid_forward(tx)[1]
        if buf is not None:
            c.torch_k = guarded(lambda: torch.ops.aten.log_sigmoid_backward.grad_input(tg, tx, buf, grad_input=to))
            c.torch_e = guarded(lambda: torch.ops.aten.log_sigmoid_backward(tg, tx, buf))
    return c


def softshrink_case(dname, name, shape):
    dt = DTYPES[dname]
    x, g = rand(shape, dt, "normal", 5), rand(shape, dt, "normal", 6)
    out = np.empty_like(g)
    c = Case("softshrink_backward", name, dname, 3 * g.nbytes, g.nbytes,
             lambda: ascendgrad.softshrink_backward(g, x, 0.5, out=out),
             lambda: ascendgrad.softshrink_backward(g, x, 0.5))
    c.out_shape, c.out_dtype = out.shape, out.dtype
    if torch is not None:
        tg, tx, to = to_torch(g), to_torch(x), to_torch(out).clone()
        c.torch_k = guarded(lambda: torch.ops.aten.softshrink_backward.grad_input(tg, tx, 0.5, grad_input=to))
        c.torch_e = guarded(lambda: torch.ops.aten.softshrink_backward(tg, tx, 0.5))
    return c


def smoothing_label(eps):
    """Cross entropy's case-name suffix for label smoothing eps."""
    return "" if eps == 0 else f" ls={eps}"


def cross_entropy_case(dname, name, shape, eps):
    dt = DTYPES[dname]
    n, classes = shape
    logits = rand(shape, np.float64, "normal", 7) * 3
    lp = (logits - np.log(np.exp(logits).sum(1, keepdims=True))).astype(dt)
    target = np.random.default_rng(8).integers(0, classes, n)
    gl = np.array(1.0, dt)
    out = np.empty_like(lp)
    c = Case("cross_entropy_loss_grad", name + smoothing_label(eps), dname, 2 * lp.nbytes + target.nbytes, lp.nbytes,
             lambda: ascendgrad.cross_entropy_loss_grad(gl, lp, target, label_smoothing=eps, out=out),
             lambda: ascendgrad.cross_entropy_loss_grad(gl, lp, target, label_smoothing=eps))
    c.out_shape, c.out_dtype = out.shape, out.dtype
    if torch is None:
        return c
    tlp, tt, tgl, tdt = to_torch(lp), torch.from_numpy(target), to_torch(gl), torch_dtype(dt)
    tw = torch.tensor(float(n), dtype=tdt)  # total weight of 'mean' without weights, ignore_index unused
    tmp, tmp2, to = torch.empty_like(tlp), torch.empty_like(tlp), torch.empty_like(tlp)
    nll_out = torch.ops.aten.nll_loss_backward.grad_input
    lsm_out = torch.ops.aten._log_softmax_backward_data.out
    if eps == 0:
        def tk():
            nll_out(tgl, tlp, tt, None, 1, -100, tw, grad_input=tmp)
            lsm_out(tmp, tlp, 1, tdt, out=to)

        def te():
            gi = torch.ops.aten.nll_loss_backward(tgl, tlp, tt, None, 1, -100, tw)
            return torch.ops.aten._log_softmax_backward_data(gi, tlp, 1, tdt)
    else:
        # what autograd runs for cross_entropy(label_smoothing=eps): the nll term scaled by 1 - eps,
        # the smoothing term -(eps / C) * sum_c lp / N, masked on ignored rows, added, then the
        # log_softmax backward (torch.profiler of that backward: nll_loss_backward, the sum's expand,
        # masked_fill, mul, add, _log_softmax_backward_data)
        keep = tt != -100

        def smooth():
            s = (tgl * (eps / classes) / n).expand(n).masked_fill(~keep, 0)
            return torch.neg(s).unsqueeze(1).expand(n, classes)

        def tk():
            nll_out(tgl * (1 - eps), tlp, tt, None, 1, -100, tw, grad_input=tmp)
            torch.add(tmp, smooth(), out=tmp2)
            lsm_out(tmp2, tlp, 1, tdt, out=to)

        def te():
            gi = torch.ops.aten.nll_loss_backward(tgl * (1 - eps), tlp, tt, None, 1, -100, tw)
            return torch.ops.aten._log_softmax_backward_data(gi + smooth(), tlp, 1, tdt)
    c.torch_k, c.torch_e = guarded(tk), guarded(te)
    if c.torch_e is not None and dname == "f64":  # the same gradient as ascendgrad's and autograd's
        x = torch.from_numpy(logits).requires_grad_()
        (auto,) = torch.autograd.grad(F.cross_entropy(x, tt, label_smoothing=eps), x)
        np.testing.assert_allclose(te().numpy(), auto.numpy(), atol=1e-12)
        np.testing.assert_allclose(c.ours_e(), auto.numpy(), atol=1e-12)
    return c


def kl_div_case(dname, name, shape):
    dt = DTYPES[dname]
    n = shape[0]
    x = rand(shape, dt, "normal", 9)
    t = rand(shape, dt, "prob", 10)
    g = np.array(1.0, dt)
    out = np.empty_like(x)
    c = Case("kl_div_backward", name, dname, 2 * x.nbytes, x.nbytes,
             lambda: ascendgrad.kl_div_backward(g, x, t, "batchmean", out=out),
             lambda: ascendgrad.kl_div_backward(g, x, t, "batchmean"))
    c.out_shape, c.out_dtype = out.shape, out.dtype
    if torch is None:
        return c
    # autograd of F.kl_div(x, t, reduction="batchmean"): div (by N), expand, neg, mul
    tg, tt = to_torch(g), to_torch(t)
    tmp, to = torch.empty_like(tt), torch.empty_like(tt)

    def tk():
        torch.neg((tg / n).expand(shape), out=tmp)
        torch.mul(tmp, tt, out=to)

    c.torch_k = guarded(tk)
    c.torch_e = guarded(lambda: torch.mul(torch.neg((tg / n).expand(shape)), tt))
    return c


def cases(quick, sweep=False):
    """("operator case dtype", maker) of every case; a maker builds its data when called (the large
    ones hold 3-5 tensors of 64 MiB), so a case that --only skips costs nothing."""
    def case(op, make, dname, name, *rest):
        label = smoothing_label(rest[-1]) if make is cross_entropy_case else ""
        return f"{op} {name}{label} {dname}", partial(make, dname, name, *rest)

    for dname in DTYPES:
        for name, shape in sizes(dname, quick, sweep):
            yield case("softmax_backward", softmax_case, dname, name, shape, 1)
            yield case("log_sigmoid_backward", logsigmoid_case, dname, name, shape)
            yield case("softshrink_backward", softshrink_case, dname, name, shape)
            yield case("cross_entropy_loss_grad", cross_entropy_case, dname, name, shape, 0.0)
            yield case("cross_entropy_loss_grad", cross_entropy_case, dname, name, shape, 0.1)
            yield case("kl_div_backward", kl_div_case, dname, name, shape)
        if not quick:
            yield case("softmax_backward", softmax_case, dname, "64x1024x64 dim 1", (64, 1024, 64), 1)
            yield case("softmax_backward", softmax_case, dname, "32x64x4096 dim 1", (32, 64, 4096), 1)
            yield case("softmax_backward", softmax_case, dname, "512x32000", (512, 32000), 1)
            # short lines and a small innermost dim: per-line costs, partial vectors
            yield case("softmax_backward", softmax_case, dname, "65536x10", (65536, 10), 1)
            yield case("softmax_backward", softmax_case, dname, "16x4096x8 dim 1", (16, 4096, 8), 1)
            yield case("cross_entropy_loss_grad", cross_entropy_case, dname, "65536x10", (65536, 10), 0.0)


# ---- timing ----


def copies(nbytes):
    """Same-size copies: NumPy's copyto (memcpy) and torch's copy_ (parallel)."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    fns = [lambda: np.copyto(dst, src)]
    if torch is not None:
        ts, td = torch.from_numpy(src), torch.from_numpy(dst)
        fns.append(lambda: td.copy_(ts))
    return fns


def median(ts):
    return None if ts is None else statistics.median(ts)


def iqr(ts):
    """Interquartile range: the spread of the middle half of the times (0 for a single one)."""
    if ts is None:
        return None
    if len(ts) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(ts, n=4, method="inclusive")
    return q3 - q1


def time_interleaved(fns, reps, keep=False):
    """The times (ms) of each fn's calls (None for a None fn), interleaved; keep: every result kept
    alive until all are timed."""
    times = [[] for _ in fns]
    kept = []
    for f in fns:
        if f:
            f()  # warm up: first touch, caches
    order, shuffle = list(range(len(fns))), random.Random(0).shuffle
    for _ in range(reps):
        # a new order each repetition, so that no call always follows the same other one (whose
        # data in the caches, freed or fresh pages, or spinning threads it would inherit)
        shuffle(order)
        for i in order:
            f = fns[i]
            if f:
                # both libraries' OpenMP runtimes (two copies: torch bundles its own) spin for a
                # while after a parallel region; a pause lets the other one's threads go idle so
                # that they do not take the cores from the call being timed
                time.sleep(PAUSE_S)
                t0 = time.perf_counter()
                r = f()
                times[i].append((time.perf_counter() - t0) * 1e3)
                if keep:
                    kept.append(r)
                del r
    del kept
    return [t if t else None for t in times]


def time_warm(fns, rounds=3, budget_s=0.05):
    """Median ms of each fn called back to back, as a loop of the same call runs: its inputs stay in
    cache where they fit, its threads awake. Blocks of calls, one fn's at a time, alternating for
    `rounds`; the pause before each block lets the other library's threads go to sleep."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for i, f in enumerate(fns):
            if not f:
                continue
            time.sleep(WARM_PAUSE_S)
            t0 = time.perf_counter()
            f()
            f()  # (the second call is the first warm one: its time sizes the block)
            n = int(min(51, max(5, budget_s / max((time.perf_counter() - t0) / 2, 1e-7))))
            for _ in range(n):
                t0 = time.perf_counter()
                f()
                times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) * 1e3 if t else None for t in times]


def alloc_fill(shape, dtype):
    def f():
        a = np.empty(shape, dtype)
        a.fill(0)
        return a

    return f


def run_case(c: Case, reps, env):
    alloc = alloc_fill(c.out_shape, c.out_dtype)
    fns = [c.ours_k, c.torch_k, c.ours_e, c.torch_e, alloc] + copies(c.copy_bytes)
    # small problems: more repetitions, so that medians settle
    r = reps if c.copy_bytes > (1 << 20) else max(reps, 51)
    ok, tk, oe, te, al, *cp = time_interleaved(fns, r)
    # end to end again with every result kept alive (fresh pages each call)
    ke, kt, ka = time_interleaved([c.ours_e, c.torch_e, alloc], min(r, 11), keep=True)
    wo, wt = time_warm([c.ours_k, c.torch_k])
    m = median
    return Row(c.op, c.case, c.dtype, m(ok), m(tk), m(oe), m(te), min(map(m, cp)), c.bytes_moved, c.copy_bytes,
               m(al), m(ke), m(kt), m(ka), wo, wt, iqr(oe), iqr(te), iqr(ke), iqr(kt), **env).finish()


def per_call_us(fn, calls=5000, rounds=7):
    fn()
    t = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(t)


def numpy_overhead():
    """Per-call time of each NumPy function on a 1 x 8 float32 tensor, allocating and with out=."""
    g = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    x = np.linspace(-2, 0, 8, dtype=np.float32).reshape(1, 8)
    out = np.empty_like(g)
    gl, t = np.array(1.0, np.float32), np.array([3])
    calls = {
        "softmax_backward": (lambda: ascendgrad.softmax_backward(g, x, -1),
                             lambda: ascendgrad.softmax_backward(g, x, -1, out=out)),
        "log_sigmoid_backward": (lambda: ascendgrad.log_sigmoid_backward(g, x),
                                 lambda: ascendgrad.log_sigmoid_backward(g, x, out=out)),
        "softshrink_backward": (lambda: ascendgrad.softshrink_backward(g, x, 0.5),
                                lambda: ascendgrad.softshrink_backward(g, x, 0.5, out=out)),
        "cross_entropy_loss_grad": (lambda: ascendgrad.cross_entropy_loss_grad(gl, x, t),
                                    lambda: ascendgrad.cross_entropy_loss_grad(gl, x, t, out=out)),
        "kl_div_backward": (lambda: ascendgrad.kl_div_backward(gl, x, g, "batchmean"),
                            lambda: ascendgrad.kl_div_backward(gl, x, g, "batchmean", out=out)),
    }
    return {op: {"alloc_us": per_call_us(a), "out_us": per_call_us(o)} for op, (a, o) in calls.items()}


def c_overhead():
    """ns per phase 1 + phase 2 of each operator (bench/overhead.cpp), or None without a compiler."""
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        return None
    from ascendgrad import _paths

    lib = str(_paths.lib_dir())
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "overhead")
        subprocess.run([cxx, "-O2", "-std=c++17", str(HERE / "overhead.cpp"), "-I", str(_paths.include_dir()),
                        "-L", lib, f"-Wl,-rpath,{lib}", "-lascendgrad", "-o", exe], check=True)
        res = subprocess.run([exe], check=True, capture_output=True, text=True)
    return json.loads(res.stdout)


# ---- report ----


def huge_pages():
    """The kernel's transparent-huge-page mode and how much of this process sits on huge pages: on a
    VM they can decide how fast an array's memory is, so a run says which it had."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read().split("[")[1].split("]")[0]
        with open("/proc/self/smaps_rollup") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("AnonHugePages:"))
    except (OSError, IndexError, StopIteration, ValueError):
        return "transparent huge pages: unknown"
    return f"transparent huge pages: {mode}, {kib >> 10} MiB of this process on them at the end"


def machine(threads):
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "threads": threads,
        "kernel_isa": _core.kernel_isa() if hasattr(_core, "kernel_isa") else "?",
        "torch_capability": torch.backends.cpu.get_cpu_capability() if torch else None,
        "torch": torch.__version__ if torch else None,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "load_before": os.getloadavg(),
    }


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def speedups(rows, attr):
    """'lowest / median' of a speed-up over rows, or '-' where PyTorch was not timed."""
    v = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
    return f"{min(v):.2f} / {statistics.median(v):.2f}x" if v else "-"


def table(rows):
    """One line per operator and dtype the targets are for (float64, ascendgrad's own dtype for
    gradchecks, only in the JSON): its cases' lowest and median speed-up in each mode, and the
    bandwidth of its large sizes (64 MiB per tensor and more); every case is in the JSON."""
    out = ["| operator | dtype | cases | kernel | end to end | results kept | kernel, warm | bandwidth vs copy, large |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for op in dict.fromkeys(r.op for r in rows):
        for d in (d for d in DTYPES if d != "f64"):
            rs = [r for r in rows if r.op == op and r.dtype == d]
            if not rs:
                continue
            bw = sorted({f"{r.bw_fraction:.0%}" for r in rs if is_large(r)}, key=lambda s: int(s[:-1]))
            out.append(f"| {op} | {d} | {len(rs)} | {speedups(rs, 'speedup')} | {speedups(rs, 'speedup_e2e')} | "
                       f"{speedups(rs, 'speedup_keep')} | {speedups(rs, 'speedup_warm')} | "
                       f"{'–'.join(dict.fromkeys(bw[:1] + bw[-1:])) or '-'} |")
    return out


def section_title(info):
    """The heading of one CPU's section of RESULTS.md: a run replaces the section of its CPU and
    thread count, and keeps the others."""
    return f"## Operator benchmarks on {info['cpu']}, {info['threads']} threads"


def markdown(runs, over, cover, reps):
    """runs: [(info, rows)], one per ISA path. The body of the CPU's section (its title apart)."""
    info0 = runs[0][0]
    out = [
        f"{info0['cores']} cores; {info0['threads']} threads for both libraries; PyTorch {info0['torch'] or 'absent'}, "
        f"NumPy {info0['numpy']}; {info0['date']}; medians of {reps} interleaved repetitions (51 for sizes under "
        f"1 MiB; results kept alive: up to 11); {huge_pages()}.",
    ]
    for info, rows in runs:
        out += ["", f"### ISA path {info['kernel_isa']} (PyTorch capability {info['torch_capability']}); load average "
                f"{info['load_before'][0]:.2f} before, {info['load_after'][0]:.2f} after", ""]
        out += table(rows)
        out += targets_summary(targets(rows))
    alloc = [v["alloc_us"] for v in over.values()]
    out_us = [v["out_us"] for v in over.values()]
    c = "" if cover is None else f", the two-phase C call {min(cover.values()) / 1e3:.2f}–{max(cover.values()) / 1e3:.2f} µs"
    out += ["", f"Per-call floor, 1 x 8 float32, the five operators (ISA path {runs[-1][0]['kernel_isa']}): the NumPy "
            f"call {min(alloc):.2f}–{max(alloc):.2f} µs (`out=`: {min(out_us):.2f}–{max(out_us):.2f} µs){c}."]
    out += overhead_targets(over, cover)
    return "\n".join(out) + "\n"


FUSED = ("cross_entropy_loss_grad", "kl_div_backward")
ELEMENTWISE = ("log_sigmoid_backward", "softshrink_backward")


def is_large(r):
    """The 64 MiB sizes and beyond (not the cache-resident ones)."""
    m = re.match(r"(\d+)x4096$", r.case)
    return m is not None and int(m.group(1)) * 4096 * np.dtype(DTYPES[r.dtype]).itemsize >= LARGE_BYTES


def targets(rows):
    """The targets one ISA path's rows miss, as (kind, line) pairs: every f32/f16/bf16 row >= 1.0x
    PyTorch (fused losses >= 1.5x), kernel (interleaved and warm) and end to end; large f32 elementwise
    >= 80% of the copy bandwidth; end to end <= kernel + alloc+fill, and its spread (freed and kept
    alive) <= PyTorch's (10% margin for timing noise in both)."""
    short = []
    for r in rows:
        if r.dtype == "f64":
            continue
        name = f"{r.op} {r.case} {r.dtype}"
        need = 1.5 if r.op in FUSED else 1.0
        for what, v in (("kernel", r.speedup), ("end to end", r.speedup_e2e), ("kept alive", r.speedup_keep),
                        ("kernel warm", r.speedup_warm)):
            if v is not None and v < need:
                short.append((what, f"{name}, {what}: {v:.2f}x PyTorch (target {need:.1f}x)"))
        if r.op in ELEMENTWISE and r.dtype == "f32" and is_large(r) and r.bw_fraction < 0.8:
            short.append(("bandwidth", f"{name}: {r.bw_fraction:.0%} of the copy bandwidth (target 80%)"))
        if r.ours_e2e_ms > 1.1 * (r.ours_ms + r.alloc_ms) and r.ours_e2e_ms - r.ours_ms - r.alloc_ms > 0.005:
            short.append(("end to end > kernel + alloc+fill", f"{name}: end to end {r.ours_e2e_ms:.3f} ms > kernel "
                          f"{r.ours_ms:.3f} + alloc+fill {r.alloc_ms:.3f} ms"))
        for what, ours, theirs in (("end to end", r.ours_e2e_iqr, r.torch_e2e_iqr),
                                   ("kept alive", r.ours_keep_iqr, r.torch_keep_iqr)):
            if theirs is not None and ours > 1.1 * theirs and ours - theirs > 0.005:
                short.append((f"spread {what}", f"{name}, {what}: spread {ours:.3f} ms > PyTorch's {theirs:.3f} ms"))
    return short


TARGET_KINDS = ("kernel", "end to end", "kept alive", "kernel warm", "bandwidth", "end to end > kernel + alloc+fill",
                "spread end to end", "spread kept alive")


def targets_summary(short):
    """RESULTS.md's line for one ISA path's targets: how many rows miss each (targets() names them)."""
    head = ("Targets (f32/f16/bf16: >= 1.0x PyTorch, fused losses >= 1.5x, kernel (both) and end to end; large f32 "
            "elementwise >= 80% of the copy bandwidth; end to end <= kernel + alloc+fill, its spread no wider than "
            "PyTorch's): ")
    if not short:
        return ["", head + "all met in this run."]
    kinds = [k for k, _ in short]
    counts = ", ".join(f"{k}: {kinds.count(k)}" for k in dict.fromkeys(sorted(kinds, key=TARGET_KINDS.index)))
    return ["", head + f"{len(short)} short in this run ({counts}; the run prints each, its --json names them)."]


def overhead_targets(over, cover):
    short = []
    for op, v in over.items():
        worst = max(v["alloc_us"], v["out_us"])
        if worst > 5:
            short.append(f"{op}: NumPy call {worst:.2f} us (target 5 us)")
        if cover is not None and cover[op] > 1000:
            short.append(f"{op}: two-phase C call {cover[op] / 1e3:.3f} us (target 1 us)")
    head = "Per-call targets (tiny NumPy call <= 5 us, C call <= 1 us): "
    return ["", head + ("all met in this run." if not short else "; ".join(short))]


def chart(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib absent: no chart (pip install '.[bench]')", file=sys.stderr)
        return False
    large = [r for r in rows if is_large(r)] or rows  # (--quick: no large sizes)

    def label(r):  # the 64 MiB cases have a row count per dtype: one group for them
        return f"{r.op}\n" + re.sub(r"^\d+x4096", "64 MiB", r.case)

    labels = list(dict.fromkeys(label(r) for r in large))
    dnames = list(DTYPES)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(labels)), 5))
    w = 0.8 / len(dnames)
    for k, d in enumerate(dnames):
        vals = [next((r.bw_fraction for r in large if label(r) == lab and r.dtype == d), 0) for lab in labels]
        ax.bar([i + (k - 1.5) * w for i in range(len(labels))], vals, w, label=d)
    ax.axhline(0.8, color="k", ls="--", lw=0.8, label="80% (f32 elementwise target)")
    ax.set_xticks(range(len(labels)), [lab.replace("_", " ") for lab in labels], fontsize=7)
    ax.set_ylabel("effective bandwidth / copy bandwidth")
    ax.set_title("ascendgrad kernels, " + ("large sizes" if large is not rows else "all sizes") + " (outputs preallocated)")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


# Our ISA paths in order, and PyTorch's matching ATEN_CPU_CAPABILITY.
ISA_ORDER = ("baseline", "avx2", "avx512")
TORCH_CAPABILITY = {"baseline": "default", "avx2": "avx2", "avx512": "avx512"}


def isa_paths():
    """Every ISA path this CPU runs, best last (the process must not be limited by ASCENDGRAD_ISA)."""
    best = _core.kernel_isa() if hasattr(_core, "kernel_isa") else "baseline"
    if best in ISA_ORDER:
        return list(ISA_ORDER[: ISA_ORDER.index(best) + 1])
    return ["baseline", best]


def run_one(args):
    """This process's ISA path: (info, rows)."""
    ascendgrad.set_num_threads(args.threads)
    threads = ascendgrad.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    info = machine(threads)
    env = {"cpu": info["cpu"], "isa": info["kernel_isa"], "threads": threads}
    rows = []
    for label, make in cases(args.quick, args.sweep):
        if args.only and not re.search(args.only, label):
            continue
        c = make()
        assert label == f"{c.op} {c.case} {c.dtype}", label
        rows.append(run_case(c, args.reps, env))
        r = rows[-1]
        print(f"{r.isa:8s} {r.op:24s} {r.case:18s} {r.dtype:4s} ours {r.ours_ms:9.4f} ms  torch "
              f"{fmt(r.torch_ms, '9.4f')} ms  x{fmt(r.speedup, '.2f')}  bw {r.bw_fraction:4.0%}  "
              f"e2e x{fmt(r.speedup_e2e, '.2f')}  kept x{fmt(r.speedup_keep, '.2f')}  warm x{fmt(r.speedup_warm, '.2f')}", flush=True)
        del c
        gc.collect()
    info["load_after"] = os.getloadavg()
    return info, rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=0, help="threads for both libraries (default: all cores)")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="small and medium sizes only")
    p.add_argument("--sweep", action="store_true", help="every 4x from 4 K to 64 M elements per tensor (1x4096 to 16384x4096)")
    p.add_argument("--isa", default="all",
                   help="ISA paths: all (every one this CPU has, one process each), best (this process's), "
                        "or one name (baseline, avx2, avx512)")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="a RESULTS.md whose section for this CPU and thread count the run replaces (the others stay)")
    p.add_argument("--json", default=None, metavar="FILE", help="write every row, the targets missed and the machine here")
    p.add_argument("--chart", default=None, metavar="FILE", help="a PNG of the large sizes' bandwidth (needs matplotlib)")
    p.add_argument("--only", default=None, metavar="REGEX",
                   help="only the cases whose 'operator case dtype' matches (e.g. 'softmax.*bf16')")
    p.add_argument("--rows-json", default=None, help=argparse.SUPPRESS)  # a child's (info, rows)
    args = p.parse_args(argv)

    if args.isa == "best" or args.rows_json:
        runs = [run_one(args)]
    else:
        paths = isa_paths() if args.isa == "all" else [args.isa]
        runs = []
        with tempfile.TemporaryDirectory() as d:
            for isa in paths:
                # one process per path: PyTorch reads ATEN_CPU_CAPABILITY once, at import
                env = dict(os.environ, ASCENDGRAD_ISA=isa)
                if isa in TORCH_CAPABILITY:
                    env["ATEN_CPU_CAPABILITY"] = TORCH_CAPABILITY[isa]
                child = list(argv)
                for opt in ("--record", "--json", "--chart", "--isa"):  # the parent writes; the child runs its own path
                    if opt in child:
                        i = child.index(opt)
                        del child[i:i + 2]
                j = os.path.join(d, f"{isa}.json")
                subprocess.run([sys.executable, str(Path(__file__).resolve()), *child, "--isa", "best",
                                "--rows-json", j], env=env, check=True)
                data = json.loads(Path(j).read_text())
                runs.append((data["machine"], [Row(**r) for r in data["rows"]]))
    if args.rows_json:
        info, rows = runs[0]
        Path(args.rows_json).write_text(json.dumps({"machine": info, "rows": [asdict(r) for r in rows]}))
        return
    over = numpy_overhead()
    cover = c_overhead()
    text = markdown(runs, over, cover, args.reps)
    print(text)
    short = {info["kernel_isa"]: [line for _, line in targets(rows)] for info, rows in runs}
    for isa, lines in short.items():
        print(f"ISA path {isa}: {len(lines)} short", *(f"  {x}" for x in lines), sep="\n")
    if args.record:
        replace_section(args.record, section_title(runs[0][0]), text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        info = dict(runs[-1][0], isa_paths=[i["kernel_isa"] for i, _ in runs])
        rows = [asdict(r) for _, rs in runs for r in rs]
        Path(args.json).write_text(json.dumps({"machine": info, "rows": rows, "short": short,
                                               "numpy_overhead_us": over, "c_overhead_ns": cover}, indent=1))
    if args.chart:
        chart(runs[-1][1], args.chart)


if __name__ == "__main__":
    main()
