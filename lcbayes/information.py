"""Standard errors of maximum-likelihood estimates (EM fits): empirical or observed information.

Every CPT row ``p_l = (p_l1, ..., p_lr)`` is parameterised by its log-ratios to the *first*
category, ``beta_lk = ln(p_lk / p_l1)`` for ``k = 2..r`` (the unconstrained basis; ``p_l`` is
the softmax of ``(0, beta_l)``). The class weights of a latent class model (the root's CPT, one
row) are parameterised the same way, with the first class as reference. With the per-pattern
scores ``g_p = d ln p(y_p | theta) / d beta`` (``jax.jacfwd``/``jax.jacrev`` of the exact
per-pattern log marginal, float64) and the pattern counts ``n_p``:

* ``method="empirical"`` (default): the empirical information ``I = sum_p n_p g_p g_p^T``, the
  outer product of the per-row scores (Bandeen-Roche, Miglioretti, Zeger & Rathouz 1997);
* ``method="observed"``: the observed information ``I = -d^2/d beta^2 sum_p n_p ln p(y_p)``
  (``jax.hessian``).

The covariance of ``beta`` is the Moore-Penrose pseudo-inverse ``I^+`` (singular values at or
below ``sqrt(machine eps)`` times the largest are dropped, as ``MASS::ginv`` does), so that a
singular or near-singular information (a boundary estimate, an unidentified structure) gives
finite numbers instead of an error. The covariance of the probabilities is the delta method
``J I^+ J^T`` with ``J = dp / d beta`` the softmax Jacobian (``diag(p_l) - p_l p_l^T`` per row,
reference column dropped); a negative variance (from rounding) becomes 0 and the standard errors
are the square roots of its diagonal.

These are poLCA's conventions exactly (``poLCA.se``, Linzer & Lewis 2011): first category (and
first class) as reference, the joint information of response probabilities and class weights
(poLCA's ``probs.se`` and ``P.se``: the class weights are its intercept-only multinomial logit),
``ginv`` of the empirical information, the delta method, and negative variances set to zero. At
a maximum in the interior of the parameter space the probability standard errors do not depend
on the choice of reference category (the delta method is invariant under the linear change of
basis); with a truncated pseudo-inverse they may.

**Boundary estimates.** A probability at (or within ``boundary`` of) 0 or 1 has a log-ratio at
infinity: the likelihood is flat or maximised at the edge there and the asymptotic theory behind
these standard errors does not hold. poLCA reports whatever the formula gives (typically close
to 0 for such an entry, since ``dp / d beta = p (1 - p)`` vanishes; the exact value depends on
how close to the boundary EM stopped and on the pseudo-inverse's cut-off). This module keeps
poLCA's numbers and emits a :class:`StandardErrorWarning` naming the entries on the boundary.

**Not at a maximum.** Standard errors only mean something at a local maximum of the likelihood.
The score statistic ``g^T I^+ g`` (``g = sum_p n_p g_p``) is about the squared distance to the
maximum in standard-error units; above ``1e-2`` (an EM run that did not converge, or a MAP
estimate, whose score is not zero) a :class:`StandardErrorWarning` says so. With
``method="observed"`` an information with a clearly negative eigenvalue (a saddle point) warns
too. :func:`fit_standard_errors` also refuses an EM fit that did not converge outright.

**Missing values.** ``ln p(y_p)`` is the exact log marginal with the missing items summed out,
so a missing item contributes nothing to the score of its own parameters (poLCA sets those
scores to 0, the same thing) and every row is used; a row with nothing observed contributes
nothing at all. (poLCA drops incomplete rows unless ``na.rm = FALSE``; with ``na.rm = FALSE``
its numbers are these.)

Any structure the inference core supports works (latent class, HLC, DAG): the CPT rows of every
node, hidden or observed, are parameterised as above; root CPTs of HLC trees and DAGs are their
hidden nodes' marginal weights. In a structure that is not locally identified (more hidden
states than the data can tell apart, or a DAG with redundant parameters) the information is
singular and the pseudo-inverse gives the standard errors of the identified directions only.

Example::

    fit = lcb.em(lcb.latent_class(data, 2), data, restarts=20, seed=0, tol=1e-12)
    se = lcb.standard_errors(fit.structure, fit.params, data)        # {node: CPT-shaped SEs}
    se_obs = lcb.standard_errors(fit.structure, fit.params, data, method="observed")
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from . import jax_setup  # noqa: F401  (64-bit JAX)
from .errors import ArgumentError
from .inference import flat as flat_tables
from .inference import log_marginal, prepare
from .params import config_labels, from_tables, probability_tables, to_tables
from .program_cache import cached_jit
from .structure import Structure
from .validation import check_choice, check_structure, data_for

__all__ = ["StandardErrorWarning", "boundary_entries", "covariance", "fit_standard_errors",
           "ginv", "information", "standard_errors"]

Method = Literal["empirical", "observed"]
METHODS = ("empirical", "observed")

#: Score statistic ``g^T I^+ g`` above which the estimate is taken not to be a maximum.
SCORE_TOLERANCE = 1e-2
#: Probabilities within this of 0 or 1 are reported as on the boundary.
BOUNDARY = 1e-6
#: Floor of probabilities before taking logs (exact zeros stay finite in the free basis).
_TINY = 1e-300


class StandardErrorWarning(UserWarning):
    """The standard errors were computed but are not trustworthy (boundary estimates, an
    estimate that is not a maximum of the likelihood, a saddle point)."""


# ---------------------------------------------------------------------------- the free basis
def _free_positions(structure: Structure) -> np.ndarray:
    """Positions in the flat table vector (:mod:`lcbayes.inference.flat`) of the free entries:
    every row's categories 2..r (category 1 is the reference)."""
    offsets = flat_tables.offsets(structure.table_shapes)
    return np.asarray([offsets[i] + l * r + k
                       for i, (q, r) in enumerate(structure.table_shapes)
                       for l in range(q) for k in range(1, r)], dtype=np.int64)


def _flat_log_tables(beta: jax.Array, positions: jax.Array, structure: Structure) -> jax.Array:
    """Flat log tables with rows ``log_softmax(0, beta_row)``."""
    shapes = structure.table_shapes
    u = jnp.zeros(int(flat_tables.offsets(shapes)[-1]), dtype=beta.dtype).at[positions].set(beta)
    rows = flat_tables.entry_rows(shapes)
    n_rows = int(rows[-1]) + 1
    top = jax.lax.stop_gradient(jax.ops.segment_max(u, rows, num_segments=n_rows))[rows]
    total = jax.ops.segment_sum(jnp.exp(u - top), rows, num_segments=n_rows)[rows]
    return u - top - jnp.log(total)


def _beta_at(structure: Structure, tables) -> np.ndarray:
    """The free parameters of ``tables``: ``ln p_lk - ln p_l1`` (probabilities floored at
    1e-300, so an exact 0 gives a finite, very large log-ratio)."""
    logs = np.concatenate([np.log(np.maximum(np.asarray(t, dtype=np.float64), _TINY)).ravel()
                           for t in tables])
    shapes = structure.table_shapes
    offsets = flat_tables.offsets(shapes)
    rows = flat_tables.entry_rows(shapes)
    first = np.concatenate([offsets[i] + np.arange(q) * r for i, (q, r) in enumerate(shapes)])
    return (logs - logs[first[rows]])[_free_positions(structure)]


@partial(cached_jit, static_argnames=("structure", "forward"))
def _scores(structure: Structure, beta, positions, patterns, forward: bool):
    """``(P, D)`` per-pattern scores ``d ln p(y_p) / d beta`` and the probabilities' ``(T, D)``
    Jacobian ``dp / d beta``."""
    evidence = prepare(structure, patterns)

    def per_pattern(b):
        log_tables = flat_tables.unflatten(_flat_log_tables(b, positions, structure),
                                           structure.table_shapes)
        return log_marginal(structure, log_tables, evidence)

    jac = jax.jacfwd if forward else jax.jacrev
    probs = jax.jacfwd(lambda b: jnp.exp(_flat_log_tables(b, positions, structure)))
    return jac(per_pattern)(beta), probs(beta)


@partial(cached_jit, static_argnames=("structure",))
def _hessian(structure: Structure, beta, positions, patterns, counts):
    """``(D, D)`` Hessian of ``sum_p n_p ln p(y_p)`` in the free basis and its ``(D,)``
    gradient."""
    evidence = prepare(structure, patterns)

    def total(b):
        log_tables = flat_tables.unflatten(_flat_log_tables(b, positions, structure),
                                           structure.table_shapes)
        return counts @ log_marginal(structure, log_tables, evidence)

    return jax.hessian(total)(beta), jax.grad(total)(beta)


# ---------------------------------------------------------------------------- linear algebra
def ginv(matrix: np.ndarray, tol: float | None = None) -> np.ndarray:
    """Moore-Penrose pseudo-inverse as ``MASS::ginv`` computes it (poLCA's): singular values
    ``d`` with ``d <= tol * d_max`` are dropped; ``tol`` defaults to ``sqrt(machine eps)``."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.size == 0:
        return matrix.T.copy()
    tol = float(np.sqrt(np.finfo(np.float64).eps)) if tol is None else tol
    u, d, vt = np.linalg.svd(matrix)
    keep = d > max(tol * d[0], 0.0)
    return (vt[keep].T / d[keep]) @ u[:, keep].T


# ---------------------------------------------------------------------------- public API
def _inputs(structure: Structure, params: Mapping[str, Any], data, method: str):
    check_structure(structure)
    check_choice(method, "method", METHODS)
    tables = probability_tables(structure, params)
    data = data_for(structure, data)
    return tables, data


def information(structure: Structure, params: Mapping[str, Any], data,
                method: Method = "empirical") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The information matrix in the free basis (module docstring), with the total score and
    the probabilities' Jacobian.

    Returns ``(info, score, jacobian)``: ``info`` ``(D, D)``, ``score`` ``(D,)`` (the gradient
    of the log-likelihood, zero at an interior maximum) and ``jacobian`` ``(T, D)``, ``dp /
    d beta`` for the ``T`` CPT entries laid end to end in node order
    (:mod:`lcbayes.inference.flat`). ``D = structure.n_parameters``; the free parameters are,
    node by node and row by row, ``ln(p_lk / p_l1)`` for ``k = 2..r``."""
    tables, data = _inputs(structure, params, data, method)
    return _information(structure, tables, data, method)


def _information(structure, tables, data, method):
    positions = _free_positions(structure)
    beta = jnp.asarray(_beta_at(structure, tables))
    patterns = jnp.asarray(data.patterns)
    counts = np.asarray(data.counts, dtype=np.float64)
    forward = positions.size <= data.n_patterns
    scores, jacobian = _scores(structure, beta, jnp.asarray(positions), patterns, forward)
    scores = np.asarray(scores)
    if method == "empirical":
        info = (scores * counts[:, None]).T @ scores
        score = counts @ scores
    else:
        hess, grad = _hessian(structure, beta, jnp.asarray(positions), patterns,
                              jnp.asarray(counts))
        info, score = -np.asarray(hess), np.asarray(grad)
    return (info + info.T) / 2, score, np.asarray(jacobian)


def covariance(structure: Structure, params: Mapping[str, Any], data,
               method: Method = "empirical", *, warn: bool = True) -> np.ndarray:
    """``(T, T)`` covariance of all CPT entries laid end to end in node order (each node's
    ``(q_i, r_i)`` table row by row, :mod:`lcbayes.inference.flat`): ``J I^+ J^T``; see
    :func:`standard_errors`."""
    tables, data = _inputs(structure, params, data, method)
    return _covariance(structure, tables, data, method, warn)


def _covariance(structure, tables, data, method, warn):
    info, score, jacobian = _information(structure, tables, data, method)
    inverse = ginv(info)
    if warn:
        _check(structure, tables, info, score, inverse, method)
    return jacobian @ inverse @ jacobian.T


def standard_errors(structure: Structure, params: Mapping[str, Any], data, *,
                    method: Method = "empirical", warn: bool = True
                    ) -> dict[str, np.ndarray]:
    """Standard errors of every CPT entry of a maximum-likelihood estimate.

    Args:
        structure: the model (latent class, HLC or DAG).
        params: the estimate ``{node: CPT}`` (an EM fit's ``params``).
        data: the data it was fitted to (a Dataset, a DataFrame or an array of codes); missing
            values are summed out.
        method: ``"empirical"`` (outer product of the per-row scores, poLCA's estimator) or
            ``"observed"`` (negative Hessian of the log-likelihood).
        warn: emit :class:`StandardErrorWarning` for boundary estimates, an estimate that is
            not a maximum, and (observed information) a saddle point.

    Returns:
        ``{node: array}`` of the shapes of ``params``: for a latent class model the class
        weights' standard errors (poLCA's ``P.se``) under the class node and the response
        probabilities' (``probs.se``) under each item. See the module docstring for the
        parameterisation (log-ratios to the first category), the pseudo-inverse and the
        boundary.
    """
    tables, data = _inputs(structure, params, data, method)
    cov = _covariance(structure, tables, data, method, warn)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return from_tables(structure, flat_tables.unflatten(se, structure.table_shapes))


def fit_standard_errors(fit, data, method: Method = "empirical", *, warn: bool = True
                        ) -> dict[str, np.ndarray]:
    """:func:`standard_errors` of an :class:`~lcbayes.EMResult` (``fit.structure``,
    ``fit.params``) on the data it was fitted to. An EM run that did not converge raises
    :class:`~lcbayes.errors.ArgumentError` (refit with a larger ``max_iter``); a MAP fit warns
    (these are standard errors of the likelihood, not of the posterior)."""
    if not getattr(fit, "converged", True):
        raise ArgumentError("standard errors need a converged EM fit: this one stopped after "
                            f"max_iter={fit.max_iter} iterations without meeting tol; refit "
                            "with a larger max_iter")
    if getattr(fit, "estimator", "ml") != "ml" and warn:
        warnings.warn("standard errors of a MAP estimate: these come from the likelihood's "
                      "information at the MAP estimate, not from the posterior",
                      StandardErrorWarning, stacklevel=2)
        warn = False  # the score is not zero at a MAP estimate; said already
    return standard_errors(fit.structure, fit.params, data, method=method, warn=warn)


# ---------------------------------------------------------------------------- checks
def boundary_entries(structure: Structure, params: Mapping[str, Any], *,
                     threshold: float = BOUNDARY) -> list[str]:
    """The CPT entries of ``params`` below ``threshold`` (on the boundary; an entry at 1 has
    its row's others at 0), as ``"node='category' | parent configuration"`` (e.g.
    ``"A=1 | class 2"``): the entries whose standard errors are not meaningful."""
    out = []
    for i, t in enumerate(to_tables(structure, params)):
        rows = config_labels(structure, i)
        out += [f"{structure.nodes[i]}={structure.labels[i][k]!r} | {rows[l]}"
                for l, k in np.argwhere(np.asarray(t) < threshold)]
    return out


def _check(structure, tables, info, score, inverse, method):
    problems = []
    statistic = float(score @ inverse @ score)
    if statistic > SCORE_TOLERANCE:
        problems.append(f"the estimate is not a maximum of the likelihood (score statistic "
                        f"g'I^+g = {statistic:.3g} > {SCORE_TOLERANCE}): EM did not converge, "
                        "or this is a MAP estimate; refit with a smaller tol")
    if method == "observed" and info.size:
        eigen = np.linalg.eigvalsh(info)
        if eigen[0] < -1e-6 * max(abs(eigen[-1]), 1.0):
            problems.append("the observed information has a negative eigenvalue "
                            f"({eigen[0]:.3g}): the estimate is a saddle point, not a maximum")
    boundary = boundary_entries(structure, from_tables(structure, tables))
    if boundary:     # one line with a count; lcb.boundary_entries lists them all
        shown = boundary[0] + (f" and {len(boundary) - 1} more" if len(boundary) > 1 else "")
        problems.append(f"{len(boundary)} estimated probabilit"
                        f"{'y is' if len(boundary) == 1 else 'ies are'} on the boundary "
                        f"(below {BOUNDARY:g}: {shown}; lcb.boundary_entries lists them): "
                        "their standard errors are not meaningful")
    for message in problems:
        warnings.warn(message, StandardErrorWarning, stacklevel=4)
