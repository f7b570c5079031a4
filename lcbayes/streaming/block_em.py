"""EM and VBEM over pattern blocks: data bounded by disk, not memory.

Every iteration is one pass over the blocks of a
:class:`~lcbayes.streaming.blocks.PatternBlocks` (:mod:`lcbayes.streaming.passes`): the E step
of each block (the inference core, every restart at once under ``vmap``) gives
``sum_p w_p ln p(y_p)`` and the expected family counts ``N_ilk`` (Beal & Ghahramani eq. 19),
which add up over the blocks exactly; then the M step of :func:`lcbayes.em` (eq. 18 for ML,
the softmax or simplex MAP step with a prior) or the VBM step of :func:`lcbayes.vbem`
(``alpha = lambda + N``, eq. 56, with the VBE step's tables ``exp(psi(alpha) - psi(alpha_0))``,
eqs 58-60). The numbers are those of the in-memory engines run as plain iterations
(``lcb.em(algorithm="em")``, ``lcb.vbem(algorithm="vbem")``) from the same starts, to
rounding: EM's objective (VBEM's bound ``F = sum ln Z - KL``, form B of
:mod:`lcbayes.engines.vbem`) never decreases, and a restart stops when it changes by less than
``tol`` per observed row. Latent class, HLC and DAG structures alike.

Starts: EM's random starts are :func:`lcbayes.em`'s (random responsibilities per pattern, one
M step; the same keys) drawn on the patterns of the first block, so with the data in one block
they are ``lcb.em``'s starts; VBEM's are :func:`lcbayes.vbem`'s prior draws (the same NumPy
draws), followed by one pass for the first VBM step. ``init=`` adds a given start.

Example::

    blocks = lcb.PatternBlocks.from_dataset(data, block_patterns=10_000)
    fit = lcb.stream_em(lcb.latent_class(data, 3), blocks, restarts=5, seed=0)
    lcb.em(structure, data, init=fit.params, restarts=0)  # the same fit, in memory
"""

from __future__ import annotations

import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..alias import log_alias
from ..engines.dirichlet import expected_log_theta_flat, kl_divergence_flat
from ..engines.run_record import start_engine
from ..engines.vbem import prior_starts
from ..inference import flat
from ..params import PriorSpec, from_tables, proper_prior_tables
from ..progress import new_bar
from ..structure import Structure
from ..validation import Seed, check_choice, check_int, check_positive, numpy_rng, seed_record
from .passes import (
    accumulate,
    block_stats,
    em_starts,
    finish_em,
    lanes,
    m_steps,
    map_prior,
    prior_terms,
    source_for,
)
from .result import StreamEMResult, StreamVBResult
from .stepwise import BUFFER_BLOCKS, batch_size, check_alpha, stepwise_passes

__all__ = ["WARM_START_ROWS", "iterate_passes", "stream_em", "stream_vbem"]

#: From this many rows on, ``stream_em(warm_start="auto")`` starts with a stepwise pass.
WARM_START_ROWS = 100_000


def iterate_passes(step, x: np.ndarray, tol_total: float, max_iter: int, bar) -> dict:
    """Iterate ``step`` (``(A, n)`` tables of the running restarts -> their objectives and
    next tables; one pass over the data) from ``x`` (``(R, n)``) until every restart's
    objective changes by less than ``tol_total`` or ``max_iter`` iterations. Every iteration
    records the objective at the start and moves on (as :func:`lcbayes.engines.squarem.iterate`
    does without acceleration). Returns ``x``, ``history`` ``(R, max_iter)``, ``n_iter``,
    ``converged`` and ``n_passes``."""
    total = x.shape[0]
    x = np.array(x)
    history = np.full((total, max_iter), np.nan)
    n_iter = np.zeros(total, dtype=np.int64)
    done = np.zeros(total, dtype=bool)
    previous = np.full(total, -np.inf)
    passes = 0
    for it in range(max_iter):
        active = np.flatnonzero(~done)
        if active.size == 0:
            break
        value, mapped = step(x[lanes(active, total)])
        value, mapped = np.asarray(value)[:active.size], np.asarray(mapped)[:active.size]
        history[active, it] = value
        done[active] = np.abs(value - previous[active]) < tol_total
        previous[active] = value
        x[active] = mapped
        n_iter[active] += 1
        passes += 1
        bar.update()
    return {"x": x, "history": history, "n_iter": n_iter, "converged": done,
            "n_passes": passes}


def stream_em(
    structure: Structure,
    data,
    *,
    restarts: int = 10,
    seed: Seed = 0,
    prior: PriorSpec = None,
    tol: float = 1e-8,
    max_iter: int = 2000,
    map_basis: str = "softmax",
    init=None,
    warm_start: str | None = "auto",
    alpha: float = 0.7,
    batch_rows: int | None = None,
    buffer_blocks: int = BUFFER_BLOCKS,
    progress: bool = False,
) -> StreamEMResult:
    """Exact EM over pattern blocks (module docstring), every iteration one pass over the
    data, all restarts in the same passes; keep the best.

    Args:
        structure: the model (:func:`~lcbayes.latent_class`, :func:`~lcbayes.hlc`,
            :func:`~lcbayes.dag`).
        data: a :class:`~lcbayes.streaming.blocks.PatternBlocks` (its columns must hold the
            structure's observed columns, its categories be among the structure's), or rows
            (a Dataset, a DataFrame or an array of codes) taken as one block.
        restarts: random starts (from the first block's patterns, as :func:`lcbayes.em` makes
            them); every pass serves all of them (the ones still running, side by side).
        seed: a non-negative integer or a ``jax.random`` key.
        prior, map_basis: ``None`` for maximum likelihood, else a Dirichlet prior and the MAP
            basis, as in :func:`lcbayes.em`.
        tol: stop a restart when its objective changes by less than this per observed row.
        max_iter: iteration (pass) limit.
        init: one more start, ``{node: CPT}`` or an EM fit (``restarts=0``: it alone).
        warm_start: ``"stepwise"``: one stepwise EM pass (:func:`lcbayes.stepwise_em`;
            ``alpha``, ``batch_rows``, ``buffer_blocks``) from the starts, then exact passes
            from there; ``None``: exact passes from the starts (then one block of a Dataset's
            patterns gives ``lcb.em(algorithm="em")``'s fit for the same seed); ``"auto"``
            (default): ``"stepwise"`` from :data:`WARM_START_ROWS` rows on (a thousand
            minibatches of at least 100 rows), else ``None``: the warm start saves exact
            passes, which matters where a pass is long, and ``None`` keeps ``lcb.em``'s fit
            for the same seed.
        alpha, batch_rows, buffer_blocks: the stepwise pass's settings
            (:func:`lcbayes.stepwise_em`).
        progress: a bar over passes.
    """
    started, seed = start_engine(structure, seed)
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    if warm_start is not None:
        check_choice(warm_start, "warm_start", ("auto", "stepwise"))
    alpha = check_alpha(alpha)
    if batch_rows is not None:
        check_int(batch_rows, "batch_rows", 1)
    buffer_blocks = check_int(buffer_blocks, "buffer_blocks", 1)
    prior_arg = map_prior(structure, prior, map_basis)
    source = source_for(structure, data)
    batch_rows = batch_size(batch_rows, source.n_rows)
    if warm_start == "auto":
        warm_start = "stepwise" if source.n_rows >= WARM_START_ROWS else None
    x = em_starts(source, structure, restarts, seed, init)
    warm = 0
    if warm_start == "stepwise":
        x, warm = stepwise_passes(source, structure, x, prior_arg, alpha=alpha,
                                  batch_rows=batch_rows, buffer_blocks=buffer_blocks,
                                  passes=1, rng=numpy_rng(seed)), 1
    shapes = structure.table_shapes

    def step(tables):
        loglik, counts = accumulate(source, block_stats, structure, jnp.log(tables))
        return loglik + prior_terms(tables, prior_arg), m_steps(counts, prior_arg, shapes)

    with new_bar(desc="EM passes", unit="pass", disable=not progress) as bar:
        run = iterate_passes(step, x, tol * max(source.n_observed_rows, 1), max_iter, bar)
    run["n_passes"] += warm + (restarts > 0)  # the random starts take a pass
    return finish_em(
        source, structure, run.pop("x"), prior_arg, started, **run, seed=seed_record(seed),
        restarts=x.shape[0], tol=tol, max_iter=max_iter,
        estimator="ml" if prior is None else "map",
        map_basis=None if prior is None else map_basis, warm_start=warm_start,
        settings=None if warm_start is None else {
            "alpha": alpha, "batch_rows": batch_rows, "buffer_blocks": buffer_blocks,
            "passes": 1})


@partial(jax.jit, static_argnums=2)
def _vb_tables(x: jax.Array, prior: jax.Array, shapes) -> tuple[jax.Array, jax.Array]:
    """Per row of ``x`` (flat Dirichlet parameters): ``E[ln theta]`` (eq. 60) and
    ``KL(q(theta) || p(theta))``."""
    return (jax.vmap(lambda a: expected_log_theta_flat(a, shapes))(x),
            jax.vmap(lambda a: kl_divergence_flat(a, prior, shapes))(x))


def stream_vbem(
    structure: Structure,
    data,
    *,
    restarts: int = 3,
    seed: Seed = 0,
    prior: PriorSpec = "dirichlet",
    tol: float = 1e-6,
    max_iter: int = 1000,
    init=None,
    progress: bool = False,
) -> StreamVBResult:
    """Variational Bayesian EM over pattern blocks (Beal & Ghahramani 2006 §3.5; module
    docstring): each VBE step one pass; keep the best bound.

    Args:
        structure, data: as in :func:`stream_em`.
        restarts: prior draws (:func:`lcbayes.vbem`'s, the same for the same seed), each
            followed by an ordinary E step (one pass) and a VBM step (Beal & Ghahramani §4.1).
        seed: a non-negative integer or a ``jax.random`` key.
        prior: Dirichlet pseudo-counts (a proper prior).
        tol: stop when ``F`` changes by less than this per observed row (Beal: 1e-6).
        max_iter: iteration (pass) limit.
        init: one more start, an EM fit's parameters (``{node: CPT}``, an EMResult or a
            StreamEMResult): its first VBM step uses the exact posteriors at that estimate.
        progress: a bar over passes.
    """
    started, seed = start_engine(structure, seed)
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    lambdas = proper_prior_tables(structure, prior, "stream_vbem")
    source = source_for(structure, data)
    draws = [t.reshape(restarts, lam.size)
             for t, lam in zip(prior_starts(lambdas, restarts, seed), lambdas, strict=True)]
    given = [] if init is None else [em_starts(source, structure, 0, seed, init)]
    tables = np.concatenate([np.concatenate(draws, axis=1), *given])
    prior_flat = flat.flatten(lambdas)
    shapes = structure.table_shapes
    _, counts = accumulate(source, block_stats, structure, jnp.log(tables), observed_only=True)
    x = np.asarray(prior_flat) + counts  # the first VBM step

    def step(alphas):
        elog, kl = _vb_tables(jnp.asarray(alphas), prior_flat, shapes)
        log_z, counts = accumulate(source, block_stats, structure, elog, observed_only=True)
        return log_z - kl, prior_flat + counts

    with new_bar(desc="VBEM passes", unit="pass", disable=not progress) as bar:
        run = iterate_passes(step, x, tol * max(source.n_observed_rows, 1), max_iter, bar)
    elog, kl = _vb_tables(jnp.asarray(run["x"]), prior_flat, shapes)
    elbo = accumulate(source, block_stats, structure, elog, observed_only=True)[0] - kl
    best = int(np.nanargmax(elbo))
    n_iter = run["n_iter"]
    return StreamVBResult(
        structure=structure, history=run["history"][best][:n_iter[best]],
        n_iter=int(n_iter[best]), converged=bool(run["converged"][best]),
        n_passes=run["n_passes"] + 2, restart_objectives=np.asarray(elbo),
        restart_n_iter=n_iter, restart_converged=run["converged"], n_rows=source.n_rows,
        n_observed_rows=source.n_observed_rows, n_blocks=source.blocks.n_blocks,
        seconds=time.perf_counter() - started, seed=seed_record(seed), restarts=len(elbo),
        tol=tol, max_iter=max_iter, elbo=float(elbo[best]), log_alias=log_alias(structure),
        posterior=from_tables(structure, flat.unflatten(run["x"][best], shapes)),
        prior=from_tables(structure, lambdas))

