"""How reports show themselves: short text reprs, HTML tables for Jupyter (``_repr_html_``) and
the figure of one comparison.

The HTML is self-contained (inline styles, no external CSS or JavaScript, so that it survives
a notebook's sanitiser and a static export) and narrow: long text wraps, cells are capped in
width, long tables are cut with a line saying how many rows are not shown. Every piece of text
is escaped with :func:`html.escape`; :class:`Raw` marks the few fragments that are HTML already.

:func:`figure` draws one comparison (dump-check's ``--plots`` picture): the error over the
tensor's two largest dims and the histogram of log10(score) against the standard's per-element
threshold. It uses matplotlib's object API (``matplotlib.figure.Figure``): no pyplot state, no
backend switch; matplotlib stays optional (:data:`NO_MATPLOTLIB` without it).
"""

from __future__ import annotations

import html
import io
import math
from typing import Any, Iterable, Optional, Sequence, Tuple

import numpy as np

#: The one-line message of the ImportError that plotting raises without matplotlib.
NO_MATPLOTLIB = "plotting needs matplotlib (pip install matplotlib)"

#: The longest line a text repr may have.
MAX_LINE = 200

#: Rows of a table shown before it is cut.
MAX_ROWS = 60

# verdict -> (CSS class, colour); the text of the cell says it too, for those who see no colour
_PASS, _FAIL, _NC = "ag-pass", "ag-fail", "ag-nc"
_COLOURS = {_PASS: "#1a7f37", _FAIL: "#cf222e", _NC: "#9a6700"}
_KIND = {"pass": _PASS, "passed": _PASS, "ok": _PASS, "true": _PASS,
         "fail": _FAIL, "failed": _FAIL, "error": _FAIL, "false": _FAIL,
         "not comparable": _NC, "nc": _NC, "skipped": _NC}

_TABLE = ("border-collapse:collapse;margin:2px 12px 6px 0;font-size:12px;table-layout:auto;"
          "max-width:100%")
# short: every cell carries it (inline, as a notebook's sanitiser keeps style attributes, not <style>)
_CELL = "padding:1px 6px;text-align:left;vertical-align:top;max-width:26em;white-space:normal;overflow-wrap:anywhere"
_HEAD = _CELL + ";font-weight:600;border-bottom:1px solid rgba(128,128,128,0.5)"


class Raw(str):
    """Text that is HTML already (not escaped again by :func:`table`)."""

    __slots__ = ()


def esc(x: Any) -> str:
    """``x`` as escaped HTML text (a :class:`Raw` as it is)."""
    return x if isinstance(x, Raw) else html.escape(str(x), quote=True)


def num(x: Any, digits: int = 4) -> str:
    """A number, short: ``%.4g``; ints as they are; None as ``-``."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}g}"


def clip(text: str, limit: int = MAX_LINE) -> str:
    """One line of at most ``limit`` characters (newlines become spaces; ``...`` marks a cut)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def lines(*parts: Optional[str], limit: int = MAX_LINE) -> str:
    """A text repr: the non-empty parts, one clipped line each."""
    return "\n".join(clip(p, limit) for p in parts if p)


def kind(verdict: Any) -> str:
    """The CSS class of a verdict: ``ag-pass``, ``ag-fail`` or ``ag-nc`` (not comparable)."""
    if isinstance(verdict, (bool, np.bool_)):
        return _PASS if verdict else _FAIL
    return _KIND.get(str(verdict).strip().lower(), _NC)


def verdict(v: Any, text: Optional[str] = None) -> Raw:
    """A verdict cell's content: its text (``text``, else ``pass``/``FAIL``/the verdict) in the
    verdict's colour, with the class ``ag-pass``/``ag-fail``/``ag-nc``."""
    k = kind(v)
    if text is None:
        text = ("pass" if v else "FAIL") if isinstance(v, (bool, np.bool_)) else str(v)
        text = text.upper() if k == _FAIL else text
    return Raw(f'<span class="ag-verdict {k}" style="color:{_COLOURS[k]};font-weight:600">{esc(text)}</span>')


def table(header: Sequence[Any], rows: Iterable[Sequence[Any]], *, caption: Optional[str] = None,
          max_rows: int = MAX_ROWS, total: Optional[int] = None) -> Raw:
    """An HTML table: ``header`` and ``rows`` of cells (escaped unless :class:`Raw`), at most
    ``max_rows`` rows, then a row that says how many are left out (of ``total`` rows in all,
    default the rows given)."""
    body = list(rows)
    n = len(body) if total is None else total
    shown = body[:max_rows]
    out = [f'<table class="ag-table" style="{_TABLE}">']
    if caption:
        out.append(f'<caption style="text-align:left;font-weight:600;padding:2px 0">{esc(caption)}</caption>')
    out.append("<thead><tr>" + "".join(f'<th style="{_HEAD}">{esc(h)}</th>' for h in header) + "</tr></thead>")
    out.append("<tbody>")
    for r in shown:
        out.append("<tr>" + "".join(f'<td style="{_CELL}">{esc(c)}</td>' for c in r) + "</tr>")
    if n > len(shown):
        out.append(f'<tr><td style="{_CELL};font-style:italic" colspan="{len(header)}">'
                   f"... {n - len(shown)} more rows not shown</td></tr>")
    out.append("</tbody></table>")
    return Raw("".join(out))


def pairs(items: Iterable[Tuple[Any, Any]], *, caption: Optional[str] = None) -> Raw:
    """A two-column table (name, value) with no header row: numbers and settings."""
    rows = "".join(f'<tr><th style="{_HEAD}">{esc(k)}</th><td style="{_CELL}">{esc(v)}</td></tr>' for k, v in items)
    cap = f'<caption style="text-align:left;font-weight:600;padding:2px 0">{esc(caption)}</caption>' if caption else ""
    return Raw(f'<table class="ag-table" style="{_TABLE}">{cap}<tbody>{rows}</tbody></table>')


def report(kind_name: str, title: Any, blocks: Sequence[str], *, notes: Sequence[str] = ()) -> Raw:
    """A whole report: a title line (``title`` may be :class:`Raw`, e.g. with a :func:`verdict`),
    then the blocks (tables) side by side where the width allows, wrapping below otherwise,
    then notes as escaped lines."""
    head = f'<div style="font-weight:600;margin-bottom:2px">{esc(kind_name)}: {esc(title)}</div>'
    body = "".join(f'<div style="flex:0 1 auto;max-width:100%;overflow-x:auto">{b}</div>' for b in blocks if b)
    tail = "".join(f'<div style="font-size:12px;overflow-wrap:anywhere">{esc(n)}</div>' for n in notes if n)
    return Raw(f'<div class="ag-report" style="max-width:100%">{head}'
               f'<div style="display:flex;flex-wrap:wrap;align-items:flex-start">{body}</div>{tail}</div>')


# --------------------------------------------------------------------------------------------
# the figure of one comparison


def _matplotlib_figure() -> Any:
    """matplotlib's Figure class, or ImportError with the one-line :data:`NO_MATPLOTLIB`."""
    try:
        # matplotlib itself first: a matplotlib.figure already loaded does not prove it importable
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(NO_MATPLOTLIB) from None
    return Figure


def require_matplotlib() -> None:
    """Raise ImportError(:data:`NO_MATPLOTLIB`) unless matplotlib can be imported."""
    _matplotlib_figure()


_FIGURE_CLASS: Any = None


def _figure_class() -> Any:
    """A matplotlib Figure that also shows itself in IPython as a PNG (``_repr_png_``): a figure
    made without pyplot is drawn inline even where no pyplot backend registered its formatter.
    Created once, on first use (matplotlib stays optional); ``ascendgrad._display.Figure``
    for pickle."""
    global _FIGURE_CLASS
    base = _matplotlib_figure()  # every time: ImportError whenever matplotlib cannot be imported
    if _FIGURE_CLASS is None:

        def _repr_png_(self: Any) -> bytes:
            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=80)
            return buf.getvalue()

        _FIGURE_CLASS = type("Figure", (base,), {"_repr_png_": _repr_png_, "__module__": __name__,
                                                  "__qualname__": "Figure"})
    return _FIGURE_CLASS


def __getattr__(name: str) -> Any:  # the figure class, for pickle, made on demand
    if name == "Figure":
        return _figure_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def figure(score: Any, name: str, verdict: str, reason: str, standard: str) -> Any:
    """The figure of one comparison, a ``matplotlib.figure.Figure`` (not saved, not shown):
    left, the per-element score (error / the standard's per-element tolerance) over the
    tensor's two largest dims (the others reduced by their maximum), NaN/inf mismatches marked
    with red crosses; right, the histogram of log10(score) against the threshold (score 1).

    ``score``: the per-element scores (e.g. from ``judge.compare_arrays(..., want_score=True)``);
    ``name`` titles the left panel, ``verdict`` and ``reason`` the right one, ``standard``
    names the threshold. Raises ImportError (:data:`NO_MATPLOTLIB`) without matplotlib.
    """
    fig_cls = _figure_class()
    flat = np.asarray(score, dtype=np.float64).reshape(-1)
    s = np.asarray(score, dtype=np.float64)
    if s.size == 0:
        s = np.zeros((1, 1))
    elif s.ndim == 0:
        s = s.reshape(1, 1)
    elif s.ndim == 1:
        s = s.reshape(1, -1)
    else:
        keep = sorted(np.argsort(s.shape, kind="stable")[-2:])
        other = tuple(i for i in range(s.ndim) if i not in keep)
        s = s.max(axis=other) if other else s
    fig = fig_cls(figsize=(11, 4))
    ax1, ax2 = fig.subplots(1, 2)
    shown = np.where(np.isinf(s), np.nan, s)
    im = ax1.imshow(shown, aspect="auto", interpolation="nearest", cmap="viridis")
    bad = np.argwhere(np.isinf(s))
    if bad.size:
        ax1.scatter(bad[:, 1], bad[:, 0], marker="x", color="red", s=20, label="NaN/inf mismatch")
        ax1.legend(loc="upper right", fontsize=7)
    fig.colorbar(im, ax=ax1, label="error / per-element tolerance")
    ax1.set_title(f"{name}: error over dims of the two largest sizes", fontsize=9)
    finite = flat[np.isfinite(flat) & (flat > 0)]
    if finite.size:
        ax2.hist(np.log10(finite), bins=60, color="tab:blue")
    ax2.axvline(0.0, color="red", linestyle="--", label=f"{standard} threshold")
    ax2.set_xlabel("log10(error / per-element tolerance)")
    ax2.set_ylabel("elements")
    ax2.set_title(f"{verdict}: {reason[:70]}" if reason else str(verdict), fontsize=8)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig
