"""Expectation-maximisation for maximum-likelihood and MAP estimates, many restarts at once.

E step: exact inference (:mod:`lcbayes.inference`) gives the expected family counts
``N_ilk = sum_p w_p P(x_i = k, pa_i = l | y_p, theta)`` (Beal & Ghahramani eq. 19).
M step:

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

All restarts run in one jitted, vmapped ``lax.while_loop``; each stops when its objective changes
by less than ``tol`` per observed row, or after ``max_iter`` iterations. Starting points are drawn
uniformly on every simplex (Dirichlet(1)). For latent class models the classes of the result are
ordered by decreasing size.

Example::

    data = lcb.Dataset.from_csv("carcinoma.csv")
    fit = lcb.em(lcb.latent_class(data, 3), data, restarts=20, seed=0)
    print(fit.summary())
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from . import scores, squarem
from .alias import log_alias
from .data import Dataset
from .dimension import effective_dimension
from .dirichlet import complete_data_log_evidence
from .errors import LcbayesError
from .inference import (
    Evidence,
    complete_columns,
    e_step,
    flat,
    flat_e_step,
    log_marginal,
    prepare,
)
from .params import PriorSpec, dirichlet_log_density, from_tables, prior_tables, to_tables
from .run_record import RunRecord, check_run_arguments, record_fields
from .structure import Structure
from .summary import em_summary

__all__ = ["EMResult", "em"]


class _Runs(NamedTuple):
    tables: tuple[jax.Array, ...]
    history: jax.Array      # (R, max_iter) objective per iteration, NaN after the last
    n_iter: jax.Array       # (R,)
    converged: jax.Array    # (R,)
    loglik: jax.Array       # (R,) at the final tables
    objective: jax.Array    # (R,) at the final tables


def _m_step(counts: jax.Array, alphas: jax.Array | None, shapes, pooling=None) -> jax.Array:
    """ML (no ``alphas``) or MAP M step on flat tables (:mod:`lcbayes.inference.flat`);
    ``alphas`` holds ``lambda + b`` (module docstring). Empty rows become uniform. With
    ``pooling`` (a 0/1 matrix over the flat entries joining tied CPT rows) the counts of tied
    rows are pooled first."""
    if pooling is not None:
        counts = pooling @ counts
    return flat.normalise(counts if alphas is None else counts + alphas, shapes)


def _log(tables):
    return tuple(jnp.log(t) for t in tables)


def _initial_tables(structure: Structure, evidence: Evidence, weights, key):
    """A random start: every pattern gets random responsibilities (Dirichlet(1) per hidden node,
    as virtual evidence under flat tables), followed by one ML M step. Starts lie near the
    data's margins, like StepMix's and Mplus' random starts."""
    n = evidence.one_hot.shape[0]
    keys = jax.random.split(key, max(len(structure.hidden_nodes), 1))
    noise = tuple(
        -jnp.log(jax.random.exponential(k, (n, structure.cardinalities[h]), dtype=jnp.float64))
        for k, h in zip(keys, structure.hidden_nodes, strict=False)
    )  # log of normalised exponentials = log Dirichlet(1), up to a per-pattern constant
    uniform = tuple(jnp.zeros(shape) for shape in structure.table_shapes)
    counts = e_step(structure, uniform, evidence, weights, noise).counts
    return flat.unflatten(_m_step(flat.flatten(counts), None, structure.table_shapes),
                          structure.table_shapes)


@partial(jax.jit, static_argnames=("structure",))
def _starts(structure: Structure, patterns, weights, keys):
    """One random start per key (a batch of tables)."""
    evidence = prepare(structure, patterns)
    return jax.vmap(lambda key: _initial_tables(structure, evidence, weights, key))(keys)


_TINY = 1e-300  # floor for logs of probabilities in the extrapolation (exact zeros allowed)


@partial(jax.jit, static_argnames=("structure", "max_iter", "shift", "batch_size",
                                   "accelerate", "complete"))
def _fit(structure: Structure, patterns, weights, alphas, tol_total, starts, limit,
         max_iter: int, shift: float, batch_size: int, accelerate: bool, pooling=None,
         row_weights=None, complete: tuple[int, ...] = ()) -> _Runs:
    """Run EM from every start in ``starts`` for at most ``limit`` (<= ``max_iter``, the
    history length) iterations, ``batch_size`` restarts vmapped at a time.

    Plain EM, or (``accelerate``) SQUAREM cycles (:mod:`lcbayes.squarem`) extrapolating the
    log tables, renormalised row by row; either way the objective never decreases.

    ``pooling`` and ``row_weights`` tie CPT rows (one host shape for many structures, e.g.
    :mod:`lcbayes.benchmarks.beal_ghahramani`): per node a ``(q, q)`` 0/1 matrix of tied rows
    (counts are pooled before the M step) and ``1 / group size`` per row (the prior term counts
    every group once). Starts must already be tied.

    ``complete`` (:func:`~lcbayes.inference.complete_columns` of ``patterns``) folds the
    iterations' E steps; the final log-likelihoods use the unfolded evidence."""
    evidence = prepare(structure, patterns, complete)
    shapes = structure.table_shapes
    entry_weights = squarem.entry_weights(row_weights, shapes)
    prior = None if alphas is None else flat.flatten(alphas) + shift  # lambda - 1 + b
    pooled = None if pooling is None else flat.row_matrix(pooling, shapes)

    def objective(x, log_marg):
        if prior is None:
            return weights @ log_marg
        terms = xlogy(prior, x)
        return weights @ log_marg + (terms if entry_weights is None
                                     else entry_weights * terms).sum()

    def step(x):
        log_marg, counts = flat_e_step(structure, jnp.log(x), evidence, weights,
                                       vmapped=batch_size > 1)
        return objective(x, log_marg), _m_step(counts, prior, shapes, pooled)

    def run(tables):
        x, history, n_iter, done = squarem.iterate(
            step, flat.flatten(tables), lambda t: jnp.log(jnp.maximum(t, _TINY)),
            lambda u: jnp.exp(flat.log_normalise(u, shapes)), tol_total, limit, max_iter,
            accelerate, entry_weights)
        log_marg = log_marginal(structure, _log(flat.unflatten(x, shapes)),
                                prepare(structure, patterns))
        return _Runs(flat.unflatten(x, shapes), history, n_iter, done, weights @ log_marg,
                     objective(x, log_marg))

    return squarem.map_restarts(run, starts, batch_size)


fit_tied = _fit  # the jitted core, for callers that tie rows (see its docstring)


def _run_restarts(structure, patterns, weights, alphas, tol_total, starts, max_iter: int,
                  shift: float, batch_size: int, keep: int | None, burn_in: int,
                  accelerate: bool):
    """All restarts to convergence, or (``keep``) a two-stage run: every start for ``burn_in``
    iterations, then only the ``keep`` best continue (Mplus' initial and final stage;
    Chickering & Heckerman's multiple-restart EM as used by Karčiauskas §3.3). Both stages run
    ``batch_size`` restarts side by side and share one compiled program.

    Returns the NumPy outcome of every restart and which restarts reached the final stage."""
    n = starts[0].shape[0]
    args = (structure, patterns, weights, alphas, tol_total)
    fold = {"complete": complete_columns(patterns)}
    if keep is None or keep >= n or burn_in >= max_iter:
        runs = _fit(*args, starts, max_iter, max_iter, shift, batch_size, accelerate, **fold)
        return jax.tree_util.tree_map(np.asarray, runs), np.ones(n, dtype=bool)
    first = jax.tree_util.tree_map(
        np.asarray, _fit(*args, starts, burn_in, max_iter, shift, batch_size, accelerate,
                         **fold)
    )
    chosen = np.sort(np.argsort(-np.nan_to_num(first.objective, nan=-np.inf),
                                kind="stable")[:keep])
    picked = tuple(jnp.asarray(t[chosen]) for t in first.tables)
    second = jax.tree_util.tree_map(
        np.asarray,
        _fit(*args, picked, max_iter - burn_in, max_iter, shift, batch_size, accelerate,
             **fold),
    )
    history = first.history.copy()
    for row, r in enumerate(chosen):
        done = first.n_iter[r]
        history[r, done:] = second.history[row, : max_iter - done]
    merged = _Runs(
        tables=tuple(t.copy() for t in first.tables),
        history=history, n_iter=first.n_iter.copy(), converged=first.converged.copy(),
        loglik=first.loglik.copy(), objective=first.objective.copy(),
    )
    merged.n_iter[chosen] = first.n_iter[chosen] + second.n_iter
    for name in ("converged", "loglik", "objective"):
        getattr(merged, name)[chosen] = getattr(second, name)
    for table, part in zip(merged.tables, second.tables, strict=True):
        table[chosen] = part
    kept = np.zeros(n, dtype=bool)
    kept[chosen] = True
    return merged, kept


_final_e_step = jax.jit(e_step, static_argnums=0)


def _order_classes(structure: Structure, tables: list[np.ndarray]) -> list[np.ndarray]:
    """Latent class models: reorder classes by decreasing weight (a canonical labelling)."""
    if structure.kind != "latent_class":
        return tables
    root = structure.root
    order = np.argsort(-tables[root][0], kind="stable")
    return [t[:, order] if i == root else t[order] for i, t in enumerate(tables)]


@dataclass(frozen=True, repr=False)
class EMResult(RunRecord):
    """Outcome of :func:`em`: the best restart's estimate, scores and every restart's fit.

    ``hidden_posteriors`` are per data *pattern*; :attr:`class_posteriors` expands the class of a
    latent class model to rows. ``restart_kept`` marks the restarts that ran to the end (all of
    them unless ``keep`` asked for a two-stage run). ``expected_counts`` are the fractional
    family counts of the E step at the estimate (rows with no observed value left out: their
    factor is one), the completion behind :attr:`cs`; ``score_prior`` holds the Dirichlet
    pseudo-counts that CS and BICp use: the fit's prior, or 1 everywhere for an ML fit.
    """

    params: dict[str, np.ndarray]
    loglik: float
    objective: float
    estimator: Literal["ml", "map"]
    map_basis: str | None
    log_prior: float | None
    restart_logliks: np.ndarray
    restart_objectives: np.ndarray
    restart_kept: np.ndarray
    entropy: float
    expected_counts: dict[str, np.ndarray]
    score_prior: dict[str, np.ndarray]

    @property
    def bic(self) -> float:
        """``loglik - d/2 ln N`` (natural-log evidence scale; poLCA's BIC is ``-2 * bic``)."""
        return scores.bic(self.loglik, self.n_parameters, self.n_observed_rows)

    @property
    def aic(self) -> float:
        """``loglik - d`` (poLCA's AIC is ``-2 * aic``)."""
        return scores.aic(self.loglik, self.n_parameters)

    @property
    def icl(self) -> float:
        """``bic - entropy`` of the posterior hidden memberships."""
        return scores.icl(self.loglik, self.n_parameters, self.n_observed_rows, self.entropy)

    @property
    def log_alias(self) -> float:
        """``ln S``, the label-symmetry correction (:mod:`lcbayes.alias`)."""
        return log_alias(self.structure)

    @property
    def bicp(self) -> float:
        """``bic + ln p(theta_hat | m)``, the Dirichlet log density (simplex basis) of the
        estimate under :attr:`score_prior` (Beal & Ghahramani §4.1)."""
        tables = to_tables(self.structure, self.params)
        priors = to_tables(self.structure, self.score_prior)
        return scores.bicp(self.loglik, self.n_parameters, self.n_observed_rows,
                           dirichlet_log_density(tables, priors))

    @property
    def cs(self) -> float:
        """Cheeseman-Stutz (Beal & Ghahramani eqs 27-30): ``ln p(s_hat, y | m) + ln p(y |
        theta_hat) - ln p(s_hat, y | theta_hat)`` with the fractional completion of the E step
        at the estimate and the Dirichlet :attr:`score_prior`; a lower bound on the log evidence
        (their Theorem 6.1), without the alias correction."""
        counts = to_tables(self.structure, self.expected_counts)
        tables = to_tables(self.structure, self.params)
        priors = to_tables(self.structure, self.score_prior)
        complete_loglik = sum(float(xlogy(n, t).sum()) for n, t in zip(counts, tables,
                                                                        strict=True))
        evidence = float(complete_data_log_evidence(counts, priors))
        return scores.cheeseman_stutz(self.loglik, evidence, complete_loglik)

    @cached_property
    def effective_dimension(self) -> int:
        """The effective dimension of the structure (:func:`lcbayes.effective_dimension`,
        seed 0); computed on first use."""
        return effective_dimension(self.structure)

    @property
    def bic_e(self) -> float:
        """BIC with the effective dimension: ``loglik - d_e/2 ln N`` (Geiger et al. 1996)."""
        return scores.bic(self.loglik, self.effective_dimension, self.n_observed_rows)

    def corrected_scores(self) -> dict[str, float]:
        """BIC, BICp and CS plus :attr:`log_alias` (Beal & Ghahramani's unstarred columns)."""
        return {f"{name}_corrected": getattr(self, name) + self.log_alias
                for name in ("bic", "bicp", "cs")}

    @property
    def class_weights(self) -> np.ndarray | None:
        """Class shares of a latent class model (decreasing)."""
        if self.structure.kind != "latent_class":
            return None
        return self.params[self.structure.nodes[self.structure.root]]

    def conditional_probabilities(self) -> dict[str, list[dict[str, float]]]:
        """For every observed node, ``P(node = label | parent configuration)``: a list over
        parent configurations (the classes, for a latent class model) of ``{label: p}``."""
        out = {}
        for i in self.structure.observed_nodes:
            name = self.structure.nodes[i]
            table = self.params[name].reshape(-1, self.structure.cardinalities[i])
            labels = [str(lab) for lab in self.structure.labels[i]]
            out[name] = [dict(zip(labels, map(float, row), strict=True)) for row in table]
        return out

    def to_dict(self) -> dict:
        """JSON-ready summary (the command line prints this with ``--json``)."""
        out = {
            "method": "em",
            "estimator": self.estimator,
            "map_basis": self.map_basis,
            **self._run_dict(),
            "loglik": self.loglik,
            "log_prior": self.log_prior,
            "bic": self.bic,
            "aic": self.aic,
            "icl": self.icl,
            "entropy": self.entropy,
            "cs": self.cs,
            "bicp": self.bicp,
            "log_alias": self.log_alias,
            **self.corrected_scores(),
            "effective_dimension": self.effective_dimension,
            "bic_e": self.bic_e,
            "restart_logliks": [float(v) for v in self.restart_logliks],
            "params": {k: v.tolist() for k, v in self.params.items()},
            "conditional_probabilities": self.conditional_probabilities(),
        }
        weights = self.class_weights
        out["class_weights"] = None if weights is None else [float(w) for w in weights]
        return out

    def summary(self) -> str:
        """A poLCA-style printout: shares, conditional probabilities, fit statistics."""
        return em_summary(self)

    def __repr__(self) -> str:
        return (
            f"EMResult(kind={self.structure.kind!r}, loglik={self.loglik:.4f}, "
            f"n_parameters={self.n_parameters}, bic={self.bic:.4f}, converged={self.converged}, "
            f"n_iter={self.n_iter}, restarts={self.restarts})"
        )


def em(
    structure: Structure,
    data: Dataset,
    restarts: int = 10,
    seed: int = 0,
    prior: PriorSpec = None,
    tol: float = 1e-8,
    max_iter: int = 2000,
    map_basis: Literal["softmax", "simplex"] = "softmax",
    batch_size: int | None = None,
    keep: int | None = None,
    burn_in: int = 10,
    acceleration: Literal["squarem", "none"] = "squarem",
) -> EMResult:
    """Fit ``structure`` to ``data`` by EM from ``restarts`` random starts; keep the best.

    Args:
        structure: the model (:func:`~lcbayes.latent_class`, :func:`~lcbayes.hlc`,
            :func:`~lcbayes.dag`).
        data: the data; missing values are marginalised.
        restarts: number of random starting points, all run at once.
        seed: random seed; the same seed gives the same result.
        prior: ``None`` for maximum likelihood; otherwise a Dirichlet prior (``"dirichlet"`` for
            pseudo-count 1, a number, or ``{node: pseudo-counts}``) for a MAP estimate.
        tol: convergence threshold on the change of the objective per observed row.
        max_iter: iteration limit per restart.
        map_basis: ``"softmax"`` (add-lambda estimate) or ``"simplex"`` (posterior mode, needs
            pseudo-counts >= 1); ignored for maximum likelihood.
        batch_size: restarts run side by side (``vmap``); the rest run one batch after another,
            each restart stopping on its own. Default: all of them on a GPU/TPU, one at a time
            on a CPU, where batching gains little, every restart would run as long as the
            slowest, and (many patterns) the E step's rarely needed log-space fallback
            (:mod:`lcbayes.inference.coded`) would be computed at every step. Results do not
            depend on it.
        keep: if given, a two-stage run: all ``restarts`` starts run ``burn_in`` iterations,
            then only the ``keep`` best continue to convergence (like Mplus'
            ``STARTS = restarts keep``). Much faster when some starts stall near saddle points;
            ``None`` (default) runs every restart to convergence.
        burn_in: iterations of the first stage when ``keep`` is given.
        acceleration: ``"squarem"`` (default): every iteration is one SQUAREM cycle (two EM
            steps, a squared extrapolation and one EM step from it, with a monotone
            safeguard; up to three E steps), which cuts the iterations of slowly converging
            starts many-fold; ``"none"``: plain EM, one E step per iteration. Both stop on
            the same plain-EM-step criterion and reach the same fixed points.
    """
    check_run_arguments(tol, acceleration, restarts=restarts, max_iter=max_iter, keep=keep,
                        burn_in=burn_in, batch_size=batch_size)
    if map_basis not in ("softmax", "simplex"):
        raise LcbayesError(f"map_basis must be 'softmax' or 'simplex', got {map_basis!r}")
    start = time.perf_counter()
    data = structure.check_data(data)
    alphas = prior_tables(structure, prior)
    if alphas is not None and map_basis == "simplex" and min(a.min() for a in alphas) < 1:
        raise LcbayesError(
            "map_basis='simplex' needs every prior pseudo-count >= 1 (the posterior mode is on "
            "the boundary otherwise); use map_basis='softmax' or a larger prior"
        )
    shift = -1.0 if map_basis == "simplex" else 0.0
    n_obs = max(data.n_observed_rows, 1)
    patterns = jnp.asarray(data.patterns)
    weights = jnp.asarray(data.counts)
    keys = jax.random.split(jax.random.PRNGKey(seed), int(restarts))
    alpha_arrays = None if alphas is None else tuple(jnp.asarray(a) for a in alphas)
    if batch_size is None:
        batch_size = 1 if jax.default_backend() == "cpu" else int(restarts)
    starts = _starts(structure, patterns, weights, keys)
    runs, kept = _run_restarts(structure, patterns, weights, alpha_arrays, tol * n_obs, starts,
                               int(max_iter), shift, min(int(batch_size), int(restarts)),
                               keep, int(burn_in), acceleration == "squarem")
    best = int(np.nanargmax(runs.objective))
    tables = _order_classes(structure, [t[best] for t in runs.tables])
    jtables = tuple(jnp.asarray(t) for t in tables)
    observed = jnp.where(jnp.any(patterns >= 0, axis=1), weights, 0.0)  # all-missing rows: 1
    est = _final_e_step(structure, _log(jtables), patterns, observed)
    return EMResult(
        params=from_tables(structure, tables),
        loglik=float(runs.loglik[best]),
        objective=float(runs.objective[best]),
        estimator="ml" if alphas is None else "map",
        map_basis=None if alphas is None else map_basis,
        log_prior=None if alphas is None else dirichlet_log_density(tables, alphas),
        restart_logliks=runs.loglik,
        restart_objectives=runs.objective,
        restart_kept=kept,
        entropy=float(observed @ est.hidden_entropy),
        expected_counts=from_tables(structure, est.counts),
        score_prior=from_tables(structure, alphas if alphas is not None
                                else prior_tables(structure, "dirichlet")),
        **record_fields(structure, data, runs, best, est.hidden_marginals, start, seed,
                        restarts, tol, max_iter),
    )
