"""The search loop shared by the latent class and HLC searches (Karčiauskas 2005, Procedure 6.1).

**SplitMerge**'s GES-like loop (:func:`greedy`) starts from a given model: phase 1 applies the
``up`` move while it improves the score, phase 2 the ``down`` move likewise; a phase that
improved the model re-opens the other; when neither is open, the ``sideways`` move (Adjust) is
tried and, if it gains more than ``delta``, both phases re-open, else the search ends.
**Standard3** is the same loop with random-restart moves. **StandardFixed** (:func:`fixed`,
Procedure 4.3) knows the structure and restarts EM from more and more random starts.
:class:`Path` records every move tried.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .mixture import ClassModel
from .moves import Context, Scored
from .result import Move

__all__ = ["FIXED_ROUNDS", "Path", "fixed", "greedy"]

#: StandardFixed without a time limit: rounds of 16, 32, ..., 16 * 2^(FIXED_ROUNDS - 1) starts.
FIXED_ROUNDS = 5


class Path:
    """The moves tried so far, with the time since the start, and an optional progress bar."""

    def __init__(self, started: float, bar) -> None:
        self.started, self.bar = started, bar
        self.moves: list[Move] = []

    def add(self, operation: str, candidate: Scored, accepted: bool,
            hidden: str | None = None) -> None:
        """Record a move; ``hidden`` replaces the candidate's cardinalities as its text."""
        states, cards = _hidden(candidate.model)
        hidden = cards if hidden is None else hidden
        self.moves.append(Move(step=len(self.moves), operation=operation, hidden_states=states,
                               hidden=hidden, loglik=candidate.loglik, score=candidate.score,
                               accepted=accepted, seconds=time.perf_counter() - self.started))
        if self.bar is not None:
            self.bar.set_postfix_str(f"{operation} -> {hidden}, score {candidate.score:.1f}")
            self.bar.update(1)


def _hidden(model) -> tuple[int, str]:
    """``(|H|, text)``: a latent class model's classes, or an HLC model's total number of
    hidden states and its cardinalities (``"H:2 H1:3"``)."""
    if isinstance(model, ClassModel):
        return model.n_classes, str(model.n_classes)
    cards = model.structure.cardinalities
    return sum(cards[h] for h in model.structure.hidden_nodes), model.describe()


def _phase(path: Path, ctx: Context, move: Callable, name: str, current: Scored) -> Scored:
    """Apply ``move`` while it improves the score (one phase of Procedure 6.1)."""
    while not ctx.expired():
        candidate = move(current)
        if candidate is None:
            break
        better = candidate.score > current.score
        path.add(name, candidate, better)
        if not better:
            break
        current = candidate
    return current


def greedy(path: Path, ctx: Context, moves, adjust: bool, start: Scored) -> Scored:
    """Procedure 6.1 (module docstring): ``moves`` has ``up``, ``down`` and ``sideways``."""
    current, grow, shrink = start, True, True
    while not ctx.expired():
        if grow:
            before, grow = current.score, False
            current = _phase(path, ctx, moves.up, "split", current)
            shrink = shrink or current.score > before
        if shrink and not ctx.expired():
            before, shrink = current.score, False
            current = _phase(path, ctx, moves.down, "merge", current)
            grow = grow or current.score > before
        if grow or shrink:
            continue
        candidate = moves.sideways(current) if adjust and not ctx.expired() else None
        if candidate is None:
            break
        better = candidate.score > current.score + ctx.delta
        path.add("adjust", candidate, better)
        if not better:
            break
        current, grow, shrink = candidate, True, True
    return current


def fixed(path: Path, ctx: Context, restarts: Callable[[int], Scored]) -> Scored:
    """StandardFixed (Procedure 4.3): the best of ``restarts(n)`` (multiple-restart EM from
    ``n`` random starts of the given structure) for ``n = 16, 32, ...``, until the time limit
    or, without one, :data:`FIXED_ROUNDS` rounds."""
    current, n = None, 16
    for round_ in range(10**9 if ctx.deadline is not None else FIXED_ROUNDS):
        if round_ and ctx.expired():
            break
        candidate = restarts(n)
        better = current is None or candidate.score > current.score
        path.add("restarts", candidate, better)
        current = candidate if better else current
        n *= 2
    assert current is not None  # the first round always runs
    return current
