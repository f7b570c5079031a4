"""The one sentence that answers a comparison, naming what it rests on: the log evidence
where every candidate has one, else the first requested ranked score
(:attr:`ComparisonResult.criterion <lcbayes.comparison.table.ComparisonResult.criterion>`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .table import ComparisonResult

__all__ = ["headline"]


def headline(comp: ComparisonResult) -> str:
    """The one sentence that answers the comparison, naming what it rests on
    (:attr:`ComparisonResult.criterion <lcbayes.comparison.table.ComparisonResult.criterion>`)."""
    frame = comp.to_frame()
    have = [n for n, v in zip(frame["name"], frame["log_evidence"], strict=True)
            if np.isfinite(v)]
    if comp.criterion == "log_evidence":
        return f"Highest log evidence: {comp.best}."
    partial = (f"; only {', '.join(have)} {'has' if len(have) == 1 else 'have'} a log "
               "evidence, which ranks nothing" if have else "")
    if comp.best is None:
        return f"No score or log evidence for every candidate{partial}."
    return (f"Best by {comp.criterion_label}: {comp.best} (no log evidence for every "
            f"candidate{partial}; an evidence method, such as smc, gives posterior "
            "probabilities: VBEM's F is a lower bound, not an evidence).")
