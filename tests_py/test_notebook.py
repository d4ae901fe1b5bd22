"""examples/quickstart.ipynb runs from top to bottom in a fresh kernel (nbclient) and shows its
plot of gradcheck errors."""

import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"


def test_quickstart_notebook_executes(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # files the notebook writes land in tmp_path; a failing cell raises CellExecutionError
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert "compare [bfloat16]" in text and "PASSED" in text
    assert "cases passed" in text  # python -m ascendgrad check
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plot, inline
    assert (tmp_path / "gradcheck_errors.png").stat().st_size > 1000
