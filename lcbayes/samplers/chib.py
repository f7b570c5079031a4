"""Chib's candidate estimator of the log evidence of a latent class model (Whiley 1999 §4.2).

The candidate identity (Whiley eq. 4.2; Chib 1995) holds at every parameter value
``theta*``::

    ln p(y | m) = ln p(y | theta*) + ln p(theta*) - ln p(theta* | y)

The first two terms are exact (the likelihood sums the classes out; the Dirichlet prior density
in the simplex basis). The posterior ordinate is Rao-Blackwellised over Gibbs draws of the
allocations ``z`` (Chib 1995 eq. 6): ``p(theta* | y) = E_{z | y} p(theta* | z, y)``, and
``p(theta* | z, y)`` is a product of Dirichlet densities with the prior pseudo-counts plus the
completed-data counts ``N_k``, ``N_jkr``.

**The point theta*.** The identity holds anywhere, but the Rao-Blackwellised average is a good
estimate only where the chains' completions ``z`` carry ``theta*``: Chib (1995 §2) takes a
high-density point. Candidates are EM's MAP estimate in the softmax basis (always interior, so
every ordinate is finite) and every chain's draw of highest posterior density during its
warm-up; ``theta*`` is the candidate of highest posterior density in the softmax basis,
``ln p(y | theta) + sum (lambda - 1 + 1) ln theta`` (the objective EM's MAP maximises). A
chain's draw wins only where EM stopped in a lower mode than the chains found, and a chain's
draw lies where that chain goes.

**Label switching** (Neal 1999). The posterior has ``K!`` symmetric modes, and a Gibbs chain
that stays in one of them estimates ``K! p(theta* | y)``, not ``p(theta* | y)``: the raw
estimator is off by ``ln K!`` (Whiley §4.8.6 found it "highly unstable" for larger models).
Adding ``ln K!`` is right only when the chain never switches and wrong (by up to ``ln K!``)
when it partly does, which cannot be known for sure. So this module symmetrises instead
(Berkhof, van Mechelen & Gelman 2003; Marin & Robert 2008): the ordinate is averaged over every
relabelling ``sigma`` of ``theta*``,

    p^(theta* | y) = 1 / (T K!) sum_t sum_sigma p(sigma(theta*) | z_t, y),

which is unbiased for the symmetric posterior whether or not the chain switches. The
completed-data posterior factors over the classes, so the inner sum is the permanent of the
``K x K`` matrix ``A[k, c] = ln p(class c of theta* | class k's counts of z_t)``
(:func:`lcbayes.samplers.bridge.log_permanent`: ``K 2^(K-1)`` terms per draw, not ``K!``),
so ``K <= MAX_CLASSES``. :attr:`ChibResult.identity_share` is the share
of the ordinate that came from the identity labelling: near 1 when the chain stayed in the
mode of ``theta*`` (then the estimate equals the raw one plus ``ln K!``), near ``1 / K!`` when
it visited every mode equally.

**Monte Carlo error.** Batch means: each chain's draws are cut into ``batches`` consecutive
batches, the ordinate's mean per batch (on a common scale), and the standard error of the mean
of the batch means; the delta method gives the log's, ``se / p^``.

**Honest failure.** Where ``K`` exceeds what the data support, the posterior has modes that
are not relabellings of each other (a class split, or emptied, in different ways), Gibbs does
not cross between them, and the MAP sits in one the chains rarely visit: the ordinate there is
underestimated and the evidence overestimated by tens of nats, with a standard error of about
1 from one dominant draw. Every chain
starts from its own random allocation (each row in a uniformly drawn class), so chains that
settle in different modes can show it. The result is :attr:`~ChibResult.reliable` unless

* the chains' own estimates ``ln p^_c(theta* | y)`` span more than :data:`MAX_CHAIN_SPREAD`
  nats and more than :data:`CHAIN_SPREAD_SE` times the batch-means error of the difference of
  the two chains at the ends: the chains have not explored one posterior (batch means within
  a chain cannot see this), or
* the ordinate rests on a few draws: with ``w_t = p(theta* | z_t, y)`` (symmetrised), the
  effective number of draws ``(sum w)^2 / sum w^2`` (Kong 1992) is below
  :data:`MIN_ORDINATE_ESS`; then the chains rarely visit completions that carry ``theta*``,
  the mean misses the mass they never reach (too small an ordinate, too high an evidence) and
  the standard error, computed from those few draws, means nothing.

:attr:`~ChibResult.reason` says which.

Example::

    res = lcb.chib(lcb.latent_class(data, 3), data, draws=5000, seed=0)
    res.log_evidence, res.stderr          # an estimate only where res.reliable
    res.reliable, res.reason
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..engines.dirichlet import log_normaliser
from ..engines.em import em
from ..engines.em_result import EMResult
from ..engines.run_record import start_engine
from ..errors import ArgumentError
from ..params import PriorSpec, proper_prior_tables, to_tables
from ..render import JSONRecord, record_dict
from ..structure import Structure
from ..validation import Seed, check_int, fit_data, prng_key, seed_record
from .bridge import log_permanent
from .gibbs import (
    LCData,
    LCPrior,
    LCState,
    allocation_counts,
    init_state,
    keyed_sweep,
    lc_data,
    log_joint_parts,
)
from .loops import sweeps

__all__ = ["CHAIN_SPREAD_SE", "MAX_CHAIN_SPREAD", "MIN_ORDINATE_ESS", "ChibResult", "chib",
           "ordinate_reliability"]

#: The largest number of classes symmetrised over all ``K!`` relabellings (the permanent costs
#: ``K 2^(K-1)`` terms per draw).
MAX_CLASSES = 12
#: The chains' estimates of ``ln p(theta* | y)`` may span at most this many nats ...
MAX_CHAIN_SPREAD = 1.0
#: ... or this many of their combined batch-means standard errors, whichever is more.
CHAIN_SPREAD_SE = 4.0
#: The fewest effective draws behind a reliable ordinate.
MIN_ORDINATE_ESS = 10.0


@dataclass(frozen=True, repr=False)
class ChibResult(JSONRecord):
    """What :func:`chib` computed.

    Attributes:
        log_evidence: ``ln p(y | theta*) + ln p(theta*) - ln p^(theta* | y)``.
        stderr: its batch-means Monte Carlo standard error.
        loglik: ``ln p(y | theta*)``.
        log_prior: ``ln p(theta*)`` (Dirichlet density, simplex basis).
        log_ordinate: ``ln p^(theta* | y)``, symmetrised over the ``K!`` relabellings.
        identity_share: the share of the ordinate from the identity labelling of ``theta*``.
        n_classes, draws, chains, warmup, batches: the settings; ``seed`` the seed.
        seconds: wall-clock time (the MAP fit included).
        reliable: ``False`` where the chains disagree or a few draws carry the ordinate
            (module docstring): then ``log_evidence`` is no estimate and ``stderr`` no error.
        reason: why it is not reliable (empty when it is).
        theta_star: where ``theta*`` came from: ``"em"`` (the MAP fit) or ``"chain c"``.
        chain_spread: the range (max - min) of the chains' ``ln p^_c(theta* | y)``.
        ordinate_ess: the effective number of draws behind the ordinate.
    """

    log_evidence: float
    stderr: float
    loglik: float
    log_prior: float
    log_ordinate: float
    identity_share: float
    n_classes: int
    draws: int
    chains: int
    warmup: int
    batches: int
    seed: int | tuple[int, ...]
    seconds: float
    reliable: bool = True
    reason: str = ""
    theta_star: str = "em"
    chain_spread: float = math.nan
    ordinate_ess: float = math.nan

    def to_dict(self) -> dict:
        """JSON-ready (NaN as ``None``); :meth:`from_dict` reads it back (one written before
        ``reliable`` existed reads as reliable)."""
        return record_dict(self, method="chib")

    def summary(self) -> str:
        """A short printout."""
        return (f"Chib's estimate ln p(y | m) = {self.log_evidence:.4f} "
                f"(s.e. {self.stderr:.4f}), {self.n_classes} classes\n"
                f"  ln p(y | theta*) = {self.loglik:.4f}, ln p(theta*) = {self.log_prior:.4f}, "
                f"ln p(theta* | y) = {self.log_ordinate:.4f} (symmetrised over "
                f"{math.factorial(self.n_classes)} labellings; identity share "
                f"{self.identity_share:.3f})\n"
                f"  theta* from {self.theta_star}; {self.chains} chains x {self.draws} draws "
                f"after {self.warmup} sweeps, {self.batches} batches per chain, chains span "
                f"{self.chain_spread:.2f} nats, {self.ordinate_ess:.1f} effective draws, "
                f"{self.seconds:.2f} s"
                + ("" if self.reliable else f"\n  not reliable: {self.reason}"))

    def __repr__(self) -> str:
        return self.summary()


def _log_ordinates(data: LCData, prior: LCPrior, z, log_w_star, log_theta_star):
    """``(2,)``: ``ln p(theta* | z, y)`` (the identity labelling) and ``ln (1/K!) sum_sigma
    p(sigma(theta*) | z, y)`` (the permanent over the relabellings, module docstring)."""
    slots = prior.delta.shape[0]
    n_pk = allocation_counts(data, z, slots)
    a_w = prior.delta + n_pk.sum(axis=0)                                   # (K,)
    a_t = prior.lam + jnp.einsum("pk,pjr->kjr", n_pk, data.one_hot)        # (K, J, R)
    a_t = jnp.where(data.categories, a_t, 1.0)
    log_t = jnp.where(data.categories, log_theta_star, 0.0)
    cross = jnp.outer(a_w - 1.0, log_w_star) + jnp.einsum("kjr,ljr->kl", a_t - 1.0, log_t)
    norm = log_normaliser(a_w, jnp.ones(a_w.shape, bool)) + jnp.sum(
        log_normaliser(a_t, data.categories))
    return jnp.stack([norm + jnp.trace(cross),
                      norm + log_permanent(cross) - jax.lax.lgamma(slots + 1.0)])


def _random_start(key, data: LCData, slots: int) -> LCState:
    """A chain's start: every row in a uniformly drawn class (the first sweep draws the
    weights and tables from these counts)."""
    z = jax.random.randint(key, data.rows.shape, 0, slots, dtype=jnp.int32)
    return init_state(data, slots, slots)._replace(z=z)


def _log_joint(data: LCData, prior: LCPrior, state: LCState) -> jax.Array:
    """The log posterior density (up to a constant) of the state's weights and tables in the
    softmax basis, the objective of EM's MAP: ``ln p(y | theta) + ln p(theta) + sum ln theta``
    over every probability (the basis change's Jacobian, MacKay 1998)."""
    loglik, log_prior = log_joint_parts(data, prior, state)
    jacobian = state.log_weights.sum() + jnp.where(data.categories, state.log_theta, 0.0).sum()
    return loglik + log_prior + jacobian


def _warm_up(key, data: LCData, prior: LCPrior, warmup):
    """One chain's ``warmup`` sweeps from a random start: ``(last state, (log density, ln pi,
    ln theta) of its draw of highest softmax-basis posterior density)`` (:func:`_log_joint`)."""
    k_start, k_sweeps = jax.random.split(key)
    state = _random_start(k_start, data, prior.delta.shape[0])

    def body(i, carry):
        state, best = carry
        state = keyed_sweep(jax.random.fold_in(k_sweeps, i), data, prior, state)
        draw = (_log_joint(data, prior, state), state.log_weights, state.log_theta)
        return state, jax.tree.map(partial(jnp.where, draw[0] > best[0]), draw, best)

    first = (jnp.asarray(-jnp.inf), state.log_weights, state.log_theta)
    return jax.lax.fori_loop(0, warmup, body, (state, first))


def _ordinate_chain(key, state: LCState, draws: int, data: LCData, prior: LCPrior, thin,
                    star):
    """``(draws, 2)`` log ordinates (:func:`_log_ordinates`) at ``star = (ln pi*, ln theta*)``
    of one chain's kept draws, every ``thin``-th sweep on from ``state``."""
    def body(state, i):
        state = sweeps(thin, lambda k, s: keyed_sweep(k, data, prior, s), state,
                       jax.random.fold_in(key, i))
        return state, _log_ordinates(data, prior, state.z, *star)

    return jax.lax.scan(body, state, jnp.arange(draws))[1]


@partial(jax.jit, static_argnums=0)
def _run(draws: int, data: LCData, prior: LCPrior, keys, warmup, thin, map_star):
    """Warm-up, the choice of ``theta*`` among the MAP ``map_star = (ln pi, ln theta)`` and the
    chains' best warm-up draws, then the kept draws: ``(ordinates (chains, draws, 2), index of
    theta* (0 the MAP, c + 1 chain c), its (ln p(y | theta*), ln p(theta*)))``."""
    pilot, kept = jnp.moveaxis(jax.vmap(jax.random.split)(keys), 1, 0)
    states, best = jax.vmap(lambda key: _warm_up(key, data, prior, warmup))(pilot)
    at_map = init_state(data, prior.delta.shape[0], prior.delta.shape[0])._replace(
        log_weights=map_star[0], log_theta=map_star[1])
    scores = jnp.concatenate([_log_joint(data, prior, at_map)[None], best[0]])
    pick = jnp.argmax(scores)
    star = tuple(jnp.concatenate([m[None], b])[pick] for m, b in zip(map_star, best[1:],
                                                                     strict=True))
    ordinates = jax.vmap(lambda key, state: _ordinate_chain(
        key, state, draws, data, prior, thin, star))(kept, states)
    parts = log_joint_parts(data, prior, at_map._replace(log_weights=star[0],
                                                         log_theta=star[1]))
    return ordinates, pick, parts


def _batch_means(values: np.ndarray, batches: int) -> tuple[float, float]:
    """``(ln mean, standard error of ln mean)`` of ``exp(values)`` (``(chains, draws)``), the
    error from the means of ``batches`` consecutive batches per chain."""
    top = float(values.max())
    scaled = np.exp(values - top)
    mean = float(scaled.mean())
    size = values.shape[1] // batches
    means = scaled[:, :size * batches].reshape(values.shape[0], batches, size).mean(-1).ravel()
    se = float(means.std(ddof=1) / math.sqrt(means.size))
    return top + math.log(mean), se / mean


def ordinate_reliability(symmetric: np.ndarray, batches: int) -> tuple[float, float, str]:
    """``(chain spread, effective draws, reason)`` of the ``(chains, draws)`` symmetrised log
    ordinates (module docstring, "Honest failure"); the reason is empty when reliable. The
    spread counts as disagreement where it also exceeds :data:`CHAIN_SPREAD_SE` times the
    combined batch-means error of the two chains at its ends (noise alone rarely does)."""
    per_chain = [_batch_means(chain[None], batches) for chain in symmetric]
    logs = np.array([log for log, _ in per_chain])
    top, bottom = int(logs.argmax()), int(logs.argmin())
    spread = float(logs[top] - logs[bottom])
    noise = math.hypot(per_chain[top][1], per_chain[bottom][1])
    w = np.exp(symmetric - symmetric.max())
    ess = float(w.sum() ** 2 / (w ** 2).sum())
    reasons = []
    if spread > max(MAX_CHAIN_SPREAD, CHAIN_SPREAD_SE * noise):
        reasons.append(f"the {symmetric.shape[0]} chains' estimates of ln p(theta* | y) span "
                       f"{spread:.2f} nats, more than {MAX_CHAIN_SPREAD:g} and than "
                       f"{CHAIN_SPREAD_SE:g} x their combined s.e. {noise:.2f}: they sit in "
                       "different modes, so the posterior was not explored")
    if ess < MIN_ORDINATE_ESS:
        reasons.append(f"{ess:.1f} effective draws of {symmetric.size} carry the ordinate "
                       f"(fewer than {MIN_ORDINATE_ESS:g}): the chains rarely reach theta*, so "
                       "the evidence is overestimated and its standard error meaningless")
    advice = "; longer chains rarely help: use lcb.smc for this model" if reasons else ""
    return spread, ess, "; ".join(reasons) + advice


def chib(structure: Structure, data, *, draws: int = 5000, warmup: int = 500, chains: int = 4,
         seed: Seed = 0, prior: PriorSpec = "dirichlet", restarts: int = 10, batches: int = 25,
         thin: int = 1, fit: EMResult | None = None) -> ChibResult:
    """Chib's estimate of ``ln p(y | m)`` for a latent class model (module docstring).

    Args:
        structure: a latent class structure with at most ``MAX_CLASSES`` (12) classes.
        data: the data (missing values are summed out).
        draws: kept Gibbs draws per chain (the allocations of :func:`lcbayes.gibbs`'s kernel).
        warmup: sweeps discarded first (each chain's draw of highest posterior density among
            them is a candidate for ``theta*``).
        chains: independent chains (vmapped), each from its own random allocation.
        seed: the seed of the MAP fit's starts and of the chains.
        prior: the Dirichlet prior (``"dirichlet"`` = 1, a number or ``{node: counts}``).
        restarts: EM restarts of the MAP fit (a candidate for ``theta*``).
        batches: batches per chain for the standard error (``draws`` must be at least this).
        thin: keep every ``thin``-th sweep.
        fit: the MAP candidate given as an EM fit (interior), instead of fitting.

    Returns:
        A :class:`ChibResult`; check :attr:`~ChibResult.reliable` before using it.
    """
    start, seed = start_engine(structure, seed)
    if structure.kind != "latent_class":
        raise ArgumentError(f"chib estimates the evidence of latent class models "
                            f"(lcbayes.latent_class), got a {structure.kind} structure")
    n_classes = structure.cardinalities[structure.root]
    if n_classes > MAX_CLASSES:
        raise ArgumentError(f"chib symmetrises over all K! labellings, so K <= {MAX_CLASSES}; "
                            f"got {n_classes} classes")
    counts = {"draws": check_int(draws, "draws", 1), "warmup": check_int(warmup, "warmup", 0),
              "chains": check_int(chains, "chains", 1), "thin": check_int(thin, "thin", 1),
              "restarts": check_int(restarts, "restarts", 1)}
    batches = check_int(batches, "batches", 2, counts["draws"])
    data = fit_data(structure, data)
    tables = proper_prior_tables(structure, prior, "chib")
    if fit is None:
        fit = em(structure, data, restarts=counts["restarts"], seed=seed, prior=prior,
                 map_basis="softmax")
    at_map = [np.asarray(t, dtype=np.float64) for t in to_tables(structure, fit.params)]
    lc = lc_data(data)
    lam = np.ones((n_classes, *lc.categories.shape))
    log_theta = np.full((n_classes, *lc.categories.shape), -np.inf)
    for j, (table, theta) in enumerate(zip(tables[1:], at_map[1:], strict=True)):
        lam[:, j, :table.shape[1]] = table
        log_theta[:, j, :theta.shape[1]] = np.log(theta)
    keys = jax.random.split(prng_key(seed), counts["chains"])
    ordinates, pick, parts = _run(
        counts["draws"], LCData(*map(jnp.asarray, lc)),
        LCPrior(jnp.asarray(tables[0][0]), jnp.asarray(lam)), keys, counts["warmup"],
        counts["thin"], (jnp.asarray(np.log(at_map[0][0])), jnp.asarray(log_theta)))
    ordinates = np.asarray(ordinates)
    symmetric = ordinates[..., 1]
    log_ordinate, stderr = _batch_means(symmetric, batches)
    spread, ess, reason = ordinate_reliability(symmetric, batches)
    identity = float(np.exp(logsumexp(ordinates[..., 0]) - logsumexp(symmetric)
                            - math.lgamma(n_classes + 1)))
    loglik, log_prior = (float(v) for v in parts)
    pick = int(pick)
    return ChibResult(log_evidence=loglik + log_prior - log_ordinate, stderr=stderr,
                      loglik=loglik, log_prior=log_prior, log_ordinate=log_ordinate,
                      identity_share=identity, n_classes=n_classes, draws=counts["draws"],
                      chains=counts["chains"], warmup=counts["warmup"], batches=batches,
                      seed=seed_record(seed), seconds=time.perf_counter() - start,
                      reliable=not reason, reason=reason,
                      theta_star="em" if pick == 0 else f"chain {pick - 1}",
                      chain_spread=spread, ordinate_ess=ess)
