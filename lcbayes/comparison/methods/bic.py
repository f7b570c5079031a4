"""``bic = loglik - d/2 ln N`` of the ML EM fit (Schwarz 1978; Beal & Ghahramani eq. 22), with
``d`` free parameters and ``N`` rows with an observed value."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]

METHOD = Method(
    name="bic", description="BIC = loglik - d/2 ln N of the ML EM fit", needs=("em",),
    columns=(Column("bic", "BIC"),), values=lambda fits: {"bic": fits.em.bic},
    ranked="bic", flags=EM_FLAGS, plot=("BIC", "tab:blue", "o"))

