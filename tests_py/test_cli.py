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
