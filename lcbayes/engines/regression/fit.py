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
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ...encoding import encode_column
from ...errors import ArgumentError, ConvergenceWarning, DataError
from ...validation import check_choice, check_int, check_positive, fit_data, prng_key, seed_record
from ..run_record import check_batching, start_engine
from .cells import joint_log, make_cells, softmax, valid_mask
from .design import MAX_LEVELS, Covariates, covariate_design
from .lcr_em import LCRShape, pack, run_lcr, unpack
from .lcr_information import regression_errors
from .result import RegressionResult, tables_to_params

__all__ = ["check_route_options", "fit_regression", "resolve_covariates"]


def check_route_options(*, group, distal, init, unsupported: dict[str, bool]) -> None:
    """Refuse the options that ``em`` with covariates, a distal outcome or groups does not take:
    a latent class regression (this package) and a multiple-group model
    (:mod:`lcbayes.engines.groups`) are fitted by maximum likelihood with SQUAREM-accelerated
    EM."""
    refused = [k for k, v in unsupported.items() if v]
    what = "group" if group is not None else "covariates or distal"
    if refused:
        raise ArgumentError(f"{', '.join(refused)} cannot be given with {what}: the model is "
                            "fitted by maximum likelihood with SQUAREM-accelerated EM; leave "
                            "them out")
    if group is not None and distal is not None:
        raise ArgumentError("distal cannot be given with group: fit the multiple-group model, "
                            "then relate its classes to the outcome (lcb.three_step)")
    if group is not None and init is not None:
        raise ArgumentError("init cannot be given with group: the restarts start at random")
    if init is not None and not isinstance(init, RegressionResult):
        raise ArgumentError("init must be a RegressionResult of the same model (a fit "
                            f"with covariates), got {type(init).__name__}")



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


DistalType = Literal["auto", "categorical", "continuous"]


def resolve_distal(structure, data, distal, n_rows: int, distal_type: DistalType = "auto",
                   name: str = "distal") -> Distal:
    """The distal outcome: a DataFrame (or Series) of one column, or a column name of ``data``
    when that is a DataFrame. ``distal_type="auto"``: numbers are continuous (Gaussian per
    class), text, booleans and pandas ``Categorical`` categorical."""
    check_choice(distal_type, "distal_type", ("auto", "categorical", "continuous"))
    if isinstance(distal, str):
        if not isinstance(data, pd.DataFrame) or distal not in data.columns:
            raise DataError(f"{name} {distal!r} is not a column of data; pass distal=<one "
                            "column DataFrame> or a column name of a DataFrame data")
        series = data[distal]
    elif isinstance(distal, pd.Series):
        series = distal
    elif isinstance(distal, pd.DataFrame) and distal.shape[1] == 1:
        series = distal.iloc[:, 0]
    else:
        raise ArgumentError(f"{name} must be one column: a column name of data, a Series or a "
                            f"one-column DataFrame; got {type(distal).__name__}"
                            + (f" with {distal.shape[1]} columns"
                               if isinstance(distal, pd.DataFrame) else ""))
    column = str(series.name)
    if column in structure.observed_names:
        raise DataError(f"{name} {column!r} is also an indicator of the model; a column is "
                        "one or the other (leave it out of the items or pick another outcome)")
    if len(series) != n_rows:
        raise DataError(f"{name} has {len(series)} rows but data has {n_rows}; give one "
                        "outcome value per data row, in order")
    numeric = (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
               and not isinstance(series.dtype, pd.CategoricalDtype))
    continuous = numeric if distal_type == "auto" else distal_type == "continuous"
    if continuous:
        if not numeric:
            raise DataError(f"{name} {column!r} is not numeric, so it cannot be continuous")
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isinf(values).any():
            raise DataError(f"{name} {column!r} has an infinite value")
        if np.isnan(values).all():
            raise DataError(f"{name} {column!r} has no observed value")
        return Distal(column, "continuous", values, ())
    codes, labels = encode_column(series, column, MAX_LEVELS)
    return Distal(column, "categorical", codes.astype(np.int64), tuple(labels))


def fit_regression(structure, data, covariates, *, distal=None,
                   distal_type: DistalType = "auto", restarts: int, seed, tol: float,
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
    cov = (Covariates.intercept_only(data.n_rows) if covariates is None else
           resolve_covariates(structure, frame, covariates, data.n_rows, stacklevel=3))
    outcome = (None if distal is None
               else resolve_distal(structure, frame, distal, data.n_rows, distal_type))
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    if standard_errors is not None:
        check_choice(standard_errors, "standard_errors", ("empirical", "observed"))
    k = structure.n_classes
    codes, cards = data.codes[cov.kept], data.cardinalities
    if outcome is not None and outcome.kind == "categorical":  # one more class-dependent column
        codes = np.concatenate([codes, outcome.values[cov.kept, None]], axis=1)
        cards = (*cards, len(outcome.labels))
    gaussian = outcome is not None and outcome.kind == "continuous"
    shape = LCRShape(len(cards), k, max(cards), cov.n_design,
                     tuple(map(tuple, valid_mask(cards).tolist())), gaussian)
    cells, index = make_cells(codes, cov.matrix[cov.kept], cards,
                              outcome.values[cov.kept] if outcome is not None and gaussian
                              else None, pad=True)
    n_used = int(cov.kept.sum())
    init_x = None if init is None else _packed(init, shape)
    keys = jax.random.split(prng_key(seed), max(restarts, 1))[:restarts]
    runs = run_lcr(cells, shape, keys, init_x, tol * max(n_used, 1), max_iter,
                   check_batching(batch_size, restarts + (init is not None)))
    runs = jax.tree_util.tree_map(np.asarray, runs)
    best = int(np.nanargmax(runs.loglik))
    log_items, coef, gauss = unpack(jnp.asarray(runs.x[best]), shape)
    # classes by decreasing mean share, coefficients against the new class 1
    prev = softmax(np.asarray(cells.design) @ np.asarray(coef))
    shares = np.asarray(cells.counts) @ prev / max(n_used, 1)
    order = np.argsort(-shares, kind="stable")
    log_items, shares = log_items[:, order], shares[order]
    coef = coef[:, order] - coef[:, order[:1]]
    gauss = None if gauss is None else (gauss[0][order], gauss[1][order])
    post = np.asarray(jax.nn.softmax(joint_log(log_items, coef, cells, gauss), axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -float(np.asarray(cells.counts) @ np.nansum(post * np.log(post), axis=1))
    j = len(structure.observed_nodes)
    items = np.exp(np.asarray(log_items))
    params = tables_to_params(structure, shares, items[:j])
    errors, cov_matrix, statistic, e = None, None, None, None
    if standard_errors is not None:
        e = regression_errors(log_items, coef, gauss, cells, shape, standard_errors)
        errors = {"coef": e.coef,
                  "params": tables_to_params(structure, e.shares, e.items[:j])}
        cov_matrix, statistic = e.coef_cov, e.score_statistic
    coef_array = np.asarray(coef)
    n_iter = int(runs.n_iter[best])
    result = RegressionResult(
        structure=structure, covariates=cov, params=params, coef=coef_array,
        loglik=float(runs.loglik[best]), restart_logliks=runs.loglik,
        restart_n_iter=runs.n_iter, restart_converged=runs.converged, n_iter=n_iter,
        converged=bool(runs.converged[best]), history=runs.history[best][:n_iter],
        n_rows=data.n_rows, n_used_rows=n_used,
        n_observed_rows=int((data.codes[cov.kept] >= 0).any(axis=1).sum()),
        n_cells=int(np.count_nonzero(np.asarray(cells.counts))),
        posteriors=post[index], entropy=entropy, standard_errors=errors,
        coef_cov=cov_matrix, score_statistic=statistic, se_method=standard_errors,
        seconds=time.perf_counter() - started,
        seed=seed_record(seed),
        restarts=restarts + (init is not None), tol=tol, max_iter=max_iter,
        distal=None if outcome is None else _distal_estimate(outcome, items, gauss, e))
    if not result.converged:
        warnings.warn(ConvergenceWarning(
            f"EM with covariates stopped at max_iter={max_iter} before converging (tol={tol:g} "
            "per row): raise max_iter"), stacklevel=3)
    return result


class Distal(NamedTuple):
    """A distal outcome's column, kind (``categorical`` or ``continuous``), values (codes, -1
    missing; or floats, NaN missing) and category labels."""

    name: str
    kind: str
    values: np.ndarray
    labels: tuple


def _packed(init: RegressionResult, shape: LCRShape) -> jax.Array:
    """The EM state of a previous fit (a start)."""
    s = init.structure
    tables = [np.asarray(init.params[s.nodes[i]]) for i in s.observed_nodes]
    gauss = None
    if init.distal is not None and init.distal["kind"] == "categorical":
        tables.append(np.asarray(init.distal["probabilities"]))
    elif init.distal is not None:
        gauss = (jnp.asarray(init.distal["means"]), jnp.log(jnp.asarray(init.distal["sds"])))
    if len(tables) != shape.n_items or (gauss is None) == shape.gaussian:
        raise ArgumentError("init is a fit of another model (its items or distal outcome "
                            "differ from these)")
    items = np.stack([np.pad(t, ((0, 0), (0, shape.n_categories - t.shape[1]))) for t in tables])
    return pack(jnp.where(shape.mask[:, None, :], jnp.log(jnp.maximum(jnp.asarray(items), 1e-300)),
                          0.0), jnp.asarray(init.coef), gauss)


def _distal_estimate(outcome: Distal, items: np.ndarray, gauss, errors) -> dict:
    """The distal outcome's estimate (and standard errors) as :attr:`RegressionResult.distal`."""
    if outcome.kind == "categorical":
        c = len(outcome.labels)
        return {"name": outcome.name, "kind": "categorical", "labels": list(outcome.labels),
                "probabilities": items[-1, :, :c],
                "se": None if errors is None else errors.items[-1, :, :c]}
    return {"name": outcome.name, "kind": "continuous", "means": np.asarray(gauss[0]),
            "sds": np.exp(np.asarray(gauss[1])),
            "se": None if errors is None else {"means": errors.gauss[0], "sds": errors.gauss[1]},
            "mean_cov": None if errors is None else errors.mean_cov}
