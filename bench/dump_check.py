"""Speed of ``python -m ascendgrad dump-check``: MB of dumped tensor data judged per second.

Makes a real msprobe dump of the five operators with tests_py/msprobe_dump.py (36 calls: three
softmax forms, logsigmoid, softshrink, four cross_entropy and three kl_div, each in float32,
float16 and bfloat16; (N, 2N) tensors, N = --size), then, in the same run and on the same files:

* dump-check over the whole dump (:func:`ascendgrad.dump_check.check_dump`, the cann standard;
  the bytes are the tensors it reads: forward arguments and output, upstream gradient, the
  recorded gradient), best of --reps runs after a warm-up;
* the floor of reading alone: ``torch.load`` of the same tensor files, nothing else;
* the machine's copy bandwidth (a 256 MiB NumPy copy), so that runs on other machines compare.

Wall-clock MB/s is the figure that counts; MB per CPU second is printed beside it because on a
shared machine the wall clock measures the other processes too (the load average is reported).

Usage: ``python bench/dump_check.py [--size 1024] [--reps 3] [--dump DIR]`` (needs torch and
mindstudio-probe: ``pip install '.[test]'``). ``--dump DIR`` reuses a dump made before.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from _cpu import cpu_model  # bench/ is the script's folder, first on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_MB_S = 100.0


def copy_gb_s():
    a = np.ones(256 * 2**20 // 8)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return 2 * a.nbytes / best / 1e9  # read + write


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="rows N of the (N, 2N) tensors (default 1024)")
    ap.add_argument("--reps", type=int, default=3, help="timed runs of dump-check; the best counts")
    ap.add_argument("--dump", help="an msprobe dump made before (skips making one)")
    ap.add_argument("--json", help="write the numbers to this file")
    args = ap.parse_args()

    import torch
    from ascendgrad.dump_check import Reader, _calls, _read_dump_json, check_dump, find_ranks

    tmp = None
    root = args.dump
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="dump_check_bench_")
        t = time.perf_counter()
        r = subprocess.run([sys.executable, os.path.join(HERE, "..", "tests_py", "msprobe_dump.py"), tmp.name,
                            "--size", str(args.size)], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"making the msprobe dump failed:\n{r.stderr[-3000:]}")
        root = os.path.join(tmp.name, "dump")
        print(f"msprobe dump made in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    load_before = os.getloadavg()[0]
    check_dump(root)  # warm-up: imports, page cache
    runs = []
    for _ in range(args.reps):
        cpu = time.process_time()
        res = check_dump(root)
        runs.append((res.seconds, time.process_time() - cpu, res))
    seconds, cpu_seconds, res = min(runs, key=lambda r: r[0])
    s = res.summary()

    # the files dump-check read, loaded and nothing else
    files = set()
    for rank in find_ranks(root):
        meta = _read_dump_json(rank)
        for call in _calls(rank, meta["data"], None):
            for entry in (call.fwd, call.bwd):
                for key in ("input_args", "input", "output"):
                    for rec in (entry or {}).get(key) or []:
                        if isinstance(rec, dict) and rec.get("data_name"):
                            files.add(os.path.join(Reader(rank, meta).dir, rec["data_name"]))
                for rec in ((entry or {}).get("input_kwargs") or {}).values():
                    if isinstance(rec, dict) and rec.get("data_name"):
                        files.add(os.path.join(Reader(rank, meta).dir, rec["data_name"]))
    load_best = float("inf")
    for _ in range(args.reps):
        t = time.perf_counter()
        for f in files:
            torch.load(f, map_location="cpu", weights_only=True)
        load_best = min(load_best, time.perf_counter() - t)
    load_after = os.getloadavg()[0]

    mb = res.nbytes / 1e6
    out = {
        "cpu": cpu_model(), "cores": len(os.sched_getaffinity(0)), "torch": torch.__version__,
        "numpy": np.__version__, "date": time.strftime("%Y-%m-%d %H:%M"), "size": args.size,
        "calls": s["calls"], "verdicts": {k: s[k] for k in ("pass", "fail", "not comparable")},
        "tensor_mb": round(mb, 1), "seconds": round(seconds, 3), "mb_per_s": round(mb / seconds, 1),
        "cpu_seconds": round(cpu_seconds, 3), "mb_per_cpu_s": round(mb / cpu_seconds, 1),
        "torch_load_mb_per_s": round(mb / load_best, 1), "copy_gb_per_s": round(copy_gb_s(), 1),
        "load_average": [round(load_before, 2), round(load_after, 2)],
    }
    print(json.dumps(out, indent=1))
    print(f"dump-check: {mb:.0f} MB of dumped tensors in {seconds:.2f} s = {mb / seconds:.0f} MB/s "
          f"(target {TARGET_MB_S:.0f}; {mb / cpu_seconds:.0f} MB per CPU second); torch.load alone {out['torch_load_mb_per_s']:.0f} MB/s; copy "
          f"{out['copy_gb_per_s']} GB/s; {out['cpu']}, {out['cores']} cores, load {load_before:.1f}/{load_after:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if tmp is not None:
        tmp.cleanup()
    return 0 if mb / seconds >= TARGET_MB_S else 1


if __name__ == "__main__":
    sys.exit(main())
