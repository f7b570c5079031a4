"""Chib's candidate estimator of the log evidence of a latent class model (Whiley 1999 §4.2).

The candidate identity (Whiley eq. 4.2; Chib 1995) holds at every parameter value
``theta*``::

    ln p(y | m) = ln p(y | theta*) + ln p(theta*) - ln p(theta* | y)

The first two terms are exact (the likelihood sums the classes out; the Dirichlet prior density
in the simplex basis). The posterior ordinate is Rao-Blackwellised over Gibbs draws of the
allocations ``z`` (Chib 1995 eq. 6): ``p(theta* | y) = E_{z | y} p(theta* | z, y)``, and
``p(theta* | z, y)`` is a product of Dirichlet densities with the prior pseudo-counts plus the
completed-data counts ``N_k``, ``N_jkr``. ``theta*`` is a high-density point: EM's MAP estimate
in the softmax basis (always interior, so every ordinate is finite).

**Label switching** (Neal 1999). The posterior has ``K!`` symmetric modes, and a Gibbs chain
that stays in one of them estimates ``K! p(theta* | y)``, not ``p(theta* | y)``: the raw
estimator is off by ``ln K!`` (Whiley §4.8.6 found it "highly unstable" for larger models).
Adding ``ln K!`` is right only when the chain never switches and wrong (by up to ``ln K!``)
when it partly does, which cannot be known for sure. So this module symmetrises instead
(Berkhof, van Mechelen & Gelman 2003; Marin & Robert 2008): the ordinate is averaged over every
relabelling ``sigma`` of ``theta*``,

    p^(theta* | y) = 1 / (T K!) sum_t sum_sigma p(sigma(theta*) | z_t, y),

which is unbiased for the symmetric posterior whether or not the chain switches. It costs
``K!`` terms per draw, so ``K <= MAX_CLASSES``. :attr:`ChibResult.identity_share` is the share
of the ordinate that came from the identity labelling: near 1 when the chain stayed in the
mode of ``theta*`` (then the estimate equals the raw one plus ``ln K!``), near ``1 / K!`` when
it visited every mode equally.

**Monte Carlo error.** Batch means: each chain's draws are cut into ``batches`` consecutive
batches, the ordinate's mean per batch (on a common scale), and the standard error of the mean
of the batch means; the delta method gives the log's, ``se / p^``.

Example::

    res = lcb.chib(lcb.latent_class(data, 3), data, draws=5000, seed=0)
    res.log_evidence, res.stderr
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from functools import partial
from itertools import permutations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, logsumexp

from ..errors import ArgumentError
from ..params import PriorSpec, dirichlet_log_density, proper_prior_tables, to_tables
from ..samplers.gibbs import LCData, LCPrior, allocation_counts, lc_data, scan_chains
from ..structure import Structure
from ..validation import Seed, check_int, fit_data, prng_key, seed_record
from .em import em
from .em_result import EMResult
from .run_record import start_engine

__all__ = ["ChibResult", "chib"]

#: The largest number of classes symmetrised over all ``K!`` relabellings.
MAX_CLASSES = 7


@dataclass(frozen=True, repr=False)
class ChibResult:
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

    def to_dict(self) -> dict:
        """JSON-ready; :meth:`from_dict` reads it back."""
        out = asdict(self)
        out["seed"] = out["seed"] if isinstance(out["seed"], int) else list(out["seed"])
        return {"method": "chib", **out}

    @classmethod
    def from_dict(cls, spec: dict) -> ChibResult:
        """The result of :meth:`to_dict`."""
        spec = {k: v for k, v in spec.items() if k != "method"}
        seed = spec["seed"]
        return cls(**{**spec, "seed": seed if isinstance(seed, int) else tuple(seed)})

    def summary(self) -> str:
        """A short printout."""
        return (f"Chib's estimate ln p(y | m) = {self.log_evidence:.4f} "
                f"(s.e. {self.stderr:.4f}), {self.n_classes} classes\n"
                f"  ln p(y | theta*) = {self.loglik:.4f}, ln p(theta*) = {self.log_prior:.4f}, "
                f"ln p(theta* | y) = {self.log_ordinate:.4f} (symmetrised over "
                f"{math.factorial(self.n_classes)} labellings; identity share "
                f"{self.identity_share:.3f})\n"
                f"  {self.chains} chains x {self.draws} draws after {self.warmup} sweeps, "
                f"{self.batches} batches per chain, {self.seconds:.2f} s")

    def __repr__(self) -> str:
        return self.summary()


def _log_ordinates(data: LCData, prior: LCPrior, z, log_w_star, log_theta_star, perms):
    """``(P,)`` ``ln p(sigma(theta*) | z, y)`` for every relabelling ``sigma`` (rows of
    ``perms``: class ``k`` of the completion takes ``theta*``'s class ``sigma(k)``)."""
    slots = prior.delta.shape[0]
    n_pk = allocation_counts(data, z, slots)
    a_w = prior.delta + n_pk.sum(axis=0)                                   # (K,)
    a_t = prior.lam + jnp.einsum("pk,pjr->kjr", n_pk, data.one_hot)        # (K, J, R)
    a_t = jnp.where(data.categories, a_t, 1.0)
    log_t = jnp.where(data.categories, log_theta_star, 0.0)
    cross = jnp.outer(a_w - 1.0, log_w_star) + jnp.einsum("kjr,ljr->kl", a_t - 1.0, log_t)
    norm = gammaln(a_w.sum()) - gammaln(a_w).sum() + jnp.sum(
        gammaln(a_t.sum(-1)) - jnp.sum(jnp.where(data.categories, gammaln(a_t), 0.0), -1))
    return norm + cross[jnp.arange(slots)[None, :], perms].sum(axis=1)


@partial(jax.jit, static_argnums=0)
def _run(draws: int, data: LCData, prior: LCPrior, keys, warmup, thin, log_w_star,
         log_theta_star, perms):
    """``(chains, draws, P)`` log ordinates of every relabelling at every kept draw."""
    return scan_chains(draws, data, prior, keys, warmup, thin, lambda state: _log_ordinates(
        data, prior, state.z, log_w_star, log_theta_star, perms))


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


def chib(structure: Structure, data, *, draws: int = 5000, warmup: int = 500, chains: int = 4,
         seed: Seed = 0, prior: PriorSpec = "dirichlet", restarts: int = 10, batches: int = 25,
         thin: int = 1, fit: EMResult | None = None) -> ChibResult:
    """Chib's estimate of ``ln p(y | m)`` for a latent class model (module docstring).

    Args:
        structure: a latent class structure with at most ``MAX_CLASSES`` (7) classes.
        data: the data (missing values are summed out).
        draws: kept Gibbs draws per chain (the allocations of :func:`lcbayes.gibbs`'s kernel).
        warmup: sweeps discarded first.
        chains: independent chains (vmapped).
        seed: the seed of the MAP fit's starts and of the chains.
        prior: the Dirichlet prior (``"dirichlet"`` = 1, a number or ``{node: counts}``).
        restarts: EM restarts of the MAP fit ``theta*``.
        batches: batches per chain for the standard error (``draws`` must be at least this).
        thin: keep every ``thin``-th sweep.
        fit: ``theta*`` given as an EM fit (interior), instead of fitting.

    Returns:
        A :class:`ChibResult`.
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
    star = [np.asarray(t, dtype=np.float64) for t in to_tables(structure, fit.params)]
    lc = lc_data(data)
    lam = np.ones((n_classes, *lc.categories.shape))
    log_theta = np.full((n_classes, *lc.categories.shape), -np.inf)
    for j, (table, theta) in enumerate(zip(tables[1:], star[1:], strict=True)):
        lam[:, j, :table.shape[1]] = table
        log_theta[:, j, :theta.shape[1]] = np.log(theta)
    perms = np.asarray(list(permutations(range(n_classes))), dtype=np.int32)
    keys = jax.random.split(prng_key(seed), counts["chains"])
    ordinates = np.asarray(_run(
        counts["draws"], LCData(*map(jnp.asarray, lc)),
        LCPrior(jnp.asarray(tables[0][0]), jnp.asarray(lam)), keys, counts["warmup"],
        counts["thin"], jnp.asarray(np.log(star[0][0])), jnp.asarray(log_theta),
        jnp.asarray(perms)))
    symmetric = np.asarray(logsumexp(ordinates, axis=-1)) - math.log(len(perms))
    log_ordinate, stderr = _batch_means(symmetric, batches)
    identity = float(np.exp(logsumexp(ordinates[..., 0]) - logsumexp(ordinates)))
    log_prior = dirichlet_log_density(tuple(star), tables)
    loglik = float(fit.loglik)
    return ChibResult(log_evidence=loglik + log_prior - log_ordinate, stderr=stderr,
                      loglik=loglik, log_prior=float(log_prior), log_ordinate=log_ordinate,
                      identity_share=identity, n_classes=n_classes, draws=counts["draws"],
                      chains=counts["chains"], warmup=counts["warmup"], batches=batches,
                      seed=seed_record(seed), seconds=time.perf_counter() - start)
