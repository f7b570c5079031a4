"""Compare candidate structures on one data set: scores, log evidences, posterior model
probabilities, Bayes factors and diagnostic flags in one tidy table.

Every number is on the natural-log evidence scale, ``ln p(y | m)``, **higher is better**
(:mod:`lcbayes.scores`). Per candidate ``m`` (with ``d`` free parameters, ``d_e`` the effective
dimension, ``N`` the rows with an observed value, ``S`` the alias count of :mod:`lcbayes.alias`):

* one maximum-likelihood EM fit (:func:`lcbayes.em`, ``restarts`` starts, ``seed``) gives
  ``loglik = ln p(y | theta_hat)`` and the asymptotic scores ``bic = loglik - d/2 ln N``
  (Beal & Ghahramani eq. 22), ``bic_e = loglik - d_e/2 ln N`` (Geiger et al. 1996),
  ``aic = loglik - d``, ``icl = bic - entropy`` (Biernacki et al. 2000), Cheeseman-Stutz
  ``cs = ln p(s_hat, y | m) + ln p(y | theta_hat) - ln p(s_hat, y | theta_hat)`` (eq. 27) and,
  on request, ``bicp = bic + ln p(theta_hat | m)`` (§4.1); ``cs_corrected = cs + ln S`` and
  ``bicp_corrected = bicp + ln S`` (eq. 24);
* VBEM (:func:`lcbayes.vbem`) gives the lower bound ``elbo = F <= ln p(y | m)`` (eqs 51-61) and
  ``elbo_corrected = F + ln S``. The bound reported is the better of ``restarts`` prior-draw
  starts and one run started from the EM fit, so ``elbo >= cs`` (Corollary 6.2);
* AIS (:func:`lcbayes.ais`) gives ``ais = ln Z_hat`` (eqs 62-68) with its delta-method
  ``ais_stderr`` and effective number of chains ``ais_ess``;
* the exact evidence (:func:`lcbayes.exact_evidence`) where the sum is small enough.

**Evidence and posterior.** ``log_evidence`` is the best estimate available per row: ``exact``,
else ``ais`` (unless flagged ``ais_below_vbem``: an AIS estimate below a guaranteed lower bound
is known to be too low), else ``elbo_corrected``; ``evidence_method`` names it. Under a uniform
prior over the candidates::

    p(m | y) = exp(L_m - logsumexp_m' L_m'),        log_bayes_factor_m = L_m - max_m' L_m'

``posterior_low``/``posterior_high`` are the 2.5% and 97.5% quantiles of ``p(m | y)`` over
:data:`POSTERIOR_DRAWS` Monte Carlo draws ``L_m ~ N(L_hat_m, se_m^2)`` (``se_m`` the AIS
standard error for an AIS row, 0 for exact and VB rows, whose error is not quantified), seeded
with ``seed``; the interval is widened to contain the point estimate when the skewed
distribution of draws would leave it outside.

**Ranks.** ``rank_<method>`` is 1 for the highest score (ties share the lower rank; missing
where the method did not score every candidate, e.g. an exact evidence too large for some) of
``bic``, ``bic_e``, ``aic``, ``icl``, ``cs_corrected`` (``rank_cs``), ``bicp_corrected``
(``rank_bicp``), ``elbo_corrected`` (``rank_vbem``), ``ais``, ``exact`` and ``log_evidence``
(``rank_evidence``). The corrected CS and VB values rank because they, not the one-mode bounds,
estimate ``ln p(y | m)``; BIC, BIC_e, AIC and ICL rank as usually reported.

**Flags** (column ``flags``, explained in ``flag_notes``; thresholds below):

* ``ais_below_vbem``: ``ais < elbo - AIS_BELOW_VBEM_SE * ais_stderr`` with the *uncorrected*
  bound. ``F`` is a guaranteed lower bound, so the AIS run has not found the posterior mass:
  too few temperatures or a poor kernel (Beal & Ghahramani §5, Table 3).
* ``ais_low_ess``: the AIS weights' effective number of chains is below ``AIS_MIN_ESS_FRACTION``
  of the chains: a few chains carry the estimate, so its standard error is itself unreliable
  (typically too small) and the schedule should be longer.
* ``ais_off_exact``: ``|ais - exact| > AIS_OFF_EXACT_SE * ais_stderr``: the AIS error bar is
  too small.
* ``not_converged``: the best EM or VBEM restart stopped at ``max_iter``.
* ``em_local_optimum`` (latent class ``K`` with ``K - 1`` classes also fitted on the same
  columns): ``loglik_K < loglik_{K-1} - LOCAL_OPTIMUM_TOL``. ``K`` classes contain every
  ``K - 1``-class distribution, so EM stopped at a local maximum: use more restarts.
* ``bic_singular`` (latent class ``K >= 2``): the ML fit sits (statistically) at a singular
  point of the ``K``-class model, where the Fisher information is singular and BIC's
  ``d/2 ln N`` is not the right penalty: the log evidence falls like ``lambda ln N`` with a
  learning coefficient ``lambda < d/2`` (Watanabe 2009; Drton & Plummer 2017), so BIC
  over-penalises this row and overstates the evidence against it. Any of:

  1. an (almost) empty class: the smallest expected class size ``n_min = N pi_min`` has
     ``pi_min < EMPTY_CLASS_Z * se(pi_min)`` with ``se = sqrt(pi (1 - pi) / N)``, i.e.
     ``n_min / (1 - pi_min) < EMPTY_CLASS_Z**2``;
  2. two (almost) identical classes: the Pearson chi-square of the classes' expected
     item-response counts, summed over items (df = sum of categories - 1), is below its
     ``1 - SINGULAR_LEVEL`` quantile;
  3. no log-likelihood gain over ``K - 1`` classes: ``2 (loglik_K - loglik_{K-1})`` is below
     the ``1 - SINGULAR_LEVEL`` quantile of chi-square with ``d_e(K) - d_e(K-1)`` degrees of
     freedom. The regular reference is lenient here (the likelihood-ratio statistic of an
     overfitted mixture is stochastically larger), so a gain below it is certainly noise.

Example::

    comp = lcb.compare(data, classes=range(1, 6), seed=0)
    comp.to_frame()[["name", "bic", "elbo_corrected", "ais", "posterior_prob", "flags"]]
    comp.to_html("reports/survey.html")
"""

from __future__ import annotations

import importlib.metadata
import math
import platform
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

import jax
import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import chi2

from .ais import ais as run_ais
from .annealing import AISResult
from .data import Dataset
from .dimension import effective_dimension
from .em import EMResult, em
from .errors import LcbayesError, StructureError, TooLargeError
from .exact import ExactEvidence, exact_evidence
from .structure import Structure, latent_class
from .vbem import VBResult, vbem

__all__ = [
    "AIS_BELOW_VBEM_SE",
    "AIS_MIN_ESS_FRACTION",
    "AIS_OFF_EXACT_SE",
    "EMPTY_CLASS_Z",
    "FLAGS",
    "LOCAL_OPTIMUM_TOL",
    "METHODS",
    "POSTERIOR_DRAWS",
    "SINGULAR_LEVEL",
    "Comparison",
    "compare",
    "posterior_probabilities",
]

#: Every method ``compare`` knows; the EM fit serves the first six.
METHODS = ("bic", "bic_e", "aic", "icl", "cs", "bicp", "vbem", "ais")
DEFAULT_METHODS = ("bic", "bic_e", "aic", "icl", "cs", "vbem", "ais")
_EM_METHODS = ("bic", "bic_e", "aic", "icl", "cs", "bicp")

#: The column each ``rank_<method>`` ranks.
RANKED_COLUMNS = {
    "bic": "bic", "bic_e": "bic_e", "aic": "aic", "icl": "icl", "cs": "cs_corrected",
    "bicp": "bicp_corrected", "vbem": "elbo_corrected", "ais": "ais", "exact": "exact",
    "evidence": "log_evidence",
}

#: ``ais_below_vbem`` fires when AIS is below the uncorrected VB bound by more than this many
#: AIS standard errors.
AIS_BELOW_VBEM_SE = 3.0
#: ``ais_low_ess`` fires when the AIS effective sample size is below this fraction of the chains.
AIS_MIN_ESS_FRACTION = 0.25
#: ``ais_off_exact`` fires when AIS misses the exact evidence by more than this many standard
#: errors.
AIS_OFF_EXACT_SE = 3.0
#: ``bic_singular`` (1): a class share within this many standard errors of zero is "empty".
EMPTY_CLASS_Z = 2.0
#: ``bic_singular`` (2, 3): significance level of the "identical classes" and "no gain" tests.
SINGULAR_LEVEL = 0.05
#: ``em_local_optimum``: tolerated log-likelihood deficit of ``K`` classes below ``K - 1``,
#: in nats (EM stops short of the maximum by a little, slowly near singular points).
LOCAL_OPTIMUM_TOL = 0.01
#: Monte Carlo draws behind ``posterior_low`` / ``posterior_high``.
POSTERIOR_DRAWS = 4000
#: Central probability of the posterior interval.
POSTERIOR_LEVEL = 0.95
#: Default ``max_terms`` of the exact evidence (about a fifth of a second of work).
EXACT_MAX_TERMS = 2e5

#: What each flag means (the reports print this).
FLAGS = {
    "ais_below_vbem": (f"AIS is below the VBEM lower bound F by more than {AIS_BELOW_VBEM_SE:g} "
                       "standard errors: the AIS run is unreliable (too few temperatures or "
                       "a poor kernel; Beal & Ghahramani Table 3); log_evidence falls back to "
                       "VBEM"),
    "ais_low_ess": (f"the AIS weights' effective number of chains is below "
                    f"{AIS_MIN_ESS_FRACTION:.0%} of the chains: its standard error is "
                    "unreliable; use more temperatures"),
    "ais_off_exact": (f"AIS differs from the exact evidence by more than {AIS_OFF_EXACT_SE:g} "
                      "standard errors: its error bar is too small"),
    "not_converged": "the best EM or VBEM restart stopped at max_iter",
    "em_local_optimum": ("EM found a lower log-likelihood for K classes than for K - 1, which "
                         "it contains: a local maximum; use more restarts"),
    "bic_singular": ("the K-class ML fit is at a singular point (an almost empty class, two "
                     "almost identical classes or no significant gain over K - 1 classes): "
                     "BIC's d/2 ln N over-penalises it (Watanabe)"),
}


def _versions() -> dict[str, str]:
    from . import __version__

    out = {"lcbayes": __version__, "python": platform.python_version()}
    for name in ("jax", "jaxlib", "numpyro", "arviz", "numpy", "scipy", "pandas", "matplotlib"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            out[name] = "not installed"
    out["platform"] = platform.platform()
    out["jax_backend"] = jax.default_backend()
    return out


# ---------------------------------------------------------------------- pure helpers
def posterior_probabilities(
    log_evidence: Sequence[float],
    stderr: Sequence[float] | None = None,
    draws: int = POSTERIOR_DRAWS,
    level: float = POSTERIOR_LEVEL,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior model probabilities under a uniform prior, with Monte Carlo intervals.

    ``p_m = exp(L_m - logsumexp(L))`` over the finite ``L_m`` (others get NaN). The interval
    is the central ``level`` range of ``p_m`` over ``draws`` draws of ``L ~ N(L_hat, se^2)``
    (independent per model; ``se = 0`` or NaN: held fixed), widened to contain ``p_m``.

    Returns:
        ``(prob, low, high)`` arrays.
    """
    lz = np.asarray(log_evidence, dtype=np.float64)
    se = np.zeros_like(lz) if stderr is None else np.asarray(stderr, dtype=np.float64)
    se = np.where(np.isfinite(se) & (se > 0), se, 0.0)
    prob = np.full(lz.shape, np.nan)
    low, high = prob.copy(), prob.copy()
    ok = np.isfinite(lz)
    if not ok.any():
        return prob, low, high
    prob[ok] = np.exp(lz[ok] - logsumexp(lz[ok]))
    rng = np.random.default_rng(seed)
    sample = lz[ok] + se[ok] * rng.standard_normal((int(draws), int(ok.sum())))
    sample = np.exp(sample - logsumexp(sample, axis=1, keepdims=True))
    tail = (1.0 - level) / 2.0
    low[ok] = np.minimum(np.quantile(sample, tail, axis=0), prob[ok])
    high[ok] = np.maximum(np.quantile(sample, 1.0 - tail, axis=0), prob[ok])
    return prob, low, high


def _pearson(table: np.ndarray) -> tuple[float, int]:
    """Pearson chi-square of homogeneity of a ``(2, r)`` table of (fractional) counts and its
    degrees of freedom (categories with a zero total are left out)."""
    table = table[:, table.sum(axis=0) > 0]
    total = table.sum()
    if table.shape[1] < 2 or total <= 0:
        return 0.0, 0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
    return float(terms.sum()), table.shape[1] - 1


def singular_reasons(fit: EMResult, previous: EMResult | None = None,
                     dims: tuple[int, int] | None = None) -> list[str]:
    """Why the latent class fit ``fit`` sits at a singular point (module docstring, flag
    ``bic_singular``); empty when it does not.

    Args:
        fit: an EM fit of a latent class model with ``K >= 2`` classes.
        previous: the fit of ``K - 1`` classes on the same columns, for the gain test.
        dims: ``(d_e(K - 1), d_e(K))``, the effective dimensions for its degrees of freedom
            (default: the standard dimensions).
    """
    s = fit.structure
    if s.kind != "latent_class" or s.n_classes < 2:
        return []
    reasons = []
    root = s.nodes[s.root]
    sizes = np.asarray(fit.expected_counts[root], dtype=np.float64)
    n = float(sizes.sum())
    if n > 0:
        k_min = int(np.argmin(sizes))
        share = sizes[k_min] / n
        if sizes[k_min] < EMPTY_CLASS_Z**2 * (1.0 - share):
            reasons.append(f"class {k_min + 1} is almost empty ({sizes[k_min]:.2f} of "
                           f"{n:.0f} rows, share within {EMPTY_CLASS_Z:g} standard errors "
                           "of 0)")
    items = [s.nodes[i] for i in s.observed_nodes]
    for a in range(s.n_classes):
        for b in range(a + 1, s.n_classes):
            stat, df = 0.0, 0
            for item in items:
                counts = np.asarray(fit.expected_counts[item], dtype=np.float64)
                x, k = _pearson(counts[[a, b]])
                stat, df = stat + x, df + k
            if df > 0 and stat < chi2.ppf(1.0 - SINGULAR_LEVEL, df):
                reasons.append(f"classes {a + 1} and {b + 1} do not differ (Pearson "
                               f"chi-square {stat:.2f} on {df} df, p = "
                               f"{chi2.sf(stat, df):.2f})")
    if previous is not None:
        d_prev, d_this = dims if dims is not None else (previous.n_parameters,
                                                        fit.n_parameters)
        df = max(int(d_this) - int(d_prev), 1)
        lr = 2.0 * (fit.loglik - previous.loglik)
        if lr < chi2.ppf(1.0 - SINGULAR_LEVEL, df):
            reasons.append(f"no significant gain over {s.n_classes - 1} classes "
                           f"(2 x gain = {lr:.2f}, below the {1 - SINGULAR_LEVEL:.0%} "
                           f"quantile {chi2.ppf(1.0 - SINGULAR_LEVEL, df):.2f} of "
                           f"chi-square({df}))")
    return reasons


def _structure_name(s: Structure) -> str:
    if s.kind == "latent_class":
        return f"LC({s.n_classes})"
    hidden = ",".join(f"{s.nodes[h]}={s.cardinalities[h]}" for h in s.hidden_nodes)
    if s.kind == "hlc":
        return f"HLC({hidden})"
    edges = sum(len(p) for p in s.parents)
    return f"DAG({hidden}; {edges} edges)"


def _finite(x) -> float:
    return float("nan") if x is None else float(x)


# ---------------------------------------------------------------------- result
@dataclass(frozen=True, repr=False, eq=False)
class Comparison:
    """Outcome of :func:`compare`: every candidate's engine results and the run's record.

    Attributes:
        names: one name per candidate (``"LC(3)"``, or the name given).
        structures: the candidates.
        methods: the methods requested.
        em, vbem, ais, exact: per candidate, the :class:`~lcbayes.EMResult`,
            :class:`~lcbayes.VBResult`, :class:`~lcbayes.AISResult` and
            :class:`~lcbayes.ExactEvidence` (``None`` where not run or infeasible).
        exact_notes: per candidate, why there is no exact evidence (``None`` if there is).
        effective_dimensions: per candidate, :func:`lcbayes.effective_dimension`.
        data: the data compared on (restricted to the candidates' columns).
        settings: the arguments of the run.
        seeds: the seed of every random step.
        seconds: wall time per method (summed over candidates) and in total.
        versions: package versions, Python, platform and JAX backend.

    :meth:`to_frame` gives the table; :meth:`to_dict` its JSON form; :meth:`to_html` and
    :meth:`to_markdown` write reports (:mod:`lcbayes.report`).
    """

    names: tuple[str, ...]
    structures: tuple[Structure, ...]
    methods: tuple[str, ...]
    em: tuple[EMResult | None, ...]
    vbem: tuple[VBResult | None, ...]
    ais: tuple[AISResult | None, ...]
    exact: tuple[ExactEvidence | None, ...]
    exact_notes: tuple[str | None, ...]
    effective_dimensions: tuple[int, ...]
    data: Dataset = field(compare=False)
    settings: dict = field(compare=False)
    seeds: dict = field(compare=False)
    seconds: dict = field(compare=False)
    versions: dict = field(compare=False)

    # ------------------------------------------------------------------ table
    @property
    def score_columns(self) -> list[str]:
        """The score columns of :meth:`to_frame` for the requested methods, in order."""
        cols = []
        for m in self.methods:
            if m in ("cs", "bicp"):
                cols += [m, f"{m}_corrected"]
            elif m == "vbem":
                cols += ["elbo", "elbo_corrected"]
            elif m == "ais":
                cols += ["ais", "ais_stderr", "ais_ess"]
            else:
                cols.append(m)
        if self.settings.get("exact") is not False:
            cols.append("exact")
        return cols

    @property
    def rank_methods(self) -> list[str]:
        """The methods with a ``rank_<method>`` column."""
        out = list(self.methods)
        if self.settings.get("exact") is not False:
            out.append("exact")
        return [*out, "evidence"]

    @cached_property
    def _frame(self) -> pd.DataFrame:
        rows = [self._scores(i) for i in range(len(self.names))]
        frame = pd.DataFrame(rows)
        frame["n_classes"] = frame["n_classes"].astype("Int64")
        flags = self._flags(frame)
        frame["flags"] = [",".join(f for f, _ in row) for row in flags]
        frame["flag_notes"] = ["; ".join(f"{f}: {why}" for f, why in row) for row in flags]
        self._evidence(frame)
        for m in self.rank_methods:
            col = frame[RANKED_COLUMNS[m]].astype(float)
            rank = col.rank(ascending=False, method="min").astype("Int64")
            frame[f"rank_{m}"] = rank if np.isfinite(col).all() else pd.NA  # all or none
        frame["seconds"] = [self._candidate_seconds(i) for i in range(len(self.names))]
        order = (["name", "kind", "n_classes", "n_parameters", "effective_dimension"]
                 + (["loglik"] if "loglik" in frame else []) + self.score_columns
                 + ["log_evidence", "evidence_method", "log_evidence_stderr", "posterior_prob",
                    "posterior_low", "posterior_high", "log_bayes_factor"]
                 + [f"rank_{m}" for m in self.rank_methods] + ["flags", "flag_notes",
                                                                "seconds"])
        return frame[order]

    def to_frame(self) -> pd.DataFrame:
        """One row per candidate (a copy; module docstring for the definitions):

        ``name``, ``kind``, ``n_classes``, ``n_parameters`` (``d``), ``effective_dimension``
        (``d_e``), ``loglik`` (with any EM method), the score columns of the requested methods
        (``bic``, ``bic_e``, ``aic``, ``icl``, ``cs`` + ``cs_corrected``, ``bicp`` +
        ``bicp_corrected``, ``elbo`` + ``elbo_corrected``, ``ais`` + ``ais_stderr`` +
        ``ais_ess``), ``exact`` (unless ``exact=False``), ``log_evidence``,
        ``evidence_method``, ``log_evidence_stderr``, ``posterior_prob``, ``posterior_low``,
        ``posterior_high``, ``log_bayes_factor``, ``rank_<method>`` per method plus
        ``rank_exact`` and ``rank_evidence`` (missing unless the method scored every row),
        ``flags`` (comma-separated names), ``flag_notes`` (why) and ``seconds`` (this
        candidate's engine time)."""
        return self._frame.copy()

    def _scores(self, i: int) -> dict:
        s = self.structures[i]
        row = {"name": self.names[i], "kind": s.kind,
               "n_classes": s.n_classes if s.n_classes is not None else pd.NA,
               "n_parameters": s.n_parameters,
               "effective_dimension": self.effective_dimensions[i]}
        fit = self.em[i]
        if fit is not None:
            row["loglik"] = fit.loglik
            for m in self.methods:
                if m == "bic_e":
                    row[m] = fit.loglik - 0.5 * self.effective_dimensions[i] * math.log(
                        fit.n_observed_rows)
                elif m in _EM_METHODS:
                    row[m] = getattr(fit, m)
                    if m in ("cs", "bicp"):
                        row[f"{m}_corrected"] = row[m] + fit.log_alias
        vb = self.vbem[i]
        if vb is not None:
            row["elbo"], row["elbo_corrected"] = vb.elbo, vb.elbo_corrected
        run = self.ais[i]
        if "ais" in self.methods:
            row["ais"] = _finite(run.log_evidence if run else None)
            row["ais_stderr"] = _finite(run.stderr if run else None)
            row["ais_ess"] = _finite(run.ess if run else None)
        ex = self.exact[i]
        row["exact"] = _finite(ex.log_evidence if ex else None)
        return row

    def _candidate_seconds(self, i: int) -> float:
        return float(sum(r.seconds for r in (self.em[i], self.vbem[i], self.ais[i],
                                             self.exact[i]) if r is not None))

    def _flags(self, frame: pd.DataFrame) -> list[list[tuple[str, str]]]:
        out: list[list[tuple[str, str]]] = [[] for _ in self.names]
        for i in range(len(self.names)):
            row = frame.iloc[i]
            se = row.get("ais_stderr", np.nan)
            se = 0.0 if not np.isfinite(se) else float(se)
            ais_value = row.get("ais", np.nan)
            if np.isfinite(ais_value) and np.isfinite(row.get("elbo", np.nan)):
                gap = row["elbo"] - ais_value
                if gap > AIS_BELOW_VBEM_SE * se:
                    out[i].append(("ais_below_vbem", f"AIS {ais_value:.2f} is {gap:.2f} below "
                                   f"F = {row['elbo']:.2f} (AIS s.e. {se:.2f})"))
            result = self.ais[i]
            if result is not None and result.ess < AIS_MIN_ESS_FRACTION * result.chains:
                out[i].append(("ais_low_ess", f"AIS ESS {result.ess:.1f} of {result.chains} "
                               "chains"))
            if np.isfinite(ais_value) and np.isfinite(row.get("exact", np.nan)):
                miss = abs(ais_value - row["exact"])
                if miss > AIS_OFF_EXACT_SE * se:
                    out[i].append(("ais_off_exact", f"AIS {ais_value:.2f} vs exact "
                                   f"{row['exact']:.2f} (AIS s.e. {se:.2f})"))
            stalled = [name for name, r in (("EM", self.em[i]), ("VBEM", self.vbem[i]))
                       if r is not None and not r.converged]
            if stalled:
                out[i].append(("not_converged", " and ".join(stalled) + " stopped at "
                               "max_iter"))
        self._class_flags(out)
        return out

    def _class_flags(self, out: list[list[tuple[str, str]]]) -> None:
        """``em_local_optimum`` and ``bic_singular`` of the latent class candidates."""
        by_key = {}
        for i, s in enumerate(self.structures):
            if s.kind == "latent_class" and self.em[i] is not None:
                by_key[(frozenset(s.observed_names), s.n_classes)] = i
        for (columns, k), i in by_key.items():
            fit = self.em[i]
            j = by_key.get((columns, k - 1))
            previous = self.em[j] if j is not None else None
            if previous is not None:
                tol = LOCAL_OPTIMUM_TOL
                if fit.loglik < previous.loglik - tol:
                    out[i].append(("em_local_optimum", f"loglik {fit.loglik:.3f} < "
                                   f"{previous.loglik:.3f} of {k - 1} classes"))
            dims = (self.effective_dimensions[j], self.effective_dimensions[i]) \
                if j is not None else None
            reasons = singular_reasons(fit, previous, dims)
            if reasons:
                out[i].append(("bic_singular", "; ".join(reasons)))

    def _evidence(self, frame: pd.DataFrame) -> None:
        values, methods, errors = [], [], []
        for i in range(len(self.names)):
            row = frame.iloc[i]
            flagged = "ais_below_vbem" in row["flags"].split(",")
            if np.isfinite(row.get("exact", np.nan)):
                values.append(row["exact"])
                methods.append("exact")
                errors.append(0.0)
            elif np.isfinite(row.get("ais", np.nan)) and not flagged:
                values.append(row["ais"])
                methods.append("ais")
                se = row["ais_stderr"]
                errors.append(float(se) if np.isfinite(se) else np.nan)
            elif np.isfinite(row.get("elbo_corrected", np.nan)):
                values.append(row["elbo_corrected"])
                methods.append("vbem")
                errors.append(np.nan)
            else:
                values.append(np.nan)
                methods.append("none")
                errors.append(np.nan)
        lz = np.asarray(values, dtype=np.float64)
        prob, low, high = posterior_probabilities(lz, errors, seed=self.seeds["posterior"])
        frame["log_evidence"] = lz
        frame["evidence_method"] = methods
        frame["log_evidence_stderr"] = errors
        frame["posterior_prob"] = prob
        frame["posterior_low"] = low
        frame["posterior_high"] = high
        best = np.nanmax(lz) if np.isfinite(lz).any() else np.nan
        frame["log_bayes_factor"] = lz - best

    # ------------------------------------------------------------------ views
    @property
    def best(self) -> str | None:
        """Name of the candidate with the highest ``log_evidence`` (``None`` if none)."""
        frame = self._frame
        if not np.isfinite(frame["log_evidence"]).any():
            return None
        return str(frame.loc[frame["log_evidence"].idxmax(), "name"])

    def metadata(self) -> dict:
        """The run's record: data shape, methods, settings, seeds, seconds, versions, flag
        thresholds and why exact evidences are missing."""
        d = self.data
        return {
            "data": {"n_rows": d.n_rows, "n_observed_rows": d.n_observed_rows,
                     "n_columns": d.n_columns, "n_patterns": d.n_patterns,
                     "columns": list(d.columns), "cardinalities": list(d.cardinalities)},
            "candidates": [{"name": n, "kind": s.kind, "structure": s.to_dict()}
                           for n, s in zip(self.names, self.structures, strict=True)],
            "methods": list(self.methods),
            "settings": dict(self.settings),
            "seeds": dict(self.seeds),
            "seconds": dict(self.seconds),
            "versions": dict(self.versions),
            "thresholds": {"AIS_BELOW_VBEM_SE": AIS_BELOW_VBEM_SE,
                           "AIS_MIN_ESS_FRACTION": AIS_MIN_ESS_FRACTION,
                           "AIS_OFF_EXACT_SE": AIS_OFF_EXACT_SE,
                           "EMPTY_CLASS_Z": EMPTY_CLASS_Z, "SINGULAR_LEVEL": SINGULAR_LEVEL,
                           "LOCAL_OPTIMUM_TOL": LOCAL_OPTIMUM_TOL,
                           "POSTERIOR_DRAWS": POSTERIOR_DRAWS,
                           "POSTERIOR_LEVEL": POSTERIOR_LEVEL},
            "exact_notes": {n: note for n, note in zip(self.names, self.exact_notes,
                                                       strict=True) if note},
            "flags": dict(FLAGS),
            "best": self.best,
        }

    def to_dict(self) -> dict:
        """``{"rows": [one JSON-ready object per candidate], "metadata": {...}}``: NaN and
        missing values are ``None``, ``flags`` a list of names."""
        rows = []
        for record in self._frame.to_dict(orient="records"):
            row = {k: _json_value(v) for k, v in record.items()}
            row["flags"] = [f for f in record["flags"].split(",") if f]
            rows.append(row)
        return {"rows": rows, "metadata": _json_value(self.metadata())}

    def summary(self) -> str:
        """A readable plain-text table with the flags explained underneath."""
        from .report import text_table

        return text_table(self)

    @cached_property
    def _pngs(self) -> dict[str, bytes]:
        """The report figures as PNG bytes, rendered once for every report."""
        from .report import figure_pngs

        return figure_pngs(self)

    def to_html(self, path: str | Path, title: str | None = None,
                sections: Mapping[str, str | pd.DataFrame] | None = None) -> Path:
        """Write a self-contained HTML report (:func:`lcbayes.report.write_html`)."""
        from .report import write_html

        return write_html(self, path, title=title, sections=sections)

    def to_markdown(self, path: str | Path | None = None, title: str | None = None,
                    sections: Mapping[str, str | pd.DataFrame] | None = None) -> str:
        """Markdown report (:func:`lcbayes.report.markdown`); with ``path``, also written
        there with the figures as PNG files beside it."""
        from .report import markdown

        return markdown(self, path, title=title, sections=sections)

    def __repr__(self) -> str:
        return (f"Comparison({len(self.names)} candidates: {', '.join(self.names)}; "
                f"methods={list(self.methods)}, best={self.best!r})")


def _json_value(value):
    """NaN, NA and NumPy scalars to JSON-ready values, recursively."""
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_json_value(v) for v in value.tolist()]
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


# ---------------------------------------------------------------------- validation
def _check_methods(methods) -> tuple[str, ...]:
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = list(methods)
    if not methods:
        raise LcbayesError(f"methods is empty; choose from {', '.join(METHODS)}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        hint = (" (the exact evidence is controlled by exact='auto'|True|False)"
                if "exact" in unknown else "")
        raise LcbayesError(f"unknown method(s) {unknown}; valid methods are "
                           f"{', '.join(METHODS)}{hint}")
    return tuple(dict.fromkeys(methods))


def _candidates(data: Dataset, candidates, classes) -> tuple[list[str], list[Structure]]:
    if (candidates is None) == (classes is None):
        raise LcbayesError("give exactly one of candidates (a list of structures) or "
                           "classes (e.g. range(1, 6) for latent class models)")
    if classes is not None:
        if isinstance(classes, int | np.integer) and not isinstance(classes, bool):
            classes = [classes]
        if isinstance(classes, str) or not isinstance(classes, Iterable):
            raise LcbayesError(f"classes must be integers such as range(1, 6), got "
                               f"{classes!r}")
        ks = list(classes)
        if not ks:
            raise LcbayesError("classes is empty; give numbers of classes such as range(1, 6)")
        for k in ks:
            if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
                raise LcbayesError(f"classes must be integers >= 1, got {k!r}")
        if len(set(ks)) != len(ks):
            raise LcbayesError(f"classes lists a number twice: {ks}")
        return [f"LC({int(k)})" for k in ks], [latent_class(data, int(k)) for k in ks]
    if isinstance(candidates, Structure):
        candidates = [candidates]
    if isinstance(candidates, Mapping):
        names, structures = [str(n) for n in candidates], list(candidates.values())
    else:
        structures = list(candidates)
        names = [None] * len(structures)
    if not structures:
        raise LcbayesError("candidates is empty; give at least one structure")
    for n, s in zip(names, structures, strict=True):
        if not isinstance(s, Structure):
            label = f"candidate {n!r}" if n is not None else "a candidate"
            raise LcbayesError(f"{label} is a {type(s).__name__}, not a Structure (build one "
                               "with lcb.latent_class, lcb.hlc or lcb.dag)")
    auto = [_structure_name(s) for s in structures]
    names = [n if n is not None else a for n, a in zip(names, auto, strict=True)]
    seen: dict[str, int] = {}
    for i, n in enumerate(names):  # distinct names for distinct structures with one label
        if n in seen:
            seen[n] += 1
            names[i] = f"{n}#{seen[n]}"
        else:
            seen[n] = 1
    for i in range(len(structures)):
        for j in range(i):
            if structures[i] == structures[j]:
                raise LcbayesError(f"candidates {names[j]!r} and {names[i]!r} are the same "
                                   "structure; give each structure once")
    for n, s in zip(names, structures, strict=True):
        missing = [c for c in s.observed_names if c not in data.columns]
        if missing:
            raise LcbayesError(f"candidate {n!r} observes column(s) {missing} that the data "
                               f"lack; the data have {list(data.columns)}")
        try:
            s.check_data(data)
        except StructureError as exc:
            raise LcbayesError(f"candidate {n!r}: {exc}") from None
    first = set(structures[0].observed_names)
    for n, s in zip(names, structures, strict=True):
        if set(s.observed_names) != first:
            raise LcbayesError(
                f"candidate {n!r} models columns {sorted(s.observed_names)} but "
                f"{names[0]!r} models {sorted(first)}: evidences of different data are not "
                "comparable; give every candidate the same columns")
    return names, structures


# ---------------------------------------------------------------------- the run
def _score(name: str, s: Structure, data: Dataset, bar, seconds: dict, *, use_em: bool,
           methods: tuple[str, ...], exact, max_terms: float, seed: int, restarts: int,
           iter_args: dict, ais_args: dict) -> dict:
    """Run every engine ``methods`` need on one candidate; adds the times to ``seconds``."""
    def timed(key: str, label: str, fn, *args, **kwargs):
        bar.set_postfix_str(f"{name}: {label}")
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[key] += time.perf_counter() - t

    ex, note = None, "not requested (exact=False)"
    if exact is not False:
        try:
            ex, note = timed("exact", "exact", exact_evidence, s, data, max_terms=max_terms), None
        except TooLargeError as exc:
            if exact is True:
                raise TooLargeError(f"candidate {name!r}: {exc}") from None
            note = f"too large for max_terms={max_terms:g}"
    dim = timed("effective_dimension", "effective dimension", effective_dimension, s)
    fit = timed("em", "EM", em, s, data, restarts=restarts, seed=seed, **iter_args) \
        if use_em else None
    vb = None
    if "vbem" in methods:
        vb = timed("vbem", "VBEM", vbem, s, data, restarts=restarts, seed=seed, **iter_args)
        if fit is not None:  # Corollary 6.2: started from the EM fit, F >= CS
            from_fit = timed("vbem", "VBEM", vbem, s, data, init=fit, **iter_args)
            if from_fit.elbo > vb.elbo:
                vb = from_fit
    run = timed("ais", "AIS", run_ais, s, data, **ais_args) if "ais" in methods else None
    return {"em": fit, "vbem": vb, "ais": run, "exact": ex, "notes": note, "dims": dim}


def compare(
    data: Dataset | pd.DataFrame,
    candidates: Sequence[Structure] | Mapping[str, Structure] | None = None,
    *,
    classes: Iterable[int] | int | None = None,
    methods: Sequence[str] | str = DEFAULT_METHODS,
    seed: int = 0,
    restarts: int = 10,
    ais_chains: int = 16,
    ais_temperatures: int = 4096,
    ais_kernel: Literal["mh", "gibbs"] = "mh",
    exact: bool | Literal["auto"] = "auto",
    max_terms: float = EXACT_MAX_TERMS,
    max_iter: int | None = None,
    progress: bool | None = None,
) -> Comparison:
    """Score every candidate structure by every requested method (module docstring).

    Args:
        data: the data (a :class:`~lcbayes.Dataset`, or a DataFrame of categorical columns).
        candidates: structures on the columns of ``data`` (any kind, all on the same columns),
            as a list (named ``"LC(3)"``, ``"HLC(...)"``, ``"DAG(...)"``) or ``{name:
            structure}``. Give this or ``classes``.
        classes: numbers of latent classes, e.g. ``range(1, 6)``: shorthand for
            ``[lcb.latent_class(data, k) for k in classes]``.
        methods: any of :data:`METHODS`: ``bic``, ``bic_e``, ``aic``, ``icl``, ``cs``,
            ``bicp`` (one ML EM fit serves all six), ``vbem``, ``ais``. Only what they need
            runs.
        seed: every engine runs with this seed (so any row can be reproduced by calling the
            engine directly), and so do the posterior Monte Carlo draws. The same seed gives
            the same table (apart from ``seconds``).
        restarts: random starts of EM and of VBEM.
        ais_chains, ais_temperatures, ais_kernel: AIS chains, annealing steps and kernel
            (:func:`lcbayes.ais`, Beal's schedule).
        exact: ``"auto"`` computes the exact evidence where it needs at most ``max_terms``
            terms (a structure with nothing hidden to sum, e.g. one class, always), ``True``
            requires it (:class:`~lcbayes.TooLargeError` otherwise), ``False`` skips it.
        max_terms: the exact evidence's limit on distinct count tables.
        max_iter: iteration limit of EM and VBEM (default: theirs, 2000 and 1000).
        progress: a progress bar over the candidates (and AIS temperatures) on stderr;
            ``None``: when stderr is a terminal.

    Returns:
        A :class:`Comparison`; ``.to_frame()`` is the table.
    """
    if isinstance(data, pd.DataFrame):
        data = Dataset.from_pandas(data)
    if not isinstance(data, Dataset):
        raise LcbayesError(f"data must be a lcbayes Dataset or a pandas DataFrame, got "
                           f"{type(data).__name__}")
    methods = _check_methods(methods)
    if exact not in ("auto", True, False):
        raise LcbayesError(f"exact must be 'auto', True or False, got {exact!r}")
    for name, value in (("seed", seed), ("restarts", restarts), ("ais_chains", ais_chains),
                        ("ais_temperatures", ais_temperatures)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or (
                value < (0 if name == "seed" else 1)):
            raise LcbayesError(f"{name} must be an integer >= {0 if name == 'seed' else 1}, "
                               f"got {value!r}")
    if ais_kernel not in ("mh", "gibbs"):
        raise LcbayesError(f"ais_kernel must be 'mh' or 'gibbs', got {ais_kernel!r}")
    names, structures = _candidates(data, candidates, classes)
    data = structures[0].check_data(data)
    use_em = any(m in _EM_METHODS for m in methods)
    iter_args = {} if max_iter is None else {"max_iter": max_iter}
    seconds = dict.fromkeys(("exact", "em", "effective_dimension", "vbem", "ais"), 0.0)
    results: dict[str, list] = {k: [] for k in ("em", "vbem", "ais", "exact", "notes", "dims")}
    show = sys.stderr.isatty() if progress is None else bool(progress)
    started = time.perf_counter()
    from tqdm.auto import tqdm

    bar = tqdm(total=len(structures), desc="compare", unit="model", disable=not show,
               file=sys.stderr)
    options = {"use_em": use_em, "methods": methods, "exact": exact, "max_terms": max_terms,
               "seed": seed, "restarts": restarts, "iter_args": iter_args,
               "ais_args": {"chains": ais_chains, "temperatures": ais_temperatures,
                            "seed": seed, "kernel": ais_kernel, "progress": show}}
    try:
        for name, s in zip(names, structures, strict=True):
            for key, value in _score(name, s, data, bar, seconds, **options).items():
                results[key].append(value)
            bar.update(1)
    finally:
        bar.close()
    seconds["total"] = time.perf_counter() - started
    settings = {"restarts": int(restarts), "ais_chains": int(ais_chains),
                "ais_temperatures": int(ais_temperatures), "ais_kernel": ais_kernel,
                "ais_schedule": "beal", "exact": exact, "max_terms": float(max_terms),
                "max_iter": max_iter, "em_estimator": "ml", "prior": "dirichlet(1)",
                "vbem_starts": "restarts prior draws + one from the EM fit"
                if use_em else "restarts prior draws",
                "model_prior": "uniform"}
    seeds = {"em": int(seed), "vbem": int(seed), "ais": int(seed), "posterior": int(seed),
             "effective_dimension": 0}
    return Comparison(
        names=tuple(names), structures=tuple(structures), methods=methods,
        em=tuple(results["em"]), vbem=tuple(results["vbem"]), ais=tuple(results["ais"]),
        exact=tuple(results["exact"]), exact_notes=tuple(results["notes"]),
        effective_dimensions=tuple(int(d) for d in results["dims"]), data=data,
        settings=settings, seeds=seeds, seconds=seconds, versions=_versions(),
    )
