"""The table applied latent class papers print (Nylund, Asparouhov & Muthén 2007; what Mplus,
Latent GOLD, poLCA and tidyLPA users report): per latent class candidate, log-likelihood,
parameters, AIC, BIC, aBIC and CAIC on the deviance scale, entropy R^2, the smallest class and
the LMR and BLRT p-values of K-1 against K classes."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..render import fmt, html_table

if TYPE_CHECKING:
    from .table import ComparisonResult

__all__ = ["applied_table"]


#: The columns of the applied-paper table: (heading, frame column or EM fit attribute, scale).
_APPLIED = (("LL", "loglik", 1.0), ("AIC", "aic", -2.0), ("BIC", "bic", -2.0),
            ("aBIC", "abic", -2.0), ("CAIC", "caic", -2.0), ("entropy R2", "entropy_r2", 1.0),
            ("smallest class", "smallest_class", 1.0), ("LMR p", "lmr_p", 1.0),
            ("BLRT p", "blrt_p", 1.0))


def applied_table(comp: ComparisonResult) -> str | None:
    """The table applied LCA papers print (Nylund, Asparouhov & Muthén 2007): per latent class
    candidate with an EM fit, its log-likelihood, parameters, AIC, BIC, aBIC and CAIC on the
    deviance scale (lower is better), and the entropy R^2, smallest class share and LMR / BLRT
    p-values where those methods ran; ``None`` without EM fits."""
    if "em" not in comp.fits:
        return None
    frame = comp.to_frame()
    rows = []
    for i, fit in enumerate(comp.em):
        if fit is None or comp.structures[i].kind != "latent_class":
            continue
        cells = [comp.names[i], str(comp.structures[i].n_classes), str(fit.n_parameters)]
        for _, name, scale in _APPLIED:
            value = frame.iloc[i][name] if name in frame else getattr(fit, name, math.nan)
            cells.append(fmt(scale * float(value), 3 if scale == 1.0 and name != "loglik"
                             else 2))
        rows.append(cells)
    if not rows:
        return None
    keep = [j for j in range(len(_APPLIED)) if any(r[3 + j] != fmt(math.nan) for r in rows)]
    head = ["model", "K", "d", *(_APPLIED[j][0] for j in keep)]
    return html_table(head, [[*r[:3], *(r[3 + j] for j in keep)] for r in rows])
