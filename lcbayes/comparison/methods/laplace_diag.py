"""The diagonal Laplace approximation (Whiley 1999 §4.8 "Diagonal", after Chickering &
Heckerman 1997): :mod:`.laplace` with ``ln |A| ~ sum ln A_ii``."""

from __future__ import annotations

from ..policy import ROLES
from ..registry import Column, Method
from .laplace import laplace_values

__all__ = ["METHOD"]

METHOD = Method(
    name="laplace_diag", description="Laplace with a diagonal Hessian",
    needs=("laplace",), columns=(Column("laplace_diag", "Laplace diag."),),
    values=laplace_values("laplace_diag", "diagonal"), ranked="laplace_diag",
    evidence=ROLES["laplace_diag"],
    plot=("Laplace diag.", "tab:cyan", "s"), default=False)
