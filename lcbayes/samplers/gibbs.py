"""Gibbs sampling of a latent class model's posterior at a fixed number of classes.

The model (Whiley §5.2, the DAG of eq. 5.7 at fixed ``K``, with polytomous items): class
weights ``pi ~ Dir(delta_1 .. delta_K)``, one table row per item ``j`` and class ``k``,
``theta_jk ~ Dir(lambda_jk)``, a class ``z_l ~ Cat(pi)`` for every row ``l`` and
``y_lj | z_l = k ~ Cat(theta_jk)``. A missing ``y_lj`` is summed out (a factor of one).

One sweep is Whiley §5.2.1 (a)-(c), every draw exact:

(a) ``pi | z ~ Dir(delta_k + N_k)``, ``N_k = #{l : z_l = k}``;
(b) ``theta_jk | z, y ~ Dir(lambda_jkr + N_jkr)``, ``N_jkr = #{l : z_l = k, y_lj = r}``
    (missing values add no count);
(c) ``P(z_l = k | pi, theta, y_l) ∝ pi_k prod_{j observed in l} theta_jk[y_lj]``.

Rows with no observed value are left out of the chain: their class sums out to a factor of
one. The rows of a data pattern share (c)'s probabilities, computed once per pattern, and each
row draws its class with one uniform (inverse CDF), as in
:func:`lcbayes.inference.completion.sample_completion`. Dirichlet draws are log-gamma draws
(:func:`lcbayes.engines.gamma_sampler.log_gamma`), so no probability underflows to zero. Pattern and
row axes are padded to size classes (zero counts and row weights), so data sets of similar
size share one compiled program.

The kernel works on a fixed number of class *slots* of which the first ``k`` are active
(inactive slots have weight zero; their tables are prior draws and never used), so that
:mod:`lcbayes.samplers.rjmcmc` reuses it while ``K`` changes. Chains are vmapped, warm-up and
draws are ``lax`` loops inside one jitted function, in float64.

Output: an ArviZ ``InferenceData`` (:func:`lcbayes.samplers.idata.lc_inference_data`) with
``class_weights`` and ``theta_<column>`` draws, ``log_likelihood`` (``sum_rows ln p(y_l | pi,
theta)``, missing values summed out) and ``log_joint`` (plus the log Dirichlet densities).

Example::

    idata = lcb.gibbs(lcb.latent_class(data, 3), data, draws=1000, warmup=500, seed=0)
    idata.posterior["class_weights"].mean(("chain", "draw"))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..data import Dataset
from ..engines.dirichlet import log_normaliser
from ..engines.gamma_sampler import log_gamma
from ..engines.run_record import start_engine
from ..errors import ArgumentError
from ..jax_setup import on_device
from ..params import PriorSpec, proper_prior_tables
from ..render import json_value
from ..structure import Structure
from ..validation import Seed, check_int, fit_data, prng_key, seed_record
from .idata import lc_inference_data
from .loops import kept_counts, padded_size, sweeps
from .network_gibbs import check_network, network_gibbs
from .pointwise import with_log_likelihood
from .results import GibbsResult

__all__ = ["GibbsResult", "LCData", "LCPrior", "LCState", "gibbs", "gibbs_sweep", "keyed_sweep",
           "lc_data", "scan_chains", "symmetric_prior"]

#: Smallest padded pattern and row axes (:func:`lc_data`): small data sets share one program.
MIN_PATTERNS, MIN_ROWS = 16, 64


class LCData(NamedTuple):
    """The data as the kernel reads them (NumPy when built, traced inside the sampler).

    The pattern and row axes are padded to size classes (:func:`padded_size`): padded patterns
    have count 0 and no observed value, padded rows weight 0.

    Attributes:
        one_hot: ``(P, J, R)`` one-hot codes of every pattern's values (``R`` the largest
            cardinality); all zeros for a missing value and for padded categories.
        counts: ``(P,)`` multiplicity of each pattern.
        rows: ``(N,)`` the pattern of every row with at least one observed value.
        row_weights: ``(N,)`` 1 for those rows, 0 for padding.
        categories: ``(J, R)`` True where category ``r`` exists for item ``j``.
    """

    one_hot: jax.Array
    counts: jax.Array
    rows: jax.Array
    row_weights: jax.Array
    categories: jax.Array


class LCPrior(NamedTuple):
    """Dirichlet pseudo-counts per class slot: ``delta (S,)`` for the weights and
    ``lam (S, J, R)`` for the item tables (1 in padded categories, which are never used)."""

    delta: jax.Array
    lam: jax.Array


class LCState(NamedTuple):
    """One chain's state: the first ``k`` of ``S`` class slots are active.

    Attributes:
        k: number of active classes (int scalar).
        log_weights: ``(S,)`` ``ln pi``; ``-inf`` in inactive slots.
        log_theta: ``(S, J, R)`` ``ln theta``; ``-inf`` in padded categories.
        z: ``(N,)`` the class slot of every row of :attr:`LCData.rows`.
    """

    k: jax.Array
    log_weights: jax.Array
    log_theta: jax.Array
    z: jax.Array


def lc_data(data: Dataset) -> LCData:
    """:class:`LCData` of a data set (all its columns, in order), padded to at least
    ``MIN_PATTERNS`` patterns and ``MIN_ROWS`` rows."""
    cards = np.asarray(data.cardinalities)
    width = int(cards.max())
    patterns = np.asarray(data.patterns)
    n_patterns = padded_size(patterns.shape[0], MIN_PATTERNS)
    one_hot = np.zeros((n_patterns, patterns.shape[1], width))
    p, j = np.nonzero(patterns >= 0)
    one_hot[p, j, patterns[p, j]] = 1.0
    counts = np.zeros(n_patterns)
    counts[:patterns.shape[0]] = data.counts
    index = np.asarray(data.pattern_index)
    observed = index[np.any(patterns >= 0, axis=1)[index]]
    rows = np.zeros(padded_size(observed.size, MIN_ROWS), dtype=np.int32)
    rows[:observed.size] = observed
    row_weights = (np.arange(rows.size) < observed.size).astype(np.float64)
    categories = np.arange(width)[None, :] < cards[:, None]
    # NumPy arrays here: the samplers take jnp.asarray of every field (LCData(*map(...)))
    return LCData(one_hot, counts, rows, row_weights, categories)  # type: ignore[arg-type]  # NumPy


def symmetric_prior(structure: Structure, prior: PriorSpec, slots: int, categories: np.ndarray
              ) -> LCPrior:
    """Dirichlet pseudo-counts on ``slots`` class slots, the same for every class (the label
    symmetry that the evidence engines' relabelling sums assume; other priors are refused).
    ``categories``: ``(J, R)`` True where item ``j`` has category ``r``."""
    tables = proper_prior_tables(structure, prior, "smc")
    weights = np.asarray(tables[0][0], dtype=np.float64)
    if not np.allclose(weights, weights[0]) or any(
            not np.allclose(t, t[:1]) for t in tables[1:]):
        raise ArgumentError("the evidence engines need the same prior for every class "
                            "(label-symmetric): give prior='dirichlet', a number, or per-node "
                            "tables whose class rows are equal")
    lam = np.ones((slots, *categories.shape))
    for j, table in enumerate(tables[1:]):
        lam[:, j, :table.shape[1]] = table[0]
    return LCPrior(on_device(np.full(slots, weights[0])), on_device(lam))


def class_log_lik(one_hot, categories, log_theta) -> jax.Array:
    """``(P, S)`` ``ln p(y_p | z = k, theta) = sum_{j observed} ln theta_jk[y_pj]`` of one-hot
    patterns ``(P, J, R)`` (zeros where missing)."""
    return jnp.einsum("pjr,kjr->pk", one_hot, jnp.where(categories, log_theta, 0.0))


def pattern_log_lik(data: LCData, log_theta: jax.Array) -> jax.Array:
    """:func:`class_log_lik` of the data's patterns."""
    return class_log_lik(data.one_hot, data.categories, log_theta)


def draw_dirichlets(key, weight_shapes: jax.Array, table_shapes: jax.Array,
                    categories: jax.Array, active: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``ln pi ~ Dir(weight_shapes)`` on the active slots (``-inf`` elsewhere) and log rows of
    ``Dir(table_shapes)`` (``(..., J, R)``, ``-inf`` in padded categories), from one
    :func:`~lcbayes.engines.gamma_sampler.log_gamma` call (each call site costs compile time)."""
    shapes = jnp.concatenate([weight_shapes, jnp.where(categories, table_shapes, 1.0).ravel()])
    g = log_gamma(key, shapes)
    w = jnp.where(active, g[:weight_shapes.shape[0]], -jnp.inf)
    t = jnp.where(categories, g[weight_shapes.shape[0]:].reshape(table_shapes.shape), -jnp.inf)
    return w - logsumexp(w), t - logsumexp(t, axis=-1, keepdims=True)


def allocation_counts(data: LCData, z: jax.Array, slots: int) -> jax.Array:
    """``(P, S)`` number of rows of pattern ``p`` in class slot ``k`` (padding rows count 0)."""
    return jax.ops.segment_sum(jax.nn.one_hot(z, slots) * data.row_weights[:, None], data.rows,
                               num_segments=data.one_hot.shape[0])


def draw_classes(u: jax.Array, data: LCData, log_weights, log_theta) -> jax.Array:
    """Step (c): every row's class by inverse CDF of its uniform ``u``."""
    logits = log_weights[None, :] + pattern_log_lik(data, log_theta)
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=1), axis=1)
    u = u * cdf[data.rows, -1]
    return jnp.minimum((u[:, None] > cdf[data.rows]).sum(axis=1),
                       log_weights.shape[0] - 1).astype(jnp.int32)


def init_state(data: LCData, slots: int, k: int | jax.Array) -> LCState:
    """A start with no random draw: rows dealt to the first ``k`` slots in turn, equal weights,
    uniform tables. The first sweep's draws (a)-(c) then start every chain afresh."""
    active = jnp.arange(slots) < k
    uniform = jnp.where(data.categories, -jnp.log(data.categories.sum(-1, keepdims=True)),
                        -jnp.inf)
    return LCState(jnp.asarray(k, dtype=jnp.int32),
                   jnp.where(active, -jnp.log(jnp.asarray(k, dtype=jnp.float64)), -jnp.inf),
                   jnp.broadcast_to(uniform, (slots, *uniform.shape)),
                   (jnp.arange(data.rows.shape[0]) % k).astype(jnp.int32))


def gibbs_sweep(key, u_rows: jax.Array, data: LCData, prior: LCPrior, state: LCState,
                spare: jax.Array | None = None) -> tuple[LCState, jax.Array | None]:
    """Steps (a), (b), (c) of the module docstring on the active slots: Dirichlet draws from
    ``key``, the rows' classes from their uniforms ``u_rows`` (``(N,)``).

    ``spare``: optional ``(J, R)`` pseudo-counts of one more table, drawn in the same
    log-gamma call and returned (the birth proposal of :mod:`lcbayes.samplers.rjmcmc`)."""
    slots = prior.delta.shape[0]
    n_pk = allocation_counts(data, state.z, slots)
    active = jnp.arange(slots) < state.k
    shapes = prior.lam + jnp.einsum("pk,pjr->kjr", n_pk, data.one_hot)
    if spare is not None:
        shapes = jnp.concatenate([shapes, spare[None]])
    log_weights, log_theta = draw_dirichlets(key, prior.delta + n_pk.sum(axis=0), shapes,
                                             data.categories, active)
    spare_table = None if spare is None else log_theta[slots]
    log_theta = log_theta[:slots]
    z = draw_classes(u_rows, data, log_weights, log_theta)
    return LCState(state.k, log_weights, log_theta, z), spare_table


def keyed_sweep(key, data: LCData, prior: LCPrior, state: LCState) -> LCState:
    """One :func:`gibbs_sweep` from one key (split into its Dirichlet draws and the rows'
    uniforms)."""
    k_gamma, k_rows = jax.random.split(key)
    return gibbs_sweep(k_gamma, jax.random.uniform(k_rows, data.rows.shape), data, prior,
                       state)[0]


def log_joint_parts(data: LCData, prior: LCPrior, state: LCState) -> tuple[jax.Array, jax.Array]:
    """``(ln p(y | pi, theta), ln Dir(pi | delta) + sum_jk ln Dir(theta_jk | lambda_jk))`` on
    the active slots; the likelihood sums the classes out, missing values are factors of one."""
    active = jnp.arange(prior.delta.shape[0]) < state.k
    logits = state.log_weights[None, :] + pattern_log_lik(data, state.log_theta)
    loglik = data.counts @ logsumexp(logits, axis=1)
    delta = jnp.where(active, prior.delta, 0.0)
    log_w = jnp.where(active, state.log_weights, 0.0)
    weights = log_normaliser(prior.delta, active) + jnp.sum((delta - 1.0) * log_w)
    rows = log_normaliser(prior.lam, data.categories) + jnp.sum(
        jnp.where(data.categories, (prior.lam - 1.0) * state.log_theta, 0.0), axis=-1)
    return loglik, weights + jnp.sum(jnp.where(active[:, None], rows, 0.0))


def scan_chains(draws: int, data: LCData, prior: LCPrior, keys, warmup, thin,
                record: Callable[[LCState], Any]):
    """Every chain (one per key, vmapped) from :func:`init_state`: one ``lax.scan`` over the
    ``draws`` kept states, each after :func:`kept_counts` sweeps (so the sweep is compiled
    once), stacking ``record(state)`` of every kept state. Traceable (the callers jit it)."""
    slots = prior.delta.shape[0]

    def step(key, state):
        return keyed_sweep(key, data, prior, state)

    def chain(key):
        def body(state, i):
            state = sweeps(kept_counts(i, warmup, thin), step, state, jax.random.fold_in(key, i))
            return state, record(state)

        return jax.lax.scan(body, init_state(data, slots, slots), jnp.arange(draws))[1]

    return jax.vmap(chain)(keys)


@partial(jax.jit, static_argnums=0)
def _run(draws: int, data: LCData, prior: LCPrior, keys, warmup, thin):
    """Weights, tables, log-likelihood and log joint of every kept state of every chain."""
    def record(state):
        loglik, log_prior = log_joint_parts(data, prior, state)
        return state.log_weights, state.log_theta, loglik, loglik + log_prior

    return scan_chains(draws, data, prior, keys, warmup, thin, record)


def gibbs(structure: Structure, data, *, draws: int = 1000, warmup: int = 500,
          chains: int = 4, seed: Seed = 0, prior: PriorSpec = "dirichlet", thin: int = 1
          ) -> GibbsResult:
    """Posterior draws of a latent class model by Gibbs sampling (module docstring); of an
    HLC tree (forward filtering, backward sampling of every row's hidden values) or a DAG
    (joint enumeration of the hidden values), :mod:`lcbayes.samplers.network_gibbs`.

    Args:
        structure: a latent class structure (:func:`lcbayes.latent_class`), an HLC tree
            (:func:`lcbayes.hlc`) or a DAG (:func:`lcbayes.dag`; at most
            :data:`~lcbayes.engines.ais.MAX_GIBBS_STATES` joint hidden states, else an
            ``ArgumentError``).
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes);
            missing values are summed out, rows with none observed are kept in
            ``observed_data`` but add nothing.
        draws: kept draws per chain.
        warmup: sweeps discarded before the first kept draw.
        chains: independent chains (vmapped); each starts from the rows dealt to the classes
            in turn (:func:`init_state`), its own draws from the first sweep on.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            draws.
        prior: Dirichlet pseudo-counts as everywhere in lcbayes (``"dirichlet"`` = 1, a
            number, or ``{node: pseudo-counts}``); ``None`` is refused.
        thin: keep every ``thin``-th sweep.

    Returns:
        A :class:`~lcbayes.GibbsResult`; ``to_inference_data()`` gives the ArviZ
        ``InferenceData`` with groups ``posterior`` (``class_weights`` and
        ``theta_<column>``; for other kinds ``theta_<node>`` per CPT), ``sample_stats``
        (``log_likelihood``, ``log_joint``) and ``observed_data`` (``y``);
        ``posterior.attrs`` hold the settings and ``seconds``.
    """
    start, seed = start_engine(structure, seed)
    counts = {"draws": check_int(draws, "draws", 1), "warmup": check_int(warmup, "warmup", 0),
              "chains": check_int(chains, "chains", 1), "thin": check_int(thin, "thin", 1)}
    if structure.kind != "latent_class":
        check_network(structure)
        return network_gibbs(structure, fit_data(structure, data), counts, seed, prior, start)
    data = fit_data(structure, data)
    tables = proper_prior_tables(structure, prior, "gibbs")
    lc = lc_data(data)
    n_classes = structure.cardinalities[0]
    lam = np.ones((n_classes, *lc.categories.shape))
    for j, table in enumerate(tables[1:]):
        lam[:, j, :table.shape[1]] = table
    keys = jax.random.split(prng_key(seed), counts["chains"])
    log_w, log_theta, loglik, log_joint = _run(
        counts["draws"], LCData(*map(jnp.asarray, lc)),
        LCPrior(jnp.asarray(tables[0][0]), jnp.asarray(lam)), keys, counts["warmup"],
        counts["thin"])
    settings = {**counts, "seed": seed_record(seed), "n_classes": n_classes,
                "prior": prior if isinstance(prior, str | int | float) else "custom"}
    seconds = time.perf_counter() - start
    idata = lc_inference_data(
        data, np.exp(np.asarray(log_w)), np.exp(np.asarray(log_theta)), np.asarray(loglik),
        np.asarray(log_joint),
        attrs={"engine": "gibbs", **settings, "seed": json_value(settings["seed"]),
               "seconds": seconds})
    with_log_likelihood(idata, structure, data)
    return GibbsResult(idata=idata, structure=structure, settings=settings, seconds=seconds)
