"""Learning hidden cardinalities: the number of latent classes (Karčiauskas 2005, Ch. 6) and
the cardinalities of an HLC model on a given skeleton (Ch. 7).

Each search is SplitMerge (parameter reuse: :mod:`.moves`, :mod:`.tree_moves`), SplitMerge
without Adjust, Standard3 (random restarts in the same loop) or StandardFixed (random restarts
at a given structure); the loop is :mod:`.driver`'s. The latent class search starts from the
one-class maximum-likelihood model, the HLC search from the skeleton with every hidden
cardinality 1 (its maximum-likelihood model: the leaves' observed frequencies).

Every candidate is fitted by multiple-restart EM (:mod:`.restarts`; tolerance 0.01 nats,
200 iterations, SQUAREM cycles) and the best model found gets a final :func:`lcbayes.em` from
its parameters (:data:`FINAL_TOL`), which gives the result's fit and scores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..constructors import hlc
from ..data import Dataset
from ..engines.em import em
from ..errors import ArgumentError, StructureError
from ..params import to_tables
from ..progress import new_bar
from ..structure import Structure
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
from .driver import Path, fixed, greedy
from .mixture import independence_model, random_model
from .moves import Context, RandomMoves, ReuseMoves, Scored
from .restarts import EMSettings
from .result import LearnResult
from .scoring import SCORES, Scorer
from .tree_moves import TreeRandomMoves, TreeReuseMoves, fit_trees, tree_scored, walk
from .trees import TreeModel, random_tree, with_cardinalities

__all__ = ["METHODS", "final_result", "learn_classes", "learn_hlc", "run_search"]

#: The searches of :func:`learn_classes` and :func:`learn_hlc`.
METHODS = ("splitmerge", "splitmerge_noadjust", "standard3", "fixed")
#: Tolerance (per observed row) of the final EM from the best model found: tighter than the
#: search's 0.01 nats, so that scores of different searches compare at their optima.
FINAL_TOL = 1e-10


def _context(data: Dataset, score: str, method: str, seed, time_limit, started: float,
             max_classes, splits, perturbation, starts, delta, tol, max_iter) -> Context:
    """The checked arguments every search shares, as a :class:`~.moves.Context`."""
    check_choice(score, "score", tuple(SCORES))
    check_choice(method, "method", METHODS)
    if data.n_observed_rows == 0:
        raise ArgumentError("data has no row with an observed value; nothing to learn from")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    return Context(
        data=data, scorer=Scorer(data, score), rng=numpy_rng(seed),
        em=EMSettings(check_positive(tol, "tol"), check_int(max_iter, "max_iter", 1)),
        deadline=None if time_limit is None else started + time_limit,
        n_splits=check_int(splits, "splits", 1),
        perturbation=check_positive(perturbation, "perturbation"),
        starts=check_int(starts, "starts", 1), delta=float(delta),
        max_classes=None if max_classes is None else check_int(max_classes, "max_classes", 1))


def run_search(ctx: Context, name: str, progress: bool, search: Callable[[Path], Scored],
               started: float) -> tuple[Scored, Path]:
    """``search(path)`` with a progress bar over the moves (if ``progress``)."""
    bar = new_bar(desc=name, unit="move", log_every=0) if progress else None
    path = Path(started, bar)
    try:
        return search(path), path
    finally:
        if bar is not None:
            bar.close()


def final_result(ctx: Context, structure: Structure, params, path: Path, method: str, seed,
                 started: float, settings: dict) -> LearnResult:
    """The result: a final EM of the best model (every score of :class:`~lcbayes.EMResult`)."""
    fit = em(structure, ctx.data, restarts=0, init=params, tol=FINAL_TOL, max_iter=5000)
    tables = tuple(np.asarray(t) for t in to_tables(structure, fit.params))
    return LearnResult(
        fit=fit, score_name=ctx.scorer.name, score=ctx.scorer(structure, tables, fit.loglik),
        method=method, path=tuple(path.moves),
        stopped="time_limit" if ctx.expired() else "converged", seed=seed_record(seed),
        seconds=time.perf_counter() - started,
        settings={"splits": ctx.n_splits, "perturbation": ctx.perturbation,
                  "q_split": ctx.q_split, "q_merge": ctx.q_merge, "starts": ctx.starts,
                  "delta": ctx.delta, "tol": ctx.em.tol, "max_iter": ctx.em.max_iter,
                  "time_limit": None if ctx.deadline is None else ctx.deadline - started,
                  "max_classes": ctx.max_classes, **settings})


def learn_classes(
    data,
    *,
    score: str = "bic",
    method: str = "splitmerge",
    seed: Seed = 0,
    time_limit: float | None = None,
    n_classes: int | None = None,
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
        score: ``"bic"`` (default, the thesis's), ``"bic_e"``, ``"aic"``, ``"icl"``,
            ``"vbem"`` or ``"smc"`` (the log evidence; :mod:`lcbayes.learn.scoring`).
        method: ``"splitmerge"`` (parameter reuse, Procedure 6.1), ``"splitmerge_noadjust"``
            (without the Adjust move, Table 6.15), ``"standard3"`` (random restarts in the
            same loop) or ``"fixed"`` (StandardFixed: random restarts at ``n_classes``).
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            path.
        time_limit: seconds; the search returns the best model found when they run out (the
            move under way finishes first). ``None``: run to the end.
        n_classes: the number of classes of ``method="fixed"`` (required there, refused
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
    data = as_dataset(data)
    ctx = _context(data, score, method, seed, time_limit, started, max_classes, splits,
                   perturbation, starts, delta, tol, max_iter)
    if method == "fixed":
        if n_classes is None:
            raise ArgumentError("method='fixed' needs n_classes=K, the number of classes to "
                                "fit")
        n_classes = check_int(n_classes, "n_classes", 1)
    elif n_classes is not None:
        raise ArgumentError(f"n_classes= is the number of classes of method='fixed'; "
                            f"method={method!r} searches for it, leave it out")

    def search(path: Path) -> Scored:
        if method == "fixed":
            assert n_classes is not None  # method='fixed' needs it (checked above)
            return fixed(path, ctx, lambda n: ctx.best_of(
                [random_model(data, n_classes, ctx.rng) for _ in range(n)], ctx.q_split))
        start = ctx.best_of([independence_model(data)], 1)
        path.add("start", start, True)
        moves = ReuseMoves(ctx) if method.startswith("splitmerge") else RandomMoves(ctx)
        return greedy(path, ctx, moves, method != "splitmerge_noadjust", start)

    best, path = run_search(ctx, f"learn_classes ({method})", progress, search, started)
    structure = ctx.scorer.structure(best.model.n_classes)
    return final_result(ctx, structure, best.model.params(structure), path, method, seed, started,
                   {"n_classes": n_classes})


def _skeleton(data: Dataset, skeleton) -> Structure:
    """The HLC structure of ``skeleton`` (a tree ``{hidden: [children]}`` or an HLC
    :class:`~lcbayes.Structure`) with every hidden cardinality 1, over all of ``data``'s
    columns."""
    if isinstance(skeleton, Structure):
        if skeleton.kind != "hlc":
            raise StructureError(f"skeleton is a {skeleton.kind} structure; give an HLC "
                                 "structure or a tree {hidden: [children]}")
        skeleton = {skeleton.nodes[h]: [skeleton.nodes[c] for c in skeleton.children[h]]
                    for h in skeleton.hidden_nodes}
    if not isinstance(skeleton, Mapping) or not all(
            isinstance(v, Sequence) and not isinstance(v, str) for v in skeleton.values()):
        raise StructureError("skeleton must be a tree {hidden node: [children]}, e.g. "
                             "{'H': ['H1', 'D'], 'H1': ['A', 'B', 'C']}")
    structure = hlc(data, skeleton, {h: 1 for h in skeleton})
    left_out = [c for c in data.columns if c not in structure.nodes]
    if left_out:
        raise StructureError(f"the skeleton leaves out column(s) {left_out}; make every data "
                             "column a leaf of the tree, or select the columns it uses")
    return structure


def _ml_start(structure: Structure, data: Dataset) -> TreeModel:
    """Every hidden cardinality 1: the leaves' observed frequencies (the ML model)."""
    freq = independence_model(data).items
    column = {name: j for j, name in enumerate(data.columns)}
    tables = tuple(freq[column[structure.nodes[i]]] if not structure.hidden[i]
                   else np.ones((1, 1)) for i in range(structure.n_nodes))
    return TreeModel(structure, tables)


def learn_hlc(
    data,
    skeleton,
    *,
    score: str = "bic",
    method: str = "splitmerge",
    seed: Seed = 0,
    time_limit: float | None = None,
    cardinalities: Mapping[str, int] | None = None,
    max_cardinality: int | None = None,
    splits: int = 16,
    perturbation: float = 0.001,
    starts: int = 64,
    delta: float = 0.1,
    tol: float = 0.01,
    max_iter: int = 200,
    progress: bool = False,
) -> LearnResult:
    """Find the hidden cardinalities of an HLC model on a fixed ``skeleton`` that maximise a
    score (Karčiauskas 2005, Ch. 7: HLCSplitMerge and its baselines).

    Args:
        data: the data; every column must be a leaf of ``skeleton``.
        skeleton: the tree ``{hidden node: [children]}`` (children are hidden nodes or data
            columns), as for :func:`lcbayes.hlc`, or an HLC structure (its cardinalities are
            ignored).
        score, seed, time_limit, splits, perturbation, starts, delta, tol, max_iter, progress:
            as for :func:`learn_classes`.
        method: ``"splitmerge"`` (HLCSplitMerge, Procedures 7.1-7.4),
            ``"splitmerge_noadjust"``, ``"standard3"`` (HLCStandard3: HLCIncrement,
            HLCDecrement, HLCNewParams) or ``"fixed"`` (HLCStandardFixed at
            ``cardinalities``).
        cardinalities: ``{hidden node: states}`` of ``method="fixed"``.
        max_cardinality: never give a hidden node more states than this.

    Returns:
        A :class:`LearnResult` whose ``fit`` is the best HLC model (rooted as ``skeleton``)
        and whose path records every move with the hidden cardinalities.
    """
    started, seed = time.perf_counter(), check_seed(seed)
    data = as_dataset(data)
    ctx = _context(data, score, method, seed, time_limit, started, max_cardinality, splits,
                   perturbation, starts, delta, tol, max_iter)
    structure = _skeleton(data, skeleton)
    if method == "fixed":
        if cardinalities is None:
            raise ArgumentError("method='fixed' needs cardinalities={hidden node: states}")
        cards = {structure.index(h): check_int(c, f"cardinalities[{h!r}]", 1)
                 for h, c in cardinalities.items()}
        if any(structure.hidden[i] is False for i in cards):
            raise ArgumentError("cardinalities names observed columns; give hidden nodes")
        fixed_structure = with_cardinalities(structure, cards)
    elif cardinalities is not None:
        raise ArgumentError(f"cardinalities= belongs to method='fixed'; method={method!r} "
                            "searches for them, leave it out")

    def search(path: Path) -> Scored:
        if method == "fixed":
            return fixed(path, ctx, lambda n: tree_scored(ctx, *fit_trees(
                ctx, [random_tree(fixed_structure, ctx.rng) for _ in range(n)],
                ctx.q_split)[0]))
        start = tree_scored(ctx, *fit_trees(ctx, [_ml_start(structure, data)], 1)[0])
        path.add("start", start, True)
        moves = (TreeReuseMoves(ctx) if method.startswith("splitmerge")
                 else TreeRandomMoves(ctx))
        return greedy(path, ctx, moves, method != "splitmerge_noadjust", start)

    best, path = run_search(ctx, f"learn_hlc ({method})", progress, search, started)
    final = walk(best.model, structure.root)
    return final_result(ctx, final.structure, final.params, path, method, seed, started,
                   {"cardinalities": None if cardinalities is None else dict(cardinalities)})
