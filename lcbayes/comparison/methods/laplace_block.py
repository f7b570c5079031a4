"""The block-diagonal Laplace approximation (Whiley 1999 §4.8 "Block", after Chickering &
Heckerman 1997): :mod:`.laplace` with the Hessian cut to one block per node."""

from __future__ import annotations

from ..policy import ROLES
from ..registry import Column, Method
from .laplace import laplace_values

__all__ = ["METHOD"]

METHOD = Method(
    name="laplace_block", description="Laplace with a block-diagonal Hessian (one block per node)",
    needs=("laplace",), columns=(Column("laplace_block", "Laplace block"),),
    values=laplace_values("laplace_block", "block"), ranked="laplace_block",
    evidence=ROLES["laplace_block"],
    plot=("Laplace block", "tab:olive", "s"), default=False)
