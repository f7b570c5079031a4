"""The figures of a comparison report (matplotlib :class:`~matplotlib.figure.Figure` objects,
no pyplot state): every score against the number of parameters, the posterior model
probabilities, and (when AIS ran) every chain's running log weight and the acceptance rates."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from scipy.special import logsumexp

from ..render import fmt, png
from . import registry

if TYPE_CHECKING:
    from .table import Comparison

__all__ = ["CAPTIONS", "figure_pngs", "figures"]


def _styles() -> dict[str, tuple[str, str, str]]:
    """``{column: (label, colour, marker)}`` of every registered method's ranked column."""
    return {m.ranked: m.plot for m in registry.methods() if m.plot is not None and m.ranked}


def _scores_figure(comp: Comparison, frame: pd.DataFrame) -> Figure:
    styles = _styles()
    cols = [c for c in styles if c in frame and np.isfinite(frame[c].astype(float)).any()]
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax_abs, ax_rel = fig.subplots(1, 2)
    order = np.argsort(frame["n_parameters"].to_numpy(), kind="stable")
    x = frame["n_parameters"].to_numpy()[order]
    for c in cols:
        label, colour, marker = styles[c]
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
        top.set_title(f"{row['name']}: {run.log_evidence:.2f} ± {fmt(run.stderr)}\n"
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
    return {key: png(fig) for key, fig in figures(comp).items()}


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
