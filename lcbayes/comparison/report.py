"""Reports of a :class:`~lcbayes.comparison.table.ComparisonResult`: plain text, one self-contained
HTML file, Markdown with PNG figures.

The plain text (:func:`text_table`) fits in 100 columns: the essential columns (candidate, K,
d, BIC, the chosen log evidence with its standard error and source, the posterior model
probability, flags as two-letter codes), the other methods' ranked columns that still fit (those
left out are named), and the flags and notes explained underneath; with ``wide=True`` every
score column (``lcbayes compare --wide``).

The HTML report embeds every figure as a base64 PNG (:mod:`.figures`, :mod:`lcbayes.render`)
and holds: a settings block (data name, rows, patterns, candidates, methods, seeds, versions),
the notes (e.g. the best candidate at the edge of the range), a "how to read this" paragraph,
the score table and the evidence table (best value of every score and evidence column in bold,
flagged cells highlighted), the flags explained, the figures (with the chosen model's class
profiles), the candidates' structures and the run's metadata (versions, seeds, settings,
seconds, data; integers printed as integers). Column headings come from the method registry
(:mod:`.registry`). The Markdown report holds the same.

Example::

    comp = lcb.compare(data, n_classes=range(1, 6))
    comp.to_html("reports/survey.html")
    print(comp.to_markdown("reports/survey.md"))   # also writes reports/survey-*.png
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..render import (
    TEXT_WIDTH,
    fmt,
    fmt_setting,
    html_document,
    html_figure,
    html_table,
    kv_table,
    md_table,
    plural,
    text_html,
    wrap,
    write_bytes,
    write_text,
)
from ..render import (
    text_table as aligned_lines,
)
from . import registry
from .applied import applied_table
from .figures import CAPTIONS
from .flags import short_code
from .headline import headline
from .run_block import run_block

if TYPE_CHECKING:
    from .table import ComparisonResult

__all__ = ["HOW_TO_READ", "headings", "markdown", "text_table", "write_html"]

#: Headings of the columns every report has (methods add theirs, :func:`headings`).
BASE_HEADINGS = {
    "name": "model", "n_classes": "K", "n_parameters": "d", "effective_dimension": "d_e",
    "loglik": "loglik", "log_evidence": "ln p(y|m)", "evidence_method": "from",
    "posterior_prob": "p(m|y)", "log_bayes_factor": "ln BF vs best", "flags": "flags",
}

HOW_TO_READ = (
    "Every score is on the natural-log evidence scale, an approximation of ln p(y | m), so "
    "higher is better and differences are log Bayes factors. BIC = loglik - d/2 ln N with d "
    "free parameters and N observed rows (poLCA's BIC is -2 times this); BIC_e uses the "
    "effective dimension d_e; AIC = loglik - d; ICL = BIC minus the entropy of the class "
    "memberships. CS (Cheeseman-Stutz) and VB F are lower bounds on ln p(y | m) that see one "
    "of the S equivalent labellings of the hidden states; the starred columns are these "
    "bounds, the unstarred ones add ln S, the usual large-sample correction. AIS (annealed "
    "importance sampling) estimates ln p(y | m) itself, with a standard error from its chains; "
    "it is biased low when its schedule is too short, which shows as AIS below the VB bound "
    "(flag ais_below_vbem). 'exact' is the exact evidence where the sum is small enough. "
    "ln p(y|m) is the best estimate per row (exact, else AIS, else VB F + ln S; column "
    "'from'), and p(m|y) the posterior probability of each candidate under a uniform prior "
    "over the candidates, with a 95% interval from the AIS standard errors (exact and VB "
    "values are held fixed: the VB gap to the evidence is not quantified). In every score "
    "and evidence column that scores every candidate the best value is in bold; flagged cells "
    "are highlighted."
)
#: The columns of the narrow plain-text table (those present), in order.
NARROW = ("name", "n_classes", "n_parameters", "bic", "log_evidence", "log_evidence_stderr",
          "evidence_method", "posterior_prob", "flags")
NARROW_HEADINGS = {"log_evidence_stderr": "s.e.", "posterior_prob": "p(m|y) [95%]"}


def headings() -> dict[str, str]:
    """``{column: heading}`` of every column a report can show."""
    out = dict(BASE_HEADINGS)
    for m in registry.methods():
        out.update({c.name: c.heading for c in m.columns})
    return out


# ---------------------------------------------------------------------- cells
def _score_columns(comp: ComparisonResult) -> list[str]:
    frame = comp.to_frame()
    hidden = {c.name for m in registry.methods() for c in m.columns if not c.in_report}
    cols = ["name", "n_classes", "n_parameters", "effective_dimension"]
    if "loglik" in frame:
        cols.append("loglik")
    cols += [c for c in comp.score_columns if c not in hidden]
    if frame["n_classes"].isna().all():
        cols.remove("n_classes")
    return cols


def _evidence_columns() -> list[str]:
    return ["name", "log_evidence", "evidence_method", "posterior_prob", "log_bayes_factor",
            "flags"]


def _best(frame: pd.DataFrame, column: str) -> float:
    """The column's best value, or NaN unless every candidate has one (as for the ranks)."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return np.max(values) if np.isfinite(values).all() else np.nan


def _is_best(comp: ComparisonResult, frame: pd.DataFrame, i: int, column: str) -> bool:
    """Whether row ``i`` holds the best (highest) value of a score or evidence column: every
    ranked or evidence method's columns (the one-labelling bounds CS* and VB F* too), the log
    evidence and the posterior probability; never a test's p-value or a descriptive column."""
    scored = column in comp.compared_columns or column in ("log_evidence", "posterior_prob")
    return scored and bool(np.isclose(frame.iloc[i][column], _best(frame, column)))


def _cell(frame: pd.DataFrame, i: int, column: str, narrow: bool = False) -> str:
    """The text of one cell; the narrow table gives the chosen evidence's standard error a
    column of its own (and AIS's none) and flags as codes."""
    row = frame.iloc[i]
    if narrow and column in ("ais", "log_evidence"):
        return fmt(row[column])
    if narrow and column == "log_evidence_stderr":
        return fmt(row[column]) if row[column] > 0 else ""
    if narrow and column == "flags":
        return ",".join(short_code(f) for f in row["flags"].split(",") if f)
    if column == "ais" and np.isfinite(row["ais"]):
        return f"{row['ais']:.2f} ± {fmt(row['ais_stderr'])} (ESS {fmt(row['ais_ess'], 1)})"
    if column == "posterior_prob" and np.isfinite(row["posterior_prob"]):
        return (f"{row['posterior_prob']:.3f} [{row['posterior_low']:.3f}, "
                f"{row['posterior_high']:.3f}]")
    if column == "log_evidence" and np.isfinite(row["log_evidence"]) and np.isfinite(
            row["log_evidence_stderr"]) and row["log_evidence_stderr"] > 0:
        return f"{row['log_evidence']:.2f} ± {row['log_evidence_stderr']:.2f}"
    return fmt(row[column])


def _cells(comp: ComparisonResult, frame: pd.DataFrame, cols: list[str], mark,
           narrow: bool = False) -> list[list[str]]:
    """Text cells, the best value of each score and evidence column passed through ``mark``."""
    rows = []
    for i in range(len(frame)):
        cells = []
        for c in cols:
            text = _cell(frame, i, c, narrow)
            cells.append(mark(text) if text and _is_best(comp, frame, i, c) else text)
        rows.append(cells)
    return rows


def _star(text: str) -> str:
    """The plain-text best-value mark: ``*`` after the value (before any ``±`` or interval)."""
    for tail in (" ±", " ["):
        if tail in text:
            return text.replace(tail, "*" + tail, 1)
    return text + "*"


# ---------------------------------------------------------------------- plain text
def text_table(comp: ComparisonResult, wide: bool = False) -> str:
    """The comparison as aligned plain text: the essential columns in at most 100 characters
    a line, or with ``wide`` every score column (best per column marked ``*``), then the
    flags and the notes explained."""
    frame = comp.to_frame()
    d = comp.data
    lines = wrap(f"Model comparison on {plural(d.n_rows, 'row')} x "
                 f"{plural(d.n_columns, 'column')} ({plural(d.n_patterns, 'distinct pattern')})"
                 "; natural-log evidence scale, higher is better; * marks the best value per "
                 "column" + ("" if wide else "; every column: --wide (summary(wide=True))"))
    if wide:
        tables = [_aligned(comp, frame, _score_columns(comp)),
                  _aligned(comp, frame, _evidence_columns())]
    else:
        table, left_out = _narrow_table(comp, frame)
        tables = [table + (wrap(f"Left out for width: {', '.join(left_out)} (--wide shows "
                                "them)") if left_out else [])]
    for table in tables:
        lines += ["", *table]
    items = _flag_items(frame, codes=not wide)
    lines += ["", "Flags: none" if not items else "Flags:"]
    for item in items:
        lines += wrap(item, "  ", "      ")
    lines += ["", *wrap(headline(comp))]
    for note in comp.notes():
        lines += wrap(f"Note: {note}")
    if comp.covariate_effects is not None:
        lines += ["", comp.covariate_effects.text()]
    return "\n".join(line.rstrip() for line in lines)


def _aligned(comp: ComparisonResult, frame: pd.DataFrame, cols: list[str],
             narrow: bool = False) -> list[str]:
    """The aligned lines of a table of ``cols`` (best values marked ``*``)."""
    heads = {**headings(), **(NARROW_HEADINGS if narrow else {})}
    return aligned_lines([heads.get(c, c) for c in cols],
                         _cells(comp, frame, cols, _star, narrow=narrow))


def _narrow_table(comp: ComparisonResult, frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The narrow table's lines: the :data:`NARROW` columns and, before the log evidence, as
    many of the other methods' columns as keep every line within
    :data:`~lcbayes.render.TEXT_WIDTH`, and the headings of those left out (so every method
    asked for is shown or named). Log evidence estimates are tried before scores, scores before
    the columns of unranked methods (tests' p-values, entropy), those that mostly repeat the
    chosen ``ln p(y|m)`` last; the columns shown keep the methods' order."""
    base = [c for c in NARROW if c in frame and not (c == "n_classes"
                                                     and frame[c].isna().all())]
    at = base.index("log_evidence")
    described = [c.name for name in comp.methods if not (m := registry.method(name)).ranked
                 for c in m.columns if c.in_report]          # tests' p-values, entropy, ...
    order = [c for c in [*comp.ranked_columns.values(), *described] if c not in base]
    estimates = {m.ranked for m in registry.methods() if m.evidence}

    def repeats(c: str) -> float:
        values = frame[c].to_numpy(dtype=float)
        same = np.isclose(values, frame["log_evidence"].to_numpy(dtype=float))
        return same.sum() / max(np.isfinite(values).sum(), 1)

    shown: list[str] = []
    left_out = []
    for c in sorted(order, key=lambda c: (c not in estimates, c in described, repeats(c))):
        cols = [*base[:at], *(e for e in order if e in shown or e == c), *base[at:]]
        if max(map(len, _aligned(comp, frame, cols, narrow=True))) <= TEXT_WIDTH:
            shown.append(c)
        else:
            left_out.append(headings().get(c, c))
    cols = [*base[:at], *(e for e in order if e in shown), *base[at:]]
    return _aligned(comp, frame, cols, narrow=True), left_out


def _present_flags(frame: pd.DataFrame) -> list[str]:
    return sorted({f for flags in frame["flags"] for f in flags.split(",") if f})


def _flag_items(frame: pd.DataFrame, codes: bool = False) -> list[str]:
    """One entry per flag raised (its description, after its code with ``codes``) and per
    flagged candidate (why); empty when no flag is raised."""
    items = [(f"{short_code(f)} = " if codes else "") + f"{f}: {registry.flag(f).description}"
             for f in _present_flags(frame)]
    return items + [f"{name}: {note}" for name, note in zip(frame["name"], frame["flag_notes"],
                                                           strict=True) if note]


# ---------------------------------------------------------------------- HTML
def _html_table(comp: ComparisonResult, frame: pd.DataFrame, cols: list[str]) -> str:
    names = headings()
    body = [[html.escape(t) for t in row]
            for row in _cells(comp, frame, cols, lambda t: f"\x00{t}\x01")]
    body = [[t.replace("\x00", "<b>").replace("\x01", "</b>") for t in row] for row in body]
    row_classes, cell_classes = [], []
    for i in range(len(frame)):
        raised = [f for f in frame.iloc[i]["flags"].split(",") if f]
        marked = {c for f in raised for c in registry.flag(f).cells}
        row_classes.append("flagged" if raised else "")
        cell_classes.append([" ".join((["flag"] if c in marked else [])
                                      + (["flags"] if c == "flags" else [])) for c in cols])
    return html_table([names.get(c, c) for c in cols], body, row_classes, cell_classes,
                      escape=False)


def _plain_table(frame: pd.DataFrame) -> str:
    return html_table([str(c) for c in frame.columns],
                      [[fmt(v, 3) for v in row] for row in frame.itertuples(index=False)])


def _flags_html(frame: pd.DataFrame) -> str:
    if not frame["flag_notes"].astype(bool).any():
        return "<p class='note'>No flags.</p>"
    items = "".join(f"<li><code>{f}</code>: {html.escape(registry.flag(f).description)}</li>"
                    for f in _present_flags(frame))
    rows = "".join(f"<li><b>{html.escape(n)}</b>: {html.escape(note)}</li>"
                   for n, note in zip(frame["name"], frame["flag_notes"], strict=True) if note)
    return f"<h3>Flags</h3><ul>{items}</ul><ul>{rows}</ul>"


def write_html(comp: ComparisonResult, path: str | Path, title: str | None = None,
               sections: Mapping[str, str | pd.DataFrame] | None = None,
               data_name: str | None = None) -> Path:
    """Write the self-contained HTML report to ``path``; returns the path.

    ``sections`` adds ``{heading: text or DataFrame}`` after the introduction (e.g. the true
    parameters of simulated data); ``data_name`` names the data in the settings block."""
    frame = comp.to_frame()
    title = title or f"lcbayes model comparison: {', '.join(comp.names)}"
    parts = [f"<h1>{html.escape(title)}</h1>", f"<p><b>{html.escape(headline(comp))}</b></p>"]
    parts += [f"<p class='note'><b>Note</b>: {html.escape(n)}</p>" for n in comp.notes()]
    parts += ["<h2>Settings</h2>", kv_table(comp.settings_block(data_name=data_name), cell=str),
              "<h2>How to read this</h2>", f"<p>{html.escape(HOW_TO_READ)}</p>"]
    for heading, content in (sections or {}).items():
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(_plain_table(content) if isinstance(content, pd.DataFrame)
                     else text_html(content))
    applied = applied_table(comp)
    if applied is not None:
        parts += ["<h2>As applied papers report it</h2>",
                  "<p>Information criteria on the deviance scale (-2 x the scores above, lower "
                  "is better), classification quality and the likelihood-ratio tests of K-1 "
                  "against K classes (a small p-value favours K).</p>", applied]
    parts += ["<h2>Scores</h2>", _html_table(comp, frame, _score_columns(comp)),
              "<h2>Evidence and posterior model probabilities</h2>",
              _html_table(comp, frame, _evidence_columns()), _flags_html(frame)]
    effects = comp.covariate_effects
    if effects is not None:
        parts += ["<h2>Covariates and distal outcome</h2>", text_html(effects.text()),
                  *(f"<h3>LC({f.coef.shape[1]}): coefficients</h3>"
                    + _plain_table(f.coefficients()) for f in effects.fits
                    if f.coef.shape[1] > 1 and effects.covariates.columns)]
    notes = {n: note for n, note in zip(comp.names, comp.exact_notes, strict=True) if note}
    if notes and comp.settings.get("exact") is not False:
        parts.append("<p class='note'>No exact evidence for " + "; ".join(
            f"{html.escape(n)} ({html.escape(v)})" for n, v in notes.items()) + ".</p>")
    parts.append("<h2>Figures</h2>")
    parts += [html_figure(key, data, CAPTIONS[key]) for key, data in comp.figure_pngs().items()]
    parts.append("<h2>Candidates</h2>")
    for name, s in zip(comp.names, comp.structures, strict=True):
        parts.append(f"<details><summary>{html.escape(name)} ({s.kind}, d = "
                     f"{s.n_parameters})</summary><pre>{html.escape(s.describe())}</pre>"
                     "</details>")
    parts.append("<h2>Run</h2>")
    for heading, items in run_block(comp).items():
        parts.append(f"<h3>{html.escape(heading)}</h3>{kv_table(items, cell=fmt_setting)}")
    return write_text(path, html_document(title, "\n".join(parts)))


# ---------------------------------------------------------------------- Markdown
def markdown(comp: ComparisonResult, path: str | Path | None = None, title: str | None = None,
             sections: Mapping[str, str | pd.DataFrame] | None = None,
             data_name: str | None = None) -> str:
    """The report as Markdown (settings, tables, flags, metadata). With ``path`` it is
    written there and the figures are saved beside it as ``<stem>-<figure>.png`` and linked."""
    frame = comp.to_frame()
    names = headings()
    title = title or f"lcbayes model comparison: {', '.join(comp.names)}"
    lines = [f"# {title}", "", f"**{headline(comp)}**", ""]
    lines += [line for n in comp.notes() for line in (f"> **Note**: {n}", "")]
    lines += ["## Settings", "",
              *md_table(["setting", "value"],
                        list(comp.settings_block(data_name=data_name).items())),
              "", "## How to read this", "", HOW_TO_READ, ""]
    for heading, content in (sections or {}).items():
        lines += [f"## {heading}", ""]
        if isinstance(content, pd.DataFrame):
            lines += md_table([str(c) for c in content.columns],
                              [[fmt(v, 3) for v in row]
                               for row in content.itertuples(index=False)])
        else:
            lines.append(content.strip())
        lines.append("")
    for heading, cols in (("Scores", _score_columns(comp)),
                          ("Evidence and posterior model probabilities", _evidence_columns())):
        lines += [f"## {heading}", "",
                  *md_table([names.get(c, c) for c in cols],
                            _cells(comp, frame, cols, lambda t: f"**{t}**")), ""]
    items = _flag_items(frame)
    lines += ["## Flags", "", *([f"* {item}" for item in items] or ["None."]), ""]
    if comp.covariate_effects is not None:
        lines += ["## Covariates and distal outcome", "", "```",
                  comp.covariate_effects.text(), "```", ""]
    if path is not None:
        path = Path(path)
        lines += ["## Figures", ""]
        for key, data in comp.figure_pngs().items():
            image = write_bytes(path.with_name(f"{path.stem}-{key.replace('_', '-')}.png"),
                                data)
            lines += [f"![{key}]({image.name})", "", f"*{CAPTIONS[key]}*", ""]
    lines += ["## Run", ""]
    for heading, entries in run_block(comp).items():
        lines += [f"**{heading}**: " + "; ".join(f"{k} = {fmt_setting(v)}"
                                                 for k, v in entries.items()), ""]
    text = "\n".join(lines)
    if path is not None:
        write_text(path, text)
    return text
