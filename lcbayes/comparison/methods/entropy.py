"""Classification quality of the ML EM fit (:func:`lcbayes.indices.classification_quality`):
the relative entropy ``entropy_r2 = 1 - E / (N ln K)`` (1: every row assigned with certainty)
and the smallest class share, the two numbers applied LCA papers print beside the
information criteria. They describe a fit, they do not choose ``K``: the column is not
ranked."""

from __future__ import annotations

import math

from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    quality = fits.get("classification")
    if quality is None:
        return {"entropy_r2": math.nan, "smallest_class": math.nan}
    return {"entropy_r2": quality.entropy_r2, "smallest_class": quality.smallest_class_share}


METHOD = Method(
    name="entropy", description="relative entropy R^2 and smallest class share of the ML EM "
                                "fit (not ranked)", needs=("em", "classification"),
    columns=(Column("entropy_r2", "entropy R2"), Column("smallest_class", "smallest")),
    values=_values, default=False)
