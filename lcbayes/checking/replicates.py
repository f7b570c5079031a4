"""Replicated data sets from posterior draws, and the probabilities of margins, item pairs and
patterns under each draw.

**Replicates** (Gelman, Meng & Stern 1996, §2): for every draw ``theta^(s)`` one data set
``y_rep^(s)`` of the observed data's size, drawn by ancestral sampling (hidden values first,
then the items given their parents, one uniform a value, inverse CDF), the draws vectorised.
Missing values are replicated as observed: a replicated row misses the items its observed row
misses, so every discrepancy compares tables over the same rows.

**Probabilities under a draw** come from the exact inference core: the marginal probability of
a set of items' values is ``ln p`` of a *probe* pattern that observes those items only
(:func:`lcbayes.inference.log_marginal` sums the rest out), so one code path serves latent
class models, HLC trees and DAGs.
"""

from __future__ import annotations

from functools import partial
from itertools import combinations

import jax
import jax.numpy as jnp
import numpy as np

from ..inference import log_marginal, prepare
from ..structure import Structure

__all__ = ["item_pairs", "margin_probes", "pair_probes", "replicate", "row_log_likelihood"]


def replicate(structure: Structure, tables: list[np.ndarray], observed: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
    """``(S, N, J)`` one replicated data set per draw: ``tables`` the draws' CPTs in node
    order, each ``(S, q, r)``; ``observed`` the ``(N, J)`` codes whose missing entries (-1) the
    replicates keep."""
    n_draws = tables[0].shape[0]
    n_rows = observed.shape[0]
    states = np.zeros((n_draws, n_rows, structure.n_nodes), dtype=np.int64)
    draw = np.arange(n_draws)[:, None]
    for i in structure.topological_order:
        pa = structure.parents[i]
        config = (np.ravel_multi_index(tuple(states[:, :, p] for p in pa),
                                       structure.parent_cardinalities(i))
                  if pa else np.zeros((n_draws, n_rows), dtype=np.int64))
        cdf = np.cumsum(tables[i], axis=2)[draw, config]                 # (S, N, r)
        u = rng.random((n_draws, n_rows, 1)) * cdf[:, :, -1:]
        states[:, :, i] = np.minimum((u > cdf).sum(axis=2), structure.cardinalities[i] - 1)
    codes = states[:, :, list(structure.observed_nodes)]
    return np.where(observed[None] < 0, -1, codes).astype(np.int32)


def item_pairs(n_items: int) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of item columns."""
    return list(combinations(range(n_items), 2))


def margin_probes(cards: tuple[int, ...]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """``(patterns, (item, value) of each)``: one probe pattern per item value."""
    rows, keys = [], []
    for j, r in enumerate(cards):
        for a in range(r):
            row = np.full(len(cards), -1, dtype=np.int32)
            row[j] = a
            rows.append(row)
            keys.append((j, a))
    return np.array(rows), keys


def pair_probes(cards: tuple[int, ...]) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """``(patterns, (i, j, a, b) of each)``: one probe pattern per value pair of every item
    pair."""
    rows, keys = [], []
    for i, j in item_pairs(len(cards)):
        for a in range(cards[i]):
            for b in range(cards[j]):
                row = np.full(len(cards), -1, dtype=np.int32)
                row[i], row[j] = a, b
                rows.append(row)
                keys.append((i, j, a, b))
    return np.array(rows, dtype=np.int32).reshape(-1, len(cards)), keys


@partial(jax.jit, static_argnames=("structure",))
def _rows_log_likelihood(structure: Structure, log_tables, rows) -> jax.Array:
    def one(tables, patterns):
        return log_marginal(structure, tables, prepare(structure, patterns))
    return jax.vmap(one)(log_tables, rows)


def row_log_likelihood(structure: Structure, tables: list[np.ndarray],
                       rows: np.ndarray) -> np.ndarray:
    """``(S, N)`` ``ln p(row | theta^(s))`` of every row of each draw's own data set
    (``rows`` ``(S, N, J)``, ``tables`` each ``(S, q, r)``)."""
    with np.errstate(divide="ignore"):
        log_tables = tuple(jnp.asarray(np.log(t)) for t in tables)
    return np.asarray(_rows_log_likelihood(structure, log_tables, jnp.asarray(rows)))
