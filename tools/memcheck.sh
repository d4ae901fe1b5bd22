#!/usr/bin/env bash
# The memcheck stage of tools/test.sh: the ctest suite (in BUILD_DIR, already built) and the
# pytest suite (against the installed package) run again with ASCENDGRAD_MEMCHECK=1, every
# finding of every process appended to one log (ASCENDGRAD_MEMCHECK_LOG; the programs that pytest
# builds from examples/ inherit it). Fails when a suite fails or when any finding was logged.
# Tests that commit memory bugs on purpose (test_memcheck) run them in child processes with an
# environment of their own.
#   bash tools/memcheck.sh BUILD_DIR [pytest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: tools/memcheck.sh BUILD_DIR [pytest arguments...]}"
shift
log=$(mktemp "${TMPDIR:-/tmp}/ascendgrad-memcheck.XXXXXX")
trap 'rm -f "$log"' EXIT
export ASCENDGRAD_MEMCHECK=1 ASCENDGRAD_MEMCHECK_LOG="$log"

status=0
ctest --test-dir "$build" --output-on-failure -j "${ASCENDGRAD_JOBS:-$(nproc)}" || status=1
python -m pytest "$@" || status=1
if [ -s "$log" ]; then
  echo "tools/memcheck.sh: memcheck findings in correct programs:" >&2
  cat "$log" >&2
  exit 1
fi
exit "$status"
