"""HLC trees drawn as text and as a figure, and compared by their leaf bipartitions.

Root walking leaves an HLC model's distribution unchanged (:mod:`.root_walk`), so two learned
trees are the same model up to the root and the labels of hidden states when they cut the
leaves the same way and their hidden nodes have the same cardinalities. Every edge between two
hidden nodes splits the leaves in two (:func:`bipartitions`); the Robinson-Foulds distance is
the number of splits found in one tree and not the other (:func:`robinson_foulds`; edges to
leaves split off one leaf and are left out).
"""

from __future__ import annotations

from ..structure import Structure

__all__ = ["bipartitions", "bracket", "robinson_foulds", "same_tree", "tree_figure",
           "tree_text"]


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


def _cardinality_map(s: Structure) -> set[tuple[frozenset[str], int]]:
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


def tree_figure(structure: Structure, title: str = "learned tree"):
    """The tree as a matplotlib figure: hidden nodes as circles labelled with their
    cardinality, leaves as boxes along the bottom."""
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
    fig = new_figure(figsize=(max(5.0, 0.7 * count[0] + 1.0), 1.2 * bottom + 1.5),
                     layout="constrained")
    ax = fig.subplots()
    for v in x:
        for c in s.children[v]:
            ax.plot([x[v], x[c]], [y[v], y[c]], color="0.5", lw=1.0, zorder=1)
    for v in x:
        text = f"{s.nodes[v]}\n|{s.cardinalities[v]}|" if s.hidden[v] else s.nodes[v]
        box = ({"boxstyle": "circle", "fc": "#dbe9f6", "ec": "tab:blue"} if s.hidden[v]
               else {"boxstyle": "round", "fc": "white", "ec": "0.3"})
        ax.text(x[v], y[v], text, ha="center", va="center", fontsize=8, bbox=box, zorder=2)
    ax.set_xlim(-0.8, count[0] - 0.2)
    ax.set_ylim(-0.6, bottom + 0.6)
    ax.set_axis_off()
    ax.set_title(title, fontsize=10)
    return fig
