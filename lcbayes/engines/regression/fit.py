"""Fitting a latent class regression: :func:`lcbayes.em` with ``covariates=`` lands here.

The arguments are checked (a latent class structure, data in their rows' order, covariates
that are not indicators and match the rows), the rows with every covariate compressed into
cells (:mod:`.cells`), EM run from every start (:mod:`.lcr_em`), the best restart's classes
ordered by decreasing mean share (poLCA's order) with the coefficients re-referenced to the new
class 1, and the standard errors computed when asked (:mod:`.lcr_information`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ...errors import ArgumentError, ConvergenceWarning, DataError
from ...validation import check_choice, check_int, check_positive, fit_data, prng_key, seed_record
from ..run_record import check_batching, start_engine
from .cells import make_cells, softmax, valid_mask
from .design import Covariates, covariate_design
from .lcr_em import LCRShape, pack, run_lcr, unpack
from .lcr_information import regression_errors
from .result import RegressionResult, tables_to_params

__all__ = ["fit_regression", "resolve_covariates"]


def resolve_covariates(structure, data, covariates, n_rows: int, name: str = "covariates",
                       stacklevel: int = 2) -> Covariates:
    """The design of ``covariates``: a :class:`Covariates`, a DataFrame of covariate columns
    (one row per data row, ``n_rows`` of them), or column name(s) of ``data`` when that is
    a DataFrame.
    ``stacklevel``: of the warning about rows left out, as seen from the caller."""
    if isinstance(covariates, str):
        covariates = [covariates]
    if isinstance(covariates, Covariates):
        columns = list(covariates.columns)
    elif isinstance(covariates, pd.DataFrame):
        columns = [str(c) for c in covariates.columns]
    elif isinstance(covariates, Sequence) and all(isinstance(c, str) for c in covariates):
        columns = list(covariates)
        if not isinstance(data, pd.DataFrame):
            raise ArgumentError(f"{name} names columns, so data must be a DataFrame that has "
                                "them; or pass covariates=<DataFrame of the covariate columns>")
    else:
        raise ArgumentError(f"{name} must be a DataFrame of covariate columns, column name(s) "
                            f"of data, or lcbayes Covariates; got {type(covariates).__name__}")
    both = [c for c in columns if c in set(structure.observed_names)]
    if both:
        raise DataError(f"{name}: {both} are indicators of the model as well as covariates; a "
                        "column is one or the other")
    given = (covariates.matrix.shape[0] if isinstance(covariates, Covariates)
             else len(covariates) if isinstance(covariates, pd.DataFrame) else n_rows)
    if given != n_rows:
        raise DataError(f"{name} has {given} rows but data has {n_rows}; give one covariate "
                        "row per data row, in order")
    if isinstance(covariates, Covariates):
        return covariates
    return covariate_design(covariates if isinstance(covariates, pd.DataFrame) else data,
                            columns, name=name, stacklevel=stacklevel + 1)


def fit_regression(structure, data, covariates, *, restarts: int, seed, tol: float,
                   max_iter: int, batch_size: int | None, init: RegressionResult | None,
                   standard_errors: Literal["empirical", "observed"] | None
                   ) -> RegressionResult:
    """EM for the latent class regression (module docstring; arguments as
    :func:`lcbayes.em`)."""
    started, seed = start_engine(structure, seed)
    if structure.kind != "latent_class":
        raise ArgumentError("covariates need a latent class structure (lcb.latent_class): "
                            f"the membership model is that of its one class node; got a "
                            f"{structure.kind} structure")
    frame, data = data, fit_data(structure, data)
    if not data.has_row_order:
        raise DataError("data are patterns with counts (no row order), so covariate rows "
                        "cannot be matched to them; build the Dataset from its rows")
    cov = resolve_covariates(structure, frame, covariates, data.n_rows, stacklevel=3)
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    if standard_errors is not None:
        check_choice(standard_errors, "standard_errors", ("empirical", "observed"))
    k = structure.n_classes
    cards = data.cardinalities
    shape = LCRShape(len(cards), k, max(cards), cov.n_design,
                     tuple(map(tuple, valid_mask(cards).tolist())))
    cells, index = make_cells(data.codes[cov.kept], cov.matrix[cov.kept], cards)
    n_used = int(cov.kept.sum())
    init_x = None
    if init is not None:
        items = np.stack([np.pad(np.asarray(init.params[structure.nodes[i]]),
                                 ((0, 0), (0, shape.n_categories - structure.cardinalities[i])))
                          for i in structure.observed_nodes])
        init_x = pack(jnp.where(shape.mask[:, None, :],
                                jnp.log(jnp.maximum(jnp.asarray(items), 1e-300)), 0.0),
                      jnp.asarray(init.coef))
    keys = jax.random.split(prng_key(seed), max(restarts, 1))[:restarts]
    runs = run_lcr(cells, shape, keys, init_x, tol * max(n_used, 1), max_iter,
                   check_batching(batch_size, restarts + (init is not None)))
    runs = jax.tree_util.tree_map(np.asarray, runs)
    best = int(np.nanargmax(runs.loglik))
    log_items, coef = (np.asarray(a) for a in unpack(jnp.asarray(runs.x[best]), shape))
    # classes by decreasing mean share, coefficients against the new class 1
    prev = softmax(np.asarray(cells.design) @ coef)
    shares = np.asarray(cells.counts) @ prev / max(n_used, 1)
    order = np.argsort(-shares, kind="stable")
    log_items, shares = log_items[:, order], shares[order]
    coef = coef[:, order] - coef[:, order[:1]]
    joint = np.log(np.maximum(softmax(np.asarray(cells.design) @ coef), 1e-300)) + np.einsum(
        "ujc,jkc->uk", np.asarray(cells.onehot), log_items)
    post = softmax(joint)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -float(np.asarray(cells.counts) @ np.nansum(post * np.log(post), axis=1))
    params = tables_to_params(structure, shares, np.exp(log_items))
    errors, cov_matrix, statistic = None, None, None
    if standard_errors is not None:
        e = regression_errors(jnp.asarray(log_items), jnp.asarray(coef), cells, shape,
                              standard_errors)
        errors = {"coef": e.coef,
                  "params": tables_to_params(structure, e.shares, e.items)}
        cov_matrix, statistic = e.coef_cov, e.score_statistic
    n_iter = int(runs.n_iter[best])
    result = RegressionResult(
        structure=structure, covariates=cov, params=params, coef=coef,
        loglik=float(runs.loglik[best]), restart_logliks=runs.loglik,
        restart_n_iter=runs.n_iter, restart_converged=runs.converged, n_iter=n_iter,
        converged=bool(runs.converged[best]), history=runs.history[best][:n_iter],
        n_rows=data.n_rows, n_used_rows=n_used,
        n_observed_rows=int((data.codes[cov.kept] >= 0).any(axis=1).sum()),
        n_cells=int(cells.counts.shape[0]),
        posteriors=post[index], entropy=entropy, standard_errors=errors,
        coef_cov=cov_matrix, score_statistic=statistic, se_method=standard_errors,
        seconds=time.perf_counter() - started,
        seed=seed_record(seed),
        restarts=restarts + (init is not None), tol=tol, max_iter=max_iter)
    if not result.converged:
        warnings.warn(ConvergenceWarning(
            f"EM with covariates stopped at max_iter={max_iter} before converging (tol={tol:g} "
            "per row): raise max_iter"), stacklevel=3)
    return result
