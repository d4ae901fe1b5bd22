"""python -m ascendgrad dump-check on real msprobe dumps made here on CPU (tests_py/msprobe_dump.py):
the five operators in float32, float16 and bfloat16 (softmax over the last, a middle and the first
dim; cross entropy with weight, ignore_index, label smoothing, reduction none/sum; kl_div with
batchmean, sum + log_target, mean). The CPU records of cross_entropy/kl_div are internal-node
gradients (not comparable, named as such); set to the true input gradient, as an NPU's fused kernel
writes it, every call passes. Then corrupted copies: each gives the right verdict or error."""

import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("msprobe", reason="the dump tests need mindstudio-probe (the test extra)")
torch = pytest.importorskip("torch")

from ascendgrad import dump_check  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
N_CALLS = 42  # 14 per dtype: 3 softmax forms, Torch._softmax_backward_data, logsigmoid, softshrink,
#              4 cross_entropy, 3 Functional.kl_div, Torch.kl_div
CE = [f"Functional.cross_entropy.{i}" for i in range(12)]
KL = [f"Functional.kl_div.{i}" for i in range(9)] + [f"Torch.kl_div.{i}" for i in range(3)]
CE_SMOOTHED = {CE[2], CE[6], CE[10]}  # label smoothing: 0-D records on CPU
KL_BATCHMEAN = {KL[0], KL[3], KL[6]}  # batchmean: 0-D records on CPU


@pytest.fixture(scope="session")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("msprobe")
    r = subprocess.run([sys.executable, str(HERE / "msprobe_dump.py"), str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def rank_of(root):
    (d,) = glob.glob(os.path.join(root, "step0", "*", ""))
    return pathlib.Path(d)


def meta(root):
    return json.loads((rank_of(root) / "dump.json").read_text())


def save_meta(root, m):
    (rank_of(root) / "dump.json").write_text(json.dumps(m))


def set_output(root, m, call, tensor, kind="backward"):
    """Make `call`'s recorded input gradient `tensor` (one .pt file, its dump.json record)."""
    name = f"{call}.{kind}.output.0.pt"
    torch.save(tensor.detach().clone(), rank_of(root) / "dump_tensor_data" / name)
    rec = {"type": "torch.Tensor", "dtype": str(tensor.dtype), "shape": list(tensor.shape),
           "requires_grad": False, "data_name": name}
    m["data"][f"{call}.{kind}"]["output"] = [rec]


def npu_form(made, root):
    """A copy of the dump at `root` with every cross_entropy/kl_div record set to the true input
    gradient, as an NPU's fused kernel records it."""
    shutil.copytree(made / "dump", root)
    m = meta(root)
    for f in sorted((made / "true_grads").glob("*.pt")):
        set_output(root, m, f.stem, torch.load(f, weights_only=True))
    save_meta(root, m)
    return root


@pytest.fixture(scope="session")
def npu_dump(made, tmp_path_factory):
    return npu_form(made, tmp_path_factory.mktemp("npu") / "dump")


@pytest.fixture
def copy(npu_dump, tmp_path):
    def make():
        root = tmp_path / "dump"
        shutil.copytree(npu_dump, root)
        return root
    return make


def run(capsys, *argv):
    code = dump_check.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def verdicts(capsys, root, *extra, tmp_name="v.json"):
    path = pathlib.Path(root).parent / tmp_name
    code, out, err = run(capsys, root, "--json", path, *extra)
    data = json.loads(path.read_text())
    return code, {c["api"]: c for c in data["calls"]}, data, out, err


def read_pt(root, m, key, i=0, kind="output"):
    rec = m["data"][key][kind][i]
    return torch.load(rank_of(root) / "dump_tensor_data" / rec["data_name"], weights_only=True), rec


# ---- the dumps as msprobe writes them ---------------------------------------------------------


def test_the_dump_holds_every_form(made):
    m = meta(made / "dump")
    keys = set(m["data"])
    for api in ("Functional.softmax", "Tensor.softmax", "Functional.logsigmoid", "Functional.softshrink"):
        for i in range(3):
            assert f"{api}.{i}.backward" in keys
    for i in range(3):  # Torch.softmax 1, 3, 5 ran under no_grad: forward entries only, not checked
        assert f"Torch.softmax.{2 * i}.backward" in keys and f"Torch.softmax.{2 * i + 1}.backward" not in keys
        assert f"Torch._softmax_backward_data.{i}.forward" in keys
    assert {f"{c}.backward" for c in CE + KL} <= keys
    dtypes = {m["data"][f"Functional.softmax.{i}.forward"]["input_args"][0]["dtype"] for i in range(3)}
    assert dtypes == {"torch.float32", "torch.float16", "torch.bfloat16"}


def test_cpu_dump_internal_nodes_are_named(made, capsys):
    code, calls, data, out, err = verdicts(capsys, made / "dump")
    assert code == 0, out + err  # nothing fails: the CE/KL records are not comparable
    assert len(calls) == N_CALLS and data["summary"]["fail"] == 0 and data["summary"]["pass"] == 18
    assert "Torch.softmax.1" not in calls and calls["Torch._softmax_backward_data.1"]["dtype"] == "float16"
    for name, c in calls.items():
        if name in CE or name in KL:
            assert c["verdict"] == "not comparable", (name, c)
            assert "as msprobe writes it on CPU" in c["reason"], (name, c["reason"])
        else:
            assert c["verdict"] == "pass", (name, c)
    for name in CE_SMOOTHED:
        assert "has shape []" in calls[name]["reason"] and "upstream gradient" in calls[name]["reason"]
    for name in set(CE) - CE_SMOOTHED:
        assert "log_softmax(input)" in calls[name]["reason"]
    for name in KL_BATCHMEAN:
        assert "scalar reduction node" in calls[name]["reason"]
    for name in set(KL) - KL_BATCHMEAN:
        assert "pointwise loss" in calls[name]["reason"]


def test_npu_form_passes_every_call(npu_dump, capsys):
    code, calls, data, out, err = verdicts(capsys, npu_dump)
    assert code == 0, out
    assert [c["verdict"] for c in calls.values()] == ["pass"] * N_CALLS, out
    # the schema
    assert set(data) == {"standard", "dump", "calls", "summary"} and data["standard"] == "cann"
    c = calls["Tensor.softmax.1"]
    assert set(c) == {"api", "step", "rank", "dtype", "shape", "verdict", "reason", "metrics", "worst"}
    assert c["step"] == 0 and c["rank"].startswith("proc") and c["dtype"] == "float16" and c["shape"] == [8, 3, 16]
    assert set(c["metrics"]) == {"matched_ratio", "max_abs_error"}
    assert data["summary"]["calls"] == N_CALLS and data["summary"]["pass"] == N_CALLS
    assert "42 calls: 42 pass, 0 fail, 0 not comparable" in out


def test_internal_record_of_the_npu_dump_form_also_passes_other_standards(npu_dump, capsys):
    code, calls, data, out, err = verdicts(capsys, npu_dump, "--standard", "msprobe", "--api", "Functional.softmax")
    assert data["standard"] == "msprobe" and set(calls) == {f"Functional.softmax.{i}" for i in range(3)}
    assert code == 0 and all(c["verdict"] == "pass" for c in calls.values())
    assert "cosine" in calls["Functional.softmax.0"]["metrics"]


# ---- corrupted copies -------------------------------------------------------------------------


def only_failure(capsys, root, name):
    code, calls, data, out, err = verdicts(capsys, root)
    failed = [k for k, c in calls.items() if c["verdict"] != "pass"]
    assert failed == [name], out
    assert code == 1 and calls[name]["verdict"] == "fail"
    return calls[name], out


def test_scaled_row_fails_and_names_the_worst_element(copy, capsys):
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Functional.softmax.1.backward")  # float16
    t[5] *= 1.5
    torch.save(t, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    c, out = only_failure(capsys, root, "Functional.softmax.1")
    assert c["worst"]["index"][0] == 5 and c["worst"]["metric"] in ("matched_ratio", "max_abs_error")
    assert c["worst"]["dumped"] == pytest.approx(float(t[tuple(c["worst"]["index"])]))
    assert "worst element (5," in out


def test_one_nan_fails(copy, capsys):
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Functional.cross_entropy.9.backward")  # bfloat16, weighted, ignore_index
    t[2, 7] = float("nan")
    torch.save(t, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    c, _ = only_failure(capsys, root, "Functional.cross_entropy.9")
    assert c["worst"]["index"] == [2, 7] and c["worst"]["metric"] == "nan_inf_mismatches"
    assert "NaN" in c["reason"]


def test_sign_flip_fails(copy, capsys):
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Tensor.softmax.0.backward")  # the middle dim, float32
    torch.save(-t, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    c, _ = only_failure(capsys, root, "Tensor.softmax.0")
    assert c["metrics"]["matched_ratio"] < 0.5


def test_backward_operator_call_scaled_fails(copy, capsys):
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Torch._softmax_backward_data.2.forward")  # bfloat16: its output is the gradient
    t[0, :3] *= 2
    torch.save(t, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    c, _ = only_failure(capsys, root, "Torch._softmax_backward_data.2")
    assert c["worst"]["index"][0] == 0


def test_kl_log_target_scaled_fails(copy, capsys):
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Functional.kl_div.4.backward")  # float16, sum, log_target
    torch.save(t * 1.1, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    only_failure(capsys, root, "Functional.kl_div.4")


def test_swapped_pair_of_calls(copy, capsys):
    root = copy()
    m = meta(root)
    a = m["data"]["Functional.logsigmoid.0.backward"]["output"][0]
    b = m["data"]["Functional.softshrink.0.backward"]["output"][0]
    a["data_name"], b["data_name"] = b["data_name"], a["data_name"]
    save_meta(root, m)
    code, calls, data, out, err = verdicts(capsys, root)
    assert code == 1
    assert {k for k, c in calls.items() if c["verdict"] == "fail"} == {"Functional.logsigmoid.0",
                                                                      "Functional.softshrink.0"}


def test_truncated_tensor_file(copy, capsys):
    root = copy()
    m = meta(root)
    p = rank_of(root) / "dump_tensor_data" / m["data"]["Functional.kl_div.1.backward"]["output"][0]["data_name"]
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    code, calls, data, out, err = verdicts(capsys, root)
    c = calls["Functional.kl_div.1"]
    assert c["verdict"] == "not comparable" and "truncated or unreadable" in c["reason"]
    assert code == 0 and "Traceback" not in out + err


class Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned_by_dump",))


def test_malicious_pickle_is_refused(copy, capsys, tmp_path, monkeypatch):
    root = copy()
    monkeypatch.chdir(tmp_path)
    m = meta(root)
    p = rank_of(root) / "dump_tensor_data" / m["data"]["Functional.softmax.0.backward"]["input"][0]["data_name"]
    torch.save({"x": Evil()}, p)
    code, calls, data, out, err = verdicts(capsys, root)
    c = calls["Functional.softmax.0"]
    assert c["verdict"] == "not comparable" and "refused" in c["reason"]
    assert not (tmp_path / "pwned_by_dump").exists()


def test_npy_with_pickle_is_refused(copy, capsys):
    root = copy()
    m = meta(root)
    rec = m["data"]["Functional.softshrink.2.forward"]["input_args"][0]
    np.save(rank_of(root) / "dump_tensor_data" / "evil.npy", np.array([Evil()], dtype=object), allow_pickle=True)
    rec["data_name"] = "evil.npy"
    save_meta(root, m)
    code, calls, *_ = verdicts(capsys, root)
    assert calls["Functional.softshrink.2"]["verdict"] == "not comparable"
    assert "refused" in calls["Functional.softshrink.2"]["reason"]


def test_data_name_outside_the_dump_is_refused(copy, capsys, tmp_path):
    root = copy()
    m = meta(root)
    rec = m["data"]["Functional.logsigmoid.1.forward"]["input_args"][0]
    secret = tmp_path / "outside.pt"
    shutil.copy(rank_of(root) / "dump_tensor_data" / rec["data_name"], secret)
    rec["data_name"] = "../../../../outside.pt"
    assert (rank_of(root) / "dump_tensor_data" / rec["data_name"]).resolve() == secret.resolve()
    m["data"]["Functional.logsigmoid.2.forward"]["input_args"][0]["data_name"] = str(secret)  # absolute
    save_meta(root, m)
    code, calls, *_ = verdicts(capsys, root)
    for name in ("Functional.logsigmoid.1", "Functional.logsigmoid.2"):
        assert calls[name]["verdict"] == "not comparable" and "outside dump_tensor_data" in calls[name]["reason"]


def test_dtype_and_shape_disagreeing_with_dump_json(copy, capsys):
    root = copy()
    m = meta(root)
    m["data"]["Functional.softmax.2.forward"]["output"][0]["dtype"] = "torch.float32"  # it is bfloat16
    m["data"]["Functional.softshrink.1.backward"]["input"][0]["shape"] = [16, 8]
    save_meta(root, m)
    code, calls, *_ = verdicts(capsys, root)
    assert "holds bfloat16, dump.json says float32" in calls["Functional.softmax.2"]["reason"]
    assert "has shape [8, 16], dump.json says [16, 8]" in calls["Functional.softshrink.1"]["reason"]


def test_missing_entries_and_files(copy, capsys):
    root = copy()
    m = meta(root)
    del m["data"]["Torch.softmax.2.backward"]
    del m["data"]["Functional.logsigmoid.2.forward"]
    os.remove(rank_of(root) / "dump_tensor_data" / m["data"]["Functional.softshrink.0.forward"]["input_args"][0]["data_name"])
    m["data"]["CE_not_an_entry"] = 3
    save_meta(root, m)
    code, calls, *_ = verdicts(capsys, root)
    assert "no backward entry (Torch.softmax.2.backward)" in calls["Torch.softmax.2"]["reason"]
    assert "no forward entry (Functional.logsigmoid.2.forward)" in calls["Functional.logsigmoid.2"]["reason"]
    assert "is missing" in calls["Functional.softshrink.0"]["reason"]
    assert code == 0


def test_statistics_only_dump(copy, capsys):
    root = copy()
    m = meta(root)
    m["task"] = "statistics"
    for entry in m["data"].values():
        for key in ("input_args", "input", "output"):
            for rec in entry.get(key) or []:
                if isinstance(rec, dict):
                    rec.pop("data_name", None)
    save_meta(root, m)
    code, out, err = run(capsys, root)
    assert code == 2 and "statistics-only dump" in out and "could be judged" in err


@pytest.mark.parametrize("cut", [0, 100, -1])
def test_truncated_dump_json_is_exit_2(copy, capsys, cut):
    root = copy()
    p = rank_of(root) / "dump.json"
    text = p.read_text()
    p.write_text(text[:cut] if cut >= 0 else text[: len(text) // 2])
    code, out, err = run(capsys, root)
    assert code == 2 and err.count("\n") == 1 and "dump.json" in err and "Traceback" not in err


def test_command_line_errors(tmp_path, capsys, npu_dump):
    assert run(capsys, tmp_path / "nothing")[0] == 2
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, tmp_path / "empty")
    assert code == 2 and "no dump.json" in err
    code, out, err = run(capsys, npu_dump, "--api", "Functional.gelu*")
    assert code == 2 and "holds no call matching" in err
    code, out, err = run(capsys, npu_dump, "--repro", "Functional.softmax.0")
    assert code == 2 and "--out" in err
    r = subprocess.run([sys.executable, "-m", "ascendgrad", "dump-check", str(npu_dump), "--standard", "dual-benchmark"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_steps_and_ranks_are_found_and_labelled(npu_dump, tmp_path, capsys):
    root = tmp_path / "multi"
    src = rank_of(npu_dump)
    shutil.copytree(src, root / "step0" / "rank0")
    shutil.copytree(src, root / "step3" / "rank1")
    code, calls, data, out, err = verdicts(capsys, root, "--api", "Functional.softshrink.*")
    assert code == 0 and len(data["calls"]) == 6
    assert {(c["step"], c["rank"]) for c in data["calls"]} == {(0, 0), (3, 1)}
    code, calls, data, *_ = verdicts(capsys, root / "step3" / "rank1", "--api", "Functional.softshrink.0")
    assert [(c["step"], c["rank"]) for c in data["calls"]] == [(3, 1)]


def test_npy_dump_and_no_torch(copy, capsys):
    """MindSpore writes .npy: the same dump as .npy files passes, and needs no torch."""
    root = copy()
    m = meta(root)
    tdir = rank_of(root) / "dump_tensor_data"
    for entry in m["data"].values():
        for key in ("input_args", "input", "output"):
            for rec in entry.get(key) or []:
                if isinstance(rec, dict) and rec.get("data_name"):
                    t = torch.load(tdir / rec["data_name"], weights_only=True)
                    a = t.view(torch.int16).numpy().view(np.dtype("V2")) if t.dtype == torch.bfloat16 else t.numpy()
                    new = rec["data_name"][:-3] + ".npy"
                    np.save(tdir / new, a)
                    os.remove(tdir / rec["data_name"])
                    rec["data_name"] = new
        kw = entry.get("input_kwargs") or {}
        for rec in kw.values():
            if isinstance(rec, dict) and str(rec.get("data_name", "")).endswith(".pt"):
                t = torch.load(tdir / rec["data_name"], weights_only=True)
                a = t.view(torch.int16).numpy().view(np.dtype("V2")) if t.dtype == torch.bfloat16 else t.numpy()
                np.save(tdir / (rec["data_name"][:-3] + ".npy"), a)
                rec["data_name"] = rec["data_name"][:-3] + ".npy"
    save_meta(root, m)
    code, calls, *_ = verdicts(capsys, root)
    assert code == 0 and all(c["verdict"] == "pass" for c in calls.values())
    block = "import sys; sys.modules['torch'] = None; from ascendgrad.__main__ import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", block, "dump-check", str(root)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    p = tdir / m["data"]["Functional.softmax.1.backward"]["output"][0]["data_name"]
    p.write_bytes(p.read_bytes()[:-7])  # a truncated .npy
    code, calls, *_ = verdicts(capsys, root)
    assert calls["Functional.softmax.1"]["verdict"] == "not comparable"
    assert "truncated or unreadable" in calls["Functional.softmax.1"]["reason"]


def test_pt_dump_without_torch_says_install_torch(npu_dump):
    block = "import sys; sys.modules['torch'] = None; from ascendgrad.__main__ import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", block, "dump-check", str(npu_dump)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs PyTorch (pip install torch)" in r.stderr
    assert r.stderr.count("\n") == 1


def test_plots_for_failed_calls(copy, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Functional.logsigmoid.0.backward")
    t[3, 4] = float("nan")
    t[1] *= 2
    torch.save(t, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    code, out, err = run(capsys, root, "--plots", tmp_path / "plots")
    assert code == 1
    pngs = list((tmp_path / "plots").glob("*.png"))
    assert [p.name for p in pngs] == [f"step0_{rank_of(root).name}_Functional.logsigmoid.0.png"]
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pngs[0].stat().st_size > 5000


@pytest.mark.parametrize("name", ["Functional.cross_entropy.5", "Tensor.softmax.2", "Functional.kl_div.4",
                                  "Functional.softshrink.1"])
def test_repro_runs_standalone(npu_dump, capsys, tmp_path, name):
    out = tmp_path / "repro"
    code, stdout, err = run(capsys, npu_dump, "--repro", name, "--out", out)
    assert code == 0 and "repro.py" in stdout
    assert (out / "dumped_grad.npy").exists() and (out / "repro.py").exists()
    r = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ascendgrad kernel vs golden: PASSED" in r.stdout and "PASSED under cann" in r.stdout


def test_repro_of_a_corrupted_call_fails(copy, capsys, tmp_path):
    root = copy()
    m = meta(root)
    t, rec = read_pt(root, m, "Functional.softmax.0.backward")
    torch.save(t * 3, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    code, stdout, err = run(capsys, root, "--repro", "Functional.softmax.0", "--out", tmp_path / "r")
    assert code == 1
    r = subprocess.run([sys.executable, str(tmp_path / "r" / "repro.py")], capture_output=True, text=True)
    assert r.returncode == 1 and "FAILED under cann" in r.stdout


def test_npu_cross_entropy_loss_mapping(tmp_path, capsys):
    """torch_npu's fused cross entropy (no NPU here: a dump written in msprobe's layout by hand,
    its gradient from PyTorch's autograd of loss = CE + z-loss, zloss returned apart)."""
    rank = tmp_path / "dump" / "step0" / "rank0"
    tdir = rank / "dump_tensor_data"
    tdir.mkdir(parents=True)
    torch.manual_seed(3)
    n, c, zeta = 6, 10, 0.1
    x = torch.randn(n, c, dtype=torch.float32, requires_grad=True)
    target = torch.randint(0, c, (n,))
    target[0] = -100
    m = target != -100
    lse = torch.logsumexp(x, -1)
    ce = torch.nn.functional.cross_entropy(x, target, reduction="mean")
    z = zeta * (lse[m] ** 2).sum() / m.sum()
    g_loss, g_z = torch.tensor(0.7), torch.tensor(0.3)
    ((ce + z) * g_loss + z * g_z).backward()

    def rec(name, t):
        return _record(tdir, name, t)

    call = "NPU.npu_cross_entropy_loss.0"
    data = {
        f"{call}.forward": {
            "input_args": [rec(f"{call}.forward.input.0.pt", x), rec(f"{call}.forward.input.1.pt", target)],
            "input_kwargs": {"reduction": {"type": "str", "value": "mean"},
                             "lse_square_scale_for_zloss": {"type": "float", "value": zeta},
                             "return_zloss": {"type": "bool", "value": True}},
            "output": [rec(f"{call}.forward.output.0.pt", ce + z), None, rec(f"{call}.forward.output.2.pt", z),
                       rec(f"{call}.forward.output.3.pt", lse)]},
        f"{call}.backward": {
            "input": [rec(f"{call}.backward.input.0.pt", g_loss), None, rec(f"{call}.backward.input.2.pt", g_z), None],
            "output": [rec(f"{call}.backward.output.0.pt", x.grad), None, None]},
    }
    (rank / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                "data": data}))
    code, calls, *_ = verdicts(capsys, tmp_path / "dump")
    assert code == 0 and calls[call]["verdict"] == "pass", calls
    g = x.grad.clone()
    g[2, 4] += 0.05
    torch.save(g, tdir / f"{call}.backward.output.0.pt")
    code, calls, *_ = verdicts(capsys, tmp_path / "dump")
    assert code == 1 and calls[call]["worst"]["index"] == [2, 4]
    code, out, err = run(capsys, tmp_path / "dump", "--repro", call, "--out", tmp_path / "r")
    r = subprocess.run([sys.executable, str(tmp_path / "r" / "repro.py")], capture_output=True, text=True)
    assert r.returncode == 1 and "ascendgrad kernel vs golden: PASSED" in r.stdout, r.stdout + r.stderr


def test_tiny_internal_record_is_not_passed(made, capsys, tmp_path):
    """Gradients far below the standard's absolute tolerance pass whatever they are: a CPU
    internal-node record there is still named, not passed."""
    root = tmp_path / "dump"
    shutil.copytree(made / "dump", root)
    m = meta(root)
    name = "Functional.cross_entropy.0"  # float32, mean, no weight: the record is -g*onehot/N
    for kind in ("input", "output"):
        t, rec = read_pt(root, m, f"{name}.backward", kind=kind)
        torch.save(t * 1e-6, rank_of(root) / "dump_tensor_data" / rec["data_name"])
    code, calls, *_ = verdicts(capsys, root, "--api", name)
    c = calls[name]
    assert c["verdict"] == "not comparable" and "log_softmax(input)" in c["reason"]
    assert "passes only because" in c["reason"] and c["metrics"]["matched_ratio"] == 1.0


def test_progress_line(capsys):
    p = dump_check._Progress()
    p(0, "Functional.softmax.0", 1e6)  # too soon after the start: nothing
    p.last -= 10
    p(4, "Functional.softmax.4", 5e6)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dump-check: call 5 (Functional.softmax.4), 5 MB read" in err


# ---- each argument dump-check maps decides the verdict -------------------------------------------

# msprobe_dump.py --mapping: every call passes only when each argument is read as PyTorch took it
# (positional, keyword or its default); the data is chosen so that any other value fails it
MAPPED = {
    "Functional.softshrink.0": "lambd left out: PyTorch's default 0.5, |x| within 10 % of it",
    "Functional.softshrink.1": "lambd 0.3 positional, |x| within 10 % of it (5 % off fails)",
    "Functional.softshrink.2": "lambd=0.3",
    "Torch._softmax_backward_data.0": "dim 0 positional, not the last",
    "Torch._softmax_backward_data.1": "every argument by keyword, dim=0",
    "Functional.softmax.0": "dim=0",
    "Functional.softmax.1": "no dim: PyTorch's implicit 0 for a 3-D input",
    "Functional.cross_entropy.0": "defaults: mean, ignore_index -100 (targets hold it), no smoothing",
    "Functional.cross_entropy.1": "weight, ignore_index=3, reduction='sum', label_smoothing=0.2",
    "Functional.cross_entropy.2": "the same positionally, reduction 'none'",
    "Functional.kl_div.0": "defaults: mean, log_target False",
    "Functional.kl_div.1": "reduction='batchmean', log_target=True",
    "Functional.kl_div.2": "positional: size_average, reduce None, 'sum', False",
    "Torch.kl_div.0": "no reduction: PyTorch 2.13 computes none",
    "Torch.kl_div.1": "reduction=2 (sum), log_target=True",
}


@pytest.fixture(scope="session")
def mapping_dump(tmp_path_factory):
    out = tmp_path_factory.mktemp("mapping")
    r = subprocess.run([sys.executable, str(HERE / "msprobe_dump.py"), str(out), "--mapping"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return npu_form(out, out / "npu")


def test_every_mapped_argument_decides_the_verdict(mapping_dump, capsys):
    code, calls, data, out, err = verdicts(capsys, mapping_dump)
    assert set(calls) == set(MAPPED), out
    failed = {k: (MAPPED[k], c["reason"]) for k, c in calls.items() if c["verdict"] != "pass"}
    assert code == 0 and not failed, failed


def test_mindspore_axis_is_dim(mapping_dump, tmp_path, capsys):
    """MindSpore records softmax's dim as axis."""
    root = tmp_path / "dump"
    shutil.copytree(mapping_dump, root)
    m = meta(root)
    kw = m["data"]["Functional.softmax.0.forward"]["input_kwargs"]
    kw["axis"] = kw.pop("dim")
    save_meta(root, m)
    code, calls, *_ = verdicts(capsys, root, "--api", "Functional.softmax.0")
    assert code == 0 and calls["Functional.softmax.0"]["verdict"] == "pass", calls


def _record(tdir, name, v):
    """msprobe's record of an argument: a tensor saved in dump_tensor_data, or a plain value."""
    if isinstance(v, torch.Tensor):
        torch.save(v.detach().clone(), tdir / name)
        return {"type": "torch.Tensor", "dtype": str(v.dtype), "shape": list(v.shape), "requires_grad": False,
                "data_name": name}
    return {"type": type(v).__name__, "value": v}


@pytest.mark.parametrize("ii,args,kwargs", [
    (-100, (), {}),  # every default: mean, ignore_index -100 (targets hold it), no weight, no smoothing
    (2, ("W", "sum", 2, 0.2), {}),  # weight, reduction, ignore_index, label_smoothing by position
    (1, (), dict(weight="W", reduction="none", ignore_index=1, label_smoothing=0.1)),
], ids=["defaults", "positional", "keywords"])
def test_npu_cross_entropy_loss_arguments(tmp_path, capsys, ii, args, kwargs):
    """torch_npu's fused cross entropy, each argument as its signature places it, on data where a
    wrong one changes the gradient (written in msprobe's layout by hand: no NPU here)."""
    rank = tmp_path / "dump" / "step0" / "rank0"
    tdir = rank / "dump_tensor_data"
    tdir.mkdir(parents=True)
    torch.manual_seed(5)
    n, c = 12, 4
    w = 0.2 + 2.8 * torch.rand(c)
    args = tuple(w if a == "W" else a for a in args)
    kwargs = {k: w if v == "W" else v for k, v in kwargs.items()}
    x = torch.randn(n, c, requires_grad=True)
    t = torch.randint(0, c, (n,))
    t[:3] = ii
    names = ("weight", "reduction", "ignore_index", "label_smoothing")
    given = {**dict(zip(names, args)), **kwargs}
    loss = torch.nn.functional.cross_entropy(x, t, **given)
    g = torch.rand(loss.shape) + 0.5
    loss.backward(g)
    call = "NPU.npu_cross_entropy_loss.0"
    pos = [_record(tdir, f"{call}.forward.input.{i}.pt", v) for i, v in enumerate((x, t) + args)]
    kw = {k: _record(tdir, f"{call}.forward.{k}.pt", v) for k, v in kwargs.items()}
    data = {f"{call}.forward": {"input_args": pos, "input_kwargs": kw,
                                "output": [_record(tdir, f"{call}.forward.output.0.pt", loss)]},
            f"{call}.backward": {"input": [_record(tdir, f"{call}.backward.input.0.pt", g)],
                                 "output": [_record(tdir, f"{call}.backward.output.0.pt", x.grad)]}}
    (rank / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                "data": data}))
    code, calls, *_ = verdicts(capsys, tmp_path / "dump")
    assert code == 0 and calls[call]["verdict"] == "pass", calls
