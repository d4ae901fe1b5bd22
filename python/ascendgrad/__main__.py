"""Command line: ``python -m ascendgrad check`` proves every kernel against finite differences;
``python -m ascendgrad compare ACTUAL EXPECTED`` judges a result against the golden one;
``python -m ascendgrad dump-check DUMP`` judges the gradients in an msprobe dump;
``python -m ascendgrad golden`` makes golden data for operator tests and judges a device's
output (:mod:`ascendgrad.golden`); ``--include-dir``, ``--libdir`` and ``--cmake-dir`` locate
the C library for C/C++ builds."""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, _paths


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ascendgrad",
        description="ascendgrad: CPU reference of Ascend aclnn backward operators.",
    )
    p.add_argument("--version", action="version", version=f"ascendgrad {__version__}")
    p.add_argument("--include-dir", action="store_true", help="print the C include folder (-I)")
    p.add_argument("--libdir", action="store_true", help="print the folder of libascendgrad.so (-L)")
    p.add_argument("--cmake-dir", action="store_true", help="print the folder of ascendgradConfig.cmake")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    c = sub.add_parser("check", help="gradcheck every operator x dtype x option set; exit 1 on any failure")
    from . import _check
    from .compare import _add_arguments  # the module: ascendgrad.compare is the function

    _check.add_arguments(c)
    _add_arguments(sub.add_parser(
        "compare", help="compare a result with the golden one (.npy/.npz/raw); exit 1 when it fails"))
    from . import dump_check

    dump_check.add_arguments(sub.add_parser(
        "dump-check", help="check the gradients in an msprobe dump against the golden model; exit 1 on a failure"))
    from . import golden

    golden.add_arguments(sub.add_parser(
        "golden", help="golden data from shapes or a CANN ATK case file; --check judges a device's output"))
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        rc = _main(argv)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at exit
        return rc
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly with the shell's status for SIGPIPE,
        # and keep the interpreter's final flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    for flag, where in (
        ("include_dir", _paths.include_dir),
        ("libdir", _paths.lib_dir),
        ("cmake_dir", _paths.cmake_dir),
    ):
        if getattr(args, flag):
            print(where())
            return 0
    if args.command == "check":
        from . import _check

        return _check.run(args)
    if args.command == "compare":
        from .compare import _run

        return _run(args)
    if args.command == "dump-check":
        from . import dump_check

        return dump_check.run(args)
    if args.command == "golden":
        from . import golden

        return golden.run(args)
    _parser().print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
