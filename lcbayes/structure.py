"""Model structures: discrete Bayesian networks with hidden variables.

A :class:`Structure` is a DAG of named discrete nodes, each with a cardinality, a hidden flag and an
ordered tuple of parents. Its conditional probability table (CPT) for node ``i`` has shape
``(*parent_cardinalities, r_i)``; joint parent configurations are numbered in C order (the last
parent varies fastest, Beal & Ghahramani §4: ``l = 2 (s1 - 1) + s2``).

Three kinds are supported, each with its exact inference route (:mod:`lcbayes.inference`) and
its constructor from a data set (:mod:`lcbayes.constructors`):

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
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .data import Dataset
from .errors import DataError, StructureError
from .render import plural

__all__ = ["KINDS", "MAX_ENUMERATED_STATES", "Structure", "json_label"]

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
            states = plural(self.cardinalities[i], "state")
            lines.append(f"{self.nodes[i]} ({role}, {states}) <- {pa}")
        return "\n".join(lines)

    def categories(self) -> dict[str, tuple[Hashable, ...]]:
        """``{column: labels}`` of the observed nodes: how data for this model are coded."""
        return {self.nodes[i]: tuple(self.labels[i]) for i in self.observed_nodes}

    def to_dict(self) -> dict:
        """JSON-ready description; :meth:`from_dict` reads it back (labels that are not JSON
        scalars are written as text)."""
        return {
            "kind": self.kind,
            "nodes": [
                {
                    "name": self.nodes[i],
                    "cardinality": self.cardinalities[i],
                    "hidden": self.hidden[i],
                    "parents": [self.nodes[p] for p in self.parents[i]],
                    "labels": [json_label(label) for label in self.labels[i]],
                }
                for i in range(self.n_nodes)
            ],
            "n_parameters": self.n_parameters,
        }

    @classmethod
    def from_dict(cls, spec: Mapping) -> Structure:
        """The structure of :meth:`to_dict` (a :class:`StructureError` if it is malformed)."""
        try:
            nodes = spec["nodes"]
            names = [str(n["name"]) for n in nodes]
            index = {name: i for i, name in enumerate(names)}
            return cls(
                nodes=tuple(names),
                cardinalities=tuple(int(n["cardinality"]) for n in nodes),
                hidden=tuple(bool(n["hidden"]) for n in nodes),
                parents=tuple(tuple(index[p] for p in n["parents"]) for n in nodes),
                kind=str(spec["kind"]),
                labels=tuple(tuple(n.get("labels", range(int(n["cardinality"]))))
                             for n in nodes),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, StructureError):
                raise
            raise StructureError(f"not a structure description (Structure.to_dict): {exc!r}"
                                 ) from None

    def check_data(self, data: Dataset) -> Dataset:
        """``data`` restricted to this structure's observed columns and coded with its labels
        (rows may lack some categories); a :class:`StructureError` names a missing column or
        a value the structure does not know."""
        missing = [c for c in self.observed_names if c not in data.columns]
        if missing:
            raise StructureError(
                f"the data lack column(s) {missing} that the structure observes; "
                f"the data have {list(data.columns)}"
            )
        data = data.select(self.observed_names)
        try:
            return data.with_categories(self.categories())
        except DataError as exc:
            raise StructureError(f"{exc}; build the structure from this data set") from None


def json_label(label: Hashable):
    """A category label as JSON holds it: str, int, float and bool as they are, else text."""
    if isinstance(label, bool | np.bool_):
        return bool(label)
    if isinstance(label, int | np.integer):
        return int(label)
    if isinstance(label, float | np.floating):
        return float(label)
    return label if isinstance(label, str) else str(label)
