"""Speed of ``dump-check`` on a cluster's dump: MB of tensors judged per second with ``--jobs 1``
and ``--jobs N``, and on a Dask ``LocalCluster`` of 1 and N worker processes, in one run.

The dump: one real msprobe dump (tests_py/msprobe_dump.py, 42 calls of the five operators in three
dtypes) laid out as --ranks rank folders by tests_py/cluster_dump.py (hard links: no disk cost),
one rank's gradients corrupted. Every run must give the same verdicts; the corrupted rank alone
fails. Usage: ``python bench/dump_cluster.py [--ranks 64] [--size 256] [--jobs 2] [--dump DIR]``
(size 256: 41 MB read per rank, 2.6 GB for 64 ranks).
"""

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests_py"))

import cluster_dump  # noqa: E402
from _cpu import cpu_model  # noqa: E402

from ascendgrad.dump_check import FAIL, check_dump  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--jobs", type=int, default=2, help="the parallel runs' job and worker count (default 2)")
    ap.add_argument("--dump", help="a dump made before (skips making one)")
    args = ap.parse_args()
    tmp = None
    root = args.dump
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="dump_cluster_bench_")
        t = time.perf_counter()
        root = cluster_dump.make(tmp.name, args.ranks, size=args.size, corrupt_rank=args.ranks // 2)
        print(f"dump of {args.ranks} ranks made in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    check_dump(root, jobs=1, api="Functional.softmax.0")  # warm-up: imports, page cache of dump.json
    runs = [("--jobs 1", dict(jobs=1)), (f"--jobs {args.jobs}", dict(jobs=args.jobs)),
            ("LocalCluster 1 worker", dict(scheduler="local:1")),
            (f"LocalCluster {args.jobs} workers", dict(scheduler=f"local:{args.jobs}"))]
    print(f"{cpu_model()}; {args.ranks} ranks, size {args.size}")
    print(f"{'run':24} {'calls':>6} {'fail':>5} {'MB read':>9} {'seconds':>8} {'MB/s':>8} {'speed-up':>8}")
    base = {}
    first = None
    for name, kw in runs:
        t = time.perf_counter()
        res = check_dump(root, **kw)
        sec = time.perf_counter() - t  # with the cluster's start: what a user waits for
        s = res.summary()
        verdicts = [(c.step, c.rank, c.api, c.verdict) for c in res.calls]
        first = first or verdicts
        assert verdicts == first, f"{name}: other verdicts than --jobs 1"
        assert {c.rank for c in res.calls if c.verdict == FAIL} == {args.ranks // 2}
        mbs = res.nbytes / 1e6 / sec
        kind = "cluster" if "scheduler" in kw else "jobs"
        base.setdefault(kind, mbs)
        print(f"{name:24} {s['calls']:6} {s[FAIL]:5} {res.nbytes / 1e6:9.0f} {sec:8.1f} {mbs:8.1f} "
              f"{mbs / base[kind]:7.2f}x")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
