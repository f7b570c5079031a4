"""Cheeseman-Stutz of the ML EM fit (Beal & Ghahramani eq. 27):
``cs = ln p(s_hat, y | m) + ln p(y | theta_hat) - ln p(s_hat, y | theta_hat)`` with the
fractional completion of the E step and Dirichlet(1) priors, a lower bound on the evidence of
one labelling (their Theorem 6.1); ``cs_corrected = cs + ln S`` (eq. 24) is ranked."""

from __future__ import annotations

from ..flags import EM_FLAGS
from ..registry import Column, Method
from .corrected import with_alias_correction

__all__ = ["METHOD"]

METHOD = Method(
    name="cs", description="Cheeseman-Stutz (+ ln S) of the ML EM fit", needs=("em",),
    columns=(Column("cs", "CS*"), Column("cs_corrected", "CS")),
    values=with_alias_correction("cs"),
    ranked="cs_corrected", flags=EM_FLAGS, plot=("CS + ln S", "tab:orange", "^"))

