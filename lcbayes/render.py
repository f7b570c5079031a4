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
import inspect
import io
import math
import os
import platform
import sys
import textwrap
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._version import __version__

__all__ = ["CSS", "TEXT_WIDTH", "JSONRecord", "data_uri", "fmt", "fmt_count", "fmt_setting",
           "fmt_stat", "from_json",
           "html_document", "html_figure", "html_table", "json_value", "kv_table",
           "matrix_lines", "md_escape", "md_table", "plural", "png", "record_dict", "record_frame",
           "record_from_dict", "text_html", "text_table", "versions", "wrap", "write_bytes",
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


def fmt_count(value: int) -> str:
    """A count as digits, or (from 10^12 on, the cells of a wide table) to four significant
    digits: ``2.037e+90``, not 91 digits."""
    return str(int(value)) if abs(value) < 10**12 else f"{float(value):.4g}"


def fmt_stat(value: float, decimals: int = 4) -> str:
    """A statistic with ``decimals`` decimals, or (from 10^8 on, where that would print more
    than 12 significant digits) to six significant digits."""
    return f"{value:.{decimals}f}" if not abs(value) >= 1e8 else f"{value:.6g}"


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
            and abs(float(value)) < 1e15:
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


# ---------------------------------------------------------------------- result records
def record_dict(record, **tags) -> dict:
    """The fields of the dataclass ``record`` after ``tags`` (e.g. ``method="blrt"``) as
    JSON-ready values (:func:`json_value`; a nested result or structure as its ``to_dict()``);
    :func:`record_from_dict` reads them back."""
    def plain(value):
        return value.to_dict() if hasattr(value, "to_dict") else value

    return json_value({**tags, **{f.name: plain(getattr(record, f.name))
                                  for f in fields(record)}})


def record_from_dict(cls, spec: Mapping, **given):
    """The dataclass ``cls`` of :func:`record_dict` (e.g. after a JSON round trip): every
    field read back by its annotation (:func:`from_json`), except those ``given`` as they are;
    a field missing from ``spec`` takes its default, keys of ``spec`` that are no field (the
    tags) are left out."""
    values = dict(given)
    for f in fields(cls):
        if f.init and f.name not in values and f.name in spec:
            values[f.name] = from_json(_field_type(cls, f.name), spec[f.name])
    return cls(**values)


def record_frame(record) -> pd.DataFrame:
    """One row: the fields of the dataclass ``record`` that hold one number, flag or text."""
    scalar = (bool, int, float, str, np.bool_, np.integer, np.floating, type(None))
    return pd.DataFrame([{f.name: getattr(record, f.name) for f in fields(record)
                          if isinstance(getattr(record, f.name), scalar)}])


class JSONRecord:
    """``to_dict`` / ``from_dict`` / ``to_frame`` of a frozen dataclass result whose fields are
    numbers, text, arrays and tuples (:func:`record_dict`, :func:`record_from_dict`,
    :func:`record_frame`); a result overrides what it shows otherwise."""

    def to_dict(self) -> dict:
        """Every field as JSON-ready values (arrays as lists, NaN as ``None``);
        :meth:`from_dict` reads it back."""
        return record_dict(self)

    @classmethod
    def from_dict(cls, spec: Mapping) -> typing.Self:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip): the same numbers."""
        return record_from_dict(cls, spec)

    def to_frame(self) -> pd.DataFrame:
        """One row: the fields that hold one number, flag or text."""
        return record_frame(self)


def _field_type(cls, name: str):
    """The annotation of field ``name`` of ``cls``, evaluated where it was written."""
    for base in cls.__mro__:
        annotation = inspect.get_annotations(base).get(name)
        if annotation is not None:
            if isinstance(annotation, str):  # postponed (from __future__ import annotations)
                annotation = eval(annotation, vars(sys.modules[base.__module__]))
            return annotation
    return Any


def _member(members: Sequence, value):
    """The member of a union annotation that the JSON ``value`` was written from."""
    def shape(tp):
        origin = typing.get_origin(tp) or tp
        if origin in (tuple, list) or tp is np.ndarray:
            return list
        if origin is dict or hasattr(tp, "from_dict"):
            return dict
        return tp

    kind = {bool: bool, int: int, float: float, str: str, list: list, dict: dict}.get(
        type(value))
    candidates = [kind] + ([float] if kind is int else [])
    return next((m for want in candidates for m in members if shape(m) is want), members[0])


def from_json(tp, value):
    """A JSON ``value`` (:func:`json_value`) back as the annotation ``tp`` says: ``None`` as
    NaN where a float is due, lists as arrays (NaN for ``None``) or tuples, mapping keys as
    integers where annotated so, a nested result or structure by its ``from_dict``; an
    annotation it does not know keeps ``value`` as it is."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if value is None:
            return None if len(members) < len(args) else from_json(members[0], None)
        return from_json(_member(members, value), value)
    if tp is float:
        return math.nan if value is None else float(value)
    if tp in (int, bool, str):
        return tp(value)
    if tp is np.ndarray:
        array = np.asarray(value)
        return np.asarray(value, dtype=np.float64) if array.dtype == object else array
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_json(args[0], v) for v in value)
        return tuple(from_json(a, v) for a, v in zip(args, value, strict=True))
    if origin is dict and args:
        return {from_json(args[0], k): from_json(args[1], v) for k, v in value.items()}
    if isinstance(tp, type) and hasattr(tp, "from_dict") and value is not None:
        return tp.from_dict(value)
    if isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields"):
        hints = {name: _field_type(tp, name) for name in tp._fields}  # a NamedTuple
        return tp(**{name: from_json(hints[name], value[name]) for name in tp._fields})
    if origin in (tuple, list) or tp in (tuple, list):
        return (origin or tp)(value)
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
