"""The exact evidence (:func:`lcbayes.exact_evidence`) where the sum needs at most
``max_terms`` terms. It is run by ``exact='auto'|True`` rather than named in ``methods``, and
when present it is the row's log evidence."""

from __future__ import annotations

from ..policy import ROLES
from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    ex = fits.exact
    return {"exact": float("nan") if ex is None else float(ex.log_evidence)}


METHOD = Method(
    name="exact", description="the exact evidence (small problems)", needs=("exact",),
    columns=(Column("exact", "exact"),), values=_values, ranked="exact",
    evidence=ROLES["exact"],
    plot=("exact", "black", "*"), selectable=False)

