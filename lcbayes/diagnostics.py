"""Convergence diagnostics of latent class posterior draws (Gibbs or reversible jump), computed
after undoing label switching.

Per-class parameters are only comparable across draws and chains once the labels agree
(:mod:`lcbayes.relabel`), so :func:`diagnostics` first relabels (``relabel_method``; for
reversible jump output conditioned on ``k``, by default the most visited number of classes)
and then runs ``az.summary`` on the relabelled draws: posterior mean, sd, 94% HDI, the
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
embedded as base64 PNGs, as in :mod:`lcbayes.report`.

Example::

    diag = lcb.diagnostics(idata)                  # Stephens relabelling, then az.summary
    print(diag.summary())
    html = diag.to_html()                          # a <section> for a report
"""

from __future__ import annotations

import base64
import html
import json
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
from matplotlib import MatplotlibDeprecationWarning
from matplotlib.figure import Figure

from .compare import _json_value
from .errors import LcbayesError
from .relabel import METHODS, Relabelled, _items, condition_on_k, relabel
from .report import _CSS, _fmt, _kv_table, _md_table, _png

__all__ = ["Diagnostics", "RhatWarning", "diagnostics", "plot_class_profiles",
           "plot_posterior_k", "plot_rank", "plot_trace"]

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


# ---------------------------------------------------------------------- parameters
def _theta_names(idata: az.InferenceData) -> list[str]:
    return [f"theta_{c}" for c in _items(idata)]


def _scalar_series(idata: az.InferenceData) -> dict[str, np.ndarray]:
    """Every scalar posterior parameter as a ``(chain, draw)`` array, named as ``az.summary``
    names its rows (``"theta_A[0, yes]"``)."""
    out = {}
    for name in ["class_weights", *_theta_names(idata)]:
        var = idata.posterior[name].transpose("chain", "draw", ...)
        coords = [var[d].values for d in var.dims[2:]]
        for index in np.ndindex(*var.shape[2:]):
            label = ", ".join(str(c[i]) for c, i in zip(coords, index, strict=True))
            out[f"{name}[{label}]"] = var.values[(slice(None), slice(None), *index)]
    return out


def _redundant(idata: az.InferenceData) -> set[str]:
    """The rows of every item's first category: one minus the others, so the same R-hat."""
    post = idata.posterior
    return {f"theta_{c}[{j}, {post[f'{c}_category'].values[0]}]"
            for c in _items(idata) for j in post["class"].values}


# ---------------------------------------------------------------------- figures
@contextmanager
def _quiet() -> Iterator[None]:
    """ArviZ 0.23's plots raise a MatplotlibDeprecationWarning per artist on matplotlib
    3.11; they are ArviZ's to fix, so not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MatplotlibDeprecationWarning)
        yield


def plot_trace(idata: az.InferenceData, var_names: list[str] | None = None) -> Figure:
    """ArviZ trace plot of ``var_names`` (default: the class weights and every item), the
    first category of each item with more than one left out (one minus the others)."""
    names = var_names or ["class_weights", *_theta_names(idata)]
    categories = {t: idata.posterior[f"{t[6:]}_category"].values
                  for t in names if t.startswith("theta_")}
    coords = {f"{t[6:]}_category": labels[1:] for t, labels in categories.items()
              if len(labels) > 1}
    fig = Figure(figsize=(11, 2.1 * len(names) + 0.4), layout="constrained")
    axes = fig.subplots(len(names), 2, squeeze=False)
    with _quiet():
        az.plot_trace(idata, var_names=names, coords=coords, axes=axes, show=False)
    return fig


def plot_rank(idata: az.InferenceData, parameters: list[str]) -> Figure:
    """ArviZ rank plots (vertical lines per chain) of the named scalar parameters
    (``az.summary`` row names such as ``"theta_A[0, yes]"``)."""
    series = _scalar_series(idata)
    unknown = [p for p in parameters if p not in series]
    if unknown or not parameters:
        raise LcbayesError(f"unknown parameters {unknown} for a rank plot; name rows of "
                           f"az.summary, e.g. {list(series)[:3]}")
    ncol = min(len(parameters), 4)
    nrow = math.ceil(len(parameters) / ncol)
    fig = Figure(figsize=(3.2 * ncol, 2.4 * nrow), layout="constrained")
    axes = np.asarray(fig.subplots(nrow, ncol, squeeze=False)).ravel()
    for ax in axes[len(parameters):]:
        ax.set_visible(False)
    data = az.convert_to_dataset({p: series[p] for p in parameters})
    with _quiet():
        az.plot_rank(data, kind="vlines", ax=axes[:len(parameters)], show=False)
    return fig


def plot_posterior_k(idata: az.InferenceData) -> Figure:
    """Posterior of ``K`` (all chains; dots per chain) and the trace of ``k`` per chain."""
    if "k" not in idata.posterior:
        raise LcbayesError("the posterior has no variable 'k' (not reversible jump output)")
    ks = idata.posterior["k"].transpose("chain", "draw").values.astype(int)
    values = np.arange(ks.min(), ks.max() + 1)
    fig = Figure(figsize=(11, 3.4), layout="constrained")
    ax_bar, ax_trace = fig.subplots(1, 2, width_ratios=[1, 2])
    total = (ks.ravel()[:, None] == values).mean(axis=0)
    ax_bar.bar(values, total, color="tab:blue", alpha=0.7, edgecolor="black")
    for c, chain in enumerate(ks):
        freq = (chain[:, None] == values).mean(axis=0)
        ax_bar.plot(values, freq, ls="none", marker="o", ms=4, color=f"C{c + 1}",
                    label=f"chain {c}")
        ax_trace.step(np.arange(len(chain)), chain, where="post", lw=0.8, alpha=0.7,
                      color=f"C{c + 1}")
    for v, p in zip(values, total, strict=True):
        ax_bar.text(v, p + 0.02, f"{p:.2f}", ha="center", va="bottom", fontsize=8)
    ax_bar.set_xticks(values)
    ax_bar.set_ylim(0, min(1.05, total.max() + 0.15))
    ax_bar.set(xlabel="number of classes K", ylabel="p(K | y)", title="posterior of K")
    ax_bar.legend(fontsize=7)
    ax_trace.set_yticks(values)
    ax_trace.set(xlabel="draw", ylabel="k", title="trace of k")
    return fig


def plot_class_profiles(idata: az.InferenceData) -> Figure:
    """Per item, the posterior mean (bars) and 90% interval of ``P(item = category | class)``
    for every class, labelled with the class weight."""
    thetas = _theta_names(idata)
    post = idata.posterior
    weights = post["class_weights"].mean(("chain", "draw")).values
    n_classes = len(weights)
    ncol = min(len(thetas), 4)
    nrow = math.ceil(len(thetas) / ncol)
    fig = Figure(figsize=(3.3 * ncol, 2.8 * nrow + 0.5), layout="constrained")
    axes = np.asarray(fig.subplots(nrow, ncol, squeeze=False)).ravel()
    width = 0.8 / n_classes
    for ax, name in zip(axes, thetas, strict=False):
        var = post[name].transpose("chain", "draw", "class", ...)
        flat = var.values.reshape(-1, *var.shape[2:])
        mean = flat.mean(axis=0)
        low, high = np.quantile(flat, [0.05, 0.95], axis=0)
        x = np.arange(mean.shape[1])
        for j in range(n_classes):
            xs = x + (j - (n_classes - 1) / 2) * width
            ax.bar(xs, mean[j], width, color=f"C{j}", alpha=0.8,
                   label=f"class {j} ({weights[j]:.2f})")
            ax.errorbar(xs, mean[j], yerr=[mean[j] - low[j], high[j] - mean[j]], fmt="none",
                        ecolor="0.2", capsize=2, lw=1)
        ax.set_xticks(x, [str(v) for v in var[var.dims[3]].values], fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(name[6:], fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(thetas):]:
        ax.set_visible(False)
    axes[0].set_ylabel("P(category | class)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=min(n_classes, 8),
               fontsize=8, title="class (posterior mean weight)", title_fontsize=8)
    return fig


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
        rhat = rhat.drop(index=list(_redundant(self.draws) & set(rhat.index)))
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
        return {key: _png(fig) for key, fig in self._figures.items()}

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
        return _json_value({
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
                f"{_fmt(self.max_rhat, 3)}, min bulk ESS {_fmt(self.min_ess_bulk, 0)}")

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
        return [(name, [_fmt(row[c], 0 if c.startswith("ess") else 3) for c in COLUMNS])
                for name, row in self.table.iterrows()]

    def to_html(self, path: str | Path | None = None) -> str:
        """The diagnostics as a self-contained HTML ``<section>`` (figures as base64 PNGs,
        flagged rows highlighted). With ``path``, also written there as a whole document."""
        parts = ["<section class='lcbayes-diagnostics'>", "<h2>Posterior diagnostics</h2>",
                 f"<p class='note'>{html.escape(self._headline())}</p>",
                 f"<p>{html.escape(self._flag_text())}</p>"]
        if self.posterior_k is not None:
            parts += ["<h3>Posterior of the number of classes</h3>",
                      _kv_table({f"K = {k}": p for k, p in self.posterior_k.items()})]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in ["parameter", *COLUMNS])
        flagged = " class='flagged'"
        body = "".join(
            f"<tr{flagged if name in self.flagged else ''}><td>{html.escape(name)}</td>"
            + "".join(f"<td>{v}</td>" for v in cells) + "</tr>" for name, cells in self._rows())
        parts += ["<h3>Summary after relabelling</h3>",
                  f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"]
        for key, png in self._pngs.items():
            data = base64.b64encode(png).decode("ascii")
            parts.append(f"<figure><img alt='{key}' src=\"data:image/png;base64,{data}\">"
                         f"<figcaption>{html.escape(CAPTIONS[key])}</figcaption></figure>")
        parts.append("</section>")
        section = "\n".join(parts)
        if path is not None:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                            f"<title>lcbayes posterior diagnostics</title><style>{_CSS}"
                            f"</style></head><body>\n{section}\n</body></html>",
                            encoding="utf-8")
        return section

    def to_markdown(self, path: str | Path | None = None) -> str:
        """The diagnostics as a Markdown section. Without ``path`` the figures are embedded as
        base64 data URIs; with ``path`` the text is written there and the figures beside it as
        ``<stem>-<figure>.png``, linked."""
        lines = ["## Posterior diagnostics", "", self._headline() + ".", "",
                 self._flag_text(), ""]
        if self.posterior_k is not None:
            lines += ["### Posterior of the number of classes", "",
                      *_md_table(["K", "p(K | y)"], [[str(k), f"{p:.3f}"]
                                                     for k, p in self.posterior_k.items()]),
                      ""]
        lines += ["### Summary after relabelling", "",
                  *_md_table(["parameter", *COLUMNS],
                             [[name, *cells] for name, cells in self._rows()]), ""]
        for key, png in self._pngs.items():
            if path is None:
                target = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            else:
                file = Path(path).with_name(f"{Path(path).stem}-{key.replace('_', '-')}.png")
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_bytes(png)
                target = file.name
            lines += [f"![{key}]({target})", "", f"*{CAPTIONS[key]}*", ""]
        text = "\n".join(lines)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
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
        idata: output of :func:`lcbayes.gibbs` or :func:`lcbayes.rjmcmc`.
        relabel_method: a :data:`lcbayes.relabel.METHODS` name, or ``None`` to summarise the
            draws as they are.
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
    thetas = _theta_names(idata)
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
