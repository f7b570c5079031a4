"""``lcb.bridge_sampling``: ``ln p(y | K)`` of a latent class model by bridge sampling from
data-augmentation Gibbs chains, one stratum per posterior mode.

The second evidence estimator of a latent class model, sharing no draw, path or estimator with
reference-tempered SMC (:func:`lcbayes.smc`), so that where the two agree within their error
bars neither is likely to be off by more.

**Chains per mode.** Each of the run's optima (:func:`~lcbayes.samplers.reference.reference_
optima`: the distinct VB optima near the best bound, then the distinct EM optima, from
restarts seeded apart from the SMC's) starts ``chains`` Gibbs chains
(:mod:`lcbayes.samplers.gibbs`, every draw exact), their rows' classes drawn from the optimum's
class probabilities. A chain stays in the basin of the
mode it starts in: the first half of its kept draws build that mode's importance density
``q_m``, the second half are the posterior draws bridged with. ``q_m`` is an even mixture of
two densities, both symmetrised over the ``K!`` relabellings: the warp density of
:mod:`lcbayes.samplers.mode_density` (Gaussian class blocks in log-ratio coordinates), which
follows a mode in hundreds of dimensions, and Frühwirth-Schnatter's (2004) mixture of the
complete-data posteriors of ``components`` allocations (:mod:`lcbayes.samplers.bridge`), which
holds the joint spread of a nearly empty class's weight and tables.

**Strata, not a pooled sample.** Chains in different modes visit them in proportions that say
nothing of the modes' masses, so their draws cannot be pooled. Instead ``p(y) = sum_m Z_m``
with ``Z_m = ∫ p~(theta) h_m(theta) d theta`` and ``h_m = q_m / sum_m' q_m'`` (a partition of
unity: ``sum_m h_m = 1``). Each ``Z_m`` is bridge-sampled (Meng & Wong 1996) between ``p~ h_m``
and ``q_m``, with the posterior draws of mode ``m``'s chains weighted by ``h_m`` (they sample
``p~`` within the basin; the weights make them draws of ``p~ h_m``). Where two optima are one
mode, ``h_m`` splits it between them and its mass is counted once.

**Error bar.** Independent runs (their own fits, chains and draws); the estimate is the mean
of the runs' logs, its standard error their spread over ``sqrt(R)``, scaled by Student's t for
so few runs.

Example::

    res = lcb.bridge_sampling(lcb.latent_class(data, 3), data, seed=0)
    res.log_evidence, res.stderr, res.run_modes
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.scipy.special import logsumexp
from scipy.special import ndtri, stdtrit

from ..engines.run_record import start_engine
from ..errors import ArgumentError
from ..jax_setup import on_device, sized_programs
from ..params import PriorSpec
from ..program_cache import cached_jit
from ..render import fmt
from ..structure import Structure
from ..validation import Seed, check_int, fit_data, prng_key, seed_record
from .bridge import batch_size, bridge_fixed_point, components_of, draw_q, log_q, log_target
from .gibbs import (
    LCData,
    LCPrior,
    LCState,
    allocation_counts,
    keyed_sweep,
    lc_data,
    symmetric_prior,
)
from .mode_density import ModeDensity, draw, fit, log_density
from .particle_weights import ess
from .particles import Particles
from .reference import (
    Optimum,
    default_restarts,
    log_responsibilities,
    padded_count,
    reference_optima,
)
from .smc_result import EvidenceRuns

__all__ = ["CHAIN_LENGTHS", "LONG_DATA", "MIN_OWN_SHARE", "SEED_OFFSET", "BridgeResult",
           "bridge_sampling", "default_length"]

#: The runs' fits are seeded from the call's seed and this, apart from :func:`lcbayes.smc`'s.
SEED_OFFSET = 1_000_003
#: From this many rows on, chains are shorter (:func:`default_length`): the posterior is
#: narrow and Gaussian-like, and a sweep costs rows.
LONG_DATA = 20_000
#: ``(draws, warmup)`` per chain below and from :data:`LONG_DATA` rows.
CHAIN_LENGTHS = ((1000, 200), (400, 100))
#: A stratum whose own posterior draws have an effective share below this (by their weights
#: ``h_m``) is left out: its chains did not stay where its density is (module docstring).
MIN_OWN_SHARE = 0.1


@dataclass(frozen=True, repr=False)
class BridgeResult(EvidenceRuns):
    """Result of :func:`lcbayes.bridge_sampling`.

    Attributes:
        log_evidence, stderr: the estimate (mean of the runs' ``ln p^(y)``) and its standard
            error (module docstring; NaN with fewer than two finished runs).
        run_log_evidence: ``(R,)`` every run's estimate.
        run_modes: ``(R,)`` the strata (optima) of every run.
        run_mode_log_evidence: ``(R, M)`` every stratum's ``ln Z_m`` (NaN past a run's modes):
            how the mass splits between the modes.
        run_seconds: ``(R,)`` seconds of every run.
        n_classes, chains, draws, warmup, components, seed, seconds: the settings and the
            wall-clock time (compilation and fits included).
        settings: the rest (``restarts``, ``max_modes``, ``pad_classes``, the data's size).
    """

    log_evidence: float
    stderr: float
    run_log_evidence: np.ndarray
    run_modes: np.ndarray
    run_mode_log_evidence: np.ndarray
    run_seconds: np.ndarray
    n_classes: int
    chains: int
    draws: int
    warmup: int
    components: int
    seed: int | tuple[int, ...]
    seconds: float
    settings: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per run: ``run``, ``log_evidence``, ``modes``, ``seconds``."""
        return pd.DataFrame({"run": np.arange(self.runs), "log_evidence": self.run_log_evidence,
                             "modes": self.run_modes, "seconds": self.run_seconds})

    def summary(self) -> str:
        """A short printout."""
        value = ("no estimate" if not np.isfinite(self.log_evidence)
                 else f"ln p(y | m) = {fmt(self.log_evidence)} (s.e. {fmt(self.stderr)})")
        return (f"Bridge sampling from Gibbs chains, {self.n_classes} classes: {self.runs} "
                f"runs, {', '.join(map(str, sorted(set(self.run_modes.tolist()))))} mode(s) "
                f"per run, {self.chains} chain(s) of {self.draws} draws per mode, "
                f"{fmt(self.seconds)} s\n  {value}")

    def __repr__(self) -> str:
        return self.summary()


def _statistics(values: np.ndarray) -> tuple[float, float]:
    """Mean of the finished runs' logs and its t-scaled standard error."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return math.nan, math.nan
    if finite.size < 2:
        return float(finite.mean()), math.nan
    factor = float(stdtrit(finite.size - 1, 0.975) / ndtri(0.975))
    return float(finite.mean()), float(finite.std(ddof=1) / math.sqrt(finite.size) * factor)


def _chains(key, data: LCData, prior: LCPrior, k, log_start, *, chains: int, warmup: int,
            draws: int) -> Particles:
    """``(chains, draws)`` kept draws of the chains started from the row class probabilities
    ``exp(log_start)`` ``(P, S)``: parameters and the class counts of the allocation after
    them."""
    slots = prior.delta.shape[0]

    def chain(key):
        k_start, k_run = jax.random.split(key)
        z = jax.random.categorical(k_start, log_start[data.rows]).astype(jnp.int32)
        state = LCState(jnp.asarray(k, dtype=jnp.int32), jnp.zeros(slots),
                        jnp.zeros(prior.lam.shape), z)

        def sweep(state, key):
            state = keyed_sweep(key, data, prior, state)
            n_pk = allocation_counts(data, state.z, slots)
            return state, Particles(state.log_weights, state.log_theta, n_pk.sum(0),
                                    jnp.einsum("pk,pjr->kjr", n_pk, data.one_hot))

        keys = jax.random.split(k_run, warmup + draws)
        state = jax.lax.fori_loop(0, warmup, lambda i, s: sweep(s, keys[i])[0], state)
        return jax.lax.scan(sweep, state, keys[warmup:])[1]

    return jax.vmap(chain)(jax.random.split(key, chains))


def _chain_draws(key, data: LCData, prior: LCPrior, k, log_starts, *, chains: int, warmup: int,
                 draws: int) -> Particles:
    """``(M, chains, draws)`` kept draws of every mode's chains (started at ``log_starts (M,
    P, S)``)."""
    return jax.vmap(lambda key, start: _chains(key, data, prior, k, start, chains=chains,
                                                warmup=warmup, draws=draws))(
        jax.random.split(key, log_starts.shape[0]), log_starts)


def _strata(key, data: LCData, prior: LCPrior, k, densities: ModeDensity, first: Particles,
            post: Particles, used: jax.Array, *, components: int
            ) -> tuple[jax.Array, jax.Array]:
    """``(M,)`` every stratum's ``ln Z_m`` (module docstring; ``-inf`` for a stratum left out)
    and the effective share of its own draws, from each mode's warp density (stacked), the
    first half of its draws ``first`` (``(M, n, ...)``: the allocations of its Frühwirth-
    Schnatter half) and the second ``post`` (the posterior draws); ``used (M,)`` False for the
    padding, which is left out of the partition of unity."""
    modes, n_draws = post.log_weights.shape[:2]
    every = max(1, first.n_k.shape[1] // components)
    allocations = jax.tree.map(lambda a: a[:, ::every][:, :components], first)
    parts = jax.vmap(lambda c: components_of(prior, data.categories, k, c))(allocations)

    def draw_mode(key, q, c):
        k_w, k_f, k_pick = jax.random.split(key, 3)
        warp = jax.vmap(lambda kk: draw(kk, q, data.categories, k))(
            jax.random.split(k_w, n_draws))
        rb = jax.vmap(lambda kk: draw_q(kk, prior, data.categories, k, c))(
            jax.random.split(k_f, n_draws))
        pick = jax.random.bernoulli(k_pick, 0.5, (n_draws,))
        return jax.tree.map(lambda a, b: jnp.where(pick.reshape(-1, *[1] * (a.ndim - 1)), a, b),
                            warp, rb)

    q_w, q_t = jax.vmap(draw_mode)(jax.random.split(key, modes), densities, allocations)
    points_w = jnp.concatenate([post.log_weights, q_w], axis=1).reshape(-1, q_w.shape[-1])
    points_t = jnp.concatenate([post.log_theta, q_t], axis=1).reshape(-1, *q_t.shape[2:])

    def at(point):
        log_w, log_t = point
        target = log_target(data.one_hot, data.counts, data.categories, prior, k, log_w, log_t)
        warp = jax.vmap(lambda q: log_density(q, data.categories, k, log_w, log_t))(densities)
        rb = jax.vmap(lambda p: log_q(data.categories, k, p, log_w, log_t))(parts)
        return target, jnp.logaddexp(warp, rb) - jnp.log(2.0)

    size = batch_size(modes * (components + 1), prior.delta.shape[0])
    target, under = jax.lax.map(at, (points_w, points_t), batch_size=size)
    target = target.reshape(modes, 2 * n_draws)
    under = jnp.where(used, under.reshape(modes, 2 * n_draws, modes), -jnp.inf)
    log_h = under - logsumexp(under, axis=2, keepdims=True)

    def stratum(m):
        own = jnp.take(under, m, axis=2)[m]
        h = jnp.take(log_h, m, axis=2)[m]
        ratio = target[m] - own + h
        share = ess(h[:n_draws]) / n_draws
        log_z = bridge_fixed_point(ratio[:n_draws], ratio[n_draws:], log_w1=h[:n_draws])[0]
        return jnp.where(share >= MIN_OWN_SHARE, log_z, -jnp.inf), share

    return jax.vmap(stratum)(jnp.arange(modes))


#: The compiled chains and strata for the number of data patterns
#: (:func:`lcbayes.jax_setup.sized_programs`).
_PROGRAMS = sized_programs(lambda options: (
    cached_jit(_chain_draws, static_argnames=("chains", "warmup", "draws"),
               compiler_options=options),
    cached_jit(_strata, static_argnames=("components",), compiler_options=options)))


def _run(key, data: LCData, prior: LCPrior, k: int, optima: list[Optimum], *, chains: int,
         warmup: int, draws: int, components: int) -> tuple[np.ndarray, np.ndarray]:
    """One run (module docstring): every mode's chains, its density from the first half of
    their draws, the strata from the second half (the modes padded to a power of two with
    copies that are left out)."""
    used = len(optima)
    optima = optima + [optima[0]] * (padded_count(used) - used)
    k_chain, k_q = jax.random.split(key)
    slots = prior.delta.shape[0]
    starts = on_device(np.stack([log_responsibilities(data.one_hot, data.categories, o, k,
                                                        slots) for o in optima]))
    run_chains, run_strata = _PROGRAMS(data.one_hot.shape[0])
    kept = jax.tree.map(np.asarray, run_chains(k_chain, data, prior, k, starts,
                                                chains=chains, warmup=warmup, draws=draws))
    half = draws // 2
    densities = []
    for m, optimum in enumerate(optima):
        pivot = np.zeros(kept.log_theta.shape[3:])
        for j, table in enumerate(optimum.tables):
            pivot[:k, j, :table.shape[1]] = table
        densities.append(fit(data.categories, k,
                             kept.log_weights[m, :, :half].reshape(-1, slots),
                             kept.log_theta[m, :, :half].reshape(-1, *pivot.shape),
                             kept.n_kjr[m, :, :half].reshape(-1, *pivot.shape),
                             np.asarray(prior.lam), pivot))
    stacked = ModeDensity(*(on_device(np.stack([np.asarray(p) for p in parts]))
                            for parts in zip(*densities, strict=True)))  # stacked on the host
    modes = len(optima)
    strata, shares = run_strata(
        k_q, data, prior, k, stacked,
        jax.tree.map(lambda a: on_device(a[:, :, :half].reshape(modes, -1, *a.shape[3:])),
                     kept),
        jax.tree.map(lambda a: on_device(a[:, :, half:].reshape(modes, -1, *a.shape[3:])),
                     kept), jnp.arange(modes) < used, components=components)
    return np.asarray(strata)[:used], np.asarray(shares)[:used]


def default_length(rows: int) -> tuple[int, int]:
    """``(draws, warmup)`` per chain on ``rows`` rows (:data:`CHAIN_LENGTHS`)."""
    return CHAIN_LENGTHS[rows >= LONG_DATA]


def bridge_sampling(structure: Structure, data, *, runs: int = 4, chains: int = 2,
                    draws: int | None = None, warmup: int | None = None, components: int = 32,
                    restarts: int | None = None, max_modes: int = 4, seed: Seed = 0,
                    prior: PriorSpec = "dirichlet", pad_classes: int | None = None
                    ) -> BridgeResult:
    """``ln p(y | K)`` of a latent class model by bridge sampling from Gibbs chains started at
    each mode (module docstring).

    Args:
        structure: a latent class structure (:func:`lcbayes.latent_class`).
        data: the data; missing values are summed out.
        runs: independent runs (their spread is the error bar; at least 2).
        chains: Gibbs chains per mode.
        draws: kept draws per chain (the first half build ``q``, the second are bridged;
            default :func:`default_length`).
        warmup: sweeps discarded at the start of every chain (default
            :func:`default_length`).
        components: allocations in the Frühwirth-Schnatter half of each mode's density.
        restarts: VB and EM restarts of every run's fits (default
            :func:`~lcbayes.samplers.reference.default_restarts`: more with more classes).
        max_modes: most strata (optima) per run.
        seed: an integer or a ``jax.random`` key.
        prior: Dirichlet pseudo-counts, the same for every class.
        pad_classes: run inside this many class slots (one compiled program for several
            ``K``).

    Returns:
        A :class:`~lcbayes.BridgeResult`.
    """
    start, seed = start_engine(structure, seed)
    if structure.kind != "latent_class":
        raise ArgumentError(f"bridge_sampling takes a latent class structure, got a "
                            f"{structure.kind} one: its importance density is symmetrised over "
                            "the relabellings of one hidden variable; use lcb.smc")
    runs = check_int(runs, "runs", 2)
    chains = check_int(chains, "chains", 1)
    data = fit_data(structure, data)
    long_draws, long_warmup = default_length(data.n_observed_rows)
    draws = long_draws if draws is None else check_int(draws, "draws", 4)
    warmup = long_warmup if warmup is None else check_int(warmup, "warmup", 0)
    restarts = (default_restarts(structure.n_classes or 1) if restarts is None
                else check_int(restarts, "restarts", 1))
    max_modes = check_int(max_modes, "max_modes", 1)
    components = check_int(components, "components", 1)
    k = structure.n_classes
    assert k is not None  # a latent class structure has a number of classes
    slots = k if pad_classes is None else check_int(pad_classes, "pad_classes", k)
    lc = lc_data(data)
    device = LCData(*map(on_device, lc))
    lc_prior = symmetric_prior(structure, prior, slots, np.asarray(lc.categories))
    key = prng_key(seed)
    record = seed_record(seed)
    values, modes, per_mode, seconds = [], [], [], []
    for r in range(runs):
        t = time.perf_counter()
        fit_seed = int(np.random.SeedSequence([*np.atleast_1d(record), SEED_OFFSET, r])
                       .generate_state(1)[0] >> 1)
        optima: list[Optimum] = reference_optima(structure, data, restarts=restarts,
                                                 seed=fit_seed, prior=prior)[:max_modes]
        strata, _ = _run(jax.random.fold_in(key, r), device, lc_prior, k, optima,
                         chains=chains, warmup=warmup, draws=draws, components=components)
        values.append(float(np.logaddexp.reduce(strata)))   # host arrays: no JAX program
        modes.append(len(optima))
        per_mode.append(np.pad(strata, (0, max_modes - strata.size), constant_values=np.nan))
        seconds.append(time.perf_counter() - t)
    estimate, stderr = _statistics(np.asarray(values))
    return BridgeResult(
        log_evidence=estimate, stderr=stderr, run_log_evidence=np.asarray(values),
        run_modes=np.asarray(modes, dtype=np.int64), run_mode_log_evidence=np.stack(per_mode),
        run_seconds=np.asarray(seconds), n_classes=k, chains=chains, draws=draws,
        warmup=warmup, components=components, seed=record,
        seconds=time.perf_counter() - start,
        settings={"restarts": restarts, "max_modes": max_modes, "pad_classes": pad_classes,
                  "rows": data.n_observed_rows, "patterns": data.n_patterns})
