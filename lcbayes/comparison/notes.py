"""The notes a comparison gives its reader beside the table (:meth:`ComparisonResult.notes`):
the best candidate at the edge of the range compared, and leave-one-out cross-validation
preferring another model than the criterion, with why the two can differ (Vehtari, Gelman &
Gabry 2017, §1; the evidence penalises every parameter through its prior, LOO only what
worsens prediction)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .table import ComparisonResult

__all__ = ["comparison_notes", "loo_best"]


def comparison_notes(result: ComparisonResult) -> list[str]:
    """The notes of ``result``, in order; empty when there is nothing to say."""
    notes = []
    wider = result.wider_classes()
    if wider is not None:
        notes.append(
            f"{result.best}, the largest number of classes compared, has the highest "
            f"{result.criterion_label}: more classes may fit better. Compare a wider range, "
            f"e.g. --n-classes {wider.start}-{wider.stop - 1} (n_classes=range({wider.start}, "
            f"{wider.stop}) in Python).")
    preferred = loo_best(result)
    if preferred is not None and result.criterion != "elpd_loo" and preferred != result.best:
        frame = result.to_frame().set_index("name")
        gap = -float(frame.loc[result.best, "loo_diff"])
        se = float(frame.loc[result.best, "loo_diff_se"])
        notes.append(
            f"LOO prefers {preferred}; the {result.criterion_label} prefers {result.best} "
            f"({result.best}'s elpd_loo is {gap:.1f} +- {se:.1f} lower). The two answer "
            "different questions: the evidence which model is more probable given these "
            "data, every parameter paying through its prior; LOO which predicts a new row "
            "best, where a class more that predicts about as well costs little. A LOO "
            "difference within about two standard errors is no preference.")
    return notes


def loo_best(result: ComparisonResult) -> str | None:
    """The candidate with the highest ``elpd_loo`` (``None`` without LOO for every one)."""
    frame = result.to_frame()
    if "elpd_loo" not in frame:
        return None
    values = frame["elpd_loo"].astype(float).to_numpy()
    if not np.isfinite(values).all():
        return None
    return str(frame["name"].iloc[int(values.argmax())])
