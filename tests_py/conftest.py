"""Shared fixtures.

`ref` and `gcheck` are ascendgrad.reference and ascendgrad.gradcheck. They are pure Python, so
they are testable before the compiled module exists: the installed package wins (its _core is
what the kernel checks need); if it cannot be imported, the two modules are loaded from the
source tree under a private package name that runs no __init__.py (which imports _core).
Kernel tests go through `gcheck.gradcheck`, which imports the real `ascendgrad` itself and
fails loudly when it is missing.
"""

import importlib
import pathlib
import sys
import types

import pytest

_SRC = pathlib.Path(__file__).resolve().parents[1] / "python" / "ascendgrad"
_PRIVATE = "_ascendgrad_src"


def _pure(name):
    try:
        return importlib.import_module(f"ascendgrad.{name}")
    except ImportError:
        if _PRIVATE not in sys.modules:
            pkg = types.ModuleType(_PRIVATE)
            pkg.__path__ = [str(_SRC)]
            sys.modules[_PRIVATE] = pkg
        return importlib.import_module(f"{_PRIVATE}.{name}")


@pytest.fixture(scope="session")
def ref():
    return _pure("reference")


@pytest.fixture(scope="session")
def gcheck():
    return _pure("gradcheck")
