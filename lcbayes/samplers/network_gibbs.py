"""Gibbs sampling of the posterior of HLC trees and DAGs with discrete hidden nodes.

The model is the structure's Bayesian network with a Dirichlet prior on every CPT row
(``theta_il ~ Dir(lambda_il)``, Beal & Ghahramani eq. 3; Whiley §5.2's latent class sampler
generalised). Given the hidden values of every row the prior is conjugate, so one sweep is

(a) the hidden values of every row, jointly, from ``p(s_row | y_row, theta)``;
(b) every CPT row from ``Dir(lambda_il + N_il)``, ``N_il`` the completed family counts
    (a missing observed leaf adds no count: its factor is summed out).

Step (a) by structure kind:

* ``hlc`` trees, by forward filtering, backward sampling: the sum-product of
  :mod:`lcbayes.inference.tree` (upward messages from the leaves, then downward) gives per data
  pattern the posterior ``p(x_root | y)`` and every edge's ``p(x_v, x_c | y)``. The posterior
  is Markov on the tree, so a row's hidden values are drawn root first and then every child
  from ``p(x_c | x_v, y) = p(x_v, x_c | y) / p(x_v | y)`` at its parent's drawn value.
  The rows of a pattern share these conditionals (computed once per pattern); each row draws
  its own values (one uniform per hidden node, inverse CDF). Work per sweep is linear in the
  number of hidden nodes.
* ``dag`` structures (e.g. bipartite: several hidden parents per observed child), by
  enumerating the joint states of the hidden nodes and of missing observed parents
  (:func:`lcbayes.inference.completion.sample_completion` at temperature 1; at most
  :data:`~lcbayes.engines.ais.MAX_GIBBS_STATES` joint states). A missing observed parent is
  sampled with the hidden values and its CPT counts the sampled value.

Dirichlet draws are log-gamma draws (:mod:`lcbayes.engines.gamma_sampler`). Each chain starts
from a prior draw of the CPTs; chains are vmapped, warm-up and draws are ``lax`` loops in one
jitted function. Latent class models keep their own kernel (:mod:`lcbayes.samplers.gibbs`,
which RJMCMC shares); :func:`lcbayes.gibbs` dispatches here for the other kinds.

Output: an ArviZ ``InferenceData`` (:func:`lcbayes.samplers.idata.network_inference_data`)
with one variable ``theta_<node>`` per CPT, ``log_likelihood`` and ``log_joint``.

Example::

    tree = lcb.hlc(data, {"H": ["H1", "H2"], "H1": ["A", "B"], "H2": ["C", "D"]},
                   {"H": 2, "H1": 2, "H2": 2})
    res = lcb.gibbs(tree, data, draws=1000, seed=0)
    res.posterior["theta_A"].mean(("chain", "draw"))
"""

from __future__ import annotations

import time
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln

from .. import draws
from ..data import Dataset
from ..engines.ais import MAX_GIBBS_STATES
from ..engines.gamma_sampler import log_dirichlet_flat
from ..errors import ArgumentError
from ..inference import flat, flat_log_marginal, prepare, tree
from ..inference.completion import sample_completion, seen_indicators
from ..inference.estep import Evidence
from ..params import PriorSpec, proper_prior_tables
from ..render import json_value
from ..structure import Structure
from ..validation import prng_key, seed_record
from .idata import network_inference_data
from .loops import kept_counts, sweeps
from .pointwise import with_log_likelihood
from .results import GibbsResult

__all__ = ["NetworkData", "check_network", "complete_counts", "network_data", "network_gibbs",
           "run_network", "sample_tree_states", "tree_conditionals"]


class NetworkData(NamedTuple):
    """The data as the network kernel reads them.

    Attributes:
        evidence: the patterns as the structure's inference route reads them (tree or
            enumeration :class:`~lcbayes.inference.Evidence`).
        patterns: ``(P, J)`` codes, ``-1`` for missing.
        counts: ``(P,)`` multiplicity of each pattern.
        rows: ``(N,)`` the pattern of every row with at least one observed value.
        seen: DAG only: per observed parent, ``(P,)`` 1.0 where its value is observed.
    """

    evidence: Evidence
    patterns: jax.Array
    counts: jax.Array
    rows: jax.Array
    seen: dict


def check_network(structure: Structure) -> None:
    """A clear error for a structure the network sampler cannot sample."""
    if structure.kind == "dag" and structure.n_enumerated_states > MAX_GIBBS_STATES:
        raise ArgumentError(
            f"gibbs samples a DAG's hidden values by enumerating their "
            f"{structure.n_enumerated_states} joint states (limit {MAX_GIBBS_STATES}); use "
            "fewer or smaller hidden nodes")
    if structure.kind not in ("hlc", "dag"):
        raise ArgumentError(f"the network Gibbs sampler takes hlc or dag structures, got "
                            f"{structure.kind!r}")


def network_data(structure: Structure, data: Dataset) -> NetworkData:
    """:class:`NetworkData` of a data set already checked against ``structure``."""
    patterns = np.asarray(data.patterns)
    index = np.asarray(data.pattern_index)
    rows = index[np.any(patterns >= 0, axis=1)[index]]
    jp = jnp.asarray(patterns)
    seen = {} if structure.kind == "hlc" else seen_indicators(structure, jp)
    return NetworkData(prepare(structure, jp), jp, jnp.asarray(data.counts, dtype=jnp.float64),
                       jnp.asarray(rows, dtype=jnp.int32), seen)


def tree_conditionals(structure: Structure, log_tables, evidence: Evidence
                      ) -> dict[int, jax.Array]:
    """Per hidden node ``v`` and pattern ``p``: the root's ``(P, r)`` posterior, else the
    ``(P, r_pa, r_v)`` edge posterior ``p(x_pa, x_v | y_p)`` (rows proportional to
    ``p(x_v | x_pa, y_p)``), from the sum-product of :func:`lcbayes.inference.tree.e_step`
    run on every pattern alone."""
    def one(one_hot):
        return tree.e_step(structure, log_tables, Evidence(one_hot[None], None),
                           jnp.ones(1)).counts

    per = jax.vmap(one)(evidence.one_hot)
    root = structure.root
    return {v: per[v][:, 0] if v == root else per[v] for v in structure.hidden_nodes}


def _inverse_cdf(u: jax.Array, weights: jax.Array) -> jax.Array:
    """``(N,)`` index drawn from each row of ``(N, r)`` non-negative ``weights`` by its
    uniform ``u``."""
    cdf = jnp.cumsum(weights, axis=1)
    return jnp.minimum((u[:, None] * cdf[:, -1:] > cdf).sum(axis=1),
                       weights.shape[1] - 1).astype(jnp.int32)


def sample_tree_states(structure: Structure, conditionals: dict[int, jax.Array],
                       rows: jax.Array, u: jax.Array) -> dict[int, jax.Array]:
    """Backward sampling: every row's hidden values ``{v: (N,)}``, root first, each child at
    its parent's drawn value; ``u`` ``(N, H)`` uniforms, one per hidden node
    (``Structure.hidden_nodes`` order)."""
    states: dict[int, jax.Array] = {}
    column = {v: h for h, v in enumerate(structure.hidden_nodes)}
    for v in structure.topological_order:
        if not structure.hidden[v]:
            continue
        if v == structure.root:
            weights = conditionals[v][rows]
        else:
            weights = conditionals[v][rows, states[structure.parents[v][0]]]
        states[v] = _inverse_cdf(u[:, column[v]], weights)
    return states


def _tree_counts(structure: Structure, data: NetworkData, states: dict[int, jax.Array]
                 ) -> jax.Array:
    """Flat completed family counts of sampled tree states."""
    onehot = {v: jax.nn.one_hot(s, structure.cardinalities[v]) for v, s in states.items()}
    per_pattern = {v: jax.ops.segment_sum(o, data.rows, num_segments=data.patterns.shape[0])
                   for v, o in onehot.items()}
    counts = []
    observed = {i: j for j, i in enumerate(structure.observed_nodes)}
    for i in range(structure.n_nodes):
        if i == structure.root:
            counts.append(onehot[i].sum(axis=0)[None])
        elif structure.hidden[i]:
            counts.append(onehot[structure.parents[i][0]].T @ onehot[i])
        else:
            y = jax.nn.one_hot(data.patterns[:, observed[i]], structure.cardinalities[i])
            counts.append(per_pattern[structure.parents[i][0]].T @ y)
    return flat.flatten(counts)


def complete_counts(structure: Structure, data: NetworkData, log_x: jax.Array, key
                    ) -> jax.Array:
    """Step (a) of the module docstring at the flat log CPTs ``log_x``: the flat family counts
    of one joint draw of every row's hidden (and missing parent) values."""
    log_tables = flat.unflatten(log_x, structure.table_shapes)
    if structure.kind == "hlc":
        conditionals = tree_conditionals(structure, log_tables, data.evidence)
        u = draws.uniform(key, (data.rows.shape[0], len(structure.hidden_nodes)))
        return _tree_counts(structure, data,
                            sample_tree_states(structure, conditionals, data.rows, u))
    comp = sample_completion(structure, log_tables, data.evidence, data.seen, data.rows,
                             jnp.asarray(1.0), key)
    return flat.flatten(comp.free_counts) + flat.flatten(comp.seen_counts)


def log_prior_constant(prior: np.ndarray, shapes) -> float:
    """``sum_rows ln Γ(sum_r λ_r) - sum_r ln Γ(λ_r)``, the Dirichlet normalisers of flat
    pseudo-counts ``prior``."""
    rows = flat.entry_rows(shapes)
    return float(np.sum(gammaln(np.bincount(rows, prior))) - np.sum(gammaln(prior)))


@partial(jax.jit, static_argnums=(0, 1))
def run_network(structure: Structure, draws: int, data: NetworkData, prior: jax.Array,
                prior_constant, keys, warmup, thin):
    """``(log CPTs (C, D, F), log-likelihood (C, D), log joint (C, D))`` of ``draws`` kept
    states of every chain (one per key), each starting from a prior draw."""
    shapes = structure.table_shapes

    def step(key, log_x):
        k_s, k_t = jax.random.split(key)
        counts = complete_counts(structure, data, log_x, k_s)
        return log_dirichlet_flat(k_t, prior + counts, shapes)

    def chain(key):
        def body(log_x, i):
            log_x = sweeps(kept_counts(i, warmup, thin), step, log_x, jax.random.fold_in(key, i))
            loglik = data.counts @ flat_log_marginal(structure, log_x, data.evidence)
            log_prior = prior_constant + jnp.sum(jnp.where(prior == 1.0, 0.0,
                                                           (prior - 1.0) * log_x))
            return log_x, (log_x, loglik, loglik + log_prior)

        k_start, key = jax.random.split(key)
        start = log_dirichlet_flat(k_start, prior, shapes)
        return jax.lax.scan(body, start, jnp.arange(draws))[1]

    return jax.vmap(chain)(keys)


def network_gibbs(structure: Structure, data: Dataset, counts: dict, seed, prior: PriorSpec,
                  start: float) -> GibbsResult:
    """:func:`lcbayes.gibbs` for an ``hlc`` or ``dag`` structure: ``data`` checked against
    it, ``counts`` the checked draws, warmup, chains and thin, ``start`` the run's start
    (``time.perf_counter``); :func:`check_network` has passed."""
    prior_flat = np.asarray(flat.flatten(proper_prior_tables(structure, prior, "gibbs")))
    keys = jax.random.split(prng_key(seed), counts["chains"])
    log_x, loglik, log_joint = map(np.asarray, run_network(
        structure, counts["draws"], network_data(structure, data), jnp.asarray(prior_flat),
        log_prior_constant(prior_flat, structure.table_shapes), keys, counts["warmup"],
        counts["thin"]))
    settings = {**counts, "seed": seed_record(seed), "kind": structure.kind,
                "prior": prior if isinstance(prior, str | int | float) else "custom"}
    seconds = time.perf_counter() - start
    idata = network_inference_data(
        structure, data, np.exp(log_x), loglik, log_joint,
        attrs={"engine": "gibbs", **settings, "seed": json_value(settings["seed"]),
               "seconds": seconds})
    with_log_likelihood(idata, structure, data)
    return GibbsResult(idata=idata, structure=structure, settings=settings, seconds=seconds)
