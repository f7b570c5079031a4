"""Structures built from a data set: the constructors :func:`latent_class`, :func:`hlc` and
:func:`dag` (the kinds of :class:`~lcbayes.Structure`), with the data's column names and
category labels for the observed nodes and clear errors for malformed trees and graphs.

Example::

    lc = lcb.latent_class(data, 3)
    tree = lcb.hlc(data, {"H": ["H1", "A", "B"], "H1": ["C", "D", "E"]}, {"H": 2, "H1": 3})
    bip = lcb.dag(data, {"y1": ["s1"], "y2": ["s1", "s2"]}, {"s1": 2, "s2": 2})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .data import Dataset
from .errors import StructureError, shown
from .structure import MAX_ENUMERATED_STATES, Structure

__all__ = ["dag", "hlc", "latent_class"]


def _dataset(data):
    """``data`` as a :class:`~lcbayes.Dataset` where it is a DataFrame, an array of codes or
    a list of rows (read as :func:`lcbayes.validation.as_dataset` reads them); anything else
    (a ``Dataset``, :class:`~lcbayes.PatternBlocks`) as it is, or an error naming what is
    accepted where it has no columns."""
    if isinstance(data, pd.DataFrame | np.ndarray | list) or not hasattr(data, "cardinalities"):
        from .validation import as_dataset  # JAX only once a model is fitted

        return as_dataset(data)
    return data


def latent_class(data: Dataset | pd.DataFrame | np.ndarray, n_classes: int, *,
                 name: str = "class") -> Structure:
    """A latent class model: one hidden class ``name`` with every data column as a child.

    ``n_classes = 1`` is the independence model. The dimension is
    ``(K - 1) + K sum_j (r_j - 1)`` (Karčiauskas §3.4.1).
    """
    data = _dataset(data)
    _check_cardinality(name, n_classes, "n_classes")
    if name in data.columns:
        raise StructureError(
            f"the hidden class is called {name!r}, which is also a data column: pass another "
            "name=..."
        )
    nodes = (name, *data.columns)
    return Structure(
        nodes=nodes,
        cardinalities=(int(n_classes), *data.cardinalities),
        hidden=(True,) + (False,) * data.n_columns,
        parents=((),) + ((0,),) * data.n_columns,
        kind="latent_class",
        labels=(tuple(range(int(n_classes))), *data.labels),
    )


def hlc(
    data: Dataset | pd.DataFrame | np.ndarray, tree: Mapping[str, Sequence[str]],
    cardinalities: Mapping[str, int],
) -> Structure:
    """A hierarchical latent class model: a tree of hidden nodes whose leaves are data columns.

    Args:
        data: the data set whose columns are the leaves.
        tree: for every hidden node, its children (hidden nodes or data columns), e.g.
            ``{"H": ["H1", "H2"], "H1": ["A", "B", "C"], "H2": ["D", "E"]}``.
        cardinalities: the number of states of every hidden node (``1`` is allowed).
    """
    data = _dataset(data)
    hidden_names = list(tree)
    for h in hidden_names:
        if h in data.columns:
            raise StructureError(
                f"{h!r} is a data column but has children in the tree: observed nodes must be "
                "leaves of an HLC model"
            )
        if h not in cardinalities:
            raise StructureError(f"hidden node {h!r} has no entry in cardinalities")
        if not tree[h]:
            raise StructureError(f"hidden node {h!r} has no children; every hidden node needs one")
    extra = [h for h in cardinalities if h not in tree]
    if extra:
        raise StructureError(
            f"cardinalities names {extra}, which are not hidden nodes with children in the tree"
        )
    parent_of: dict[str, str] = {}
    for h, kids in tree.items():
        for c in kids:
            if c in parent_of:
                raise StructureError(
                    f"{c!r} has two parents ({parent_of[c]!r} and {h!r}): an HLC model is a tree"
                )
            if c not in tree and c not in data.columns:
                raise StructureError(
                    f"leaf {c!r} is not a data column; the data have {list(data.columns)}"
                )
            parent_of[c] = h
    roots = [h for h in hidden_names if h not in parent_of]
    if len(roots) != 1:
        raise StructureError(
            f"an HLC model needs exactly one root, found {roots or 'none (a cycle)'}"
        )
    leaves = [c for c in data.columns if c in parent_of]
    if not leaves:
        raise StructureError("the tree has no data column as a leaf")
    parents = {c: [p] for c, p in parent_of.items()}
    hidden = {h: cardinalities[h] for h in _tree_order(roots[0], tree)}  # _build checks them
    return _build(data, parents, hidden, leaves, kind="hlc")


def dag(
    data: Dataset | pd.DataFrame | np.ndarray, parents: Mapping[str, Sequence[str]],
    hidden: Mapping[str, int],
) -> Structure:
    """A discrete DAG whose hidden nodes have no observed parents.

    Args:
        data: the data set; every observed node must be one of its columns.
        parents: for each node, its parents (nodes with no parents may be left out), e.g.
            Beal & Ghahramani's true structure
            ``{"y1": ["s1"], "y2": ["s1", "s2"], "y3": ["s1", "s2"], "y4": ["s2"]}``.
        hidden: the hidden nodes and their cardinalities, e.g. ``{"s1": 2, "s2": 2}``.

    The model contains the hidden nodes and every data column named in ``parents``.
    """
    data = _dataset(data)
    named = set(parents) | {p for pa in parents.values() for p in pa}
    for h in hidden:
        if h in data.columns:
            raise StructureError(f"hidden node {h!r} has the name of a data column; rename it")
    unknown = sorted(n for n in named if n not in hidden and n not in data.columns)
    if unknown:
        raise StructureError(
            f"{unknown} are neither data columns nor hidden nodes; the data have "
            f"{list(data.columns)} and hidden={dict(hidden)}"
        )
    observed = [c for c in data.columns if c in named]
    return _build(data, {k: list(v) for k, v in parents.items()}, dict(hidden), observed, "dag")


def _tree_order(root: str, tree: Mapping[str, Sequence[str]]) -> list[str]:
    """Hidden nodes of a tree, parents before children."""
    order, stack = [], [root]
    while stack:
        h = stack.pop(0)
        order.append(h)
        stack.extend(c for c in tree[h] if c in tree)
    return order


def _check_cardinality(name: str, card: object, what: str) -> None:
    if isinstance(card, bool) or not isinstance(card, int | np.integer) or card < 1:
        raise StructureError(f"{what} for {name!r} must be an integer >= 1, got {shown(card)}")


def _build(
    data: Dataset,
    parents: Mapping[str, Sequence[str]],
    hidden: Mapping[str, int],
    observed: Sequence[str],
    kind: str,
) -> Structure:
    for h, card in hidden.items():
        _check_cardinality(h, card, "cardinality")
    nodes = (*hidden, *observed)
    index = {n: i for i, n in enumerate(nodes)}
    data_labels = dict(zip(data.columns, data.labels, strict=True))
    for child, pa in parents.items():
        if len(set(pa)) != len(pa):
            raise StructureError(f"node {child!r} lists a parent twice: {list(pa)}")
        if child in pa:
            raise StructureError(f"node {child!r} is its own parent")
    structure = Structure(
        nodes=nodes,
        cardinalities=(
            *(int(c) for c in hidden.values()), *(len(data_labels[c]) for c in observed)
        ),
        hidden=(True,) * len(hidden) + (False,) * len(observed),
        parents=tuple(tuple(index[p] for p in parents.get(n, ())) for n in nodes),
        kind=kind,
        labels=(*(tuple(range(int(c))) for c in hidden.values()),
                *(data_labels[c] for c in observed)),
    )
    if kind == "dag" and structure.n_enumerated_states > MAX_ENUMERATED_STATES:
        raise StructureError(
            f"exact inference would enumerate {structure.n_enumerated_states} joint states of "
            f"the hidden nodes and observed parents (limit {MAX_ENUMERATED_STATES}); reduce "
            "hidden cardinalities or observed parents"
        )
    return structure
