"""The documentation site (docs/) builds with Sphinx without a warning, every cross-reference
resolved (-W -n), and its API reference documents every public name of every public module.

The pages' code blocks are run by tests_py/test_readme.py, as README.md's are.
"""

import html
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ascendgrad

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The HTML build, with warnings as errors and nitpicky references; its output folder."""
    out = tmp_path_factory.mktemp("docs_html")
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-E", "-b", "html",
                        str(DOCS), str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"sphinx-build -W -n failed:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
    return out


def test_docs_build_complete_without_torch(tmp_path):
    """The docs extra alone (no PyTorch): the build still passes -W -n, and ascendgrad.torch's
    reference is there (autodoc's stand-ins for torch, docs/conf.py)."""
    block = ("import sys; sys.modules['torch'] = None; from sphinx.cmd.build import main; "
             "sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", block, "-W", "--keep-going", "-n", "-q", "-E", "-b", "html",
                        str(DOCS), str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"sphinx-build -W -n without torch failed:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
    page = (tmp_path / "api.html").read_text(encoding="utf-8")
    for name in ("autocompare", "ascend_backward", "AutocompareReport.gather", "npu_cross_entropy_loss"):
        assert f'id="ascendgrad.torch.{name}"' in page, name


def test_docs_build_without_warnings(built):
    assert (built / "index.html").is_file()
    for page in DOCS.glob("*.md"):  # every page is built (a page outside every toctree is a warning too)
        assert (built / page.with_suffix(".html").name).is_file(), page.name


def public_modules():
    """ascendgrad and every public submodule it names (a new one is added there, see __init__.py)."""
    return ["ascendgrad"] + [f"ascendgrad.{m}" for m in ascendgrad._SUBMODULES]


def test_api_reference_documents_every_public_name(built):
    page = (built / "api.html").read_text(encoding="utf-8")
    ids = {html.unescape(i) for i in re.findall(r'\bid="([^"]+)"', page)}
    missing = []
    for name in public_modules():
        mod = importlib.import_module(name)
        if f"module-{name}" not in ids:
            missing.append(f"{name} (the module: an automodule in docs/api.md)")
        for attr in mod.__all__:
            home = getattr(getattr(mod, attr), "__module__", name)  # a re-export is documented at home
            where = [f"{name}.{attr}"] + ([f"{home}.{attr}"] if home in public_modules() else [])
            if not ids.intersection(where):
                missing.append(f"{name}.{attr}")
    assert not missing, "docs/api.md does not document: " + ", ".join(missing)


def test_the_check_sees_a_missing_name(built, monkeypatch):
    monkeypatch.setattr(ascendgrad, "__all__", ascendgrad.__all__ + ["not_documented_anywhere"])
    monkeypatch.setattr(ascendgrad, "not_documented_anywhere", lambda: None, raising=False)
    with pytest.raises(AssertionError, match="ascendgrad.not_documented_anywhere"):
        test_api_reference_documents_every_public_name(built)
