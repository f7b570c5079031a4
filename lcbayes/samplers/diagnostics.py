"""Convergence diagnostics of latent class posterior draws (Gibbs or reversible jump), computed
after undoing label switching.

Per-class parameters are only comparable across draws and chains once the labels agree
(:mod:`lcbayes.samplers.relabelling`), so :func:`diagnostics` first relabels (``relabel_method``;
for reversible jump output conditioned on ``k``, by default the most visited number of classes) and
then runs ``az.summary`` on the relabelled draws: posterior mean, sd, 94% HDI, the
rank-normalised split R-hat and the bulk and tail effective sample sizes (Vehtari, Gelman,
Simpson, Carpenter & Bürkner 2021). For reversible jump output the table also has a row for
``k`` itself, from the original chains. A :class:`RhatWarning` names every parameter whose
R-hat exceeds ``rhat_threshold`` (1.01, Vehtari et al.'s recommendation).

Figures (matplotlib :class:`~matplotlib.figure.Figure` objects, no pyplot state): ArviZ trace
plots of the class weights and of the items with the highest R-hat, ArviZ rank plots of the
parameters with the highest R-hat, the posterior of ``K`` with every chain's frequencies and
the trace of ``k``, and the class profiles (posterior mean and 90% interval of every
item-response probability per class). :meth:`Diagnostics.to_html` and
:meth:`Diagnostics.to_markdown` give a self-contained report section with the figures
embedded as base64 PNGs (:mod:`lcbayes.render`).

Example::

    diag = lcb.diagnostics(idata)                  # Stephens relabelling, then az.summary
    print(diag.summary())
    html = diag.to_html()                          # a <section> for a report
"""

from __future__ import annotations

import html
import json
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..errors import LcbayesError
from ..render import (
    data_uri,
    fmt,
    html_document,
    html_figure,
    html_table,
    json_value,
    kv_table,
    md_table,
    png,
    write_text,
)
from .idata import arviz, as_inference_data, condition_on_k
from .plots import (
    plot_class_profiles,
    plot_posterior_k,
    plot_rank,
    plot_trace,
    redundant_rows,
    theta_names,
)
from .relabelling import METHODS, Relabelled, relabel

az = arviz()

__all__ = ["Diagnostics", "RhatWarning", "diagnostics", "plot_class_profiles",
           "plot_posterior_k", "plot_rank", "plot_trace"]  # the plots re-exported

#: The trace plot shows the class weights and this many items, highest R-hat first.
TRACE_ITEMS = 4

#: Columns of the summary table shown in the text, HTML and Markdown output.
COLUMNS = ["mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "ess_tail", "r_hat"]

CAPTIONS = {
    "trace": "Trace plots (right) and per-chain densities (left) of the class weights and of "
             f"the (up to) {TRACE_ITEMS} items whose parameters have the highest R-hat, after "
             "relabelling; one colour per class (and category beyond the first), one line "
             "style per chain.",
    "rank": "Rank plots of the parameters with the highest R-hat: the ranks of every chain's "
            "draws among all draws. Well-mixed chains give flat, overlapping histograms.",
    "posterior_k": "Posterior of the number of classes K (bars; dots: each chain's "
                   "frequencies) and the trace of k per chain.",
    "class_profiles": "Class profiles: posterior mean (bars) and 90% interval of every "
                      "item-response probability per class, after relabelling.",
}


class RhatWarning(UserWarning):
    """Some R-hat exceeds the threshold after relabelling: the chains disagree."""


# ---------------------------------------------------------------------- result
@dataclass(frozen=True, repr=False, eq=False)
class Diagnostics:
    """Diagnostics of posterior draws after relabelling (module docstring).

    Attributes:
        idata: the input draws.
        draws: the draws summarised (relabelled; for reversible jump output only those with
            ``k`` classes).
        relabelled: the relabelling, or ``None`` for ``relabel_method=None``.
        table: ``az.summary`` of ``draws`` (plus a ``k`` row from ``idata`` for reversible jump
            output), indexed by parameter.
        k: the number of classes conditioned on (reversible jump output), else ``None``.
        posterior_k: ``{K: probability}`` from the draws of ``k``, else ``None``.
        flagged: parameters with R-hat above ``rhat_threshold``, highest first.
        rhat_threshold: the R-hat above which a parameter is flagged.
        max_rank_panels: how many parameters the rank plot shows.
    """

    idata: az.InferenceData
    draws: az.InferenceData
    relabelled: Relabelled | None
    table: pd.DataFrame
    k: int | None
    posterior_k: dict[int, float] | None
    flagged: tuple[str, ...]
    rhat_threshold: float
    max_rank_panels: int

    @property
    def relabel_method(self) -> str | None:
        return self.relabelled.method if self.relabelled is not None else None

    @property
    def max_rhat(self) -> float:
        return float(self.table["r_hat"].max())

    @property
    def min_ess_bulk(self) -> float:
        return float(self.table["ess_bulk"].min())

    def figures(self) -> dict[str, Figure]:
        """``trace``, ``rank``, ``posterior_k`` (reversible jump output) and
        ``class_profiles``, made once: the reports render these objects."""
        return dict(self._figures)

    @cached_property
    def _figures(self) -> dict[str, Figure]:
        rhat = self.table["r_hat"].drop(index=["k"], errors="ignore")
        rhat = rhat.drop(index=list(redundant_rows(self.draws) & set(rhat.index)))
        worst = rhat.sort_values(ascending=False, na_position="last").index
        items = list(dict.fromkeys(p.split("[")[0] for p in worst if p.startswith("theta_")))
        out = {"trace": plot_trace(self.draws, ["class_weights", *items[:TRACE_ITEMS]]),
               "rank": plot_rank(self.draws, list(worst[:self.max_rank_panels]))}
        if self.posterior_k is not None:
            out["posterior_k"] = plot_posterior_k(self.idata)
        out["class_profiles"] = plot_class_profiles(self.draws)
        return out

    @cached_property
    def _pngs(self) -> dict[str, bytes]:
        return {key: png(fig) for key, fig in self._figures.items()}

    def _settings(self) -> dict:
        post = self.idata.posterior
        attrs = {key: post.attrs[key] for key in ("engine", "seed", "chains", "draws",
                                                  "warmup", "seconds") if key in post.attrs}
        if "acceptance_json" in post.attrs:
            attrs["acceptance"] = json.loads(post.attrs["acceptance_json"])
        return attrs

    def to_dict(self) -> dict:
        """JSON-ready: sampler settings (with acceptance rates), relabelling, ``k``,
        ``posterior_k``, R-hat threshold and flagged parameters, and the summary table as
        ``{parameter: {column: value}}`` (NaN as ``None``)."""
        chains, draws = (self.draws.posterior.sizes[d] for d in ("chain", "draw"))
        return json_value({
            "sampler": self._settings(),
            "relabelling": self.relabelled.to_dict() if self.relabelled is not None else None,
            "k": self.k, "posterior_k": self.posterior_k, "chains": chains, "draws": draws,
            "rhat_threshold": self.rhat_threshold, "max_rhat": self.max_rhat,
            "min_ess_bulk": self.min_ess_bulk, "flagged": list(self.flagged),
            "summary": {name: dict(row) for name, row in self.table[COLUMNS].iterrows()},
        })

    def _headline(self) -> str:
        chains, draws = (self.draws.posterior.sizes[d] for d in ("chain", "draw"))
        engine = self.idata.posterior.attrs.get("engine", "posterior")
        how = (f"relabelled by {self.relabel_method}" if self.relabelled is not None
               else "not relabelled")
        given = f", draws with k = {self.k}" if self.k is not None else ""
        return (f"{engine} draws{given}: {chains} chains x {draws} draws, {how}; max R-hat "
                f"{fmt(self.max_rhat, 3)}, min bulk ESS {fmt(self.min_ess_bulk, 0)}")

    def _flag_text(self) -> str:
        if not self.flagged:
            return f"Every R-hat is at most {self.rhat_threshold}."
        return (f"R-hat > {self.rhat_threshold} for {len(self.flagged)} parameters: "
                + ", ".join(f"{p} ({self.table.loc[p, 'r_hat']:.3f})" for p in self.flagged))

    def summary(self) -> str:
        """The headline, the posterior of K, the flags and the summary table as text."""
        lines = [self._headline()]
        if self.posterior_k is not None:
            lines.append("posterior of K: " + ", ".join(f"{k}: {p:.3f}"
                                                        for k, p in self.posterior_k.items()))
        lines += [self._flag_text(), "",
                  self.table[COLUMNS].to_string(float_format=lambda v: f"{v:.3f}")]
        return "\n".join(lines)

    def _rows(self) -> list[tuple[str, list[str]]]:
        return [(name, [fmt(row[c], 0 if c.startswith("ess") else 3) for c in COLUMNS])
                for name, row in self.table.iterrows()]

    def to_html(self, path: str | Path | None = None) -> str:
        """The diagnostics as a self-contained HTML ``<section>`` (figures as base64 PNGs,
        flagged rows highlighted). With ``path``, also written there as a whole document."""
        parts = ["<section class='lcbayes-diagnostics'>", "<h2>Posterior diagnostics</h2>",
                 f"<p class='note'>{html.escape(self._headline())}</p>",
                 f"<p>{html.escape(self._flag_text())}</p>"]
        if self.posterior_k is not None:
            parts += ["<h3>Posterior of the number of classes</h3>",
                      kv_table({f"K = {k}": p for k, p in self.posterior_k.items()})]
        rows = self._rows()
        parts += ["<h3>Summary after relabelling</h3>",
                  html_table(["parameter", *COLUMNS], [[name, *cells] for name, cells in rows],
                             row_classes=["flagged" if name in self.flagged else ""
                                          for name, _ in rows])]
        parts += [html_figure(key, data, CAPTIONS[key]) for key, data in self._pngs.items()]
        parts.append("</section>")
        section = "\n".join(parts)
        if path is not None:
            write_text(path, html_document("lcbayes posterior diagnostics", section))
        return section

    def to_markdown(self, path: str | Path | None = None) -> str:
        """The diagnostics as a Markdown section. Without ``path`` the figures are embedded as
        base64 data URIs; with ``path`` the text is written there and the figures beside it as
        ``<stem>-<figure>.png``, linked."""
        lines = ["## Posterior diagnostics", "", self._headline() + ".", "",
                 self._flag_text(), ""]
        if self.posterior_k is not None:
            lines += ["### Posterior of the number of classes", "",
                      *md_table(["K", "p(K | y)"], [[str(k), f"{p:.3f}"]
                                                     for k, p in self.posterior_k.items()]),
                      ""]
        lines += ["### Summary after relabelling", "",
                  *md_table(["parameter", *COLUMNS],
                             [[name, *cells] for name, cells in self._rows()]), ""]
        for key, image in self._pngs.items():
            if path is None:
                target = data_uri(image)
            else:
                file = Path(path).with_name(f"{Path(path).stem}-{key.replace('_', '-')}.png")
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_bytes(image)
                target = file.name
            lines += [f"![{key}]({target})", "", f"*{CAPTIONS[key]}*", ""]
        text = "\n".join(lines)
        if path is not None:
            write_text(path, text)
        return text

    def __repr__(self) -> str:
        return (f"Diagnostics(relabel_method={self.relabel_method!r}, k={self.k}, "
                f"max_rhat={self.max_rhat:.3f}, flagged={len(self.flagged)})")


# ---------------------------------------------------------------------- public
def diagnostics(idata: az.InferenceData, relabel_method: str | None = "stephens",
                k: int | None = None, *, rhat_threshold: float = 1.01,
                max_rank_panels: int = 12) -> Diagnostics:
    """Relabel, summarise with ``az.summary`` and flag R-hat (module docstring).

    Args:
        idata: the result of :func:`lcbayes.gibbs` or :func:`lcbayes.rjmcmc`, or its
            ``InferenceData``.
        relabel_method: a :data:`lcbayes.samplers.relabelling.METHODS` name, or ``None`` to
            summarise the draws as they are.
        k: reversible jump output: the number of classes to condition on (default: the most
            visited). Fixed-``K`` output: leave ``None``.
        rhat_threshold: R-hat above this is flagged and warned about.
        max_rank_panels: the rank plot shows this many parameters, highest R-hat first.

    Warns:
        RhatWarning: naming every parameter with R-hat above ``rhat_threshold``.
    """
    if relabel_method is not None and relabel_method not in METHODS:
        raise LcbayesError(f"unknown relabel_method {relabel_method!r}; choose from "
                           f"{', '.join(METHODS)} or None")
    idata = as_inference_data(idata)
    thetas = theta_names(idata)
    posterior_k = None
    if "k" in idata.posterior:
        ks = idata.posterior["k"].values.astype(int).ravel()
        values, counts = np.unique(ks, return_counts=True)
        posterior_k = {int(v): float(n / ks.size) for v, n in zip(values, counts, strict=True)}
        if k is None:
            k = int(values[np.argmax(counts)])
    if relabel_method is not None:
        relabelled = relabel(idata, relabel_method, k=k)
        draws = relabelled.idata
    else:
        relabelled = None
        draws = condition_on_k(idata, k) if k is not None else idata
    table = az.summary(draws, var_names=["class_weights", *thetas], round_to="none")
    if posterior_k is not None:
        table = pd.concat([table, az.summary(idata, var_names=["k"], round_to="none")])
    rhat = table["r_hat"]
    flagged = tuple(rhat[rhat > rhat_threshold].sort_values(ascending=False).index)
    result = Diagnostics(idata=idata, draws=draws, relabelled=relabelled, table=table, k=k,
                         posterior_k=posterior_k, flagged=flagged,
                         rhat_threshold=rhat_threshold, max_rank_panels=max_rank_panels)
    if flagged:
        warnings.warn(result._flag_text() + "; run longer chains or check the relabelling",
                      RhatWarning, stacklevel=2)
    return result
