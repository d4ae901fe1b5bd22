"""The package's attributes: every public submodule is reachable from a plain ``import ascendgrad``,
imported only when first named (PEP 562), listed by ``dir()`` and known to type checkers. Each
check runs in a fresh interpreter: this pytest process has imported the submodules long ago."""

import ast
import json
import pathlib
import subprocess
import sys

import pytest

import ascendgrad

PACKAGE = pathlib.Path(ascendgrad.__file__).parent
# every module of the package that is not private and not the command line
PUBLIC = sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))


def fresh(code, tmp_path):
    """Runs `code` in a new interpreter (outside the checkout) and returns its last stdout line as JSON."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_public_modules_are_listed():
    assert set(PUBLIC) >= {"aclnn", "compare", "gradcheck", "reference"}
    assert sorted(ascendgrad._SUBMODULES) == PUBLIC, "add the module to _SUBMODULES in ascendgrad/__init__.py"


def test_type_checkers_see_every_submodule():
    """The TYPE_CHECKING import in __init__.py names the same modules as the run-time table."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 1:
                    for alias in imp.names:
                        assert alias.asname == alias.name, "re-export explicitly: 'import x as x'"
                        seen.add(alias.name if imp.module is None else imp.module)
    assert seen == set(ascendgrad._SUBMODULES)


def test_import_loads_no_submodule(tmp_path):
    loaded = fresh("import sys, json, ascendgrad\n"
                   "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ascendgrad'))))", tmp_path)
    for name in PUBLIC:
        assert f"ascendgrad.{name}" not in loaded, loaded
    assert "torch" not in loaded


@pytest.mark.parametrize("name", PUBLIC)
def test_each_submodule_is_an_attribute(name, tmp_path):
    code = (f"import sys, json, ascendgrad\n"
            f"m = ascendgrad.{name}\n"
            f"print(json.dumps([type(m).__name__, getattr(m, '__name__', ''), "
            f"sorted(k for k in sys.modules if k.startswith('ascendgrad.') and k[11:12] != '_')]))")
    kind, modname, loaded = fresh(code, tmp_path)
    if name == "compare":  # ascendgrad.compare is the function of the module of that name
        assert (kind, modname) == ("function", "compare")
    else:
        assert (kind, modname) == ("module", f"ascendgrad.{name}")
    # only what the module itself needs came along
    assert f"ascendgrad.{name}" in loaded


def test_issue_one_liner(tmp_path):
    fresh("import ascendgrad as a\n"
          "a.aclnn.Status; a.gradcheck.gradcheck; a.reference.softmax_backward; a.compare; a.CompareReport\n"
          "print(1)", tmp_path)


def test_dir_lists_submodules(tmp_path):
    names = fresh("import json, ascendgrad\nprint(json.dumps(dir(ascendgrad)))", tmp_path)
    assert set(PUBLIC) | set(ascendgrad.__all__) <= set(names)
    assert "ascendgrad.aclnn" not in fresh("import sys, json, ascendgrad\ndir(ascendgrad)\n"
                                           "print(json.dumps(sorted(sys.modules)))", tmp_path)


def test_unknown_attribute(tmp_path):
    fresh("import ascendgrad\n"
          "try:\n    ascendgrad.nonexistent\nexcept AttributeError as e:\n"
          "    assert \"'nonexistent'\" in str(e), e\nelse:\n    raise SystemExit('no AttributeError')\n"
          "print(1)", tmp_path)


def test_compare_stays_the_function_in_any_import_order(tmp_path):
    """Importing the module ascendgrad.compare (for load, CompareReport, ...) binds it as an attribute
    of the package; the function keeps the name."""
    fresh("import numpy as np\n"
          "from ascendgrad.compare import load\n"
          "import ascendgrad\n"
          "import ascendgrad.compare\n"
          "assert callable(ascendgrad.compare) and ascendgrad.compare.__name__ == 'compare'\n"
          "assert ascendgrad.compare(np.ones(3), np.ones(3)).passed\n"
          "print(1)", tmp_path)


def test_mypy_sees_submodules_after_plain_import(tmp_path):
    pytest.importorskip("mypy")
    user = tmp_path / "user.py"
    user.write_text(
        "import numpy as np\n"
        "import ascendgrad\n"
        "r: ascendgrad.gradcheck.GradcheckResult = ascendgrad.gradcheck.gradcheck('softmax_backward')\n"
        "s: int = ascendgrad.aclnn.Status.SUCCESS\n"
        "y = ascendgrad.reference.softmax(np.zeros(3), -1)\n"
        "c: ascendgrad.CompareReport = ascendgrad.compare(np.zeros(3), np.zeros(3))\n"
        "ascendgrad.not_a_name\n"  # line 7: a typo must still be an error (no catch-all __getattr__)
    )
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                        str(user)], capture_output=True, text=True, cwd=tmp_path)
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "user.py:7:" in errors[0] and "not_a_name" in errors[0], r.stdout + r.stderr
