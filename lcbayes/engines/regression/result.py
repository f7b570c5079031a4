"""The result of a latent class regression (:func:`lcbayes.em` with ``covariates=``).

Holds the estimate (item tables, membership coefficients ``beta``, the mean class shares ``P``
that poLCA prints), its standard errors, every restart's fit, the class posteriors of the rows
used and the scores; prints poLCA's layout with a coefficient table (estimate, standard
error, Wald ``z``, two-sided ``p``, odds ratio ``exp(beta)``), predicts class memberships of new
rows and simulates data from the fitted model; ``to_dict``/``from_dict`` round-trip it through
JSON.

Example::

    fit = lcb.em(lcb.latent_class(data, 2), data, covariates=frame[["GPA"]], seed=0,
                 standard_errors="empirical")
    print(fit.summary())
    fit.coefficients()                         # the coefficient table as a DataFrame
    fit.predict_proba(new_rows, covariates=new_rows[["GPA"]])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...encoding import MISSING
from ...params import from_tables
from ...render import json_value, plural, record_from_dict
from ...structure import Structure
from ...validation import data_for, numpy_rng
from ..em_result import PenalisedScores, best_count
from ..run_record import EstimateRecord, arrays_from_json
from .cells import softmax
from .design import Covariates

__all__ = ["RegressionResult", "tables_to_params"]


@dataclass(frozen=True, repr=False)
class RegressionResult(PenalisedScores, EstimateRecord):
    """A latent class regression fit (module docstring).

    Attributes:
        structure: the latent class model (its class node's table is :attr:`class_weights`,
            the mean of ``P(class | x)`` over the rows used, poLCA's ``P``).
        covariates: the membership design (columns, levels, design names).
        params: ``{node: CPT}``: the mean class shares and the item tables.
        coef: ``(n_design, K)`` coefficients ``beta``; column 1 (the reference class) is 0.
        loglik: the log-likelihood of the rows used.
        restart_logliks, restart_n_iter, restart_converged: per restart.
        n_iter, converged, history: the best restart's.
        n_rows: rows given; n_used_rows: rows with every covariate (the fit's, poLCA's
            ``N``); n_observed_rows: those with an observed item too (the BIC's ``N``);
            n_cells: unique (pattern, covariate) cells.
        posteriors: ``(n_used_rows, K)`` class posteriors ``P(class | y, x)`` of the rows used.
        entropy: the posteriors' entropy (for ICL).
        standard_errors: ``{"coef": (P, K), "params": {node: CPT-shaped}}`` or ``None``;
            coef_cov: the free coefficients' covariance (row-major ``(P, K - 1)`` order).
        score_statistic: ``g^T I^+ g`` at the estimate (about 0 at a maximum).
        se_method: ``"empirical"`` or ``"observed"`` (``None``: no standard errors).
        seconds, seed, restarts, tol, max_iter: the run.
        distal: a distal outcome fitted in the same step (a class-dependent variable reported
            apart from the indicators), or ``None``: ``{"name", "kind": "categorical",
            "labels", "probabilities" (K, C), "se"}`` or ``{"name", "kind": "continuous",
            "means" (K,), "sds" (K,), "se": {"means", "sds"}, "mean_cov" (K, K)}``;
            :meth:`distal_table` tabulates it.
    """

    covariates: Covariates
    params: dict[str, np.ndarray]
    coef: np.ndarray
    loglik: float
    restart_logliks: np.ndarray
    restart_n_iter: np.ndarray
    restart_converged: np.ndarray
    n_iter: int
    converged: bool
    history: np.ndarray
    n_rows: int
    n_used_rows: int
    n_observed_rows: int
    n_cells: int
    posteriors: np.ndarray
    entropy: float
    standard_errors: dict | None
    coef_cov: np.ndarray | None
    score_statistic: float | None
    se_method: str | None
    seconds: float
    seed: int | tuple[int, ...]
    restarts: int
    tol: float
    max_iter: int
    distal: dict | None = None

    # ------------------------------------------------------------------ sizes and scores
    def _distal_categories(self) -> int:
        return len(self.distal["labels"]) if self.distal and "labels" in self.distal else 1

    @property
    def n_parameters(self) -> int:
        """``K sum_j (r_j - 1) + P (K - 1)`` (poLCA's ``npar``), plus ``K (C - 1)`` for a
        categorical distal outcome or ``2 K`` for a continuous one."""
        k = self.structure.n_classes or 1
        items = sum(self.structure.cardinalities[i] - 1 for i in self.structure.observed_nodes)
        extra = 0 if self.distal is None else (
            2 if self.distal["kind"] == "continuous" else self._distal_categories() - 1)
        return k * (items + extra) + self.coef.shape[0] * (k - 1)

    @property
    def resid_df(self) -> int | None:
        """``min(N, cells - 1) - n_parameters`` with ``cells = prod_j r_j`` over the
        indicators (and a categorical distal outcome): poLCA's ``resid.df``; ``None`` with a
        continuous outcome (no finite table)."""
        if self.distal is not None and self.distal["kind"] == "continuous":
            return None
        cells = math.prod(self.structure.cardinalities[i] for i in self.structure.observed_nodes)
        return min(self.n_used_rows, cells * self._distal_categories() - 1) - self.n_parameters

    @property
    def estimate(self) -> dict[str, np.ndarray]:
        return self.params

    # ------------------------------------------------------------------ coefficients
    def coefficients(self) -> pd.DataFrame:
        """The coefficient table: one row per class ``2..K`` and design column, with
        ``estimate``, ``se``, ``z``, ``p`` (two-sided Wald) and ``odds_ratio`` ``exp(beta)``
        (the odds of that class against class 1 per unit of the covariate)."""
        from scipy import stats  # on use: printing a result needs no SciPy

        k = self.coef.shape[1]
        rows = []
        for r in range(1, k):
            for d, term in enumerate(self.covariates.names):
                est = float(self.coef[d, r])
                se = (math.nan if self.standard_errors is None
                      else float(self.standard_errors["coef"][d, r]))
                z = est / se if se > 0 else math.nan
                rows.append({"class": f"class {r + 1} vs class 1", "term": term,
                             "estimate": est, "se": se, "z": z,
                             "p": float(2 * stats.norm.sf(abs(z))) if math.isfinite(z)
                             else math.nan, "odds_ratio": math.exp(est)})
        return pd.DataFrame(rows, columns=["class", "term", "estimate", "se", "z", "p",
                                           "odds_ratio"])

    def distal_table(self) -> pd.DataFrame:
        """The distal outcome by class: for a continuous one ``mean``, ``se``, ``sd``,
        ``sd_se`` and the Wald test of equal means (``wald``, ``df``, ``p``: the same in every
        row; ``W = (C mu)' (C V C')^-1 (C mu)``, ``C`` the contrasts with class 1, ``V`` the
        means' covariance); for a categorical one ``category``, ``probability``, ``se``.
        Standard errors need ``standard_errors=`` in the fit (else NaN)."""
        if self.distal is None:
            raise ValueError("this fit has no distal outcome (em(..., distal=...))")
        d, k = self.distal, self.coef.shape[1]
        classes = [f"class {r + 1}" for r in range(k)]
        if d["kind"] == "categorical":
            probs = np.asarray(d["probabilities"])
            se = np.full_like(probs, np.nan) if d["se"] is None else np.asarray(d["se"])
            return pd.DataFrame([{"class": classes[r], "category": lab,
                                  "probability": probs[r, c], "se": se[r, c]}
                                 for r in range(k) for c, lab in enumerate(d["labels"])])
        means, sds = np.asarray(d["means"]), np.asarray(d["sds"])
        nan = np.full(k, np.nan)
        errors = {"means": nan, "sds": nan} if d["se"] is None else d["se"]
        wald = df = p = math.nan
        if d.get("mean_cov") is not None and k > 1:
            contrast = np.concatenate([-np.ones((k - 1, 1)), np.eye(k - 1)], axis=1)
            diff = contrast @ means
            v = contrast @ np.asarray(d["mean_cov"]) @ contrast.T
            wald, df = float(diff @ np.linalg.solve(v, diff)), k - 1
            from scipy import stats

            p = float(stats.chi2.sf(wald, df))
        return pd.DataFrame({"class": classes, "mean": means, "se": np.asarray(errors["means"]),
                             "sd": sds, "sd_se": np.asarray(errors["sds"]), "wald": wald,
                             "df": df, "p": p})

    # ------------------------------------------------------------------ predictions
    def _design(self, covariates) -> np.ndarray:
        if isinstance(covariates, np.ndarray):
            return covariates
        if covariates is None:
            raise ValueError(f"covariates: give the columns {list(self.covariates.columns)}")
        return self.covariates.transform(covariates)

    def prevalence(self, covariates: pd.DataFrame) -> np.ndarray:
        """``(n, K)`` ``P(class = r | x)`` of the rows of ``covariates`` (NaN where a covariate
        is missing): the membership model alone, no items (poLCA's ``prior``)."""
        return softmax(self._design(covariates) @ self.coef)

    def predict_proba(self, data, *, covariates: pd.DataFrame | None = None) -> np.ndarray:
        """``(n, K)`` class posteriors ``P(class | y, x)`` of new rows: ``data`` their items
        (missing items marginalised; a distal outcome is not used), ``covariates`` their
        covariate columns (a row with a missing covariate gets NaN; ``None`` for a fit with no
        covariates)."""
        data = data_for(self.structure, data)
        matrix = (np.ones((data.n_rows, 1)) if covariates is None and not self.covariates.columns
                  else self._design(covariates))
        if matrix.shape[0] != data.n_rows:
            raise ValueError(f"covariates has {matrix.shape[0]} rows but data has "
                             f"{data.n_rows}; give one covariate row per data row")
        tables = [np.log(np.maximum(np.asarray(self.params[self.structure.nodes[i]]), 1e-300))
                  for i in self.structure.observed_nodes]
        joint = np.log(np.maximum(self.prevalence(matrix), 1e-300))
        for j, table in enumerate(tables):
            codes = data.codes[:, j]
            joint = joint + np.where(codes[:, None] == MISSING, 0.0,
                                     table.T[np.maximum(codes, 0)])
        return softmax(joint)

    def simulate(self, covariates: pd.DataFrame, *, seed=0) -> pd.DataFrame:
        """Rows drawn from the fitted model given ``covariates`` (one row each; a row with a
        missing covariate is refused): the classes (column named as the class node, numbered
        from 1), the items (labels as in the data) and the distal outcome if any."""
        matrix = self._design(covariates)
        if np.isnan(matrix).any():
            raise ValueError("covariates: a row has a missing covariate; drop it first")
        rng = numpy_rng(seed)
        prev = self.prevalence(matrix)
        classes = (rng.random((len(prev), 1)) > np.cumsum(prev, axis=1)).sum(axis=1)
        s = self.structure
        out = {s.nodes[s.root]: classes + 1}
        for i in s.observed_nodes:
            table = np.asarray(self.params[s.nodes[i]])[classes]
            codes = (rng.random((len(prev), 1)) > np.cumsum(table, axis=1)).sum(axis=1)
            out[s.nodes[i]] = np.asarray(s.labels[i], dtype=object)[
                np.minimum(codes, len(s.labels[i]) - 1)]
        d = self.distal
        if d is not None and d["kind"] == "categorical":
            table = np.asarray(d["probabilities"])[classes]
            codes = (rng.random((len(prev), 1)) > np.cumsum(table, axis=1)).sum(axis=1)
            out[d["name"]] = np.asarray(d["labels"], dtype=object)[
                np.minimum(codes, len(d["labels"]) - 1)]
        elif d is not None:
            out[d["name"]] = (np.asarray(d["means"])[classes]
                              + np.asarray(d["sds"])[classes] * rng.standard_normal(len(prev)))
        return pd.DataFrame(out)

    # ------------------------------------------------------------------ tables and text
    def to_frame(self) -> pd.DataFrame:
        """The item tables and class shares as a long table (``node``, ``parents``,
        ``category``, ``probability`` and ``se`` when computed)."""
        values = {"probability": self.params}
        if self.standard_errors is not None:
            values["se"] = self.standard_errors["params"]
        return self._frame(values)

    def summary(self) -> str:
        """poLCA's printout: the coefficient table, the shares and item probabilities (with
        standard errors when computed), the fit statistics."""
        s = self.structure
        k = s.n_classes or 1
        table = self.coefficients()
        lines = [f"Latent class regression: {plural(k, 'class', 'classes')}, membership ~ "
                 f"{' + '.join(self.covariates.columns) or '1'} (class 1 the reference)", ""]
        for label, block in table.groupby("class", sort=False):
            lines.append(f"{label}: log odds of membership")
            lines.append(block.drop(columns="class").to_string(index=False,
                                                                 float_format="{:.5g}".format))
            lines.append("")
        refs = self.covariates.references
        if refs:
            lines += ["Reference levels: " + ", ".join(f"{c} = {v!r}" for c, v in refs.items()),
                      ""]
        errors = None if self.standard_errors is None else self.standard_errors["params"]
        lines += self.estimate_lines(" (mean over the rows)", errors=errors)
        if self.distal is not None:
            kind = self.distal["kind"]
            lines += [f"Distal outcome {self.distal['name']!r} ({kind}), by class",
                      self.distal_table().to_string(index=False, float_format="{:.5g}".format),
                      ""]
        dropped = self.n_rows - self.n_used_rows
        lines += [
            f"number of observations: {self.n_used_rows}"
            + (f" ({dropped} left out: a covariate is missing)" if dropped else ""),
            f"number of estimated parameters: {self.n_parameters}",
            *([] if self.resid_df is None else [f"residual degrees of freedom: {self.resid_df}"]),
            f"maximum log-likelihood: {self.loglik:.6f}",
            f"AIC(poLCA scale): {-2 * self.aic:.6f}",
            f"BIC(poLCA scale): {-2 * self.bic:.6f}",
            f"restarts: {self.restarts}, best reached by "
            f"{best_count(self.restart_logliks, self.loglik)}",
        ]
        if self.se_method is not None:
            lines.append(f"standard errors: {self.se_method} information")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"RegressionResult(n_classes={self.structure.n_classes}, covariates="
                f"{list(self.covariates.columns)}, loglik={self.loglik:.4f}, "
                f"n_used_rows={self.n_used_rows})")

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Everything as JSON-ready values; :meth:`from_dict` reads it back (the posteriors
        of the rows used included)."""
        return json_value({
            "method": "em", "model": "latent_class_regression",
            "structure": self.structure.to_dict(), "covariates": self.covariates.to_dict(rows=True),
            "params": self.params, "coef": self.coef, "coefficients":
                self.coefficients().to_dict(orient="records"),
            "loglik": self.loglik, "n_parameters": self.n_parameters,
            "resid_df": self.resid_df, "bic": self.bic, "aic": self.aic, "icl": self.icl,
            "entropy": self.entropy,
            "restart_logliks": self.restart_logliks, "restart_n_iter": self.restart_n_iter,
            "restart_converged": self.restart_converged, "n_iter": self.n_iter,
            "converged": self.converged, "history": self.history, "n_rows": self.n_rows,
            "n_used_rows": self.n_used_rows, "n_observed_rows": self.n_observed_rows,
            "n_cells": self.n_cells,
            "posteriors": self.posteriors, "standard_errors": self.standard_errors,
            "coef_cov": self.coef_cov, "score_statistic": self.score_statistic,
            "se_method": self.se_method, "seconds": self.seconds,
            "seed": self.seed,
            "restarts": self.restarts, "tol": self.tol, "max_iter": self.max_iter,
            "distal": self.distal,
        })

    @classmethod
    def from_dict(cls, spec: dict) -> RegressionResult:
        """The result of :meth:`to_dict`."""
        errors = spec.get("standard_errors")
        return record_from_dict(
            cls, spec, covariates=Covariates.from_description(spec["covariates"]),
            standard_errors=None if errors is None else {
                "coef": np.asarray(errors["coef"], dtype=np.float64),
                "params": arrays_from_json(errors["params"])},
            distal=_distal_from_json(spec.get("distal")),
            **{name: None for name in ("coef_cov", "score_statistic", "se_method")
               if name not in spec})   # files written before they were recorded


def _distal_from_json(spec: dict | None) -> dict | None:
    """:attr:`RegressionResult.distal` from its JSON form (lists back to arrays)."""
    if spec is None:
        return None
    out = dict(spec)
    for key in ("probabilities", "means", "sds", "mean_cov"):
        if out.get(key) is not None:
            out[key] = np.asarray(out[key], dtype=np.float64)
    if isinstance(out.get("se"), dict):
        out["se"] = {k: np.asarray(v, dtype=np.float64) for k, v in out["se"].items()}
    elif out.get("se") is not None:
        out["se"] = np.asarray(out["se"], dtype=np.float64)
    return out


def tables_to_params(structure: Structure, shares: np.ndarray, items: np.ndarray
                     ) -> dict[str, np.ndarray]:
    """``{node: CPT}`` from the mean shares ``(K,)`` and the ``(J, K, C)`` item tables."""
    tables = [shares[None, :]]
    for j, i in enumerate(structure.observed_nodes):
        tables.append(items[j, :, :structure.cardinalities[i]])
    return from_tables(structure, tables)

