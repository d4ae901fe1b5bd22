"""Speed of the judge (:mod:`ascendgrad.judge`): GB of judged gradient per CPU-second.

For each operator at (2048, 32000) (cross entropy: its logits; the others: their input), float32
and bfloat16: the kernel's gradient judged against the float64 golden under the cann standard as
dump-check and autocompare run it (``judge.judge_op``: the golden by slices, then the metrics),
and ``compare`` alone (the kernel's gradient against a float64 golden already made). One thread
(``--threads``): CPU-seconds are what a cluster pays; the wall time on all threads beside it.

Usage: ``python bench/judge.py [--rows 2048] [--cols 32000] [--reps 3] [--threads 1] [--json FILE]``
"""

import argparse
import json
import sys
import time

import ml_dtypes
import numpy as np

import ascendgrad
from ascendgrad import judge, reference

from _cpu import cpu_model  # bench/ is the script's folder, first on sys.path

TARGET_JUDGE, TARGET_COMPARE = 1.0, 2.0  # GB per CPU-second


def cases(rows, cols, dt, rng):
    x = rng.standard_normal((rows, cols)).astype(dt)
    g = rng.standard_normal((rows, cols)).astype(dt)
    y = reference.softmax(x, -1).astype(dt)
    t = rng.integers(0, cols, rows)
    yield "softmax_backward", {"grad_output": g, "output": y}, {"dim": -1}, ascendgrad.softmax_backward(g, y, -1)
    yield "log_sigmoid_backward", {"grad_output": g, "x": x}, {}, ascendgrad.log_sigmoid_backward(g, x)
    yield "softshrink_backward", {"grad_output": g, "x": x}, {"lambd": 0.5}, ascendgrad.softshrink_backward(g, x, 0.5)
    tgt = reference.softmax(rng.standard_normal((rows, cols)), -1).astype(dt)
    yield ("kl_div_backward", {"grad_output": np.ones((), dt), "x": x, "target": tgt},
           {"reduction": "batchmean", "log_target": False},
           ascendgrad.kl_div_backward(np.ones((), dt), x, tgt, "batchmean", False))
    lp = reference.log_softmax(x, -1).astype(dt)
    yield ("cross_entropy_loss_grad", {"grad_loss": np.ones((), dt), "log_prob": judge.LogSoftmaxRows(x), "target": t},
           {"reduction": "mean", "ignore_index": -100, "label_smoothing": 0.0},
           ascendgrad.cross_entropy_loss_grad(np.ones((), dt), lp, t, reduction="mean"))


def timed(fn, reps):
    best = (float("inf"), float("inf"))
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.process_time() - c, time.perf_counter() - w))
    return best  # (CPU seconds, wall seconds) of the fastest run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=32000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    print(f"{cpu_model()}, ISA {ascendgrad._core.kernel_isa()}; "
          f"({args.rows}, {args.cols}), {args.threads} thread(s); GB of judged gradient per CPU-second")
    print(f"{'operator':26} {'dtype':9} {'judge GB/cpu-s':>14} {'compare GB/cpu-s':>17} {'judge wall s':>12}")
    for dt in (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)):
        for op, inputs, attrs, actual in cases(args.rows, args.cols, dt, rng):
            ascendgrad.set_num_threads(args.threads)
            gold = judge.golden(op, inputs, attrs, actual.shape)
            cj, wj = timed(lambda: judge.judge_op(op, inputs, attrs, actual, standard="cann"), args.reps)
            cc, wc = timed(lambda: judge.compare_arrays(actual, gold, ulp_stats=False, worst=1), args.reps)
            ascendgrad.set_num_threads(0)
            gb = actual.nbytes / 1e9
            row = {"op": op, "dtype": dt.name, "shape": list(actual.shape), "threads": args.threads,
                   "judge_gb_per_cpu_s": gb / cj, "compare_gb_per_cpu_s": gb / cc, "judge_wall_s": wj,
                   "compare_wall_s": wc}
            rows.append(row)
            flag = "" if row["judge_gb_per_cpu_s"] >= TARGET_JUDGE else "  (short of 1 GB/cpu-s)"
            print(f"{op:26} {dt.name:9} {gb / cj:14.2f} {gb / cc:17.2f} {wj:12.3f}{flag}")
            del gold
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_model(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
