"""The Laplace approximation of ``ln p(y | m)`` in the softmax basis (Whiley 1999 eq. 4.5,
:func:`lcbayes.laplace`), at the MAP estimate under Dirichlet(1) priors, ``+ ln S`` (adjusted
for duplicate classes, Whiley §4.8.5); NaN where the Hessian is not positive definite. An
estimate of the log evidence, after the exact value, AIS, Chib and VB."""

from __future__ import annotations

from ..policy import ROLES
from ..registry import Column, Method

__all__ = ["METHOD", "laplace_values"]


def laplace_values(column: str, variant: str):
    """``values(fits) -> {column: log evidence of the variant}``."""
    def values(fits) -> dict[str, float]:
        run = fits.laplace
        return {column: float("nan") if run is None else run.by_variant[variant]}

    return values


METHOD = Method(
    name="laplace", description="Laplace approximation in the softmax basis (+ ln S)",
    needs=("laplace",), columns=(Column("laplace", "Laplace"),),
    values=laplace_values("laplace", "full"), ranked="laplace",
    evidence=ROLES["laplace"],
    plot=("Laplace", "tab:brown", "s"), default=False)
