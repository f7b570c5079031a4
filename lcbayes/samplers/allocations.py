"""Rows of data patterns allocated to hidden states, every row by its pattern's probabilities.

The samplers that draw a hidden state for every row given the parameters (the latent class
engines :mod:`lcbayes.samplers.tempered_smc` and :mod:`lcbayes.samplers.gibbs_bridge`, the
particle filter over the rows of HLC trees and DAGs, :mod:`lcbayes.samplers.smc_network`) need
only how many rows of each pattern went to each state. A :class:`PrefixClass` holds rows sorted
by pattern, so that the rows of each pattern come from one cumulative sum (no scatter); where
patterns repeat, each pattern's rows are allocated by one exact multinomial draw
(:func:`pattern_allocations`, Devroye 1986 V.2.2), else row by row (:func:`row_allocations`).

Prefix size classes (:func:`prefix_classes`: the first ``N``, ``N / 2``, ... rows of a random
order) serve the particle filter, which allocates only the rows added so far.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset

__all__ = ["MIN_PREFIX", "PREFIX_RATIO", "ROWS_PER_PATTERN", "PrefixClass", "all_rows",
           "by_rows", "every_row_allocations", "holding", "included_counts", "ordered_rows",
           "pattern_allocations", "prefix_class", "prefix_classes", "row_allocations",
           "running_sum", "sorted_allocations"]

#: Prefix size classes shrink by this factor (module docstring).
PREFIX_RATIO = 2
#: Smallest prefix size class, in rows.
MIN_PREFIX = 256
#: Rows per pattern from which a prefix class allocates by pattern (:func:`sorted_allocations`).
ROWS_PER_PATTERN = 8


class PrefixClass(NamedTuple):
    """The first ``n`` rows of the order, sorted by pattern: ``rows (n,)`` their patterns in the
    order (for the reweighting), ``sorted_rows (n,)`` the patterns sorted, ``position (n,)``
    each sorted row's place in the order, ``starts``/``ends (P,)`` each pattern's segment of the
    sorted rows (``P`` the patterns these rows use)."""

    rows: np.ndarray
    sorted_rows: np.ndarray
    position: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def prefix_class(rows: np.ndarray, patterns: int) -> PrefixClass:
    """The prefix class of ``rows`` with ``patterns`` pattern segments (those beyond the
    patterns the rows use are empty)."""
    position = np.argsort(rows, kind="stable").astype(np.int32)
    sorted_rows = rows[position]
    segments = np.arange(patterns)
    return PrefixClass(rows, sorted_rows, position,
                       np.searchsorted(sorted_rows, segments, "left").astype(np.int32),
                       np.searchsorted(sorted_rows, segments, "right").astype(np.int32))


def ordered_rows(data: Dataset, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``data`` with at least one observed value in a random order from ``rng``:
    ``(codes (P, J), rows (N,))``, the patterns renumbered by first occurrence in the order
    (``codes`` their values, -1 missing) and each row's pattern."""
    patterns = np.asarray(data.patterns)
    index = np.asarray(data.pattern_index)
    index = index[np.any(patterns >= 0, axis=1)[index]]
    ordered = index[rng.permutation(index.size)]
    used = ordered[np.sort(np.unique(ordered, return_index=True)[1])]
    renumber = np.full(patterns.shape[0], -1)
    renumber[used] = np.arange(used.size)
    return patterns[used], renumber[ordered].astype(np.int32)


def prefix_classes(rows: np.ndarray, patterns: int) -> tuple[PrefixClass, ...]:
    """The :class:`PrefixClass` of every size class (all ``N`` rows, ``N / 4``, ... down to
    :data:`MIN_PREFIX` or more), largest first. A class of ``n`` rows has ``min(n, patterns)``
    pattern segments whatever the order (``patterns`` the data's), so every row order gives
    arrays of the same shapes: each run orders the rows afresh in one compiled program."""
    sizes = [rows.size]
    while sizes[-1] // PREFIX_RATIO >= MIN_PREFIX:
        sizes.append(-(-sizes[-1] // PREFIX_RATIO))
    return tuple(prefix_class(rows[:s], min(s, patterns)) for s in sizes)


def holding(classes: tuple[PrefixClass, ...], rows) -> jax.Array:
    """Index of the smallest prefix size class with at least ``rows`` rows."""
    bounds = jnp.asarray([c.rows.shape[0] for c in classes])
    return jnp.sum(bounds >= rows) - 1


def running_sum(x: jax.Array) -> jax.Array:
    """The cumulative sum of ``x`` along its first axis, as a parallel prefix sum
    (``lax.associative_scan``), faster on CPU than XLA's ``cumsum`` of a long axis."""
    return jax.lax.associative_scan(jnp.add, x)


def _row_states(key, logits: jax.Array, rows: np.ndarray | jax.Array) -> jax.Array:
    """``(n,)`` a state for every row of ``rows`` (pattern numbers) from the softmax of its
    pattern's ``logits``, by inversion of one single-precision uniform per row."""
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=1), axis=1)[rows]
    u = jax.random.uniform(key, rows.shape, dtype=jnp.float32) * cdf[:, -1]
    return jnp.minimum((u[:, None] > cdf).sum(axis=1), logits.shape[1] - 1)


def by_rows(prefix: PrefixClass) -> bool:
    """Whether prefix class ``prefix`` allocates row by row: fewer than
    :data:`ROWS_PER_PATTERN` rows per pattern (else one multinomial draw per pattern)."""
    return prefix.rows.shape[0] < ROWS_PER_PATTERN * prefix.starts.shape[0]


def row_allocations(key, logits: jax.Array, prefix: PrefixClass, n_included) -> jax.Array:
    """``(P, S)`` rows of each pattern drawn into each state: every row among the first
    ``n_included`` of the order draws its state from the softmax of its pattern's ``logits``
    (inverse CDF of one uniform); each pattern's rows are counted from the cumulative sum over
    its segment of the sorted rows (no scatter)."""
    slots = logits.shape[1]
    z = _row_states(key, logits, prefix.sorted_rows)
    chosen = jax.nn.one_hot(z, slots, dtype=jnp.float32) * (prefix.position < n_included)[:, None]
    cum = jnp.concatenate([jnp.zeros((1, slots), jnp.float32), running_sum(chosen)])
    return (cum[prefix.ends] - cum[prefix.starts]).astype(logits.dtype)   # exact below 2^24


def included_counts(prefix: PrefixClass, n_included) -> jax.Array:
    """``(P,)`` rows of each pattern among the first ``n_included`` of the order (the same for
    every particle: one cumulative sum over the sorted rows, no scatter)."""
    inside = (prefix.position < n_included).astype(jnp.float64)
    cum = jnp.concatenate([jnp.zeros(1), running_sum(inside)])
    return cum[prefix.ends] - cum[prefix.starts]


def pattern_allocations(key, logits: jax.Array, prefix: PrefixClass, included) -> jax.Array:
    """``(P, S)`` rows of each pattern drawn into each state: for every pattern ``p`` a
    multinomial draw of its ``c_p = included[p]`` rows with the probabilities
    ``softmax(logits_p)``, exact, and in work linear in the rows with no loop over them.

    Each row draws its state by inversion of a uniform, so the rows of ``p`` in states
    ``<= s`` are the uniforms below the cumulative probability ``F_ps``. The sorted uniforms
    of ``c`` rows are ``E_1 / T, (E_1 + E_2) / T, ...`` with ``T = E_1 + .. + E_{c+1}`` for
    iid exponentials ``E`` (Devroye 1986, *Non-Uniform Random Variate Generation*, V.2.2), so
    that count is the number of partial sums below ``F_ps T``: one binary search in the
    cumulative sums per pattern and state. Pattern ``p`` owns the ``c_p + 1`` exponentials
    from slot ``starts[p] + p`` on (one spare per pattern)."""
    patterns = prefix.starts.shape[0]
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=1), axis=1)
    cdf = cdf / cdf[:, -1:]
    spacings = jax.random.exponential(key, (prefix.rows.shape[0] + patterns,),
                                      dtype=jnp.float32).astype(jnp.float64)
    # XLA's cumsum: vmapped over particles of long data, faster here than running_sum
    sums = jnp.concatenate([jnp.zeros(1), jnp.cumsum(spacings)])
    first = prefix.starts + jnp.arange(patterns)
    last = first + included.astype(first.dtype)
    base = sums[first]
    threshold = base[:, None] + cdf * (sums[last + 1] - base)[:, None]
    found = jnp.searchsorted(sums, threshold.ravel(), side="left").reshape(cdf.shape)
    at_most = jnp.clip(found - first[:, None] - 1, 0, last[:, None] - first[:, None])
    at_most = jnp.where(cdf >= 1.0, last[:, None] - first[:, None], at_most)
    return jnp.diff(at_most, axis=1, prepend=0).astype(logits.dtype)


def sorted_allocations(key, logits: jax.Array, prefix: PrefixClass, n_included) -> jax.Array:
    """``(P, S)`` rows of each pattern among the first ``n_included`` of the order drawn into
    each state from the softmax of the pattern's ``logits``: by :func:`pattern_allocations`
    where the prefix class has at least :data:`ROWS_PER_PATTERN` rows per pattern (its binary
    searches then cost less than a pass over the states at every row), else
    :func:`row_allocations` (the same distribution)."""
    if by_rows(prefix):
        return row_allocations(key, logits, prefix, n_included)
    return pattern_allocations(key, logits, prefix, included_counts(prefix, n_included))


def every_row_allocations(key, logits: jax.Array, prefix: PrefixClass) -> jax.Array:
    """``(P, S)`` every row of ``prefix`` drawn into a state from the softmax of its pattern's
    ``logits`` (inverse CDF of one single-precision uniform per row) and counted per pattern by
    a sorted segment sum: :func:`row_allocations` of all the rows, in single precision (the
    probabilities to 2^-24, the counts exact below 2^24), cheaper where rows are many."""
    slots = logits.shape[1]
    cdf = jnp.cumsum(jax.nn.softmax(logits.astype(jnp.float32), axis=1), axis=1)
    cdf = cdf[prefix.sorted_rows]
    u = jax.random.uniform(key, prefix.sorted_rows.shape, dtype=jnp.float32) * cdf[:, -1]
    z = jnp.minimum((u[:, None] > cdf).sum(axis=1), slots - 1)
    return jax.ops.segment_sum(jax.nn.one_hot(z, slots, dtype=jnp.float32), prefix.sorted_rows,
                               num_segments=logits.shape[0], indices_are_sorted=True
                               ).astype(logits.dtype)


def all_rows(counts: np.ndarray) -> PrefixClass:
    """The :class:`PrefixClass` of every row of patterns with ``counts`` rows each (rows in
    pattern order): what the samplers that allocate all the rows at once use."""
    counts = np.asarray(counts).astype(np.int64)
    return prefix_class(np.repeat(np.arange(counts.size), counts).astype(np.int32), counts.size)
