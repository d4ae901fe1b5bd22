"""Where the wheel put the C headers, the shared library and the CMake package."""

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def include_dir() -> Path:
    """Folder to pass as ``-I``: holds acl/, aclnn/, aclnnop/ and ascendgrad/."""
    return _HERE / "include"


def lib_dir() -> Path:
    """Folder holding libascendgrad.so (``-L``, and ``-Wl,-rpath`` or LD_LIBRARY_PATH to run)."""
    return _HERE / "lib"


def cmake_dir() -> Path:
    """Folder holding ascendgradConfig.cmake (``-Dascendgrad_DIR=...``)."""
    return _HERE / "lib" / "cmake" / "ascendgrad"
