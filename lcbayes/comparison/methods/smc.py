"""The default evidence of a latent class model: two independent estimates of
``ln p(y | m)``, reference-tempered SMC (:func:`lcbayes.smc`, columns ``smc``, ``smc_stderr``)
and bridge sampling from Gibbs chains (:func:`lcbayes.bridge_sampling`, ``bridge``,
``bridge_stderr``), and ``smc_evidence`` their combination by
:func:`lcbayes.comparison.policy.combine` (HLC trees and DAGs: the SMC estimate alone).

Flags (thresholds in :mod:`lcbayes.comparison.policy`):

* ``evidence_disagree``: ``|smc - bridge| > DISAGREE_SE * sqrt(se_smc^2 + se_bridge^2)``: at
  least one error bar is too small; ``smc_evidence`` is then the union of their intervals.
* ``smc_below_vbem``: ``smc_evidence < F - BELOW_BOUND_SE * se`` with the uncorrected VB bound
  ``F``: a lower bound cannot exceed the evidence, so the estimate is wrong; it is not used.
* ``smc_reference_moving``: doubling the SMC's reference components still moved its estimate
  at the largest reference (:attr:`lcbayes.SMCResult.reference_stable`); the move is in its
  error bar.
* ``smc_no_estimate``: an estimator has no estimate or no standard error (too few runs within
  the time budget); the reason is the flag's text.
* ``chib_disagree`` (when ``chib`` is requested too and is reliable): ``|smc_evidence - chib| >
  DISAGREE_SE * sqrt(se^2 + se_chib^2)``.
"""

from __future__ import annotations

import math

import numpy as np

from ...samplers.smc_result import ROUNDING
from ..policy import BELOW_BOUND_SE, DISAGREE_SE, ROLES, combine
from ..registry import Column, Flag, Method, register_flag

__all__ = ["METHOD"]


def _pair(result) -> tuple[float, float]:
    if result is None:
        return math.nan, math.nan
    return float(result.log_evidence), float(result.stderr)


def _values(fits) -> dict[str, float]:
    smc, bridge = _pair(fits.smc), _pair(fits.bridge)
    value, se, _ = combine(smc, bridge)
    return {"smc_evidence": value, "smc_evidence_stderr": se, "smc": smc[0],
            "smc_stderr": smc[1], "bridge": bridge[0], "bridge_stderr": bridge[1]}


def _finite(row: dict, *columns: str) -> bool:
    return all(np.isfinite(row.get(c, np.nan)) for c in columns)


def _apart(name_a: str, a: float, name_b: str, b: float, se: float) -> str | None:
    """The reason of a disagreement flag: ``a`` and ``b`` more than :data:`DISAGREE_SE`
    combined standard errors ``se`` apart."""
    gap = abs(a - b)
    if gap > DISAGREE_SE * se + ROUNDING:
        return f"{name_a} {a:.2f} vs {name_b} {b:.2f}: {gap:.2f} apart, combined s.e. {se:.2f}"
    return None


def _disagree(comp, i: int) -> str | None:
    row = comp.rows[i]
    if not _finite(row, "bridge", "smc", "bridge_stderr", "smc_stderr"):
        return None
    return _apart("SMC", row["smc"], "bridge", row["bridge"],
                  math.hypot(row["bridge_stderr"], row["smc_stderr"]))


def _chib_disagree(comp, i: int) -> str | None:
    row = comp.rows[i]
    result = (comp.fits.get("chib") or (None,) * len(comp.names))[i]
    if result is None or not result.reliable or not _finite(row, "smc_evidence", "chib",
                                                            "chib_stderr"):
        return None
    se = math.hypot(np.nan_to_num(row.get("smc_evidence_stderr", 0.0)), row["chib_stderr"])
    return _apart("SMC/bridge", row["smc_evidence"], "Chib", row["chib"], se)


def _below_vbem(comp, i: int) -> str | None:
    row = comp.rows[i]
    if not _finite(row, "smc_evidence", "elbo"):
        return None
    se = row.get("smc_evidence_stderr", np.nan)
    se = float(se) if np.isfinite(se) else 0.0
    gap = row["elbo"] - row["smc_evidence"]
    # float64 sums over N rows round to about N eps |ln Z|: a relative slack of 1e-9 covers them
    if gap > BELOW_BOUND_SE * se + ROUNDING + 1e-9 * abs(row["elbo"]):
        return (f"SMC/bridge {row['smc_evidence']:.2f} is {gap:.2f} below F = "
                f"{row['elbo']:.2f} (s.e. {se:.2f})")
    return None


def _results(comp, need: str, i: int):
    return (comp.fits.get(need) or (None,) * len(comp.names))[i]


def _moving(comp, i: int) -> str | None:
    result = _results(comp, "smc", i)
    if result is None or result.reference_stable:
        return None
    if not np.isfinite(result.moved):
        return ("the runs had more distinct optima than one round's reference components "
                "(max_components), so whether more would move the estimate was not measured")
    return (f"the last doubling of the reference components moved the SMC estimate by "
            f"{result.moved:.2f} nats; it is in the error bar")


def _no_estimate(comp, i: int) -> str | None:
    reasons = []
    smc = _results(comp, "smc", i)
    if smc is not None and smc.reason:
        reasons.append(f"SMC: {smc.reason}")
    bridge = _results(comp, "bridge", i)
    if bridge is not None and not np.isfinite(bridge.stderr):
        reasons.append("bridge: fewer than two finished runs")
    return "; ".join(reasons) or None


EVIDENCE_DISAGREE = register_flag(Flag(
    "evidence_disagree",
    f"reference-tempered SMC and bridge sampling differ by more than {DISAGREE_SE:g} combined "
    "standard errors: an error bar is too small, so the evidence is the union of their "
    "intervals; raise smc particles or bridge_sampling draws",
    _disagree, cells=("bridge", "smc"), thresholds={"DISAGREE_SE": DISAGREE_SE}))
SMC_BELOW_VBEM = register_flag(Flag(
    "smc_below_vbem",
    f"the SMC/bridge evidence is below the VBEM lower bound F by more than "
    f"{BELOW_BOUND_SE:g} standard errors, so it is wrong; log_evidence falls back to the "
    "next estimate",
    _below_vbem, cells=("bridge", "smc", "elbo"), thresholds={"BELOW_BOUND_SE": BELOW_BOUND_SE}))
SMC_REFERENCE_MOVING = register_flag(Flag(
    "smc_reference_moving",
    "doubling the SMC's reference components still moved its estimate at the largest "
    "reference: its error bar includes the move; raise smc max_components",
    _moving, cells=("smc",)))
SMC_NO_ESTIMATE = register_flag(Flag(
    "smc_no_estimate",
    "an SMC or bridge estimate or its standard error is missing (too few runs within the time "
    "budget)",
    _no_estimate, cells=("bridge", "smc")))
CHIB_DISAGREE = register_flag(Flag(
    "chib_disagree",
    f"the SMC/bridge evidence and Chib's (reliable) estimate differ by more than "
    f"{DISAGREE_SE:g} combined standard errors: an error bar is too small",
    _chib_disagree, cells=("bridge", "chib"), thresholds={"DISAGREE_SE": DISAGREE_SE}))

METHOD = Method(
    name="smc",
    description="reference-tempered SMC and bridge sampling of ln p(y | m), with errors",
    needs=("smc", "bridge"),
    columns=(Column("smc_evidence", "SMC/bridge", in_report=False),
             Column("smc_evidence_stderr", "SMC/bridge s.e.", in_report=False),
             Column("smc", "SMC"), Column("smc_stderr", "SMC s.e.", in_report=False),
             Column("bridge", "bridge"), Column("bridge_stderr", "bridge s.e.", in_report=False)),
    values=_values, ranked="smc_evidence",
    flags=(EVIDENCE_DISAGREE, SMC_BELOW_VBEM, SMC_REFERENCE_MOVING, SMC_NO_ESTIMATE,
           CHIB_DISAGREE),
    evidence=ROLES["smc"], plot=("SMC/bridge", "tab:brown", "v"))
