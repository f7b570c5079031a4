"""Reversible-jump MCMC over the number of classes ``K`` of a latent class model.

Whiley (1999) chapter 5 (notes §5.1-5.2), after Richardson & Green (1997), for polytomous items.
Target: ``p(K) p(pi | K) p(theta | K) p(z | pi) p(y | z, theta)`` (Whiley eq. 5.7) with
``pi | K ~ Dir(delta, .., delta)``, every ``theta_jk ~ Dir(lambda_j)`` (one ``lambda_j`` per item,
shared by the exchangeable classes), ``p(K)`` on ``1 .. max_classes``. Its marginal over ``K`` is
``p(K | y) ∝ p(K) p(y | K)`` with ``p(y | K)`` the evidence of the ``K``-class model that
:func:`lcbayes.exact_evidence` computes. Missing values are factors of one; rows with none
observed are left out (their class sums out).

A sweep (Whiley §5.2.1): (a)-(c) the Gibbs updates of :mod:`lcbayes.samplers.gibbs` at the current
``K``; (d) split with probability ``b_K``, else merge; (e) birth with probability ``b_K``, else
death. ``b_1 = 1``, ``b_max = 0``, else ``b_K = d_K = 1/2``, ``d_K = 1 - b_K``.

**Split** ``j* -> (j1, j2)``: ``j*`` uniform among the ``K`` classes; ``u1 ~ U(0, 1)`` and, per
item ``j`` and category ``r`` other than ``r_j = argmax_r theta_{j*r}`` (the *determined*
category; a function of ``theta*`` alone, so merge finds the same one), ``u2_jr ~ U(0, 1)``::

    p1 = u1 p*,  p2 = (1 - u1) p*
    theta_1jr = u2_jr theta*_jr / u1,   theta_2jr = (1 - u2_jr) theta*_jr / (1 - u1)
    theta_1j,r_j = 1 - sum_{r != r_j} theta_1jr   (likewise theta_2), rejected if <= 0,

so ``p1 theta_1 + p2 theta_2 = p* theta*``: Whiley's binary-item map (``theta > 1`` rejected)
is the case ``R = 2``. Rows in ``j*`` move to ``j1`` or ``j2`` with probability
``∝ p_i f(y | theta_i)``, ``P_alloc`` the product of the chosen probabilities (D.7). The
Jacobian (Whiley D.9, per free category; the weight block and the item blocks are triangular)::

    |d(p1, p2, theta_1, theta_2) / d(p*, u1, theta*, u2)| = p* prod_j prod_{r != r_j}
                                                           theta*_jr / (u1 (1 - u1))

**Merge** ``(j1, j2) -> j*``: an unordered pair uniform among ``C(K, 2)``; ``p* = p1 + p2``,
``theta* = (p1 theta_1 + p2 theta_2) / p*``, rows of both move to ``j*``. The inverse of split.

Acceptance of a split from ``K`` is ``min(1, A_S)`` with (Whiley eq. 5.8)::

    A_S = [p(y | z', theta') p(z' | pi') / (p(y | z, theta) p(z | pi))] [p(K+1) / p(K)]
          Γ((K+1) δ) / (Γ(δ) Γ(K δ)) (p1 p2 / p*)^(δ-1)
          prod_j Dir(theta_1j | λ_j) Dir(theta_2j | λ_j) / Dir(theta*_j | λ_j)
          d_{K+1} / (b_K P_alloc g(u)) |J|,

``g(u) = 1`` (uniform ``u``), and of a merge to ``K`` classes ``min(1, 1 / A_S)`` with ``A_S``
of the reverse split. Both choices cancel the labels: the state is a set of classes, whose
density carries ``K!``; split picks ``j*`` with ``b_K / K`` and gives the unordered pair
``{j1, j2}`` from two ``u`` (``u1 -> 1 - u1``, ``u2 -> 1 - u2`` swaps them), merge picks it with
``d_{K+1} / C(K+1, 2)``, and ``(K+1) (K / 2) (2 / (K (K+1))) = 1``. Since
``p_i f(y | theta_i) / q_i = p1 f(y | theta_1) + p2 f(y | theta_2)`` for the chosen class
``i`` of a moved row, the first factor over ``P_alloc`` is computed as
``prod_{rows in j*} [p1 f(y | theta_1) + p2 f(y | theta_2)] / [p* f(y | theta*)]``.

**Birth** of an empty class (Richardson & Green §3.2): ``w ~ Beta(1, K)``, ``theta_new`` from
the prior, the other weights scaled by ``1 - w`` (Jacobian ``(1 - w)^(K-1)``), ``z`` unchanged.
**Death**: an empty class uniform among the ``K0 + 1`` empty ones (rejected when there is
none), weights renormalised. With ``N`` the rows in the chain and ``K0`` the empty classes
before the birth, birth's ratio is (R&G's, whose ``(K+1)`` counts the orderings of the new
state, as ``K!`` does above; the ``theta_new`` prior and proposal cancel)::

    A_B = [p(K+1) / p(K)] [Γ((K+1) δ) / (Γ(K δ) Γ(δ))] w^(δ-1) (1 - w)^(N + K (δ-1))
          (K+1) / (K0 + 1) · d_{K+1} / b_K · (1 - w)^(K-1) / g_{1,K}(w),

``g_{1,K}(w) = K (1 - w)^(K-1)``, and death's is ``1 / A_B`` of the reverse birth. Whiley's
(5.10) and (5.14) omit ``(K+1) / (K0 + 1)``. It is 1 when every class is empty (no data), so
only data reveal its omission: the posterior of ``K`` then departs from the exact one (total
variation 0.24 instead of at most 0.013 in ``tests/test_rjmcmc.py``). With ``δ = 1``:
``A_B = [p(K+1) / p(K)] (K+1) / (K0 + 1) (1 - w)^N d_{K+1} / b_K``.

Padding: ``max_classes`` slots, the first ``K`` active (merge and death shift the later slots
down), so the whole sampler is one jitted ``lax.scan`` (:func:`lcbayes.samplers.loops.kept_counts`
sweeps per kept draw), chains vmapped, float64.

Example::

    idata = lcb.rjmcmc(data, max_classes=6, draws=5000, warmup=1000, seed=0)
    lcb.posterior_k(idata)     # {1: 0.0, 2: 0.61, 3: 0.33, ...}
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln as np_gammaln

from ..constructors import latent_class
from ..data import Dataset
from ..errors import LcbayesError
from ..params import PriorSpec, proper_prior_tables
from ..render import json_value
from ..validation import (
    Seed,
    as_dataset,
    check_int,
    check_seed,
    numpy_rng,
    prng_key,
    seed_record,
)
from .gibbs import (
    LCData,
    LCPrior,
    init_state,
    lc_data,
    log_joint_parts,
)
from .idata import as_inference_data, k_shares, lc_inference_data
from .loops import kept_counts, sweeps
from .results import RJMCMCResult, finish_k_run
from .rjmcmc_moves import Hyper, log_prior_k, sweep

__all__ = ["MOVES", "RJMCMCResult", "class_name", "exchangeable_prior", "posterior_k",
           "prior_k_probabilities", "rjmcmc", "run_counts"]

#: Move types, in the order of the ``proposed`` / ``accepted`` sample statistics.
MOVES = ("split", "merge", "birth", "death")


@partial(jax.jit, static_argnums=0)
def _run(draws: int, data: LCData, prior: LCPrior, hyper: Hyper, keys, k0, warmup, thin):
    """``draws`` kept states of every chain (one per key, starting with ``k0`` classes): one
    ``lax.scan`` over the draws, each running :func:`~lcbayes.samplers.loops.kept_counts` sweeps."""
    slots = prior.delta.shape[0]

    def step(key, carry):
        return sweep(key, data, prior, hyper, carry)

    def chain(key, k):
        def body(state, i):
            zeros = jnp.zeros(len(MOVES), dtype=jnp.int32)
            state, proposed, accepted = sweeps(kept_counts(i, warmup, thin), step,
                                               (state, zeros, zeros), jax.random.fold_in(key, i))
            loglik, log_prior = log_joint_parts(data, prior, state)
            log_joint = loglik + log_prior + log_prior_k(hyper, state.k)
            return state, (state.k, state.log_weights, state.log_theta, loglik, log_joint,
                           proposed, accepted)

        return jax.lax.scan(body, init_state(data, slots, k), jnp.arange(draws))[1]

    return jax.vmap(chain)(keys, k0)


def prior_k_probabilities(prior_k, max_classes: int) -> np.ndarray:
    """``p(K)`` for ``K = 1 .. max_classes`` from the ``prior_k`` argument (normalised)."""
    ks = np.arange(1, max_classes + 1)
    if isinstance(prior_k, str):
        if prior_k not in ("uniform", "poisson"):
            raise LcbayesError(f"prior_k must be 'uniform', 'poisson', an array of "
                               f"{max_classes} probabilities or a function of K, got {prior_k!r}")
        p = np.ones(max_classes) if prior_k == "uniform" else np.exp(-np_gammaln(ks + 1.0))
    elif callable(prior_k):
        p = np.array([float(prior_k(int(k))) for k in ks])
    else:
        p = np.asarray(prior_k, dtype=np.float64)
        if p.shape != (max_classes,):
            raise LcbayesError(f"prior_k must hold one probability per K = 1..{max_classes}, got "
                               f"shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise LcbayesError(f"prior_k must be finite, >= 0 and not all 0, got {p.tolist()}")
    return p / p.sum()


def class_name(data: Dataset) -> str:
    """``"class"``, or with underscores appended until it is not a column name."""
    name = "class"
    while name in data.columns:
        name += "_"
    return name


def exchangeable_prior(data: Dataset, name: str, prior: PriorSpec, p_k: np.ndarray,
                       width: int) -> Hyper:
    """Exchangeable Dirichlet pseudo-counts (``delta``, ``lam (J, R)``), resolved as for a
    1-class model with hidden node ``name`` (so ``prior`` is what
    :func:`lcbayes.params.dirichlet_prior` accepts)."""
    tables = proper_prior_tables(latent_class(data, 1, name=name), prior, "rjmcmc")
    lam = np.ones((data.n_columns, width))
    for j, table in enumerate(tables[1:]):
        lam[j, :table.shape[1]] = table[0]
    cats = np.arange(width)[None, :] < np.asarray(data.cardinalities)[:, None]
    log_norm = (np_gammaln(np.where(cats, lam, 0.0).sum(-1))
                - np.where(cats, np_gammaln(lam), 0.0).sum(-1))
    return Hyper(jnp.log(jnp.asarray(p_k)), jnp.asarray(float(tables[0][0, 0])),
                  jnp.asarray(lam), jnp.asarray(log_norm))


def run_counts(max_classes, draws, warmup, chains, thin) -> dict[str, int]:
    """The checked counts of a sampler over K (:func:`rjmcmc`, the allocation sampler), as
    recorded in its draws' attributes."""
    return {"max_classes": check_int(max_classes, "max_classes", 2),
            "draws": check_int(draws, "draws", 1), "warmup": check_int(warmup, "warmup", 0),
            "chains": check_int(chains, "chains", 1), "thin": check_int(thin, "thin", 1)}


def rjmcmc(data, *, max_classes: int = 10, draws: int = 10_000, warmup: int = 2_000,
           chains: int = 4, prior_k: str | np.ndarray | Callable[[int], float] = "uniform",
           seed: Seed = 0, prior: PriorSpec = "dirichlet", thin: int = 1) -> RJMCMCResult:
    """Posterior over the number of classes and the parameters by reversible jump.

    Unlike the other engines it takes no structure: it samples the latent class models of
    every column of ``data`` with ``K = 1 .. max_classes`` classes.

    Args:
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes; every
            column an item); missing values are summed out.
        max_classes: largest ``K`` (>= 2); the state is padded to this many classes.
        draws: kept draws per chain.
        warmup: sweeps discarded before the first kept draw.
        chains: independent chains (vmapped); each starts with ``K`` drawn from ``prior_k``
            and the rows dealt to the classes in turn
            (:func:`lcbayes.samplers.gibbs.init_state`).
        prior_k: ``p(K)`` on ``1 .. max_classes``: ``"uniform"``, ``"poisson"`` (Poisson(1)
            truncated, ``∝ 1 / K!``), an array of ``max_classes`` weights or a function of ``K``.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            draws.
        prior: Dirichlet pseudo-counts of an exchangeable prior, as for a 1-class model: one
            number for everything, or ``{"class": delta, column: number or (r,) array}``.
        thin: keep every ``thin``-th sweep.

    Returns:
        An :class:`~lcbayes.RJMCMCResult`: ``posterior_k``, ``acceptance`` and
        ``to_inference_data()``, an ``arviz.InferenceData`` (:mod:`lcbayes.samplers.idata`)
        whose posterior holds ``k`` and the active classes in the first ``k`` slots (NaN
        after them); ``sample_stats`` add ``proposed`` and ``accepted`` counts per move type
        (:data:`MOVES`) since the previous draw; ``posterior.attrs`` hold ``acceptance_json``
        (rate per move) and ``posterior_k_json``.

    Warns:
        KMixingWarning: when the chains did not mix between numbers of classes (R-hat of
            ``k`` above 1.05 or its bulk ESS below 100) or the posterior of ``K`` reaches
            ``max_classes`` (:class:`~lcbayes.samplers.results.KMixingResult`); the message says
            what to rerun.
    """
    start = time.perf_counter()
    data = as_dataset(data)
    seed = check_seed(seed)
    counts = run_counts(max_classes, draws, warmup, chains, thin)
    slots = counts["max_classes"]
    p_k = prior_k_probabilities(prior_k, slots)
    lc = lc_data(data)
    structure = latent_class(data, slots, name=class_name(data))
    hyper = exchangeable_prior(data, structure.nodes[0], prior, p_k, lc.categories.shape[1])
    k0 = numpy_rng(seed).choice(np.arange(1, slots + 1), size=counts["chains"], p=p_k)
    prior_tables = LCPrior(jnp.full(slots, hyper.delta),
                           jnp.broadcast_to(hyper.lam, (slots, *hyper.lam.shape)))
    keys = jax.random.split(prng_key(seed), counts["chains"])
    k, log_w, log_theta, loglik, log_joint, proposed, accepted = map(np.asarray, _run(
        counts["draws"], LCData(*map(jnp.asarray, lc)), prior_tables, hyper, keys,
        jnp.asarray(k0, dtype=jnp.int32), counts["warmup"], counts["thin"]))
    tried, took = proposed.sum(axis=(0, 1)), accepted.sum(axis=(0, 1))
    acceptance = {m: float(took[i] / tried[i]) if tried[i] else None   # None: never proposed
                  for i, m in enumerate(MOVES)}
    settings = {**counts, "seed": seed_record(seed),
                "prior_k": {i + 1: float(v) for i, v in enumerate(p_k)},
                "prior": prior if isinstance(prior, str | int | float) else "custom"}
    idata = lc_inference_data(
        data, np.exp(log_w), np.exp(log_theta), loglik, log_joint, k=k,
        stats={"proposed": (("move",), proposed), "accepted": (("move",), accepted)},
        stat_coords={"move": list(MOVES)},
        attrs={"engine": "rjmcmc", **counts, "seed": json_value(settings["seed"]),
               "prior": settings["prior"], "prior_k_json": json.dumps(settings["prior_k"]),
               "acceptance_json": json.dumps(acceptance)})
    result = RJMCMCResult(idata=idata, structure=structure, settings=settings,
                          seconds=time.perf_counter() - start)
    return finish_k_run(result)


def posterior_k(draws) -> dict[int, float]:
    """``{K: share of draws with K classes}`` over all chains and draws of an RJMCMC run
    (``K = 1 .. max_classes``); ``draws``: an :class:`~lcbayes.RJMCMCResult` or its
    ``InferenceData``."""
    idata = as_inference_data(draws)
    if "posterior" not in idata.groups() or "k" not in idata["posterior"]:
        raise LcbayesError("posterior_k needs the result of lcbayes.rjmcmc (a posterior with a "
                           "'k' variable)")
    return k_shares(idata)
