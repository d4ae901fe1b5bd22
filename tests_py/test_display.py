"""Reports show themselves (issue 54): a short ``repr`` that says the verdict, ``_repr_html_``
tables for Jupyter with verdicts marked and text escaped, and ``CompareReport.plot()``'s
matplotlib figure (matplotlib optional: one line of ImportError without it)."""

import dataclasses
import pickle
import sys

import numpy as np
import pytest

import ascendgrad
from ascendgrad import _display, gradcheck
from ascendgrad import golden as G
from ascendgrad import reference as ref
from ascendgrad.compare import CompareReport, compare_numpy

MAX_LINE = 200


def short(text, max_lines=4):
    lines = text.splitlines()
    assert 1 <= len(lines) <= max_lines, text
    assert all(len(line) <= MAX_LINE for line in lines), text
    return lines


def arrays(shape=(8, 10), seed=0):
    e = np.random.default_rng(seed).standard_normal(shape)
    return e.astype(np.float32), e


@pytest.fixture
def passing():
    a, e = arrays()
    return ascendgrad.compare(a, e)


@pytest.fixture
def failing():
    a, e = arrays()
    a = a.copy()
    a[3, 4] = np.nan
    a[1, 1] += 1.0
    return ascendgrad.compare(a, e)


# --------------------------------------------------------------------------------------------
# CompareReport


def test_compare_repr_is_short_and_says_the_verdict(passing, failing):
    lines = short(repr(passing))
    assert lines[0].startswith("<CompareReport: PASSED under cann") and "float32" in lines[0]
    assert "(8, 10)" in lines[0]
    assert "matched_ratio" in repr(passing) and "worst (" in repr(passing)
    lines = short(repr(failing))
    assert lines[0].startswith("<CompareReport: FAILED under cann")
    assert "failed: 1 NaN and 0 inf mismatches" in lines[1] and "matched_ratio 0.975 < 0.99" in lines[1]
    assert "worst (3, 4)" in lines[2]
    assert len(repr(failing)) < 600  # the dataclass repr was 1,000+ characters on one line
    # str() keeps the readable report of the command line
    assert str(failing).startswith("compare [float32] shape=(8, 10): FAILED under cann")


@pytest.mark.parametrize("standard", ["cann", "cann-v1", "msprobe", "dual-benchmark"])
def test_compare_repr_short_under_every_standard(standard):
    a, e = arrays((64, 3, 5))
    extra = {"benchmark": a} if standard == "dual-benchmark" else {}
    for x in (a, a * 1.5):
        r = ascendgrad.compare(x, e, standard=standard, **extra)
        lines = short(repr(r))
        assert ("PASSED" if r else "FAILED") in lines[0] and standard in lines[0]


def test_compare_repr_without_worst_elements():
    e = np.zeros(5)
    lines = short(repr(ascendgrad.compare(e, e, worst=0)))
    assert "PASSED" in lines[0] and not any(line.startswith("worst") for line in lines)


def test_compare_html_table(passing, failing):
    h = failing._repr_html_()
    assert "<table" in h and "FAILED" in h and "ag-fail" in h
    for name in ("nan_inf_mismatches", "matched_ratio", "max_abs_error"):  # the checks
        assert f">{name}<" in h
    assert "&lt;" in h  # the failed checks' op is escaped ("<" of 0.975 < 0.99 would be one)
    assert "(3, 4)" in h and "worst elements" in h  # the worst element
    assert "ULP distance" in h
    h = passing._repr_html_()
    assert "PASSED" in h and "ag-pass" in h and "ag-fail" not in h
    assert "<script" not in h and "http" not in h  # self-contained


def test_compare_html_escapes_text(failing):
    odd = dataclasses.replace(failing, standard="<b>x</b>", reasons=("a < b",),
                              metrics={"<m>": 1.0})
    h = odd._repr_html_()
    assert "<b>x</b>" not in h and "&lt;b&gt;x&lt;/b&gt;" in h
    assert "<m>" not in h and "&lt;m&gt;" in h


def test_compare_plot_returns_a_figure(failing):
    from matplotlib.figure import Figure

    fig = failing.plot()
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 2  # the error map (with its colorbar) and the histogram
    assert "compare [float32] (8, 10)" in panels[0].get_title()
    assert panels[1].get_title().startswith("fail: 1 NaN")
    assert len(panels[0].images) == 1 and panels[0].images[0].get_array().shape == (8, 10)
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"  # draws itself inline, pyplot or not
    assert pickle.loads(pickle.dumps(fig)).axes  # a figure still pickles
    assert "my title" in failing.plot(name="my title").axes[0].get_title()


@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3, 4, 5), (0, 3, 4)])
def test_compare_plot_any_shape(shape):
    a, e = arrays(shape)
    fig = ascendgrad.compare(a, e).plot()
    assert len([ax for ax in fig.axes if ax.get_label() != "<colorbar>"]) == 2


def test_compare_numpy_plots_too():
    a, e = arrays()
    assert compare_numpy(a * 2, e).plot().axes[1].get_title().startswith("fail")


def test_plot_needs_the_arrays(failing):
    from ascendgrad import judge

    a, e = arrays()
    bare = judge.compare_arrays(a, e)[0]  # not from compare(): it keeps no arrays
    with pytest.raises(ValueError, match="keeps no arrays"):
        bare.plot()
    back = pickle.loads(pickle.dumps(failing))  # the arrays do not travel with a pickle
    assert back.passed == failing.passed and back.worst[0].location == failing.worst[0].location
    with pytest.raises(ValueError, match="keeps no arrays"):
        back.plot()
    assert "_source" not in failing.to_dict() and "_source" not in dataclasses.asdict(failing)


def test_plot_refuses_arrays_changed_since():
    a, e = arrays()
    r = ascendgrad.compare(a, e)
    a[0, 0] += 3.0  # in place: the report's arrays are these, not copies
    with pytest.raises(ValueError, match="changed"):
        r.plot()


def test_plot_without_matplotlib(failing, monkeypatch):
    failing.plot()  # matplotlib loaded before: still refused below
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError) as info:
        failing.plot()
    assert str(info.value) == "plotting needs matplotlib (pip install matplotlib)"
    assert "\n" not in str(info.value)
    with pytest.raises(ImportError, match=r"^plotting needs matplotlib \(pip install matplotlib\)$"):
        _display.figure(np.ones((2, 2)), "x", "pass", "", "cann")


# --------------------------------------------------------------------------------------------
# GradcheckResult


def test_gradcheck_repr_and_html_passing():
    r = gradcheck.gradcheck("cross_entropy_loss_grad", dtype="bfloat16", reduction="mean",
                            label_smoothing=0.1, weight=True)
    assert r
    lines = short(repr(r))
    assert lines[0].startswith("<GradcheckResult: PASSED cross_entropy_loss_grad[bfloat16]")
    assert "max_abs_err=" in lines[1] and "worst (" in lines[2]
    h = r._repr_html_()
    assert "PASSED" in h and "ag-pass" in h and "ag-fail" not in h and "<table" in h
    assert "max abs err" in h and "worst elements of 30 compared" in h


def test_gradcheck_repr_and_html_failing():
    x = np.random.default_rng(0).standard_normal((50, 60))
    r = gradcheck.check_vjp(ref.log_sigmoid, lambda v, x_: 1.01 * ref.log_sigmoid_backward(v, x_), [x],
                            fast_mode=True)
    assert not r
    lines = short(repr(r))
    assert lines[0].startswith("<GradcheckResult: FAILED log_sigmoid[float64]")
    assert "fast probes" in lines[1]
    h = r._repr_html_()
    assert "FAILED" in h and "ag-fail" in h and "fast-mode probes" in h


def test_gradcheck_html_escapes_and_repr_clips_long_options():
    r = gradcheck.check_vjp(ref.log_sigmoid, lambda v, x_: ref.log_sigmoid_backward(v, x_), [np.ones(3)])
    odd = dataclasses.replace(r, op="<op>", options={"w": list(range(500))}, note="n" * 500)
    short(repr(odd))
    h = odd._repr_html_()
    assert "<op>" not in h and "&lt;op&gt;" in h


# --------------------------------------------------------------------------------------------
# golden's CheckReport


@pytest.fixture
def golden_dirs(tmp_path):
    gold, bad = tmp_path / "golden", tmp_path / "actual"
    for seed in range(3):
        c = G.make_case("softmax_backward", [(4, 6)], "float16", seed=seed)
        G.write_case(c, gold / f"case{seed}")
        c.outputs["grad_input"] = (c.outputs["grad_input"].astype(np.float64) * 1.5 + 0.5).astype(np.float16) \
            if seed == 1 else c.outputs["grad_input"]
        if seed != 2:  # case2 has no output: a file error
            G.write_case(c, bad / f"case{seed}")
    return gold, bad


def test_check_report_repr_and_html(golden_dirs):
    gold, bad = golden_dirs
    ok = G.check(gold, gold)
    lines = short(repr(ok))
    assert lines == ["<CheckReport: PASSED under cann, 3/3 cases passed>"]
    h = ok._repr_html_()
    assert h.count("ag-pass") >= 4 and "ag-fail" not in h and "3/3 cases passed" in h

    rep = G.check(gold, bad)
    lines = short(repr(rep))
    assert lines[0] == "<CheckReport: ERROR under cann, 1/3 cases passed>"
    assert "failed (1): case1" in lines[1] and "file errors (1): case2" in lines[2]
    assert lines[3].startswith("worst: case1 grad_input: max abs err")
    h = rep._repr_html_()
    for text in ("case0", "case1", "case2", "grad_input", "max abs err", "worst element", "ERROR", "FAIL"):
        assert text in h, text
    assert "ag-fail" in h and "ag-pass" in h and "matched_ratio" in h  # why case1 failed
    # the case verdicts show themselves too
    assert short(repr(rep.cases[1]))[0] == "<CaseVerdict case1: fail>"
    assert "ag-fail" in rep.cases[1]._repr_html_()


def test_check_report_escapes_and_caps(golden_dirs):
    gold, _ = golden_dirs
    base = G.check(gold, gold)
    odd = G.CheckReport("cann", [G.CaseVerdict("<b>case</b>", "error", error="x < y")] + base.cases * 40)
    h = odd._repr_html_()
    assert "<b>case</b>" not in h and "&lt;b&gt;case&lt;/b&gt;" in h and "x &lt; y" in h
    assert h.index("&lt;b&gt;case") < h.index("case0")  # the error first
    assert h.count("<tr>") <= _display.MAX_ROWS + 2 and "more rows not shown" in h
    short(repr(odd))


# --------------------------------------------------------------------------------------------
# the helpers


def test_table_escapes_marks_and_caps():
    h = _display.table(("a", "<h>"), [("<x>", _display.verdict("pass")), ("y", _display.verdict("fail")),
                                      ("z", _display.verdict("not comparable"))] * 30, max_rows=5)
    assert "&lt;x&gt;" in h and "<x>" not in h and "&lt;h&gt;" in h
    assert 'class="ag-verdict ag-pass"' in h and "ag-fail" in h and "ag-nc" in h and ">FAIL<" in h
    assert "85 more rows not shown" in h
    assert "overflow-wrap:anywhere" in h and "max-width" in h  # long text wraps


def test_figure_for_dump_check():
    s = np.abs(np.random.default_rng(1).standard_normal((3, 4, 50)))
    s[0, 1, 2] = np.inf
    fig = _display.figure(s, "Functional.softmax.0", "fail", "x" * 100, "cann")
    a1, a2 = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert a1.images[0].get_array().shape == (4, 50)
    assert "Functional.softmax.0" in a1.get_title() and a2.get_title() == "fail: " + "x" * 70
    assert a2.get_legend() is not None and "cann threshold" in [t.get_text() for t in a2.get_legend().get_texts()]


def test_report_is_not_a_field():
    assert "_source" not in {f.name for f in dataclasses.fields(CompareReport)}


# --------------------------------------------------------------------------------------------
# dump-check's result, autocompare's report, ascend_backward


def _dump_result(calls):
    from ascendgrad.dump_check import CallResult, DumpResult

    return DumpResult("cann", "<dump>", [CallResult(*c) for c in calls], 1 << 20, 0.5)


def test_dump_result_repr_and_html():
    worst = {"index": [2, 3], "dumped": 1.5, "golden": 0.25, "abs_err": 1.25, "rel_err": 5.0, "metric": "max_abs_error"}
    res = _dump_result([("Functional.softmax.0", 0, 0, "float32", [4, 8], "pass", "", {"matched_ratio": 1.0}, None),
                        ("Functional.softmax.0", 0, 1, "float32", [4, 8], "fail", "max_abs_error 1.25 > 0.01",
                         {"matched_ratio": 0.5}, worst),
                        ("Functional.kl_div.0", 0, 1, None, None, "not comparable", "a <statistics> dump", {}, None)])
    text = repr(res)
    short(text)
    assert text.startswith("<DumpResult: FAILED under cann, 3 calls: 1 pass, 1 fail, 1 not comparable")
    assert "first failure: Functional.softmax.0 (0/1)" in text and "(2, 3)" in text
    page = res._repr_html_()
    assert page.index("Functional.softmax.0") < page.index("Functional.kl_div.0")  # failures first
    assert "ag-fail" in page and "ag-pass" in page and "ag-nc" in page
    assert "&lt;statistics&gt;" in page and "<statistics>" not in page
    assert "failures per step/rank and API" in page  # two ranks: the grid
    ok = _dump_result([("Functional.softmax.0", None, None, "float32", [4], "pass", "", {}, None)])
    assert repr(ok).startswith("<DumpResult: PASSED") and "failures per step/rank" not in ok._repr_html_()


def test_dump_result_plots_one_call_again(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("torch")
    from ascendgrad.dump_check import check_dump

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    import cluster_dump

    res = check_dump(cluster_dump.make(str(tmp_path), 2, corrupt_rank=1))
    fig = res.plot_call("Functional.softmax.0", step=0, rank=1)
    assert "FAIL" in " ".join(a.get_title() for a in fig.axes).upper()
    with pytest.raises(ValueError, match="give step= and rank="):
        res.plot_call("Functional.softmax.0")
    with pytest.raises(ValueError, match="0 calls"):
        res.plot_call("Functional.nothing.0")
    with pytest.raises(ValueError, match="not comparable"):
        res.plot_call("Functional.kl_div.6", step=0, rank=0)


def test_autocompare_and_ascend_backward_show_themselves(tmp_path):
    torch = pytest.importorskip("torch")
    import warnings

    import torch.nn.functional as F

    import ascendgrad.torch as agt

    lib = torch.library.Library("aten", "IMPL")

    def faulty(grad_output, self, buffer):
        r = grad_output * torch.sigmoid(-self)
        r[0, 0] += 1.0
        return r

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.impl("log_sigmoid_backward", faulty, "CPU")
    x = torch.randn(8, 16, requires_grad=True)
    try:
        with agt.autocompare(save_dir=tmp_path) as report:
            with agt.ascend_backward() as route:
                F.softmax(x, -1).pow(2).sum().backward()  # routed: ascendgrad's kernel
                F.softmax(torch.randn(2, 3), -1)  # passed through: no grad
            F.logsigmoid(x).sum().backward()  # PyTorch's, faulty
    finally:
        lib._destroy()
    text = repr(report)
    short(text)
    assert text.startswith("<AutocompareReport: FAILED under cann, 2 calls: 1 pass, 1 fail")
    assert "Functional.logsigmoid.0" in text and "worst element (0, 0)" in text
    page = report._repr_html_()
    assert "ag-fail" in page and "ag-pass" in page and "not judged" in page
    r = repr(route)
    short(r)
    assert r.startswith("<ascend_backward: 1 calls routed through ascendgrad, 1 passed through>")
    assert "input does not require grad" in r or "no input requires grad" in r
    assert "<table" in route._repr_html_() and "Functional.softmax" in route._repr_html_()
    pytest.importorskip("matplotlib")
    fig = report.plot_call("Functional.logsigmoid.0")
    assert len([a for a in fig.axes if a.get_label() != "<colorbar>"]) == 2
    with pytest.raises(ValueError, match="no case folder"):
        report.plot_call("Functional.softmax.0")
