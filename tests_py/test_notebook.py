"""examples/quickstart.ipynb runs from top to bottom in a fresh kernel (nbclient), shows its plot
of gradcheck errors, and shows the reports as a notebook shows them (issue 54): HTML tables with
their verdicts, a comparison's figure, and short text reprs."""

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

    # the reports ended cells: their HTML tables, verdicts marked
    html = {}
    for c in nb.cells:
        for o in c.get("outputs", []):
            if "text/html" in o.get("data", {}):
                html[c.source.strip().splitlines()[-1].split("#")[0].strip()] = o["data"]["text/html"]
    report, bad, res, verdicts, checked, route = (html.get(k, "") for k in ("report", "bad", "res", "verdicts",
                                                                             "checked", "route"))
    assert "<table" in report and "PASSED" in report and "ag-pass" in report and "matched_ratio" in report
    assert "<table" in bad and "FAILED" in bad and "ag-fail" in bad and "worst elements" in bad
    assert "<table" in res and "GradcheckResult" in res and "PASSED" in res
    assert "<table" in verdicts and "CheckReport" in verdicts and "2/3 cases passed" in verdicts
    assert "case2" in verdicts and "ag-fail" in verdicts and "ag-pass" in verdicts
    assert "<table" in checked and "autocompare" in checked and "ag-fail" in checked and "ag-pass" in checked
    assert "Functional.logsigmoid.0" in checked and "max_abs_error" in checked
    assert "<table" in route and "ascend_backward" in route and "Functional.softmax" in route
    assert "<AutocompareReport: FAILED under cann, 2 calls: 1 pass, 1 fail" in str(outputs)
    called = [o for c in nb.cells if c.source.strip().startswith("checked.plot_call(") for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in called), called
    # report.plot(): the figure, inline
    plot = [o for c in nb.cells if c.source.strip() == "bad.plot()" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in plot), plot
    # every repr short: no text/plain line over 200 characters
    for c in nb.cells:
        for o in c.get("outputs", []):
            plain = o.get("data", {}).get("text/plain", "")
            plain = "".join(plain) if isinstance(plain, list) else plain
            assert all(len(line) <= 200 for line in plain.splitlines()), (c.source, plain)
    assert "<CompareReport: FAILED under cann, bfloat16" in text  # print(repr(bad))
