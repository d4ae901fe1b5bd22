"""A user's files, read by the command-line tools: a file that is not what it should be (a
folder, empty, truncated, of another format) raises :class:`BadFile`, one line naming the file
and what it should have been, never the parser's own exception (a traceback, or a message such as
"contains pickled data" about a file that was never a pickle)."""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from typing import Any, Dict, Optional, Sequence

import numpy as np

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a member first, or an empty archive


class BadFile(ValueError):
    """A file is a folder, empty, truncated or of another format than the one it should be."""


def check_file(path: str, what: str, *, empty_ok: bool = False) -> None:
    """BadFile when `path` is a folder (or, unless `empty_ok`, empty); FileNotFoundError when it
    is missing."""
    if os.path.isdir(path):
        raise BadFile(f"{path}: a folder; it should be {what}")
    if not empty_ok and os.path.getsize(path) == 0:
        raise BadFile(f"{path}: empty; it should be {what}")


def head(path: str, n: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def read_json(path: str, what: str) -> Any:
    """The JSON value in `path`, which should be `what` (e.g. "a CANN ATK case file (JSON)")."""
    check_file(path, what)
    with open(path, "rb") as f:
        data = f.read()
    try:
        return json.loads(data)  # bytes: UTF-8, -16 or -32, as JSON allows
    except json.JSONDecodeError as e:
        raise BadFile(f"{path}: invalid or truncated JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                      f"it should be {what}") from None
    except UnicodeDecodeError:
        raise BadFile(f"{path}: not UTF-8 text; it should be {what}") from None


def _npy_error(path: str, what: str, e: Exception) -> BadFile:
    if "pickle" in str(e) or "Object arrays" in str(e):
        return BadFile(f"{path}: holds Python objects (refused: never unpickled); it should be {what}")
    return BadFile(f"{path}: truncated or unreadable ({e}); it should be {what}")


def read_npy(path: str, what: str = "a .npy file (a NumPy array)") -> np.ndarray:
    """The array in a .npy file (never unpickled)."""
    check_file(path, what)
    if head(path, len(_NPY_MAGIC)) != _NPY_MAGIC:
        raise BadFile(f"{path}: no NumPy header; it should be {what}")
    try:
        arr: np.ndarray = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        raise _npy_error(path, what, e) from None
    return arr


def read_npz(path: str, names: Optional[Sequence[str]] = None,
             what: str = "a .npz file (NumPy arrays in a zip archive)") -> Dict[str, np.ndarray]:
    """The arrays of a .npz file by name (only `names` when given: ValueError for one it lacks)."""
    check_file(path, what)
    if head(path, 4) not in _ZIP_MAGIC:
        raise BadFile(f"{path}: no zip header; it should be {what}")
    try:
        with np.load(path, allow_pickle=False) as z:
            files = list(z.files)
            missing = [n for n in names or () if n not in files]
            arrays = {n: z[n] for n in (files if names is None else names) if n in files}
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as e:
        raise _npy_error(path, what, e) from None
    if missing:
        raise ValueError(f"{path} has no array {missing[0]!r}; it has {', '.join(files)}")
    return arrays


def strict_json(v: Any) -> Any:
    """JSON without Infinity/NaN literals (which strict parsers reject): as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: strict_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [strict_json(x) for x in v]
    return v
