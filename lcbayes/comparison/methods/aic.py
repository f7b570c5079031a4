"""``aic = loglik - d`` of the ML EM fit (Akaike 1974)."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]

METHOD = Method(
    name="aic", description="AIC = loglik - d of the ML EM fit", needs=("em",),
    columns=(Column("aic", "AIC"),), values=lambda fits: {"aic": fits.em.aic}, ranked="aic",
    flags=EM_FLAGS, plot=("AIC", "tab:gray", "s"))

