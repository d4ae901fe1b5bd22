"""Shared fixtures: the golden model and the gradcheck module of the installed package."""

import pytest


@pytest.fixture(scope="session")
def ref():
    from ascendgrad import reference

    return reference


@pytest.fixture(scope="session")
def gcheck():
    from ascendgrad import gradcheck

    return gradcheck
