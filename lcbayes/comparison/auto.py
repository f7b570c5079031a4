"""``compare(n_classes="auto")``: numbers of classes added until the criterion has peaked, so
that the table always shows the peak (or says that the cap stopped it).

``K = 1, 2, 3`` run first, then as many more ``K`` at a time as the comparison has threads,
until the two candidates with the most classes both lie below the best by more than
:data:`~lcbayes.comparison.policy.DISAGREE_SE` combined standard errors (:func:`peaked`), or
``K`` reaches the cap. Every batch is an ordinary comparison of its ``K`` (every engine seeded
alike, the batch's largest ``K`` padding its programs); the batches are merged into one
:class:`~lcbayes.ComparisonResult`, whose settings record them. A batch's compiled programs
are released when it ends (no later batch has its padding), so a long run holds one batch's
programs at a time, not every batch's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .policy import DISAGREE_SE
from .table import ComparisonResult

__all__ = ["AUTO_MAX_CLASSES", "auto_classes", "peaked"]

#: The default cap of ``compare(n_classes="auto")``.
AUTO_MAX_CLASSES = 20


def auto_classes(run: Callable[[list[int]], ComparisonResult], cap: int, step: int,
                 on_batch: Callable[[ComparisonResult], object] | None = None
                 ) -> ComparisonResult:
    """The module docstring's loop: ``run(ks)`` compares candidates ``LC(k)`` for ``k`` in
    ``ks``; ``step`` more ``K`` at a time after the first three, up to ``cap``;
    ``on_batch(result so far)`` after every batch."""
    first = list(range(1, min(3, cap) + 1))
    result = run(first)
    batches = [first]
    while True:
        result.settings.update({"n_classes": "auto", "max_classes": cap,
                                "batches": [list(b) for b in batches],
                                "peaked": peaked(result)})
        if on_batch is not None:
            on_batch(result)
        if result.settings["peaked"] or batches[-1][-1] >= cap:
            return result
        top = batches[-1][-1]
        more = list(range(top + 1, min(top + max(step, 1), cap) + 1))
        result = _merged(result, run(more))
        batches.append(more)


def peaked(result: ComparisonResult) -> bool:
    """Whether the comparison's criterion has fallen twice beyond its error bars: the two
    candidates with the most classes both have more classes than the best and lie below it by
    more than :data:`~lcbayes.comparison.policy.DISAGREE_SE` combined standard errors (a
    score without an error bar: below it at all)."""
    criterion = result.criterion
    if criterion is None or len(result.names) < 3:
        return False
    frame = result.to_frame()
    value = frame[criterion].astype(float).to_numpy()
    se = (np.nan_to_num(frame["log_evidence_stderr"].astype(float).to_numpy())
          if criterion == "log_evidence" else np.zeros(value.size))
    ks = frame["n_classes"].astype(float).to_numpy()
    order = np.argsort(ks)
    best = int(np.nanargmax(value))
    last = order[-2:]
    return bool(all(ks[j] > ks[best] and value[best] - value[j]
                    > DISAGREE_SE * np.hypot(se[best], se[j]) for j in last))


def _merged(first: ComparisonResult, second: ComparisonResult) -> ComparisonResult:
    """One comparison of both's candidates (the same data, methods and settings)."""
    seconds = {k: first.seconds.get(k, 0.0) + second.seconds.get(k, 0.0)
               for k in {*first.seconds, *second.seconds}}
    pads = [p for p in (first.settings.get("pad_classes"), second.settings.get("pad_classes"))
            if p is not None]
    return replace(first, names=first.names + second.names,
                   structures=first.structures + second.structures,
                   fits={k: first.fits[k] + second.fits[k] for k in first.fits},
                   exact_notes=first.exact_notes + second.exact_notes,
                   settings={**first.settings, "pad_classes": max(pads) if pads else None},
                   seconds=seconds)
