"""``icl = bic - entropy`` of the posterior class memberships at the ML EM fit (Biernacki,
Celeux & Govaert 2000, "ICL-BIC")."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]

METHOD = Method(
    name="icl", description="ICL = BIC - entropy of the class memberships", needs=("em",),
    columns=(Column("icl", "ICL"),), values=lambda fits: {"icl": fits.em.icl}, ranked="icl",
    flags=EM_FLAGS, plot=("ICL", "tab:olive", "D"))

