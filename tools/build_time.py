"""Build time of a CMake/Ninja build directory, per stage and per translation unit.

    python tools/build_time.py BUILD_DIR [--top N]
        reads BUILD_DIR/.ninja_log (wall time of each compilation and link) and, when present,
        BUILD_DIR/.cpu_log (CPU time of each, written by the launcher mode below); prints the
        build's wall span, the sum per stage (a CMake target: kernels per ISA, API, Python
        bindings, tests) and the slowest units.

    python tools/build_time.py --launch COMMAND...
        a compiler launcher: runs COMMAND and appends its CPU time (user + system, children
        included) and output file to .cpu_log in the current (build) directory. Use it as
        CMAKE_CXX_COMPILER_LAUNCHER="python3;/path/tools/build_time.py;--launch" (add ";ccache"
        after it to keep ccache). On a loaded machine the CPU time is what compares between runs.

Only the last build of each output counts (.ninja_log keeps older entries of a rebuilt file).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

CPU_LOG = ".cpu_log"


def launch(cmd: list[str]) -> int:
    out = cmd[cmd.index("-o") + 1] if "-o" in cmd[:-1] else (cmd[-1] if cmd else "?")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc = subprocess.call(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, sys_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    with open(CPU_LOG, "a") as f:  # one short append per unit: lines of parallel jobs stay whole
        f.write(f"{user:.3f} {sys_:.3f} {out}\n")
    return rc


def read_ninja_log(path: Path) -> dict[str, tuple[int, int]]:
    """output -> (start_ms, end_ms) of its last build."""
    last: dict[str, tuple[int, int]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) >= 4:
            last[parts[3]] = (int(parts[0]), int(parts[1]))
    return last


def read_cpu_log(path: Path) -> dict[str, float]:
    cpu: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3:
                cpu[parts[2]] = float(parts[0]) + float(parts[1])
    return cpu


def stage(output: str) -> str:
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", output)
    if m:
        return m.group(1)
    return "link" if re.search(r"\.(so|a|dylib)$|^[^./]+$", Path(output).name) else "other"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def report(build: Path, top: int) -> str:
    log = build / ".ninja_log"
    if not log.exists():
        raise SystemExit(f"build_time: {log} not found (not a Ninja build directory?)")
    units = read_ninja_log(log)
    if not units:
        raise SystemExit(f"build_time: {log} has no entries")
    cpu = read_cpu_log(build / CPU_LOG)
    span = (max(e for _, e in units.values()) - min(s for s, _ in units.values())) / 1000
    wall = {o: (e - s) / 1000 for o, (s, e) in units.items()}
    by_stage: dict[str, list[str]] = defaultdict(list)
    for o in units:
        by_stage[stage(o)].append(o)
    have_cpu = any(o in cpu for o in units)
    lines = [f"build time of {build} ({len(units)} steps, {os.cpu_count()} CPUs: {cpu_model()})",
             f"  wall {span:.1f} s, sum of steps {sum(wall.values()):.1f} s"
             + (f", CPU {sum(cpu.get(o, 0) for o in units):.1f} s" if have_cpu else ", CPU not recorded")]
    for st, outs in sorted(by_stage.items(), key=lambda kv: -sum(wall[o] for o in kv[1])):
        c = f", CPU {sum(cpu.get(o, 0) for o in outs):7.1f} s" if have_cpu else ""
        lines.append(f"  {st:32s} {len(outs):3d} steps, wall {sum(wall[o] for o in outs):7.1f} s{c}")
    lines.append(f"  slowest {min(top, len(units))}:")
    for o in sorted(units, key=lambda o: -wall[o])[:top]:
        c = f", CPU {cpu[o]:6.1f} s" if o in cpu else ""
        lines.append(f"    {wall[o]:6.1f} s{c}  {o}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--launch"]:
        return launch(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir", type=Path)
    ap.add_argument("--top", type=int, default=5, help="slowest units listed (default 5)")
    a = ap.parse_args(argv)
    print(report(a.build_dir, a.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
