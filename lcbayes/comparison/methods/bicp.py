"""``bicp = bic + ln p(theta_hat | m)``, BIC plus the Dirichlet(1) log prior density at the ML
estimate (Beal & Ghahramani §4.1, "BICp"); ``bicp_corrected = bicp + ln S`` is ranked. Not run
by default."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method
from .corrected import with_alias_correction

__all__ = ["METHOD"]

METHOD = Method(
    name="bicp", description="BIC + ln prior density at the estimate (+ ln S)", needs=("em",),
    columns=(Column("bicp", "BICp*"), Column("bicp_corrected", "BICp")),
    values=with_alias_correction("bicp"),
    ranked="bicp_corrected", flags=EM_FLAGS, plot=("BICp + ln S", "tab:brown", "<"),
    default=False)

