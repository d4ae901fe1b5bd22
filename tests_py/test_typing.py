"""The typed API: mypy --strict accepts a user script that calls every public function (and
rejects wrong calls, so the types are not Any), and stubtest keeps the _core stubs honest."""

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "typed_usage.py"
TORCH_EXAMPLE = EXAMPLE.with_name("typed_torch_usage.py")  # ascendgrad.torch's public names


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One cache for the module's mypy runs: each would otherwise analyse numpy and torch anew."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(tmp_path, cache, *args):
    # run outside the checkout, so that the installed package (py.typed, stubs) is what is checked
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
                          capture_output=True, text=True, cwd=tmp_path)


@pytest.mark.parametrize("script", (EXAMPLE, TORCH_EXAMPLE), ids=lambda p: p.stem)
def test_user_script_passes_mypy_strict(tmp_path, mypy_cache, script):
    r = mypy(tmp_path, mypy_cache, "--strict", str(script))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("script, ok", ((EXAMPLE, "typed usage: ok"), (TORCH_EXAMPLE, "typed torch usage: ok")),
                         ids=lambda v: getattr(v, "stem", ""))
def test_user_script_runs(tmp_path, script, ok):
    r = subprocess.run([sys.executable, "-W", "error::UserWarning", str(script)], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0 and ok in r.stdout, r.stdout + r.stderr


def test_wrong_calls_are_rejected(tmp_path, mypy_cache):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import numpy as np\n"
        "import ascendgrad\n"
        "from ascendgrad import aclnn, reference\n"
        "ascendgrad.softmax_backward(np.zeros(3), np.zeros(3), dim='x')\n"
        "aclnn.softmax_backward_get_workspace_size(np.zeros(3), None, 0, None)\n"
        "reference.kl_div_backward(1.0, np.zeros(3), np.zeros(3), log_target='yes')\n"
        "ascendgrad.compare(np.zeros(3), np.zeros(3), rtol='x')\n"
        "n: str = ascendgrad.get_num_threads()\n"
    )
    r = mypy(tmp_path, mypy_cache, "--strict", str(bad))
    assert r.returncode == 1
    for line in (4, 5, 6, 7, 8):
        assert f"bad.py:{line}: error" in r.stdout, r.stdout


def test_stubtest_core(tmp_path):
    allow = pathlib.Path(__file__).with_name("stubtest_allowlist.txt")
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "ascendgrad._core", "--allowlist", str(allow)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 modules" in r.stdout  # the submodule aclnn too


def _split_top(text):
    """Split at the commas that are not inside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def _runtime_params(fn):
    """[(name, has_default)] from pybind11's signature line, e.g. ``f(a: object, b: int = -1) -> x``
    (pybind11 functions carry no __text_signature__, so stubtest cannot compare parameters)."""
    line = fn.__doc__.splitlines()[0]
    inner = line[line.index("(") + 1: line.rindex(") ->")]
    return [(p.split(":")[0].strip(), "=" in p) for p in _split_top(inner)]


def _stub_params(node):
    args = node.args.args
    first_default = len(args) - len(node.args.defaults)
    return [(a.arg, i >= first_default) for i, a in enumerate(args)]


def test_stub_parameters_match_the_bindings():
    import ast

    import ascendgrad
    import ascendgrad._core as core

    stubs = pathlib.Path(ascendgrad.__file__).parent / "_core"
    checked = 0
    for path, mod in ((stubs / "__init__.pyi", core), (stubs / "aclnn.pyi", core.aclnn)):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            scopes = [(node, getattr(mod, node.name, None))] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.ClassDef):
                cls = getattr(mod, node.name)
                scopes = [(f, getattr(cls, f.name)) for f in node.body
                          if isinstance(f, ast.FunctionDef) and not f.decorator_list
                          and "(" in ((getattr(cls, f.name).__doc__ or "").splitlines() or [""])[0]]
            for fdef, runtime in scopes:
                assert runtime is not None, f"{fdef.name} is not in {mod.__name__}"
                params = _runtime_params(runtime)
                if any(name.startswith("*") for name, _ in params):
                    continue  # e.g. __exit__(self, *args): any stub parameters fit
                assert _stub_params(fdef) == params, f"{mod.__name__}.{fdef.name}"
                checked += 1
    assert checked >= 25
