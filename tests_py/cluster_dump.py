"""A multi-rank msprobe dump for tests and benchmarks of ``python -m ascendgrad dump-check`` at
cluster scale: one real dump made on CPU by msprobe_dump.py, laid out as msprobe lays out a
distributed run (``step<s>/rank<r>/dump.json`` + ``dump_tensor_data/``), optionally with one
rank's recorded gradients corrupted: there, exactly the calls that pass on the others fail.

``python tests_py/cluster_dump.py OUT --ranks 64 --size 256 [--steps 1] [--corrupt-rank R]``
prints the dump root and the bytes of its tensor files (dump-check reads about 37 % of them: the
records of the calls it judges). Size 256 gives 112 MB of files per rank, 41 MB read.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# the recorded gradient is the backward entry's output[0], except for the backward operator
# called on its own: its forward entry's output[0]
SELF_APIS = {"Torch._softmax_backward_data"}


def _place(src: str, dst: str, link: bool) -> None:
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:  # another file system, or links not allowed: copy instead
            pass
    shutil.copyfile(src, dst)


def corrupted(t: torch.Tensor) -> torch.Tensor:
    """Same dtype and shape, every 10th element moved far off: fails any precision standard."""
    x = t.detach().to(torch.float64).clone()
    flat = x.view(-1)
    # at least 1: an all-zero or tiny gradient would otherwise stay within the absolute tolerance
    bump = 0.25 * max(float(flat.abs().max()) if flat.numel() else 0.0, 1.0)
    flat[::10] = flat[::10] * 1.5 + bump
    return x.to(t.dtype)


def _gradient_records(rank_dir: str, data: Dict[str, Any], pattern: Optional[str]) -> List[Dict[str, Any]]:
    """The records of the recorded input gradients of the calls matching ``pattern`` (dump-check's
    --api rules) that dump-check judges on ``rank_dir``. The not comparable ones are left alone:
    a CPU internal-node record, once corrupted, no longer matches that node and would fail."""
    from ascendgrad.dump_check import NC, check_dump

    recs = []
    for c in check_dump(rank_dir, api=pattern).calls:
        if c.verdict == NC:
            continue
        api = c.api.rpartition(".")[0]
        entry = data.get(f"{c.api}.forward" if api in SELF_APIS else f"{c.api}.backward") or {}
        out = entry.get("output")
        out = out if isinstance(out, list) else [out]
        if out and isinstance(out[0], dict) and out[0].get("data_name"):
            recs.append(out[0])
    return recs


def replicate(source_rank_dir: str, out_root: str, ranks: int, steps: int = 1, corrupt_rank: Optional[int] = None,
              corrupt_api: Optional[str] = None, link: bool = True) -> List[str]:
    """Lay out ``out_root/step<s>/rank<r>/`` as copies of one rank folder (tensor files hard-linked
    when ``link``; never into an existing rank folder). On ``corrupt_rank`` (every step) the recorded
    gradients of the calls matching ``corrupt_api`` (None: all) that dump-check judges on the source
    are replaced by corrupted new files, so that they fail there. Returns the rank folders."""
    if corrupt_rank is not None and not 0 <= corrupt_rank < ranks:
        raise ValueError(f"corrupt_rank {corrupt_rank} is not one of the {ranks} ranks")
    src_data = os.path.join(source_rank_dir, "dump_tensor_data")
    with open(os.path.join(source_rank_dir, "dump.json"), encoding="utf-8") as f:
        meta = json.load(f)
    bad = [r["data_name"] for r in _gradient_records(source_rank_dir, meta["data"], corrupt_api)] \
        if corrupt_rank is not None else []
    folders = []
    for s in range(steps):
        for r in range(ranks):
            dst = os.path.join(out_root, f"step{s}", f"rank{r}")
            # never into an existing folder: copying over a hard link would change the source
            os.makedirs(os.path.join(dst, "dump_tensor_data"), exist_ok=False)
            shutil.copyfile(os.path.join(source_rank_dir, "dump.json"), os.path.join(dst, "dump.json"))
            for dirpath, _, files in os.walk(src_data):
                rel = os.path.relpath(dirpath, src_data)
                os.makedirs(os.path.join(dst, "dump_tensor_data", rel), exist_ok=True)
                for name in files:
                    _place(os.path.join(dirpath, name), os.path.join(dst, "dump_tensor_data", rel, name), link)
            if r == corrupt_rank:
                for name in bad:
                    path = os.path.join(dst, "dump_tensor_data", name)
                    t = torch.load(path, map_location="cpu", weights_only=True)
                    if not t.is_floating_point():
                        continue
                    os.unlink(path)  # a new file: the hard-linked original stays as it is
                    torch.save(corrupted(t), path)
            folders.append(dst)
    return folders


def make(out: str, ranks: int, size: int = 8, steps: int = 1, corrupt_rank: Optional[int] = None) -> str:
    """Make one real msprobe dump with msprobe_dump.py and replicate it into ``out/dump``."""
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="msprobe_", dir=out)
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "msprobe_dump.py"), tmp, "--size", str(size)],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"msprobe_dump.py failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        (src,) = glob.glob(os.path.join(tmp, "dump", "step0", "*", ""))
        root = os.path.join(out, "dump")
        replicate(src, root, ranks, steps, corrupt_rank)
    finally:
        shutil.rmtree(tmp)  # the hard links keep the tensor data alive
    return root


def tensor_bytes(root: str) -> Dict[str, int]:
    """Bytes of tensor files under ``root``: as read (every link counted) and on disk."""
    total, inodes = 0, {}  # type: int, Dict[Tuple[int, int], int]
    for dirpath, _, files in os.walk(root):
        if "dump_tensor_data" in dirpath.split(os.sep):
            for name in files:
                st = os.stat(os.path.join(dirpath, name))
                total += st.st_size
                inodes[(st.st_dev, st.st_ino)] = st.st_size
    return {"tensor_bytes": total, "on_disk": sum(inodes.values())}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--size", type=int, default=256, help="msprobe_dump.py --size: rows N of (N, 2N) tensors")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--corrupt-rank", type=int, help="corrupt this rank's recorded gradients (every step)")
    args = ap.parse_args(argv)
    root = make(args.out, args.ranks, args.size, args.steps, args.corrupt_rank)
    b = tensor_bytes(root)
    print(root)
    print(f"{b['tensor_bytes']} bytes of tensor files ({b['tensor_bytes'] / 1e9:.2f} GB, "
          f"{b['on_disk'] / 1e9:.2f} GB on disk)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
