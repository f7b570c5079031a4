"""Screening merge starts by their exact log-likelihood, one class at a time.

SplitMerge's Merge and Adjust moves (Karčiauskas 2005, Procedures 6.3-6.4) start a
multiple-restart EM (``q = 10``) from every pairwise merge (Def 5.2) of the current model
(``C(m, 2)`` starts) or of each split candidate (``2 (m - 1)`` merges of each of ``m``
candidates). At 30+ classes that is hundreds to thousands of starts, each costing a full EM
iteration at the capacity of ``m`` classes before the first pruning: most of the time of a
latent class search on 60 items x 10^4 rows (:mod:`.search`).

A merge changes one class, so its log-likelihood needs only that class's column: with
``T_pl = ln pi_l + sum_i ln P(d_pi | h_l)`` of the model (one product of the one-hot data with
the log tables, missing values giving a zero row) and the merged class's
``T*_p = ln(pi_a + pi_b) + sum_i ln P*(d_pi | h)``,

    ln p(d_p | merge(a, b)) = logsumexp({T_pl : l != a, b} U {T*_p}),

``O(P (J + m))`` per merge instead of an EM iteration's ``O(P J m)``
(:func:`merge_log_likelihoods`). :func:`screen_merges` keeps the :data:`MERGE_SCREEN` merges
with the highest log-likelihood (all of them when there are no more), in their given order, for
the multiple-restart EM; its pruning after one iteration keeps ``ceil(n / 10)`` of those.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from .. import jax_setup  # noqa: F401  (64-bit JAX)
from ..data import Dataset
from ..inference.estep import finite_log, one_hot_columns
from .mixture import ClassModel, layout
from .operations import merge

__all__ = ["MERGE_SCREEN", "merge_log_likelihoods", "screen_merges"]

#: Merge starts a Merge or Adjust move fits at most (the best by their log-likelihood).
MERGE_SCREEN = 128
#: Merges per vectorised chunk (bounds the ``(chunk, P, m)`` work array).
_CHUNK = 16


@jax.jit
def _merge_logliks(one_hot, counts, weights, items, pairs):
    """``sum_p n_p ln p(d_p | merge(a, b))`` for every row ``(a, b)`` of ``pairs``;
    ``weights`` ``(C,)`` and ``items`` ``(C, R)`` (the item tables laid end to end)."""
    joint = one_hot @ finite_log(jnp.log(items)).T + jnp.log(weights)[None, :]   # (P, C)
    classes = jnp.arange(weights.shape[0])

    def one(pair):
        a, b = pair[0], pair[1]
        wa, wb = weights[a], weights[b]
        total = wa + wb
        merged = jnp.where(total > 0, (wa * items[a] + wb * items[b]) / jnp.where(
            total > 0, total, 1.0), 0.5 * (items[a] + items[b]))
        column = one_hot @ finite_log(jnp.log(merged)) + jnp.log(total)      # (P,)
        others = jnp.where((classes != a) & (classes != b), joint, -jnp.inf)
        per_pattern = logsumexp(jnp.concatenate([others, column[:, None]], axis=1), axis=1)
        return counts @ per_pattern

    return jax.lax.map(one, pairs, batch_size=_CHUNK)


def merge_log_likelihoods(data: Dataset, model: ClassModel,
                          pairs: list[tuple[int, int]]) -> np.ndarray:
    """``ln p(y | merge(model, a, b))`` (Def 5.2, :func:`.operations.merge`) for every pair,
    computed from one class column per merge (module docstring). Shapes are padded (classes
    to the model's capacity, pairs to a power of two), so a search compiles this a few times."""
    pad = layout(data, model.n_classes)
    weights, *tables = pad.pad(model.tables())
    items = np.concatenate(tables, axis=1)
    n = len(pairs)
    padded_pairs = np.zeros((max(_CHUNK, 1 << (n - 1).bit_length()), 2), dtype=np.int32)
    padded_pairs[:, 1] = 1
    padded_pairs[:n] = np.asarray(pairs, dtype=np.int32).reshape(n, 2)
    one_hot = one_hot_columns(jnp.asarray(data.patterns), list(range(data.n_columns)),
                              list(data.cardinalities))
    out = _merge_logliks(one_hot, jnp.asarray(data.counts), jnp.asarray(weights[0]),
                         jnp.asarray(items), jnp.asarray(padded_pairs))
    return np.asarray(out)[:n]


def screen_merges(data: Dataset, merges: list[tuple[ClassModel, int, int]],
                  keep: int = MERGE_SCREEN) -> list[ClassModel]:
    """``merge(model, a, b)`` for the ``keep`` entries of ``merges`` whose merged models have
    the highest log-likelihood (ties: the earlier), in the given order; all of them when
    there are at most ``keep``."""
    if len(merges) > keep:
        loglik = np.empty(len(merges))
        start = 0
        while start < len(merges):     # runs of the same model share one call
            model = merges[start][0]
            stop = start
            while stop < len(merges) and merges[stop][0] is model:
                stop += 1
            loglik[start:stop] = merge_log_likelihoods(
                data, model, [(a, b) for _, a, b in merges[start:stop]])
            start = stop
        order = np.argsort(-np.nan_to_num(loglik, nan=-np.inf), kind="stable")
        merges = [merges[j] for j in np.sort(order[:keep])]
    return [merge(model, a, b) for model, a, b in merges]
