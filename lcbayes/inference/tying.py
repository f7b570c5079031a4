"""Tied CPT rows: groups of rows of a structure's tables that share one parameter vector.

A structure whose node has fewer parents than a *host* structure is the host with some rows of
that node's table tied together (Beal & Ghahramani §4: each of their 136 structures is the
fully connected host with rows tied). The tying is data, not shape, so one compiled engine on
the host serves every sub-structure: the engine cores (:func:`lcbayes.engines.em_loop.run_em`,
:func:`lcbayes.engines.vbem.run_vbem`, :func:`lcbayes.engines.ais.anneal`) take an optional
:class:`RowTying`, ``None`` meaning no row is tied. With a tying,

* expected counts of a group are pooled before an M or VBM step (:func:`pool`), so every row of
  a group gets the same estimate;
* draws are made for the first row of a group and copied to the others (:func:`tie`);
* a group's prior, KL and proposal terms count once: every row carries ``1 / group size``
  (``row_weights``; :func:`entry_weights` spreads them over the entries).

The public engines (:func:`lcbayes.em` and the others) do not tie rows; ``benchmarks/beal``
uses it to score Beal & Ghahramani's 136 structures in one compiled program.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from . import flat

__all__ = ["RowTying", "entry_weights", "pool", "row_tying", "tie"]


class RowTying(NamedTuple):
    """Tied rows as matrices on the flat CPT vector (:mod:`lcbayes.inference.flat`).

    Attributes:
        pooling: ``(n, n)`` 0/1: entry ``e`` and entry ``f`` hold the same value of rows of
            one group.
        first: ``(n, n)`` 0/1: entry ``e`` reads the same value of the first row of its group.
        row_weights: ``(n_rows,)`` ``1 / size`` of each row's group.
    """

    pooling: jax.Array
    first: jax.Array
    row_weights: jax.Array


def row_tying(groups: Sequence[jax.Array], shapes) -> RowTying:
    """The tying of per-node ``(q_i, q_i)`` 0/1 same-group matrices of rows (traceable)."""
    first = tuple(jax.nn.one_hot(jnp.argmax(g > 0, axis=1), g.shape[1], dtype=g.dtype)
                  for g in groups)
    sizes = jnp.concatenate([g.sum(axis=1) for g in groups])
    return RowTying(flat.row_matrix(groups, shapes), flat.row_matrix(first, shapes),
                    1.0 / sizes)


def pool(counts: jax.Array, tying: RowTying | None) -> jax.Array:
    """Flat counts summed over each group (every row of a group gets the group's total)."""
    return counts if tying is None else tying.pooling @ counts


def tie(x: jax.Array, tying: RowTying | None) -> jax.Array:
    """Flat values with every row replaced by the first row of its group."""
    return x if tying is None else tying.first @ x


def entry_weights(tying: RowTying | None, shapes) -> jax.Array | None:
    """``1 / group size`` of every flat entry's row (``None`` without a tying)."""
    if tying is None:
        return None
    return tying.row_weights[flat.entry_rows(shapes)]
