#!/usr/bin/env bash
# The README's test command: installs what the tests need, then runs every test stage.
#
#   bash tools/test.sh                  every stage (what CI runs)
#   bash tools/test.sh ctest pytest     only the named stages, in the order below
#
# Stages: ctest (GoogleTest, Release), pytest (the Python suite; it also builds the examples/
# programs against the installed package), memcheck (tools/memcheck.sh: ctest and pytest again, from
# the same build, with ASCENDGRAD_MEMCHECK=1; any finding fails), sanitizers (tools/reliability.sh:
# ctest under ASan+UBSan and TSan, 60 s of fuzzing), aarch64 (tools/aarch64.sh --python: the C++
# suite cross-built for aarch64 and run under qemu-aarch64, then the Python package there).
# ctest and pytest share one build: `pip install .` builds the library, the Python module and
# the C++ tests in build/<wheel tag>/ (the README's first command leaves it there to reuse).
# Every system package the chosen stages need is checked for first and installed in one apt-get
# step; without root or network the script names them and stops before building anything.
# Run it inside a virtual environment: it installs ascendgrad[test] (torch 2.13.0 CPU, pytest ...).
set -euo pipefail
cd "$(dirname "$0")/.."

all_stages=(ctest pytest memcheck sanitizers aarch64)
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=("${all_stages[@]}")
for s in "${stages[@]}"; do
  [[ " ${all_stages[*]} " == *" $s "* ]] || { echo "tools/test.sh: unknown stage '$s' (stages: ${all_stages[*]})" >&2; exit 2; }
done
want() { [[ " ${stages[*]} " == *" $1 "* ]]; }

t_start=$SECONDS
timings=()
banner() { printf '\n== [%s] %s (at %dm%02ds)\n' "$(date +%H:%M:%S)" "$1" $(((SECONDS - t_start) / 60)) $(((SECONDS - t_start) % 60)); }
finish_stage() {  # name start_seconds
  local d=$((SECONDS - $2))
  timings+=("$(printf '%-12s %4dm%02ds' "$1" $((d / 60)) $((d % 60)))")
}

# ---- preflight: every tool and header, checked before any long step ----
compiles() {  # compiler flags... < source : does the snippet compile (and link, without -c)?
  local cxx=$1; shift
  command -v "$cxx" >/dev/null 2>&1 && "$cxx" -x c++ - -o /dev/null "$@" >/dev/null 2>&1
}
missing=()
need() { missing+=("$@"); }

python -c 'import sys; assert sys.prefix != sys.base_prefix' 2>/dev/null ||
  { echo "tools/test.sh: run it inside a virtual environment (python3 -m venv .venv && . .venv/bin/activate)" >&2; exit 2; }
py_inc=$(python -c 'import sysconfig; print(sysconfig.get_path("include"))')
if want ctest || want pytest || want memcheck; then
  [ -f "$py_inc/Python.h" ] || need python3-dev
  printf 'int main() { return 0; }\n' | compiles c++ || need g++
  printf '#include <gtest/gtest.h>\nint main() { return 0; }\n' | compiles c++ -fsyntax-only || need libgtest-dev
fi
if want sanitizers; then
  printf '#include <omp.h>\nint main() { return omp_get_max_threads(); }\n' |
    compiles clang++ -fopenmp=libgomp || need clang libomp-dev
  printf 'extern "C" int LLVMFuzzerTestOneInput(const char *, long) { return 0; }\n' |
    compiles clang++ -fsanitize=fuzzer,address,undefined || need clang libclang-rt-dev
  printf 'int main() { return 0; }\n' | compiles clang++ -fsanitize=thread || need clang libclang-rt-dev
  printf '#include <gtest/gtest.h>\nint main() { return 0; }\n' | compiles clang++ -fsyntax-only || need libgtest-dev
fi
if want aarch64; then
  command -v aarch64-linux-gnu-g++ >/dev/null || need g++-aarch64-linux-gnu
  command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null || need qemu-user
  [ -f /usr/src/googletest/CMakeLists.txt ] || need googletest
fi
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  if [ -n "$sudo" ] && ! sudo -n true 2>/dev/null; then
    echo "tools/test.sh: missing system packages; install them, then run again:" >&2
    echo "  sudo apt-get install -y $pkgs" >&2
    exit 1
  fi
  banner "installing: $pkgs"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $pkgs >/dev/null; } || {
    echo "tools/test.sh: could not install: $pkgs (no network or no package source?); install them, then run again:" >&2
    echo "  sudo apt-get install -y $pkgs" >&2
    exit 1
  }
fi

# ---- the shared build: pip install with the C++ tests in the same build dir ----
jobs="${ASCENDGRAD_JOBS:-$(nproc)}"
export CMAKE_BUILD_PARALLEL_LEVEL="$jobs"
# Every compilation through tools/build_time.py's launcher, which records its CPU time (printed per
# stage after each build: a build-time regression shows on the day it lands), then ccache where
# present (repeated local runs; never required).
launcher="$(command -v python);$PWD/tools/build_time.py;--launch"
if command -v ccache >/dev/null 2>&1; then launcher="$launcher;ccache"; fi
export CMAKE_CXX_COMPILER_LAUNCHER="$launcher" CMAKE_C_COMPILER_LAUNCHER="$launcher"
if want ctest || want pytest || want memcheck; then
  banner "install: pip packages, then ascendgrad[test] with the C++ tests (one Release build)"
  t=$SECONDS
  python -m pip install -q --upgrade pip
  python -m pip install -q cmake ninja
  python -m pip install ".[test]" -Ccmake.define.ASCENDGRAD_BUILD_TESTS=ON
  build=$(ls -td build/*-*-*/CMakeCache.txt | head -1 | xargs dirname)  # build/<wheel tag>, the newest
  python tools/build_time.py "$build" --top 5 || true
  finish_stage install $t
fi

if want ctest; then
  banner "ctest: the C++ suite in $build"
  t=$SECONDS
  ctest --test-dir "$build" --output-on-failure -j "$jobs"
  finish_stage ctest $t
fi

if want pytest; then
  banner "pytest: the Python suite"
  t=$SECONDS
  python -m pytest
  finish_stage pytest $t
fi

if want memcheck; then
  banner "memcheck: ctest and pytest with ASCENDGRAD_MEMCHECK=1, no finding allowed (tools/memcheck.sh)"
  t=$SECONDS
  bash tools/memcheck.sh "$build"
  finish_stage memcheck $t
fi

if want sanitizers; then
  banner "sanitizers: ASan+UBSan, TSan, fuzzing (tools/reliability.sh)"
  t=$SECONDS
  bash tools/reliability.sh
  for d in build/rel-asan build/rel-tsan; do python tools/build_time.py "$d" --top 3 || true; done
  finish_stage sanitizers $t
fi

if want aarch64; then
  banner "aarch64: the C++ suite and the Python package cross-built, under qemu-aarch64 (tools/aarch64.sh)"
  t=$SECONDS
  bash tools/aarch64.sh --python
  finish_stage aarch64 $t
fi

banner "all stages passed: ${stages[*]}"
printf '  %s\n' "${timings[@]}"
