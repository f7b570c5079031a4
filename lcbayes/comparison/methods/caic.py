"""``caic = loglik - d/2 (ln N + 1)`` of the ML EM fit: the consistent AIC (Bozdogan 1987),
``-2 caic`` on the deviance scale applied papers print."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]

METHOD = Method(
    name="caic", description="consistent AIC = loglik - d/2 (ln N + 1) of the ML EM fit",
    needs=("em",), columns=(Column("caic", "CAIC"),),
    values=lambda fits: {"caic": fits.em.caic}, ranked="caic", flags=EM_FLAGS,
    plot=("CAIC", "tab:brown", "^"), default=False)
