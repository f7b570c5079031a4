"""An HLC model as the cardinality search holds it, and its capacity layout.

Karčiauskas (2005) §3.4.2 and Ch. 7. A :class:`TreeModel` is an HLC structure (a tree of hidden
nodes over the observed leaves, hidden cardinalities ``>= 1``) with its ``(q, r)`` tables. The
search applies every operation at the root (Defs 7.1-7.3): the root and its children's tables
form the latent class model ``LC(M)`` of the thesis (:func:`lc_part`), on which the latent
class split and merge act (:mod:`.operations`); :func:`with_lc_part` puts the result back,
every deeper table unchanged.

For the engines a model is laid out with every hidden node padded to a power-of-two number of
states (:func:`capacities`): the extra states have probability exactly zero (held), and so do
the rows of the tables below them (held at uniform rows, never used). A node's tables can also
be held as they are (``free=``): the partial EM of a split updates only the root and its
children. Models with the same rooted skeleton and capacities share one compiled program.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from ..params import from_tables
from ..structure import Structure
from .mixture import ClassModel, capacity

__all__ = ["TreeModel", "capacities", "lc_part", "padded_structure", "random_tree",
           "with_cardinalities", "with_lc_part"]


class TreeModel(NamedTuple):
    """An HLC ``structure`` and its ``(q_i, r_i)`` ``tables`` in node order."""

    structure: Structure
    tables: tuple[np.ndarray, ...]

    @property
    def params(self) -> dict[str, np.ndarray]:
        return from_tables(self.structure, self.tables)

    def describe(self) -> str:
        """The hidden cardinalities, e.g. ``"H:2 H1:3 H2:1"``."""
        s = self.structure
        return " ".join(f"{s.nodes[h]}:{s.cardinalities[h]}" for h in s.hidden_nodes)

    def pack(self, padded: Structure, free: frozenset[int] | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(flat tables, active, held values)`` in ``padded`` (:func:`padded_structure` of
        this skeleton): the states beyond a node's cardinality weigh zero; ``free`` (default:
        every node) are the nodes whose tables EM estimates, the others are held."""
        flats, actives = [], []
        for i, table in enumerate(self.tables):
            q, r = padded.table_shapes[i]
            big = np.zeros((q, r))
            big[table.shape[0]:, :table.shape[1]] = 1.0 / table.shape[1]
            big[:table.shape[0], :table.shape[1]] = table
            on = np.zeros((q, r), dtype=bool)
            if free is None or i in free:
                on[:table.shape[0], :table.shape[1]] = True
            flats.append(big.ravel())
            actives.append(on.ravel())
        flat = np.concatenate(flats)
        return flat, np.concatenate(actives), flat.copy()

    def unpack(self, flat: np.ndarray, padded: Structure) -> TreeModel:
        """The model with this model's cardinalities whose tables are in ``flat``."""
        bounds = np.cumsum([0] + [q * r for q, r in padded.table_shapes])
        tables = []
        for i, (q, r) in enumerate(self.structure.table_shapes):
            big = np.asarray(flat[bounds[i]:bounds[i + 1]]).reshape(padded.table_shapes[i])
            t = big[:q, :r]
            tables.append(t / t.sum(axis=1, keepdims=True))
        return TreeModel(self.structure, tuple(tables))


def with_cardinalities(structure: Structure, cards: dict[int, int]) -> Structure:
    """``structure`` with hidden node ``i`` given ``cards[i]`` states (labels ``0..c-1``)."""
    return dataclasses.replace(
        structure,
        cardinalities=tuple(cards.get(i, c) for i, c in enumerate(structure.cardinalities)),
        labels=tuple(tuple(range(cards[i])) if i in cards else lab
                     for i, lab in enumerate(structure.labels)))


def capacities(structure: Structure) -> dict[int, int]:
    """Every hidden node's compiled number of states (:func:`.mixture.capacity`)."""
    return {h: capacity(structure.cardinalities[h]) for h in structure.hidden_nodes}


def padded_structure(structure: Structure, caps: dict[int, int] | None = None) -> Structure:
    """The skeleton of ``structure`` with its hidden nodes at capacity (or ``caps``)."""
    return with_cardinalities(structure, capacities(structure) if caps is None else caps)


def lc_part(model: TreeModel) -> ClassModel:
    """The root's weights and its children's tables as a latent class model (``items`` in the
    order of ``structure.children[root]``)."""
    s = model.structure
    return ClassModel(model.tables[s.root][0], tuple(model.tables[c]
                                                     for c in s.children[s.root]))


def with_lc_part(model: TreeModel, part: ClassModel) -> TreeModel:
    """``model`` with its root and root-children tables replaced by ``part`` (the root's
    cardinality becomes ``part.n_classes``)."""
    s = model.structure
    structure = with_cardinalities(s, {s.root: part.n_classes})
    tables = list(model.tables)
    tables[s.root] = part.weights[None, :]
    for c, table in zip(s.children[s.root], part.items, strict=True):
        tables[c] = table
    return TreeModel(structure, tuple(tables))


def random_tree(structure: Structure, rng: np.random.Generator) -> TreeModel:
    """Every table row uniform on its simplex (Dirichlet(1)), the thesis's random starts."""
    return TreeModel(structure, tuple(rng.dirichlet(np.ones(r), size=q)
                                      for q, r in structure.table_shapes))
