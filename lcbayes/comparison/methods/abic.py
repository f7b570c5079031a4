"""``abic = loglik - d/2 ln((N + 2) / 24)`` of the ML EM fit: the sample-size-adjusted BIC
(Sclove 1987) that Mplus, Latent GOLD and tidyLPA print (theirs is ``-2 abic``)."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]

METHOD = Method(
    name="abic", description="sample-size-adjusted BIC = loglik - d/2 ln((N+2)/24) of the ML "
                             "EM fit", needs=("em",),
    columns=(Column("abic", "aBIC"),), values=lambda fits: {"abic": fits.em.abic},
    ranked="abic", flags=EM_FLAGS, plot=("aBIC", "tab:cyan", "v"), default=False)
