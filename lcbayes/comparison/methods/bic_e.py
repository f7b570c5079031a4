"""``bic_e = loglik - d_e/2 ln N``: BIC with the effective dimension ``d_e`` (the regular rank
of the Jacobian of the map from parameters to the distribution of the observed variables;
Geiger, Heckerman & Meek 1996)."""

from __future__ import annotations

import math

from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    fit = fits.em
    return {"bic_e": fit.loglik - 0.5 * fits.effective_dimension
            * math.log(fit.n_observed_rows)}


METHOD = Method(
    name="bic_e", description="BIC with the effective dimension d_e (Geiger et al. 1996)",
    needs=("em", "effective_dimension"), columns=(Column("bic_e", "BIC_e"),),
    values=_values, ranked="bic_e", flags=EM_FLAGS, plot=("BIC_e", "tab:cyan", "v"))

