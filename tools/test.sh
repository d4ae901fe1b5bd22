#!/usr/bin/env bash
# Installs what the tests need and runs every test: the C++ suite (ctest) and the Python suite
# (pytest, which also builds the examples/ C++ programs against the installed package), and the
# C++ suite again under sanitizers, with a short fuzzing run (tools/reliability.sh).
# Run it inside a virtual environment; it installs ascendgrad[test] (torch 2.13.0 CPU, pytest).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! printf '#include <gtest/gtest.h>\n' | c++ -x c++ -fsyntax-only - 2>/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq libgtest-dev
fi

python -m pip install -q --upgrade pip
python -m pip install -q cmake ninja
python -m pip install -q ".[test]"

jobs="${ASCENDGRAD_JOBS:-$(nproc)}"
cmake -S . -B build/ctest -G Ninja -DASCENDGRAD_BUILD_TESTS=ON
cmake --build build/ctest -j "$jobs"
ctest --test-dir build/ctest --output-on-failure -j "$jobs"

# ASan + UBSan and TSan builds of the C++ tests, and a 60 s fuzzing run (clang)
bash tools/reliability.sh

python -m pytest -q
