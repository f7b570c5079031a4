"""PSIS leave-one-out cross-validation of each candidate (:func:`lcbayes.loo`, Vehtari, Gelman
& Gabry 2017): ``elpd_loo`` with its standard error ``elpd_loo_se`` and ``p_loo`` from Gibbs
draws of the candidate (latent class models, HLC trees, small DAGs), exact refits where a
pattern's Pareto ``k`` is too high; and across the candidates, as ``az.compare`` gives them,
``loo_diff`` (``elpd_loo`` less the best candidate's, <= 0) with its standard error
``loo_diff_se`` (of the pointwise differences) and the stacking weights ``loo_weight``
(Yao et al. 2018). Not run by default.

The evidence answers which model is more probable, LOO which predicts a new row best; they can
disagree (:meth:`~lcbayes.comparison.table.ComparisonResult.notes` says so)."""

from __future__ import annotations

import math

from ...samplers.idata import arviz
from ..registry import Column, Flag, Method, register_flag

__all__ = ["LOO_UNRELIABLE", "METHOD"]


def _values(fits) -> dict[str, float]:
    result = fits.loo
    nan = math.nan
    return {"elpd_loo": nan if result is None else result.elpd_loo,
            "elpd_loo_se": nan if result is None else result.se,
            "p_loo": nan if result is None else result.p_loo}


def _across(fits) -> list[dict[str, float]]:
    """``loo_diff``, ``loo_diff_se`` and ``loo_weight`` of every candidate, from ArviZ's
    ``compare`` (stacking) over those with a result."""
    results = [f.loo for f in fits]
    empty = {"loo_diff": math.nan, "loo_diff_se": math.nan, "loo_weight": math.nan}
    out = [dict(empty) for _ in fits]
    present = [i for i, r in enumerate(results) if r is not None]
    if not present:
        return out
    if len(present) == 1:
        out[present[0]] = {"loo_diff": 0.0, "loo_diff_se": 0.0, "loo_weight": 1.0}
        return out
    table = arviz().compare({str(i): results[i].to_elpd_data() for i in present},
                            method="stacking")
    for i in present:
        row = table.loc[str(i)]
        out[i] = {"loo_diff": -float(row["elpd_diff"]), "loo_diff_se": float(row["dse"]),
                  "loo_weight": float(row["weight"])}
    return out


def _unreliable(comp, i: int) -> str | None:
    result = (comp.fits.get("loo") or (None,) * len(comp.names))[i]
    if result is None or result.reliable:
        return None
    left = int((~result.refitted & (result.pareto_k > result.good_k)).sum())
    return (f"{left} pattern(s) with Pareto k above {result.good_k:.2f} kept their PSIS value "
            "(more than compare refits); elpd_loo rests on them")


LOO_UNRELIABLE = register_flag(Flag(
    "loo_unreliable",
    "some patterns' Pareto k is above ArviZ's threshold and they were not refitted exactly: "
    "their PSIS leave-one-out terms, and so elpd_loo, may be far off; run lcb.loo(..., "
    "refit='bad') on the candidate",
    _unreliable, cells=("elpd_loo",)))

METHOD = Method(
    name="loo", description="PSIS leave-one-out cross-validation (elpd_loo, s.e., stacking "
    "weights) from Gibbs draws",
    needs=("loo",),
    columns=(Column("elpd_loo", "elpd_loo"), Column("elpd_loo_se", "LOO s.e."),
             Column("p_loo", "p_loo", in_report=False),
             Column("loo_diff", "LOO diff"), Column("loo_diff_se", "diff s.e.", in_report=False),
             Column("loo_weight", "LOO weight")),
    values=_values, ranked="elpd_loo", flags=(LOO_UNRELIABLE,),
    plot=("LOO", "tab:olive", "P"), default=False, across=_across)

