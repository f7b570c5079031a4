"""The HTML report of a structure search: the path of moves and the model chosen.

It holds the search's settings and versions, the path as a table, the score of the current
model against time with every candidate tried (Karčiauskas 2005, Figs 6.4-6.7 plot the same
against time for SplitMerge and Standard3), the chosen model's class profiles (an HLC model:
its tree, :func:`.tree_drawing.tree_figure`, and every hidden node's class profile,
:func:`.tree_drawing.profiles_figure`) and its structure.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..render import (
    fmt_setting,
    html_document,
    html_figure,
    html_table,
    kv_table,
    png,
    versions,
    write_text,
)
from .tree_drawing import profiles_figure as tree_profiles
from .tree_drawing import tree_figure

if TYPE_CHECKING:
    from .result import LearnResult

__all__ = ["score_figure", "write_html"]

#: Marker colour of each operation in the score figure.
_COLOURS = {"start": "black", "split": "tab:blue", "merge": "tab:orange",
            "adjust": "tab:green", "restarts": "tab:purple", "add_node": "tab:blue",
            "add_state": "tab:cyan", "relocate": "tab:green", "remove_node": "tab:orange",
            "remove_state": "tab:red", "latent_class": "tab:purple"}


def score_figure(result: LearnResult):
    """The current model's score against time (a step line) and every candidate tried
    (filled: accepted, hollow: rejected), labelled with its step of the path table where the
    label has room (:func:`~lcbayes.comparison.figures.label_points`)."""
    from ..comparison.figures import label_points, new_figure

    frame = result.to_frame()
    fig = new_figure(figsize=(7.0, 4.0), layout="constrained")
    ax = fig.subplots()
    best = frame["score"].where(frame["accepted"]).ffill().cummax()
    ax.step(frame["seconds"], best, where="post", color="0.4", lw=1.2, label="current model")
    for op, part in frame.groupby("operation", sort=False):
        colour = _COLOURS.get(op, "grey")
        ax.scatter(part["seconds"], part["score"], s=36, label=op,
                   facecolors=np.where(part["accepted"], colour, "none"), edgecolors=colour)
    ax.set_xlabel("seconds since the start")
    ax.set_ylabel(result.score_name)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"{result.method}: score against time (labels: steps of the path table)",
                 fontsize=10)
    accepted_first = frame.sort_values("accepted", ascending=False, kind="stable")
    label_points(ax, accepted_first["seconds"], accepted_first["score"],
                 accepted_first["step"], fontsize=7)
    return fig


def _path_table(result: LearnResult) -> str:
    rows = [[str(m.step), m.operation, m.hidden, f"{m.loglik:.2f}", f"{m.score:.2f}",
             "yes" if m.accepted else "no", f"{m.seconds:.2f}"] for m in result.path]
    return html_table(["step", "move", "hidden", "loglik", result.score_name, "accepted",
                       "seconds"], rows,
                      row_classes=["best" if m.accepted else "" for m in result.path])


def write_html(result: LearnResult, path: str | Path, data_name: str | None = None) -> Path:
    """Write the self-contained HTML report of ``result`` to ``path``; returns the path."""
    from ..comparison.figures import profiles_figure

    fit = result.fit
    title = f"lcbayes structure search ({result.method})"
    settings = {"data": data_name or "(in memory)", "rows": fit.n_rows,
                "score": result.score_name, "method": result.method, "seed": result.seed,
                "seconds": round(result.seconds, 2), "stopped": result.stopped,
                **result.settings}
    figures = {"score_path": (score_figure(result), "The score of the current model (grey "
                              "step line) and of every candidate move against time; filled "
                              "markers were accepted. Labels: the step numbers of the path "
                              "table above (accepted moves first, each where it has room).")}
    if result.structure.kind == "hlc":
        figures["tree"] = (tree_figure(result.structure, f"chosen model ({result.method})"),
                           "The chosen HLC tree: hidden nodes (circles) with their numbers of "
                           "states, observed items (boxes) as leaves.")
        figures["class_profiles"] = (tree_profiles(
            result.structure, result.params, "class profiles of every hidden node"),
            "Each hidden node's states (rows) against the items it explains (its own leaves, "
            "or every leaf below it when it has none): P(item = category | state); a binary "
            "item shows its second category.")
    if result.structure.kind == "latent_class":
        figures["class_profiles"] = (profiles_figure(
            result.structure, fit, f"chosen model: {result.n_classes} classes (EM estimate)"),
            "Class profiles of the chosen model: every item response probability in each "
            "class (class shares in the legend).")
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<pre>{html.escape(result.summary())}</pre>",
             "<h2>Settings</h2>", kv_table(settings, cell=fmt_setting),
             "<h2>Path of moves</h2>", _path_table(result), "<h2>Figures</h2>"]
    parts += [html_figure(key, png(fig), caption) for key, (fig, caption) in figures.items()]
    parts += ["<h2>Chosen model</h2>", f"<pre>{html.escape(result.structure.describe())}</pre>",
              f"<pre>{html.escape(fit.summary())}</pre>",
              "<h2>Versions</h2>", kv_table(versions(), cell=str)]
    return write_text(path, html_document(title, "\n".join(parts)))
