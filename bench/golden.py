"""Throughput of golden data generation: MB of case files (.bin + .npy + manifest) written per
second, end to end (draw the inputs, run the kernel, the float64 reference per slice, the
cross-check, write), one case in memory at a time, as ``golden --cases`` does.

    python bench/golden.py [--threads 2] [--dir /tmp/x] [--scale 1.0] [--record bench/RESULTS.md]

The same run measures the copy of a 256 MiB buffer to a file (the page cache's write
bandwidth) as the ceiling. Prints one row per case and the total, in wall-clock time and in the
process's CPU time (user + system, all threads): on a machine shared with other work the second
says what the run would take on its cores alone (MB per CPU-second x threads, when it keeps that
many cores busy).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Tuple

import numpy as np

from _cpu import cpu_model, replace_section  # bench/ is the script's folder, first on sys.path

import ascendgrad
from ascendgrad import golden

CASES: List[Tuple[str, List[Tuple[int, ...]], str, Dict[str, Any]]] = [  # ~16M elements each
    ("softmax_backward", [(4096, 4096)], "float16", {"dim": -1}),
    ("softmax_backward", [(64, 256, 1024)], "float32", {"dim": 1}),
    ("log_sigmoid_backward", [(16 << 20,)], "bfloat16", {}),
    ("softshrink_backward", [(4096, 4096)], "float32", {"lambd": 0.5}),
    ("cross_entropy_loss_grad", [(32768, 512)], "float32", {"reduction": "mean", "label_smoothing": 0.1}),
    ("kl_div_backward", [(16 << 20,)], "float16", {"reduction": "mean"}),
]


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def _copy_rate(where: str) -> float:
    buf = np.ones(256 << 20, dtype=np.uint8)
    path = os.path.join(where, "copy.bin")
    t = time.perf_counter()
    buf.tofile(path)
    rate = buf.nbytes / (time.perf_counter() - t)
    os.unlink(path)
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the first dimension of each shape")
    p.add_argument("--record", metavar="FILE", help="write the run as the 'Golden data' section of FILE (RESULTS.md)")
    args = p.parse_args()
    ascendgrad.set_num_threads(args.threads)
    root = args.dir or tempfile.mkdtemp(prefix="golden-bench-")
    os.makedirs(root, exist_ok=True)
    copy = _copy_rate(root)
    total_bytes, total_time, total_cpu = 0, 0.0, 0.0
    rows = []
    for op, shapes, dtype, attrs in CASES:
        shapes = [(max(1, int(s[0] * args.scale)),) + tuple(s[1:]) for s in shapes]
        out = os.path.join(root, "case")
        t, c0 = time.perf_counter(), time.process_time()
        case = golden.make_case(op, shapes, dtype, seed=1, **attrs)
        t_gen = time.perf_counter() - t
        golden.write_case(case, out)
        dt = time.perf_counter() - t
        cpu = time.process_time() - c0
        total_cpu += cpu
        size = _dir_bytes(out)
        shutil.rmtree(out)
        total_bytes += size
        total_time += dt
        rows.append((op, "x".join(map(str, shapes[0])), dtype, size / 1e6, dt, size / 1e6 / dt, t_gen / dt, cpu))
        print(f"{op:24s} {rows[-1][1]:>16s} {dtype:9s} {size / 1e6:8.1f} MB {dt:6.2f} s "
              f"{size / 1e6 / dt:7.1f} MB/s  CPU {cpu:5.2f} s ({100 * t_gen / dt:.0f}% data + golden, the rest writing)")
    if not args.dir:
        shutil.rmtree(root, ignore_errors=True)
    rate = total_bytes / 1e6 / total_time
    cpu_rate = total_bytes / 1e6 / (total_cpu / args.threads)
    load = os.getloadavg()[0]
    print(f"total: {total_bytes / 1e6:.0f} MB in {total_time:.2f} s = {rate:.1f} MB/s of case files; "
          f"CPU {total_cpu:.2f} s = {cpu_rate:.1f} MB/s per {args.threads} busy cores ({cpu_model()}, "
          f"kernels {ascendgrad._core.kernel_isa()}, load average {load:.1f}); writing a 256 MiB buffer: "
          f"{copy / 1e6:.0f} MB/s")
    if args.record:
        _record(args.record, rows, args.threads, total_bytes, total_time, total_cpu, load, copy)


SECTION = "## Golden data generation (bench/golden.py)"


def _record(path: str, rows: list, threads: int, size: int, wall: float, cpu: float, load: float, copy: float) -> None:
    """Replace (or append) this benchmark's section of a Markdown file; the rest stays."""
    lines = [SECTION, "",
             f"{cpu_model()}, {threads} threads, kernels {ascendgrad._core.kernel_isa()}, "
             f"{time.strftime('%Y-%m-%d %H:%M')}, load average {load:.1f} (1 min) at the end. Per case: draw the "
             "inputs, kernel, float64 reference per slice, cross-check, write `.bin` + `.npy` + manifest. "
             f"MB/s = MB of case files / wall-clock time; CPU = the process's CPU time (all threads). Writing a "
             f"256 MiB buffer to a file in the same run: {copy / 1e6:.0f} MB/s.", "",
             "| operator | shape | dtype | files (MB) | wall (s) | MB/s | CPU (s) |", "|---|---|---|---:|---:|---:|---:|"]
    lines += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.0f} | {r[4]:.2f} | {r[5]:.0f} | {r[7]:.2f} |" for r in rows]
    lines += [f"| **total** | | | {size / 1e6:.0f} | {wall:.2f} | **{size / 1e6 / wall:.0f}** | {cpu:.2f} |", ""]
    replace_section(path, SECTION, "\n".join(lines[2:]))


if __name__ == "__main__":
    main()
