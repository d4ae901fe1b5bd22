"""The cibuildwheel configuration (pyproject.toml, [tool.cibuildwheel]): cibuildwheel's own option
reader accepts it and selects CPython wheels for manylinux x86_64 and aarch64, and the test command
it runs on each wheel passes here, run as cibuildwheel runs it (in an empty folder holding only the
test sources, against the installed package). The wheels themselves need containers: tools/wheel.sh
builds, repairs and tests this machine's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("cibuildwheel and tomllib need Python 3.11 or later", allow_module_level=True)

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["cibuildwheel"]


def clean_env() -> dict[str, str]:
    """This environment without CIBW_* overrides, its Python first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def test_cibuildwheel_reads_it_and_selects_manylinux_x86_64_and_aarch64():
    r = subprocess.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", "linux",
                        "--archs", "x86_64,aarch64", str(ROOT)], capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    got = set(r.stdout.split())
    assert got == {f"cp3{minor}-manylinux_{arch}" for minor in range(9, 14) for arch in ("x86_64", "aarch64")}
    # the defaults: the configuration names both architectures itself, not the command line
    r = subprocess.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", "linux",
                        str(ROOT)], capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) == got


def test_an_unknown_option_is_refused(tmp_path):
    # (the reader above would catch a misspelt option: shown on a copy with one)
    text = (ROOT / "pyproject.toml").read_text().replace("[tool.cibuildwheel]\n", "[tool.cibuildwheel]\ntest-comand = 'x'\n")
    (tmp_path / "pyproject.toml").write_text(text)
    r = subprocess.run([sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", "linux",
                        str(tmp_path)], capture_output=True, text=True, env=clean_env())
    assert r.returncode != 0 and "test-comand" in r.stderr


def test_the_wheel_test_command_passes_here(tmp_path):
    c = config()
    commands = c["test-command"]
    commands = [commands] if isinstance(commands, str) else commands
    assert "python -m ascendgrad check" in commands  # the main job, on every wheel
    assert not any("{project}" in cmd or "{package}" in cmd for cmd in commands)  # only test-sources are there
    for src in c["test-sources"]:
        shutil.copytree(ROOT / src, tmp_path / src)
    for cmd in commands:
        r = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True, env=clean_env())
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
