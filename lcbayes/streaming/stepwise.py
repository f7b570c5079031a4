"""Stepwise (online) EM over minibatches of rows (Cappé & Moulines 2009; Liang & Klein 2009).

Exact EM reads all the data before each M step. Stepwise EM keeps running sufficient
statistics ``s`` (the flat expected family counts, on the scale of all ``N`` rows) and takes an
M step after every minibatch of ``n_t`` rows (Liang & Klein's Algorithm 2, Cappé & Moulines'
eq. 5)::

    s <- (1 - g_t) s + g_t (N / n_t) E[counts | minibatch t, theta]
    theta <- M(s)                        (ML, or the MAP M step of lcbayes.em)

with step sizes ``g_t = (t + 2)^-alpha``, ``t = 0, 1, ...`` counting minibatches over all
passes, ``alpha`` in ``(0.5, 1]`` (the Robbins-Monro conditions; Liang & Klein found
``alpha = 0.7`` best with small minibatches, the default here). ``s`` starts at the start's
tables as counts of ``N`` rows spread evenly over every node's parent configurations, so that
``M(s_0)`` is the start; its weight ``prod (1 - g_t)`` shrinks to 0 but keeps every entry
positive (starting from ``s = 0``, a category missing from the first minibatch would get
probability 0 and stay there). One pass makes ``N / batch_rows`` M steps where
exact EM makes one, which is why a stepwise pass followed by exact passes
(:func:`lcbayes.stream_em`'s ``warm_start="stepwise"``) is the classic recipe for very many rows.

Minibatches: every pass reads the blocks in a random order, ``buffer_blocks`` at a time, and
deals the rows of those blocks (their patterns' counts) into minibatches of ``batch_rows`` rows
at random (:func:`_minibatches`: counts cut into pieces, pieces shuffled), so no row is ever
materialised: a minibatch is some of the buffer's patterns with the counts it drew. Every
restart (a lane of ``vmap``) sees the same minibatches. A minibatch is a random sample of the
data's rows only if the buffer holds every block: the blocks of :func:`lcbayes.scan_file` and
:meth:`~lcbayes.streaming.blocks.PatternBlocks.from_dataset` are ranges of sorted patterns, so
with more blocks than ``buffer_blocks`` the pass follows the range at hand and ends further
from EM's estimate. The buffer costs the memory of its blocks; exact passes after a poor warm
start still converge, only later.

Example::

    fit = lcb.stepwise_em(structure, blocks, passes=2, seed=0)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from ..engines.run_record import start_engine
from ..errors import ArgumentError
from ..inference import flat
from ..params import PriorSpec
from ..progress import new_bar
from ..structure import Structure
from ..validation import Seed, check_int, check_positive, numpy_rng, seed_record
from .passes import (
    Source,
    accumulate,
    block_stats,
    em_starts,
    finish_em,
    m_steps,
    map_prior,
    prior_terms,
    source_for,
)
from .result import StreamEMResult

__all__ = ["BATCH_ROWS", "BUFFER_BLOCKS", "batch_size", "check_alpha", "stepwise_em",
           "stepwise_passes"]

#: Fewest rows per minibatch by default (see :func:`batch_size`).
BATCH_ROWS = 100

#: Default number of blocks whose rows are mixed into minibatches (see :func:`stepwise_em`).
BUFFER_BLOCKS = 16


def batch_size(batch_rows, n_rows: int) -> int:
    """Rows per minibatch: ``batch_rows``, or by default (``None``) ``n_rows / 1000`` and at
    least :data:`BATCH_ROWS`, a thousand M steps per pass."""
    if batch_rows is None:
        return max(BATCH_ROWS, math.ceil(n_rows / 1000))
    return check_int(batch_rows, "batch_rows", 1)


def check_alpha(alpha) -> float:
    """The step-size exponent, in ``(0.5, 1]`` (the Robbins-Monro conditions)."""
    alpha = check_positive(alpha, "alpha")
    if not 0.5 < alpha <= 1.0:
        raise ArgumentError(f"alpha must lie in (0.5, 1] (step sizes (t + 2)^-alpha), got "
                            f"{alpha!r}")
    return alpha


#: A minibatch is made of at least this many pieces of patterns' counts (:func:`_minibatches`).
PIECES = 100


def _minibatches(counts: np.ndarray, batch_rows: int, rng: np.random.Generator
                 ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The rows of a buffer (``counts`` per pattern) dealt at random into minibatches of
    ``batch_rows`` rows (the last may be short): per minibatch, its patterns (indices) and
    their counts.

    Every pattern's count is cut into pieces of at most ``batch_rows / PIECES`` rows, the
    pieces are shuffled and the shuffled sequence of rows is cut every ``batch_rows`` rows, so
    a minibatch holds rows of at least ``PIECES`` random pieces, and every row is in exactly
    one minibatch. The work is ``O(patterns + rows / piece)`` per pass (dealing the rows one
    by one, or drawing every minibatch from all patterns, would be ``O(rows)`` or
    ``O(patterns x minibatches)``)."""
    counts = np.rint(counts).astype(np.int64)
    piece = max(1, batch_rows // PIECES)
    n_pieces = -(-counts // piece)
    owner = np.repeat(np.arange(counts.size), n_pieces)
    sizes = np.full(owner.size, piece, dtype=np.int64)
    full = n_pieces > 0
    sizes[np.cumsum(n_pieces)[full] - 1] = counts[full] - (n_pieces[full] - 1) * piece
    order = rng.permutation(owner.size)
    owner, sizes = owner[order], sizes[order]
    ends = np.cumsum(sizes)
    starts = ends - sizes
    for low in range(0, int(ends[-1]) if ends.size else 0, batch_rows):
        high = low + batch_rows
        first, last = np.searchsorted(ends, low, "right"), np.searchsorted(starts, high)
        rows = (np.minimum(ends[first:last], high) - np.maximum(starts[first:last], low))
        index, inverse = np.unique(owner[first:last], return_inverse=True)
        yield index, np.bincount(inverse, weights=rows, minlength=index.size)


def _buffers(source: Source, buffer_blocks: int, rng: np.random.Generator
             ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The blocks in a random order, ``buffer_blocks`` at a time, each group's patterns and
    counts put together (in the structure's codes)."""
    blocks = source.blocks
    order = rng.permutation(blocks.n_blocks)
    for start in range(0, len(order), buffer_blocks):
        group = dataclasses.replace(blocks, blocks=tuple(
            blocks.blocks[i] for i in order[start:start + buffer_blocks]))
        parts = [source.block(p, c) for p, c in group]
        counts = np.concatenate([c for _, c in parts])
        if not np.array_equal(counts, np.rint(counts)):
            raise ArgumentError("blocks: stepwise EM deals rows into minibatches, so the "
                                "counts must be whole numbers of rows")
        yield np.concatenate([p for p, _ in parts]), counts


def stepwise_passes(source: Source, structure: Structure, x: np.ndarray | jax.Array, prior, *,
                    alpha: float, batch_rows: int, buffer_blocks: int, passes: int,
                    rng: np.random.Generator, after_pass=None) -> np.ndarray:
    """``passes`` stepwise passes from the flat tables ``x`` (``(R, n)``, every restart a
    lane); ``prior`` holds ``lambda - 1 + b`` (``None``: ML). ``after_pass(x)`` is called after
    every pass. Returns the final tables."""
    shapes = structure.table_shapes
    size = min(batch_rows, source.size * buffer_blocks)
    x = jnp.asarray(x)
    configs = np.asarray([q for q, _ in shapes])[flat.entry_nodes(shapes)]
    s = x * (source.n_rows / configs)  # s_0: M(s_0) = x, no entry exactly 0
    t = 0
    for _ in range(passes):
        for patterns, counts in _buffers(source, buffer_blocks, rng):
            for index, batch in _minibatches(counts, batch_rows, rng):
                _, stats = block_stats(structure, jnp.log(x),
                                       *source.padded(patterns[index], batch, size))
                g = (t + 2.0) ** -alpha
                s = (1.0 - g) * s + (g * source.n_rows / batch.sum()) * stats
                x = m_steps(s, prior, shapes)
                t += 1
        if after_pass is not None:
            after_pass(x)
    return np.asarray(x)


def stepwise_em(
    structure: Structure,
    data,
    *,
    alpha: float = 0.7,
    batch_rows: int | None = None,
    buffer_blocks: int = BUFFER_BLOCKS,
    passes: int = 1,
    restarts: int = 1,
    seed: Seed = 0,
    prior: PriorSpec = None,
    map_basis: str = "softmax",
    tol: float = 1e-8,
    init=None,
    progress: bool = False,
) -> StreamEMResult:
    """Stepwise EM (module docstring) over ``data``: a
    :class:`~lcbayes.streaming.blocks.PatternBlocks` or rows (a Dataset, a DataFrame or an
    array of codes); keep the best restart by the exact objective after the last pass.

    Args:
        structure: the model (latent class, HLC or DAG).
        data: the data; the blocks' counts must be whole numbers (rows are dealt into
            minibatches).
        alpha: step-size exponent in ``(0.5, 1]``, ``g_t = (t + 2)^-alpha``.
        batch_rows: rows per minibatch; ``None``: ``N / 1000``, at least 100 (a thousand M
            steps per pass); larger minibatches take fewer steps and end further from
            EM's estimate after one pass.
        buffer_blocks: blocks read together and mixed into minibatches (module docstring).
        passes: passes over the data.
        restarts: random starts (as :func:`lcbayes.stream_em` makes them), run side by side.
        seed: the starts, the block order and the minibatches.
        prior, map_basis: ML (``None``) or MAP, as in :func:`lcbayes.em`.
        tol: ``converged`` is whether the last pass changed the objective by less than this
            per observed row.
        init: one more start, ``{node: CPT}`` or an EM fit.
        progress: a bar over passes.

    The result's ``history`` is the exact objective after every pass (one extra pass over the
    data each, the last one also giving the loglik and scores).
    """
    started, seed = start_engine(structure, seed)
    alpha = check_alpha(alpha)
    if batch_rows is not None:
        check_int(batch_rows, "batch_rows", 1)
    buffer_blocks = check_int(buffer_blocks, "buffer_blocks", 1)
    passes = check_int(passes, "passes", 1)
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    tol = check_positive(tol, "tol")
    prior_arg = map_prior(structure, prior, map_basis)
    source = source_for(structure, data)
    batch_rows = batch_size(batch_rows, source.n_rows)
    x = em_starts(source, structure, restarts, seed, init)
    history: list[np.ndarray] = []

    def after_pass(tables):
        bar.update()
        if len(history) < passes - 1:  # the last pass's objective comes with the result
            history.append(accumulate(source, block_stats, structure, jnp.log(tables))[0]
                           + prior_terms(np.asarray(tables), prior_arg))

    bar = new_bar(total=passes, desc="stepwise EM", unit="pass", disable=not progress)
    x = stepwise_passes(source, structure, x, prior_arg, alpha=alpha, batch_rows=batch_rows,
                        buffer_blocks=buffer_blocks, passes=passes, rng=numpy_rng(seed),
                        after_pass=after_pass)
    bar.close()
    n = x.shape[0]
    fit = finish_em(source, structure, x, prior_arg, started,
                    history=np.full((n, 0), np.nan), n_iter=np.zeros(n, dtype=np.int64),
                    converged=np.zeros(n, dtype=bool), n_passes=2 * passes - 1 + (restarts > 0),
                    seed=seed_record(seed), restarts=n, tol=tol, max_iter=passes,
                    estimator="ml" if prior is None else "map",
                    map_basis=None if prior is None else map_basis, method="stepwise",
                    settings={"alpha": alpha, "batch_rows": batch_rows,
                              "buffer_blocks": buffer_blocks, "passes": passes})
    trace = np.column_stack([*history, fit.restart_objectives])
    converged = (passes > 1) & (np.abs(trace[:, -1] - trace[:, -2 if passes > 1 else -1])
                                < tol * max(source.n_observed_rows, 1))
    best = int(np.nanargmax(fit.restart_objectives))
    return dataclasses.replace(fit, history=trace[best], n_iter=passes,
                               converged=bool(converged[best]),
                               restart_n_iter=np.full(n, passes), restart_converged=converged)
