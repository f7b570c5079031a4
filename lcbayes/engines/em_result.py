"""The result of :func:`lcbayes.em`: the estimate, its scores, every restart's fit, a
poLCA-style printout and a lossless JSON form.

Scores are on the natural-log evidence scale (:mod:`lcbayes.scores`): ``bic``, ``aic``, ``icl``,
Cheeseman-Stutz ``cs`` (Beal & Ghahramani eqs 27-30), ``bicp`` (§4.1), ``bic_e`` (Geiger,
Heckerman & Meek 1996) and the alias-corrected ones (eq. 24).

Example::

    fit = lcb.em(lcb.latent_class(data, 3), data, seed=0)
    print(fit.summary())
    same = lcb.EMResult.from_dict(json.loads(json.dumps(fit.to_dict())))
    same.predict_proba(new_rows)
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from .. import scores
from ..alias import log_alias
from ..dimension import effective_dimension
from ..params import dirichlet_log_density, to_tables
from ..render import json_value, plural, record_from_dict
from .dirichlet import complete_data_log_evidence
from .run_record import RunRecord

if TYPE_CHECKING:
    from ..information import Method

__all__ = ["BEST_TOLERANCE", "EMResult", "PenalisedScores", "best_count"]

#: Relative gap to the best objective within which a restart counts as reaching it.
BEST_TOLERANCE = 1e-6


def best_count(objectives: np.ndarray, best: float) -> int:
    """How many of the restarts' ``objectives`` (log-likelihoods, or penalised ones) reach
    ``best``: within :data:`BEST_TOLERANCE` of ``max(1, |best|)``."""
    gap = np.abs(np.asarray(objectives, dtype=np.float64) - best)
    return int(np.sum(gap < BEST_TOLERANCE * max(1.0, abs(best))))


class PenalisedScores:
    """The penalised-likelihood scores of a fit with ``loglik``, ``n_parameters``,
    ``n_observed_rows`` and ``entropy`` (the posterior memberships' entropy), on the
    natural-log evidence scale (:mod:`lcbayes.scores`); in memory or streamed."""

    if TYPE_CHECKING:  # supplied by the result dataclass that mixes these scores in
        loglik: float
        entropy: float
        n_observed_rows: int

        @property
        def n_parameters(self) -> int: ...

    @property
    def bic(self) -> float:
        """``loglik - d/2 ln N`` (natural-log evidence scale; poLCA's BIC is ``-2 * bic``)."""
        return scores.bic(self.loglik, self.n_parameters, self.n_observed_rows)

    @property
    def aic(self) -> float:
        """``loglik - d`` (poLCA's AIC is ``-2 * aic``)."""
        return scores.aic(self.loglik, self.n_parameters)

    @property
    def abic(self) -> float:
        """``loglik - d/2 ln((N + 2) / 24)``, the sample-size-adjusted BIC (Mplus' is
        ``-2 * abic``)."""
        return scores.abic(self.loglik, self.n_parameters, self.n_observed_rows)

    @property
    def caic(self) -> float:
        """``loglik - d/2 (ln N + 1)``, the consistent AIC (``-2 * caic`` on the deviance
        scale)."""
        return scores.caic(self.loglik, self.n_parameters, self.n_observed_rows)

    @property
    def icl(self) -> float:
        """``bic - entropy`` of the posterior hidden memberships."""
        return scores.icl(self.loglik, self.n_parameters, self.n_observed_rows, self.entropy)


@dataclass(frozen=True, repr=False)
class EMResult(PenalisedScores, RunRecord):
    """Outcome of :func:`lcbayes.em`: the best restart's estimate, scores and every restart's
    fit.

    ``hidden_posteriors`` are per data *pattern*; :attr:`class_posteriors` expands the class of a
    latent class model to rows. ``restart_kept`` marks the restarts that ran to the end (all of
    them unless ``keep`` asked for a two-stage run). ``expected_counts`` are the fractional
    family counts of the E step at the estimate (rows with no observed value left out: their
    factor is one), the completion behind :attr:`cs`; ``score_prior`` holds the Dirichlet
    pseudo-counts that CS and BICp use: the fit's prior, or 1 everywhere for an ML fit.
    ``standard_errors`` (``{node: CPT-shaped}``, with ``se_method`` ``"empirical"`` or
    ``"observed"``) are there when asked for (``em(standard_errors=...)`` or
    :meth:`with_standard_errors`; :mod:`lcbayes.information`). ``algorithm`` names the
    estimation algorithm (:mod:`lcbayes.engines.algorithms`; ``history`` and ``n_iter`` count
    its iterations).
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
    standard_errors: dict[str, np.ndarray] | None = None
    se_method: str | None = None
    algorithm: str = "squarem"

    # ------------------------------------------------------------------ scores
    def with_standard_errors(self, data, *, method: Method = "empirical") -> EMResult:
        """This fit with the standard errors of its estimates on ``data`` (the data it was
        fitted to): ``"empirical"`` information (poLCA's) or ``"observed"`` information
        (:func:`lcbayes.information.fit_standard_errors`). A model with more free parameters
        than the observed table has degrees of freedom is not identified: then a warning says
        so and no standard errors are computed (they would look meaningful and are not)."""
        from ..information import StandardErrorWarning, fit_standard_errors

        s = self.structure
        dof = math.prod(s.cardinalities[i] for i in s.observed_nodes) - 1
        if s.n_parameters > dof:
            warnings.warn(f"this model has {s.n_parameters} free parameters but the table of "
                          f"its {len(s.observed_nodes)} observed column(s) has {dof} degrees "
                          "of freedom: it is not identified (lcb.identifiable tells more), so "
                          "no standard errors are given", StandardErrorWarning, stacklevel=3)
            return self
        errors = fit_standard_errors(self, data, method)
        return dataclasses.replace(self, standard_errors=errors, se_method=method)

    def fit_indices(self, data) -> dict:
        """The indices applied papers report, on the data of the fit
        (:func:`lcbayes.indices.fit_indices`): ``abic``, ``caic``, ``goodness_of_fit``
        (poLCA's G^2, X^2 and df), ``classification`` (entropy R^2, average posteriors,
        classification table, smallest class) and ``bivariate_residuals``."""
        from ..indices import fit_indices

        return fit_indices(self, data)

    @property
    def log_alias(self) -> float:
        """``ln S``, the label-symmetry correction (:mod:`lcbayes.alias`)."""
        return log_alias(self.structure)

    @property
    def bicp(self) -> float:
        """``bic + ln p(theta_hat | m)``, the Dirichlet log density (simplex basis) of the
        estimate under :attr:`score_prior` (Beal & Ghahramani §4.1)."""
        tables = to_tables(self.structure, self.params, xp=np)
        priors = to_tables(self.structure, self.score_prior, xp=np)
        return scores.bicp(self.loglik, self.n_parameters, self.n_observed_rows,
                           dirichlet_log_density(tables, priors))

    @property
    def cs(self) -> float:
        """Cheeseman-Stutz (Beal & Ghahramani eqs 27-30): ``ln p(s_hat, y | m) + ln p(y |
        theta_hat) - ln p(s_hat, y | theta_hat)`` with the fractional completion of the E step
        at the estimate and the Dirichlet :attr:`score_prior`; a lower bound on the log evidence
        (their Theorem 6.1), without the alias correction."""
        from scipy.special import xlogy  # loaded on use, not when a command starts
        counts = to_tables(self.structure, self.expected_counts, xp=np)
        tables = to_tables(self.structure, self.params, xp=np)
        priors = to_tables(self.structure, self.score_prior, xp=np)
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

    def flops_per_iteration(self, *, line_search_evaluations: float = 0.0) -> float | None:
        """Operations per iteration of :attr:`algorithm` on this fit's latent class model and
        rows (Whiley §2.9, Tables 2.3-2.4; :func:`lcbayes.engines.algorithms.flops`; ``x``
        of CG/GCG is ``line_search_evaluations``); ``None`` for other structure kinds. These
        are the thesis's counts of the algorithm itself: at the default adaptive ``eta`` the
        gradient methods also evaluate the EM step from every point (about one gradient more
        per iteration, not counted)."""
        s = self.structure
        if s.kind != "latent_class":
            return None
        from .algorithms.flops import flops

        items = [s.cardinalities[i] for i in s.observed_nodes]
        assert s.n_classes is not None  # a latent class structure has a number of classes
        return flops(self.algorithm, len(items), s.n_classes, self.n_observed_rows,
                     cardinalities=items, line_search_evaluations=line_search_evaluations)

    # ------------------------------------------------------------------ estimates
    @property
    def estimate(self) -> dict[str, np.ndarray]:
        """The ML or MAP estimate, :attr:`params` (classes ordered by decreasing share)."""
        return self.params

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

    def _log_tables(self) -> tuple[np.ndarray, ...]:
        with np.errstate(divide="ignore"):
            return tuple(np.log(np.asarray(t)) for t in to_tables(self.structure, self.params))

    def to_frame(self) -> pd.DataFrame:
        """The estimate as a long table: ``node``, ``parents`` (the parent configuration, e.g.
        ``"class 2"``), ``category`` and ``probability``, one row per CPT entry."""
        values = {"probability": self.params}
        if self.standard_errors is not None:
            values["se"] = self.standard_errors
        return self._frame(values)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Everything as JSON-ready values (the command line prints this with ``--json``);
        :meth:`from_dict` reads it back. Non-finite numbers are ``None``."""
        weights = self.class_weights
        return json_value({
            "method": "em",
            "algorithm": self.algorithm,
            "estimator": self.estimator,
            "map_basis": self.map_basis,
            **self._run_dict(),
            "loglik": self.loglik,
            "objective": self.objective,
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
            "restart_logliks": self.restart_logliks,
            "restart_objectives": self.restart_objectives,
            "restart_kept": self.restart_kept,
            "params": self.params,
            "expected_counts": self.expected_counts,
            "score_prior": self.score_prior,
            "standard_errors": self.standard_errors,
            "se_method": self.se_method,
            "conditional_probabilities": self.conditional_probabilities(),
            "class_weights": None if weights is None else weights,
        })

    @classmethod
    def from_dict(cls, spec: dict) -> EMResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip): the same estimate,
        scores and predictions."""
        result = record_from_dict(cls, spec)
        if spec.get("effective_dimension") is not None:  # spare recomputing the cached value
            result.__dict__["effective_dimension"] = int(spec["effective_dimension"])
        return result

    # ------------------------------------------------------------------ text
    def summary(self) -> str:
        """A poLCA-style printout: shares, conditional probabilities (classes numbered from 1),
        fit statistics."""
        s = self.structure
        estimator = ("maximum likelihood" if self.estimator == "ml"
                     else f"MAP ({self.map_basis} basis)")
        if s.kind == "latent_class":
            assert s.n_classes is not None  # a latent class structure has a number of classes
            head = (f"Latent class model: {plural(s.n_classes, 'class', 'classes')}, "
                    f"{plural(len(s.observed_nodes), 'item')}")
        else:
            head = (f"{s.kind.upper()} model: {len(s.hidden_nodes)} hidden, "
                    f"{len(s.observed_nodes)} observed nodes")
        qualifier = "" if self.se_method is None else f" (standard errors, {self.se_method} " \
                                                       "information)"
        by = {"squarem": "EM (SQUAREM)", "em": "EM"}.get(self.algorithm, self.algorithm)
        lines = [head + f", {estimator} by {by}", "",
                 *self.estimate_lines(qualifier, errors=self.standard_errors)]
        status = "converged" if self.converged else "NOT converged (raise max_iter)"
        reached = best_count(self.restart_objectives, self.objective)
        n_missing_rows = self.n_rows - self.n_observed_rows
        lines += [
            "=========================================================",
            f"number of rows: {self.n_rows} ({plural(self.n_patterns, 'distinct pattern')}"
            + (f", {n_missing_rows} fully missing" if n_missing_rows else "") + ")",
            f"number of estimated parameters: {self.n_parameters}",
            f"log-likelihood: {self.loglik:.4f}",
            *self._score_lines(),
            f"{by}: {status} after {plural(self.n_iter, 'iteration')}; best found by "
            f"{reached} of {plural(self.restarts, 'restart')}; {self.seconds:.2f} s",
        ]
        return "\n".join(lines)

    def _score_lines(self) -> list[str]:
        """The information criteria, each with its formula and its deviance-scale value."""
        rows = [("BIC", "loglik - d/2 ln N", self.bic, "poLCA"),
                ("AIC", "loglik - d", self.aic, "poLCA"),
                ("aBIC", "loglik - d/2 ln((N+2)/24)", self.abic, "Mplus"),
                ("CAIC", "loglik - d/2 (ln N + 1)", self.caic, "deviance"),
                ("ICL", "BIC - entropy", self.icl, None)]
        width = max(len(f"{n} ({f}):") for n, f, _, _ in rows)
        return [f"{f'{n} ({f}):':<{width}} {v:.4f}"
                + (f"   [{scale} scale: {-2 * v:.4f}]" if scale else "")
                for n, f, v, scale in rows]

    def __repr__(self) -> str:
        return (
            f"EMResult(kind={self.structure.kind!r}, loglik={self.loglik:.4f}, "
            f"n_parameters={self.n_parameters}, bic={self.bic:.4f}, converged={self.converged}, "
            f"n_iter={self.n_iter}, restarts={self.restarts})"
        )
