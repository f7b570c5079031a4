"""Diagnostic flags of the comparison table (registry :class:`~.registry.Flag`), in the order
they are listed, with the rules behind them (the thresholds of the evidence flags live in
:mod:`lcbayes.comparison.policy`; the two-letter code of each in the narrow plain-text table is
in :data:`SHORT_CODES`):

* ``ais_below_vbem``: ``ais < elbo - AIS_BELOW_VBEM_SE * ais_stderr`` with the *uncorrected*
  bound. ``F`` is a guaranteed lower bound, so the AIS run has not found the posterior mass:
  too few temperatures or a poor kernel (Beal & Ghahramani §5, Table 3).
* ``ais_low_ess``: the AIS weights' effective number of chains is below ``AIS_MIN_ESS_FRACTION``
  of the chains: a few chains carry the estimate, so its standard error is itself unreliable
  (typically too small) and the schedule should be longer.
* ``ais_no_estimate``: the effective number of chains is below ``AIS_NO_ESTIMATE_ESS`` (2):
  about one chain carries the mean, so it is no estimate and has no error bar
  (:attr:`lcbayes.AISResult.no_estimate`); ``log_evidence`` falls back to the next estimate.
* ``ais_off_exact``: ``|ais - exact| > AIS_OFF_EXACT_SE * ais_stderr``: the AIS error bar is
  too small.
* ``chib_unreliable``: Chib's chains disagree about ``ln p(theta* | y)`` or a few draws carry
  it (:attr:`lcbayes.ChibResult.reliable`; the reason is the result's): the estimate is too
  high by an unknown amount (over-fitted ``K``), so ``log_evidence`` falls back.
* ``not_converged``: the best EM or VBEM restart stopped at ``max_iter``.
* ``em_local_optimum`` (latent class ``K`` with ``K - 1`` classes also fitted on the same
  columns): ``loglik_K < loglik_{K-1} - LOCAL_OPTIMUM_TOL``. ``K`` classes contain every
  ``K - 1``-class distribution, so EM stopped at a local maximum: use more restarts.
* ``bic_singular`` (latent class ``K >= 2``): the ML fit sits (statistically) at a singular
  point of the ``K``-class model, where the Fisher information is singular and BIC's
  ``d/2 ln N`` is not the right penalty: the log evidence falls like ``lambda ln N`` with a
  learning coefficient ``lambda < d/2`` (Watanabe 2009; Drton & Plummer 2017), so BIC
  over-penalises this row and overstates the evidence against it. Any of
  (:func:`singular_reasons`):

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
"""

from __future__ import annotations

import numpy as np

from ..engines.em_result import EMResult
from ..render import plural
from . import registry
from .policy import AIS_BELOW_VBEM_SE, AIS_MIN_ESS_FRACTION, AIS_NO_ESTIMATE_ESS, AIS_OFF_EXACT_SE
from .registry import Flag, register_flag

__all__ = ["AIS_BELOW_VBEM", "AIS_BELOW_VBEM_SE", "AIS_LOW_ESS", "AIS_MIN_ESS_FRACTION",
           "AIS_NO_ESTIMATE", "AIS_NO_ESTIMATE_ESS", "AIS_OFF_EXACT", "AIS_OFF_EXACT_SE",
           "BIC_SINGULAR", "CHIB_UNRELIABLE", "EMPTY_CLASS_Z", "EM_FLAGS", "EM_LOCAL_OPTIMUM",
           "LOCAL_OPTIMUM_TOL", "NOT_CONVERGED", "SHORT_CODES", "SINGULAR_LEVEL", "flag_table",
           "short_code",
           "singular_reasons"]

#: ``bic_singular`` (1): a class share within this many standard errors of zero is "empty".
EMPTY_CLASS_Z = 2.0
#: ``bic_singular`` (2, 3): significance level of the "identical classes" and "no gain" tests.
SINGULAR_LEVEL = 0.05
#: ``em_local_optimum``: tolerated log-likelihood deficit of ``K`` classes below ``K - 1``,
#: in nats (EM stops short of the maximum by a little, slowly near singular points).
LOCAL_OPTIMUM_TOL = 0.01


def _finite(row: dict, column: str) -> bool:
    return np.isfinite(row.get(column, np.nan))


def _ais_se(row: dict) -> float:
    se = row.get("ais_stderr", np.nan)
    return 0.0 if not np.isfinite(se) else float(se)


def _ais_below_vbem(comp, i: int) -> str | None:
    row = comp.rows[i]
    if not (_finite(row, "ais") and _finite(row, "elbo")):
        return None
    gap, se = row["elbo"] - row["ais"], _ais_se(row)
    if gap > AIS_BELOW_VBEM_SE * se:
        return f"AIS {row['ais']:.2f} is {gap:.2f} below F = {row['elbo']:.2f} (AIS s.e. {se:.2f})"
    return None


def _ais_low_ess(comp, i: int) -> str | None:
    result = comp.ais[i]
    if result is not None and result.low_ess:
        return f"AIS ESS {result.ess:.1f} of {plural(result.chains, 'chain')}"
    return None


def _ais_no_estimate(comp, i: int) -> str | None:
    result = comp.ais[i]
    return result.reason if result is not None and result.no_estimate else None


def _chib_unreliable(comp, i: int) -> str | None:
    result = comp.fits.get("chib", (None,) * len(comp.names))[i]
    return result.reason if result is not None and not result.reliable else None


def _ais_off_exact(comp, i: int) -> str | None:
    row = comp.rows[i]
    if not (_finite(row, "ais") and _finite(row, "exact")):
        return None
    miss, se = abs(row["ais"] - row["exact"]), _ais_se(row)
    if miss > AIS_OFF_EXACT_SE * se:
        return f"AIS {row['ais']:.2f} vs exact {row['exact']:.2f} (AIS s.e. {se:.2f})"
    return None


def _not_converged(comp, i: int) -> str | None:
    stalled = [name for name, key in (("EM", "em"), ("VBEM", "vbem"))
               if getattr(comp, key)[i] is not None and not getattr(comp, key)[i].converged]
    return " and ".join(stalled) + " stopped at max_iter" if stalled else None


def _previous(comp, i: int) -> int | None:
    """The latent class candidate with one class fewer on the same columns (fitted by EM)."""
    s = comp.structures[i]
    if s.kind != "latent_class" or comp.em[i] is None:
        return None
    found = None
    for j, t in enumerate(comp.structures):
        if (t.kind == "latent_class" and comp.em[j] is not None
                and t.n_classes == s.n_classes - 1
                and set(t.observed_names) == set(s.observed_names)):
            found = j
    return found


def _em_local_optimum(comp, i: int) -> str | None:
    j = _previous(comp, i)
    if j is None:
        return None
    fit, previous = comp.em[i], comp.em[j]
    if fit.loglik < previous.loglik - LOCAL_OPTIMUM_TOL:
        return (f"loglik {fit.loglik:.3f} < {previous.loglik:.3f} of "
                f"{plural(comp.structures[i].n_classes - 1, 'class', 'classes')}")
    return None


def _bic_singular(comp, i: int) -> str | None:
    fit = comp.em[i]
    if fit is None or comp.structures[i].kind != "latent_class":
        return None
    j = _previous(comp, i)
    dims = ((comp.effective_dimensions[j], comp.effective_dimensions[i])
            if j is not None else None)
    reasons = singular_reasons(fit, comp.em[j] if j is not None else None, dims)
    return "; ".join(reasons) if reasons else None


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
    from scipy.special import chdtrc, chdtri  # chi-square tails (scipy.stats is slow to load)

    s = fit.structure
    if s.n_classes is None or s.n_classes < 2:  # None: not a latent class model
        return []
    reasons = []
    sizes = np.asarray(fit.expected_counts[s.nodes[s.root]], dtype=np.float64)
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
            if df > 0 and stat < chdtri(df, SINGULAR_LEVEL):
                reasons.append(f"classes {a + 1} and {b + 1} do not differ (Pearson "
                               f"chi-square {stat:.2f} on {df} df, p = "
                               f"{chdtrc(df, stat):.2f})")
    if previous is not None:
        d_prev, d_this = dims if dims is not None else (previous.n_parameters,
                                                        fit.n_parameters)
        df = max(int(d_this) - int(d_prev), 1)
        lr = 2.0 * (fit.loglik - previous.loglik)
        if lr < chdtri(df, SINGULAR_LEVEL):
            reasons.append(f"no significant gain over "
                           f"{plural(s.n_classes - 1, 'class', 'classes')} "
                           f"(2 x gain = {lr:.2f}, below the {1 - SINGULAR_LEVEL:.0%} "
                           f"quantile {chdtri(df, SINGULAR_LEVEL):.2f} of "
                           f"chi-square({df}))")
    return reasons


AIS_BELOW_VBEM = register_flag(Flag(
    "ais_below_vbem",
    f"AIS is below the VBEM lower bound F by more than {AIS_BELOW_VBEM_SE:g} standard errors: "
    "the AIS run is unreliable (too few temperatures or a poor kernel; Beal & Ghahramani "
    "Table 3); log_evidence falls back to the next trusted estimate (never the VB bound)",
    _ais_below_vbem, cells=("ais", "elbo"), thresholds={"AIS_BELOW_VBEM_SE": AIS_BELOW_VBEM_SE}))
AIS_LOW_ESS = register_flag(Flag(
    "ais_low_ess",
    f"the AIS weights' effective number of chains is below {AIS_MIN_ESS_FRACTION:.0%} of the "
    "chains: its standard error is unreliable; use more temperatures",
    _ais_low_ess, thresholds={"AIS_MIN_ESS_FRACTION": AIS_MIN_ESS_FRACTION}))
AIS_NO_ESTIMATE = register_flag(Flag(
    "ais_no_estimate",
    f"the AIS weights' effective number of chains is below {AIS_NO_ESTIMATE_ESS:g}: about one "
    "chain carries the estimate, so it is no estimate and has no standard error; log_evidence "
    "falls back to the next trusted estimate (never the VB bound); anneal more slowly or use "
    "smc",
    _ais_no_estimate, cells=("ais",), thresholds={"AIS_NO_ESTIMATE_ESS": AIS_NO_ESTIMATE_ESS}))
AIS_OFF_EXACT = register_flag(Flag(
    "ais_off_exact",
    f"AIS differs from the exact evidence by more than {AIS_OFF_EXACT_SE:g} standard errors: "
    "its error bar is too small",
    _ais_off_exact, cells=("ais", "exact"), thresholds={"AIS_OFF_EXACT_SE": AIS_OFF_EXACT_SE}))
CHIB_UNRELIABLE = register_flag(Flag(
    "chib_unreliable",
    "Chib's chains disagree about the posterior ordinate or a few draws carry it (the sampler "
    "did not explore the posterior, typically K larger than the data support): the estimate "
    "is too high by an unknown amount; log_evidence falls back to the next estimate",
    _chib_unreliable, cells=("chib",)))
NOT_CONVERGED = register_flag(Flag(
    "not_converged", "the best EM or VBEM restart stopped at max_iter", _not_converged,
    cells=("loglik", "elbo")))
EM_LOCAL_OPTIMUM = register_flag(Flag(
    "em_local_optimum",
    "EM found a lower log-likelihood for K classes than for K - 1, which it contains: a local "
    "maximum; use more restarts",
    _em_local_optimum, cells=("loglik",), thresholds={"LOCAL_OPTIMUM_TOL": LOCAL_OPTIMUM_TOL}))
BIC_SINGULAR = register_flag(Flag(
    "bic_singular",
    "the K-class ML fit is at a singular point (an almost empty class, two almost identical "
    "classes or no significant gain over K - 1 classes): BIC's d/2 ln N over-penalises it "
    "(Watanabe)",
    _bic_singular, cells=("bic", "bic_e"),
    thresholds={"EMPTY_CLASS_Z": EMPTY_CLASS_Z, "SINGULAR_LEVEL": SINGULAR_LEVEL}))

#: The flags of every method that reads the EM fit.
EM_FLAGS = (NOT_CONVERGED, EM_LOCAL_OPTIMUM, BIC_SINGULAR)

#: Two-letter codes of the flags in the narrow plain-text table (``lcbayes compare`` without
#: ``--wide``), explained under it.
SHORT_CODES = {"ais_below_vbem": "AB", "ais_low_ess": "AE", "ais_no_estimate": "AN",
               "ais_off_exact": "AX", "chib_unreliable": "CU", "not_converged": "NC",
               "em_local_optimum": "LO", "bic_singular": "SG", "evidence_disagree": "ED",
               "smc_below_vbem": "SB", "smc_reference_moving": "RM", "smc_no_estimate": "SN",
               "chib_disagree": "CD", "loo_unreliable": "LU"}


def short_code(name: str) -> str:
    """The flag's code in the narrow text table (:data:`SHORT_CODES`; a flag registered
    elsewhere keeps its name)."""
    return SHORT_CODES.get(name, name)


def flag_table() -> str:
    """The guide's Markdown table of every registered flag (``registry.flags()``, so the
    methods' own flags too once :mod:`lcbayes.comparison.methods` is imported): its name, its
    code in the narrow text table and its description."""
    lines = ["| flag | code | what it says |", "|---|---|---|"]
    lines += [f"| `{flag.name}` | {short_code(flag.name)} | {flag.description} |"
              for flag in registry.flags()]
    return "\n".join(lines)
