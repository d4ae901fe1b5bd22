"""The cost of ascendgrad.torch in a training step: the tests' model (tests_py/torch_model.py) trained
plain, under ascend_backward, and under autocompare with every=1 and every=10, side by side in one
run (one step of each in turn, medians over the rounds), in float32 and bfloat16; then
autocompare(budget=0.02) entered once per step over --budget-steps steps, each after a plain one
(the budget is a share of the CPU time inside its own entries), with how many of the model's (API,
shape, dtype) it judged.

    python bench/train_step.py [--size realistic|tiny|both] [--steps N] [--record bench/RESULTS.md]

``realistic``: d_model 512, sequence 256, batch 8, vocabulary 32 k (kernels dominate);
``tiny``: the tests' size, where Python dominates: the overhead per routed or judged call in µs.
Targets (2 cores, realistic): ascend_backward <= 1.1x the plain step, autocompare(every=1) <= 1.5x,
autocompare(budget=0.02) <= 1.03x with every (API, shape, dtype) judged at least once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests_py"))
sys.path.insert(0, HERE)
import torch_model as tm  # noqa: E402
from _cpu import cpu_model, replace_section  # noqa: E402

import ascendgrad  # noqa: E402
import ascendgrad.torch as agt  # noqa: E402

SIZES = {
    "realistic": dict(vocab=32000, d=512, batch=8, seq=256, heads=(8, 8)),
    "tiny": dict(vocab=64, d=32, batch=4, seq=16, heads=(2, 4)),
}
TARGETS = {"ascend_backward": 1.1, "autocompare every=1": 1.5, "autocompare budget=0.02": 1.03}
TITLE = "## Training step (`bench/train_step.py`)"


def run(size: str, dtype: torch.dtype, steps: int, budget_steps: int) -> dict:
    shape = SIZES[size]
    model, opt, batches = tm.make(seed=0, dtype=dtype, **shape)
    data = batches(0)
    route = agt.ascend_backward()
    checks = {1: agt.autocompare(every=1), 10: agt.autocompare(every=10)}
    configs = {
        "plain": None,
        "ascend_backward": route,
        "autocompare every=1": checks[1],
        "autocompare every=10": checks[10],
    }
    times: dict = {k: [] for k in configs}
    for r in range(steps + 1):  # round 0 warms up
        for name, mode in configs.items():
            t0 = time.perf_counter()
            if mode is None:
                tm.step(model, opt, data)
            else:
                with mode:
                    tm.step(model, opt, data)
                if isinstance(mode, agt.autocompare):
                    mode.report.pending  # waits for this step's verdicts: their whole cost is the step's
            if r:
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    routed = sum(c.get("routed", 0) for c in route.counts.values()) / (steps + 1)
    rep = checks[1].report
    judged = len(rep.calls) / (steps + 1)
    golden_s = rep.to_dict()["summary"]["seconds"] / (steps + 1)
    assert not rep.failed and not checks[10].report.failed, rep.summary()
    med["autocompare budget=0.02"], covered = run_budget(model, opt, data, budget_steps)
    return {"size": size, "dtype": str(dtype)[6:], "median_s": med, "routed_per_step": routed,
            "judged_per_step": judged, "golden_s_per_step": golden_s, "steps": steps, "covered": covered}


def run_budget(model, opt, data, steps: int):
    """autocompare(budget=0.02) entered per step for `steps` steps, each after a plain step: the
    total time under it over the plain steps' (the whole run's cost, the last verdicts included),
    and (keys judged, keys seen)."""
    ac = agt.autocompare(budget=0.02)
    plain = under = 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        tm.step(model, opt, data)
        t1 = time.perf_counter()
        with ac as report:
            tm.step(model, opt, data)
        plain, under = plain + t1 - t0, under + time.perf_counter() - t1
    t0 = time.perf_counter()
    report.pending  # the verdicts of the last step: part of the cost
    under += time.perf_counter() - t0
    assert not report.failed, report.summary()
    keys = ac._judged
    return under / plain, (sum(1 for v in keys.values() if v), len(keys))


def markdown(rows: list, threads: int) -> str:
    """The section's body (its title apart)."""
    out = [f"{cpu_model()}, {threads} threads (torch {torch.__version__}, ascendgrad {ascendgrad.__version__}); "
           f"medians of {rows[0]['steps']} interleaved steps per configuration. Targets at the realistic size: "
           f"ascend_backward <= 1.1x the plain step, autocompare(every=1) <= 1.5x, budget=0.02 <= 1.03x "
           f"(over {rows[0]['budget_steps']} steps, each after a plain one).", "",
           "| size | dtype | plain | ascend_backward | autocompare every=1 | every=10 | budget=0.02 (judged keys) "
           "| judging (every=1, all threads) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        m = r["median_s"]
        p = m["plain"]
        cells = [f"{m[k] * 1e3:.1f} ms ({m[k] / p:.2f}x)" for k in
                 ("ascend_backward", "autocompare every=1", "autocompare every=10")]
        b = m["autocompare budget=0.02"]
        out.append(f"| {r['size']} | {r['dtype']} | {p * 1e3:.1f} ms | " + " | ".join(cells)
                   + f" | {b:.3f}x ({r['covered'][0]} of {r['covered'][1]}) | {r['golden_s_per_step'] * 1e3:.1f} ms |")
    out.append("")
    for r in rows:
        if r["size"] == "tiny":
            m = r["median_s"]
            per_routed = (m["ascend_backward"] - m["plain"]) / r["routed_per_step"] * 1e6
            per_judged = (m["autocompare every=1"] - m["plain"]) / r["judged_per_step"] * 1e6
            out.append(f"- tiny, {r['dtype']}: {per_routed:.0f} µs per routed call "
                       f"({r['routed_per_step']:.0f} per step), {per_judged:.0f} µs per judged call "
                       f"({r['judged_per_step']:.0f} per step), over the plain step.")
    def ratio(r: dict, k: str) -> float:
        m = r["median_s"]
        return m[k] if k == "autocompare budget=0.02" else m[k] / m["plain"]

    missed = [f"{r['size']} {r['dtype']} {k}: {ratio(r, k):.2f}x > {t}x"
              for r in rows if r["size"] == "realistic" for k, t in TARGETS.items() if ratio(r, k) > t]
    missed += [f"{r['size']} {r['dtype']} budget=0.02 judged {r['covered'][0]} of {r['covered'][1]} keys"
               for r in rows if r["size"] == "realistic" and r["covered"][0] < r["covered"][1]]
    out.append("- targets: " + ("; ".join(missed) if missed else "all held") + ".")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=("realistic", "tiny", "both"), default="both")
    ap.add_argument("--steps", type=int, default=None, help="measured steps per configuration "
                    "(default 5 realistic, 50 tiny)")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--budget-steps", type=int, default=20, help="consecutive steps of the budget run (default 20)")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--record", metavar="FILE", help="replace this benchmark's section of FILE (RESULTS.md)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for size in (("tiny", "realistic") if args.size == "both" else (args.size,)):
        for dt in args.dtypes.split(","):
            steps = args.steps or (5 if size == "realistic" else 50)
            rows.append(run(size, getattr(torch, dt), steps, args.budget_steps))
            rows[-1]["budget_steps"] = args.budget_steps
            print(f"{size} {dt}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in rows[-1]["median_s"].items()
                                               if "budget" not in k)
                  + f", budget=0.02 {rows[-1]['median_s']['autocompare budget=0.02']:.3f}x, keys judged "
                  f"{rows[-1]['covered']}", flush=True)
    text = markdown(rows, args.threads)
    print(f"{TITLE}\n\n{text}")
    if args.record:
        replace_section(args.record, TITLE, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
