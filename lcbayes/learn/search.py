"""Learning the number of latent classes: SplitMerge, Standard3 and StandardFixed.

Karčiauskas (2005) Ch. 6. **SplitMerge** (Procedure 6.1) is a GES-like loop from the one-class
maximum-likelihood model: phase 1 applies the ``up`` move while it improves the score, phase 2
the ``down`` move likewise; a phase that improved the model re-opens the other; when neither is
open, the ``sideways`` move (Adjust) is tried and, if it gains more than ``delta``, both phases
re-open, else the search ends. The moves reuse parameters (:class:`.moves.ReuseMoves`).
**Standard3** is the same loop with random restarts (:class:`.moves.RandomMoves`).
**StandardFixed** (Procedure 4.3) knows the number of classes: ``16`` random starts, then
``32``, ``64``, ... (multiple-restart EM each time), keeping the best, until the time limit (or,
without one, :data:`FIXED_ROUNDS` rounds).

Every candidate is fitted by multiple-restart EM (:mod:`.restarts`; tolerance 0.01 nats,
200 iterations, SQUAREM cycles) and the best model found gets a final :func:`lcbayes.em` from
its parameters (default tolerance), which gives the result's fit and scores.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..engines.em import em
from ..errors import ArgumentError
from ..progress import new_bar
from ..validation import (
    Seed,
    as_dataset,
    check_choice,
    check_int,
    check_positive,
    check_seed,
    numpy_rng,
    seed_record,
)
from .mixture import independence_model, random_model
from .moves import Context, RandomMoves, ReuseMoves, Scored
from .restarts import EMSettings
from .result import LearnResult, Move
from .scoring import SCORES, Scorer

__all__ = ["FIXED_ROUNDS", "METHODS", "learn_classes"]

#: The searches of :func:`learn_classes`.
METHODS = ("splitmerge", "splitmerge_noadjust", "standard3", "fixed")
#: StandardFixed without a time limit: rounds of 16, 32, ..., 16 * 2^(FIXED_ROUNDS - 1) starts.
FIXED_ROUNDS = 5


class _Path:
    """The moves tried so far, with the time since the start, and an optional progress bar."""

    def __init__(self, started: float, bar) -> None:
        self.started, self.bar, self.moves = started, bar, []

    def add(self, operation: str, candidate: Scored, accepted: bool) -> None:
        self.moves.append(Move(step=len(self.moves), operation=operation,
                               classes=candidate.n_classes, loglik=candidate.loglik,
                               score=candidate.score, accepted=accepted,
                               seconds=time.perf_counter() - self.started))
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"{operation} -> {candidate.n_classes} classes, "
                                     f"score {candidate.score:.1f}")


def _phase(path: _Path, ctx: Context, move: Callable, name: str, current: Scored) -> Scored:
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


def _greedy(path: _Path, ctx: Context, moves, adjust: bool, start: Scored) -> Scored:
    """Procedure 6.1 (module docstring)."""
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


def _fixed(path: _Path, ctx: Context, classes: int) -> Scored:
    """StandardFixed (Procedure 4.3, module docstring)."""
    current, n = None, 16
    for round_ in range(10**9 if ctx.deadline is not None else FIXED_ROUNDS):
        if round_ and ctx.expired():
            break
        starts = [random_model(ctx.data, classes, ctx.rng) for _ in range(n)]
        candidate = ctx.best_of(starts, ctx.q_split)
        better = current is None or candidate.score > current.score
        path.add("restarts", candidate, better)
        current = candidate if better else current
        n *= 2
    return current


def learn_classes(
    data,
    *,
    score: str = "bic",
    method: str = "splitmerge",
    seed: Seed = 0,
    time_limit: float | None = None,
    classes: int | None = None,
    max_classes: int | None = None,
    splits: int = 16,
    perturbation: float = 0.001,
    starts: int = 64,
    delta: float = 0.1,
    tol: float = 0.01,
    max_iter: int = 200,
    progress: bool = False,
) -> LearnResult:
    """Find the number of latent classes that maximises a score (Karčiauskas 2005, Ch. 6).

    Args:
        data: the data (a :class:`~lcbayes.Dataset` or a DataFrame of categorical columns);
            missing values are marginalised.
        score: ``"bic"`` (default, the thesis's), ``"bic_e"``, ``"aic"``, ``"icl"`` or
            ``"vbem"`` (:mod:`lcbayes.learn.scoring`).
        method: ``"splitmerge"`` (parameter reuse, Procedure 6.1), ``"splitmerge_noadjust"``
            (without the Adjust move, Table 6.15), ``"standard3"`` (random restarts in the
            same loop) or ``"fixed"`` (StandardFixed: random restarts at ``classes``).
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            path.
        time_limit: seconds; the search returns the best model found when it runs out (the
            move under way finishes first). ``None``: run to the end.
        classes: the number of classes of ``method="fixed"`` (required there, refused
            elsewhere).
        max_classes: never try more classes than this.
        splits: random splits per component (``N_0 = 16``).
        perturbation: the split perturbation ``p`` (0.001, §6.3.1).
        starts: random starts per move of ``"standard3"`` (64).
        delta: least score gain for the Adjust move (and Standard3's sideways move) to be
            accepted (the thesis's value is lost in its text; 0.1 nats here).
        tol, max_iter: EM convergence (absolute change of the log-likelihood in nats) and
            iteration limit of every multiple-restart EM (0.01 and 200 as in the thesis).
        progress: show a progress bar over the moves.

    Returns:
        A :class:`LearnResult`: the best model as an EM fit (``result.fit``, usable by every
        engine and by :func:`lcbayes.compare`), its score and the path of moves.
    """
    started, seed = time.perf_counter(), check_seed(seed)
    check_choice(score, "score", tuple(SCORES))
    check_choice(method, "method", METHODS)
    data = as_dataset(data)
    if data.n_observed_rows == 0:
        raise ArgumentError("data has no row with an observed value; nothing to learn from")
    if method == "fixed":
        if classes is None:
            raise ArgumentError("method='fixed' needs classes=K, the number of classes to fit")
        classes = check_int(classes, "classes", 1)
    elif classes is not None:
        raise ArgumentError(f"classes= is the number of classes of method='fixed'; "
                            f"method={method!r} searches for it, leave it out")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    ctx = Context(
        data=data, scorer=Scorer(data, score), rng=numpy_rng(seed),
        em=EMSettings(check_positive(tol, "tol"), check_int(max_iter, "max_iter", 1)),
        deadline=None if time_limit is None else started + time_limit,
        n_splits=check_int(splits, "splits", 1),
        perturbation=check_positive(perturbation, "perturbation"),
        starts=check_int(starts, "starts", 1), delta=float(delta),
        max_classes=None if max_classes is None else check_int(max_classes, "max_classes", 1))
    bar = new_bar(desc=f"learn_classes ({method})", unit="move") if progress else None
    path = _Path(started, bar)
    try:
        if method == "fixed":
            best = _fixed(path, ctx, classes)
        else:
            start = ctx.best_of([independence_model(data)], 1)
            path.add("start", start, True)
            moves = ReuseMoves(ctx) if method.startswith("splitmerge") else RandomMoves(ctx)
            best = _greedy(path, ctx, moves, method != "splitmerge_noadjust", start)
    finally:
        if bar is not None:
            bar.close()
    stopped = "time_limit" if ctx.expired() else "converged"
    structure = ctx.scorer.structure(best.n_classes)
    fit = em(structure, data, restarts=0, init=best.model.params(structure))
    return LearnResult(
        fit=fit, score_name=score, score=ctx.scorer(best.model, fit.loglik),
        method=method, path=tuple(path.moves), stopped=stopped, seed=seed_record(seed),
        seconds=time.perf_counter() - started,
        settings={"splits": ctx.n_splits, "perturbation": ctx.perturbation,
                  "q_split": ctx.q_split, "q_merge": ctx.q_merge, "starts": ctx.starts,
                  "delta": ctx.delta, "tol": ctx.em.tol, "max_iter": ctx.em.max_iter,
                  "time_limit": time_limit, "max_classes": ctx.max_classes,
                  "classes": classes})
