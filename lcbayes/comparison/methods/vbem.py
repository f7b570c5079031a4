"""The variational lower bound ``elbo = F <= ln p(y | m)`` of VBEM (Beal & Ghahramani eqs
51-61) and ``elbo_corrected = F + ln S``, which is ranked. A bound, never a candidate's log
evidence (:mod:`lcbayes.comparison.policy`): it vetoes estimates that fall below it."""

from __future__ import annotations

from ..flags import NOT_CONVERGED
from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    vb = fits.vbem
    return {"elbo": vb.elbo, "elbo_corrected": vb.elbo_corrected}


METHOD = Method(
    name="vbem", description="the VBEM lower bound F (+ ln S)", needs=("vbem",),
    columns=(Column("elbo", "VB F*"), Column("elbo_corrected", "VB F + ln S")), values=_values,
    ranked="elbo_corrected", flags=(NOT_CONVERGED,),
    plot=("VB F + ln S", "tab:green", "P"))

