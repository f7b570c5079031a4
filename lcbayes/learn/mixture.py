"""A latent class model as the structure search holds it: class weights and item tables.

Karčiauskas (2005) §3.4.1: ``P_L(d) = sum_l P_L(h_l) prod_i P_L(D_i = d_i | h_l)`` (eq. 3.7),
with a missing ``d_i`` dropping its factor. The search changes the number of classes ``m`` at
every step, so a model is kept on the host as NumPy arrays (:class:`ClassModel`) and laid out
for the engines in a *capacity* of ``C >= m`` classes (:mod:`lcbayes.engines.padding`): classes
``m .. C - 1`` switched off, so every model with at most ``C`` classes runs in one compiled
program. Capacities are powers of two (:func:`capacity`), so a search compiles each engine a
few times, not once per ``m``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..constructors import latent_class
from ..data import Dataset
from ..engines.padding import ClassPadding, class_padding
from ..params import from_tables
from ..structure import Structure

__all__ = ["ClassModel", "capacity", "independence_model", "random_model"]


class ClassModel(NamedTuple):
    """``weights`` ``(m,)`` = ``P(h_l)`` and ``items[j]`` ``(m, r_j)`` = ``P(D_j | h_l)``."""

    weights: np.ndarray
    items: tuple[np.ndarray, ...]

    @property
    def n_classes(self) -> int:
        return int(self.weights.shape[0])

    def tables(self) -> tuple[np.ndarray, ...]:
        """The CPTs of :func:`lcbayes.latent_class` as ``(q, r)`` tables, root first."""
        return (self.weights[None, :], *self.items)

    def params(self, structure: Structure) -> dict[str, np.ndarray]:
        """``{node: CPT}`` for ``structure`` (``latent_class(data, m)``)."""
        return from_tables(structure, self.tables())

    def padded(self, layout: ClassPadding) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(flat tables, active, held values)`` in the capacity of ``layout``
        (:meth:`~lcbayes.engines.padding.ClassPadding.held`)."""
        flat = np.concatenate([t.ravel() for t in layout.pad(self.tables())])
        active, values = layout.held()
        return flat, active, values

    @classmethod
    def from_flat(cls, flat: np.ndarray, layout: ClassPadding) -> ClassModel:
        """The model in a capacity layout's flat tables (the classes in use)."""
        shapes = layout.padded.table_shapes
        bounds = np.cumsum([0] + [q * r for q, r in shapes])
        tables = [np.asarray(flat[a:b]).reshape(s) for a, b, s in
                  zip(bounds[:-1], bounds[1:], shapes, strict=True)]
        root, *items = layout.unpad(tables)
        weights = root[0] / root[0].sum()
        return cls(weights, tuple(np.asarray(t) for t in items))


def capacity(n_classes: int) -> int:
    """The compiled capacity for ``n_classes``: the next power of two, at least 2."""
    return max(2, 1 << (int(n_classes) - 1).bit_length())


@lru_cache(maxsize=64)
def layout(data: Dataset, n_classes: int, cap: int | None = None) -> ClassPadding:
    """``latent_class(data, n_classes)`` inside its capacity (or ``cap``) classes (cached per
    data set, which hashes by identity)."""
    return class_padding(latent_class(data, n_classes),
                         capacity(n_classes) if cap is None else cap)


def independence_model(data: Dataset) -> ClassModel:
    """The one-class model with maximum-likelihood tables: every column's observed
    frequencies (the ML estimate of ``LC(1)``, missing values left out)."""
    items = []
    for j, r in enumerate(data.cardinalities):
        seen = data.patterns[:, j] >= 0
        freq = np.bincount(data.patterns[seen, j], weights=data.counts[seen], minlength=r)
        items.append((freq / freq.sum() if freq.sum() > 0 else np.full(r, 1.0 / r))[None, :])
    return ClassModel(np.ones(1), tuple(items))


def random_model(data: Dataset, n_classes: int, rng: np.random.Generator) -> ClassModel:
    """A model with every CPT row drawn uniformly from its simplex (Dirichlet(1); Karčiauskas
    §6.3.1's "uniform" random starting points)."""
    weights = rng.dirichlet(np.ones(n_classes))
    items = tuple(rng.dirichlet(np.ones(r), size=n_classes) for r in data.cardinalities)
    return ClassModel(weights, items)
