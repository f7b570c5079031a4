"""HLC trees drawn as text and as a figure, and compared by their leaf bipartitions.

Root walking leaves an HLC model's distribution unchanged (:mod:`.root_walk`), so two learned
trees are the same model up to the root and the labels of hidden states when they cut the
leaves the same way and their hidden nodes have the same cardinalities. Every edge between two
hidden nodes splits the leaves in two (:func:`bipartitions`); the Robinson-Foulds distance is
the number of splits found in one tree and not the other (:func:`robinson_foulds`; edges to
leaves split off one leaf and are left out).

A hidden node's *class profile* (:func:`node_profiles`, :func:`profiles_figure`) is
``P(item | H = k)`` for the items it explains: its child leaves as the tree is drawn, or all the
leaves below it when it has none. With the model walked to root ``H`` (:mod:`.root_walk`), the
state of every node given ``H`` follows down the tree, ``P(X_c | H) = P(X_pa | H) P(X_c |
X_pa)``, one product of tables per edge.
"""

from __future__ import annotations

import numpy as np

from ..params import to_tables
from ..structure import Structure
from .root_walk import walk_root

__all__ = ["bipartitions", "bracket", "node_profiles", "profiles_figure", "robinson_foulds",
           "same_tree", "tree_figure", "tree_text"]


def _label(s: Structure, i: int) -> str:
    return f"{s.nodes[i]} ({s.cardinalities[i]} states)" if s.hidden[i] else s.nodes[i]


def tree_text(structure: Structure) -> str:
    """The tree from its root down, one node a line, e.g.::

        H0 (2 states)
        |-- H1 (2 states)
        |   |-- A
        |   `-- B
        `-- C
    """
    s = structure
    lines = [_label(s, s.root)]

    def down(v: int, indent: str) -> None:
        kids = s.children[v]
        for j, c in enumerate(kids):
            last = j == len(kids) - 1
            lines.append(f"{indent}{'`-- ' if last else '|-- '}{_label(s, c)}")
            down(c, indent + ("    " if last else "|   "))

    down(s.root, "")
    return "\n".join(lines)


def bracket(structure: Structure) -> str:
    """One line, e.g. ``H0:2(H1:2(A,B),C)``."""
    s = structure

    def one(v: int) -> str:
        if not s.hidden[v]:
            return s.nodes[v]
        return f"{s.nodes[v]}:{s.cardinalities[v]}(" + ",".join(one(c) for c in s.children[v]) \
            + ")"

    return one(s.root)


def _leaves_below(s: Structure, v: int) -> frozenset[str]:
    if not s.hidden[v]:
        return frozenset({s.nodes[v]})
    return frozenset().union(*(_leaves_below(s, c) for c in s.children[v]))


def bipartitions(structure: Structure) -> set[frozenset[str]]:
    """The leaf splits of the edges between hidden nodes, each as the side without the
    alphabetically first leaf (so that a split has one spelling whatever the root)."""
    s = structure
    leaves = frozenset(s.observed_names)
    first = min(leaves)
    out = set()
    for c in s.hidden_nodes:
        if c == s.root:
            continue
        below = _leaves_below(s, c)
        out.add(leaves - below if first in below else below)
    return out


def robinson_foulds(a: Structure, b: Structure) -> int:
    """The Robinson-Foulds distance of two HLC trees over the same leaves (module docstring)."""
    return len(bipartitions(a) ^ bipartitions(b))


def same_tree(a: Structure, b: Structure) -> bool:
    """Whether two HLC models are equal up to root walking and hidden labels: the same leaf
    splits, and the same cardinality on every hidden node (matched by the leaves below it
    when both are rooted at the side of the first leaf)."""
    return robinson_foulds(a, b) == 0 and _cardinality_map(a) == _cardinality_map(b)


def _cardinality_map(s: Structure) -> set[tuple[frozenset[frozenset[str]], int]]:
    """Each hidden node as (the set of leaf splits at its edges, its cardinality)."""
    leaves = frozenset(s.observed_names)
    first = min(leaves)

    def split(c: int) -> frozenset[str]:
        below = _leaves_below(s, c)
        return leaves - below if first in below else below

    out = set()
    for h in s.hidden_nodes:
        edges = [split(c) for c in s.children[h]] + ([split(h)] if s.parents[h] else [])
        out.add((frozenset(edges), s.cardinalities[h]))
    return out


#: Leaf names longer than this are written downwards from the leaf (else side by side in boxes).
SIDEWAYS_NAMES = 10
#: Inches per character of an 8-point label (an upper estimate).
INCHES_PER_CHARACTER = 0.075


def tree_figure(structure: Structure, title: str = "learned tree"):
    """The tree as a matplotlib figure: hidden nodes as circles labelled with their
    cardinality, leaves as boxes along the bottom (written downwards when a name is longer
    than :data:`SIDEWAYS_NAMES` characters, so that no two overlap)."""
    from ..comparison.figures import new_figure

    s = structure
    x: dict[int, float] = {}
    depth: dict[int, int] = {}
    count = [0]

    def place(v: int, d: int) -> None:
        depth[v] = d
        if not s.hidden[v]:
            x[v] = float(count[0])
            count[0] += 1
            return
        for c in s.children[v]:
            place(c, d + 1)
        x[v] = sum(x[c] for c in s.children[v]) / len(s.children[v])

    place(s.root, 0)
    bottom = max(depth.values())
    y = {v: float(bottom - depth[v]) if s.hidden[v] else 0.0 for v in x}
    longest = max(len(s.nodes[v]) for v in x if not s.hidden[v])
    sideways = longest > SIDEWAYS_NAMES
    hanging = INCHES_PER_CHARACTER * longest + 0.3 if sideways else 0.0   # inches below y = 0
    height = 1.2 * bottom + 1.5
    fig = new_figure(figsize=(max(5.0, 0.7 * count[0] + 1.0), height + hanging),
                     layout="constrained")
    ax = fig.subplots()
    for v in x:
        for c in s.children[v]:
            ax.plot([x[v], x[c]], [y[v], y[c]], color="0.5", lw=1.0, zorder=1)
    for v in x:
        text = f"{s.nodes[v]}\n|{s.cardinalities[v]}|" if s.hidden[v] else s.nodes[v]
        box = ({"boxstyle": "circle", "fc": "#dbe9f6", "ec": "tab:blue"} if s.hidden[v]
               else {"boxstyle": "round", "fc": "white", "ec": "0.3"})
        down = sideways and not s.hidden[v]
        ax.text(x[v], y[v], text, ha="center", va="top" if down else "center",
                rotation=90 if down else 0, fontsize=8, bbox=box, zorder=2)
    per_inch = (bottom + 1.2) / height   # data units per inch, vertically
    ax.set_xlim(-0.8, count[0] - 0.2)
    ax.set_ylim(-0.6 - hanging * per_inch, bottom + 0.6)
    ax.set_axis_off()
    ax.set_title(title, fontsize=10)
    return fig


def _shown_leaves(s: Structure, h: int) -> list[int]:
    kids = [c for c in s.children[h] if not s.hidden[c]]
    if kids:
        return kids
    below = _leaves_below(s, h)
    return [i for i in s.observed_nodes if s.nodes[i] in below]


def node_profiles(structure: Structure, params) -> dict[str, dict[str, np.ndarray]]:
    """``{hidden node: {item: (k, r) array P(item | node = state)}}`` for the items each
    hidden node explains (module docstring), rows summing to one."""
    out = {}
    for h in structure.hidden_nodes:
        s, p = walk_root(structure, params, structure.nodes[h])
        tables = to_tables(s, p)
        given = {s.root: np.eye(s.cardinalities[s.root])}
        for v in s.topological_order:
            if v != s.root:
                given[v] = given[s.parents[v][0]] @ np.asarray(tables[v])
        out[structure.nodes[h]] = {structure.nodes[i]: given[i]
                                   for i in _shown_leaves(structure, h)}
    return out


def profiles_figure(structure: Structure, params, title: str = "class profiles"):
    """A heatmap per hidden node: its states (rows) against the items it explains (columns;
    a binary item's second category, every category of the others), the cell
    ``P(item = category | node = state)`` (:func:`node_profiles`)."""
    from ..comparison.figures import new_figure

    profiles = node_profiles(structure, params)
    panels = []
    for name, items in profiles.items():
        cols = [(item, c) for item, t in items.items()
                for c in (range(1, 2) if t.shape[1] == 2 else range(t.shape[1]))]
        values = np.column_stack([items[item][:, c] for item, c in cols])
        labels = [item if items[item].shape[1] == 2 else
                  f"{item}={structure.labels[structure.index(item)][c]}" for item, c in cols]
        panels.append((name, values, labels))
    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    width = max(len(p[2]) for p in panels)
    fig = new_figure(figsize=(min(18.0, ncol * max(3.0, 0.3 * width + 1.2)), 1.8 * nrow + 0.6),
                     layout="constrained")
    axes = np.asarray(fig.subplots(nrow, ncol, squeeze=False)).ravel()
    for ax, (name, values, labels) in zip(axes, panels, strict=False):
        image = ax.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
        ax.set_yticks(range(values.shape[0]), [f"{name}={k}" for k in range(values.shape[0])],
                      fontsize=7)
        ax.set_xticks(range(len(labels)), labels, fontsize=6, rotation=90)
    for ax in axes[len(panels):]:
        ax.set_axis_off()
    fig.colorbar(image, ax=list(axes[:len(panels)]), shrink=0.8,
                 label="P(item = category | state)")
    fig.suptitle(title, fontsize=10)
    return fig
