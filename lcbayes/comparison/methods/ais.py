"""Annealed importance sampling (Beal & Ghahramani eqs 62-68): ``ais = ln Z_hat`` with its
delta-method standard error ``ais_stderr`` and effective number of chains ``ais_ess``; the log
evidence of a row without an exact value, unless flagged ``ais_below_vbem`` (too low) or
``ais_no_estimate`` (about one chain carries it)."""

from __future__ import annotations

from ..flags import AIS_BELOW_VBEM, AIS_LOW_ESS, AIS_NO_ESTIMATE, AIS_OFF_EXACT
from ..policy import ROLES
from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    run = fits.ais
    nan = float("nan")
    return {"ais": nan if run is None else float(run.log_evidence),
            "ais_stderr": nan if run is None else float(run.stderr),
            "ais_ess": nan if run is None else float(run.ess)}


METHOD = Method(
    name="ais", description="annealed importance sampling of ln p(y | m), with its error",
    needs=("ais",),
    columns=(Column("ais", "AIS"), Column("ais_stderr", "AIS s.e.", in_report=False),
             Column("ais_ess", "AIS ESS", in_report=False)),
    values=_values, ranked="ais",
    flags=(AIS_BELOW_VBEM, AIS_LOW_ESS, AIS_NO_ESTIMATE, AIS_OFF_EXACT),
    evidence=ROLES["ais"],
    plot=("AIS", "tab:red", "X"), default=False)

