"""The variational lower bound ``elbo = F <= ln p(y | m)`` of VBEM (Beal & Ghahramani eqs
51-61) and ``elbo_corrected = F + ln S``, which is ranked and is the log evidence of last resort
(after the exact value and AIS)."""

from __future__ import annotations

from ..flags import NOT_CONVERGED
from ..registry import Column, EvidenceRole, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    vb = fits.vbem
    return {"elbo": vb.elbo, "elbo_corrected": vb.elbo_corrected}


METHOD = Method(
    name="vbem", description="the VBEM lower bound F (+ ln S)", needs=("vbem",),
    columns=(Column("elbo", "VB F*"), Column("elbo_corrected", "VB F + ln S")), values=_values,
    ranked="elbo_corrected", flags=(NOT_CONVERGED,),
    evidence=EvidenceRole(priority=2, value="elbo_corrected"),
    plot=("VB F + ln S", "tab:green", "P"))

