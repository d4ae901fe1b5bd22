"""``python -m ascendgrad check``: every operator x dtype x option set through
:func:`ascendgrad.gradcheck.gradcheck`, with progress, a summary table and a non-zero exit on
any failure."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from typing import Any, Dict, Iterator, List, Tuple

from .gradcheck import OPS, gradcheck

DTYPES = ("float64", "float32", "float16", "bfloat16")
Case = Tuple[str, Dict[str, Any]]


def cases(op: str) -> Iterator[Dict[str, Any]]:
    """The option grid of one operator."""
    if op == "softmax_backward":
        for shape, dim in [((4, 7), -1), ((6, 3, 2), 0), ((3, 5, 4), 1), ((3, 5, 4), -2), ((3, 5, 4), 2), ((), 0)]:
            yield {"shape": shape, "dim": dim}
        yield {"shape": (5, 6), "dim": 0, "strided": True}
        yield {"shape": (5, 6), "dim": -1, "strided": True}
    elif op == "log_sigmoid_backward":
        yield {}
        yield {"buffer": True}
        yield {"strided": True}
        yield {"shape": ()}
    elif op == "softshrink_backward":
        for lambd in (0.0, 0.5, 1.5):
            yield {"lambd": lambd}
        yield {"lambd": 0.5, "strided": True}
        yield {"shape": (4, 1), "grad_shape": (1, 6)}
        yield {"shape": (3, 5), "grad_shape": (5,)}
        yield {"shape": (), "grad_shape": (2, 3)}
    elif op == "cross_entropy_loss_grad":
        for red, weight, ignore, ls, z in itertools.product(
            ("none", "mean", "sum"), (False, True), (None, 2), (0.0, 0.1), (0.0, 0.2)
        ):
            yield {"reduction": red, "weight": weight, "ignore_index": ignore, "label_smoothing": ls,
                   "lse_square_scale_for_zloss": z}
        for red in ("none", "mean", "sum"):
            yield {"reduction": red, "lse_square_scale_for_zloss": 0.3, "grad_zloss": True, "weight": True}
        yield {"reduction": "mean", "weight": True, "ignore_index": 1, "strided": True, "target_dtype": "int32"}
    elif op == "kl_div_backward":
        for red, lt in itertools.product(("none", "mean", "sum", "batchmean"), (False, True)):
            yield {"reduction": red, "log_target": lt}
            yield {"reduction": red, "log_target": lt, "shape": (3, 1), "target_shape": (2, 3, 4)}
        yield {"reduction": "batchmean", "strided": True}
        yield {"reduction": "none", "shape": (2, 3, 4), "target_shape": (4,), "grad_shape": (3, 1)}
    else:
        raise ValueError(f"unknown operator {op!r}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", nargs="+", choices=OPS, default=list(OPS), metavar="OP",
                   help=f"operators to check (default: all): {', '.join(OPS)}")
    p.add_argument("--dtype", nargs="+", choices=DTYPES, default=list(DTYPES), metavar="DT",
                   help=f"dtypes (default: all): {', '.join(DTYPES)}")
    p.add_argument("--fast", action="store_true", help="fast (directional) mode for every case")
    p.add_argument("--seed", type=int, default=0, help="random seed of inputs and directions")
    p.add_argument("--json", metavar="FILE", help="write every case's result to FILE")


class _Progress:
    """A bar on a terminal, one line per finished operator x dtype group otherwise."""

    def __init__(self, total: int, stream=None) -> None:
        # sys.stderr as it is now (a default argument would keep the one of import time)
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.tty = self.stream.isatty()

    def step(self, label: str) -> None:
        self.done += 1
        if self.tty:
            width = 30
            fill = int(width * self.done / self.total)
            self.stream.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} {label:<40}")
            self.stream.flush()

    def group(self, line: str) -> None:
        if not self.tty:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 80 + "\r")
            self.stream.flush()


def _tol_ratio(res) -> float:
    """Largest |error| / tolerance over the compared elements and probes of a result."""
    ratios = [e.abs_err / e.tol for e in res.worst if e.tol > 0] + [p.error / p.tol for p in res.probes if p.tol > 0]
    return max(ratios, default=0.0)


def run(args: argparse.Namespace) -> int:
    plan: List[Tuple[str, str, List[Dict[str, Any]]]] = [
        (op, dt, list(cases(op))) for op in args.op for dt in args.dtype
    ]
    progress = _Progress(sum(len(c) for _, _, c in plan))
    records, rows, failures = [], [], []
    t0 = time.perf_counter()
    for op, dt, opts_list in plan:
        passed, worst, worst_ratio = 0, 0.0, 0.0
        for opts in opts_list:
            opts = dict(opts)
            shape = opts.pop("shape", None)
            try:
                res = gradcheck(op, dtype=dt, shape=shape, seed=args.seed,
                                fast_mode=True if args.fast else None, **opts)
                ok, rel, text = bool(res), float(res.max_rel_err), str(res)
                ratio = _tol_ratio(res)
                rec = {"max_abs_err": res.max_abs_err, "max_rel_err": res.max_rel_err,
                       "worst_index": res.worst_index, "fast_mode": res.fast_mode}
            except Exception as e:  # a kernel error is a failed case, reported, not a crash
                ok, rel, text, rec = False, float("inf"), f"{op}[{dt}] {opts}: {type(e).__name__}: {e}", {}
                ratio = float("inf")
            passed += ok
            worst = max(worst, rel)
            worst_ratio = max(worst_ratio, ratio)
            if not ok:
                failures.append(text)
            records.append({"op": op, "dtype": dt, "shape": shape, "options": opts, "passed": ok, **rec,
                            "report": text})
            progress.step(f"{op}[{dt}]")
        rows.append((op, dt, len(opts_list), passed, worst, worst_ratio))
        progress.group(f"{op}[{dt}]: {passed}/{len(opts_list)} passed")
    progress.close()

    # rel. error is |a - n| / |n| (large where the gradient is near 0); err/tol is the margin
    # under the dtype's tolerance rule, which decides pass (<= 1) or fail.
    print(f"{'operator':<26} {'dtype':<9} {'cases':>5} {'passed':>6} {'worst rel. error':>17} {'worst err/tol':>14}")
    for op, dt, n, ok, worst, ratio in rows:
        print(f"{op:<26} {dt:<9} {n:>5} {ok:>6} {worst:>17.3g} {ratio:>14.3g}")
    total, good = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(f"{good}/{total} cases passed in {time.perf_counter() - t0:.1f} s")
    for text in failures:
        print("\n" + text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    return 0 if good == total else 1
