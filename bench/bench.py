"""Benchmark: ascendgrad against PyTorch CPU and a same-size memory copy, in one process, at the
same thread count. Repetitions are interleaved (ours, torch, copy, ours, ...) and medians
reported. "Kernel" timings write into preallocated outputs (no allocation, no page faults);
bandwidth = bytes the operator must move at least (read inputs once, write the output once)
divided by time, shown as a fraction of the copy's bandwidth (bytes read + written).

    python bench/bench.py [--threads N] [--reps 15] [--quick] [--json FILE] [--md FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass

import ml_dtypes
import numpy as np

import ascendgrad

try:
    import torch
except ImportError:  # the table then has no PyTorch column
    torch = None

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}


@dataclass
class Row:
    op: str
    case: str
    dtype: str
    threads: int
    ours_ms: float
    torch_ms: float | None
    copy_ms: float
    bytes_moved: int

    @property
    def speedup(self):
        return None if self.torch_ms is None else self.torch_ms / self.ours_ms

    @property
    def bw_fraction(self):
        copy_bytes_per_s = 2 * self.copy_bytes / (self.copy_ms * 1e-3)
        return (self.bytes_moved / (self.ours_ms * 1e-3)) / copy_bytes_per_s

    copy_bytes: int = 0


def torch_dtype(dt):
    return {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16,
            np.dtype(ml_dtypes.bfloat16): torch.bfloat16, np.dtype(np.float64): torch.float64}[np.dtype(dt)]


def to_torch(a):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def softmax_cases(quick):
    sizes = [("1x1000", (1, 1000), 1), ("256x4096", (256, 4096), 1)]
    if not quick:
        sizes += [("4096x4096", (4096, 4096), 1), ("64x1024x64 dim1", (64, 1024, 64), 1),
                  ("512x32000", (512, 32000), 1)]
    for name, shape, dim in sizes:
        for dname, dt in DTYPES.items():
            rng = np.random.default_rng(0)
            y = rng.random(shape, dtype=np.float32)
            y /= y.sum(dim, keepdims=True)
            g = rng.standard_normal(shape, dtype=np.float32)
            g, y = g.astype(dt), y.astype(dt)
            out = np.empty_like(g)

            def ours(g=g, y=y, out=out, dim=dim):
                ascendgrad.softmax_backward(g, y, dim, out=out)

            theirs = None
            if torch is not None:
                tg, ty, tout = to_torch(g), to_torch(y), to_torch(out).clone()
                tdt = torch_dtype(dt)

                def theirs(tg=tg, ty=ty, tout=tout, dim=dim, tdt=tdt):
                    torch.ops.aten._softmax_backward_data.out(tg, ty, dim, tdt, grad_input=tout)

            yield "softmax_backward", name, dname, ours, theirs, 3 * g.nbytes, g


def time_interleaved(fns, reps):
    times = [[] for _ in fns]
    for f in fns:
        if f:
            f()  # warm up (first touch, caches)
    for _ in range(reps):
        for i, f in enumerate(fns):
            if f:
                t0 = time.perf_counter()
                f()
                times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) * 1e3 if t else None for t in times]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=0, help="threads for both libraries (default: all cores)")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="small sizes only")
    p.add_argument("--json", default=None)
    p.add_argument("--md", default=None)
    args = p.parse_args(argv)

    ascendgrad.set_num_threads(args.threads)
    threads = ascendgrad.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    rows = []
    for op, case, dname, ours, theirs, moved, like in softmax_cases(args.quick):
        src = np.ones(like.nbytes // 4, np.float32)
        dst = np.empty_like(src)

        def copy(src=src, dst=dst):
            np.copyto(dst, src)

        t_ours, t_torch, t_copy = time_interleaved([ours, theirs, copy], args.reps)
        rows.append(Row(op, case, dname, threads, t_ours, t_torch, t_copy, moved, copy_bytes=src.nbytes))

    lines = [f"Machine: {platform.processor() or platform.machine()}, {threads} thread(s); "
             f"PyTorch {torch.__version__ if torch else 'absent'}; medians of {args.reps}.", "",
             "| operator | case | dtype | ours (ms) | PyTorch (ms) | speed-up | bandwidth vs copy |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        tt = f"{r.torch_ms:.4f}" if r.torch_ms is not None else "-"
        su = f"{r.speedup:.2f}x" if r.speedup is not None else "-"
        lines.append(f"| {r.op} | {r.case} | {r.dtype} | {r.ours_ms:.4f} | {tt} | {su} | {r.bw_fraction:.0%} |")
    table = "\n".join(lines)
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(asdict(r), speedup=r.speedup, bw_fraction=r.bw_fraction) for r in rows], f, indent=1)


if __name__ == "__main__":
    main()
