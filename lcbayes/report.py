"""Reports of a :class:`~lcbayes.compare.Comparison`: plain text, one self-contained HTML file,
Markdown with PNG figures.

The HTML report embeds every figure as a base64 PNG (matplotlib's Agg renderer, no pyplot
state, no external assets) and holds: a "how to read this" paragraph, the score table and the
evidence table (best value per column in bold, flagged cells highlighted), the flags explained,
score against number of parameters per method, posterior model probabilities with their
intervals, AIS diagnostics (running log weights against temperature per candidate, acceptance
rate per schedule quarter) and the run's metadata (versions, seeds, settings, seconds, data).

Example::

    comp = lcb.compare(data, classes=range(1, 6))
    comp.to_html("reports/survey.html")
    print(comp.to_markdown("reports/survey.md"))   # also writes reports/survey-*.png
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from scipy.special import logsumexp

from .compare import FLAGS, RANKED_COLUMNS

if TYPE_CHECKING:
    from .compare import Comparison

__all__ = ["figure_pngs", "figures", "markdown", "text_table", "write_html"]

#: Column headings of the score table (the value of a ranked column is in bold where best).
HEADINGS = {
    "name": "model", "n_classes": "K", "n_parameters": "d", "effective_dimension": "d_e",
    "loglik": "loglik", "bic": "BIC", "bic_e": "BIC_e", "aic": "AIC", "icl": "ICL",
    "cs": "CS*", "cs_corrected": "CS", "bicp": "BICp*", "bicp_corrected": "BICp",
    "elbo": "VB F*", "elbo_corrected": "VB F + ln S", "ais": "AIS", "exact": "exact",
    "log_evidence": "ln p(y|m)", "evidence_method": "from", "posterior_prob": "p(m|y)",
    "log_bayes_factor": "ln BF vs best", "flags": "flags",
}

#: Which cells a flag highlights.
FLAG_CELLS = {
    "ais_below_vbem": ("ais", "elbo"), "ais_off_exact": ("ais", "exact"),
    "not_converged": ("loglik", "elbo"), "em_local_optimum": ("loglik",),
    "bic_singular": ("bic", "bic_e"),
}

#: Plot style per score column: label, colour, marker.
STYLES = {
    "bic": ("BIC", "tab:blue", "o"), "bic_e": ("BIC_e", "tab:cyan", "v"),
    "aic": ("AIC", "tab:gray", "s"), "icl": ("ICL", "tab:olive", "D"),
    "cs_corrected": ("CS + ln S", "tab:orange", "^"),
    "bicp_corrected": ("BICp + ln S", "tab:brown", "<"),
    "elbo_corrected": ("VB F + ln S", "tab:green", "P"), "ais": ("AIS", "tab:red", "X"),
    "exact": ("exact", "black", "*"),
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
    "column that scores every candidate the best value is in bold; flagged cells are "
    "highlighted."
)


# ---------------------------------------------------------------------- formatting
def _fmt(value, digits: int = 2) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float | np.floating):
        return "" if not math.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def _score_columns(comp: Comparison) -> list[str]:
    frame = comp.to_frame()
    cols = ["name", "n_classes", "n_parameters", "effective_dimension"]
    if "loglik" in frame:
        cols.append("loglik")
    cols += [c for c in comp.score_columns if c not in ("ais_stderr", "ais_ess")]
    if frame["n_classes"].isna().all():
        cols.remove("n_classes")
    return cols


def _ranked(column: str) -> bool:
    return column in RANKED_COLUMNS.values()


def _best(frame: pd.DataFrame, column: str) -> float:
    """The column's best value, or NaN unless every candidate has one (as for the ranks)."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return np.max(values) if np.isfinite(values).all() else np.nan


def _cell(frame: pd.DataFrame, i: int, column: str) -> str:
    row = frame.iloc[i]
    if column == "ais" and np.isfinite(row["ais"]):
        return (f"{row['ais']:.2f} ± {_fmt(row['ais_stderr'])} "
                f"(ESS {_fmt(row['ais_ess'], 1)})")
    if column == "posterior_prob" and np.isfinite(row["posterior_prob"]):
        return (f"{row['posterior_prob']:.3f} [{row['posterior_low']:.3f}, "
                f"{row['posterior_high']:.3f}]")
    if column == "log_evidence" and np.isfinite(row["log_evidence"]) and np.isfinite(
            row["log_evidence_stderr"]) and row["log_evidence_stderr"] > 0:
        return f"{row['log_evidence']:.2f} ± {row['log_evidence_stderr']:.2f}"
    return _fmt(row[column])


def _evidence_columns() -> list[str]:
    return ["name", "log_evidence", "evidence_method", "posterior_prob", "log_bayes_factor",
            "flags"]


# ---------------------------------------------------------------------- plain text
def text_table(comp: Comparison) -> str:
    """The comparison as aligned plain text: scores (best per column marked ``*``), the
    evidence table, and the flags explained."""
    frame = comp.to_frame()
    lines = [f"Model comparison on {comp.data.n_rows} rows x {comp.data.n_columns} columns "
             f"({comp.data.n_patterns} patterns); natural-log evidence scale, higher is "
             "better; * marks the best value per column"]
    for cols in (_score_columns(comp), _evidence_columns()):
        head = [HEADINGS.get(c, c) for c in cols]
        body = []
        for i in range(len(frame)):
            cells = []
            for c in cols:
                text = _cell(frame, i, c)
                if _ranked(c) and c not in ("ais",) and text and np.isclose(
                        frame.iloc[i][c], _best(frame, c)):
                    text += "*"
                elif c == "ais" and text and np.isclose(frame.iloc[i][c], _best(frame, c)):
                    text = text.replace(" ±", "* ±", 1)
                cells.append(text)
            body.append(cells)
        widths = [max(len(h), *(len(r[j]) for r in body)) for j, h in enumerate(head)]
        lines.append("")
        lines.append("  ".join(h.ljust(w) if j == 0 else h.rjust(w)
                               for j, (h, w) in enumerate(zip(head, widths, strict=True))))
        for r in body:
            lines.append("  ".join(v.ljust(w) if j == 0 else v.rjust(w)
                                   for j, (v, w) in enumerate(zip(r, widths, strict=True))))
    lines += _flag_lines(frame)
    best = comp.best
    if best is not None:
        lines += ["", f"Highest log evidence: {best}"]
    return "\n".join(lines)


def _flag_lines(frame: pd.DataFrame) -> list[str]:
    notes = [(n, f) for n, f in zip(frame["name"], frame["flag_notes"], strict=True) if f]
    if not notes:
        return ["", "Flags: none"]
    present = sorted({f for flags in frame["flags"] for f in flags.split(",") if f})
    lines = ["", "Flags:"]
    lines += [f"  {f}: {FLAGS[f]}" for f in present]
    lines += [f"  {name}: {note}" for name, note in notes]
    return lines


# ---------------------------------------------------------------------- figures
def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def _scores_figure(comp: Comparison, frame: pd.DataFrame) -> Figure:
    cols = [c for c in STYLES if c in frame and np.isfinite(frame[c].astype(float)).any()]
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax_abs, ax_rel = fig.subplots(1, 2)
    order = np.argsort(frame["n_parameters"].to_numpy(), kind="stable")
    x = frame["n_parameters"].to_numpy()[order]
    for c in cols:
        label, colour, marker = STYLES[c]
        y = frame[c].to_numpy(dtype=float)[order]
        panels = [(ax_abs, y)]
        if np.isfinite(y).sum() >= 2:  # a preference needs two values
            panels.append((ax_rel, y - np.nanmax(y)))
        for ax, values in panels:
            if c == "ais":
                err = 2 * frame["ais_stderr"].to_numpy(dtype=float)[order]
                ax.errorbar(x, values, yerr=err, color=colour, marker=marker, label=label,
                            capsize=3, lw=1.2)
            else:
                ax.plot(x, values, color=colour, marker=marker, label=label, lw=1.2,
                        ls=":" if c == "exact" else "-", ms=9 if c == "exact" else 6)
    names = frame["name"].to_numpy()[order]
    for ax in (ax_abs, ax_rel):
        ax.set_xlabel("number of free parameters d")
        ax.set_xticks(x, [f"{n}\nd={d}" for n, d in zip(names, x, strict=True)], fontsize=8)
        ax.grid(alpha=0.3)
    ax_abs.set_ylabel("score (ln evidence scale)")
    ax_abs.set_title("scores by candidate")
    ax_rel.set_ylabel("score - best score of the method")
    ax_rel.set_title("each method's preference (0 = its choice)")
    ax_rel.set_ylim(bottom=max(ax_rel.get_ylim()[0], -60.0), top=5.0)
    ax_abs.legend(fontsize=8, ncols=2)
    return fig


def _posterior_figure(frame: pd.DataFrame) -> Figure:
    fig = Figure(figsize=(max(4.5, 1.1 * len(frame) + 2), 3.6), layout="constrained")
    ax = fig.subplots()
    prob = frame["posterior_prob"].to_numpy(dtype=float)
    x = np.arange(len(frame))
    colours = {"exact": "black", "ais": "tab:red", "vbem": "tab:green", "none": "white"}
    ok = np.isfinite(prob)
    low = frame["posterior_low"].to_numpy(dtype=float)
    high = frame["posterior_high"].to_numpy(dtype=float)
    ax.bar(x[ok], prob[ok], color=[colours[m] for m in frame["evidence_method"][ok]],
           alpha=0.75, edgecolor="black")
    ax.errorbar(x[ok], prob[ok], yerr=[prob[ok] - low[ok], high[ok] - prob[ok]], fmt="none",
                ecolor="0.2", capsize=5, lw=1.5)
    for xi, p in zip(x[ok], prob[ok], strict=True):
        ax.text(xi, min(p + 0.03, 0.97), f"{p:.3f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, frame["name"], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("p(m | y), uniform prior")
    used = [m for m in ("exact", "ais", "vbem") if (frame["evidence_method"] == m).any()]
    handles = [Patch(facecolor=colours[m], alpha=0.75, edgecolor="black") for m in used]
    ax.legend(handles, [f"from {m}" for m in used], fontsize=8, loc="upper left")
    ax.set_title("posterior model probabilities, 95% intervals", fontsize=10)
    return fig


def _ais_figure(comp: Comparison, frame: pd.DataFrame) -> Figure:
    runs = [(i, r) for i, r in enumerate(comp.ais) if r is not None]
    ncol = min(len(runs), 5)
    nrow = math.ceil(len(runs) / ncol)
    fig = Figure(figsize=(3.2 * ncol, 5.6 * nrow), layout="constrained")
    axes = np.asarray(fig.subplots(2 * nrow, ncol, squeeze=False))
    for slot in range(nrow * ncol):
        top, bottom = axes[2 * (slot // ncol), slot % ncol], axes[2 * (slot // ncol) + 1,
                                                                   slot % ncol]
        if slot >= len(runs):
            top.set_visible(False)
            bottom.set_visible(False)
            continue
        i, run = runs[slot]
        row = frame.iloc[i]
        tau = np.asarray(run.trace_temperatures)
        trace = np.asarray(run.trace)
        running = logsumexp(trace, axis=0) - math.log(trace.shape[0])
        # subtract tau * loglik: at tau = 1 the curves show ln p(y|m) - loglik (Occam factor)
        peak = row["loglik"] if "loglik" in frame and np.isfinite(row["loglik"]) \
            else float(np.max(trace[:, -1]))
        for chain in trace:
            top.plot(tau, chain - tau * peak, color="tab:red", alpha=0.35, lw=0.8)
            bottom.plot(tau, chain - running, color="tab:red", alpha=0.35, lw=0.8)
        top.plot(tau, running - tau * peak, color="black", lw=1.2, label="ln mean w")
        if "elbo" in frame and np.isfinite(row["elbo"]):
            top.axhline(row["elbo"] - peak, color="tab:green", ls="--", lw=1, label="VB F*")
        if np.isfinite(row.get("exact", np.nan)):
            top.axhline(row["exact"] - peak, color="black", ls=":", lw=1, label="exact")
        for ax in (top, bottom):
            ax.set_xscale("log")
        top.set_title(f"{row['name']}: {run.log_evidence:.2f} ± {_fmt(run.stderr)}\n"
                      f"ESS {run.ess:.1f} of {run.chains}", fontsize=9)
        top.set_ylabel("running ln w_c - tau loglik", fontsize=8)
        bottom.set_ylabel("ln w_c - ln mean w", fontsize=8)
        bottom.set_xlabel("temperature tau", fontsize=8)
        top.legend(fontsize=7, loc="lower left")
        for ax in (top, bottom):
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    fig.suptitle("AIS: running log weight of every chain against the temperature (top: minus "
                 "tau x loglik, with the VB bound; bottom: about the running estimate)",
                 fontsize=9)
    return fig


def _acceptance_figure(comp: Comparison, frame: pd.DataFrame) -> Figure:
    runs = [(i, r) for i, r in enumerate(comp.ais) if r is not None]
    fig = Figure(figsize=(max(4.5, 1.3 * len(runs) + 2), 3.2), layout="constrained")
    ax = fig.subplots()
    quarters = max(len(r.acceptance) for _, r in runs)
    width = 0.8 / quarters
    for q in range(quarters):
        values = [r.acceptance[q] if q < len(r.acceptance) else np.nan for _, r in runs]
        ax.bar(np.arange(len(runs)) + (q - (quarters - 1) / 2) * width, values, width,
               label=f"quarter {q + 1}", color=f"C{q}")
    ax.set_xticks(np.arange(len(runs)), [frame.iloc[i]["name"] for i, _ in runs], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("MH acceptance rate")
    ax.set_title("AIS acceptance per quarter of the schedule (prior to posterior)", fontsize=9)
    ax.legend(fontsize=7, ncols=4)
    return fig


def figures(comp: Comparison) -> dict[str, Figure]:
    """The report's figures: ``scores``, ``posterior`` and, when AIS ran, ``ais_traces`` and
    ``ais_acceptance`` (matplotlib :class:`~matplotlib.figure.Figure` objects, no pyplot)."""
    frame = comp.to_frame()
    out = {"scores": _scores_figure(comp, frame)}
    if np.isfinite(frame["posterior_prob"].astype(float)).any():
        out["posterior"] = _posterior_figure(frame)
    if any(r is not None for r in comp.ais):
        out["ais_traces"] = _ais_figure(comp, frame)
        out["ais_acceptance"] = _acceptance_figure(comp, frame)
    return out


def figure_pngs(comp: Comparison) -> dict[str, bytes]:
    """:func:`figures` rendered as PNG bytes (100 dpi)."""
    return {key: _png(fig) for key, fig in figures(comp).items()}


CAPTIONS = {
    "scores": "Every score against the number of free parameters (left) and relative to "
              "each method's best candidate (right; AIS error bars are 2 standard errors).",
    "posterior": "Posterior model probabilities under a uniform prior over the candidates, "
                 "with 95% intervals propagating the AIS standard errors.",
    "ais_traces": "AIS diagnostics: every chain's running log weight ln w_c against the "
                  "temperature tau. Top: minus tau times the EM log-likelihood, so at tau = 1 "
                  "the curves end at ln p(y|m) - loglik, on the scale of the VB bound F* "
                  "(dashed) and the exact evidence (dotted); an estimate below F* is "
                  "unreliable. Bottom: each chain about the running estimate; their spread "
                  "at tau = 1 is what the standard error and ESS summarise.",
    "ais_acceptance": "Metropolis-Hastings acceptance rate in each quarter of the annealing "
                      "schedule (Beal & Ghahramani Fig. 6c).",
}


# ---------------------------------------------------------------------- HTML
_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; line-height: 1.45; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.86em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
tr.flagged td { background: #fff8e6; } td.flag { background: #ffd9d0 !important; }
td.flags { color: #b00; text-align: left; } .note { color: #555; font-size: 0.9em; }
figure { margin: 1.2em 0; } figcaption { color: #555; font-size: 0.9em; }
img { max-width: 100%; } code { background: #f4f4f4; padding: 0 3px; }
details { margin: 0.6em 0; } pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
"""


def _html_table(comp: Comparison, frame: pd.DataFrame, cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(HEADINGS.get(c, c))}</th>" for c in cols)
    body = []
    for i in range(len(frame)):
        flags = [f for f in frame.iloc[i]["flags"].split(",") if f]
        marked = {c for f in flags for c in FLAG_CELLS.get(f, ())}
        cells = []
        for c in cols:
            text = html.escape(_cell(frame, i, c))
            if _ranked(c) and text and np.isclose(frame.iloc[i][c], _best(frame, c)):
                text = f"<b>{text}</b>"
            classes = (["flag"] if c in marked else []) + (["flags"] if c == "flags" else [])
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{text}</td>")
        row_class = ' class="flagged"' if flags else ""
        body.append(f"<tr{row_class}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _plain_table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v, 3))}</td>" for v in row)
                   + "</tr>" for row in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _kv_table(items: Mapping) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_fmt(v, 3))}</td></tr>"
                   for k, v in items.items())
    return f"<table>{rows}</table>"


def _text_html(text: str) -> str:
    return "".join(f"<p>{html.escape(p.strip())}</p>" for p in text.split("\n\n") if p.strip())


def _metadata_items(comp: Comparison) -> dict[str, dict]:
    meta = comp.metadata()
    data = meta["data"]
    seconds = {k: f"{v:.2f}" for k, v in meta["seconds"].items()}
    return {
        "Data": {"rows": data["n_rows"], "rows with an observed value":
                 data["n_observed_rows"], "columns": ", ".join(data["columns"]),
                 "categories": ", ".join(map(str, data["cardinalities"])),
                 "distinct patterns": data["n_patterns"]},
        "Settings": {"methods": ", ".join(meta["methods"]), **meta["settings"]},
        "Seeds": meta["seeds"],
        "Seconds": seconds,
        "Versions": meta["versions"],
        "Thresholds": meta["thresholds"],
    }


def write_html(comp: Comparison, path: str | Path, title: str | None = None,
               sections: Mapping[str, str | pd.DataFrame] | None = None) -> Path:
    """Write the self-contained HTML report to ``path``; returns the path.

    ``sections`` adds ``{heading: text or DataFrame}`` after the introduction (e.g. the true
    parameters of simulated data)."""
    frame = comp.to_frame()
    title = title or f"lcbayes model comparison: {', '.join(comp.names)}"
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p class='note'>{comp.data.n_rows} rows x {comp.data.n_columns} columns "
             f"({comp.data.n_patterns} distinct patterns); methods: "
             f"{html.escape(', '.join(comp.methods))}; seed {comp.seeds['em']}; "
             f"highest log evidence: <b>{html.escape(str(comp.best))}</b></p>",
             "<h2>How to read this</h2>", f"<p>{html.escape(HOW_TO_READ)}</p>"]
    for heading, content in (sections or {}).items():
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(_plain_table(content) if isinstance(content, pd.DataFrame)
                     else _text_html(content))
    parts += ["<h2>Scores</h2>", _html_table(comp, frame, _score_columns(comp)),
              "<h2>Evidence and posterior model probabilities</h2>",
              _html_table(comp, frame, _evidence_columns()), _flags_html(frame)]
    notes = {n: note for n, note in zip(comp.names, comp.exact_notes, strict=True) if note}
    if notes and comp.settings.get("exact") is not False:
        parts.append("<p class='note'>No exact evidence for " + "; ".join(
            f"{html.escape(n)} ({html.escape(v)})" for n, v in notes.items()) + ".</p>")
    parts.append("<h2>Figures</h2>")
    for key, png in comp._pngs.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<figure><img alt='{key}' src=\"data:image/png;base64,{data}\">"
                     f"<figcaption>{html.escape(CAPTIONS[key])}</figcaption></figure>")
    parts.append("<h2>Candidates</h2>")
    for name, s in zip(comp.names, comp.structures, strict=True):
        parts.append(f"<details><summary>{html.escape(name)} ({s.kind}, d = "
                     f"{s.n_parameters})</summary><pre>{html.escape(s.describe())}</pre>"
                     "</details>")
    parts.append("<h2>Run</h2>")
    for heading, items in _metadata_items(comp).items():
        parts.append(f"<h3>{html.escape(heading)}</h3>{_kv_table(items)}")
    parts.append("</body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _flags_html(frame: pd.DataFrame) -> str:
    lines = _flag_lines(frame)[1:]
    if lines == ["Flags: none"]:
        return "<p class='note'>No flags.</p>"
    present = sorted({f for flags in frame["flags"] for f in flags.split(",") if f})
    items = "".join(f"<li><code>{f}</code>: {html.escape(FLAGS[f])}</li>" for f in present)
    rows = "".join(f"<li><b>{html.escape(n)}</b>: {html.escape(note)}</li>"
                   for n, note in zip(frame["name"], frame["flag_notes"], strict=True) if note)
    return f"<h3>Flags</h3><ul>{items}</ul><ul>{rows}</ul>"


# ---------------------------------------------------------------------- Markdown
def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
           "|" + "|".join("---" if j == 0 else "---:" for j in range(len(header))) + "|"]
    out += ["| " + " | ".join(_md_escape(v) for v in r) + " |" for r in rows]
    return out


def _md_comp_table(comp: Comparison, frame: pd.DataFrame, cols: list[str]) -> list[str]:
    rows = []
    for i in range(len(frame)):
        cells = []
        for c in cols:
            text = _cell(frame, i, c)
            if _ranked(c) and text and np.isclose(frame.iloc[i][c], _best(frame, c)):
                text = f"**{text}**"
            cells.append(text)
        rows.append(cells)
    return _md_table([HEADINGS.get(c, c) for c in cols], rows)


def markdown(comp: Comparison, path: str | Path | None = None, title: str | None = None,
             sections: Mapping[str, str | pd.DataFrame] | None = None) -> str:
    """The report as Markdown (tables, flags, metadata). With ``path`` it is written there and
    the figures are saved beside it as ``<stem>-<figure>.png`` and linked."""
    frame = comp.to_frame()
    title = title or f"lcbayes model comparison: {', '.join(comp.names)}"
    lines = [f"# {title}", "",
             f"{comp.data.n_rows} rows x {comp.data.n_columns} columns "
             f"({comp.data.n_patterns} distinct patterns); methods: {', '.join(comp.methods)}; "
             f"seed {comp.seeds['em']}; highest log evidence: **{comp.best}**.", "",
             "## How to read this", "", HOW_TO_READ, ""]
    for heading, content in (sections or {}).items():
        lines += [f"## {heading}", ""]
        if isinstance(content, pd.DataFrame):
            lines += _md_table([str(c) for c in content.columns],
                               [[_fmt(v, 3) for v in row]
                                for row in content.itertuples(index=False)])
        else:
            lines.append(content.strip())
        lines.append("")
    lines += ["## Scores", "", *_md_comp_table(comp, frame, _score_columns(comp)), "",
              "## Evidence and posterior model probabilities", "",
              *_md_comp_table(comp, frame, _evidence_columns()), ""]
    flag_lines = _flag_lines(frame)[1:]
    lines += ["## Flags", ""]
    lines += (["None."] if flag_lines == ["Flags: none"]
              else [f"* {line.strip()}" for line in flag_lines[1:]])
    lines.append("")
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines += ["## Figures", ""]
        for key, data in comp._pngs.items():
            png = path.with_name(f"{path.stem}-{key.replace('_', '-')}.png")
            png.write_bytes(data)
            lines += [f"![{key}]({png.name})", "", f"*{CAPTIONS[key]}*", ""]
    lines += ["## Run", ""]
    for heading, items in _metadata_items(comp).items():
        lines += [f"**{heading}**: " + "; ".join(f"{k} = {_fmt(v, 3)}"
                                                 for k, v in items.items()), ""]
    text = "\n".join(lines)
    if path is not None:
        path.write_text(text, encoding="utf-8")
    return text
