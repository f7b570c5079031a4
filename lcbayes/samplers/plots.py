"""Figures of latent class posterior draws (matplotlib :class:`~matplotlib.figure.Figure`
objects, no pyplot state): ArviZ trace and rank plots, the posterior of ``K`` (every ``K`` from
1 to the number of class slots) with every chain's frequencies and the trace of ``k``, and the
class profiles (posterior mean and 90% interval of every item-response probability per class).
Classes are labelled by their ``class`` coordinate (1, 2, ... in the samplers' output).
:mod:`.diagnostics` puts them in its reports.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import MatplotlibDeprecationWarning
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..errors import LcbayesError
from .idata import arviz, as_inference_data, item_columns, k_shares

if TYPE_CHECKING:
    import arviz as az

    from .results import SamplerResult
else:
    az = arviz()

__all__ = ["CAPTIONS", "TRACE_ITEMS", "plot_class_profiles", "plot_posterior_k", "plot_rank",
           "plot_trace", "redundant_rows", "theta_names"]

#: The trace plot shows the class weights and this many items, highest R-hat first.
TRACE_ITEMS = 4

#: The caption of every figure in the diagnostics' reports.
CAPTIONS = {
    "trace": "Trace plots (right) and per-chain densities (left) of the class weights and of "
             f"the (up to) {TRACE_ITEMS} items whose parameters have the highest R-hat, after "
             "relabelling (a single class's weight, identically 1, left out); one colour per "
             "class (and category beyond the first), one line style per chain.",
    "rank": "Rank plots of the parameters with the highest R-hat (theta_A[k, c]: the "
            "probability of category c of item A in class k, classes counted from 0): each "
            "chain's counts of draws per rank bin among all draws, as dots on vertical lines "
            "from the chain's mean count. Well-mixed chains put their dots near the dashed "
            "mean, none far above or below.",
    "posterior_k": "Posterior of the number of classes K, every K from 1 (bars; dots: each "
                   "chain's frequencies) and the trace of k per chain.",
    "class_profiles": "Class profiles: posterior mean (bars) and 90% interval of every "
                      "item-response probability per class, after relabelling.",
}


def theta_names(idata: az.InferenceData) -> list[str]:
    return [f"theta_{c}" for c in item_columns(idata)]


def _scalar_series(idata: az.InferenceData) -> dict[str, np.ndarray]:
    """Every scalar posterior parameter as a ``(chain, draw)`` array, named as ``az.summary``
    names its rows (``"theta_A[0, yes]"``)."""
    out = {}
    for name in ["class_weights", *theta_names(idata)]:
        var = idata["posterior"][name].transpose("chain", "draw", ...)
        coords = [var[d].values for d in var.dims[2:]]
        for index in np.ndindex(*var.shape[2:]):
            label = ", ".join(str(c[i]) for c, i in zip(coords, index, strict=True))
            out[f"{name}[{label}]"] = var.values[(slice(None), slice(None), *index)]
    return out


def redundant_rows(idata: az.InferenceData) -> set[str]:
    """The ``az.summary`` rows that are one minus the others of their probability vector: the
    first class's weight (identically 1 when there is one class) and every item's first
    category in every class (with two categories, the same R-hat as the second)."""
    post = idata["posterior"]
    classes = post["class"].values
    return {f"class_weights[{classes[0]}]"} | {
        f"theta_{c}[{j}, {post[f'{c}_category'].values[0]}]"
        for c in item_columns(idata) for j in classes}


@contextmanager
def _quiet() -> Iterator[None]:
    """ArviZ 0.23's plots raise a MatplotlibDeprecationWarning per artist on matplotlib
    3.11; they are ArviZ's to fix, so not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MatplotlibDeprecationWarning)
        yield


def plot_trace(idata: az.InferenceData, var_names: list[str] | None = None) -> Figure:
    """ArviZ trace plot of ``var_names`` (default: the class weights and every item), the
    first category of each item left out (one minus the others). A variable that is
    identically 1 is left out too: the class weights of a single class, an item with one
    category (their densities cannot be estimated)."""
    names = [name for name in var_names or ["class_weights", *theta_names(idata)]
             if idata["posterior"][name].shape[-1] > 1]
    coords = {f"{t[6:]}_category": idata["posterior"][f"{t[6:]}_category"].values[1:].tolist()
              for t in names if t.startswith("theta_")}
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
    for ax in axes[:len(parameters)]:       # a few rank ticks, not ArviZ's crowded ones
        ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
        ax.tick_params(labelsize=7)
        ax.set_title(ax.get_title(), fontsize=8)
    return fig


def plot_posterior_k(idata: az.InferenceData | SamplerResult) -> Figure:
    """Posterior of ``K`` for every ``K`` from 1 to the number of class slots (all chains,
    a zero bar for a ``K`` never visited; dots per chain) and the trace of ``k`` per chain
    (``idata``: an :class:`~lcbayes.RJMCMCResult` or its ``InferenceData``)."""
    idata = as_inference_data(idata)
    if "k" not in idata["posterior"]:
        raise LcbayesError("the posterior has no variable 'k' (not reversible jump output)")
    ks = idata["posterior"]["k"].transpose("chain", "draw").values.astype(int)
    shares = k_shares(idata)
    values, total = np.array(list(shares)), np.array(list(shares.values()))
    fig = Figure(figsize=(11, 3.4), layout="constrained")
    ax_bar, ax_trace = fig.subplots(1, 2, width_ratios=[1, 2])
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
    for every class, labelled with its ``class`` coordinate and weight (``class 1 (0.52)``)."""
    thetas = theta_names(idata)
    post = idata["posterior"]
    weights = post["class_weights"].mean(("chain", "draw")).values
    classes = post["class"].values
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
                   label=f"class {classes[j]} ({weights[j]:.2f})")
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
