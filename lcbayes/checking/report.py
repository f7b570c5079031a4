"""The report of a model check (``lcbayes check --report``): the model, PSIS-LOO with its
Pareto k diagnostic, the posterior predictive checks with the local-dependence heat map and
ArviZ's ``plot_ppc`` of the frequent patterns' counts, and the run's settings and versions. One
self-contained HTML file (figures embedded) or Markdown with the figures as PNG files beside
it."""

from __future__ import annotations

import html
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..render import (
    fmt,
    html_document,
    html_figure,
    html_table,
    md_table,
    png,
    versions,
    write_bytes,
    write_text,
)
from ..samplers.idata import arviz

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .loo import LOOResult
    from .ppc import PPCResult

__all__ = ["pattern_count_figure", "write_check_report"]


def pattern_count_figure(check: PPCResult) -> Figure:
    """ArviZ's ``plot_ppc`` of the most frequent patterns' counts: the observed counts' density
    against the replicates'."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arviz().plot_ppc(check.to_inference_data(), var_names=["pattern_count"], ax=ax,
                         num_pp_samples=min(100, check.n_replicates), random_seed=0)
    ax.set_xlabel(f"count of each of the {len(check.pattern_observed)} most frequent patterns")
    return fig


def _figures(check: PPCResult) -> list[tuple[str, bytes, str]]:
    bad = check.misfitting_pairs()
    named = ", ".join(f"{a} x {b}" for a, b in bad) or "none"
    return [("pairs", png(check.pairs_figure()),
             f"Posterior predictive p of every item pair's association; misfitting pairs "
             f"(ppp < 0.05): {named}."),
            ("patterns", png(pattern_count_figure(check)),
             "The counts of the most frequent patterns in the data and in the replicated "
             "data sets (az.plot_ppc).")]


def _settings(settings: dict) -> list[list[str]]:
    return [[str(k), str(v)] for k, v in {**settings, **versions()}.items()]


def write_check_report(path: str | Path, loo: LOOResult, check: PPCResult, model: str,
                       settings: dict) -> Path:
    """Write the report to ``path`` (``.html``: one file; ``.md``: Markdown and the figures'
    PNG files beside it); returns the path."""
    path = Path(path)
    figures = _figures(check)
    pairs = check.pair_table().head(10)
    pair_rows = [[f"{a} x {b}", fmt(v), fmt(p)] for a, b, v, p in pairs.itertuples(index=False)]
    if path.suffix.lower() == ".md":
        lines = [f"# Does {model} fit?", "", "## Leave-one-out cross-validation", "", "```",
                 loo.summary(), "```", "", "## Posterior predictive checks", "", "```",
                 check.summary(), "```", "",
                 *md_table(["pair", "bvr", "ppp"], pair_rows), ""]
        for key, data, caption in figures:
            name = f"{path.stem}-{key}.png"
            write_bytes(path.with_name(name), data)
            lines += [f"![{caption}]({name})", "", caption, ""]
        lines += ["## Settings", "", *md_table(["setting", "value"], _settings(settings))]
        return write_text(path, "\n".join(lines) + "\n")
    body = [f"<h1>Does {html.escape(model)} fit?</h1>",
            "<h2>Leave-one-out cross-validation</h2>", f"<pre>{html.escape(loo.summary())}</pre>",
            "<h2>Posterior predictive checks</h2>", f"<pre>{html.escape(check.summary())}</pre>",
            html_table(["pair", "bvr", "ppp"], pair_rows),
            *(html_figure(key, data, caption) for key, data, caption in figures),
            "<h2>Settings</h2>", html_table(["setting", "value"], _settings(settings))]
    return write_text(path, html_document(f"Does {model} fit?", "\n".join(body)))
