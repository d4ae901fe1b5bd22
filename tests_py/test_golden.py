"""ascendgrad.golden: cases from shapes and from ATK case files (tests_py/data/golden, our own
files in CANN's format), the files and manifest, goldens against PyTorch in float64, --check and
its verdicts on corrupted outputs, the ops-nn-signature drop-ins, and the C++ reader loop."""

import dataclasses
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ascendgrad
from ascendgrad import golden as G
from ascendgrad.__main__ import main

torch = pytest.importorskip("torch")

DATA = pathlib.Path(__file__).resolve().parent / "data" / "golden"
FILES = sorted(DATA.glob("atk_*.json"))
BF16 = np.dtype(ml_dtypes.bfloat16)
ROOT = pathlib.Path(__file__).resolve().parents[1]

# what each of our case files must skip, by id, with a word of the reason
EXPECTED_SKIPS = {
    "atk_aclnnSoftmaxBackward.json": {8: "rejects", 9: "fp8"},
    "atk_aclnnLogSigmoidBackward.json": {8: "features"},
    "atk_aclnnSoftshrinkBackward.json": {7: "lambd"},
    "atk_aclnnCrossEntropyLossGrad.json": {7: "out of bounds", 8: "cannot draw target"},
    "atk_aclnnKlDivBackward.json": {7: "attribute"},
}


# --------------------------------------------------------------------------------------------
# an independent float64 computation with PyTorch


def _t64(a):
    return torch.from_numpy(np.asarray(a).astype(np.float64))


def torch_golden(case):
    """The case's gradient in float64 by PyTorch (autograd where the operator is a true
    gradient, the formula of CANN's own golden where it is not)."""
    i, a = case.inputs, case.attrs
    if case.op == "softmax_backward":
        g, y = _t64(i["grad_output"]), _t64(i["output"])
        if g.dim() == 0:
            return (y * (g - g * y)).numpy()
        return torch.ops.aten._softmax_backward_data(g, y, a.get("dim", -1), torch.float64).numpy()
    if case.op == "log_sigmoid_backward":
        return (_t64(i["grad_output"]) * torch.sigmoid(-_t64(i["x"]))).numpy()
    if case.op == "softshrink_backward":
        g, x = _t64(i["grad_output"]), _t64(i["x"])
        r = torch.ops.aten.softshrink_backward(g, x, a.get("lambd", 0.5))
        return torch.where(torch.isnan(x), torch.nan, r).numpy()  # NaN x gives NaN (CANN), not g
    if case.op == "kl_div_backward":  # g may be B-shaped for any reduction: the VJP of the
        x = _t64(i["x"]).requires_grad_()  # pointwise loss, weighted by g and the reduction's c
        t = _t64(i["target"])
        with _quiet():  # kl_div warns about broadcasting
            pointwise = torch.nn.functional.kl_div(x, t, reduction="none", log_target=a.get("log_target", False))
        shape = pointwise.shape
        c = {"mean": 1 / max(math.prod(shape), 1), "batchmean": 1 / max(shape[0], 1) if len(shape) else 1.0}
        (pointwise * _t64(i["grad_output"]).expand(shape)).sum().mul(c.get(a.get("reduction", "mean"), 1.0)).backward()
        return x.grad.numpy() if x.grad is not None else np.zeros(x.shape)
    if case.op == "cross_entropy_loss_grad":
        return _torch_ce(case)
    raise AssertionError(case.op)


class _quiet:
    def __enter__(self):
        import warnings

        self.w = warnings.catch_warnings()
        self.w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self.w.__exit__(*exc)


def _torch_ce(case):
    i, a = case.inputs, case.attrs
    lp = _t64(i["log_prob"])
    n, c = lp.shape
    t = torch.from_numpy(i["target"].astype(np.int64))
    w = _t64(i["weight"]) if "weight" in i else torch.ones(c, dtype=torch.float64)
    red = a.get("reduction", "mean")
    eps = a.get("label_smoothing", 0.0)
    zeta = a.get("lse_square_scale_for_zloss", 0.0)
    ii = a.get("ignore_index", -100)
    keep = (t != ii).double()
    ts = torch.where(t != ii, t, torch.zeros_like(t))
    gl = _t64(i["grad_loss"]).reshape(-1)
    wt = w[ts] * keep
    if red == "mean":
        total = wt.sum()
        scale = (gl / total).expand(n) if total != 0 else torch.zeros(n, dtype=torch.float64)
    else:
        scale = gl.expand(n)
    p = torch.exp(lp)
    onehot = torch.nn.functional.one_hot(ts, c).double() if n else torch.zeros(0, c, dtype=torch.float64)
    grad = (1 - eps) * wt[:, None] * (p - onehot)
    if eps:
        grad = grad + eps / c * keep[:, None] * (w.sum() * p - w[None, :])
    grad = scale[:, None] * grad
    if zeta:
        gz = gl + (_t64(i["grad_zloss"]).reshape(-1) if "grad_zloss" in i else 0)
        if red == "mean":
            cnt = keep.sum()
            gz = (gz / cnt).expand(n) if cnt else torch.zeros(n, dtype=torch.float64)
        else:
            gz = gz.expand(n)
        grad = grad + (2 * zeta * _t64(i["lse_for_zloss"]) * keep * gz)[:, None] * p
    return torch.where(keep[:, None] > 0, grad, torch.zeros_like(grad)).numpy()


def assert_golden_ok(case):
    """The golden is PyTorch's float64 result rounded to the output dtype: equal up to the
    rounding of two float64 computations (one unit in the last place, NaN where NaN)."""
    (name, gold), = case.outputs.items()
    want = torch_golden(case)
    assert gold.shape == want.shape, case.folder
    got = gold.astype(np.float64)
    fi = ml_dtypes.finfo(gold.dtype)
    scale = np.max(np.abs(want[np.isfinite(want)]), initial=1.0)
    np.testing.assert_allclose(got, want, rtol=float(fi.eps), atol=float(fi.smallest_subnormal) + 1e-13 * scale,
                               equal_nan=True, err_msg=case.folder)


def assert_files_match_manifest(folder):
    """Every tensor's .npy has the manifest's shape and dtype, and its .bin the manifest's size:
    a harness may trust either file (0-D and empty tensors included)."""
    m = json.loads(pathlib.Path(folder, "manifest.json").read_text())
    for e in m["inputs"] + m["outputs"]:
        words = np.dtype(np.uint16) if e["dtype"] == "bfloat16" else np.dtype(e["dtype"])
        npy = np.load(pathlib.Path(folder, e["npy"]))
        assert npy.shape == tuple(e["shape"]) and npy.dtype == words, (folder, e, npy.shape)
        assert os.path.getsize(pathlib.Path(folder, e["bin"])) == math.prod(e["shape"]) * words.itemsize, (folder, e)


# --------------------------------------------------------------------------------------------
# case files


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_case_file_goldens_match_torch(path, tmp_path):
    made, skipped = [], []
    for item in G.cases_from_atk(path, seed=3):
        (skipped if isinstance(item, G.Skipped) else made).append(item)
    expected = EXPECTED_SKIPS[path.name]
    assert {s.id: s.reason for s in skipped}.keys() == expected.keys(), [(s.id, s.reason) for s in skipped]
    for s in skipped:
        assert expected[s.id] in s.reason, s.reason
    total = len(json.loads(path.read_text()))
    assert len(made) + len(skipped) == total
    dtypes = set()
    for case in made:
        assert_golden_ok(case)
        dtypes |= {a.dtype.name for a in case.inputs.values()}
        folder = G.write_case(case, tmp_path / case.folder)
        assert_files_match_manifest(folder)
        back = G.load_case(folder)
        assert back.attrs == case.attrs or any(isinstance(v, float) and math.isnan(v) for v in case.attrs.values())
        for k, arr in {**case.inputs, **case.outputs}.items():
            other = {**back.inputs, **back.outputs}[k]
            assert other.dtype == arr.dtype and other.shape == arr.shape
            assert other.tobytes() == arr.tobytes()
    assert {"float16", "bfloat16", "float32", "float64"} <= dtypes  # every dtype in every file


def test_range_value_forms():
    rng = np.random.default_rng(0)
    f32 = np.dtype(np.float32)
    u = G._fill(rng, (10000,), f32, G._distribution([-3, 7]))
    assert u.min() >= -3 and u.max() < 7 and u.max() > 6.9
    ints = G._fill(rng, (5000,), np.dtype(np.int64), G._distribution([0, 4]))
    assert set(np.unique(ints)) == {0, 1, 2, 3, 4}  # both ends included
    for rv, want in ((2.5, 2.5), ("inf", np.inf), ("-inf", -np.inf), (["-inf"], -np.inf), ([1, 1], 1.0)):
        assert np.all(G._fill(rng, (7,), f32, G._distribution(rv)) == want)
    assert np.isnan(G._fill(rng, (3,), BF16, G._distribution(["nan"]))).all()
    ch = G._fill(rng, (1000,), f32, G._distribution([1, 2, 3, 4, 8]))
    assert set(np.unique(ch)) == {1, 2, 3, 4, 8}
    mixed = G._fill(rng, (100,), f32, G._distribution(["-inf", "inf"]))
    assert set(np.unique(mixed)) == {-np.inf, np.inf}
    nd = G._fill(rng, (200000,), f32, G._distribution({"name": "nd", "mean": [10, 10], "std": [2, 2]}))
    assert abs(nd.mean() - 10) < 0.05 and abs(nd.std() - 2) < 0.05
    text = G._fill(rng, (1000,), f32, G._distribution("(0, 1)"))
    assert text.min() >= 0 and text.max() < 1
    assert G._distribution("default") == G.ECO == G._distribution(None)
    with pytest.raises(ValueError):
        G._distribution({"name": "poisson"})


def test_ecosystem_default_is_half_uniform_half_normal():
    kinds = []
    for seed in range(200):
        a = G._fill(np.random.default_rng([seed, 0]), (4000,), np.dtype(np.float32), G.ECO)
        uniform = a.min() >= -5 and a.max() <= 5 and abs(a.std() - 10 / math.sqrt(12)) < 0.1
        kinds.append(uniform)
        if not uniform:  # normal: mean in [-5, 5], spread in [0.1, 2]
            assert -5.2 < a.mean() < 5.2 and 0.09 < a.std() < 2.1
    assert 70 < sum(kinds) < 130


def test_reproducible_from_seed(tmp_path):
    a = G.make_case("softmax_backward", (3, 17), "bf16", seed=5, dim=0)
    b = G.make_case("softmax_backward", (3, 17), "bf16", seed=5, dim=0)
    c = G.make_case("softmax_backward", (3, 17), "bf16", seed=6, dim=0)
    assert a.inputs["grad_output"].tobytes() == b.inputs["grad_output"].tobytes()
    assert a.outputs["grad_input"].tobytes() == b.outputs["grad_input"].tobytes()
    assert a.inputs["grad_output"].tobytes() != c.inputs["grad_output"].tobytes()
    n = ascendgrad.get_num_threads()
    try:  # slices of a large case are drawn and checked on threads: the same numbers for any count
        made = []
        for threads in (1, 2):
            ascendgrad.set_num_threads(threads)
            made.append(G.make_case("log_sigmoid_backward", (3 << 19) + 5, "bf16", seed=8))
        assert all(made[0].inputs[k].tobytes() == made[1].inputs[k].tobytes() for k in made[0].inputs)
        assert made[0].outputs["grad_input"].tobytes() == made[1].outputs["grad_input"].tobytes()
    finally:
        ascendgrad.set_num_threads(n)
    path = DATA / "atk_aclnnKlDivBackward.json"
    whole = {c.folder: c for c in G.cases_from_atk(path, seed=1) if isinstance(c, G.Case)}
    one = [c for c in G.cases_from_atk(path, seed=1, filter=["6"])]
    assert len(one) == 1 and one[0].inputs["x"].tobytes() == whole[one[0].folder].inputs["x"].tobytes()
    assert one[0].seed == 1 + 6  # the manifest's seed regenerates the case alone


def test_filter_by_id_range_and_name():
    path = DATA / "atk_aclnnSoftmaxBackward.json"
    ids = [c.id for c in G.cases_from_atk(path, filter=["1-3", "*fp64*"])]
    assert ids == [1, 2, 3, 4]


def test_manifest_layout_and_bfloat16(tmp_path):
    case = G.make_case("cross_entropy_loss_grad", (6, 5), "bf16", seed=2, optional=["weight"],
                       reduction="none", ignore_index=1, ignore_fraction=0.5)
    folder = pathlib.Path(G.write_case(case, tmp_path / case.folder))
    m = json.loads((folder / "manifest.json").read_text())
    assert set(m) == {"op", "aclnn", "case", "attrs", "seed", "inputs", "outputs"}
    assert m["op"] == "cross_entropy_loss_grad" and m["aclnn"] == "aclnnCrossEntropyLossGrad"
    assert set(m["case"]) == {"id", "name", "source"}
    assert m["attrs"] == {"reduction": "none", "ignore_index": 1} and m["seed"] == 2
    assert [e["name"] for e in m["inputs"]] == ["grad_loss", "log_prob", "target", "weight"]  # absent: not listed
    for e in m["inputs"] + m["outputs"]:
        assert set(e) == {"name", "dtype", "shape", "bin", "npy"}
        raw = (folder / e["bin"]).read_bytes()
        npy = np.load(folder / e["npy"])
        assert raw == npy.tobytes()
        if e["name"] != "target":
            assert e["dtype"] == "bfloat16" and npy.dtype == np.uint16
    assert (case.inputs["target"] == 1).any()  # ignore_index hits when asked
    back = G.load_case(folder)
    assert back.outputs["x_grad"].dtype == BF16
    assert back.outputs["x_grad"].tobytes() == case.outputs["x_grad"].tobytes()


def test_optional_tensors_and_unnamed_inputs():
    ls = {c.id: c for c in G.cases_from_atk(DATA / "atk_aclnnLogSigmoidBackward.json") if isinstance(c, G.Case)}
    assert "buffer" in ls[0].inputs and "buffer" not in ls[1].inputs and "buffer" not in ls[2].inputs
    ce = {c.id: c for c in G.cases_from_atk(DATA / "atk_aclnnCrossEntropyLossGrad.json") if isinstance(c, G.Case)}
    assert "weight" in ce[0].inputs and "weight" not in ce[1].inputs
    assert "grad_zloss" not in ce[0].inputs  # given, but without the z-loss scale CANN passes NULL
    assert {"grad_zloss", "lse_for_zloss"} <= set(ce[3].inputs)
    ss = {c.id: c for c in G.cases_from_atk(DATA / "atk_aclnnSoftshrinkBackward.json") if isinstance(c, G.Case)}
    assert list(ss[0].inputs) == ["grad_output", "x"] and ss[0].attrs == {"lambd": 3.0}
    assert ss[1].attrs["lambd"] == math.inf and ss[1].manifest()["attrs"]["lambd"] == "inf"
    assert 1 <= ss[2].attrs["lambd"] <= 5  # an attribute's [lo, hi] is drawn
    assert ss[4].outputs["grad_input"].dtype == np.float32  # float16 with bfloat16


def test_folder_names_are_safe_and_unique(tmp_path):
    entry = json.loads((DATA / "atk_aclnnSoftshrinkBackward.json").read_text())[0]
    odd = [dict(entry, name="a/b: c*?\\..") for _ in range(2)]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(odd))
    folders = [c.folder for c in G.cases_from_atk(path)]
    assert folders == ["0000_a_b_c", "0000_a_b_c-2"]
    assert [c.folder for c in G.cases_from_atk(DATA / "atk_aclnnSoftshrinkBackward.json", filter=["0"])] == [
        "0000_torch.ops.aten.softshrink_backward"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op,shapes,attrs,optional", [
    ("softmax_backward", [(7, 33)], {"dim": 0}, ()),
    ("softmax_backward", [()], {}, ()),
    ("log_sigmoid_backward", [(5, 0, 3)], {}, ()),
    ("log_sigmoid_backward", [(40,)], {}, ("buffer",)),
    ("softshrink_backward", [(4, 1), (1, 6)], {"lambd": 1.5}, ()),
    ("cross_entropy_loss_grad", [(9, 11)], {"reduction": "mean", "label_smoothing": 0.2}, ("weight",)),
    ("cross_entropy_loss_grad", [(4, 3)], {"reduction": "sum", "lse_square_scale_for_zloss": 0.1},
     ("grad_zloss", "lse_for_zloss")),
    ("kl_div_backward", [(3, 4), (3, 4)], {"reduction": "batchmean", "log_target": True}, ()),
    ("kl_div_backward", [(2, 1, 5), (2, 3, 5)], {"reduction": "none"}, ()),
])
def test_make_case_matches_torch(op, shapes, attrs, optional, dtype):
    case = G.make_case(op, shapes, dtype, seed=11, optional=optional, **attrs)
    assert_golden_ok(case)
    assert set(optional) <= set(case.inputs)


@pytest.mark.parametrize("op,shapes,attrs", [
    ("kl_div_backward", [(3, 4)], {"reduction": "mean"}),  # grad_output is 0-D
    ("cross_entropy_loss_grad", [(5, 3)], {"reduction": "sum"}),  # grad_loss is 0-D
    ("softmax_backward", [()], {}),  # every tensor 0-D
    ("log_sigmoid_backward", [(5, 0, 3)], {}),  # empty
    ("kl_div_backward", [(0, 4)], {"reduction": "none"}),
])
def test_zero_d_and_empty_tensors_keep_their_shape_in_files(tmp_path, op, shapes, attrs):
    case = G.make_case(op, shapes, "bf16", seed=1, **attrs)
    assert any(a.ndim == 0 or a.size == 0 for a in case.inputs.values())
    assert_files_match_manifest(G.write_case(case, tmp_path / case.folder))


def test_range_option_and_bf16_rounded_once():
    case = G.make_case("log_sigmoid_backward", (1000,), "float32", range=(2, 3))
    x = case.inputs["x"]
    assert x.min() >= 2 and x.max() < 3
    # just above the midpoint of 1 and 1 + 2^-7: nearest is 1 + 2^-7 (via float32 it would tie to 1)
    v = np.array([1 + 2.0**-8 + 2.0**-40, -(1 + 2.0**-8 + 2.0**-40), 2.0**-140 * 1.5, 1e39, np.nan, -np.inf])
    r = G.round_to(v, BF16).astype(np.float64)
    assert r[0] == 1 + 2.0**-7 and r[1] == -(1 + 2.0**-7)
    assert r[3] == np.inf and np.isnan(r[4]) and r[5] == -np.inf
    tiny = np.random.default_rng(0).uniform(-2.0**-13, 2.0**-13, 100000)  # float16 subnormals and around
    tiny[:6] = [2.0**-25, -2.0**-25, 3 * 2.0**-25, 2.0**-14 - 2.0**-26, -0.0, 2.0**-24 * 1023.5]
    assert np.array_equal(G.round_to(tiny, np.dtype(np.float16)).view(np.uint16),
                          tiny.astype(np.float16).view(np.uint16))  # NumPy's (slow) cast is exact
    exact = np.array([1.5, -0.25, 3.0], dtype=np.float64)
    assert np.array_equal(G.round_to(exact, BF16).astype(np.float64), exact)


def test_kernel_disagreement_is_loud(monkeypatch, tmp_path, capsys):
    spec = G.OPS["log_sigmoid_backward"]
    bad = G._Op(spec.aclnn, spec.args, spec.output, lambda **kw: spec.kernel(**kw) * 1.01, spec.reference)
    monkeypatch.setitem(G.OPS, "log_sigmoid_backward", bad)
    with pytest.raises(G.GoldenMismatchError, match="disagree"):
        G.make_case("log_sigmoid_backward", (64,), "float32")
    rc = main(["golden", "--cases", str(DATA / "atk_aclnnLogSigmoidBackward.json"), "--out", str(tmp_path / "o")])
    assert rc == 1 and "disagree" in capsys.readouterr().err
    assert not any((tmp_path / "o").glob("*/manifest.json"))


# --------------------------------------------------------------------------------------------
# command line and --check


def _gen(tmp_path, capsys, name="atk_aclnnSoftmaxBackward.json"):
    out = tmp_path / "golden"
    assert main(["golden", "--cases", str(DATA / name), "--out", str(out), "--seed", "4"]) == 0
    return out, capsys.readouterr()


def test_cli_one_case(tmp_path, capsys):
    rc = main(["golden", "cross_entropy_loss_grad", "--shape", "8,5", "--dtype", "fp16", "--reduction", "none",
               "--ignore-index", "2", "--ignore-fraction", "0.3", "--label-smoothing", "0.1", "--with", "weight",
               "--seed", "9", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr()
    (folder,) = [p for p in tmp_path.iterdir()]
    case = G.load_case(folder)
    assert case.attrs == {"reduction": "none", "ignore_index": 2, "label_smoothing": 0.1}
    assert set(case.inputs) == {"grad_loss", "log_prob", "target", "weight"} and case.seed == 9
    assert_golden_ok(case)
    assert main(["golden", "softmax_backward", "--shape", "", "--out", str(tmp_path / "s")]) == 0
    assert G.load_case(next((tmp_path / "s").iterdir())).inputs["output"].shape == ()
    assert main(["golden", "softmax_backward", "--lambd", "1", "--shape", "3", "--out", str(tmp_path)]) == 2
    assert main(["golden", "softmax_backward", "--shape", "3", "--dim", "5", "--out", str(tmp_path)]) == 2
    assert "dim" in capsys.readouterr().err


def test_cli_case_file_lists_skips(tmp_path, capsys):
    out, cap = _gen(tmp_path, capsys)
    assert "8 generated, 2 skipped" in cap.out
    assert "skipped 0008_int8_is_rejected:" in cap.out and "skipped 0009_fp8_is_not_made:" in cap.out
    assert "[10]" in cap.err  # the progress line
    index = json.loads((out / "index.json").read_text())
    assert len(index["generated"]) == 8 and [s["id"] for s in index["skipped"]] == [8, 9]


def test_check_self_passes_and_names_corruptions(tmp_path, capsys):
    out, _ = _gen(tmp_path, capsys)
    assert main(["golden", "--check", str(out), "--actual", str(out), "--json", str(tmp_path / "v.json")]) == 0
    assert json.loads((tmp_path / "v.json").read_text())["exit_code"] == 0
    cases = sorted(p.name for p in out.iterdir() if p.is_dir())

    def actual():
        act = tmp_path / "actual"
        shutil.rmtree(act, ignore_errors=True)
        shutil.copytree(out, act)
        return act

    def corrupt(case, how):
        act = actual()
        f = act / case / "grad_input.bin"
        m = json.loads((act / case / "manifest.json").read_text())["outputs"][0]
        dt = BF16 if m["dtype"] == "bfloat16" else np.dtype(m["dtype"])
        a = np.fromfile(f, dtype=dt)
        (act / case / "grad_input.npy").unlink()
        if how == "element":
            a[a.size // 2] = a[a.size // 2] * 4 + 3
            a.tofile(f)
        elif how == "nan":
            a[0] = np.nan
            a.tofile(f)
        elif how == "truncate":
            f.write_bytes(f.read_bytes()[:-2])
        elif how == "dtype":
            f.unlink()
            np.save(act / case / "grad_input.npy", a.astype(np.float64))
        elif how == "missing":
            shutil.rmtree(act / case)
        return act

    victim = "0000_uniform_fp16"
    for how, code in (("element", 1), ("nan", 1), ("truncate", 2), ("dtype", 2), ("missing", 2)):
        act = corrupt(victim, how)
        capsys.readouterr()
        rc = main(["golden", "--check", str(out), "--actual", str(act), "--json", str(tmp_path / "v.json")])
        text = capsys.readouterr().out
        v = json.loads((tmp_path / "v.json").read_text())
        assert rc == code, (how, text)
        named = v["failed"] if code == 1 else v["errors"]
        assert named == [victim], (how, v)
        assert v["passed"] == len(cases) - 1
        if how == "truncate":
            assert "grad_input.bin" in text and "truncated" in text
        if how == "dtype":
            assert "float64" in text and "float16" in text
        if how == "missing":
            assert "missing" in text
    rep = G.check(out, corrupt(victim, "element"), standard="cann")
    assert not rep and rep.failed == [victim] and rep.exit_code == 1
    for std in ("cann-v1", "msprobe"):
        rep = G.check(out, corrupt(victim, "element"), standard=std)
        assert rep.exit_code == 1 and rep.failed == [victim], std
        assert G.check(out, out, standard=std)
    # dual benchmark: the device against a third-party result in the same layout
    assert main(["golden", "--check", str(out), "--actual", str(out), "--standard", "dual-benchmark",
                 "--benchmark", str(out)]) == 0
    assert main(["golden", "--check", str(out), "--actual", str(out), "--standard", "dual-benchmark"]) == 2
    assert main(["golden", "--check", str(out), "--actual", str(out), "--standard", "nonsense"]) == 2
    assert main(["golden", "--check", str(tmp_path / "nothing"), "--actual", str(out)]) == 2


# --------------------------------------------------------------------------------------------
# ops-nn drop-ins


def _agree(a, b):
    rep = ascendgrad.compare(a, b)
    assert rep, rep
    assert a.dtype == b.dtype and a.shape == b.shape


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32])
@pytest.mark.parametrize("seed", range(3))
def test_drop_ins_agree_with_numpy_api(dtype, seed):
    rng = np.random.default_rng(seed)
    r = lambda *s: rng.uniform(-3, 3, s).astype(dtype)  # noqa: E731
    shape = tuple(int(d) for d in rng.integers(1, 9, 3))
    y, g = r(*shape), r(*shape)
    _agree(G.softmax_grad_golden(y, g, axes=[1]), ascendgrad.softmax_backward(g, y, 1))
    _agree(G.softmax_grad_golden(y, g), ascendgrad.softmax_backward(g, y))
    x = r(*shape)
    _agree(G.log_sigmoid_grad_golden(g, x), ascendgrad.log_sigmoid_backward(g, x))
    _agree(G.soft_shrink_grad_golden(g, x, lambd=1.0), ascendgrad.softshrink_backward(g, x, 1.0))
    t = r(*shape)
    for red in ("none", "mean", "sum", "batchmean"):
        _agree(G.kl_div_loss_grad_golden(g, x, t, reduction=red, log_target=bool(seed % 2)),
               ascendgrad.kl_div_backward(g, x, t, red, bool(seed % 2)))
    n, c = 6, 5
    lp = np.log(rng.dirichlet(np.ones(c), n)).astype(dtype)
    tg = rng.integers(0, c, n)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    for red, gl in (("none", r(n)), ("mean", r()), ("sum", r())):
        _agree(G.cross_entropy_loss_grad_golden(gl, lp, tg, w, reduction=red, ignore_index=int(tg[0]),
                                                label_smoothing=0.1),
               ascendgrad.cross_entropy_loss_grad(gl, lp, tg, w, reduction=red, ignore_index=int(tg[0]),
                                                  label_smoothing=0.1))
    assert G.__golden__["kernel"]["softmax_grad"] == "softmax_grad_golden"


# --------------------------------------------------------------------------------------------
# the C++ reader: generate, run through the C API, check


def test_cpp_reader_loop(tmp_path, capsys):
    def where(flag):
        return subprocess.run([sys.executable, "-m", "ascendgrad", flag], check=True, capture_output=True,
                              text=True).stdout.strip()

    inc, lib = where("--include-dir"), where("--libdir")
    exe = tmp_path / "run_cases"
    subprocess.run(["g++", "-std=c++17", str(ROOT / "examples" / "golden" / "run_cases.cpp"), f"-I{inc}",
                    f"-L{lib}", "-lascendgrad", f"-Wl,-rpath,{lib}", "-o", str(exe)], check=True)
    for name in (p.name for p in FILES):
        out, _ = _gen(tmp_path / name, capsys, name)
        r = subprocess.run([str(exe), str(out), str(tmp_path / name / "actual")], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert main(["golden", "--check", str(out), "--actual", str(tmp_path / name / "actual")]) == 0


# --------------------------------------------------------------------------------------------
# large cases


@pytest.mark.slow
@pytest.mark.parametrize("op,shape,dtype,attrs", [
    ("softmax_backward", (2, 8192, 2048), "float16", {"dim": 1}),
    ("softshrink_backward", (20_000_000,), "float32", {"lambd": 0.5}),
    ("log_sigmoid_backward", (30_000_000,), "bfloat16", {}),
    ("cross_entropy_loss_grad", (65536, 512), "float32", {"reduction": "mean", "label_smoothing": 0.1}),
    ("kl_div_backward", (25_000_000,), "float32", {"reduction": "mean"}),
])
def test_large_cases(op, shape, dtype, attrs, tmp_path):
    case = G.make_case(op, [shape], dtype, seed=1, **attrs)
    assert math.prod(case.outputs[G.OPS[op].output].shape) >= 20_000_000
    assert_golden_ok(case)
    folder = G.write_case(case, tmp_path / case.folder)
    for e in json.loads(pathlib.Path(folder, "manifest.json").read_text())["inputs"]:
        assert os.path.getsize(pathlib.Path(folder, e["bin"])) == math.prod(e["shape"]) * (
            2 if e["dtype"] in ("float16", "bfloat16") else np.dtype(e["dtype"]).itemsize)


# --------------------------------------------------------------------------------------------
# attributes of case files: each spelling, each default, with data on which a wrong value
# changes the golden (a value read wrongly, or a default other than PyTorch's, fails here)


def _tensor(name, shape, lo, hi, dtype="fp64"):
    return {"name": name, "type": "tensor", "dtype": dtype, "shape": shape, "range_values": [lo, hi]}


def _attr(name, value, dtype="int", kind="attr"):
    return {"name": name, "type": kind, "dtype": dtype, "shape": None, "range_values": value}


_SS = [_tensor("gradOutput", [4000], -2, 2), _tensor("self", [4000], -0.55, 0.55)]
_SS_NEAR = [_tensor("gradOutput", [4000], -2, 2), _tensor("self", [4000], -0.33, 0.33)]
_CE = [_tensor("gradLoss", [], 0.5, 2), _tensor("logProb", [64, 4], -3, -0.1),
       _tensor("target", [64], 0, 3, "int64")]
_CE_NONE = [_tensor("gradLoss", [64], 0.5, 2)] + _CE[1:]
_W = _tensor("weightOptional", [4], 0.2, 3)
_KL = [_tensor("gradOutput", [], 0.5, 2), _tensor("self", [8, 6], -3, 0), _tensor("target", [8, 6], 0.1, 1)]

# (op, inputs as the file gives them, what each attribute must be, a wrong value that the data tells apart)
ATTRIBUTE_CASES = {
    "softmax_dim": ("SoftmaxBackward", [_tensor("gradOutput", [6, 5], -2, 2), _tensor("output", [6, 5], 0, 1),
                                        _attr("dim", 0)], {"dim": 0}, {"dim": -1}),
    "softmax_dim_default": ("SoftmaxBackward", [_tensor("gradOutput", [6, 5], -2, 2), _tensor("output", [6, 5], 0, 1)],
                            {"dim": -1}, {"dim": 0}),
    "softshrink_lambd": ("SoftshrinkBackward", _SS_NEAR + [_attr("lambd", 0.3, "fp32", "scalar")], {"lambd": 0.3},
                         {"lambd": 0.3 * 1.05}),
    "softshrink_lambd_unnamed": ("SoftshrinkBackward", [dict(t, name=None) for t in _SS_NEAR]
                                 + [_attr(None, 0.3, "fp64", "scalar")], {"lambd": 0.3}, {"lambd": 0.3 * 0.95}),
    "softshrink_lambd_default": ("SoftshrinkBackward", _SS, {"lambd": 0.5}, {"lambd": 0.5 * 0.95}),
    "ce_reduction_sum": ("CrossEntropyLossGrad", _CE + [_attr("reduction", "sum", "string")], {"reduction": "sum"},
                         {"reduction": "mean"}),
    "ce_reduction_none": ("CrossEntropyLossGrad", _CE_NONE + [_attr("reduction", "none", "string")],
                          {"reduction": "none"}, {"reduction": "mean"}),
    "ce_reduction_default": ("CrossEntropyLossGrad", _CE, {"reduction": "mean"}, {"reduction": "sum"}),
    "ce_ignore_index": ("CrossEntropyLossGrad", _CE + [_attr("ignoreIndex", 1)], {"ignore_index": 1},
                        {"ignore_index": -100}),
    "ce_ignore_index_snake": ("CrossEntropyLossGrad", _CE + [_attr("ignore_index", 2)], {"ignore_index": 2},
                              {"ignore_index": -100}),
    "ce_ignore_index_default": ("CrossEntropyLossGrad", _CE, {"ignore_index": -100}, {"ignore_index": 0}),
    "ce_label_smoothing": ("CrossEntropyLossGrad", _CE + [_attr("labelSmoothing", 0.3, "fp64")],
                           {"label_smoothing": 0.3}, {"label_smoothing": 0.0}),
    "ce_label_smoothing_default": ("CrossEntropyLossGrad", _CE, {"label_smoothing": 0.0}, {"label_smoothing": 0.1}),
    "ce_weight": ("CrossEntropyLossGrad", _CE + [_W], {}, {"weight": None}),
    "ce_weight_snake": ("CrossEntropyLossGrad", _CE + [dict(_W, name="weight")], {}, {"weight": None}),
    "kl_reduction_sum": ("KlDivBackward", _KL + [_attr("reduction", 2)], {"reduction": "sum"}, {"reduction": "mean"}),
    "kl_reduction_batchmean": ("KlDivBackward", _KL + [_attr("reduction", 3)], {"reduction": "batchmean"},
                               {"reduction": "mean"}),
    "kl_reduction_default": ("KlDivBackward", _KL, {"reduction": "mean"}, {"reduction": "batchmean"}),
    "kl_log_target": ("KlDivBackward", _KL + [_attr("logTarget", True, "bool")], {"log_target": True},
                      {"log_target": False}),
    "kl_log_target_snake": ("KlDivBackward", _KL + [_attr("log_target", True, "bool")], {"log_target": True},
                            {"log_target": False}),
    "kl_log_target_default": ("KlDivBackward", _KL, {"log_target": False}, {"log_target": True}),
}


def _with(case, attrs, weight=True):
    """The case with these attributes (and without its weight, when not `weight`), for torch_golden."""
    inputs = {k: v for k, v in case.inputs.items() if weight or k != "weight"}
    return dataclasses.replace(case, attrs={**case.attrs, **attrs}, inputs=inputs)


@pytest.mark.parametrize("name", list(ATTRIBUTE_CASES))
def test_case_file_attributes_reach_the_golden(tmp_path, name):
    aclnn, inputs, want, wrong = ATTRIBUTE_CASES[name]
    path = tmp_path / "atk.json"
    path.write_text(json.dumps([{"id": 0, "name": name, "aclnn_name": aclnn, "inputs": inputs}]))
    (case,) = G.cases_from_atk(path, seed=5)
    assert isinstance(case, G.Case), case
    assert_golden_ok(_with(case, want))  # the golden is PyTorch's with the file's value
    gold = next(iter(case.outputs.values())).astype(np.float64)
    other = torch_golden(_with(case, {k: v for k, v in wrong.items() if k != "weight"}, "weight" not in wrong))
    assert not np.allclose(gold, other, rtol=1e-6, atol=0), "the data cannot tell the wrong value apart"
    assert_files_match_manifest(G.write_case(case, tmp_path / case.folder))
