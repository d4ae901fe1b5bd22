"""Files that are not what they claim, on every path where a command-line tool reads a user's
file (compare's ACTUAL, EXPECTED and --benchmark as .npy, .npz and raw; golden --cases; golden
--check's manifests, goldens, device outputs and --benchmark; dump-check's dump.json and tensor
files): garbage, an empty file, a truncated file and a folder in its place. Each is one line on
stderr naming the file and what it should have been, exit status 2, never a traceback, and
nothing written."""

import json
import pathlib
import shutil

import numpy as np
import pytest

from ascendgrad import golden as G
from ascendgrad.__main__ import main

HOW = ("garbage", "empty", "truncated", "folder")
# no header of any format, and not UTF-8 (0x93 as in a .npy's magic, 0xff): as a raw float32
# dump it is a whole number of elements, but not as many as the golden
GARBAGE = b"\x93 this is not what its name says \xff\xfe" * 8
DATA = pathlib.Path(__file__).resolve().parent / "data" / "golden"


def spoil(path, how):
    path = pathlib.Path(path)
    good = path.read_bytes()
    path.unlink()
    if how == "folder":
        path.mkdir()
        (path / "inside").write_bytes(good)
    else:
        path.write_bytes({"garbage": GARBAGE, "empty": b"", "truncated": good[: len(good) // 2]}[how])


def one_line(capsys, argv, path, should):
    """Run the command line on a spoiled `path`: exit 2, and exactly one line on stderr that names
    the file and says what it should have been."""
    code = main([str(a) for a in argv])  # a traceback would raise here
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and should in lines[0] and "should" in lines[0], err
    return lines[0]


# ---- compare ---------------------------------------------------------------------------------


def _arrays(tmp_path, suffix):
    a = np.linspace(-1, 1, 300, dtype=np.float32)
    paths = []
    for name in ("actual", "expected", "bench"):
        p = tmp_path / f"{name}{suffix}"
        if suffix == ".npy":
            np.save(p, a)
        elif suffix == ".npz":
            np.savez(p, grad=a)
        else:
            a.tofile(p)
        paths.append(p)
    return paths


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("which", ["actual", "expected", "benchmark"])
@pytest.mark.parametrize("suffix,should", [(".npy", ".npy file"), (".npz", ".npz file"), (".bin", "")])
def test_compare(tmp_path, capsys, how, which, suffix, should):
    actual, expected, bench = _arrays(tmp_path, suffix)
    victim = {"actual": actual, "expected": expected, "benchmark": bench}[which]
    spoil(victim, how)
    argv = ["compare", actual, expected, "--standard", "dual-benchmark", "--benchmark", bench]
    if suffix == ".bin":  # a raw dump: any bytes are data, but not as many as the others
        argv += ["--dtype", "float32"]
        n = {"garbage": len(GARBAGE) // 4, "empty": 0, "truncated": 150}.get(how)
        should = "a folder; it should be a raw dump of float32" if n is None else f"{victim}: shape [{n}]"
    one_line(capsys, argv, victim, should)


def test_compare_raw_not_whole_elements(tmp_path, capsys):
    actual, expected, _ = _arrays(tmp_path, ".bin")
    actual.write_bytes(actual.read_bytes()[:-3])
    one_line(capsys, ["compare", actual, expected, "--dtype", "float32"], actual, "not a whole number of elements")


def test_compare_object_npy_is_refused_not_unpickled(tmp_path, capsys):
    actual, expected, _ = _arrays(tmp_path, ".npy")
    np.save(actual, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    line = one_line(capsys, ["compare", actual, expected], actual, ".npy file")
    assert "Python objects" in line


# ---- golden --cases --------------------------------------------------------------------------


@pytest.mark.parametrize("how", HOW)
def test_golden_cases_file(tmp_path, capsys, how):
    path = tmp_path / "atk_aclnnSoftmaxBackward.json"
    shutil.copy(DATA / path.name, path)
    spoil(path, how)
    out = tmp_path / "out"
    one_line(capsys, ["golden", "--cases", path, "--out", out], path, "CANN ATK case file")
    assert not out.exists()  # nothing written, not even the index


def test_golden_cases_file_in_utf16_is_read(tmp_path, capsys):
    """JSON may be UTF-16: the file is decoded, not refused as 'not UTF-8'."""
    path = tmp_path / "atk.json"
    path.write_bytes((DATA / "atk_aclnnSoftshrinkBackward.json").read_text().encode("utf-16"))
    assert main(["golden", "--cases", str(path), "--out", str(tmp_path / "o"), "--filter", "0"]) == 0


# ---- golden --check --------------------------------------------------------------------------


@pytest.fixture
def checked(tmp_path, capsys):
    """Two cases' goldens (grad_input as .bin and .npy), the device's outputs, a third party's."""
    gold = tmp_path / "golden"
    for i, shape in enumerate([(6, 50), (3, 40)]):
        case = G.make_case("softmax_backward", shape, "float32", seed=i)
        G.write_case(case, gold / case.folder)
    act, bench = tmp_path / "actual", tmp_path / "bench"
    shutil.copytree(gold, act)
    shutil.copytree(gold, bench)
    assert main(["golden", "--check", str(gold), "--actual", str(act)]) == 0
    capsys.readouterr()
    return gold, act, bench, sorted(p.name for p in gold.iterdir())[0]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("where,file,should", [
    ("golden", "manifest.json", "golden case's manifest"),
    ("golden", "grad_input.bin", "float32 [3, 40], raw"),
    ("actual", "grad_input.bin", "float32 [3, 40], raw"),
    ("actual", "grad_input.npy", "a .npy file of float32 [3, 40]"),  # the device wrote only a .npy
    ("bench", "grad_input.bin", "float32 [3, 40], raw"),
])
def test_golden_check(checked, tmp_path, capsys, how, where, file, should):
    gold, act, bench, case = checked
    folder = tmp_path / where / case
    if file.endswith(".npy"):
        (folder / "grad_input.bin").unlink()
    spoil(folder / file, how)
    if file == "grad_input.bin" and how == "truncated":
        should = "truncated; it should be float32 [3, 40]"
    argv = ["golden", "--check", gold, "--actual", act, "--json", tmp_path / "v.json"]
    if where == "bench":
        argv += ["--standard", "dual-benchmark", "--benchmark", bench]
    one_line(capsys, argv, folder / file, should)
    v = json.loads((tmp_path / "v.json").read_text())
    assert v["errors"] == [case] and v["passed"] == 1  # the other case is still judged


def test_golden_check_manifest_that_is_valid_json_but_no_manifest(checked, tmp_path, capsys):
    gold, act, bench, case = checked
    m = gold / case / "manifest.json"
    m.write_text(json.dumps({"op": "softmax_backward", "outputs": [{"name": "grad_input"}]}))
    one_line(capsys, ["golden", "--check", gold, "--actual", act], m, "not a golden manifest")


def test_load_case_names_the_file(checked):
    gold, act, bench, case = checked
    spoil(gold / case / "output.npy", "garbage")
    (gold / case / "output.bin").unlink()
    with pytest.raises(ValueError, match=r"output\.npy: no NumPy header; it should be a \.npy file of float32"):
        G.load_case(gold / case)


# ---- dump-check ------------------------------------------------------------------------------


def _dump(tmp_path, ext):
    """A dump of one Functional.logsigmoid call in msprobe's layout, its tensors as .pt (PyTorch)
    or .npy (MindSpore); returns the root and {role: tensor file}."""
    rank = tmp_path / "dump" / "step0" / "rank0"
    tdir = rank / "dump_tensor_data"
    tdir.mkdir(parents=True)
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 8, 30), dtype=np.float32)
    files = {}

    def rec(role, a):
        name = f"Functional.logsigmoid.0.{role}{ext}"
        files[role] = tdir / name
        if ext == ".pt":
            torch = pytest.importorskip("torch")
            torch.save(torch.from_numpy(a), files[role])
        else:
            np.save(files[role], a)
        return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(a.shape), "requires_grad": False,
                "data_name": name}

    data = {"Functional.logsigmoid.0.forward": {"input_args": [rec("forward.input.0", x)], "input_kwargs": {},
                                                "output": [{"type": "torch.Tensor", "dtype": "torch.float32",
                                                            "shape": [8, 30], "requires_grad": True}]},
            "Functional.logsigmoid.0.backward": {"input": [rec("backward.input.0", g)],
                                                 "output": [rec("backward.output.0", g / (1 + np.exp(x)))]}}
    files["dump.json"] = rank / "dump.json"
    files["dump.json"].write_text(json.dumps({"task": "tensor", "level": "L1", "data": data}))
    return tmp_path / "dump", files


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("role", ["dump.json", "forward.input.0", "backward.input.0", "backward.output.0"])
@pytest.mark.parametrize("ext", [".pt", ".npy"])
def test_dump_check(tmp_path, capsys, how, role, ext):
    root, files = _dump(tmp_path, ext)
    assert main(["dump-check", str(root)]) == 0, capsys.readouterr()  # as written, the call passes
    capsys.readouterr()
    spoil(files[role], how)
    should = {"dump.json": "msprobe's dump.json", ".pt": "PyTorch tensor file", ".npy": ".npy tensor file"}
    one_line(capsys, ["dump-check", root], files[role], should["dump.json" if role == "dump.json" else ext])
