"""The moves of the latent class searches: one step up, one down, one sideways in ``|H|``.

Karčiauskas (2005) Ch. 6. A move returns the best candidate it found (a :class:`Scored`
model) or ``None`` when it has none; the driver (:mod:`.search`) decides whether to accept it.

:class:`ReuseMoves` reuse the current model's parameters (SplitMerge):

* ``up`` (Split, Procedure 6.2): for every component ``h_s``, ``n_splits`` random splits
  (:func:`.operations.split_starts`) fitted as two-class models on the soft sub-data
  ``n_j P(h_s | d_j)`` ("partial EM"), all components' starts as one batch of multiple-restart
  EM with ``q = 2`` pruned per component; each result substituted back; the substitution with
  the highest log-likelihood on the whole data gets a full EM.
* ``down`` (Merge, Procedure 6.3): all ``C(m, 2)`` pairwise merges as the starts of one
  multiple-restart EM with ``q = 10``.
* ``sideways`` (Adjust, Procedure 6.4): split the last merge's result; if that is not better
  than the model by more than ``delta``, merge each new component of every split candidate
  ``L_s`` of the last split with every old one (``2 (m - 1)`` per ``s``) as the starts of one
  multiple-restart EM with ``q = 10``.

Of more than :data:`~.merge_screen.MERGE_SCREEN` merge starts (Merge from 17 classes on, Adjust
from 9), only that many with the highest log-likelihood enter the multiple-restart EM
(:func:`~.merge_screen.screen_merges`; each merge's log-likelihood is computed exactly from its
one changed class): at 30+ classes the thousands of starts otherwise took most of the search's
time (lcbayes's departure from the thesis, which fits them all).

:class:`RandomMoves` start from random models instead (Standard3): ``starts`` uniform random
models with ``m + 1``, ``m - 1`` and ``m`` classes, multiple-restart EM with ``q = 2``.

Candidates of one move have the same number of classes, hence the same penalty, so a move
picks among them by log-likelihood and scores only its winner.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import combinations
from typing import Generic, NamedTuple, TypeVar

import numpy as np

from ..data import Dataset
from .merge_screen import screen_merges
from .mixture import ClassModel, independence_model, random_model
from .operations import split_starts, substitute
from .restarts import EMSettings, Fitted, class_posteriors, log_likelihoods, multiple_restart_em
from .scoring import Scorer

__all__ = ["Context", "RandomMoves", "ReuseMoves", "Scored"]


_Model = TypeVar("_Model")


class Scored(NamedTuple, Generic[_Model]):
    """A model, its log-likelihood and its score (a latent class search's
    :class:`~.mixture.ClassModel` or an HLC search's :class:`~.trees.TreeModel`)."""

    model: _Model
    loglik: float
    score: float

    @property  # of latent class models only; mypy rejects self types of generic NamedTuples
    def n_classes(self: Scored[ClassModel]) -> int:  # type: ignore[misc]  # mypy gap: NamedTuple
        return self.model.n_classes


@dataclass
class Context:
    """What every move needs: data, score, EM settings, the search's random numbers, the
    deadline and the thesis's constants (§6.3.1)."""

    data: Dataset
    scorer: Scorer
    em: EMSettings
    rng: np.random.Generator
    deadline: float | None = None
    n_splits: int = 16
    perturbation: float = 0.001
    q_split: int = 2
    q_merge: int = 10
    starts: int = 64
    delta: float = 0.1
    max_classes: int | None = None

    def scored(self, fitted: Fitted) -> Scored:
        structure = self.scorer.structure(fitted.model.n_classes)
        return Scored(fitted.model, fitted.loglik,
                      self.scorer(structure, fitted.model.tables(), fitted.loglik))

    def best_of(self, starts: list[ClassModel], q: int) -> Scored:
        """Multiple-restart EM over ``starts`` on the whole data, scored."""
        return self.scored(multiple_restart_em(self.data, starts, q, self.em,
                                               deadline=self.deadline)[0])

    def can_grow(self, model: ClassModel) -> bool:
        return self.max_classes is None or model.n_classes < self.max_classes

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline


@dataclass
class ReuseMoves:
    """SplitMerge's moves (module docstring); remembers the last split and merge of a model
    for Adjust."""

    ctx: Context
    _splits: tuple[ClassModel, list[ClassModel]] | None = field(default=None, repr=False)
    _merge: tuple[ClassModel, Scored | None] | None = field(default=None, repr=False)

    def candidates(self, model: ClassModel) -> list[ClassModel]:
        """``L_s`` for every component ``s``: the split of ``s`` after its partial EM."""
        if self._splits is not None and self._splits[0] is model:
            return self._splits[1]
        ctx, m = self.ctx, model.n_classes
        sub = ctx.data.counts[None, :] * class_posteriors(ctx.data, model)
        starts = [start for s in range(m)
                  for start in split_starts(model, s, ctx.n_splits, ctx.perturbation, ctx.rng)]
        groups = np.repeat(np.arange(m), ctx.n_splits)
        fitted = multiple_restart_em(ctx.data, starts, ctx.q_split, ctx.em, weights=sub,
                                     groups=groups, deadline=ctx.deadline)
        found = [substitute(model, s, f.model) for s, f in enumerate(fitted)]
        self._splits = (model, found)
        return found

    def up(self, current: Scored) -> Scored | None:
        if not self.ctx.can_grow(current.model):
            return None
        found = self.candidates(current.model)
        best = found[int(np.argmax(log_likelihoods(self.ctx.data, found)))]
        return self.ctx.best_of([best], 1)

    def down(self, current: Scored) -> Scored | None:
        model = current.model
        if self._merge is not None and self._merge[0] is model:
            return self._merge[1]
        m = model.n_classes
        result = None if m < 2 else self.ctx.best_of(screen_merges(
            self.ctx.data, [(model, a, b) for a, b in combinations(range(m), 2)]),
            self.ctx.q_merge)
        self._merge = (model, result)
        return result

    def sideways(self, current: Scored) -> Scored | None:
        model, m, ctx = current.model, current.n_classes, self.ctx
        own_splits = self.candidates(model) if ctx.can_grow(model) else []
        merged = self.down(current)
        if merged is not None:
            resplit = self.up(merged)
            if resplit is not None and resplit.score > current.score + ctx.delta:
                return resplit
        starts = screen_merges(ctx.data, [(found, a, b) for s, found in enumerate(own_splits)
                                          for a in (s, m) for b in range(m + 1)
                                          if b not in (s, m)])
        if not starts:
            return None
        return ctx.best_of(starts, ctx.q_merge)


@dataclass
class RandomMoves:
    """Standard3's moves: random restarts at ``m + 1``, ``m - 1`` and ``m`` classes."""

    ctx: Context

    def _random(self, n_classes: int) -> Scored:
        ctx = self.ctx
        if n_classes == 1:
            return ctx.best_of([independence_model(ctx.data)], 1)
        starts = [random_model(ctx.data, n_classes, ctx.rng) for _ in range(ctx.starts)]
        return ctx.best_of(starts, ctx.q_split)

    def up(self, current: Scored) -> Scored | None:
        return self._random(current.n_classes + 1) if self.ctx.can_grow(current.model) else None

    def down(self, current: Scored) -> Scored | None:
        return None if current.n_classes < 2 else self._random(current.n_classes - 1)

    def sideways(self, current: Scored) -> Scored | None:
        return None if current.n_classes < 2 else self._random(current.n_classes)
