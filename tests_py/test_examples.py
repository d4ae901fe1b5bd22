"""C/C++ consumers of the installed package: the CANN-style programs in examples/ build with a
plain g++ line and with CMake's find_package(ascendgrad CONFIG), run, and print right values."""

import pathlib
import shutil
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
PROGRAMS = sorted(EXAMPLES.glob("*.cpp"))


def where(flag):
    return subprocess.run([sys.executable, "-m", "ascendgrad", flag], check=True, capture_output=True,
                          text=True).stdout.strip()


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_paths_exist():
    inc, lib, cmake_dir = (pathlib.Path(where(f)) for f in ("--include-dir", "--libdir", "--cmake-dir"))
    assert (inc / "acl" / "acl.h").is_file() and (inc / "aclnn" / "acl_meta.h").is_file()
    assert (inc / "aclnnop" / "aclnn_softmax_backward.h").is_file()
    assert (lib / "libascendgrad.so").is_file()
    assert (cmake_dir / "ascendgradConfig.cmake").is_file()


@pytest.mark.parametrize("src", PROGRAMS, ids=lambda p: p.stem)
def test_gxx_one_liner(src, tmp_path):
    inc, lib = where("--include-dir"), where("--libdir")
    exe = tmp_path / src.stem
    run(["g++", "-std=c++17", str(src), f"-I{inc}", f"-L{lib}", "-lascendgrad", f"-Wl,-rpath,{lib}", "-o", str(exe)])
    out = run([str(exe)])
    assert "result[0] is:" in out


def test_headers_compile_as_c11(tmp_path):
    inc = pathlib.Path(where("--include-dir"))
    for h in sorted(inc.glob("*/*.h")):
        src = tmp_path / "c.c"
        src.write_text(f'#include "{h.relative_to(inc)}"\nint main(void) {{ return 0; }}\n')
        run(["gcc", "-std=c11", "-Wall", "-Werror", "-pedantic", f"-I{inc}", "-c", str(src), "-o",
             str(tmp_path / "c.o")])


def test_cmake_find_package(tmp_path):
    cmake = shutil.which("cmake")
    assert cmake, "cmake is needed (pip install cmake)"
    build = tmp_path / "build"
    run([cmake, "-S", str(EXAMPLES), "-B", str(build), f"-Dascendgrad_DIR={where('--cmake-dir')}"])
    run([cmake, "--build", str(build)])
    for src in PROGRAMS:
        assert "result[0] is:" in run([str(build / src.stem)])
