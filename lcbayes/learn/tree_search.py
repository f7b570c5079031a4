"""Learning the hidden tree of an HLC model: EAST's expand-adjust-simplify search (Chen, Zhang,
Liu, Poon & Wang 2012, "Model-based multidimensional clustering of categorical data", AIJ 176;
its operators are Zhang 2004's and Zhang & Kočka 2004's, :mod:`.tree_operators`).

The search starts, as EAST does, from the latent class model with a binary class (the best of
16 random starts after EM), then repeats

1. **expand**: node introduction and state introduction; the candidate with the highest
   improvement ratio ``(score' - score) / (d' - d)`` among those that raise the score
   (Zhang & Kočka's cost-effectiveness, as EAST uses it), while that improves the model;
2. **adjust**: node relocation; the best candidate while it improves the model;
3. **simplify**: node deletion and state deletion; the best candidate while it improves it;

until a round leaves the score unchanged. The best latent class model that
:func:`~lcbayes.learn_classes` finds on the same data and score is a candidate too (unless
``lc_bound=False``), so the learned tree never scores below it (the final EM only raises the
likelihood).

The candidates of a step are fitted by local EM on their pivot alone (:mod:`.tree_local`: lanes
of one compiled program per padded shape) and ranked by BIC (AIC when the search maximises AIC)
at the local fit, which is the candidate's exact log-likelihood with the other tables held; the
winner gets a full multiple-restart EM (:func:`.tree_moves.fit_trees`), and its score (any of
:data:`~.scoring.SCORES`) decides. The best tree gets a final :func:`lcbayes.em` and is
re-rooted at its hidden node with the most neighbours.

For many items ``method="hlta"`` builds the tree bottom-up instead (:mod:`.tree_build`).

**Executors** (:mod:`lcbayes.execution`): the candidates of a step are cut into chunks of
:data:`CHUNK` (a constant, so the chunks do not depend on the workers) and each chunk's local
EM is a task; serially the same chunks run here, and a lane's numbers do not depend on the
other lanes of its block, so the path is the same number for number. When the executor runs
tasks side by side, the latent class search of ``lc_bound`` is one more task, running beside
the tree search (serially it runs first).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from typing import Literal

import numpy as np

from .. import scores
from ..constructors import hlc
from ..data import Dataset
from ..errors import ArgumentError, StructureError
from ..execution import Executor
from ..execution import executor as open_executor
from ..params import to_tables
from ..validation import (
    Seed,
    as_dataset,
    check_choice,
    check_int,
    check_positive,
    check_seed,
    numpy_rng,
)
from .driver import Path
from .moves import Context, Scored
from .restarts import EMSettings
from .result import LearnResult
from .scoring import SCORES, Scorer
from .search import final_result, learn_classes, run_search
from .tree_build import build_tree
from .tree_drawing import bracket
from .tree_local import LANES, LocalFit, local_em
from .tree_moves import fit_trees, tree_scored, walk
from .tree_operators import (
    Candidate,
    add_node,
    add_state,
    neighbours,
    relocate,
    remove_node,
    remove_state,
)
from .trees import TreeModel, random_tree

__all__ = ["AUTO_ITEMS", "CHUNK", "PHASES", "TREE_METHODS", "candidates", "learn_tree",
           "local_fits"]

#: The operations of each phase of EAST.
PHASES = {"expand": ("add_node", "add_state"), "adjust": ("relocate",),
          "simplify": ("remove_node", "remove_state")}
#: The searches of :func:`learn_tree`.
TREE_METHODS = ("auto", "east", "hlta")
#: ``method="auto"`` builds bottom-up (HLTA) from this many items on, else runs EAST.
AUTO_ITEMS = 20
#: Share of the time limit that the latent class search may use.
START_SHARE = 0.25
#: Node introduction's ``smoothing`` in the search (:func:`.tree_operators.add_node`).
NI_SMOOTHING = 0.1
#: Candidates per task of :func:`local_fits` (whole blocks of the local EM's lanes).
CHUNK = 2 * LANES


def _fresh_name(model: TreeModel, data: Dataset) -> str:
    taken = set(model.structure.nodes) | set(data.columns)
    return next(f"H{i}" for i in range(len(taken) + 1) if f"H{i}" not in taken)


def _attempt(make, *args) -> Candidate | None:
    try:
        return make(*args)
    except StructureError:
        return None


def _hidden_names(model: TreeModel) -> list[str]:
    s = model.structure
    return [s.nodes[h] for h in s.hidden_nodes]


def _is_hidden(model: TreeModel, name: str) -> bool:
    return model.structure.hidden[model.structure.index(name)]


def candidates(model: TreeModel, data: Dataset, phase: str, rng: np.random.Generator,
               perturbation: float, max_hidden: int | None = None) -> list[Candidate]:
    """Every valid candidate of ``phase`` (``"expand"``, ``"adjust"``, ``"simplify"``) from
    ``model``, with its starting parameters (:mod:`.tree_operators`)."""
    found: list[Candidate | None] = []
    hidden = _hidden_names(model)
    cards = dict(zip(hidden, (model.structure.cardinalities[model.structure.index(h)]
                              for h in hidden), strict=True))
    for h in hidden:
        nb = neighbours(model, h)
        if phase == "expand":
            if cards[h] >= 2 and (max_hidden is None or len(hidden) < max_hidden):
                name = _fresh_name(model, data)
                found += [_attempt(add_node, model, data, h, pair, name, NI_SMOOTHING)
                          for pair in combinations(nb, 2)]
            found += [_attempt(add_state, model, data, h, s, perturbation, rng)
                      for s in range(cards[h])]
        elif phase == "adjust":
            found += [_attempt(relocate, model, data, z, h, g)
                      for g in nb if _is_hidden(model, g) for z in nb if z != g]
        else:
            found += [_attempt(remove_node, model, data, h, g)
                      for g in nb if _is_hidden(model, g)]
            found += [_attempt(remove_state, model, data, h, a, b)
                      for a, b in combinations(range(cards[h]), 2)]
    return [c for c in found if c is not None]


def _chunk_fits(chunk: list[Candidate], current: TreeModel, data: Dataset, tol: float
                ) -> list[LocalFit]:
    """The local EMs of one chunk of candidates (a task of :mod:`lcbayes.execution`)."""
    return local_em(current, data, chunk, tol)


def local_fits(runner: Executor, current: TreeModel, data: Dataset, found: list[Candidate],
               tol: float) -> list[LocalFit]:
    """:func:`.tree_local.local_em` of ``found``, in chunks of :data:`CHUNK` candidates that
    are the tasks of ``runner`` (module docstring); the fits in the order of ``found``."""
    chunks = [found[i:i + CHUNK] for i in range(0, len(found), CHUNK)]
    shared = {"current": current, "data": data, "tol": tol}
    return [fit for part in runner.map(_chunk_fits, chunks, shared, desc="local EM")
            for fit in part]


def _classes_task(settings: dict, data: Dataset):
    """:func:`~lcbayes.learn_classes` of ``lc_bound`` (a task of :mod:`lcbayes.execution`)."""
    return learn_classes(data, **settings)


class _Search:
    """One EAST search (module docstring) over ``ctx.data``, its local EMs on ``runner``."""

    def __init__(self, ctx: Context, path: Path, max_hidden: int | None, runner: Executor):
        self.ctx, self.path, self.max_hidden, self.runner = ctx, path, max_hidden, runner

    def proxy(self, model: TreeModel, loglik: float) -> float:
        """The ranking score of a local fit: AIC for an AIC search, else BIC."""
        d = model.structure.n_parameters
        if self.ctx.scorer.name == "aic":
            return scores.aic(loglik, d)
        return scores.bic(loglik, d, self.ctx.scorer.n_rows)

    def phase(self, current: Scored, name: str) -> Scored:
        """Apply the best move of phase ``name`` while it improves the score."""
        ctx = self.ctx
        while not ctx.expired():
            found = candidates(current.model, ctx.data, name, ctx.rng, ctx.perturbation,
                               self.max_hidden)
            if not found:
                return current
            base = self.proxy(current.model, current.loglik)
            d0 = current.model.structure.n_parameters
            ranked = []
            for fit in local_fits(self.runner, current.model, ctx.data, found, ctx.em.tol):
                gain = self.proxy(fit.model, fit.loglik) - base
                if gain > 0:
                    extra = fit.model.structure.n_parameters - d0
                    key = (extra <= 0, gain / max(extra, 1)) if name == "expand" else (
                        True, gain)
                    ranked.append((key, fit))
            if not ranked:
                return current
            best = max(ranked, key=lambda pair: pair[0])[1]
            candidate = tree_scored(ctx, *fit_trees(ctx, [best.model], 1)[0])
            accepted = candidate.score > current.score
            self.path.add(best.candidate.operation, candidate, accepted,
                          hidden=bracket(candidate.model.structure))
            if not accepted:
                return current
            current = candidate
        return current

    def run(self, start: Scored) -> Scored:
        """EAST's rounds of expand, adjust and simplify until a round gains nothing."""
        current = start
        while not self.ctx.expired():
            before = current.score
            for name in PHASES:
                current = self.phase(current, name)
            if not current.score > before:
                break
        return current


def _one_hidden(data: Dataset, n_classes: int):
    name = next(f"H{i}" for i in range(data.n_columns + 1) if f"H{i}" not in data.columns)
    return hlc(data, {name: list(data.columns)}, {name: n_classes})


def _start(ctx: Context, runner: Executor) -> Scored:
    """EAST's start: the latent class model with two classes, the best of ``ctx.n_splits``
    random starts after EM (run as local EMs whose items are the leaves, on ``runner``)."""
    structure = _one_hidden(ctx.data, 2)
    items = tuple((name, frozenset[str]()) for name in structure.observed_names)
    starts = [Candidate("start", "random start", random_tree(structure, ctx.rng), items)
              for _ in range(ctx.n_splits)]
    best = max(local_fits(runner, starts[0].model, ctx.data, starts, ctx.em.tol),
               key=lambda fit: fit.loglik)
    return tree_scored(ctx, best.model, best.loglik)


def _classes_model(ctx: Context, classes) -> Scored:
    """The result of :func:`~lcbayes.learn_classes` as an HLC model with one hidden node."""
    structure = _one_hidden(ctx.data, classes.n_classes)
    tables = tuple(np.asarray(t) for t in to_tables(classes.structure, classes.params))
    return Scored(TreeModel(structure, tables), classes.fit.loglik,
                  ctx.scorer(structure, tables, classes.fit.loglik))


def learn_tree(
    data,
    *,
    score: str = "bic",
    seed: Seed = 0,
    time_limit: float | None = None,
    max_hidden: int | None = None,
    method: str = "auto",
    lc_bound: bool = True,
    perturbation: float = 0.05,
    tol: float = 0.01,
    max_iter: int = 200,
    progress: bool = False,
    executor: Literal["serial", "dask"] | Executor | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> LearnResult:
    """Learn the hidden tree of an HLC model, its cardinalities included (EAST; module
    docstring).

    Args:
        data: the data (a :class:`~lcbayes.Dataset` or a DataFrame of categorical columns,
            at least 3 columns); missing values are marginalised.
        score: ``"bic"`` (default), ``"bic_e"``, ``"aic"``, ``"icl"``, ``"vbem"`` or
            ``"smc"`` (:mod:`lcbayes.learn.scoring`); candidates are ranked by BIC (AIC for
            ``"aic"``) after their local EM, and the winner is accepted by ``score``.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            path.
        time_limit: seconds; the search returns the best tree found when they run out (the
            step under way finishes first). The start's latent class search may use a
            quarter of them.
        max_hidden: never have more hidden nodes than this (EAST).
        method: ``"east"`` (the search of the module docstring), ``"hlta"`` (the bottom-up
            build for many items, :mod:`.tree_build`) or ``"auto"`` (``"hlta"`` from
            :data:`AUTO_ITEMS` items on, else ``"east"``).
        lc_bound: also run :func:`~lcbayes.learn_classes` (same score, seed and EM
            settings) and return its model if it scores higher, so that the tree never scores
            below the best latent class model it finds. For many items that search takes
            longer than the build; ``False`` leaves it out.
        tol, max_iter: EM convergence (nats) and iteration limit of the local and full EMs.
        progress: show a progress bar over the moves (and one over the moves of the
            ``lc_bound`` search).
        executor, scheduler, workers: where the local EMs of a step's candidates run, in
            chunks of :data:`CHUNK` (:func:`lcbayes.execution.executor`): ``None`` /
            ``"serial"`` here, ``"dask"`` on a Dask cluster (``scheduler`` joins a running
            one, else a ``LocalCluster`` of ``workers`` processes); there the latent class
            search of ``lc_bound`` runs as a task beside the tree search (for
            ``method="hlta"`` that is all that runs there). The same result either way
            (without ``time_limit``, which depends on the clock).

    Returns:
        A :class:`~lcbayes.LearnResult` (``method`` ``"east"`` or ``"hlta"``) whose ``fit`` is
        the best HLC model (its ``structure`` works with every engine and with
        :func:`lcbayes.compare`), with the path of accepted and rejected moves; ``summary()``
        draws the tree.
    """
    started, seed = time.perf_counter(), check_seed(seed)
    data = as_dataset(data)
    check_choice(score, "score", tuple(SCORES))
    check_choice(method, "method", TREE_METHODS)
    if data.n_columns < 3:
        raise ArgumentError(f"data has {data.n_columns} column(s); an HLC tree needs at least "
                            "3 items")
    if data.n_observed_rows == 0:
        raise ArgumentError("data has no row with an observed value; nothing to learn from")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    if max_hidden is not None:
        max_hidden = check_int(max_hidden, "max_hidden", 1)
    ctx = Context(data=data, scorer=Scorer(data, score), rng=numpy_rng(seed),
                  em=EMSettings(check_positive(tol, "tol"), check_int(max_iter, "max_iter", 1)),
                  deadline=None if time_limit is None else started + time_limit,
                  perturbation=check_positive(perturbation, "perturbation"))
    lc_settings = {"score": score, "seed": seed, "tol": tol, "max_iter": max_iter,
                   "time_limit": None if time_limit is None else START_SHARE * time_limit,
                   "progress": progress}
    if method == "auto":
        method = "hlta" if data.n_columns >= AUTO_ITEMS else "east"

    def search(path: Path, runner: Executor, bound) -> Scored:
        if method == "hlta":
            best = build_tree(ctx, note=None if path.bar is None else path.bar.set_postfix_str)
            path.add("build", best, True, hidden=bracket(best.model.structure))
        else:
            start = _start(ctx, runner)
            path.add("start", start, True, hidden=bracket(start.model.structure))
            best = _Search(ctx, path, max_hidden, runner).run(start)
        if bound is None:
            return best
        lc = _classes_model(ctx, bound.result()[0])
        path.add("latent_class", lc, lc.score > best.score, hidden=bracket(lc.model.structure))
        return lc if lc.score > best.score else best

    with open_executor(executor, scheduler, workers) as runner, ThreadPoolExecutor(1) as beside:
        bound = None if not lc_bound else beside.submit(
            runner.map, _classes_task, [lc_settings], {"data": data}, desc="learn_classes")
        if bound is not None and runner.parallelism == 1:
            bound.result()  # one task at a time: the bound first, as the time limit assumes
        best, path = run_search(ctx, f"learn_tree ({method})", progress,
                                lambda path: search(path, runner, bound), started)
    classes = None if bound is None else bound.result()[0]
    s = best.model.structure
    root = max(s.hidden_nodes, key=lambda h: (len(s.children[h]) + len(s.parents[h]), -h))
    final = walk(best.model, root)
    return final_result(ctx, final.structure, final.params, path, method, seed, started,
                        {"max_hidden": max_hidden, "lc_bound": lc_bound,
                         "lc_classes": None if classes is None else classes.n_classes,
                         "lc_seconds": None if classes is None else classes.seconds})
