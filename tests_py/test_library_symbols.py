"""What the installed libascendgrad.so takes from libstdc++ and what it gives the process.

Toolchains that link part of libstdc++ into the library (manylinux's devtoolset, `-static-libstdc++`,
an image whose compiler is older than its system libstdc++) leave two copies of libstdc++ in one
process. An iostream then took its locale facets from the other copy, and the first call crashed in
codecvt (g++ 13 on Ubuntu 24.04). So the library reads files with stdio, and any libstdc++ linked
into it stays private to it (--exclude-libs)."""

import shutil
import subprocess

import pytest

from ascendgrad import _paths

LIB = _paths.lib_dir() / "libascendgrad.so"


def dynamic_symbols(*flags):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    r = subprocess.run([nm, "-D", "-C", *flags, str(LIB)], capture_output=True, text=True, check=True)
    return r.stdout.splitlines()


def test_no_iostreams_or_locale():
    used = [s for s in dynamic_symbols("--undefined-only")
            if any(k in s for k in ("basic_istream", "basic_ostream", "basic_ifstream", "basic_ios", "std::locale",
                                    "ios_base", "codecvt", "ctype<"))]
    assert not used, "\n".join(used)


def test_exports_the_api_and_no_libstdcxx_internals():
    """Defined symbols: the C API, and no libstdc++ library code (template instantiations of our own
    code are fine). A statically linked libstdc++ without --exclude-libs exports thousands."""
    defined = dynamic_symbols("--defined-only")
    api = [s for s in defined if s.split()[-1].startswith(("acl", "ascendgrad"))]
    assert len(api) >= 50
    internals = [s for s in defined if any(k in s for k in ("std::locale", "std::ios_base", "codecvt",
                                                             "std::runtime_error::", "__cxa_", "std::exception::"))]
    assert not internals, "\n".join(internals[:20])
