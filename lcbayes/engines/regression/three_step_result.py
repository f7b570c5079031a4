"""The result of the bias-adjusted three-step approach (:func:`lcbayes.three_step`).

Holds step 1's fit (an :class:`~lcbayes.EMResult`), step 2's classification-error matrix
``D`` and classification error, and step 3's estimate with its covariance: the membership
coefficients as a table with the columns of :meth:`lcbayes.RegressionResult.coefficients`
(estimate, standard error, Wald ``z``, two-sided ``p``, odds ratio), a distal outcome's class
means and variances or class probabilities with standard errors and the Wald test of no
difference between the classes; prints them, and round-trips through JSON.

Example::

    res = lcb.three_step(lcb.latent_class(data, 2), frame, covariates=["GPA"],
                         correction="ml")
    print(res.summary())
    res.coefficients()      # as RegressionResult.coefficients()
    res.classification_matrix  # D, D[t, s] = P(W = s | X = t)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ...render import JSONRecord, matrix_lines, plural, record_from_dict
from ...structure import Structure
from ..em_result import EMResult
from .design import Covariates

__all__ = ["ThreeStepResult"]

#: What each correction is, for the printout.
CORRECTIONS = {"none": "no correction (the assignments taken as the classes)",
               "bch": "BCH weights (Bolck, Croon & Hagenaars 2004; Vermunt 2010)",
               "ml": "ML correction, D fixed (Vermunt 2010; Bakk, Tekle & Vermunt 2013)"}


@dataclass(frozen=True, repr=False)
class ThreeStepResult(JSONRecord):
    """A three-step analysis (module docstring; the method: :func:`lcbayes.three_step`).

    Attributes:
        structure: the latent class model of step 1.
        measurement: step 1's fit (:func:`lcbayes.em` on the rows used).
        covariates: the membership design (columns, levels, names; no rows), ``None``
            without covariates (the membership model is then the class shares alone).
        terms: the design's column names (``(Intercept)`` first).
        distal: the distal outcome's column name, or ``None``.
        distal_type: ``"continuous"`` or ``"categorical"`` (``None`` without an outcome).
        distal_labels: a categorical outcome's categories (``None`` otherwise).
        assignment: ``"modal"`` or ``"proportional"``.
        correction: ``"none"``, ``"bch"`` or ``"ml"``.
        se_method: ``"step3"``, ``"corrected"`` or ``None`` (:attr:`se_description` says
            which estimator).
        classification_matrix: ``D`` ``(K, K)``, ``D[t, s] = P(W = s | X = t)``.
        classification_error: the share of rows assigned to another class than their own
            (expected over the posteriors).
        coef: ``(P, K)`` membership coefficients; column 1 (the reference class) is 0.
        distal_estimate: ``(K, 2)`` class means and variances of a continuous outcome, or
            ``(K, C)`` class probabilities of a categorical one; ``None`` without an outcome.
        covariance: the covariance of the free coefficients (row-major ``(P, K - 1)``) then
            the outcome's means and variances, or its probabilities of categories ``2..C``
            per class; ``None`` without standard errors.
        class_shares: ``(K,)`` the mean of ``P(X = t | z)`` over the rows used.
        objective: step 3's objective at the estimate (the ML correction's log-likelihood;
            the weighted log-likelihood of ``"none"`` and ``"bch"``).
        max_gradient: the largest absolute entry of its gradient per row (about 0 at a
            maximum); n_iter: Newton iterations; converged: gradient at most ``tol`` per row
            and the Hessian negative definite.
        n_rows: rows given; n_used_rows: rows with every covariate and the outcome.
        seconds, seed, restarts, tol, max_iter: the run (seed, restarts: step 1's).
    """

    structure: Structure
    measurement: EMResult
    covariates: Covariates | None
    terms: tuple[str, ...]
    distal: str | None
    distal_type: str | None
    distal_labels: tuple | None
    assignment: str
    correction: str
    se_method: str | None
    classification_matrix: np.ndarray
    classification_error: float
    coef: np.ndarray
    distal_estimate: np.ndarray | None
    covariance: np.ndarray | None
    class_shares: np.ndarray
    objective: float
    max_gradient: float
    n_iter: int
    converged: bool
    n_rows: int
    n_used_rows: int
    seconds: float
    seed: int | tuple[int, ...]
    restarts: int
    tol: float
    max_iter: int

    # ------------------------------------------------------------------ sizes
    @property
    def n_classes(self) -> int:
        """The number of latent classes ``K``."""
        return self.coef.shape[1]

    @property
    def _n_beta(self) -> int:
        return self.coef.shape[0] * (self.n_classes - 1)

    @property
    def se_description(self) -> str:
        """Which standard errors these are, in words."""
        if self.se_method is None:
            return "none computed"
        sandwich = self.correction == "bch" or self.assignment == "proportional"
        text = ("sandwich (robust) estimator of step 3, D and the assignments fixed" if sandwich
                else "inverse observed information of step 3, D and the assignments fixed")
        if self.se_method == "corrected":
            text += ("; plus step 1's estimation variance passed on through the posteriors "
                     "(Bakk, Oberski & Vermunt 2014)")
        return text

    # ------------------------------------------------------------------ standard errors
    def _se(self, index: np.ndarray) -> np.ndarray:
        if self.covariance is None:
            return np.full(len(index), math.nan)
        return np.sqrt(np.maximum(np.diag(self.covariance)[index], 0.0))

    @property
    def standard_errors(self) -> dict[str, np.ndarray] | None:
        """``{"coef": (P, K), "distal": shaped as distal_estimate}`` or ``None``."""
        if self.covariance is None:
            return None
        p, k = self.coef.shape
        coef = np.zeros((p, k))
        coef[:, 1:] = self._se(np.arange(self._n_beta)).reshape(p, k - 1)
        out = {"coef": coef}
        if self.distal_estimate is not None:
            out["distal"] = self._distal_se()
        return out

    def _distal_se(self) -> np.ndarray:
        nb, k = self._n_beta, self.n_classes
        cov = np.asarray(self.covariance)[nb:, nb:]
        if self.distal_type == "continuous":
            return np.sqrt(np.maximum(np.diag(cov), 0.0)).reshape(2, k).T
        c = len(self.distal_labels or ())
        out = np.zeros((k, c))
        for t in range(k):
            block = cov[t * (c - 1):(t + 1) * (c - 1), t * (c - 1):(t + 1) * (c - 1)]
            out[t, 0] = math.sqrt(max(block.sum(), 0.0))
            out[t, 1:] = np.sqrt(np.maximum(np.diag(block), 0.0))
        return out

    # ------------------------------------------------------------------ tables
    def coefficients(self) -> pd.DataFrame:
        """The coefficient table, as :meth:`lcbayes.RegressionResult.coefficients`: one row
        per class ``2..K`` and design column with ``estimate``, ``se``, ``z``, ``p``
        (two-sided Wald) and ``odds_ratio`` ``exp(beta)``."""
        errors = self.standard_errors
        se = None if errors is None else errors["coef"]
        rows = []
        for r in range(1, self.n_classes):
            for d, term in enumerate(self.terms):
                est = float(self.coef[d, r])
                s = math.nan if se is None else float(se[d, r])
                z = est / s if s > 0 else math.nan
                rows.append({"class": f"class {r + 1} vs class 1", "term": term,
                             "estimate": est, "se": s, "z": z,
                             "p": float(2 * stats.norm.sf(abs(z))) if math.isfinite(z)
                             else math.nan, "odds_ratio": math.exp(est)})
        return pd.DataFrame(rows, columns=["class", "term", "estimate", "se", "z", "p",
                                           "odds_ratio"])

    def distal_table(self) -> pd.DataFrame:
        """The outcome per class: ``class``, ``statistic`` (``mean`` and ``variance``, or the
        category), ``estimate``, ``se``; empty without an outcome."""
        if self.distal_estimate is None:
            return pd.DataFrame(columns=["class", "statistic", "estimate", "se"])
        names = (["mean", "variance"] if self.distal_type == "continuous"
                 else [str(v) for v in self.distal_labels or ()])
        se = (np.full(self.distal_estimate.shape, math.nan) if self.covariance is None
              else self._distal_se())
        return pd.DataFrame([{"class": t + 1, "statistic": name,
                              "estimate": float(self.distal_estimate[t, c]),
                              "se": float(se[t, c])}
                             for t in range(self.n_classes) for c, name in enumerate(names)])

    def distal_test(self) -> dict[str, float]:
        """The Wald test that the outcome's distribution is the same in every class (its
        class means for a continuous outcome, its class probabilities for a categorical
        one): ``{"statistic", "df", "p"}`` (NaN without an outcome or standard errors)."""
        if self.distal_estimate is None or self.covariance is None:
            return {"statistic": math.nan, "df": math.nan, "p": math.nan}
        nb, k = self._n_beta, self.n_classes
        width = 1 if self.distal_type == "continuous" else self.distal_estimate.shape[1] - 1
        size = self.covariance.shape[0] - nb
        contrasts = np.zeros(((k - 1) * width, size))
        for t in range(1, k):
            for c in range(width):
                contrasts[(t - 1) * width + c, t * width + c] = 1.0
                contrasts[(t - 1) * width + c, c] = -1.0
        free = (self.distal_estimate[:, 0] if self.distal_type == "continuous"
                else self.distal_estimate[:, 1:].ravel())
        if self.distal_type == "continuous":
            free = np.concatenate([free, self.distal_estimate[:, 1]])
        diff = contrasts @ free
        cov = contrasts @ self.covariance[nb:, nb:] @ contrasts.T
        statistic = float(diff @ np.linalg.pinv(cov) @ diff)
        df = float(len(diff))
        return {"statistic": statistic, "df": df, "p": float(stats.chi2.sf(statistic, df))}

    def to_frame(self) -> pd.DataFrame:
        """Every estimate as a long table: ``part`` (``membership`` or ``distal``),
        ``class``, ``term`` and ``estimate``, ``se``."""
        coef = self.coefficients()
        parts = [pd.DataFrame({"part": "membership", "class": coef["class"],
                               "term": coef["term"], "estimate": coef["estimate"],
                               "se": coef["se"]})]
        distal = self.distal_table()
        if len(distal):
            parts.append(pd.DataFrame({"part": "distal", "class": distal["class"].map(
                lambda t: f"class {t}"), "term": distal["statistic"],
                "estimate": distal["estimate"], "se": distal["se"]}))
        return pd.concat(parts, ignore_index=True)

    # ------------------------------------------------------------------ text
    def summary(self) -> str:
        """The three steps: the measurement model's fit, ``D`` and the classification error,
        the step-3 estimate with its standard errors and what they are."""
        k = self.n_classes
        what = " and ".join(
            ([] if self.covariates is None
             else [f"membership ~ {' + '.join(self.covariates.columns)}"])
            + ([] if self.distal is None
               else [f"{self.distal_type} distal outcome {self.distal!r}"]))
        lines = [f"Three-step latent class analysis: {plural(k, 'class', 'classes')}, {what}",
                 f"step 1: the measurement model alone, log-likelihood "
                 f"{self.measurement.loglik:.6f} on {self.n_used_rows} rows"
                 + (f" ({self.n_rows - self.n_used_rows} left out: a covariate or the outcome "
                    "is missing)" if self.n_used_rows < self.n_rows else ""),
                 f"step 2: {self.assignment} assignment, classification error "
                 f"{self.classification_error:.4f}; D[t, s] = P(assigned s | class t):"]
        labels = [f"class {t + 1}" for t in range(k)]
        lines += ["  " + line for line in matrix_lines(labels, labels,
                                                       self.classification_matrix)]
        lines += [f"step 3: {CORRECTIONS[self.correction]}; objective {self.objective:.6f}"
                  + ("" if self.converged else " (NOT CONVERGED: max gradient "
                     f"{self.max_gradient:.2g} per row)"),
                  "class shares (mean over the rows): "
                  + ", ".join(f"{s:.4f}" for s in self.class_shares), ""]
        if self.covariates is not None:
            table = self.coefficients()
            for label, block in table.groupby("class", sort=False):
                lines.append(f"{label}: log odds of membership")
                lines.append(block.drop(columns="class").to_string(
                    index=False, float_format="{:.5g}".format))
                lines.append("")
            refs = self.covariates.references
            if refs:
                lines += ["Reference levels: "
                          + ", ".join(f"{c} = {v!r}" for c, v in refs.items()), ""]
        if self.distal is not None:
            lines.append(f"distal outcome {self.distal!r} by class:")
            lines.append(self.distal_table().to_string(index=False,
                                                        float_format="{:.5g}".format))
            test = self.distal_test()
            if math.isfinite(test["statistic"]):
                lines.append(f"Wald test of no difference between the classes: "
                             f"{test['statistic']:.4g} on {test['df']:.0f} df, "
                             f"p = {test['p']:.3g}")
            lines.append("")
        lines.append(f"standard errors: {self.se_description}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"ThreeStepResult(n_classes={self.n_classes}, correction={self.correction!r}, "
                f"assignment={self.assignment!r}, n_used_rows={self.n_used_rows})")

    # ------------------------------------------------------------------ JSON
    @classmethod
    def from_dict(cls, spec: Mapping) -> ThreeStepResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip): the same numbers."""
        design = spec.get("covariates")
        return record_from_dict(cls, spec, covariates=None if design is None
                                else Covariates.from_description(design))
