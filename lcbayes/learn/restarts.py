"""Multiple-restart EM with pruning, every start a *lane* of one compiled program.

Chickering & Heckerman (1997) as configured by Karčiauskas (2005) §3.3 and §4.5.2: run EM on
all starting models; after cumulative iterations 1, 3, 7, 15, ... (``2^j - 1``) keep the best
``ceil(n / q)`` by log-likelihood; when one is left, continue it until the log-likelihood
changes by less than ``tol`` (0.01 nats in the thesis) or ``max_iter`` iterations in all
(200). The stages before that run all their iterations: the tolerance applies to the survivor
only (a split starts next to a saddle point, where EM gains little per iteration at first).
Starts may belong to *groups* that are pruned separately, each with its own data weights: the
partial EMs of all the components of a split step (each on its own soft sub-data, Procedure
6.2) run as one batch.

Every lane is :func:`lcbayes.engines.em_loop.em_runner` (EM or SQUAREM cycles, an iteration being a
cycle) on a latent class model in a capacity layout (:mod:`.mixture`), vmapped over lanes with
per-lane data weights. Lanes run in blocks of :data:`LANE_BLOCKS` lanes, so a whole search
compiles one program per capacity and block size, whatever its batch sizes.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset
from ..engines.em_loop import em_runner
from ..inference import complete_columns, e_step, flat
from ..structure import Structure
from .mixture import ClassModel, layout

__all__ = ["LANE_BLOCKS", "EMSettings", "Fitted", "class_posteriors", "log_likelihoods",
           "multiple_restart_em", "prune_em", "root_posteriors", "run_lanes"]

#: Lanes per call of the compiled program, largest first (a batch is cut greedily).
LANE_BLOCKS = (16, 4, 1)


class EMSettings(NamedTuple):
    """EM settings of a search: absolute tolerance on the log-likelihood (nats), iteration
    limit per run, SQUAREM acceleration."""

    tol: float = 0.01
    max_iter: int = 200
    accelerate: bool = True


class Fitted(NamedTuple):
    """A fitted model, its log-likelihood on its data and the iterations it took."""

    model: ClassModel
    loglik: float
    n_iter: int


@partial(jax.jit, static_argnames=("structure", "max_iter", "accelerate", "complete"))
def _fit_lanes(structure, patterns, weights, starts, active, values, limit, tol_total,
               max_iter: int, accelerate: bool, complete: tuple[int, ...]):
    shapes = structure.table_shapes

    def one(w, x, a, v):
        run = em_runner(structure, patterns, w, None, tol_total, limit, max_iter, 0.0,
                        accelerate, complete=complete, held=(a, v), vmapped=True)
        out = run(flat.unflatten(x, shapes))
        return flat.flatten(out.tables), out.loglik, out.n_iter

    return jax.vmap(one)(weights, starts, active, values)


def _blocks(n: int) -> list[tuple[int, int]]:
    """``(start, size)`` of the blocks that cover ``n`` lanes (:data:`LANE_BLOCKS`)."""
    out, start = [], 0
    for size in LANE_BLOCKS:
        while n - start >= size:
            out.append((start, size))
            start += size
    return out


def run_lanes(padded: Structure, data: Dataset, weights: np.ndarray, flats: np.ndarray,
              active: np.ndarray, values: np.ndarray, limit: int, settings: EMSettings):
    """Every lane ``limit`` more iterations of EM on ``padded`` (0: just the
    log-likelihoods): ``(flat tables, log-likelihoods, iterations)``, one row per lane.
    ``weights``, ``flats``, ``active`` and ``values`` have one row per lane."""
    patterns = jnp.asarray(data.patterns)
    complete = complete_columns(data.patterns)
    out_x, out_ll, out_it = [], [], []
    for start, size in _blocks(flats.shape[0]):
        part = slice(start, start + size)
        x, ll, it = _fit_lanes(padded, patterns, jnp.asarray(weights[part]),
                               jnp.asarray(flats[part]), jnp.asarray(active[part]),
                               jnp.asarray(values[part]), limit, settings.tol,
                               max(settings.max_iter, 1), settings.accelerate, complete)
        out_x.append(np.asarray(x))
        out_ll.append(np.asarray(ll))
        out_it.append(np.asarray(it))
    return np.concatenate(out_x), np.concatenate(out_ll), np.concatenate(out_it)


def prune_em(padded: Structure, data: Dataset, flats: np.ndarray, active: np.ndarray,
             values: np.ndarray, q: int, settings: EMSettings, weights: np.ndarray | None = None,
             groups: np.ndarray | None = None, deadline: float | None = None
             ) -> list[tuple[np.ndarray, float, int]]:
    """Multiple-restart EM (module docstring) of the lanes ``flats`` of ``padded`` (with their
    ``active`` entries and held ``values``): per group, ``(flat tables, log-likelihood,
    iterations)`` of its best lane.

    Args:
        weights: ``(G, P)`` data weights of each group (soft sub-data); default: the counts.
        groups: the group of each lane (``0 .. G-1``); default: one group.
        deadline: a ``time.perf_counter()`` value; past it, pruning stops and every group
            returns its best lane so far.
    """
    n = flats.shape[0]
    groups = np.zeros(n, dtype=int) if groups is None else np.asarray(groups)
    weights = data.counts[None, :] if weights is None else np.asarray(weights, dtype=np.float64)
    flats = flats.copy()
    loglik = np.full(n, -np.inf)
    n_iter = np.zeros(n, dtype=int)
    alive = np.arange(n)
    done, j = 0, 1

    def advance(limit: int, until_converged: bool) -> None:
        x, ll, it = run_lanes(padded, data, weights[groups[alive]], flats[alive],
                              active[alive], values[alive], limit,
                              settings if until_converged else settings._replace(tol=0.0))
        flats[alive], loglik[alive] = x, ll
        n_iter[alive] += it

    while done < settings.max_iter and _largest_group(groups[alive]) > 1:
        target = min(2 ** j - 1, settings.max_iter)
        advance(target - done, False)  # the stages run their iterations: near a saddle
        # point (a fresh split) EM creeps before it climbs, and a tolerance would stop it
        done, j = target, j + 1
        alive = _prune(alive, groups, loglik, q)
        if deadline is not None and time.perf_counter() > deadline:
            break
    else:
        if done < settings.max_iter:
            advance(settings.max_iter - done, True)
    best: dict[int, int] = {}
    for lane in alive:
        g = int(groups[lane])
        if g not in best or loglik[lane] > loglik[best[g]]:
            best[g] = int(lane)
    return [(flats[best[g]], float(loglik[best[g]]), int(n_iter[best[g]])) for g in sorted(best)]


def _lc_lanes(data: Dataset, models: list[ClassModel]):
    """Latent class models (same ``m``) as lanes of their capacity layout: the same rows as
    :meth:`~.mixture.ClassModel.padded` of each model, every table padded once for the whole
    batch (a merge or adjust step at 30+ classes has thousands of starts)."""
    pad = layout(data, models[0].n_classes)
    tables = [np.stack([m.weights for m in models])[:, None, :],
              *(np.stack(t) for t in zip(*(m.items for m in models), strict=True))]
    flats = np.concatenate([t.reshape(len(models), -1) for t in pad.pad(tables)], axis=1)
    active, values = pad.held()
    n = len(models)
    return pad, flats, np.broadcast_to(active, (n, active.size)), np.broadcast_to(
        values, (n, values.size))


def multiple_restart_em(data: Dataset, starts: list[ClassModel], q: int, settings: EMSettings,
                        weights: np.ndarray | None = None, groups: np.ndarray | None = None,
                        deadline: float | None = None) -> list[Fitted]:
    """:func:`prune_em` of latent class starting models (all with the same number of
    classes): the best model of every group."""
    pad, flats, active, values = _lc_lanes(data, starts)
    return [Fitted(ClassModel.from_flat(x, pad), ll, it) for x, ll, it in
            prune_em(pad.padded, data, flats, active, values, q, settings, weights, groups,
                     deadline)]


def _largest_group(groups: np.ndarray) -> int:
    return int(np.bincount(groups).max()) if groups.size else 0


def _prune(alive: np.ndarray, groups: np.ndarray, loglik: np.ndarray, q: int) -> np.ndarray:
    """The best ``ceil(n / q)`` lanes of every group (ties: the earlier start)."""
    kept = []
    for g in np.unique(groups[alive]):
        lanes = alive[groups[alive] == g]
        order = np.argsort(-np.nan_to_num(loglik[lanes], nan=-np.inf), kind="stable")
        kept.extend(lanes[order[:math.ceil(lanes.size / q)]])
    return np.sort(np.asarray(kept, dtype=int))


def log_likelihoods(data: Dataset, models: list[ClassModel]) -> np.ndarray:
    """``ln p(y | model)`` of every model (all with the same number of classes) on ``data``."""
    pad, flats, active, values = _lc_lanes(data, models)
    weights = np.broadcast_to(data.counts, (len(models), data.n_patterns))
    return run_lanes(pad.padded, data, weights, flats, active, values, 0, EMSettings())[1]


_e_step = jax.jit(e_step, static_argnums=0)


def root_posteriors(padded: Structure, flat_x: np.ndarray, data: Dataset) -> np.ndarray:
    """``(C, P)``: ``P(root = h | d_j)`` for every pattern, in ``padded``'s flat tables."""
    shapes = padded.table_shapes
    bounds = np.cumsum([0] + [q * r for q, r in shapes])
    with np.errstate(divide="ignore"):
        log_tables = tuple(jnp.asarray(np.log(flat_x[a:b]).reshape(s)) for a, b, s in
                           zip(bounds[:-1], bounds[1:], shapes, strict=True))
    est = _e_step(padded, log_tables, jnp.asarray(data.patterns), jnp.asarray(data.counts))
    return np.asarray(est.hidden_marginals[padded.hidden_nodes.index(padded.root)]).T


def class_posteriors(data: Dataset, model: ClassModel) -> np.ndarray:
    """``(m, P)``: ``P(h_l | d_j)`` for every pattern (eq. 3.8)."""
    pad = layout(data, model.n_classes)
    return root_posteriors(pad.padded, model.padded(pad)[0], data)[:model.n_classes]
