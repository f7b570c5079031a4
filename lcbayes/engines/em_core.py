"""What EM and every alternative algorithm share: random starts, the M step, the restarts'
outcome and the two-stage restart scheme.

A random start gives every data pattern random responsibilities (Dirichlet(1) per hidden node)
and takes one ML M step from them (Whiley 1999 §1.4; StepMix's and Mplus' random starts lie
near the data's margins the same way). The M step is Beal & Ghahramani (2006) eq. 18 (ML) or
its MAP form (:mod:`lcbayes.engines.em`). :func:`run_restarts` runs every start to
convergence, or Mplus' initial and final stages (Chickering & Heckerman 1997's
multiple-restart EM as Karčiauskas 2005 §3.3 uses it).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import draws
from ..inference import Evidence, e_step, flat, prepare
from ..structure import Structure

__all__ = ["PROGRESS_PARTS", "EMRuns", "in_parts", "initial_tables", "m_step", "run_restarts",
           "start_counts", "starts"]


class EMRuns(NamedTuple):
    """The outcome of every restart of a fit (:func:`lcbayes.engines.em_loop.run_em`)."""

    tables: tuple[jax.Array, ...]
    history: jax.Array      # (R, max_iter) objective per iteration, NaN after the last
    n_iter: jax.Array       # (R,)
    converged: jax.Array    # (R,)
    loglik: jax.Array       # (R,) at the final tables
    objective: jax.Array    # (R,) at the final tables


def m_step(counts: jax.Array, alphas: jax.Array | None, shapes) -> jax.Array:
    """ML (no ``alphas``) or MAP M step on flat tables; ``alphas`` holds ``lambda + b`` (the
    EM module docstring). Empty rows become uniform."""
    return flat.normalise(counts if alphas is None else counts + alphas, shapes)


def start_counts(structure: Structure, evidence: Evidence, weights, key, class_log_mask=None):
    """The flat expected counts of a random start: every pattern gets random responsibilities
    (Dirichlet(1) per hidden node, as virtual evidence under flat tables). A state's draws do
    not depend on how many states follow it, so a padded model (``class_log_mask`` 0 for the
    classes in use, ``-inf`` for the others) draws what the unpadded one does."""
    n = evidence.one_hot.shape[0]
    keys = jax.random.split(key, max(len(structure.hidden_nodes), 1))
    noise = tuple(
        -jnp.log(draws.exponential(k, (structure.cardinalities[h], n))).T
        + (class_log_mask if class_log_mask is not None and h == structure.root else 0.0)
        for k, h in zip(keys, structure.hidden_nodes, strict=False)
    )  # log of normalised exponentials = log Dirichlet(1), up to a per-pattern constant
    uniform = tuple(jnp.zeros(shape) for shape in structure.table_shapes)
    return flat.flatten(e_step(structure, uniform, evidence, weights, noise).counts)


def initial_tables(structure: Structure, evidence: Evidence, weights, key, class_log_mask):
    """A random start: :func:`start_counts` followed by one ML M step. Starts lie near the
    data's margins, like StepMix's and Mplus' random starts."""
    counts = start_counts(structure, evidence, weights, key, class_log_mask)
    return flat.unflatten(m_step(counts, None, structure.table_shapes), structure.table_shapes)


def starts(structure: Structure, patterns, weights, keys, class_log_mask=None):
    """One random start (:func:`initial_tables`) per key: a batch of tables (traceable)."""
    evidence = prepare(structure, patterns)
    return jax.vmap(lambda key: initial_tables(structure, evidence, weights, key,
                                               class_log_mask))(keys)


#: Parts a run of many restarts is cut into when it shows progress (:func:`in_parts`).
PROGRESS_PARTS = 20


def in_parts(run, bar, parts: int = PROGRESS_PARTS):
    """``run(starts, limit)`` over ``parts`` equal parts of the starts, one after another, the
    last padded with copies of its first start (their results dropped), advancing ``bar`` by
    each part's restarts. Restarts are independent, so the results are those of one call; every
    part has one shape, so one compiled program serves them all."""
    def parted(starts, limit):
        n = starts[0].shape[0]
        size = -(-n // parts)
        outs = []
        for low in range(0, n, size):
            part = tuple(t[low:low + size] for t in starts)
            real = part[0].shape[0]
            if real < size:
                part = tuple(jnp.concatenate([t, jnp.repeat(t[:1], size - real, axis=0)])
                             for t in part)
            outs.append(jax.tree_util.tree_map(lambda a, real=real: np.asarray(a)[:real],
                                               run(part, limit)))
            bar.update(real)
        return jax.tree_util.tree_map(lambda *a: np.concatenate(a), *outs)

    return parted


def run_restarts(run, starts, max_iter: int, keep: int | None, burn_in: int):
    """All restarts to convergence, or (``keep``) a two-stage run: every start for ``burn_in``
    iterations, then only the ``keep`` best continue (Mplus' initial and final stage;
    Chickering & Heckerman's multiple-restart EM as used by Karčiauskas §3.3). ``run(starts,
    limit)`` runs a batch of starts for at most ``limit`` iterations (one compiled program for
    both stages); an algorithm's own state (directions, DAEM's temperature) starts afresh in
    the second stage.

    Returns the NumPy outcome of every restart and which restarts reached the final stage."""
    n = starts[0].shape[0]
    if keep is None or keep >= n or burn_in >= max_iter:
        return jax.tree_util.tree_map(np.asarray, run(starts, max_iter)), np.ones(n, dtype=bool)
    first = jax.tree_util.tree_map(np.asarray, run(starts, burn_in))
    chosen = np.sort(np.argsort(-np.nan_to_num(first.objective, nan=-np.inf),
                                kind="stable")[:keep])
    picked = tuple(jnp.asarray(t[chosen]) for t in first.tables)
    second = jax.tree_util.tree_map(np.asarray, run(picked, max_iter - burn_in))
    history = first.history.copy()
    for row, r in enumerate(chosen):
        done = first.n_iter[r]
        history[r, done:] = second.history[row, : max_iter - done]
    merged = EMRuns(
        tables=tuple(t.copy() for t in first.tables),
        history=history, n_iter=first.n_iter.copy(), converged=first.converged.copy(),
        loglik=first.loglik.copy(), objective=first.objective.copy(),
    )
    merged.n_iter[chosen] = first.n_iter[chosen] + second.n_iter
    for name in ("converged", "loglik", "objective"):
        getattr(merged, name)[chosen] = getattr(second, name)
    for table, part in zip(merged.tables, second.tables, strict=True):
        table[chosen] = part
    kept = np.zeros(n, dtype=bool)
    kept[chosen] = True
    return merged, kept
