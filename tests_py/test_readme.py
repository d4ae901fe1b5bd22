"""Every fenced block of README.md and of every docs/ page runs, so that they cannot drift from
the code.

Each file in document order, in one fresh interpreter whose working folder is a temporary one
(links to the checkout's folders, so ``examples/...`` resolves, while whatever a block writes lands
in the temporary folder); a page depends on no other page's blocks:

* ``python`` blocks are executed in one shared namespace (a later block uses an earlier one's
  names); blocks written as an interactive session (``>>>``) are doctests, their output compared.
* ``sh`` blocks run with ``bash -euo pipefail``; every command must exit 0.
* ``text`` blocks that show a command (``$ ...``) and its output: the command runs and its output
  must have the same shape (the same lines once numbers are masked and repeated lines merged).
* ``cmake`` blocks are built as part of a project that compiles ``examples/softmax_backward.cpp``.

A block that cannot run here says so, with its reason, in an HTML comment on the line before it:
``<!-- not run by tests_py/test_readme.py: REASON -->``. Any other block is a test failure.
MyST directives (```` ```{toctree} ````, ```` ```{eval-rst} ````) are not code and not run.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
from typing import List, NamedTuple, Optional

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FILES = [README] + sorted((ROOT / "docs").glob("*.md"))
README_MAX_LINES = 250  # what it is, the two commands, an example per main use; the rest is in docs/
OPT_OUT = re.compile(r"<!--\s*not run by tests_py/test_readme\.py:\s*(\S.*?)\s*-->")
RUNNERS = ("python", "sh", "text", "cmake")


class Block(NamedTuple):
    line: int  # of the first line inside the fence (1-based)
    lang: str
    text: str
    opt_out: Optional[str]  # the reason, when the block is marked as not run
    file: str = "README.md"  # relative to the checkout

    @property
    def id(self):
        return f"{self.file}:{self.line}-{self.lang or 'plain'}"


def blocks(path=README) -> List[Block]:
    lines = path.read_text().splitlines()
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    found, i = [], 0
    while i < len(lines):
        m = re.match(r"^(`{3,})\s*(\S*)", lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i + 1
        j = start
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = OPT_OUT.search(prev)
        if not lang.startswith("{"):  # a MyST directive is no code block
            found.append(Block(start + 1, lang, "\n".join(lines[start:j]), marker.group(1) if marker else None, name))
        i = j + 1
    return found


BLOCKS = [b for path in FILES for b in blocks(path)]


def runnable(b: Block) -> Optional[str]:
    """Why block b cannot be run (None when it can)."""
    if b.lang not in RUNNERS:
        return f"a {b.lang or 'plain'!r} block: only {', '.join(RUNNERS)} blocks are run"
    if b.lang == "text" and not any(line.startswith("$ ") for line in b.text.splitlines()):
        return "a text block that shows no '$ command'"
    return None


def test_every_block_is_run_or_marked():
    assert len(BLOCKS) >= 30, "README.md and docs/ lost their code blocks?"
    assert sum(b.file == "README.md" for b in BLOCKS) >= 5, "README.md lost its examples?"
    unmarked = [f"{b.id}: {runnable(b)}" for b in BLOCKS if b.opt_out is None and runnable(b)]
    assert not unmarked, (
        "Blocks that tests_py/test_readme.py cannot run; make them runnable or put "
        "'<!-- not run by tests_py/test_readme.py: REASON -->' on the line before:\n" + "\n".join(unmarked))


def test_parser_sees_markers_and_line_numbers(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("# t\n\n<!-- not run by tests_py/test_readme.py: costs an hour -->\n```sh\nsleep 3600\n```\n\n"
                  "```python\nx = 1\n```\n````text\n```\nnested\n```\n````\n"
                  "```{toctree}\npage\n```\n```python\ny = 2\n```\n")
    assert blocks(md) == [Block(5, "sh", "sleep 3600", "costs an hour", "x.md"), Block(9, "python", "x = 1", None, "x.md"),
                          Block(12, "text", "```\nnested\n```", None, "x.md"), Block(20, "python", "y = 2", None, "x.md")]


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES}): move details to docs/"


def test_every_page_is_checked():
    assert {b.file for b in BLOCKS} >= {"README.md", "docs/getting-started.md", "docs/python.md"}


# ---- running them ----

RUNNER = r'''
import doctest, json, os, re, subprocess, sys, traceback

blocks, doc, examples, out_path = json.load(open(sys.argv[1]))
results = {}
ns = {"__name__": "__readme__"}
NUMBER = re.compile(r"(?<![\w.])[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(?![\w])")


def shape(text):
    """Lines with numbers and bar charts masked, blanks collapsed, consecutive repeats merged."""
    out = []
    for line in text.strip("\n").splitlines():
        line = " ".join(re.sub(r"#+", "#", NUMBER.sub("<n>", line)).split())  # column widths vary
        if not out or out[-1] != line:
            out.append(line)
    return out


def sh(cmd):
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=900)
    return r.returncode, r.stdout, r.stderr


for b in blocks:
    line, lang, text = b["line"], b["lang"], b["text"]
    try:
        if lang == "python" and text.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(text, ns, f"{doc}:{line}", doc, line - 1)
            report = []
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, out=report.append, clear_globs=False)
            if runner.failures:
                raise AssertionError("".join(report))
        elif lang == "python":
            exec(compile("\n" * (line - 1) + text, doc, "exec"), ns)  # tracebacks name the file's lines
        elif lang == "sh":
            rc, so, se = sh(text)
            if rc:
                raise AssertionError(f"exit status {rc}\n--- stdout ---\n{so[-3000:]}\n--- stderr ---\n{se[-3000:]}")
        elif lang == "text":
            chunks = re.split(r"(?m)^\$ ", text)[1:]
            for chunk in chunks:
                cmd, _, expected = chunk.partition("\n")
                rc, so, se = sh(cmd)
                if rc not in (0, 1) or (rc == 1 and "FAILED" not in so):
                    raise AssertionError(f"$ {cmd}\nexit status {rc}\n{so[-3000:]}\n{se[-3000:]}")
                want, got = shape(expected), shape(so)
                if want != got:
                    diff = [f"  shown: {w!r}\n  now:   {g!r}" for w, g in zip(want, got) if w != g][:5]
                    raise AssertionError(
                        f"$ {cmd}\nits output no longer has the shape shown ({len(want)} vs {len(got)} "
                        f"distinct lines; numbers masked as <n>):\n" + "\n".join(diff) + f"\n--- output ---\n{so}")
        elif lang == "cmake":
            os.makedirs("cmake_block", exist_ok=True)
            with open("cmake_block/CMakeLists.txt", "w") as f:
                f.write("cmake_minimum_required(VERSION 3.18)\nproject(readme_block CXX)\nset(CMAKE_CXX_STANDARD 17)\n"
                        f"add_executable(my_program {examples}/softmax_backward.cpp)\n{text}\n")
            rc, so, se = sh('cmake -S cmake_block -B cmake_block/build -Dascendgrad_DIR="$(python -m ascendgrad '
                            '--cmake-dir)" && cmake --build cmake_block/build && cmake_block/build/my_program')
            if rc:
                raise AssertionError(f"exit status {rc}\n{so[-3000:]}\n{se[-3000:]}")
        results[line] = None
    except BaseException as e:  # noqa: B036 -- a block's SystemExit is its failure too
        results[line] = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-6000:]
        if isinstance(e, AssertionError) and lang != "python":
            results[line] = str(e)[-6000:]
json.dump(results, open(out_path, "w"))
'''


RUN = [b for b in BLOCKS if b.opt_out is None and not runnable(b)]


@pytest.fixture(scope="module")
def doc_run(tmp_path_factory):
    """run(file): runs every runnable block of that file once, in order; {line: None | what went wrong}."""
    runs = {}

    def run(file):
        if file not in runs:
            runs[file] = run_file(file, tmp_path_factory.mktemp("doc"))
        return runs[file]

    return run


def run_file(file, work):
    for entry in ROOT.iterdir():  # the checkout's folders, as the commands shown expect
        if entry.name not in (".git", "build") and not entry.name.startswith("."):
            (work / entry.name).symlink_to(entry)
    todo = [b._asdict() for b in RUN if b.file == file]
    spec, result = work / "_blocks.json", work / "_results.json"
    spec.write_text(json.dumps([todo, str(ROOT / file), str(ROOT / "examples"), str(result)]))
    (work / "_runner.py").write_text(RUNNER)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "_runner.py", str(spec)], cwd=work, env=env, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0 and result.exists(), r.stdout + r.stderr
    return {int(k): v for k, v in json.loads(result.read_text()).items()}


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_block_runs(block, doc_run):
    error = doc_run(block.file)[block.line]
    assert error is None, f"{block.file} line {block.line} ({block.lang} block) failed:\n{error}"
