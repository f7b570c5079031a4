"""Variational Bayesian EM: a lower bound ``F <= ln p(y | m)`` on the log evidence.

Beal & Ghahramani (2006) §3.4-3.5, eqs 51-61. The posterior over the parameters and the hidden
variables is approximated by ``q(theta) prod_i q(s_i)``; for discrete DAGs with Dirichlet priors
both factors are closed under iteration:

* **VBM** (eq. 56): every CPT row gets ``q(theta_jl) = Dir(alpha_jl)``, ``alpha = lambda + N``
  with ``N`` the expected family counts under ``q(s)`` (eq. 55);
* **VBE** (eqs 58-60): ``q(s_i)`` is exact inference with the sub-normalised tables
  ``ln theta~_jlk = psi(alpha_jlk) - psi(alpha_jl0)`` (digamma); the inference core returns the
  per-pattern normalisers ``Z_i`` and the counts.

The bound, written out term by term (notes §4.3, form A), at any ``q(s)`` and ``alpha``::

    F = sum_jlk N_jlk (psi(alpha_jlk) - psi(alpha_jl0)) + sum_i H[q(s_i)]
        - sum_jl KL(Dir(alpha_jl) || Dir(lambda_jl))

Right after a VBE step it equals ``sum_i ln Z_i - KL`` (form B, monitored here), right after a
VBM step ``sum_jl [ln B(lambda_jl + N_jl) - ln B(lambda_jl)] + sum_i H[q(s_i)]`` (form C,
the Cheeseman-Stutz-like collapsed form). :func:`bound_terms` evaluates all three, so tests can
check they agree.

Protocol (Beal & Ghahramani §4.1): each restart draws its parameters from the prior, runs one
ordinary E step at them and uses that ``q(s)`` for the first VBM step; then VBE and VBM
alternate until ``F`` changes by less than ``tol`` per observed row or ``max_iter`` iterations.
``F`` never decreases. Restarts run in one jitted ``lax.map`` (vmapped in batches).

Missing values: an observed leaf with a missing value is summed out of the model exactly (a
factor of one), so it adds no count; a row with no observed value is a factor of one and is left
out; missing observed parents of a DAG are enumerated like hidden values. ``F`` bounds the
evidence of the observed values, the quantity :func:`lcbayes.exact_evidence` computes.

``F`` sees one of the ``S`` equivalent modes of a posterior with label symmetry, so
``elbo_corrected = elbo + ln S`` (:mod:`lcbayes.alias`) is the usual large-sample estimate; only
the uncorrected ``elbo`` is a guaranteed bound.

Example::

    vb = lcb.vbem(lcb.latent_class(data, 3), data, restarts=3, seed=0)
    vb.elbo, vb.elbo_corrected, vb.posterior_mean["class"]
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import squarem
from .alias import log_alias
from .data import Dataset
from .dirichlet import (
    complete_data_log_evidence,
    expected_log_theta_flat,
    expected_log_thetas,
    kl_divergence,
    kl_divergence_flat,
)
from .em import EMResult
from .errors import LcbayesError
from .inference import complete_columns, e_step, flat, flat_e_step, prepare
from .params import PriorSpec, from_tables, prior_tables, proper_prior_tables, to_tables
from .run_record import RunRecord, check_run_arguments, record_fields
from .structure import Structure

__all__ = ["BoundTerms", "VBResult", "bound_terms", "fit_tied", "prior_draw", "vbem"]


class BoundTerms(NamedTuple):
    """The three forms of ``F`` (notes §4.3) at a ``q(s)`` and Dirichlet posteriors ``alpha``.

    ``general`` (form A) holds at any point; ``after_vbe`` (form B) equals it when ``q(s)`` is
    the VBE posterior of ``alpha``; ``after_vbm`` (form C) equals it when ``alpha = lambda + N``
    for the counts ``N`` of ``q(s)``."""

    general: float
    after_vbe: float
    after_vbm: float


class _Runs(NamedTuple):
    alphas: tuple[jax.Array, ...]
    history: jax.Array     # (R, max_iter) bound per iteration, NaN after the last
    n_iter: jax.Array
    converged: jax.Array
    elbo: jax.Array        # (R,) bound at the final alphas (after a last VBE step)


def _observed_weights(data: Dataset) -> jax.Array:
    """Pattern counts, zero for rows with no observed value: such a row's factor is exactly one
    (everything in it sums out), so leaving it out keeps the bound as tight as possible."""
    return jnp.asarray(np.where((data.patterns >= 0).any(axis=1), data.counts, 0.0))


def _vbe(structure: Structure, alphas, evidence, weights):
    """VBE step with the sub-normalised tables ``exp(psi(alpha) - psi(alpha_0))``."""
    return e_step(structure, expected_log_thetas(alphas), evidence, weights)


def _vbm(counts, priors, pooling):
    """VBM step ``alpha = lambda + N``; with ``pooling`` (tied rows) the counts of each group of
    tied rows are pooled first (``P @ N``)."""
    if pooling is not None:
        counts = tuple(p @ c for p, c in zip(pooling, counts, strict=True))
    return tuple(lam + c for lam, c in zip(priors, counts, strict=True))


def _bound(structure, alphas, priors, evidence, weights, row_weights):
    """Form B of ``F`` at ``alphas`` (after a VBE step) and that step's outcome."""
    est = _vbe(structure, alphas, evidence, weights)
    return weights @ est.log_marginal - kl_divergence(alphas, priors, row_weights), est


def prior_draw(priors, pooling, key) -> tuple[jax.Array, ...]:
    """CPT tables drawn from the Dirichlet priors (tied rows share one draw, that of the first
    row of their group). EM and VBEM starts of the same key are the same parameters (Beal &
    Ghahramani §4.1 use shared starts for a fair comparison)."""
    keys = jax.random.split(key, len(priors))
    tables = tuple(jax.random.dirichlet(k, lam) for k, lam in zip(keys, priors, strict=True))
    if pooling is not None:
        tables = tuple(_first_of_group(p) @ t for p, t in zip(pooling, tables, strict=True))
    return tables


def _initial_alphas(structure, priors, evidence, weights, pooling, tables):
    """Beal's start from parameters drawn from the prior: one ordinary E step, one VBM step."""
    est = e_step(structure, tuple(jnp.log(t) for t in tables), evidence, weights)
    return _vbm(est.counts, priors, pooling)


def _normalised(draws: np.ndarray) -> np.ndarray:
    """Gamma draws normalised over the last axis: Dirichlet draws."""
    return draws / draws.sum(axis=-1, keepdims=True)


def _first_of_group(pooling: jax.Array) -> jax.Array:
    """``(q, q)`` 0/1 matrix mapping every row to the first row of its tied group."""
    first = jnp.argmax(pooling > 0, axis=1)
    return jax.nn.one_hot(first, pooling.shape[1], dtype=pooling.dtype)


@partial(jax.jit, static_argnames=("structure", "max_iter", "batch_size", "accelerate",
                                   "complete"))
def _fit(structure: Structure, patterns, weights, priors, pooling, row_weights, keys, tol_total,
         max_iter: int, batch_size: int, start_alphas=None, start_tables=None,
         accelerate: bool = True, complete: tuple[int, ...] = ()) -> _Runs:
    """VBEM from one prior draw per key, ``batch_size`` restarts vmapped at a time. Instead of
    keys: ``start_tables`` (a batch of drawn tables, one restart each; drawing outside the jit
    spares compiling JAX's gamma sampler) or ``start_alphas`` (the same for every key).
    ``accelerate``: SQUAREM cycles (:mod:`lcbayes.squarem`) on ``ln alpha`` instead of plain
    VBE/VBM steps; ``F`` never decreases either way. ``complete``
    (:func:`~lcbayes.inference.complete_columns` of ``patterns``) folds the E steps (exact here:
    VBE tables are never zero)."""
    evidence = prepare(structure, patterns, complete)

    shapes = tuple(lam.shape for lam in priors)
    prior_flat = flat.flatten(priors)
    pooled = None if pooling is None else flat.row_matrix(pooling, shapes)
    row_w = None if row_weights is None else jnp.concatenate(row_weights)

    def step(x):  # _bound and _vbm on the flat Dirichlet parameters (fewer operations)
        log_marg, counts = flat_e_step(structure, expected_log_theta_flat(x, shapes), evidence,
                                       weights, vmapped=batch_size > 1)
        value = weights @ log_marg - kl_divergence_flat(x, prior_flat, shapes, row_w)
        return value, prior_flat + (counts if pooled is None else pooled @ counts)

    def run(item):
        if start_alphas is not None:
            alphas = start_alphas
        else:
            tables = item if start_tables is not None else prior_draw(priors, pooling, item)
            alphas = _initial_alphas(structure, priors, evidence, weights, pooling, tables)
        flat, history, n_iter, done = squarem.iterate(
            step, squarem.flatten(alphas), jnp.log, jnp.exp, tol_total, max_iter, max_iter,
            accelerate, squarem.entry_weights(row_weights, shapes))
        alphas = squarem.unflatten(flat, shapes)
        final, _ = _bound(structure, alphas, priors, evidence, weights, row_weights)
        return _Runs(alphas, history, n_iter, done, final)

    items = keys if start_tables is None else start_tables
    return squarem.map_restarts(run, items, batch_size)


#: The jitted core, for callers that tie CPT rows (one shape for many structures, e.g.
#: :mod:`lcbayes.benchmarks.beal_study`): ``pooling[i]`` is node ``i``'s ``(q, q)`` 0/1 matrix
#: of tied rows, ``row_weights[i]`` counts every row ``1 / group size`` times in the KL term;
#: starts from keys, ``start_tables`` or ``start_alphas`` (see :func:`_fit`).
fit_tied = _fit


@partial(jax.jit, static_argnames=("structure",))
def _terms(structure, alphas, priors, patterns, weights):
    evidence = prepare(structure, patterns)
    est = _vbe(structure, alphas, evidence, weights)
    kl = kl_divergence(alphas, priors)
    entropy = weights @ est.completion_entropy
    expected = sum((n * e).sum() for n, e in zip(est.counts, expected_log_thetas(alphas),
                                                 strict=True))
    return (expected + entropy - kl, weights @ est.log_marginal - kl,
            complete_data_log_evidence(est.counts, priors) + entropy)


def bound_terms(structure: Structure, data: Dataset, posterior: dict, prior: PriorSpec =
                "dirichlet") -> BoundTerms:
    """``F`` in its three algebraic forms (notes §4.3) at the Dirichlet posteriors
    ``posterior`` (``{node: alpha}``, CPT-shaped) and the VBE posterior ``q(s)`` they imply.

    Forms A and B always agree here; form C agrees with them when ``posterior`` is a fixed
    point of VBEM (``alpha = lambda + N(q)``)."""
    data = structure.check_data(data)
    priors = tuple(jnp.asarray(a) for a in prior_tables(structure, prior))
    alphas = tuple(jnp.asarray(np.asarray(posterior[n], dtype=np.float64)).reshape(p.shape)
                   for n, p in zip(structure.nodes, priors, strict=True))
    values = _terms(structure, alphas, priors, jnp.asarray(data.patterns),
                    _observed_weights(data))
    return BoundTerms(*(float(v) for v in values))


_final_vbe = jax.jit(lambda structure, alphas, patterns, weights: _vbe(
    structure, alphas, prepare(structure, patterns), weights), static_argnums=0)


@dataclass(frozen=True, repr=False)
class VBResult(RunRecord):
    """Outcome of :func:`vbem`: the best restart's bound and Dirichlet posteriors.

    Attributes:
        elbo: the variational lower bound ``F`` on ``ln p(y | m)`` (natural log).
        log_alias: ``ln S``, the label-symmetry correction (:mod:`lcbayes.alias`).
        posterior: ``{node: alpha}``, the Dirichlet posterior parameters (CPT-shaped).
        prior: ``{node: lambda}``, the prior pseudo-counts.
        restart_elbos: the bound reached by every restart.

    ``hidden_posteriors`` are the VBE posteriors per pattern and ``history`` the bound after
    every VBE step of the best restart (:class:`~lcbayes.run_record.RunRecord`).
    """

    elbo: float
    log_alias: float
    posterior: dict[str, np.ndarray]
    prior: dict[str, np.ndarray]
    restart_elbos: np.ndarray

    @property
    def elbo_corrected(self) -> float:
        """``elbo + log_alias`` (Beal & Ghahramani's "VB" score; ``elbo`` is their "VB*")."""
        return self.elbo + self.log_alias

    @property
    def posterior_mean(self) -> dict[str, np.ndarray]:
        """``E[theta] = alpha / alpha_0`` per node."""
        return {k: a / a.sum(axis=-1, keepdims=True) for k, a in self.posterior.items()}

    def to_dict(self) -> dict:
        """JSON-ready summary."""
        return {
            "method": "vbem",
            **self._run_dict(),
            "elbo": self.elbo,
            "log_alias": self.log_alias,
            "elbo_corrected": self.elbo_corrected,
            "restart_elbos": [float(v) for v in self.restart_elbos],
            "posterior": {k: v.tolist() for k, v in self.posterior.items()},
            "posterior_mean": {k: v.tolist() for k, v in self.posterior_mean.items()},
        }

    def summary(self) -> str:
        """A short printout: the bound, its correction and the posterior means."""
        lines = [
            f"VBEM ({self.structure.kind}, {self.n_parameters} parameters, "
            f"{self.n_observed_rows} observed rows, {self.n_patterns} patterns)",
            f"  lower bound F      {self.elbo:14.4f}",
            f"  ln S (aliases)     {self.log_alias:14.4f}",
            f"  F + ln S           {self.elbo_corrected:14.4f}",
            f"  iterations {self.n_iter}, converged {self.converged}, "
            f"restarts {self.restarts}: " + ", ".join(f"{v:.4f}" for v in self.restart_elbos),
            "  posterior means:",
        ]
        for name, mean in self.posterior_mean.items():
            rows = np.asarray(mean).reshape(-1, mean.shape[-1])
            for k, row in enumerate(rows):
                prefix = f"    {name}" + (f"[{k}]" if rows.shape[0] > 1 else "")
                lines.append(f"{prefix:<20} " + " ".join(f"{v:.4f}" for v in row))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"VBResult(kind={self.structure.kind!r}, elbo={self.elbo:.4f}, "
                f"log_alias={self.log_alias:.4f}, n_iter={self.n_iter}, "
                f"converged={self.converged}, restarts={self.restarts})")


def vbem(
    structure: Structure,
    data: Dataset,
    restarts: int = 3,
    seed: int = 0,
    prior: PriorSpec = "dirichlet",
    tol: float = 1e-6,
    max_iter: int = 1000,
    batch_size: int | None = None,
    init: EMResult | None = None,
    acceleration: Literal["squarem", "none"] = "squarem",
) -> VBResult:
    """Variational Bayesian EM (Beal & Ghahramani 2006 §3.5); keep the best of ``restarts``.

    Args:
        structure: the model (latent class, HLC or DAG).
        data: the data; missing values are marginalised.
        restarts: random starts (prior draws), all in one jitted call.
        seed: random seed; the same seed gives the same result.
        prior: Dirichlet pseudo-counts (``"dirichlet"`` = 1 everywhere, a number or
            ``{node: pseudo-counts}``); a proper prior is required.
        tol: stop when ``F`` changes by less than this per observed row (Beal: 1e-6).
        max_iter: iteration limit per restart (Beal: 1000).
        batch_size: restarts vmapped side by side (default: all on a GPU, one at a time on a
            CPU). Results do not depend on it.
        init: start from an EM fit instead of prior draws (Beal & Ghahramani Corollary 6.2):
            the first VBM step uses the exact posteriors at its estimate, where ``F`` equals the
            fit's Cheeseman-Stutz score, so the returned bound is at least ``init.cs`` (same
            prior). One run; ``restarts`` is ignored.
        acceleration: ``"squarem"`` (default): every iteration is a SQUAREM cycle on
            ``ln alpha`` (up to three VBE steps, monotone safeguard; :mod:`lcbayes.squarem`);
            ``"none"``: plain alternation. Both stop on the same plain-step criterion.
    """
    check_run_arguments(tol, acceleration, restarts=restarts, max_iter=max_iter,
                        batch_size=batch_size)
    start = time.perf_counter()
    data = structure.check_data(data)
    lambdas = proper_prior_tables(structure, prior, "vbem")
    priors = tuple(jnp.asarray(a) for a in lambdas)
    patterns = jnp.asarray(data.patterns)
    weights = _observed_weights(data)
    if batch_size is None:
        batch_size = 1 if jax.default_backend() == "cpu" else int(restarts)
    start_alphas = start_tables = None
    if init is not None:
        if init.structure != structure:
            raise LcbayesError("init is an EM fit of a different structure")
        restarts = 1
        counts = to_tables(structure, init.expected_counts)
        start_alphas = tuple(lam + n for lam, n in zip(priors, counts, strict=True))
    else:
        rng = np.random.default_rng(seed)
        start_tables = tuple(jnp.asarray(_normalised(rng.gamma(lam, size=(int(restarts),
                                                                           *lam.shape))))
                             for lam in lambdas)
    keys = jax.random.split(jax.random.PRNGKey(seed), int(restarts))
    n_obs = max(data.n_observed_rows, 1)
    runs = jax.tree_util.tree_map(np.asarray, _fit(
        structure, patterns, weights, priors, None, None, keys, tol * n_obs, int(max_iter),
        min(int(batch_size), int(restarts)), start_alphas, start_tables,
        acceleration == "squarem", complete_columns(data.patterns)))
    best = int(np.nanargmax(runs.elbo))
    alphas = tuple(jnp.asarray(a[best]) for a in runs.alphas)
    est = _final_vbe(structure, alphas, patterns, weights)
    return VBResult(
        elbo=float(runs.elbo[best]),
        log_alias=log_alias(structure),
        posterior=from_tables(structure, [np.asarray(a) for a in alphas]),
        prior=from_tables(structure, lambdas),
        restart_elbos=runs.elbo,
        **record_fields(structure, data, runs, best, est.hidden_marginals, start, seed,
                        restarts, tol, max_iter),
    )
