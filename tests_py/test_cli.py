"""python -m ascendgrad: --version, --help, the path flags."""

import subprocess
import sys

import ascendgrad


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ascendgrad", *args], capture_output=True, text=True)


def test_version():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"ascendgrad {ascendgrad.__version__}"


def test_help_lists_commands_and_flags():
    r = cli("--help")
    assert r.returncode == 0
    for word in ("check", "--include-dir", "--libdir", "--cmake-dir", "--version"):
        assert word in r.stdout


def test_unknown_command_fails():
    assert cli("frobnicate").returncode != 0


def test_check_passes_and_writes_json(tmp_path):
    out = tmp_path / "r.json"
    r = cli("check", "--op", "softshrink_backward", "kl_div_backward", "--dtype", "float32", "bfloat16",
            "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kl_div_backward" in r.stdout and "worst rel. error" in r.stdout
    import json

    records = json.loads(out.read_text())
    assert {rec["op"] for rec in records} == {"softshrink_backward", "kl_div_backward"}
    assert {rec["dtype"] for rec in records} == {"float32", "bfloat16"}
    assert all(rec["passed"] for rec in records)
    assert "kl_div_backward[bfloat16]:" in r.stderr  # progress lines when not on a terminal


def test_check_exits_1_on_a_failure(monkeypatch, capsys):
    import argparse

    from ascendgrad import _check, gradcheck

    real = gradcheck.gradcheck

    def wrong_sometimes(op, **kw):
        res = real(op, **kw)
        if kw.get("dtype") == "float16":
            res.passed = False
        return res

    monkeypatch.setattr(_check, "gradcheck", wrong_sometimes)
    args = argparse.Namespace(op=["log_sigmoid_backward"], dtype=["float32", "float16"], fast=False, seed=0,
                              json=None)
    assert _check.run(args) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "log_sigmoid_backward[float16]" in out


def test_compare_dtype_help_matches_raw_files(tmp_path):
    """--help does not promise a default dtype for raw dumps: they need --dtype, and the error says why."""
    import numpy as np

    from ascendgrad.__main__ import _parser

    sub = next(a for a in _parser()._actions if getattr(a, "choices", None) and "compare" in a.choices)
    help_text = next(a.help for a in sub.choices["compare"]._actions if a.dest == "dtype")
    assert "required for them" in help_text and "raw" in help_text
    assert "default bfloat16" not in help_text.split(";")[0]
    np.ones(4, np.float32).tofile(tmp_path / "a.bin")
    np.save(tmp_path / "e.npy", np.ones(4, np.float32))
    r = subprocess.run([sys.executable, "-m", "ascendgrad", "compare", "a.bin", "e.npy"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "a.bin: a raw file holds bytes only, not their dtype: give one (--dtype" in r.stderr
    r = subprocess.run([sys.executable, "-m", "ascendgrad", "compare", "a.bin", "e.npy", "--dtype", "float32"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_closed_pipe_is_not_a_traceback():
    # `python -m ascendgrad check | head -1`: the reader leaves before the table is written
    r = subprocess.run(f"{sys.executable} -m ascendgrad check | head -1", shell=True, capture_output=True,
                       text=True)
    assert r.stdout.startswith("operator")
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
