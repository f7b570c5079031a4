"""The figures of a comparison report (matplotlib :class:`~matplotlib.figure.Figure` objects,
no pyplot state): every score against the number of parameters, the posterior model
probabilities, the chosen model's class profiles, and (when AIS ran) every chain's running log
weight and the acceptance rates.

Legends sit outside the axes and value labels above the error bars, so neither covers data. A
candidate whose every score lies further below the others than their whole range (typically
LC(1), hundreds of nats down) would squash the others into a line: the score axes show the
others (:func:`visible_range`) and mark it at the lower edge with its value."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..render import fmt, png
from . import registry

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

    from .table import ComparisonResult

__all__ = ["CAPTIONS", "figure_pngs", "figures", "label_points", "new_figure",
           "posterior_figure", "profiles_figure", "visible_range"]


def new_figure(**kwargs) -> Figure:
    """A matplotlib figure (no pyplot); matplotlib loads on the first one, so printing a
    comparison never imports it."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def label_points(ax, xs, ys, labels, **style) -> int:
    """Label the points ``(xs[i], ys[i])`` of ``ax`` with ``labels[i]`` (4 points up and right),
    in order, leaving out every label that would overlap one already placed or leave the axes;
    returns how many were placed. The figure's layout is settled first, and the labels take no
    part in it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.figure
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    inside = ax.get_window_extent(renderer)
    placed: list[Bbox] = []
    for x, y, label in zip(xs, ys, labels, strict=True):
        text = ax.annotate(str(label), (x, y), textcoords="offset points", xytext=(4, 4),
                           annotation_clip=True, **style)
        text.set_in_layout(False)
        box = text.get_window_extent(renderer)
        fits = (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0
                and box.y1 <= inside.y1)
        if fits and not any(box.overlaps(other) for other in placed):
            placed.append(box)
        else:
            text.remove()
    return len(placed)


def _styles() -> dict[str, tuple[str, str, str]]:
    """``{column: (label, colour, marker)}`` of every registered method's ranked column."""
    return {m.ranked: m.plot for m in registry.methods() if m.plot is not None and m.ranked}


def visible_range(values: np.ndarray) -> tuple[float, float, list[int]]:
    """``(low, high, off)``: y limits for ``(n_candidates, n_series)`` scores and the
    candidates left below them. The candidate with the lowest score is left out while its best
    score lies further below the rest than the rest's whole range, keeping at least two."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    tops = np.where(finite, values, -np.inf).max(axis=1)
    lows = np.where(finite, values, np.inf).min(axis=1)
    shown = [i for i in range(len(values)) if finite[i].any()]
    off: list[int] = []
    while len(shown) > 2:
        lowest = min(shown, key=lambda i: lows[i])
        rest = [i for i in shown if i != lowest]
        high, low = tops[rest].max(), lows[rest].min()
        if tops[lowest] >= low - (high - low):
            break
        off.append(lowest)
        shown = rest
    if not shown:
        return -1.0, 1.0, off
    high, low = tops[shown].max(), lows[shown].min()
    pad = 0.08 * (high - low) or 1.0
    return low - pad, high + pad, off


def _mark_off_scale(ax, x: np.ndarray, names, values: np.ndarray, off: list[int]) -> None:
    """Mark the candidates below the axis at its lower edge, named with their values."""
    low = ax.get_ylim()[0]
    for i in off:
        ax.plot([x[i]], [low], marker="v", color="0.3", ms=8, clip_on=False, zorder=5)
        ax.annotate(f"{names[i]} off scale:\n{np.nanmin(values[i]):.1f} to "
                    f"{np.nanmax(values[i]):.1f}", (x[i], low), xytext=(7, 4),
                    textcoords="offset points", ha="left", va="bottom", fontsize=7,
                    color="0.3", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})


def _scores_figure(comp: ComparisonResult, frame: pd.DataFrame) -> Figure:
    styles = _styles()
    cols = [c for c in styles if c in frame and np.isfinite(frame[c].astype(float)).any()]
    fig = new_figure(figsize=(11, 4.8), layout="constrained")
    ax_abs, ax_rel = fig.subplots(1, 2)
    order = np.argsort(frame["n_parameters"].to_numpy(), kind="stable")
    x = frame["n_parameters"].to_numpy()[order]
    names = frame["name"].to_numpy()[order]
    scores = np.column_stack([frame[c].to_numpy(dtype=float)[order] for c in cols])
    best = np.array([np.nanmax(col) if np.isfinite(col).sum() >= 2 else np.nan
                     for col in scores.T])  # a preference needs two values
    for ax, values in ((ax_abs, scores), (ax_rel, scores - best)):
        for j, c in enumerate(cols):
            label, colour, marker = styles[c]
            if c == "ais":
                err = 2 * frame["ais_stderr"].to_numpy(dtype=float)[order]
                ax.errorbar(x, values[:, j], yerr=err, color=colour, marker=marker,
                            label=label, capsize=3, lw=1.2)
            else:
                ax.plot(x, values[:, j], color=colour, marker=marker, label=label, lw=1.2,
                        ls=":" if c == "exact" else "-", ms=9 if c == "exact" else 6)
        low, high, off = visible_range(values)
        ax.set_ylim(low, high)
        _mark_off_scale(ax, x, names, values, off)
        ax.set_xlabel("number of free parameters d")
        ax.set_xticks(x, [f"{n}\nd={d}" for n, d in zip(names, x, strict=True)], fontsize=8)
        ax.grid(alpha=0.3)
    ax_abs.set_ylabel("score (ln evidence scale)")
    ax_abs.set_title("scores by candidate")
    ax_rel.set_ylabel("score - best score of the method")
    ax_rel.set_title("each method's preference (0 = its choice)")
    handles, labels = ax_abs.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(cols), fontsize=8)
    return fig


def posterior_figure(frame: pd.DataFrame) -> Figure:
    """Bars of ``posterior_prob`` per candidate (coloured by ``evidence_method``) with the
    ``posterior_low``-``posterior_high`` interval; each value is written above its interval."""
    fig = new_figure(figsize=(max(4.5, 1.1 * len(frame) + 2), 3.9), layout="constrained")
    ax = fig.subplots()
    prob = frame["posterior_prob"].to_numpy(dtype=float)
    x = np.arange(len(frame))
    colours = {m.name: m.plot[1] for m in registry.methods() if m.plot is not None}
    ok = np.isfinite(prob)
    low = frame["posterior_low"].to_numpy(dtype=float)
    high = frame["posterior_high"].to_numpy(dtype=float)
    ax.bar(x[ok], prob[ok], color=[colours[m] for m in frame["evidence_method"][ok]],
           alpha=0.75, edgecolor="black")
    ax.errorbar(x[ok], prob[ok], yerr=[prob[ok] - low[ok], high[ok] - prob[ok]], fmt="none",
                ecolor="0.2", capsize=5, lw=1.5)
    for xi, p, top in zip(x[ok], prob[ok], high[ok], strict=True):  # above the error bar
        ax.text(xi, top + 0.02, f"{p:.3f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, frame["name"], fontsize=8)
    ax.set_ylim(0, 1.12)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("p(m | y), uniform prior")
    used = [m for m in ("exact", "ais", "vbem") if (frame["evidence_method"] == m).any()]
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=colours[m], alpha=0.75, edgecolor="black") for m in used]
    fig.legend(handles, [f"from {m}" for m in used], fontsize=8, loc="outside lower center",
               ncols=len(used))
    ax.set_title("posterior model probabilities, 95% intervals", fontsize=10)
    return fig


def _profiled(comp: ComparisonResult) -> tuple[int, object] | None:
    """``(index, fit)`` of the chosen model (highest log evidence) for its class profiles:
    a latent class model with an EM fit (its estimate) or else a VB fit (posterior means)."""
    if comp.best is None:
        return None
    i = comp.names.index(comp.best)
    fit = comp.em[i] if comp.em[i] is not None else comp.vbem[i]
    if comp.structures[i].kind != "latent_class" or fit is None:
        return None
    return i, fit


def _profiles_figure(comp: ComparisonResult, i: int, fit) -> Figure:
    source = "EM estimate" if fit is comp.em[i] else "VB posterior means"
    return profiles_figure(comp.structures[i], fit,
                           f"{comp.best}: item response probabilities by class ({source})")


def profiles_figure(s, fit, title: str) -> Figure:
    """Grouped bars: for every item response (the second category of a binary item, every
    category otherwise) the probability in each class of the latent class model ``s``,
    classes numbered from 1; ``fit`` is an EM or VB fit (its ``estimate`` and
    ``class_weights``)."""
    slots = [(j, c) for j in s.observed_nodes
             for c in (range(1, 2) if s.cardinalities[j] == 2 else range(s.cardinalities[j]))]
    k_count = s.n_classes
    width = 0.8 / k_count
    fig = new_figure(figsize=(min(16.0, max(6.0, 0.22 * len(slots) * (k_count + 1) + 2)),
                              4.2), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(slots))
    tables = {j: np.asarray(fit.estimate[s.nodes[j]]).reshape(k_count, -1)
              for j in s.observed_nodes}
    for k in range(k_count):
        ax.bar(x + (k - (k_count - 1) / 2) * width, [tables[j][k, c] for j, c in slots],
               width, color=f"C{k}", label=f"class {k + 1} ({fit.class_weights[k]:.2f})")
    ax.set_xticks(x, [f"{s.nodes[j]}={s.labels[j][c]}" for j, c in slots], fontsize=8,
                  rotation=90 if len(slots) > 14 else 0)
    for b in np.flatnonzero(np.diff([j for j, _ in slots])):  # between items
        ax.axvline(b + 0.5, color="0.8", lw=0.8)
    ax.set_xlim(-0.5, len(slots) - 0.5)
    ax.set_ylim(0, 1)
    ax.set_ylabel("P(response | class)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(title, fontsize=10)
    fig.legend(loc="outside right upper", fontsize=8, title="class (share)", title_fontsize=8)
    return fig


def _ais_figure(comp: ComparisonResult, frame: pd.DataFrame) -> Figure:
    runs = [(i, r) for i, r in enumerate(comp.ais) if r is not None]
    ncol = min(len(runs), 5)
    nrow = math.ceil(len(runs) / ncol)
    fig = new_figure(figsize=(3.2 * ncol, 5.6 * nrow), layout="constrained")
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
        for ax in (top, bottom):
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    legend: dict[str, Artist] = {}  # one legend for every panel, outside them: {label: handle}
    for ax in axes[0::2].ravel():
        handles, labels = ax.get_legend_handles_labels()
        legend.update(zip(labels, handles, strict=True))
    fig.legend(list(legend.values()), list(legend), loc="outside lower center",
               ncols=len(legend), fontsize=8)
    fig.suptitle("AIS: running log weight of every chain against the temperature (top: minus "
                 "tau x loglik, with the VB bound; bottom: about the running estimate)",
                 fontsize=9)
    return fig


def _acceptance_figure(comp: ComparisonResult, frame: pd.DataFrame) -> Figure:
    runs = [(i, r) for i, r in enumerate(comp.ais) if r is not None]
    fig = new_figure(figsize=(max(4.5, 1.3 * len(runs) + 2), 3.2), layout="constrained")
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
    fig.legend(fontsize=7, ncols=quarters, loc="outside lower center")
    return fig


#: The information criteria of the elbow plot, with their labels, in plotting order.
ELBOW_CRITERIA = {"aic": "AIC", "bic": "BIC", "abic": "aBIC", "caic": "CAIC", "bic_e": "BIC_e",
                  "icl": "ICL"}


def _elbow_figure(frame: pd.DataFrame) -> Figure | None:
    """The information criteria of the latent class candidates against K on the deviance
    scale applied papers plot (``-2 x``, lower is better), the elbow plot; ``None`` with
    fewer than two latent class candidates or no criterion."""
    rows = frame[frame["kind"] == "latent_class"].sort_values("n_classes")
    present = [c for c in ELBOW_CRITERIA if c in rows and rows[c].notna().any()]
    if len(rows) < 2 or not present:
        return None
    fig = new_figure(figsize=(6.0, 3.8), layout="constrained")
    ax = fig.subplots()
    drawn: dict[str, np.ndarray] = {}
    for c in present:    # a criterion equal to one drawn (BIC_e = BIC where d_e = d) says so
        values = -2 * rows[c].to_numpy(dtype=float)
        same = next((ELBOW_CRITERIA[d] for d, v in drawn.items()
                     if np.allclose(v, values, equal_nan=True)), None)
        ax.plot(rows["n_classes"], values, marker="o" if same is None else "x",
                ls="-" if same is None else ":",
                label=ELBOW_CRITERIA[c] + ("" if same is None else f" (= {same})"))
        drawn[c] = values
    ax.set_xticks(rows["n_classes"].astype(int))
    ax.set_xlabel("number of classes K")
    ax.set_ylabel("-2 x criterion (lower is better)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("information criteria against K (elbow plot)", fontsize=10)
    return fig


def figures(comp: ComparisonResult) -> dict[str, Figure]:
    """The report's figures: ``scores``, ``elbow`` (latent class candidates), ``posterior``,
    ``class_profiles`` (a chosen latent
    class model with an EM or VB fit), when AIS ran, ``ais_traces`` and ``ais_acceptance``,
    and with covariates ``membership`` and ``distal`` (:mod:`.covariate_effects`)
    (matplotlib :class:`~matplotlib.figure.Figure` objects, no pyplot)."""
    frame = comp.to_frame()
    out = {"scores": _scores_figure(comp, frame)}
    if (elbow := _elbow_figure(frame)) is not None:
        out["elbow"] = elbow
    if np.isfinite(frame["posterior_prob"].astype(float)).any():
        out["posterior"] = posterior_figure(frame)
    if (profiled := _profiled(comp)) is not None:
        out["class_profiles"] = _profiles_figure(comp, *profiled)
    if any(r is not None for r in comp.ais):
        out["ais_traces"] = _ais_figure(comp, frame)
        out["ais_acceptance"] = _acceptance_figure(comp, frame)
    if comp.covariate_effects is not None:
        out.update(comp.covariate_effects.figures())
    return out


def figure_pngs(comp: ComparisonResult) -> dict[str, bytes]:
    """:func:`figures` rendered as PNG bytes (100 dpi)."""
    return {key: png(fig) for key, fig in figures(comp).items()}


CAPTIONS = {
    "scores": "Every score against the number of free parameters (left) and relative to "
              "each method's best candidate (right; AIS error bars are 2 standard errors). A "
              "candidate far below all others is marked at the lower edge with its best "
              "value, so that it does not squash the rest.",
    "elbow": "The information criteria of the latent class candidates against the number of "
             "classes on the deviance scale applied papers print (-2 x the log-evidence-scale "
             "score; lower is better): where a curve flattens (the elbow) more classes stop "
             "paying for their parameters.",
    "posterior": "Posterior model probabilities under a uniform prior over the candidates, "
                 "with 95% intervals propagating the AIS standard errors.",
    "class_profiles": "Class profiles of the chosen model (highest log evidence): for every "
                      "item response (the second category of a binary item, every category "
                      "otherwise) its probability in each class, from the EM estimate (the VB "
                      "posterior means when EM did not run); the legend gives each class's "
                      "share.",
    "ais_traces": "AIS diagnostics: every chain's running log weight ln w_c against the "
                  "temperature tau. Top: minus tau times the EM log-likelihood, so at tau = 1 "
                  "the curves end at ln p(y|m) - loglik, on the scale of the VB bound F* "
                  "(dashed) and the exact evidence (dotted); an estimate below F* is "
                  "unreliable. Bottom: each chain about the running estimate; their spread "
                  "at tau = 1 is what the standard error and ESS summarise.",
    "ais_acceptance": "Metropolis-Hastings acceptance rate in each quarter of the annealing "
                      "schedule (Beal & Ghahramani Fig. 6c).",
    "membership": "Class membership probabilities P(class | x) against the first covariate "
                  "(the others at their means or reference levels), from the latent class "
                  "regression with the best BIC.",
    "distal": "The distal outcome by class: means with 95% intervals (a continuous outcome) "
              "or the class-conditional distribution (a categorical one).",
}
