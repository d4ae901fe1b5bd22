#!/usr/bin/env bash
# The sanitizer and fuzzing part of tools/test.sh (docs/reliability.md), with clang:
#   1. the whole ctest suite under ASan + UBSan (LeakSanitizer on), in build/rel-asan, the avx512
#      kernels emulated on AVX2 (below) and the best ISA; the same build (coverage-instrumented
#      objects) gives the libFuzzer target;
#   2. the stream, executor, concurrency and memcheck tests under TSan, in build/rel-tsan (only
#      the three test programs they live in are built, with the portable kernels alone: the ISA
#      builds are ASan's concern); OMP_NUM_THREADS=1, see docs/reliability.md;
#   3. a bounded fuzzing run (FUZZ_SECONDS, 60 by default) with a fixed seed.
# Debug builds (-O0): compiling the kernels' dtype combinations with sanitizers at -O1 or more
# costs minutes on 2 cores, more than the slower tests do.
set -euo pipefail
cd "$(dirname "$0")/.."

# the packages (clang, libomp-dev, libclang-rt-dev, libgtest-dev) are checked for and installed by
# tools/test.sh, which runs this script as its "sanitizers" stage: bash tools/test.sh sanitizers

jobs="${ASCENDGRAD_JOBS:-$(nproc)}"
common=(-G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
        -DASCENDGRAD_BUILD_TESTS=ON)

# On x86-64 the avx512 kernels of this build are the emulated ones (docs/reliability.md: AVX-512 without
# AVX-512): the suite runs them on any CPU with AVX2, their masked loads and stores reading and
# writing only their masked bytes, where ASan sees them (it cannot see into the hardware's).
emulate=OFF
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo &&
   grep -qw f16c /proc/cpuinfo; then
  emulate=ON
fi
echo "== ASan + UBSan: every C++ test (AVX-512 emulated: $emulate)"
cmake -S . -B build/rel-asan "${common[@]}" -DASCENDGRAD_SANITIZE=address,undefined -DASCENDGRAD_BUILD_FUZZ=ON \
  -DASCENDGRAD_EMULATE_AVX512=$emulate
cmake --build build/rel-asan -j "$jobs"
UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build/rel-asan --output-on-failure -j "$jobs"

echo "== TSan: streams, executors, concurrency, memcheck"
cmake -S . -B build/rel-tsan "${common[@]}" -DASCENDGRAD_SANITIZE=thread -DASCENDGRAD_BASELINE_ONLY=ON
cmake --build build/rel-tsan -j "$jobs" --target test_api test_concurrency test_memcheck
OMP_NUM_THREADS=1 ctest --test-dir build/rel-tsan --output-on-failure -j "$jobs" \
  -R '^(Stream|Executor|SetTensorAddr|ErrMsg|Concurrency|Memcheck)\.'

echo "== libFuzzer: ${FUZZ_SECONDS:-60} s over the C API"
corpus=build/rel-asan/fuzz-corpus
mkdir -p "$corpus"
build/rel-asan/tests_cpp/fuzz/fuzz_aclnn -seed=1 -max_total_time="${FUZZ_SECONDS:-60}" -print_final_stats=1 \
  -artifact_prefix=build/rel-asan/ "$corpus" 2>&1 | grep -v -E '^#[0-9]+ +(NEW|REDUCE|pulse)'
