"""The ``check`` command: sweeps operator x dtype x options through :func:`gradcheck.gradcheck`."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    return 0
