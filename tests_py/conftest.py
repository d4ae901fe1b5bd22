"""Shared fixtures: the golden model and the gradcheck module of the installed package."""

import os
import shutil

import pytest

# Tests that configure CMake projects (examples/, README blocks) use Ninja when it is there: the
# test extra installs it, while `make` is not on every machine that has a compiler.
if "CMAKE_GENERATOR" not in os.environ and shutil.which("ninja"):
    os.environ["CMAKE_GENERATOR"] = "Ninja"


@pytest.fixture(scope="session")
def ref():
    from ascendgrad import reference

    return reference


@pytest.fixture(scope="session")
def gcheck():
    from ascendgrad import gradcheck

    return gradcheck
