"""One pass over pattern blocks: the exact E-step sums the streaming engines iterate.

The log-likelihood and the expected family counts of EM are sums over data patterns
(Beal & Ghahramani eq. 19), so they are sums over the blocks of a
:class:`~lcbayes.streaming.blocks.PatternBlocks`: a pass reads one block at a time, runs the
inference core's E step on it (:func:`lcbayes.inference.flat_e_step`, every restart at once
under ``vmap``) and adds the results. Every block is padded to one length with all-missing
patterns of weight 0 (their ``ln p(y)`` is 0 and they add no count), so the per-block program
compiles once. JAX dispatches asynchronously, so the device computes one block while the next
is read.

:class:`Source` is the checked view of the blocks for one structure: the structure's columns
picked out of the blocks' (in its order) and the blocks' codes mapped to the structure's
categories.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from ..engines.em_core import m_step, start_counts
from ..engines.em_loop import order_classes
from ..engines.em_result import EMResult
from ..errors import ArgumentError, ArgumentTypeError
from ..inference import e_step, flat, flat_e_step, prepare
from ..params import from_tables, prior_tables, probability_tables
from ..structure import Structure
from ..validation import check_choice, data_for, prng_key
from .blocks import PatternBlocks
from .result import StreamEMResult

__all__ = ["Source", "accumulate", "block_stats", "em_starts", "final_stats", "finish_em",
           "lanes", "m_steps", "map_prior", "prior_terms", "source_for"]


@dataclass(frozen=True, eq=False)
class Source:
    """The blocks of a :class:`PatternBlocks` as one structure reads them.

    Attributes:
        blocks: the data.
        columns: the blocks' column of each of the structure's observed nodes.
        codes: per structure column, the structure's code of every block code (``None``: the
            same codes).
        size: the padded length of every block.
        n_rows, n_observed_rows: rows, and rows with an observed value in the structure's
            columns.
    """

    blocks: PatternBlocks
    columns: tuple[int, ...]
    codes: tuple[np.ndarray | None, ...]
    size: int
    n_rows: int
    n_observed_rows: int

    def block(self, patterns: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A block of the blocks' codes as ``(patterns, counts)`` of the structure's."""
        patterns = np.asarray(patterns)[:, list(self.columns)]
        out = np.empty(patterns.shape, dtype=np.int32)
        for j, lookup in enumerate(self.codes):
            y = patterns[:, j]
            out[:, j] = y if lookup is None else np.where(y < 0, -1, lookup[np.maximum(y, 0)])
        return out, np.asarray(counts, dtype=np.float64)

    def padded(self, patterns: np.ndarray, counts: np.ndarray, size: int,
               observed_only: bool = False) -> tuple[jax.Array, jax.Array]:
        """``(patterns, counts)`` padded to ``size`` rows with all-missing patterns of weight
        0; ``observed_only``: rows with nothing observed weigh 0 too (VBEM leaves them out)."""
        n = patterns.shape[0]
        if observed_only:
            counts = np.where((patterns >= 0).any(axis=1), counts, 0.0)
        full = np.full((size, patterns.shape[1]), -1, dtype=np.int32)
        full[:n] = patterns
        weights = np.zeros(size)
        weights[:n] = counts
        return jnp.asarray(full), jnp.asarray(weights)

    def iterate(self, observed_only: bool = False) -> Iterator[tuple[jax.Array, jax.Array]]:
        """Every block, in order, in the structure's codes and padded to :attr:`size`."""
        for patterns, counts in self.blocks:
            yield self.padded(*self.block(patterns, counts), self.size, observed_only)



def _lookup(column: str, have: tuple, want: tuple) -> np.ndarray | None:
    """Block code -> structure code of one column (``None``: the same labels)."""
    if tuple(have) == tuple(want)[:len(have)]:
        return None
    index = {label: k for k, label in enumerate(want)}
    unknown = [label for label in have if label not in index]
    if unknown:
        raise ArgumentError(f"blocks: column {column!r} has categories {unknown} that the "
                            f"structure does not know (it has {list(want)}); build the "
                            "structure from these data")
    return np.asarray([index[label] for label in have], dtype=np.int32)


def _observed_rows(blocks: PatternBlocks, columns: tuple[int, ...]) -> int:
    """Rows with an observed value in ``columns`` (one reading pass over the blocks)."""
    total = 0.0
    for patterns, counts in blocks:
        total += float(np.asarray(counts)[(np.asarray(patterns)[:, list(columns)] >= 0)
                                          .any(axis=1)].sum())
    return round(total)


def source_for(structure: Structure, data, name: str = "data") -> Source:
    """``data`` (a :class:`PatternBlocks`, or rows: a Dataset, a DataFrame or an array of
    codes, put in one block) checked against ``structure``: its observed columns must be
    among the blocks' columns and the blocks' categories among its categories
    (:class:`~lcbayes.errors.ArgumentError` naming ``name`` otherwise)."""
    if not isinstance(data, PatternBlocks):
        rows = data_for(structure, data, name)
        data = PatternBlocks.from_dataset(rows, block_patterns=max(rows.n_patterns, 1))
    have = list(data.columns)
    missing = [c for c in structure.observed_names if c not in have]
    if missing:
        raise ArgumentError(f"{name} lack column(s) {missing} that the structure observes; "
                            f"they have {have}")
    columns = tuple(have.index(c) for c in structure.observed_names)
    wanted = structure.categories()
    codes = tuple(_lookup(c, data.labels[k], wanted[c])
                  for c, k in zip(structure.observed_names, columns, strict=True))
    sizes = [b[0].shape[0] for b in data.blocks if isinstance(b, tuple)]
    size = max(sizes) if len(sizes) == data.n_blocks else data.block_patterns
    observed = (data.n_observed_rows if columns == tuple(range(len(have)))
                else _observed_rows(data, columns))
    return Source(data, columns, codes, max(size, 1), data.n_rows, observed)


@partial(jax.jit, static_argnums=0)
def block_stats(structure: Structure, log_x: jax.Array, patterns: jax.Array,
                weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(sum_p w_p ln p(y_p), flat expected counts)`` of one block for every row of ``log_x``
    (``(R, n)`` flat log tables, :mod:`lcbayes.inference.flat`; rows may be sub-normalised, as
    VBE's ``E[ln theta]``): ``(R,)`` and ``(R, n)``."""
    evidence = prepare(structure, patterns)

    def one(row, vmapped):
        log_marg, counts = flat_e_step(structure, row, evidence, weights, vmapped=vmapped)
        return jnp.where(weights > 0, weights * log_marg, 0.0).sum(), counts

    if log_x.shape[0] == 1:  # not vmapped: the E step may take its probability-space route
        total, counts = one(log_x[0], False)
        return total[None], counts[None]
    return jax.vmap(lambda row: one(row, True))(log_x)


@partial(jax.jit, static_argnums=0)
def final_stats(structure: Structure, log_x: jax.Array, patterns: jax.Array,
                weights: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """At a fit's estimate, per row of ``log_x``: ``sum_p w_p ln p(y_p)``, the flat expected
    counts and the summed posterior entropy of the hidden nodes (ICL), the last two over rows
    with an observed value only (as :class:`~lcbayes.EMResult` records them)."""
    evidence = prepare(structure, patterns)
    observed = jnp.where(jnp.any(patterns >= 0, axis=1), weights, 0.0)

    def one(row):
        est = e_step(structure, flat.unflatten(row, structure.table_shapes), evidence, observed)
        return (jnp.where(weights > 0, weights * est.log_marginal, 0.0).sum(),
                flat.flatten(est.counts), observed @ est.hidden_entropy)

    return jax.vmap(one)(log_x)


def accumulate(source: Source, stats, structure: Structure, log_x: jax.Array,
               observed_only: bool = False):
    """``stats(structure, log_x, patterns, weights)`` summed over the blocks of ``source`` (one
    pass), as NumPy arrays."""
    total = None
    for patterns, weights in source.iterate(observed_only):
        out = stats(structure, log_x, patterns, weights)
        total = out if total is None else jax.tree_util.tree_map(jnp.add, total, out)
    return jax.tree_util.tree_map(np.asarray, total)


def lanes(active: np.ndarray, total: int) -> np.ndarray:
    """The running restarts ``active`` (of ``total``) padded by repeating the last to the next
    power of two (at most ``total``), so that a shrinking set of running restarts compiles a
    few shapes, not one per count."""
    width = min(1 << int(np.ceil(np.log2(max(active.size, 1)))), total)
    return np.concatenate([active, np.repeat(active[-1:], width - active.size)])


@partial(jax.jit, static_argnums=0)
def _start_counts(structure: Structure, keys: jax.Array, block, patterns: jax.Array,
                  weights: jax.Array) -> jax.Array:
    """Per key (folded with ``block`` unless it is 0), the flat expected counts of one block
    under random responsibilities (:func:`lcbayes.engines.em_core.start_counts`,
    the E step of ``lcb.em``'s random start, before its M step)."""
    evidence = prepare(structure, patterns)
    return jax.vmap(lambda key: start_counts(
        structure, evidence, weights,
        jnp.where(block == 0, key, jax.random.fold_in(key, block))))(keys)


def em_starts(source: Source, structure: Structure, restarts: int, seed, init) -> np.ndarray:
    """``(R, n)`` flat starting tables: ``restarts`` random starts made as :func:`lcbayes.em`
    makes them (random responsibilities for every pattern, one ML M step; the same keys), the
    counts summed over the blocks in one pass (block ``b > 0`` draws from the key folded with
    ``b``), then the tables of ``init`` (checked) if given. With the data in one block of a
    Dataset's patterns (:meth:`PatternBlocks.from_dataset`), they are ``lcb.em``'s starts for
    the same seed."""
    rows = []
    if restarts:
        keys = jax.random.split(prng_key(seed), restarts)
        counts = None
        for b, (patterns, weights) in enumerate(source.iterate()):
            out = _start_counts(structure, keys, b, patterns, weights)
            counts = out if counts is None else counts + out
        rows.append(np.asarray(m_steps(counts, None, structure.table_shapes)))
    if init is not None:
        params = init.params if isinstance(init, StreamEMResult | EMResult) else init
        if not isinstance(params, Mapping):
            raise ArgumentTypeError(f"init must be parameters {{node: CPT}} or an EM fit, got "
                                    f"{type(init).__name__}")
        rows.append(np.asarray(flat.flatten(probability_tables(structure, params, "init")))[None])
    return np.concatenate(rows)


@partial(jax.jit, static_argnums=2)
def m_steps(counts: jax.Array, prior: jax.Array | None, shapes) -> jax.Array:
    """The (MAP) M step of every row of ``counts`` (:func:`~lcbayes.engines.em_core.m_step`;
    ``prior`` holds ``lambda - 1 + b``)."""
    return jax.vmap(lambda c: m_step(c, prior, shapes))(counts)


def map_prior(structure: Structure, prior, map_basis: str) -> jax.Array | None:
    """The flat ``lambda - 1 + b`` of a MAP fit (``b = 1`` in the softmax basis, 0 in the
    simplex basis, which needs every ``lambda >= 1``; :mod:`lcbayes.engines.em`), ``None``
    for maximum likelihood."""
    check_choice(map_basis, "map_basis", ("softmax", "simplex"))
    alphas = prior_tables(structure, prior)
    if alphas is None:
        return None
    if map_basis == "simplex" and min(a.min() for a in alphas) < 1:
        raise ArgumentError("map_basis='simplex' needs every prior pseudo-count >= 1; use "
                            "map_basis='softmax' or a larger prior")
    return flat.flatten(alphas) - (1.0 if map_basis == "simplex" else 0.0)


def prior_terms(x: np.ndarray, prior: np.ndarray | None) -> np.ndarray:
    """``sum (lambda - 1 + b) ln x`` per row of ``x`` (0 for ML)."""
    return np.zeros(x.shape[0]) if prior is None else np.asarray(xlogy(prior, x).sum(axis=1))


def finish_em(source: Source, structure: Structure, x: np.ndarray, prior, started: float,
              **run) -> StreamEMResult:
    """One last pass at the final tables of every restart (``x``, ``(R, n)``): the best
    restart's :class:`StreamEMResult`, timed from ``started`` (``time.perf_counter``). ``run``
    holds the other fields (``history`` and ``n_iter`` per restart, ``converged``,
    ``n_passes`` before this one, the settings)."""
    loglik, counts, entropy = accumulate(source, final_stats, structure, jnp.log(jnp.asarray(x)))
    objective = loglik + prior_terms(x, prior)
    best = int(np.nanargmax(objective))
    shapes = structure.table_shapes
    tables = flat.unflatten(x[best], shapes)
    n_iter = run.pop("n_iter")
    history = run.pop("history")[best][:n_iter[best]]
    converged = run.pop("converged")
    return StreamEMResult(
        structure=structure, history=history, n_iter=int(n_iter[best]),
        converged=bool(converged[best]), n_passes=run.pop("n_passes") + 1,
        restart_objectives=objective, restart_n_iter=n_iter, restart_converged=converged,
        n_rows=source.n_rows, n_observed_rows=source.n_observed_rows,
        n_blocks=source.blocks.n_blocks,
        params=from_tables(structure, order_classes(structure, tables)),
        loglik=float(loglik[best]), objective=float(objective[best]),
        expected_counts=from_tables(structure, order_classes(
            structure, flat.unflatten(counts[best], shapes), by=tables)),
        entropy=float(entropy[best]), seconds=time.perf_counter() - started, **run)
