"""The exact evidence (:func:`lcbayes.exact_evidence`) where the sum needs at most
``max_terms`` terms. It is run by ``exact='auto'|True`` rather than named in ``methods``, and
when present it is the row's log evidence."""

from __future__ import annotations

from ..registry import Column, EvidenceRole, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    ex = fits.exact
    return {"exact": float("nan") if ex is None else float(ex.log_evidence)}


METHOD = Method(
    name="exact", description="the exact evidence (small problems)", needs=("exact",),
    columns=(Column("exact", "exact"),), values=_values, ranked="exact",
    evidence=EvidenceRole(priority=0, value="exact", stderr=0.0),
    plot=("exact", "black", "*"), selectable=False)

