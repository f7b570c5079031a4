"""SMC over the rows and bridge sampling (:func:`lcbayes.smc`): two estimates of
``ln p(y | m)`` from independent runs, ``bridge`` (bridge sampling from the final particles) and
``smc`` (the SMC product of mean weights), each with its standard error; ``smc_evidence`` is
:attr:`lcbayes.SMCResult.log_evidence` (the more precise where they agree, the larger where they
disagree), the log evidence of a row without an exact value unless flagged ``smc_below_vbem``.

Flags (thresholds reported in the run's metadata):

* ``smc_disagree``: ``|bridge - smc| > SMC_DISAGREE_SE * sqrt(se_bridge^2 + se_smc^2)``: the two
  estimators do not agree within their error bars, so at least one error bar is too small
  (more particles: ``smc_particles``, or a larger ``time_limit``).
* ``smc_below_vbem``: ``smc_evidence < F - SMC_BELOW_VBEM_SE * se`` with the uncorrected VB bound
  ``F``: a lower bound cannot exceed the evidence, so the estimate is wrong; it is not used.
* ``smc_no_estimate``: a run statistic gave no estimate (too few runs in the time budget, or runs
  spread too widely); the reason is the flag's text. HLC trees and DAGs have the SMC estimate
  alone (no bridge sampling), which is not flagged.
* ``chib_disagree`` (when ``chib`` is requested too and is reliable): ``|smc_evidence - chib| >
  SMC_DISAGREE_SE * sqrt(se^2 + se_chib^2)``. Chib's estimator (independent Gibbs chains,
  symmetrised over the relabellings) is the independent cross-check where K is not larger than
  the data support; on over-fitted K it flags itself ``chib_unreliable``.
"""

from __future__ import annotations

import math

import numpy as np

from ...samplers.smc_result import ROUNDING
from ..registry import Column, EvidenceRole, Flag, Method, register_flag

__all__ = ["METHOD", "SMC_BELOW_VBEM_SE", "SMC_DISAGREE_SE"]

#: ``smc_disagree`` fires beyond this many combined standard errors.
SMC_DISAGREE_SE = 2.0
#: ``smc_below_vbem`` fires below ``F`` by more than this many standard errors.
SMC_BELOW_VBEM_SE = 2.0


def _values(fits) -> dict[str, float]:
    run = fits.smc
    nan = math.nan
    if run is None:
        return dict.fromkeys(("smc_evidence", "smc_evidence_stderr", "bridge",
                              "bridge_stderr", "smc", "smc_stderr"), nan)
    return {"smc_evidence": run.log_evidence, "smc_evidence_stderr": run.stderr,
            "bridge": run.bridge_log_evidence, "bridge_stderr": run.bridge_stderr,
            "smc": run.smc_log_evidence, "smc_stderr": run.smc_stderr}


def _finite(row: dict, *columns: str) -> bool:
    return all(np.isfinite(row.get(c, np.nan)) for c in columns)


def _apart(name_a: str, a: float, name_b: str, b: float, se: float) -> str | None:
    """The reason of a disagreement flag: ``a`` and ``b`` more than :data:`SMC_DISAGREE_SE`
    combined standard errors ``se`` apart."""
    gap = abs(a - b)
    if gap > SMC_DISAGREE_SE * se + ROUNDING:
        return f"{name_a} {a:.2f} vs {name_b} {b:.2f}: {gap:.2f} apart, combined s.e. {se:.2f}"
    return None


def _disagree(comp, i: int) -> str | None:
    row = comp.rows[i]
    if not _finite(row, "bridge", "smc", "bridge_stderr", "smc_stderr"):
        return None
    return _apart("bridge", row["bridge"], "SMC", row["smc"],
                  math.hypot(row["bridge_stderr"], row["smc_stderr"]))


def _chib_disagree(comp, i: int) -> str | None:
    row = comp.rows[i]
    result = (comp.fits.get("chib") or (None,) * len(comp.names))[i]
    if result is None or not result.reliable or not _finite(row, "smc_evidence", "chib",
                                                            "chib_stderr"):
        return None
    se = math.hypot(row.get("smc_evidence_stderr", 0.0) or 0.0, row["chib_stderr"])
    return _apart("SMC/bridge", row["smc_evidence"], "Chib", row["chib"], se)


def _below_vbem(comp, i: int) -> str | None:
    row = comp.rows[i]
    if not _finite(row, "smc_evidence", "elbo"):
        return None
    se = row.get("smc_evidence_stderr", np.nan)
    se = float(se) if np.isfinite(se) else 0.0
    gap = row["elbo"] - row["smc_evidence"]
    # float64 sums over N rows round to about N eps |ln Z|: a relative slack of 1e-9 covers them
    if gap > SMC_BELOW_VBEM_SE * se + ROUNDING + 1e-9 * abs(row["elbo"]):
        return (f"SMC/bridge {row['smc_evidence']:.2f} is {gap:.2f} below F = "
                f"{row['elbo']:.2f} (s.e. {se:.2f})")
    return None


def _no_estimate(comp, i: int) -> str | None:
    result = (comp.fits.get("smc") or (None,) * len(comp.names))[i]
    if result is None:
        return None
    checked = (("bridge", result.bridge_reason),) if result.n_classes is not None else ()
    reasons = [f"{name}: {reason}" for name, reason in (*checked, ("SMC", result.smc_reason))
               if reason]
    return "; ".join(reasons) or None


SMC_DISAGREE = register_flag(Flag(
    "smc_disagree",
    f"bridge sampling and the SMC estimate differ by more than {SMC_DISAGREE_SE:g} combined "
    "standard errors: an error bar is too small; raise smc_particles or the time budget",
    _disagree, cells=("bridge", "smc"), thresholds={"SMC_DISAGREE_SE": SMC_DISAGREE_SE}))
SMC_BELOW_VBEM = register_flag(Flag(
    "smc_below_vbem",
    f"the SMC/bridge evidence is below the VBEM lower bound F by more than "
    f"{SMC_BELOW_VBEM_SE:g} standard errors, so it is wrong; log_evidence falls back to the "
    "next estimate",
    _below_vbem, cells=("bridge", "smc", "elbo"),
    thresholds={"SMC_BELOW_VBEM_SE": SMC_BELOW_VBEM_SE}))
SMC_NO_ESTIMATE = register_flag(Flag(
    "smc_no_estimate",
    "an SMC or bridge estimate is missing (too few runs within the time budget, or runs that "
    "spread too widely to average)",
    _no_estimate, cells=("bridge", "smc")))

CHIB_DISAGREE = register_flag(Flag(
    "chib_disagree",
    f"the SMC/bridge evidence and Chib's (reliable) estimate differ by more than "
    f"{SMC_DISAGREE_SE:g} combined standard errors: an error bar is too small",
    _chib_disagree, cells=("bridge", "chib"), thresholds={"SMC_DISAGREE_SE": SMC_DISAGREE_SE}))

METHOD = Method(
    name="smc",
    description="SMC over the rows and bridge sampling of ln p(y | m), with errors",
    needs=("smc",),
    columns=(Column("smc_evidence", "SMC/bridge", in_report=False),
             Column("smc_evidence_stderr", "SMC/bridge s.e.", in_report=False),
             Column("bridge", "bridge"), Column("bridge_stderr", "bridge s.e.", in_report=False),
             Column("smc", "SMC"), Column("smc_stderr", "SMC s.e.", in_report=False)),
    values=_values, ranked="smc_evidence", flags=(SMC_DISAGREE, SMC_BELOW_VBEM, SMC_NO_ESTIMATE,
                                                     CHIB_DISAGREE),
    evidence=EvidenceRole(priority=0.5, value="smc_evidence", stderr="smc_evidence_stderr",
                          vetoed_by=("smc_below_vbem",)),
    plot=("SMC/bridge", "tab:brown", "v"))
