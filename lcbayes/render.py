"""The bottom of the output side: number formats, plain-text, HTML and Markdown tables, the
report stylesheet, figures as embedded PNGs, values made JSON-ready and the versions block.

Reports (:mod:`lcbayes.comparison.report`), diagnostics (:mod:`lcbayes.samplers.diagnostics`),
the command line and the results' ``summary()`` and ``to_dict()`` all use these, so a number
looks the same everywhere and every report names the same versions (:func:`versions`). Figures
are matplotlib :class:`~matplotlib.figure.Figure` objects (no pyplot state), rendered at 100
dpi with no timestamp, so the same figure gives the same bytes.
"""

from __future__ import annotations

import base64
import html
import importlib.metadata
import io
import math
import os
import platform
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._version import __version__

__all__ = ["CSS", "TEXT_WIDTH", "data_uri", "fmt", "fmt_setting", "html_document", "html_figure",
           "html_table", "json_value", "kv_table", "matrix_lines", "md_escape", "md_table",
           "plural", "png", "text_html", "text_table", "versions", "wrap", "write_bytes",
           "write_text"]

#: Columns of plain-text output (tables, flags and notes of the command line).
TEXT_WIDTH = 100

#: The stylesheet of every HTML report.
CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; line-height: 1.45; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.86em; display: block;
        max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
tr.flagged td { background: #fff8e6; } td.flag { background: #ffd9d0 !important; }
td.flags { color: #b00; text-align: left; } .note { color: #555; font-size: 0.9em; }
figure { margin: 1.2em 0; } figcaption { color: #555; font-size: 0.9em; }
img { max-width: 100%; } code { background: #f4f4f4; padding: 0 3px; }
details { margin: 0.6em 0; } pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
"""


def fmt(value, digits: int = 2) -> str:
    """A table cell: floats with ``digits`` decimals, missing and non-finite values empty."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float | np.floating):
        return "" if not math.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def fmt_setting(value) -> str:
    """A setting, threshold or count: integers, and floats with an integer value such as
    ``2e5``, without decimals (``200000``); other floats to six significant digits; ``None``
    as ``none``; lists comma-separated."""
    if value is None:
        return "none"
    if isinstance(value, bool | np.bool_ | str):
        return str(value)
    if isinstance(value, list | tuple):
        return ", ".join(fmt_setting(v) for v in value)
    if isinstance(value, float | np.floating) and math.isfinite(value) and value.is_integer() \
            and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    return str(value)


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """A count with its noun in the right number: ``plural(1, "class", "classes")`` is
    ``"1 class"``, ``plural(3, "class", "classes")`` ``"3 classes"`` (``plural_form`` defaults
    to ``singular + "s"``)."""
    return f"{n} {singular if n == 1 else (plural_form or singular + 's')}"


def json_value(value):
    """NaN, NA and NumPy values to JSON-ready Python values, recursively (non-finite floats and
    missing values become ``None``, arrays lists, mapping keys text)."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_value(v) for v in value.tolist()]
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


def versions() -> dict[str, str]:
    """lcbayes, Python and package versions, the platform and the JAX backend."""
    import jax

    from . import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)

    out = {"lcbayes": __version__, "python": platform.python_version()}
    for name in ("jax", "jaxlib", "numpyro", "arviz", "numpy", "scipy", "pandas", "matplotlib"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            out[name] = "not installed"
    out["platform"] = platform.platform()
    out["jax_backend"] = jax.default_backend()
    return out


# ---------------------------------------------------------------------- plain text
def text_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Aligned plain-text lines: the first column left-aligned, the others right-aligned."""
    body = [list(r) for r in rows]
    widths = [max(len(h), *(len(r[j]) for r in body)) for j, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                         for j, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return [line(head), *(line(r) for r in body)]


def wrap(text: str, indent: str = "", hanging: str | None = None,
         width: int = TEXT_WIDTH) -> list[str]:
    """``text`` as lines of at most ``width`` characters: the first starts with ``indent``, the
    others with ``hanging`` (default: ``indent``); words are never split."""
    return textwrap.wrap(text, width=width, initial_indent=indent,
                         subsequent_indent=indent if hanging is None else hanging,
                         break_long_words=False, break_on_hyphens=False) or [indent.rstrip()]


def matrix_lines(row_names: Sequence[str], col_names: Sequence[str], values, digits: int = 4,
                 errors=None) -> list[str]:
    """A labelled matrix of numbers as aligned text (e.g. a CPT: parent configurations by
    categories); with ``errors`` (same shape), every cell reads ``value (error)``."""
    def cell(v, e) -> str:
        return f"{v:.{digits}f}" if e is None else f"{v:.{digits}f} ({e:.{digits}f})"

    error_rows = errors if errors is not None else [[None] * len(row) for row in values]
    cells = [[cell(v, e) for v, e in zip(row, e_row, strict=True)]
             for row, e_row in zip(values, error_rows, strict=True)]
    width = max(digits + 2, *(len(c) for c in col_names), *(len(c) for r in cells for c in r))
    lead = max(len(r) for r in row_names)
    lines = [" " * lead + "  " + "  ".join(c.rjust(width) for c in col_names)]
    for name, row in zip(row_names, cells, strict=True):
        lines.append(name.ljust(lead) + "  " + "  ".join(c.rjust(width) for c in row))
    return lines


# ---------------------------------------------------------------------- HTML
def html_table(head: Sequence[str], rows: Iterable[Sequence[str]],
               row_classes: Sequence[str] | None = None,
               cell_classes: Sequence[Sequence[str]] | None = None,
               escape: bool = True) -> str:
    """An HTML table; ``rows`` hold text (escaped unless ``escape=False``, for cells that
    already are HTML), with an optional class per row and per cell."""
    rows = [list(r) for r in rows]
    head_html = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = []
    for i, cells in enumerate(rows):
        tds = []
        for j, text in enumerate(cells):
            cls = cell_classes[i][j] if cell_classes is not None else ""
            attr = f' class="{cls}"' if cls else ""
            tds.append(f"<td{attr}>{html.escape(text) if escape else text}</td>")
        cls = row_classes[i] if row_classes is not None else ""
        row_attr = f' class="{cls}"' if cls else ""
        body.append(f"<tr{row_attr}>{''.join(tds)}</tr>")
    return f"<table><thead><tr>{head_html}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def kv_table(items: Mapping, digits: int = 3, cell=None) -> str:
    """A two-column HTML table of ``{key: value}``; values through ``cell`` (default
    :func:`fmt` with ``digits`` decimals, e.g. :func:`fmt_setting` for settings)."""
    cell = cell or (lambda v: fmt(v, digits))
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(cell(v))}</td>"
                   "</tr>" for k, v in items.items())
    return f"<table>{rows}</table>"


def text_html(text: str) -> str:
    """Paragraphs (separated by blank lines) as escaped ``<p>`` elements."""
    return "".join(f"<p>{html.escape(p.strip())}</p>" for p in text.split("\n\n") if p.strip())


def png(fig) -> bytes:
    """A matplotlib figure as PNG bytes (100 dpi, no software or time stamp)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def data_uri(png_bytes: bytes) -> str:
    """A PNG as a ``data:`` URI."""
    return "data:image/png;base64," + base64.b64encode(png_bytes).decode("ascii")


def html_figure(key: str, png_bytes: bytes, caption: str) -> str:
    """A ``<figure>`` with the PNG embedded and its caption."""
    return (f"<figure><img alt='{html.escape(key)}' src=\"{data_uri(png_bytes)}\">"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def html_document(title: str, body: str) -> str:
    """A whole HTML page with the report stylesheet."""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
            "</body></html>")


# ---------------------------------------------------------------------- Markdown
def md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Markdown table lines: the first column left-aligned, the others right-aligned."""
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |",
           "|" + "|".join("---" if j == 0 else "---:" for j in range(len(header))) + "|"]
    out += ["| " + " | ".join(md_escape(v) for v in r) + " |" for r in rows]
    return out


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path``, creating its folder; returns the path. The bytes go to a
    temporary file beside it, renamed over ``path`` once complete, so an interrupted run
    leaves the old file or none, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` as :func:`write_bytes` does; returns the path."""
    return write_bytes(path, text.encode("utf-8"))
