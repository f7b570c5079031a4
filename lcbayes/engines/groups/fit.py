"""Fitting a multiple-group latent class model: :func:`lcbayes.em` with ``group=`` lands here.

The rows are read (:func:`.layout.group_rows`: rows without a group or with every item missing
left out, with a warning), the invariance structure expressed as a latent class model of
expanded items (:class:`.layout.GroupLayout`), and that model fitted as a latent class
regression whose membership design holds the group's indicators (so ``P(class | group)`` is
free in every group) and any covariates on top (glca's level-1 covariates: group-specific
intercepts, common slopes); the EM, restarts, standard errors and class order are those of
:mod:`lcbayes.engines.regression`.

**Label alignment.** With no invariant item and no covariate nothing ties class ``r`` of one
group to class ``r`` of another: the likelihood is the same under any permutation of one
group's classes. The classes of every group are then matched to those of the largest group
by their item profiles (the assignment that minimises the summed squared differences of the
item probabilities, Hungarian algorithm), and the estimate refitted from the aligned start
for its standard errors; the result says so (:attr:`GroupResult.aligned_to`).

**Starts.** Where items are free, the random restarts have to find every group's own maximum at
once, which grows unlikely with the number of groups (with no invariance the model is one latent
class model per group, and a restart reaches the joint maximum only where it reaches each
group's). A further start is therefore built from *separate fits of each group* (the group's
rows alone, ``5 * restarts`` restarts each up to 50, but at least ``restarts``): their classes
matched to the largest group's by item profile, their item probabilities taken as the free
items' and (weighted by the groups' rows) as the invariant items', their prevalences as the
membership intercepts. With no invariance and no covariate that start is the joint maximum where
each group's fit found its own. The restarts that reach the best log-likelihood (to
:data:`lcbayes.engines.em_result.BEST_TOLERANCE`, relative) are counted, the separate start
among them, and a fit whose best was reached by one start only is warned about.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from ...constructors import latent_class
from ...data import Dataset
from ...errors import ArgumentError, DataError
from ...structure import Structure
from ..em_result import best_count
from ..regression.design import Covariates, covariate_design
from ..regression.fit import fit_regression
from ..regression.result import RegressionResult
from .layout import GroupLayout, Invariance, group_rows, resolve_invariance
from .result import GroupResult
from .saturated import saturated_fit

__all__ = ["fit_groups", "fit_layout"]


def _covariate_columns(covariates, data) -> tuple[list[str], pd.DataFrame | None]:
    """The covariate columns and the frame holding them (``None``: no covariates)."""
    if covariates is None:
        return [], None
    if isinstance(covariates, str):
        covariates = [covariates]
    if isinstance(covariates, pd.DataFrame):
        return [str(c) for c in covariates.columns], covariates.reset_index(drop=True)
    if isinstance(covariates, Sequence) and all(isinstance(c, str) for c in covariates):
        if not isinstance(data, pd.DataFrame):
            raise ArgumentError("covariates names columns, so data must be a DataFrame that "
                                "has them; or pass covariates=<DataFrame of the columns>")
        return list(covariates), data.reset_index(drop=True)
    raise ArgumentError("covariates must be column name(s) of data or a DataFrame of covariate "
                        f"columns, got {type(covariates).__name__}")


def fit_groups(structure: Structure, data, group, *, invariance: Invariance = "full",
               covariates=None, restarts: int, seed, tol: float, max_iter: int,
               batch_size: int | None, standard_errors) -> GroupResult:
    """EM for a multiple-group latent class model (module docstring; arguments as
    :func:`lcbayes.em`)."""
    if structure.kind != "latent_class":
        raise ArgumentError("group= needs a latent class structure (lcb.latent_class), got a "
                            f"{structure.kind} structure")
    rows = group_rows(structure, data, group, stacklevel=3)
    name = rows.name
    items = structure.observed_names
    free = resolve_invariance(invariance, items)
    layout = GroupLayout(name, rows.levels, tuple(items), rows.items.labels, free)
    columns, frame = _covariate_columns(covariates, data)
    if name in columns:
        raise ArgumentError(f"{name!r} is the group; leave it out of covariates (every group "
                            "has its own prevalences already)")
    if frame is not None and len(frame) != len(rows.kept):
        raise DataError(f"covariates has {len(frame)} rows but data has {len(rows.kept)}; give "
                        "one covariate row per data row, in order")
    design = pd.DataFrame({name: pd.Categorical(np.asarray(rows.levels, dtype=object)[rows.group],
                                                categories=list(rows.levels))})
    if frame is not None:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise DataError(f"covariates {missing} are not columns of data")
        design = pd.concat([design, frame.loc[rows.kept, columns].reset_index(drop=True)],
                           axis=1)
    cov = covariate_design(design, [name, *columns], name="covariates", stacklevel=3)
    return fit_layout(layout, rows.items, rows.group, cov, n_rows=len(rows.kept),
                      class_name=structure.nodes[structure.root],
                      n_classes=int(structure.n_classes or 1),
                      restarts=restarts, seed=seed, tol=tol, max_iter=max_iter,
                      batch_size=batch_size, standard_errors=standard_errors)


def _warn_small_groups(layout: GroupLayout, group: np.ndarray, k: int) -> None:
    """A warning naming each group with fewer rows than its own parameters."""
    cards = dict(zip(layout.items, (len(lab) for lab in layout.item_labels), strict=True))
    own = (k - 1) + k * sum(cards[i] - 1 for i in layout.free)
    counts = np.bincount(group, minlength=len(layout.levels))
    small = [f"{layout.levels[g]!r} ({counts[g]} rows)" for g in range(len(counts))
             if counts[g] < own]
    if small:
        warnings.warn(f"group(s) {', '.join(small)} of {layout.group!r} have fewer rows than "
                      f"their own {own} parameters ({layout.invariance} invariance): their "
                      "estimates rest on the prior shape of the likelihood; pool groups or "
                      "free fewer items", stacklevel=5)


def fit_layout(layout: GroupLayout, items: Dataset, group: np.ndarray, cov: Covariates, *,
               n_rows: int, class_name: str, n_classes: int, restarts: int, seed, tol: float,
               max_iter: int, batch_size: int | None, standard_errors) -> GroupResult:
    """The fit of one invariance structure to rows already read (``items`` with group codes
    ``group`` and the membership design ``cov`` of the same rows)."""
    _warn_small_groups(layout, group[cov.kept], n_classes)
    expanded = layout.expand(items, group)
    model = latent_class(expanded, n_classes, name=class_name)
    align = len(layout.free) == len(layout.items) and cov.names == (cov.names[0], *(
        f"{layout.group}{level}" for level in layout.levels[1:]))
    fit = fit_regression(model, expanded, cov, restarts=restarts, seed=seed, init=None,
                         standard_errors=None if align else standard_errors, tol=tol,
                         max_iter=max_iter, batch_size=batch_size)
    logliks = fit.restart_logliks
    separate = (_separate_start(fit, layout, items, group,
                                cov, n_classes, restarts, seed, tol, max_iter)
                if layout.free and len(layout.levels) > 1 else None)
    if separate is not None:
        start = separate[0]
        again = fit_regression(model, expanded, cov, restarts=0, seed=seed, init=start,
                               standard_errors=None if align else standard_errors, tol=tol,
                               max_iter=max_iter, batch_size=batch_size)
        logliks = np.append(logliks, again.loglik)
        if again.loglik > fit.loglik:
            fit = again
    fit = replace(fit, restart_logliks=logliks, restarts=restarts,
                  restart_n_iter=np.resize(fit.restart_n_iter, len(logliks)),
                  restart_converged=np.resize(fit.restart_converged, len(logliks)))
    _warn_unique_best(fit, separate)
    reference = None
    if align:
        counts = np.bincount(group[cov.kept], minlength=len(layout.levels))
        reference = layout.levels[int(np.argmax(counts))]
        start = _aligned(fit, layout, reference)
        fit = fit_regression(model, expanded, cov, restarts=0, seed=seed, init=start,
                             standard_errors=standard_errors, tol=tol, max_iter=max_iter,
                             batch_size=batch_size)
        fit = replace(fit, restart_logliks=start.restart_logliks,
                      restart_n_iter=start.restart_n_iter,
                      restart_converged=start.restart_converged, restarts=start.restarts,
                      seconds=start.seconds + fit.seconds)
    used = cov.kept
    saturated, strata = saturated_fit(items.codes[used], items.cardinalities, group[used],
                                      cov.matrix[used])
    return GroupResult(layout=layout, fit=fit, row_groups=group[used],
                       saturated_loglik=saturated, n_strata=strata, n_rows=n_rows,
                       aligned_to=reference)


def _separate_start(fit: RegressionResult, layout: GroupLayout, items: Dataset,
                    group: np.ndarray, cov: Covariates, k: int, restarts: int, seed,
                    tol: float, max_iter: int) -> tuple[RegressionResult, tuple] | None:
    """The start from separate fits of each group (module docstring), as a
    :class:`RegressionResult` like ``fit``; and ``(fewest restarts that reached a group's
    own best, that group, the restarts of each group)``. ``None`` where a group cannot be
    fitted alone."""
    from ...errors import LcbayesError

    rows = cov.kept
    own, shares, weights = [], [], []
    alone_restarts = max(restarts, min(5 * restarts, 50), 1)
    weakest: tuple[int, Hashable, int] = (alone_restarts, None, alone_restarts)
    for g, level in enumerate(layout.levels):
        mask = rows & (group == g)
        sub = Dataset.from_codes(items.codes[mask], columns=items.columns, labels=items.labels)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                alone = fit_regression(latent_class(sub, k), sub, None,
                                       restarts=alone_restarts, seed=seed, tol=tol,
                                       max_iter=max_iter, batch_size=None, init=None,
                                       standard_errors=None)   # no covariate: one LC model
        except LcbayesError:
            return None
        reached = best_count(alone.restart_logliks, alone.loglik)
        if reached < weakest[0]:
            weakest = (reached, level, alone_restarts)
        own.append(np.concatenate([np.asarray(alone.params[i]) for i in layout.items], axis=1))
        shares.append(np.asarray(alone.params[alone.structure.nodes[alone.structure.root]]))
        weights.append(float(mask.sum()))
    reference = int(np.argmax(weights))
    for g in range(len(own)):    # classes matched to the largest group's by item profile
        order = _profile_order(own[reference], own[g])
        own[g], shares[g] = own[g][order], shares[g][order]
    cards = [len(lab) for lab in layout.item_labels]
    bounds = np.cumsum([0, *cards])
    pooled = np.tensordot(np.asarray(weights) / sum(weights), np.stack(own), axes=1)
    params = {fit.structure.nodes[fit.structure.root]: np.tensordot(
        np.asarray(weights) / sum(weights), np.stack(shares), axes=1)}
    for column in layout.columns:
        item, level = layout.source(column)
        j = layout.items.index(item)
        table = pooled if level is None else own[layout.levels.index(level)]
        params[column] = table[:, bounds[j]:bounds[j + 1]]
    logs = np.log(np.maximum(np.stack(shares), 1e-300))
    logs -= logs[:, :1]
    coef = np.zeros((len(cov.names), k))
    coef[0] = logs[0]
    coef[1:len(layout.levels)] = logs[1:] - logs[0]     # the group indicators follow
    return replace(fit, params=params, coef=coef), weakest


def _warn_unique_best(fit: RegressionResult, separate) -> None:
    """A warning where one start alone reached the best log-likelihood, or where the
    separate start did and one group's own best was reached by one of its restarts only
    (module docstring)."""
    reached = best_count(fit.restart_logliks, fit.loglik)
    if separate is not None and best_count(fit.restart_logliks[-1:], fit.loglik):
        weakest, level, alone = separate[1]
        if weakest > 1 or alone <= 1:
            return
        warnings.warn(f"the separate fit of group {level!r} reached its best log-likelihood "
                      f"in one of its {alone} restarts only: the maximum may not be the "
                      "global one; raise restarts", stacklevel=6)
    elif reached == 1 and len(fit.restart_logliks) > 1:
        warnings.warn(f"one of {len(fit.restart_logliks)} starts alone reached the best "
                      f"log-likelihood {fit.loglik:.4f}: the maximum may not be the global "
                      "one; raise restarts", stacklevel=6)


def _profile_order(target: np.ndarray, own: np.ndarray) -> np.ndarray:
    """The order of ``own``'s classes (rows: item profiles) that matches ``target``'s: the
    assignment of least summed squared difference (Hungarian algorithm)."""
    from scipy.optimize import linear_sum_assignment

    cost = ((target[:, None, :] - own[None, :, :]) ** 2).sum(axis=2)
    return linear_sum_assignment(cost)[1]


def _aligned(fit: RegressionResult, layout: GroupLayout, reference) -> RegressionResult:
    """``fit`` with every group's classes permuted to match ``reference``'s by item profile
    (module docstring)."""
    k = int(fit.structure.n_classes or 1)
    design = np.eye(len(layout.levels))
    design[:, 0] = 1.0                       # intercept, then one indicator per later level
    prevalence = np.exp(design @ fit.coef)
    prevalence /= prevalence.sum(axis=1, keepdims=True)

    def profile(level):
        return np.concatenate([fit.params[layout.column(i, level)] for i in layout.items],
                              axis=1)

    target = profile(reference)
    params = dict(fit.params)
    for g, level in enumerate(layout.levels):
        order = _profile_order(target, profile(level))
        for item in layout.items:
            params[layout.column(item, level)] = fit.params[layout.column(item, level)][order]
        prevalence[g] = prevalence[g][order]
    logs = np.log(np.maximum(prevalence, 1e-300))
    logs -= logs[:, :1]
    coef = np.vstack([logs[0], logs[1:] - logs[0]])
    return replace(fit, params=params, coef=coef.reshape(len(layout.levels), k))
