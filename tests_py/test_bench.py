"""bench/bench.py runs end to end on a small selection and writes its three reports (the timings
themselves are not asserted: speed is the benchmark's business, not a test's)."""

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


def test_bench_writes_table_json_and_chart(bench, tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    (tmp_path / "RESULTS.md").write_text("# Benchmark results\n\n## Operator benchmarks\n\nold table\n\n"
                                         "## Build time\n\nkept as it is\n")
    bench.main(["--quick", "--reps", "1", "--only", "(softmax|cross_entropy).* f32$", "--out", str(tmp_path)])
    capsys.readouterr()
    data = json.loads((tmp_path / "results.json").read_text())
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
    assert "| softmax_backward | 256x4096 | f32 |" in md and "Targets" in md
    assert "old table" not in md and md.endswith("## Build time\n\nkept as it is\n")  # only its own section
    assert data["machine"]["kernel_isa"] in ("baseline", "avx2", "avx512", "neon")
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_spread_and_its_target(bench):
    assert bench.iqr([5.0, 1.0, 4.0, 2.0, 3.0]) == 2.0  # quartiles 2 and 4
    assert bench.iqr([3.0]) == 0.0 and bench.iqr(None) is None
    row = bench.Row("softshrink_backward", "256x4096", "f32", ours_ms=1.0, torch_ms=2.0, ours_e2e_ms=1.5,
                    torch_e2e_ms=3.0, copy_ms=1.0, bytes_moved=1, copy_bytes=1, alloc_ms=1.0, ours_keep_ms=1.5,
                    torch_keep_ms=3.0, ours_warm_ms=1.0, torch_warm_ms=2.0, ours_e2e_iqr=0.2, torch_e2e_iqr=0.1,
                    ours_keep_iqr=0.1, torch_keep_iqr=0.1).finish()
    lines = bench.targets([row])
    assert any("end to end: spread 0.200 ms > PyTorch's 0.100 ms" in x for x in lines)
    assert not any("kept alive: spread" in x for x in lines)  # equal spreads meet it
    row.ours_e2e_iqr = 0.104  # within the 10% margin for noise
    assert bench.targets([row])[-1].endswith("all met in this run.")
