"""A build on a machine without Python's C headers stops with a line that says what to install
(python3-dev), and README's prerequisites name it."""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_missing_python_headers_are_named(tmp_path):
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.fail("cmake is needed to build the package; it is not on PATH")
    empty = tmp_path / "include"  # headers "installed" where there are none
    empty.mkdir()
    r = subprocess.run([cmake, "-S", str(ROOT), "-B", str(tmp_path / "build"), "-DASCENDGRAD_BUILD_PYTHON=ON",
                        f"-DPython_INCLUDE_DIR={empty}"], capture_output=True, text=True)
    assert r.returncode != 0
    text = " ".join((r.stdout + r.stderr).split())  # CMake wraps long messages
    assert "Python's C headers (Python.h) were not found: install python3-dev" in text, r.stderr


def test_readme_names_the_headers():
    install = ROOT.joinpath("README.md").read_text().split("## Install", 1)[1].split("```", 1)[0]
    assert "python3-dev" in install
