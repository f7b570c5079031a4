"""Model structures: discrete Bayesian networks with hidden variables.

A :class:`Structure` is a DAG of named discrete nodes, each with a cardinality, a hidden flag and an
ordered tuple of parents. Its conditional probability table (CPT) for node ``i`` has shape
``(*parent_cardinalities, r_i)``; joint parent configurations are numbered in C order (the last
parent varies fastest, Beal & Ghahramani §4: ``l = 2 (s1 - 1) + s2``).

Three kinds are supported, each with its exact inference route (:mod:`lcbayes.inference`):

* ``latent_class`` — one hidden root with every observed variable as a child (a naive Bayes net
  with a hidden class, Whiley §1.2);
* ``hlc`` — a hierarchical latent class model: a tree of hidden nodes with observed leaves
  (Zhang; Karčiauskas §1.3);
* ``dag`` — any DAG whose hidden nodes have no observed parents, e.g. Beal & Ghahramani's
  bipartite class (hidden roots, observed children with any subset of hidden parents). Observed
  nodes may have observed parents too.

Structures are immutable and hashable, so they are static arguments of ``jax.jit``: every number
of shape comes from the structure at trace time.

The standard dimension (number of free parameters) is ``d = sum_i q_i (r_i - 1)`` with ``q_i``
the number of parent configurations of node ``i`` (Beal & Ghahramani eq. 23; Karčiauskas 2.13).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .data import Dataset
from .errors import StructureError

__all__ = ["MAX_ENUMERATED_STATES", "Structure", "dag", "hlc", "latent_class"]

#: The DAG engine enumerates the joint states of the hidden nodes (and of observed nodes that
#: are parents); above this many states it refuses the structure.
MAX_ENUMERATED_STATES = 2**16

KINDS = ("latent_class", "hlc", "dag")


@dataclass(frozen=True)
class Structure:
    """A discrete DAG with hidden nodes.

    Attributes:
        nodes: node names; hidden nodes first, then observed nodes in data-column order.
        cardinalities: number of states per node.
        hidden: whether each node is hidden.
        parents: for each node, the indices of its parents (order fixes the CPT axes).
        kind: ``"latent_class"``, ``"hlc"`` or ``"dag"``; chooses the inference route.
        labels: per node, the state labels (data labels for observed nodes, ``0..r-1`` for
            hidden ones). Not part of equality or hashing.
    """

    nodes: tuple[str, ...]
    cardinalities: tuple[int, ...]
    hidden: tuple[bool, ...]
    parents: tuple[tuple[int, ...], ...]
    kind: str
    labels: tuple[tuple[Hashable, ...], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.nodes)
        if not (len(self.cardinalities) == len(self.hidden) == len(self.parents) == n):
            raise StructureError("nodes, cardinalities, hidden and parents must have equal length")
        if self.kind not in KINDS:
            raise StructureError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if len(set(self.nodes)) != n:
            raise StructureError(f"node names must be unique, got {list(self.nodes)}")
        for name, card in zip(self.nodes, self.cardinalities, strict=True):
            if isinstance(card, bool) or not isinstance(card, int | np.integer) or card < 1:
                raise StructureError(f"node {name!r} has cardinality {card!r}; it must be >= 1")
        for i, pa in enumerate(self.parents):
            if any(not 0 <= p < n or p == i for p in pa) or len(set(pa)) != len(pa):
                raise StructureError(f"node {self.nodes[i]!r} has invalid parents {pa}")
            if self.hidden[i] and any(not self.hidden[p] for p in pa):
                observed = [self.nodes[p] for p in pa if not self.hidden[p]]
                raise StructureError(
                    f"hidden node {self.nodes[i]!r} has observed parent(s) {observed}; hidden "
                    "nodes may only have hidden parents"
                )
        if not any(not h for h in self.hidden):
            raise StructureError("the structure has no observed node")
        _ = self.topological_order  # raises on a cycle
        if not self.labels:
            object.__setattr__(
                self, "labels", tuple(tuple(range(c)) for c in self.cardinalities)
            )

    # ------------------------------------------------------------------ derived facts
    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @cached_property
    def hidden_nodes(self) -> tuple[int, ...]:
        """Indices of hidden nodes."""
        return tuple(i for i, h in enumerate(self.hidden) if h)

    @cached_property
    def observed_nodes(self) -> tuple[int, ...]:
        """Indices of observed nodes, in data-column order."""
        return tuple(i for i, h in enumerate(self.hidden) if not h)

    @property
    def observed_names(self) -> tuple[str, ...]:
        """Names of the observed nodes: the data columns this structure models."""
        return tuple(self.nodes[i] for i in self.observed_nodes)

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """For each node, the indices of its children."""
        kids: list[list[int]] = [[] for _ in self.nodes]
        for i, pa in enumerate(self.parents):
            for p in pa:
                kids[p].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def topological_order(self) -> tuple[int, ...]:
        """Node indices with every parent before its children (raises on a cycle)."""
        order: list[int] = []
        state = [0] * self.n_nodes  # 0 new, 1 on stack, 2 done

        def visit(i: int, path: list[int]) -> None:
            if state[i] == 2:
                return
            if state[i] == 1:
                cycle = [*path[path.index(i):], i]
                raise StructureError(
                    "the graph has a cycle: " + " -> ".join(self.nodes[j] for j in cycle)
                )
            state[i] = 1
            for p in self.parents[i]:
                visit(p, [*path, i])
            state[i] = 2
            order.append(i)

        for i in range(self.n_nodes):
            visit(i, [])
        return tuple(order)

    @cached_property
    def enumerated_nodes(self) -> tuple[int, ...]:
        """Nodes whose joint states the enumeration engine sums over: the hidden nodes and the
        observed nodes that are parents (their values may be missing). Every parent of every
        node is among them."""
        return tuple(i for i in range(self.n_nodes) if self.hidden[i] or self.children[i])

    @property
    def n_enumerated_states(self) -> int:
        """Number of joint states of :attr:`enumerated_nodes`."""
        return math.prod(self.cardinalities[i] for i in self.enumerated_nodes)

    def parent_cardinalities(self, i: int) -> tuple[int, ...]:
        return tuple(self.cardinalities[p] for p in self.parents[i])

    def n_configs(self, i: int) -> int:
        """Number of joint parent configurations ``q_i`` of node ``i``."""
        return math.prod(self.parent_cardinalities(i))

    def cpt_shape(self, i: int) -> tuple[int, ...]:
        """Shape of node ``i``'s CPT: ``(*parent_cardinalities, r_i)``."""
        return (*self.parent_cardinalities(i), self.cardinalities[i])

    @property
    def table_shapes(self) -> tuple[tuple[int, int], ...]:
        """``(q_i, r_i)`` of every node's CPT as a matrix (parent configurations by values)."""
        return tuple((self.n_configs(i), r) for i, r in enumerate(self.cardinalities))

    @property
    def n_parameters(self) -> int:
        """Standard dimension ``sum_i q_i (r_i - 1)`` (Beal & Ghahramani eq. 23)."""
        return sum(self.n_configs(i) * (r - 1) for i, r in enumerate(self.cardinalities))

    def index(self, name: str) -> int:
        """Index of the node called ``name``."""
        try:
            return self.nodes.index(name)
        except ValueError:
            raise StructureError(f"no node {name!r}; nodes are {list(self.nodes)}") from None

    @property
    def root(self) -> int:
        """The single hidden root of a latent class or HLC structure."""
        roots = [i for i in self.hidden_nodes if not self.parents[i]]
        if self.kind == "dag" or len(roots) != 1:
            raise StructureError(f"a {self.kind} structure has no single hidden root")
        return roots[0]

    @property
    def n_classes(self) -> int | None:
        """Number of classes of a latent class model (``None`` for other kinds)."""
        return self.cardinalities[self.root] if self.kind == "latent_class" else None

    def describe(self) -> str:
        """One line per node: name, cardinality, parents."""
        lines = []
        for i in self.topological_order:
            role = "hidden" if self.hidden[i] else "observed"
            pa = ", ".join(self.nodes[p] for p in self.parents[i]) or "-"
            lines.append(f"{self.nodes[i]} ({role}, {self.cardinalities[i]} states) <- {pa}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready description."""
        return {
            "kind": self.kind,
            "nodes": [
                {
                    "name": self.nodes[i],
                    "cardinality": self.cardinalities[i],
                    "hidden": self.hidden[i],
                    "parents": [self.nodes[p] for p in self.parents[i]],
                }
                for i in range(self.n_nodes)
            ],
            "n_parameters": self.n_parameters,
        }

    def check_data(self, data: Dataset) -> Dataset:
        """``data`` restricted to this structure's observed columns, checked for agreement."""
        missing = [c for c in self.observed_names if c not in data.columns]
        if missing:
            raise StructureError(
                f"the data lack column(s) {missing} that the structure observes; "
                f"the data have {list(data.columns)}"
            )
        data = data.select(self.observed_names)
        for j, i in enumerate(self.observed_nodes):
            if tuple(data.labels[j]) != tuple(self.labels[i]):
                raise StructureError(
                    f"column {self.nodes[i]!r} has categories {list(data.labels[j])} but the "
                    f"structure was built for {list(self.labels[i])}; build the structure from "
                    "this data set"
                )
        return data


# ---------------------------------------------------------------------- constructors
def latent_class(data: Dataset, n_classes: int, name: str = "class") -> Structure:
    """A latent class model: one hidden class ``name`` with every data column as a child.

    ``n_classes = 1`` is the independence model. The dimension is
    ``(K - 1) + K sum_j (r_j - 1)`` (Karčiauskas §3.4.1).
    """
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
    data: Dataset, tree: Mapping[str, Sequence[str]], cardinalities: Mapping[str, int]
) -> Structure:
    """A hierarchical latent class model: a tree of hidden nodes whose leaves are data columns.

    Args:
        data: the data set whose columns are the leaves.
        tree: for every hidden node, its children (hidden nodes or data columns), e.g.
            ``{"H": ["H1", "H2"], "H1": ["A", "B", "C"], "H2": ["D", "E"]}``.
        cardinalities: the number of states of every hidden node (``1`` is allowed).
    """
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
    data: Dataset, parents: Mapping[str, Sequence[str]], hidden: Mapping[str, int]
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
        raise StructureError(f"{what} for {name!r} must be an integer >= 1, got {card!r}")


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
