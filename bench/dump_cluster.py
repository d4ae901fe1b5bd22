"""Speed of ``dump-check`` on a cluster's dump: MB of tensors judged per second with ``--jobs 1``
and ``--jobs N``, and on a Dask ``LocalCluster`` of 1 and N worker processes, in one run. Each run
is the command a user types (``python -m ascendgrad dump-check DUMP ...``), timed whole: the
interpreter's start, the imports, the processes' or the cluster's start included.

The dump: one real msprobe dump (tests_py/msprobe_dump.py, 42 calls of the five operators in three
dtypes) laid out as --ranks rank folders by tests_py/cluster_dump.py (hard links: no disk cost),
one rank's gradients corrupted. Every run must give the same verdicts; the corrupted rank alone
fails. Usage: ``python bench/dump_cluster.py [--ranks 64] [--size 256] [--jobs 2] [--dump DIR]``
(size 256: 41 MB read per rank, 2.6 GB for 64 ranks).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests_py"))

import cluster_dump  # noqa: E402
from _cpu import cpu_model  # noqa: E402

FAIL = "fail"


def dump_check(root, args, out):
    """The command's wall time and its JSON document."""
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ascendgrad", "dump-check", root, "--json", out, *args],
                       capture_output=True, text=True)
    sec = time.perf_counter() - t
    if r.returncode not in (0, 1):
        sys.exit(f"dump-check {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    with open(out) as f:
        return sec, json.load(f)


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
    dump_check(root, ["--jobs", "1", "--api", "Functional.softmax.0"], os.path.join(root, "..", "w.json"))  # warm-up
    runs = [("--jobs 1", ["--jobs", "1"]), (f"--jobs {args.jobs}", ["--jobs", str(args.jobs)]),
            ("LocalCluster 1 worker", ["--scheduler", "local:1"]),
            (f"LocalCluster {args.jobs} workers", ["--scheduler", f"local:{args.jobs}"])]
    print(f"{cpu_model()}; {args.ranks} ranks, size {args.size}")
    print(f"{'run':24} {'calls':>6} {'fail':>5} {'MB read':>9} {'seconds':>8} {'MB/s':>8} {'speed-up':>8}")
    base = {}
    first = None
    for name, cli in runs:
        sec, doc = dump_check(root, cli, os.path.join(root, "..", "verdicts.json"))
        s = doc["summary"]
        verdicts = [(c["step"], c["rank"], c["api"], c["verdict"]) for c in doc["calls"]]
        first = first or verdicts
        assert verdicts == first, f"{name}: other verdicts than --jobs 1"
        assert {c["rank"] for c in doc["calls"] if c["verdict"] == FAIL} == {args.ranks // 2}
        mbs = s["tensor_bytes"] / 1e6 / sec
        kind = "cluster" if "--scheduler" in cli else "jobs"
        base.setdefault(kind, mbs)
        print(f"{name:24} {s['calls']:6} {s[FAIL]:5} {s['tensor_bytes'] / 1e6:9.0f} {sec:8.1f} {mbs:8.1f} "
              f"{mbs / base[kind]:7.2f}x")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
