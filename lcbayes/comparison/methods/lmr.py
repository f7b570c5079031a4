"""The Lo-Mendell-Rubin test of K-1 against K classes (:func:`lcbayes.lmr`): the adjusted LMR
p-value and the Vuong-LMR (unadjusted) p-value, what Mplus' TECH11 prints. A small p-value
favours K classes over K-1; the column is a test, not a score, so it is not ranked."""

from __future__ import annotations

import math

from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    result = fits.get("lmr")
    if result is None:
        return {"lmr_p": math.nan, "vlmr_p": math.nan}
    return {"lmr_p": result.p_value, "vlmr_p": result.p_value_unadjusted}


METHOD = Method(
    name="lmr", description="Lo-Mendell-Rubin adjusted LRT of K-1 vs K classes (p-values, "
                            "not ranked)", needs=("em", "smaller_em", "lmr"),
    columns=(Column("lmr_p", "LMR p"), Column("vlmr_p", "VLMR p")), values=_values,
    default=False)
