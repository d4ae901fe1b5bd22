"""bench/bench.py runs end to end on a small selection and writes its three reports where it is told
(the timings themselves are not asserted: speed is the benchmark's business, not a test's)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("ascendgrad_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (dataclasses look their module up there)
    spec.loader.exec_module(mod)
    return mod


def test_bench_writes_table_json_and_chart(bench, tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    import ascendgrad

    mine = bench.section_title({"cpu": bench.cpu_model(), "threads": ascendgrad.get_num_threads()})
    other = "## Operator benchmarks on Another CPU (family 1, model 2; AVX2), 2 threads"
    (tmp_path / "RESULTS.md").write_text(f"# Benchmark results\n\n{other}\n\nits tables\n\n{mine}\n\nold table\n\n"
                                         "## Build time\n\nkept as it is\n")
    monkeypatch.chdir(tmp_path)
    bench.main(["--quick", "--reps", "1", "--only", "(softmax|cross_entropy).* f32$", "--record", "RESULTS.md",
                "--json", "out/rows.json", "--chart", "out/chart.png"])
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["RESULTS.md", "chart.png", "out", "rows.json"]  # only where told
    printed = capsys.readouterr().out
    data = json.loads((tmp_path / "out" / "rows.json").read_text())
    rows = data["rows"]
    assert {(r["op"], r["dtype"]) for r in rows} == {("softmax_backward", "f32"), ("cross_entropy_loss_grad", "f32")}
    assert {r["case"] for r in rows} == {"1x1000", "256x4096", "1x1000 ls=0.1", "256x4096 ls=0.1"}
    for r in rows:
        assert r["ours_ms"] > 0 and r["torch_ms"] > 0 and r["copy_ms"] > 0
        assert r["speedup"] == pytest.approx(r["torch_ms"] / r["ours_ms"])
        for k in ("ours_e2e_iqr", "torch_e2e_iqr", "ours_keep_iqr", "torch_keep_iqr"):
            assert r[k] >= 0
    assert set(data["numpy_overhead_us"]) == {"softmax_backward", "log_sigmoid_backward", "softshrink_backward",
                                              "cross_entropy_loss_grad", "kl_div_backward"}
    assert data["c_overhead_ns"] is None or all(v > 0 for v in data["c_overhead_ns"].values())
    md = (tmp_path / "RESULTS.md").read_text()
    # one line per operator and dtype, with its number of cases; the targets' line
    assert "| softmax_backward | f32 | 2 |" in md and "| cross_entropy_loss_grad | f32 | 4 |" in md and "Targets" in md
    assert "Per-call floor" in md and "| 256x4096 |" not in md
    assert md.count(mine) == 1 and "old table" not in md  # its own section replaced, the others kept
    assert f"{other}\n\nits tables\n" in md and md.endswith("## Build time\n\nkept as it is\n")
    assert set(data["short"]) == set(data["machine"]["isa_paths"])  # every target missed, by path: named in the JSON
    for isa, lines in data["short"].items():
        assert f"ISA path {isa}: {len(lines)} short" in printed and all(x in printed for x in lines)
    assert data["machine"]["kernel_isa"] in ("baseline", "avx2", "avx512", "neon")
    assert (tmp_path / "out" / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_spread_and_its_target(bench):
    assert bench.iqr([5.0, 1.0, 4.0, 2.0, 3.0]) == 2.0  # quartiles 2 and 4
    assert bench.iqr([3.0]) == 0.0 and bench.iqr(None) is None
    row = bench.Row("softshrink_backward", "256x4096", "f32", ours_ms=1.0, torch_ms=2.0, ours_e2e_ms=1.5,
                    torch_e2e_ms=3.0, copy_ms=1.0, bytes_moved=1, copy_bytes=1, alloc_ms=1.0, ours_keep_ms=1.5,
                    torch_keep_ms=3.0, ours_warm_ms=1.0, torch_warm_ms=2.0, ours_e2e_iqr=0.2, torch_e2e_iqr=0.1,
                    ours_keep_iqr=0.1, torch_keep_iqr=0.1).finish()
    short = bench.targets([row])
    assert short == [("spread end to end", "softshrink_backward 256x4096 f32, end to end: spread 0.200 ms > "
                                           "PyTorch's 0.100 ms")]  # equal spreads (kept alive) meet it
    assert bench.targets_summary(short)[-1].endswith(
        "1 short in this run (spread end to end: 1; the run prints each, its --json names them).")
    row.ours_e2e_iqr = 0.104  # within the 10% margin for noise
    assert bench.targets([row]) == [] and bench.targets_summary([])[-1].endswith("all met in this run.")


def test_table_has_a_line_per_operator_and_dtype(bench):
    def row(case, dtype, speedup, bw):
        r = bench.Row("softshrink_backward", case, dtype, ours_ms=1.0, torch_ms=speedup, ours_e2e_ms=1.0,
                      torch_e2e_ms=1.0, copy_ms=2 * bw, bytes_moved=1, copy_bytes=1, ours_keep_ms=1.0, torch_keep_ms=None)
        return r.finish()

    rows = [row("1x1000", "f32", 3.0, 1.0), row("256x4096", "f32", 1.0, 1.0), row("16384x4096", "f32", 2.0, 0.9),
            row("8192x4096", "f32", 2.0, 0.8), row("1x1000", "bf16", 0.5, 1.0)]
    lines = bench.table(rows)
    assert lines[2:] == ["| softshrink_backward | f32 | 4 | 1.00 / 2.00x | 1.00 / 1.00x | - | - | 80%–90% |",
                         "| softshrink_backward | bf16 | 1 | 0.50 / 0.50x | 1.00 / 1.00x | - | - | - |"]


def test_train_step_bench_records_its_section(tmp_path):
    """bench/train_step.py at the tests' size: its table replaces only its own RESULTS.md section."""
    pytest.importorskip("torch")
    import subprocess

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n## Training step (`bench/train_step.py`)\n\nold numbers\n\n"
                       "## Build time\n\nkept as it is\n")
    script = BENCH.with_name("train_step.py")
    for _ in range(2):  # a second run replaces the first's section, not adds one
        r = subprocess.run([sys.executable, str(script), "--size", "tiny", "--steps", "2", "--record", str(results)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
    text = results.read_text()
    assert "old numbers" not in text and text.endswith("## Build time\n\nkept as it is\n")
    assert text.count("## Training step") == 1 and text.count("| tiny | float32 |") == 1, text
    for dtype in ("float32", "bfloat16"):
        assert f"| tiny | {dtype} |" in text and f"tiny, {dtype}:" in text and "µs per routed call" in text
