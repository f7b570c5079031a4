"""The Laplace approximation of ``ln p(y | m)`` in the softmax basis (Whiley 1999 eq. 4.5,
:func:`lcbayes.laplace`), at the MAP estimate under Dirichlet(1) priors, ``+ ln S`` (adjusted
for duplicate classes, Whiley §4.8.5); NaN where the Hessian is not positive definite. An
estimate of the log evidence, after the exact value, AIS, Chib and VB. Three methods, one per
Hessian (Whiley §4.8, after Chickering & Heckerman 1997): ``laplace`` the full one,
``laplace_block`` cut to one block per node, ``laplace_diag`` its diagonal
(``ln |A| ~ sum ln A_ii``); one engine run gives all three.
"""

from __future__ import annotations

from ..policy import ROLES
from ..registry import Column, Method

__all__ = ["METHODS"]


def laplace_values(column: str, variant: str):
    """``values(fits) -> {column: log evidence of the variant}``."""
    def values(fits) -> dict[str, float]:
        run = fits.laplace
        return {column: float("nan") if run is None else run.by_variant[variant]}

    return values


def _method(name: str, variant: str, description: str, heading: str, colour: str) -> Method:
    return Method(name=name, description=description, needs=("laplace",),
                  columns=(Column(name, heading),), values=laplace_values(name, variant),
                  ranked=name, evidence=ROLES[name], plot=(heading, colour, "s"), default=False)


#: The full, block-diagonal and diagonal Laplace approximations, registered in this order.
METHODS = (
    _method("laplace", "full", "Laplace approximation in the softmax basis (+ ln S)", "Laplace",
            "tab:brown"),
    _method("laplace_block", "block", "Laplace with a block-diagonal Hessian (one block per "
            "node)", "Laplace block", "tab:olive"),
    _method("laplace_diag", "diagonal", "Laplace with a diagonal Hessian", "Laplace diag.",
            "tab:cyan"),
)
