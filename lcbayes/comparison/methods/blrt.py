"""The bootstrap likelihood-ratio test of K-1 against K classes (:func:`lcbayes.blrt`,
``blrt_replicates`` replicates with sequential stopping): its p-value and Monte Carlo standard
error. A small p-value favours K classes over K-1 (Nylund, Asparouhov & Muthén 2007); not
ranked. The most expensive method: opt in with ``methods=[..., "blrt"]``."""

from __future__ import annotations

import math

from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    result = fits.get("blrt")
    if result is None:
        return {"blrt_p": math.nan, "blrt_p_se": math.nan}
    return {"blrt_p": result.p_value, "blrt_p_se": result.p_value_stderr}


METHOD = Method(
    name="blrt", description="parametric bootstrap LRT of K-1 vs K classes (p-value, not "
                             "ranked)", needs=("em", "smaller_em", "blrt"),
    columns=(Column("blrt_p", "BLRT p"), Column("blrt_p_se", "BLRT p s.e.")), values=_values,
    default=False)
