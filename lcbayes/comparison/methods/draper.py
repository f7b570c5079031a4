"""Draper's score ``draper = bic + d/2 ln 2 pi`` of the ML EM fit (Draper 1995; Whiley 1999
§4.5.1): BIC keeping the Laplace approximation's ``(2 pi)^(d/2)``."""

from __future__ import annotations

from ...scores import draper
from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]

METHOD = Method(
    name="draper", description="Draper's BIC + d/2 ln 2 pi of the ML EM fit", needs=("em",),
    columns=(Column("draper", "Draper"),),
    values=lambda fits: {"draper": draper(fits.em.loglik, fits.em.n_parameters,
                                          fits.em.n_observed_rows)},
    ranked="draper", flags=EM_FLAGS, plot=("Draper", "tab:pink", "v"), default=False)
