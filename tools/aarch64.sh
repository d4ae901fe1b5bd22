#!/usr/bin/env bash
# The C++ library and the whole ctest suite cross-built for aarch64 (the Kunpeng hosts of Ascend
# servers) and run under qemu-aarch64 (docs/platforms.md: Kunpeng / aarch64 hosts). Installs what it needs from
# Debian first: the cross compiler (its OpenMP runtime comes with it), qemu-user, and GoogleTest's
# sources, which are built here for arm64 (build/aarch64/gtest-root). Needs cmake and ninja on PATH
# (pip's will do). Ends with ctest's summary line.
#
# --python: also the Python package for arm64, run under qemu with Debian's arm64 CPython 3.11
# (its .debs unpacked into build/aarch64/pyroot: the architecture arm64 is added to dpkg for
# apt-get download, nothing arm64 is installed) and PyPI's aarch64 wheels of numpy, ml_dtypes and
# pytest (build/aarch64/py-site): `python -m ascendgrad check` and the NumPy API tests.
set -euo pipefail
cd "$(dirname "$0")/.."

python=0
[ "${1:-}" = --python ] && python=1
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi

need=()
command -v aarch64-linux-gnu-g++ >/dev/null || need+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null || need+=(qemu-user)
[ -f /usr/src/googletest/CMakeLists.txt ] || need+=(googletest)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  if [ -n "$sudo" ] && ! sudo -n true 2>/dev/null; then
    echo "tools/aarch64.sh: not root; install these first: apt-get install ${need[*]}" >&2
    exit 1
  fi
  if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"; }; then
    echo "tools/aarch64.sh: apt-get failed; install these first: apt-get install ${need[*]}" >&2
    exit 1
  fi
fi
if [ $python = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "installing: the package lists of arm64 (dpkg --add-architecture arm64; apt-get update)"
  if ! { $sudo dpkg --add-architecture arm64 && $sudo apt-get update -qq; }; then
    echo "tools/aarch64.sh: could not add arm64; as root: dpkg --add-architecture arm64 && apt-get update" >&2
    exit 1
  fi
fi
for tool in cmake ninja; do
  command -v $tool >/dev/null || { echo "tools/aarch64.sh: $tool not found (pip install cmake ninja)" >&2; exit 1; }
done

jobs="${ASCENDGRAD_JOBS:-$(nproc)}"
out=build/aarch64
toolchain="$PWD/cmake/aarch64-linux-gnu.cmake"
gtest_root="$PWD/$out/gtest-root"
times=()
stage() {  # stage NAME COMMAND...: runs it and records its wall time
  local name=$1 t0=$SECONDS
  shift
  echo "== aarch64: $name"
  "$@"
  times+=("$name $((SECONDS - t0)) s")
}

build_gtest() {
  cmake -S /usr/src/googletest -B $out/gtest -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -Wno-dev -Wno-deprecated -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF -DCMAKE_INSTALL_PREFIX="$gtest_root" >/dev/null
  cmake --build $out/gtest -j "$jobs"
  cmake --install $out/gtest >/dev/null
}
[ -f "$gtest_root/lib/cmake/GTest/GTestConfig.cmake" ] || stage "GoogleTest for arm64" build_gtest

# CPython 3.11 for arm64 from Debian (the interpreter, its standard library and headers, and the
# libraries they load), unpacked, not installed; numpy, ml_dtypes and pytest from PyPI's wheels
pyroot="$PWD/$out/pyroot"
pysite="$PWD/$out/py-site"
arm_python="$PWD/$out/python3"
python_root() {
  rm -rf $out/debs "$pyroot" "$pysite"
  mkdir -p $out/debs "$pyroot"
  (cd $out/debs && apt-get download -qq $(printf '%s:arm64 ' python3.11-minimal libpython3.11-minimal \
    libpython3.11-stdlib libpython3.11-dev libc6 libgcc-s1 libstdc++6 libgomp1 libexpat1 zlib1g libffi8 \
    libssl3 libbz2-1.0 liblzma5 libcrypt1 libdb5.3 libncursesw6 libtinfo6 libreadline8 libsqlite3-0 \
    libuuid1 libnsl2 libtirpc3 libgssapi-krb5-2 libk5crypto3 libkeyutils1 libkrb5-3 libkrb5support0 \
    libcom-err2))
  for deb in $out/debs/*.deb; do dpkg-deb -x "$deb" "$pyroot"; done
  # Debian's pyconfig.h includes <aarch64-linux-gnu/python3.11/pyconfig.h>, found through
  # /usr/include on an arm64 system: here through the one include folder CMake passes
  ln -s ../aarch64-linux-gnu "$pyroot/usr/include/python3.11/aarch64-linux-gnu"
  python -m pip install -q --target "$pysite" --platform manylinux2014_aarch64 --python-version 3.11 \
    --implementation cp --only-binary=:all: numpy ml_dtypes pytest
}
if [ $python = 1 ]; then
  [ -x "$pyroot/usr/bin/python3.11" ] && [ -d "$pysite/numpy" ] || stage "arm64 CPython, numpy" python_root
  qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static)
  # the interpreter as CMake and the tests call it (PYTHONPATH: the package, the wheels, and a
  # sitecustomize that makes sys.executable this script: this host runs no arm64 binary by itself,
  # so tests that start `sys.executable` must go through qemu too)
  mkdir -p $out/py-shim
  printf 'import os, sys\nsys.executable = os.environ.get("AG_ARM64_PYTHON", sys.executable)\n' \
    >$out/py-shim/sitecustomize.py
  printf '#!/bin/sh\nAG_ARM64_PYTHON="%s" PYTHONPATH="%s:%s:%s${PYTHONPATH:+:$PYTHONPATH}" exec %s -L %s %s "$@"\n' \
    "$arm_python" "$PWD/$out/py-shim" "$PWD/$out/py-pkg" "$pysite" "$qemu" "$pyroot" "$pyroot/usr/bin/python3.11" \
    >"$arm_python"
  chmod +x "$arm_python"
  python -c "import pybind11" 2>/dev/null || python -m pip install -q pybind11
fi

build_suite() {
  local extra=()
  if [ $python = 1 ]; then
    # the headers named, not searched for: CMake 4.4.5's FindPython re-roots the folder the
    # interpreter reports (already under $pyroot) below the find roots and misses it
    extra=(-DASCENDGRAD_BUILD_PYTHON=ON -DPython_EXECUTABLE="$arm_python"
           -DPython_INCLUDE_DIR="$pyroot/usr/include/python3.11"
           -Dpybind11_DIR="$(python -m pybind11 --cmakedir)")
  fi
  cmake -S . -B $out/ctest -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DAG_AARCH64_ROOTS="$gtest_root;$pyroot" \
    -DASCENDGRAD_BUILD_TESTS=ON -DASCENDGRAD_BUILD_PYTHON=$([ $python = 1 ] && echo ON || echo OFF) \
    "${extra[@]}" >/dev/null
  cmake --build $out/ctest -j "$jobs"
}
stage "cross-build (library and tests)" build_suite


# A limit of QEMU's user mode, checked by a probe of a few lines of C (where the probe passes
# under this qemu, the test runs): QEMU 7.2 (Debian 12) aborts a forked child of a multithreaded
# process when the child starts a thread (assertion "cpu == current_cpu"), which
# Fork.ParentStreamsAreNotLiveInTheChild does (a stream is a thread).
# Without a binfmt_misc registration for arm64 (a setting of the host's kernel) an emulated
# program cannot start another arm64 program itself: the Memcheck tests, which run each scenario
# in a child, start it through the emulator named by ASCENDGRAD_TEST_EMULATOR.
export ASCENDGRAD_TEST_EMULATOR="$(command -v qemu-aarch64 || command -v qemu-aarch64-static) -L /usr/aarch64-linux-gnu"
qemu_probe() {  # NAME: compiles $out/NAME.c (from stdin) for arm64 and runs it under qemu
  cat >$out/$1.c
  aarch64-linux-gnu-gcc -O1 -pthread $out/$1.c -o $out/$1 &&
    $(command -v qemu-aarch64 || command -v qemu-aarch64-static) -L /usr/aarch64-linux-gnu \
      $out/$1 >/dev/null 2>&1
}
left_out=()
qemu_probe fork_probe <<'EOF' || left_out+=('Fork[.]ParentStreamsAreNotLiveInTheChild')
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
static void *nap(void *a) { usleep(200000); return a; }
int main(void) {
    pthread_t t, u;
    pthread_create(&t, 0, nap, 0);
    pid_t p = fork();
    if (p == 0) _exit(pthread_create(&u, 0, nap, 0) || pthread_join(u, 0));
    int st = 0;
    waitpid(p, &st, 0);
    pthread_join(t, 0);
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
EOF
exclude=()
if [ ${#left_out[@]} -gt 0 ]; then
  echo "left out under this qemu (see the probes in $out): ${left_out[*]}"
  exclude=(-E "^($(IFS='|'; echo "${left_out[*]}"))\$")
fi
log=$out/ctest.log
ctest_qemu() {
  ctest --test-dir $out/ctest --output-on-failure -j "$jobs" "${exclude[@]}" | tee $log
  return "${PIPESTATUS[0]}"
}
stage "ctest under qemu-aarch64" ctest_qemu

python_tests() {
  # the package as the wheel lays it out: the Python sources, _core and lib/libascendgrad.so
  rm -rf $out/py-pkg
  mkdir -p $out/py-pkg
  cp -r python/ascendgrad $out/py-pkg/
  cmake --install $out/ctest --prefix $out/py-pkg/ascendgrad >/dev/null
  "$arm_python" -c "import platform, ascendgrad._core as c; print('ascendgrad on', platform.machine(), 'kernels:', c.kernel_isa())"
  "$arm_python" -m ascendgrad check
  "$arm_python" -m pytest -q -p no:cacheprovider tests_py/test_softmax_backward.py \
    tests_py/test_logsigmoid_backward.py tests_py/test_softshrink_backward.py \
    tests_py/test_cross_entropy_loss_grad.py tests_py/test_kl_div_backward.py tests_py/test_isa.py
}
if [ $python = 1 ]; then stage "Python under qemu-aarch64" python_tests; fi

printf 'aarch64 stage: %s\n' "${times[@]}"
grep -E 'tests passed|tests failed out of' $log | tail -1
