#!/usr/bin/env bash
# Cost of memcheck on the two-phase C call: bench/overhead.cpp (phase 1 + phase 2 of each
# operator on a 1 x 8 tensor) built once against the installed package, then run alternately
# with memcheck off and on (ASCENDGRAD_MEMCHECK=1), and with the library of another install
# when BASELINE_LIBDIR is given (e.g. one built from a commit without memcheck: the off path
# against no hooks at all). Prints the best (least disturbed) of ROUNDS runs of each, in ns per
# call, each run's own figure being the median of 7 batches.
#   bash bench/memcheck_overhead.sh [BASELINE_LIBDIR]      (ROUNDS=5, ITERS=20000 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python}"
inc=$("$py" -m ascendgrad --include-dir)
lib=$("$py" -m ascendgrad --libdir)
baseline="${1:-}"
rounds="${ROUNDS:-5}"
iters="${ITERS:-20000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CXX:-g++}" -O2 -std=c++17 bench/overhead.cpp -I"$inc" -L"$lib" -Wl,-rpath,"$lib" -lascendgrad -o "$tmp/overhead"

variants=(off on)
[ -n "$baseline" ] && variants+=(baseline)
for ((r = 0; r < rounds; ++r)); do
  for v in "${variants[@]}"; do
    case $v in
      off) env -u ASCENDGRAD_MEMCHECK "$tmp/overhead" "$iters" ;;
      on) ASCENDGRAD_MEMCHECK=1 ASCENDGRAD_MEMCHECK_LOG="$tmp/findings" "$tmp/overhead" "$iters" ;;
      baseline) env -u ASCENDGRAD_MEMCHECK LD_LIBRARY_PATH="$baseline" "$tmp/overhead" "$iters" ;;
    esac >> "$tmp/$v.jsonl"
  done
done
if [ -s "$tmp/findings" ]; then
  echo "memcheck reported findings in bench/overhead.cpp:" >&2
  cat "$tmp/findings" >&2
  exit 1
fi

"$py" - "$tmp" "${variants[@]}" <<'EOF'
import json, pathlib, platform, sys
tmp, variants = pathlib.Path(sys.argv[1]), sys.argv[2:]
runs = {v: [json.loads(line) for line in (tmp / f"{v}.jsonl").read_text().splitlines()] for v in variants}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"two-phase C call, ns per call (best of {len(runs['off'])} runs), {cpu}")
print(f"{'operator':<26}" + "".join(f"{v:>12}" for v in variants) + f"{'on/off':>9}")
for op in runs["off"][0]:
    med = {v: min(r[op] for r in runs[v]) for v in variants}
    print(f"{op:<26}" + "".join(f"{med[v]:>12.1f}" for v in variants) + f"{med['on'] / med['off']:>9.2f}")
EOF
