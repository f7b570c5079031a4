"""Variational Bayesian EM: a lower bound ``F <= ln p(y | m)`` on the log evidence.

Beal & Ghahramani (2006) §3.4-3.5, eqs 51-61. The posterior over the parameters and the hidden
variables is approximated by ``q(theta) prod_i q(s_i)``; for discrete DAGs with Dirichlet priors
both factors are closed under iteration:

* **VBM** (eq. 56): every CPT row gets ``q(theta_jl) = Dir(alpha_jl)``, ``alpha = lambda + N``
  with ``N`` the expected family counts under ``q(s)`` (eq. 55);
* **VBE** (eqs 58-60): ``q(s_i)`` is exact inference with the sub-normalised tables
  ``ln theta~_jlk = psi(alpha_jlk) - psi(alpha_jl0)`` (digamma); the inference core returns the
  per-pattern normalisers ``Z_i`` and the counts.

The bound (eq. 52), written out term by term (form A; the three forms are derived from eq. 52,
the paper does not write them out), at any ``q(s)`` and ``alpha``::

    F = sum_jlk N_jlk (psi(alpha_jlk) - psi(alpha_jl0)) + sum_i H[q(s_i)]
        - sum_jl KL(Dir(alpha_jl) || Dir(lambda_jl))

Right after a VBE step it equals ``sum_i ln Z_i - KL`` (form B, monitored here), right after a
VBM step ``sum_jl [ln B(lambda_jl + N_jl) - ln B(lambda_jl)] + sum_i H[q(s_i)]`` (form C,
the Cheeseman-Stutz-like collapsed form). :func:`bound_terms` evaluates all three, so tests can
check they agree.

Protocol (Beal & Ghahramani §4.1): each restart draws its parameters from the prior, runs one
ordinary E step at them and uses that ``q(s)`` for the first VBM step; then VBE and VBM
alternate until ``F`` changes by less than ``tol`` per observed row or ``max_iter`` iterations.
``F`` never decreases. Every restart is a ``lax.while_loop`` of SQUAREM cycles on ``ln alpha``
(:mod:`lcbayes.engines.squarem`), all restarts in one jitted ``lax.map`` (vmapped in batches).
The jitted core :func:`run_vbem` also fits structures with tied CPT rows
(:mod:`lcbayes.inference.tying`); :func:`vbem` never ties rows.

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

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..alias import log_alias
from ..data import Dataset
from ..errors import ArgumentError, ArgumentTypeError
from ..inference import complete_columns, e_step, flat, flat_e_step, prepare
from ..inference.tying import RowTying, entry_weights, pool
from ..jax_setup import on_device
from ..memory import check_restarts_memory
from ..params import PriorSpec, from_tables, proper_prior_tables, to_tables
from ..program_cache import cached_jit
from ..render import JSONRecord
from ..sharding import pattern_shards
from ..structure import Structure
from ..validation import (
    Seed,
    check_choice,
    check_int,
    check_positive,
    check_structure,
    fit_data,
    numpy_rng,
    observed_data,
)
from . import squarem
from .dirichlet import (
    complete_data_log_evidence,
    expected_log_theta_flat,
    expected_log_thetas,
    kl_divergence,
    kl_divergence_flat,
)
from .em_result import EMResult
from .padding import class_padding
from .run_record import check_batching, record_fields, start_engine, warn_unconverged
from .vb_result import VBResult

__all__ = ["BoundTermsResult", "VBResult", "VBRuns", "bound_terms", "prior_starts", "run_vbem",
           "vbem", "vbem_restarts"]


@dataclass(frozen=True)
class BoundTermsResult(JSONRecord):
    """The three forms of ``F`` (module docstring) at a ``q(s)`` and Dirichlet posteriors
    ``alpha``.

    ``general`` (form A) holds at any point; ``after_vbe`` (form B) equals it when ``q(s)`` is
    the VBE posterior of ``alpha``; ``after_vbm`` (form C) equals it when ``alpha = lambda + N``
    for the counts ``N`` of ``q(s)``."""

    general: float
    after_vbe: float
    after_vbm: float

    def to_frame(self) -> pd.DataFrame:
        """One row per form: ``form`` (``general``, ``after_vbe``, ``after_vbm``) and ``F``."""
        return pd.DataFrame({"form": ["general", "after_vbe", "after_vbm"],
                             "F": [self.general, self.after_vbe, self.after_vbm]})

    def summary(self) -> str:
        """The three forms, one a line."""
        return (f"Variational bound F: general form {self.general:.6f}, after VBE "
                f"{self.after_vbe:.6f}, after VBM {self.after_vbm:.6f}")


class VBRuns(NamedTuple):
    """The outcome of every restart of :func:`run_vbem`."""

    alphas: tuple[jax.Array, ...]
    history: jax.Array     # (R, max_iter) bound per iteration, NaN after the last
    n_iter: jax.Array
    converged: jax.Array
    elbo: jax.Array        # (R,) bound at the final alphas (after a last VBE step)


def _observed_weights(data: Dataset) -> jax.Array:
    """Pattern counts, zero for rows with no observed value: such a row's factor is exactly one
    (everything in it sums out), so leaving it out keeps the bound as tight as possible."""
    return on_device(np.where((data.patterns >= 0).any(axis=1), data.counts, 0.0))


def _vbe(structure: Structure, alphas, evidence, weights, active=None):
    """VBE step with the sub-normalised tables ``exp(psi(alpha) - psi(alpha_0))`` (inactive
    entries, :mod:`.padding`, are zero)."""
    if active is None:
        return e_step(structure, expected_log_thetas(alphas), evidence, weights)
    shapes = structure.table_shapes
    log_tables = flat.unflatten(expected_log_theta_flat(flat.flatten(alphas), shapes, active),
                                shapes)
    return e_step(structure, log_tables, evidence, weights)


def _row_weights(tying: RowTying | None):
    return None if tying is None else tying.row_weights


@partial(cached_jit, static_argnames=("structure", "max_iter", "batch_size", "from_tables",
                                     "accelerate", "complete"))
def run_vbem(structure: Structure, patterns, weights, priors, starts, tol_total, max_iter: int,
             batch_size: int, from_tables: bool = True, accelerate: bool = True,
             tying: RowTying | None = None, complete: tuple[int, ...] = (),
             active: jax.Array | None = None) -> VBRuns:
    """The jitted core: VBEM from every start in ``starts``, ``batch_size`` restarts vmapped
    at a time.

    ``starts`` is a batch of CPT tables (``from_tables``: parameters drawn from the prior; each
    restart runs one ordinary E step at them and one VBM step, Beal & Ghahramani §4.1) or of
    Dirichlet parameters ``alpha`` to start from as they are. ``accelerate``: SQUAREM cycles
    on ``ln alpha`` instead of plain VBE/VBM steps; ``F`` never decreases either way.
    ``tying`` (:mod:`lcbayes.inference.tying`) pools the counts of tied rows and counts every
    group's KL term once; starting tables must already be tied. ``complete``
    (:func:`~lcbayes.inference.complete_columns` of ``patterns``) folds the E steps (exact
    here: VBE tables are never zero). ``active`` (flat, :meth:`.padding.ClassPadding.held`)
    switches classes off: their weights are zero and their entries stay at the prior."""
    evidence = prepare(structure, patterns, complete)
    shapes = tuple(lam.shape for lam in priors)
    prior_flat = flat.flatten(priors)
    row_weights = _row_weights(tying)

    def step(x):  # form B of F and the VBM step, on the flat Dirichlet parameters
        log_marg, counts = flat_e_step(structure, expected_log_theta_flat(x, shapes, active),
                                       evidence, weights, vmapped=batch_size > 1)
        value = weights @ log_marg - kl_divergence_flat(x, prior_flat, shapes, row_weights,
                                                        active)
        return value, prior_flat + pool(counts, tying)

    def run(start):
        if from_tables:  # Beal's start: one ordinary E step at the drawn parameters, one VBM
            est = e_step(structure, tuple(jnp.log(t) for t in start), evidence, weights)
            x0 = prior_flat + pool(flat.flatten(est.counts), tying)
        else:
            x0 = flat.flatten(start)
        x, history, n_iter, done = squarem.iterate(
            step, x0, jnp.log, jnp.exp, tol_total, max_iter, max_iter, accelerate,
            entry_weights(tying, shapes))
        alphas = flat.unflatten(x, shapes)
        est = _vbe(structure, alphas, evidence, weights, active)
        final = weights @ est.log_marginal - kl_divergence_flat(x, prior_flat, shapes,
                                                                row_weights, active)
        return VBRuns(alphas, history, n_iter, done, final)

    return squarem.map_restarts(run, starts, batch_size)


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


def bound_terms(structure: Structure, data, posterior: dict, *,
                prior: PriorSpec = "dirichlet") -> BoundTermsResult:
    """``F`` in its three algebraic forms (module docstring) at the Dirichlet posteriors
    ``posterior`` (``{node: alpha}``, CPT-shaped) and the VBE posterior ``q(s)`` they imply.

    Forms A and B always agree here; form C agrees with them when ``posterior`` is a fixed
    point of VBEM (``alpha = lambda + N(q)``)."""
    check_structure(structure)
    data = observed_data(structure, data)
    priors = tuple(jnp.asarray(a) for a in proper_prior_tables(structure, prior, "bound_terms"))
    alphas = tuple(jnp.asarray(np.asarray(posterior[n], dtype=np.float64)).reshape(p.shape)
                   for n, p in zip(structure.nodes, priors, strict=True))
    values = _terms(structure, alphas, priors, jnp.asarray(data.patterns),
                    _observed_weights(data))
    return BoundTermsResult(*(float(v) for v in values))


_final_vbe = jax.jit(lambda structure, alphas, patterns, weights, active=None: _vbe(
    structure, alphas, prepare(structure, patterns), weights, active), static_argnums=0)


def _normalised(draws: np.ndarray) -> np.ndarray:
    """Gamma draws normalised over the last axis: Dirichlet draws."""
    return draws / draws.sum(axis=-1, keepdims=True)


def prior_starts(lambdas, restarts: int, seed) -> tuple[np.ndarray, ...]:
    """``restarts`` starting tables drawn from the Dirichlet prior ``lambdas`` (NumPy): the
    random starts of :func:`vbem` and :func:`lcbayes.stream_vbem`."""
    rng = numpy_rng(seed)
    return tuple(_normalised(rng.gamma(lam, size=(restarts, *lam.shape))) for lam in lambdas)


def vbem_restarts(structure: Structure, data: Dataset, *, restarts: int, seed: Seed = 0,
                  prior: PriorSpec = "dirichlet", tol: float = 1e-6, max_iter: int = 1000
                  ) -> VBRuns:
    """Every restart of :func:`vbem` (the same starts for the same seed, SQUAREM, one jitted
    call), NumPy, unordered: the variational optima a data-informed reference is built from
    (:mod:`lcbayes.samplers.reference`). ``data`` must already fit ``structure``."""
    check_restarts_memory(structure, restarts, max_iter)
    lambdas = proper_prior_tables(structure, prior, "vbem")
    starts = tuple(on_device(t) for t in prior_starts(lambdas, restarts, seed))
    batch_size = check_batching(None, restarts)
    runs = run_vbem(structure, on_device(data.patterns), _observed_weights(data),
                    tuple(on_device(a) for a in lambdas), starts,
                    tol * max(data.n_observed_rows, 1), max_iter, batch_size, True, True,
                    complete=complete_columns(data.patterns))
    return jax.tree_util.tree_map(np.asarray, runs)


def vbem(
    structure: Structure,
    data,
    *,
    restarts: int = 3,
    seed: Seed = 0,
    prior: PriorSpec = "dirichlet",
    tol: float = 1e-6,
    max_iter: int = 1000,
    batch_size: int | None = None,
    init: EMResult | None = None,
    algorithm: Literal["squarem", "vbem"] = "squarem",
    pad_classes: int | None = None,
    devices: int | Sequence[jax.Device] | None = None,
) -> VBResult:
    """Variational Bayesian EM (Beal & Ghahramani 2006 §3.5); keep the best of ``restarts``.

    Args:
        structure: the model (latent class, HLC or DAG).
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes);
            missing values are marginalised.
        restarts: random starts (prior draws), all in one jitted call.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            result.
        prior: Dirichlet pseudo-counts (``"dirichlet"`` = 1 everywhere, a number or
            ``{node: pseudo-counts}``); a proper prior is required.
        tol: stop when ``F`` changes by less than this per observed row (Beal: 1e-6).
        max_iter: iteration limit per restart (Beal: 1000).
        batch_size: restarts vmapped side by side (default: all on a GPU, one at a time on a
            CPU). Results do not depend on it.
        init: one more start, from an EM fit (Beal & Ghahramani Corollary 6.2): its first
            VBM step uses the exact posteriors at the fit's estimate, where ``F`` equals the
            fit's Cheeseman-Stutz score, so the returned bound is at least ``init.cs`` (same
            prior). It runs after the ``restarts`` prior draws, in the same compiled program;
            ``restarts=0`` runs it alone.
        algorithm: ``"squarem"`` (default): every iteration is a SQUAREM cycle on
            ``ln alpha`` (up to three VBE steps, monotone safeguard; :mod:`lcbayes.engines.
            squarem`); ``"vbem"``: plain VBE/VBM alternation. Both stop on the same plain-step
            criterion.
        pad_classes: run a latent class model inside the compiled program of the model with
            ``pad_classes`` classes, the extra classes switched off
            (:mod:`lcbayes.engines.padding`); the same result up to rounding.
        devices: ``None`` (default): one device; a number ``n``: the first ``n`` of
            ``jax.devices()``; or a sequence of ``jax.Device``: the data patterns split over
            them (:mod:`lcbayes.sharding`), the same bound to rounding.
    """
    start, seed = start_engine(structure, seed)
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    check_choice(algorithm, "algorithm", ("squarem", "vbem"))
    if init is not None and not isinstance(init, EMResult):
        raise ArgumentTypeError(f"init must be an EMResult (an lcb.em fit), got "
                                f"{type(init).__name__}")
    if init is not None and init.structure != structure:
        raise ArgumentError("init is an EM fit of a different structure")
    batch_size = check_batching(batch_size, restarts + (init is not None))
    check_restarts_memory(structure, restarts, max_iter)
    padding = class_padding(structure, pad_classes)
    data = fit_data(structure, data)
    shards = pattern_shards(devices, data.n_patterns)
    lambdas = proper_prior_tables(structure, prior, "vbem")
    patterns = on_device(data.patterns)
    weights = _observed_weights(data)
    starts: tuple[np.ndarray | jax.Array, ...]  # drawn in NumPy, run in JAX
    starts = prior_starts(lambdas, restarts, seed)
    if init is not None:
        starts = tuple(np.concatenate([s, t[None]]) for s, t in
                       zip(starts, to_tables(structure, init.params, xp=np), strict=True))
    restarts = starts[0].shape[0]
    run_structure, active = structure, None
    if padding is not None:  # the prior's value at switched-off entries is never used
        run_structure, active = padding.padded, jnp.asarray(padding.held()[0])
        lambdas_run = padding.pad(lambdas, 1.0, 1.0)
        starts = padding.pad(starts)
    priors = tuple(on_device(a) for a in (lambdas if padding is None else lambdas_run))
    n_obs = max(data.n_observed_rows, 1)
    starts = tuple(on_device(t) for t in starts)
    if shards is not None:  # lcbayes.sharding
        patterns, weights = shards.place(data.patterns, weights)
        priors, starts, active = shards.replicate((priors, starts, active))
    runs = jax.tree_util.tree_map(np.asarray, run_vbem(
        run_structure, patterns, weights, priors, starts,
        tol * n_obs, max_iter, batch_size, True, algorithm == "squarem",
        complete=complete_columns(data.patterns), active=active))
    best = int(np.nanargmax(runs.elbo))
    alphas: tuple[np.ndarray | jax.Array, ...]  # unpadded in NumPy
    alphas = tuple(on_device(a[best]) for a in runs.alphas)
    est = _final_vbe(run_structure, alphas, patterns, weights, active)
    if shards is not None:
        est = shards.unpad_e_step(est)
    if padding is not None:
        alphas, est = padding.unpad(alphas), padding.unpad_e_step(est)
    result = VBResult(
        elbo=float(runs.elbo[best]),
        log_alias=log_alias(structure),
        posterior=from_tables(structure, [np.asarray(a) for a in alphas]),
        prior=from_tables(structure, lambdas),
        restart_elbos=runs.elbo,
        **record_fields(structure, data, runs, best, est.hidden_marginals, start, seed,
                        restarts, tol, max_iter),
    )
    warn_unconverged(result, "VBEM")
    return result
