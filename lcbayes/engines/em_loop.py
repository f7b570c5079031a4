"""EM's jitted loop for maximum-likelihood and MAP estimates, many restarts at once.

E step: exact inference (:mod:`lcbayes.inference`) gives the expected family counts
``N_ilk = sum_p w_p P(x_i = k, pa_i = l | y_p, theta)`` (Beal & Ghahramani eq. 19).
M step (:func:`lcbayes.engines.em_core.m_step`):

* ML (eq. 18): ``theta_ilk = N_ilk / N_il``;
* MAP in the softmax basis (default for a prior; what Beal & Ghahramani ran, §3.1, after MacKay
  1998; Karčiauskas eq. 3.6): ``theta_ilk = (N_ilk + lambda_ilk) / (N_il + lambda_il)``, always
  interior, valid for any ``lambda > 0``;
* MAP in the simplex basis (eq. 20):
  ``theta_ilk = (N_ilk + lambda_ilk - 1) / (N_il + lambda_il - r_i)``,
  the mode of the Dirichlet posterior density; needs ``lambda >= 1``.

The objective ``ln p(y | theta) + sum (lambda - 1 + b) ln theta`` (``b = 1`` in the softmax
basis, no prior term for ML) never decreases. A row whose counts are all zero (an empty class)
stays uniform, so zero counts never give NaN.

Every restart is a ``lax.while_loop`` of SQUAREM cycles (:mod:`lcbayes.engines.squarem`) in one
jitted program, ``batch_size`` restarts vmapped side by side; each stops when its objective
changes by less than ``tol`` per observed row, or after ``max_iter`` iterations. The jitted core
:func:`run_em` also fits structures with tied CPT rows (:mod:`lcbayes.inference.tying`).
:func:`order_classes` is every EM fit's canonical labelling of a latent class model's classes
(by decreasing size).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from ..inference import complete_columns, e_step, flat, flat_e_step, log_marginal, prepare
from ..inference.tying import RowTying, entry_weights, pool
from ..jax_setup import on_device
from ..memory import check_restarts_memory
from ..program_cache import cached_jit
from ..structure import Structure
from ..validation import Seed, prng_key
from . import squarem
from .em_core import EMRuns, m_step, run_restarts, starts
from .run_record import check_batching

__all__ = ["em_restarts", "em_runner", "final_e_step", "order_classes", "run_em", "start_tables"]


def _log(tables):
    return tuple(jnp.log(t) for t in tables)


#: The random starts (:func:`~lcbayes.engines.em_core.starts`) as one cached program.
start_tables = cached_jit(starts, static_argnames=("structure",))


_TINY = 1e-300  # floor for logs of probabilities in the extrapolation (exact zeros allowed)


def em_runner(structure: Structure, patterns, weights, alphas, tol_total, limit, max_iter: int,
              shift: float, accelerate: bool, tying: RowTying | None = None,
              complete: tuple[int, ...] = (), held: tuple[jax.Array, jax.Array] | None = None,
              vmapped: bool = False):
    """EM from one start, traceable: ``run(tables) -> EMRuns`` of that start (no batch axis)
    for at most ``limit`` (<= ``max_iter``, the history length) iterations.

    Plain EM, or (``accelerate``) SQUAREM cycles extrapolating the log tables, renormalised row
    by row; either way the objective never decreases. ``alphas`` are the prior pseudo-count
    tables (``None``: ML) and ``shift`` is ``b - 1`` of the module docstring.

    ``tying`` (:mod:`lcbayes.inference.tying`) pools the counts of tied rows and counts every
    group's prior term once; the starts must already be tied. ``complete``
    (:func:`~lcbayes.inference.complete_columns` of ``patterns``) folds the iterations' E
    steps; the final log-likelihoods use the unfolded evidence. ``held = (active, values)``
    (flat, :meth:`.padding.ClassPadding.held`) holds the entries of switched-off classes at
    ``values`` (weight exactly zero) and leaves them out of the prior term. ``vmapped``: the
    caller vmaps ``run`` (the E step then stays in log space, :func:`flat_e_step`)."""
    evidence = prepare(structure, patterns, complete)
    shapes = structure.table_shapes
    weights_of_entries = entry_weights(tying, shapes)
    prior = None if alphas is None else flat.flatten(alphas) + shift  # lambda - 1 + b
    active, values = (None, None) if held is None else held
    if prior is not None and active is not None:  # active is None exactly when held is
        prior = jnp.where(active, prior, 0.0)

    def hold(x):
        return x if held is None else jnp.where(active, x, values)

    def from_free(u):
        return hold(jnp.exp(flat.log_normalise(u if held is None else
                                               jnp.where(active, u, -jnp.inf), shapes)))

    def objective(x, log_marg):
        if prior is None:
            return weights @ log_marg
        terms = xlogy(prior, x)
        return weights @ log_marg + (terms if weights_of_entries is None
                                     else weights_of_entries * terms).sum()

    def step(x):
        log_marg, counts = flat_e_step(structure, jnp.log(x), evidence, weights,
                                       vmapped=vmapped)
        return objective(x, log_marg), hold(m_step(pool(counts, tying), prior, shapes))

    def run(tables):
        x, history, n_iter, done = squarem.iterate(
            step, flat.flatten(tables), lambda t: jnp.log(jnp.maximum(t, _TINY)),
            from_free, tol_total, limit, max_iter,
            accelerate, weights_of_entries)
        log_marg = log_marginal(structure, _log(flat.unflatten(x, shapes)),
                                prepare(structure, patterns))
        return EMRuns(flat.unflatten(x, shapes), history, n_iter, done, weights @ log_marg,
                      objective(x, log_marg))

    return run


@partial(cached_jit, static_argnames=("structure", "max_iter", "shift", "batch_size",
                                     "accelerate", "complete"))
def run_em(structure: Structure, patterns, weights, alphas, tol_total, starts, limit,
           max_iter: int, shift: float, batch_size: int, accelerate: bool,
           tying: RowTying | None = None, complete: tuple[int, ...] = (),
           held: tuple[jax.Array, jax.Array] | None = None) -> EMRuns:
    """The jitted core: :func:`em_runner` from every start in ``starts`` (a batch of tables),
    ``batch_size`` restarts vmapped at a time."""
    run = em_runner(structure, patterns, weights, alphas, tol_total, limit, max_iter, shift,
                    accelerate, tying, complete, held, vmapped=batch_size > 1)
    return squarem.map_restarts(run, starts, batch_size)


def em_restarts(structure: Structure, data, *, restarts: int, seed: Seed = 0,
                tol: float = 1e-8, max_iter: int = 2000) -> EMRuns:
    """Every restart of a maximum-likelihood fit (SQUAREM, :func:`lcbayes.em`'s random starts and
    stopping rule), NumPy, unordered: the optima a data-informed reference is built from
    (:mod:`lcbayes.samplers.reference`). ``data`` must already fit ``structure``."""
    check_restarts_memory(structure, restarts, max_iter)
    patterns, weights = on_device(data.patterns), on_device(data.counts)
    starts = start_tables(structure, patterns, weights, jax.random.split(prng_key(seed), restarts))
    batch_size = check_batching(None, restarts)
    tol_total = tol * max(data.n_observed_rows, 1)

    def run(batch, limit):
        return run_em(structure, patterns, weights, None, tol_total, batch, limit, max_iter,
                      0.0, batch_size, True, complete=complete_columns(data.patterns))

    return run_restarts(run, starts, max_iter, None, 1)[0]


@partial(cached_jit, static_argnames=("structure",))
def final_e_step(structure: Structure, tables, patterns, weights):
    """The E step at the fitted tables, their logs taken inside the compiled program."""
    return e_step(structure, _log(tables), patterns, weights)



def order_classes(structure: Structure, tables, by=None) -> list[np.ndarray]:
    """Latent class models: ``tables`` (CPTs, or tables laid out like them, e.g. expected
    counts) with the classes reordered by decreasing weight in ``by`` (default: ``tables``
    themselves), the canonical labelling of every EM fit; other kinds unchanged."""
    tables = [np.asarray(t) for t in tables]
    if structure.kind != "latent_class":
        return tables
    root = structure.root
    order = np.argsort(-np.asarray((tables if by is None else by)[root])[0], kind="stable")
    return [t[:, order] if i == root else t[order] for i, t in enumerate(tables)]

