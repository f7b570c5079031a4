""":func:`compare`: run the engines every requested method needs on every candidate, then build
the table (:class:`~.table.ComparisonResult`).

The run is: check the arguments and the candidates (:mod:`.candidates`); from the requested
methods (:mod:`.registry`) find the engine runs they need (:mod:`.needs`); run those on every
candidate (each after the runs whose results it reads, e.g. VBEM after EM, the fit it also
starts from; AIS beside them), each with the same ``seed``, so any row can be reproduced by
calling the engine directly and the numbers do not depend on the order or on the threads;
record settings, seeds, seconds and versions. Engines compile once per structure
shape; latent class candidates of different sizes share one program per engine by running
inside the largest (``pad_classes``, :mod:`lcbayes.engines.padding`), recorded in the settings:
the same numbers up to rounding (EM: and its tolerance), a fraction of the compilation.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any, Literal

import jax
import numpy as np
import pandas as pd

from ..data import Dataset
from ..engines.em import em
from ..errors import ArgumentError, LcbayesError, TooLargeError
from ..execution import Executor, SerialExecutor
from ..execution import executor as open_executor
from ..progress import new_bar
from ..render import versions
from ..structure import Structure
from ..validation import Seed, as_dataset, check_int, check_positive, check_seed, seed_record
from . import registry
from .auto import AUTO_MAX_CLASSES, auto_classes
from .candidates import candidates as candidate_list
from .candidates import check_methods
from .covariate_effects import covariate_effects, split_columns
from .engine_options import resolve as resolve_options
from .table import ComparisonResult

__all__ = ["compare"]

_EM = inspect.signature(em).parameters


def _needed(methods: tuple[str, ...], exact) -> list[registry.Need]:
    """The engine runs of the requested methods (and the exact evidence unless ``exact`` is
    ``False``), with the effective dimension always, in registration order."""
    names = {"effective_dimension"}
    for m in registry.methods():
        if m.name in methods or (not m.selectable and exact is not False):
            names.update(m.needs)
    return [n for n in registry.needs() if n.name in names]


def _run_need(need: registry.Need, task: tuple[str, Structure], data: Dataset,
              settings: dict, fits: dict, exact) -> tuple[object, str | None, float]:
    """One need of one candidate ``(name, structure)``: its result, a note (a too-large
    exact evidence: no result) and its seconds."""
    name, structure = task
    t = time.perf_counter()
    try:
        return need.run(structure, data, settings, fits), None, time.perf_counter() - t
    except TooLargeError as exc:
        if not need.too_large or exact is True:
            raise TooLargeError(f"candidate {name!r}: {exc}") from None
        return (None, f"too large for max_terms={settings['options']['exact']['max_terms']:g}",
                time.perf_counter() - t)


def _first_note(exact) -> str | None:
    return "not requested (exact=False)" if exact is False else None


def _side_by_side(task: tuple[str, Structure], data: Dataset, settings: dict,
                  needed: list[registry.Need], exact) -> tuple[dict, str | None, dict]:
    """The needed engine runs of one candidate ``(name, structure)`` that may run side by
    side with other candidates', one after another, with its note and seconds per need."""
    done: dict[str, object] = {}
    note, spent = _first_note(exact), {}
    for need in needed:
        if need.side_by_side:
            done[need.name], late, spent[need.name] = _run_need(need, task, data, settings,
                                                                 done, exact)
            note = late or note
    return done, note, spent


def _one_at_a_time(structure: Structure, outcome: tuple, data: Dataset, settings: dict,
                   needed: list[registry.Need]) -> tuple[dict, str | None, dict]:
    """``outcome`` with the needs that run one candidate at a time (they compile programs of
    their own)."""
    done, note, spent = outcome
    for need in needed:
        if not need.side_by_side:
            t = time.perf_counter()
            done[need.name] = need.run(structure, data, settings, done)
            spent[need.name] = time.perf_counter() - t
    return done, note, spent


def _candidate(task: tuple[str, Structure], data: Dataset, settings: dict,
               needed: list[registry.Need], exact) -> tuple[dict, str | None, dict]:
    """Every needed engine run of one candidate: a task of :mod:`lcbayes.execution`."""
    outcome = _side_by_side(task, data, settings, needed, exact)
    return _one_at_a_time(task[1], outcome, data, settings, needed)


def _inputs(need: registry.Need, needed: list[registry.Need]) -> list[str]:
    """The needs among ``needed`` whose results ``need`` reads (:attr:`Need.after`)."""
    names = [n.name for n in needed if n.side_by_side]
    if need.after is None:
        return names[:names.index(need.name)]
    return [n for n in need.after if n in names]


def _run_here(names: list[str], structures: list[Structure], shared: dict, workers: int,
              show: bool) -> list[tuple]:
    """Every candidate in this process, its needs as tasks on ``workers`` threads: a task
    starts once the needs it reads (:attr:`Need.after`) are done for its candidate and the
    first candidate has run the same need (so it compiled the program the others share);
    so one candidate's AIS compiles and runs beside its EM and VBEM. Then the one-at-a-time
    needs."""
    data, settings, needed, exact = (shared[k] for k in ("data", "settings", "needed",
                                                         "exact"))
    order = {n.name: i for i, n in enumerate(needed)}
    waiting = {(j, n.name): [(j, u) for u in _inputs(n, needed)] + ([(0, n.name)] if j else [])
               for j in range(len(structures)) for n in needed if n.side_by_side}
    per_candidate = len(waiting) // len(structures)
    need_of = {n.name: n for n in needed}
    outcomes: list[tuple[dict[str, object], str | None, dict[str, float]]] = [
        ({}, _first_note(exact), {}) for _ in structures]
    finished: set[tuple[int, str]] = set()
    bar = new_bar(total=len(structures), desc="compare", unit="model", disable=not show,
                  log_every=0, file=sys.stderr)
    pool = ThreadPoolExecutor(max_workers=workers)
    running: dict = {}
    interrupted = False
    try:
        while waiting or running:
            ready = sorted((t for t, deps in waiting.items() if finished.issuperset(deps)),
                           key=lambda t: (t[0] > 0, -order[t[1]], t[0]))
            for j, name in ready:  # the first candidate first, then the later needs (AIS)
                del waiting[j, name]
                task = (names[j], structures[j])
                running[pool.submit(_run_need, need_of[name], task, data, settings,
                                    dict(outcomes[j][0]), exact)] = (j, name)
            complete, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in complete:
                j, name = running.pop(future)
                done, note, spent = outcomes[j]
                done[name], late, spent[name] = future.result()
                outcomes[j] = (done, late or note, spent)
                finished.add((j, name))
                if len(done) == per_candidate:
                    bar.update(1)
    except BaseException:        # Ctrl-C: the caller gets control back now, the running
        interrupted = True       # engine calls end on their own and are dropped
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)
        bar.close()
    return [_one_at_a_time(st, out, data, settings, needed)
            for st, out in zip(structures, outcomes, strict=True)]


def compare(
    data: Dataset | pd.DataFrame,
    candidates: Sequence[Structure] | Mapping[str, Structure] | None = None,
    *,
    n_classes: Iterable[int] | int | Literal["auto"] | None = None,
    max_classes: int = AUTO_MAX_CLASSES,
    on_batch: Callable[[ComparisonResult], object] | None = None,
    methods: Sequence[str] | str | None = None,
    seed: Seed = 0,
    restarts: int = _EM["restarts"].default,
    exact: bool | Literal["auto"] = "auto",
    time_limit: float | None = None,
    engine_options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool | None = None,
    workers: int | None = None,
    executor: Literal["serial", "dask"] | Executor | None = None,
    scheduler: str | None = None,
    covariates: Sequence[str] | pd.DataFrame | None = None,
    distal: str | pd.Series | None = None,
    bayes_factors: bool = True,
) -> ComparisonResult:
    """Score every candidate structure by every requested method.

    Args:
        data: the data (a :class:`~lcbayes.Dataset`, or a DataFrame of categorical columns).
        candidates: structures on the columns of ``data`` (any kind, all on the same columns),
            as a list (named ``"LC(3)"``, ``"HLC(...)"``, ``"DAG(...)"``) or ``{name:
            structure}``. Give this or ``n_classes``.
        n_classes: numbers of latent classes, e.g. ``range(1, 6)``: shorthand for
            ``[lcb.latent_class(data, k) for k in n_classes]``; or ``"auto"``: classes added
            until the criterion has peaked (:func:`~.auto.auto_classes`: from ``K = 1, 2, 3``, more
            ``K`` until the two largest both lie below the best by more than
            :data:`~lcbayes.comparison.policy.DISAGREE_SE` combined standard errors), at most
            ``max_classes``.
        max_classes: the cap of ``n_classes="auto"``.
        on_batch: with ``n_classes="auto"``, called after every batch with the comparison of
            every candidate so far (to save or show a long search as it goes; its ``settings``
            record the batches, and ``"peaked"`` whether the search has stopped).
        methods: names of registered methods (:func:`lcbayes.comparison.selectable_methods`;
            built in: ``bic``, ``bic_e``, ``aic``, ``icl``, ``cs``, ``bicp``, ``abic``,
            ``caic``, ``entropy`` (one ML EM fit serves them all), ``lmr``, ``blrt`` (each
            latent class candidate against one class fewer), ``vbem``, ``smc``, ``ais``), a
            list or comma-separated. Default: every default method (``bic``, ``bic_e``,
            ``aic``, ``icl``, ``cs``, ``vbem``, ``smc``). Only what they need runs.
        seed: every engine runs with this seed (so any row can be reproduced by calling the
            engine directly), and so do the posterior Monte Carlo draws. The same seed gives
            the same table (apart from ``seconds``).
        restarts: random starts of every engine that has them (EM, VBEM, Laplace, Chib).
        exact: ``"auto"`` computes the exact evidence where it needs at most ``max_terms``
            terms (a structure with nothing hidden to sum, e.g. one class, always), ``True``
            requires it (:class:`~lcbayes.TooLargeError` otherwise), ``False`` skips it.
        time_limit: seconds for the SMC runs of all candidates together, shared equally
            (each candidate stops starting runs and rounds once its share would be spent,
            after two runs; with ``n_classes="auto"`` each batch shares what is left); bridge
            sampling and the other engines are not limited; ``None``: no limit.
        engine_options: options of the engine runs behind the methods, ``{engine: {option:
            value}}``, each the keyword arguments of that engine's function
            (:mod:`lcbayes.comparison.engine_options`; a registered need receives its own):
            ``{"ais": {"chains": 32, "kernel": "mh"}, "smc": {"particles": 256}, "blrt":
            {"replicates": 99}, "em": {"max_iter": 500}, "vbem": {"tol": 1e-8}, "exact":
            {"max_terms": 1e6}}``. Defaults: the engines', except AIS's ``target_stderr``
            (0.15: groups of chains until the standard error is at most that) and the exact
            evidence's ``max_terms`` (2e5).
        progress: a progress bar over the candidates (and AIS temperatures when
            ``workers=1``) on stderr; ``None``: when stderr is a terminal.
        workers: how many candidates' engine runs go side by side: threads here (default:
            the number of CPU cores), each after the first candidate's run of the same engine,
            which compiles the program the others share; with ``executor="dask"`` and no
            ``scheduler``: the worker processes of the local Dask cluster. Every candidate's
            numbers depend on its seed alone, not on ``workers``.
        executor, scheduler: where the candidates run (:func:`lcbayes.execution.executor`):
            ``None`` here (or on the Dask scheduler named by ``LCBAYES_SCHEDULER``), ``"dask"``
            one candidate per task on a Dask cluster: ``scheduler="tcp://host:8786"`` joins a
            running one, else a ``LocalCluster`` is started for the call. The data is sent to
            every worker once; the table is the same as here, number for number.
        covariates: also ask whether these covariates matter for class membership
            (:mod:`lcbayes.comparison.covariate_effects`): for every latent class candidate,
            the latent class regression against the same model without them (likelihood ratio,
            BIC, and the Bayes factor with its standard error), on the rows that have every
            covariate; column names of a DataFrame ``data`` (they are then not indicators), or
            a DataFrame of covariate columns with one row per data row.
        distal: also ask whether this outcome differs by class (one step, as
            ``lcb.em(distal=...)``): a column name of a DataFrame ``data`` or a Series.
        bayes_factors: with ``covariates`` or ``distal``, also their log Bayes factors with
            standard errors for every K >= 2 (:func:`lcbayes.covariate_evidence`: two NUTS
            runs and bridge sampling per test and K, seconds each on small data, minutes on
            thousands of distinct rows); ``False``: the likelihood ratios and BIC only.

    Returns:
        A :class:`~lcbayes.ComparisonResult`; ``.to_frame()`` is the table.
    """
    frame = None
    if covariates is not None or distal is not None:
        data, frame, covariates, distal = split_columns(data, covariates, distal)
    if isinstance(data, pd.DataFrame):
        data = as_dataset(data)
    if not isinstance(data, Dataset):
        raise LcbayesError(f"data must be a lcbayes Dataset or a pandas DataFrame, got "
                           f"{type(data).__name__}")
    methods = check_methods(methods)
    if "loo" in methods and (covariates is not None or distal is not None):
        raise ArgumentError("methods 'loo' cannot be given with covariates or distal: it would "
                            "cross-validate the models without them; leave loo out")
    if exact not in ("auto", True, False):
        raise LcbayesError(f"exact must be 'auto', True or False, got {exact!r}")
    seed = check_seed(seed)
    restarts = check_int(restarts, "restarts", 1)
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    workers = check_int(os.cpu_count() or 1 if workers is None else workers, "workers", 1)
    common: dict[str, Any] = {
        "methods": methods, "seed": seed, "restarts": restarts, "exact": exact,
        "time_limit": time_limit, "engine_options": engine_options, "progress": progress,
        "workers": workers, "executor": executor, "scheduler": scheduler, "frame": frame,
        "covariates": covariates, "distal": distal, "bayes_factors": bayes_factors}
    if isinstance(n_classes, str):
        if n_classes != "auto":
            raise LcbayesError(f"n_classes must be numbers of classes or 'auto', got "
                               f"{n_classes!r}")
        if candidates is not None:
            raise LcbayesError("give exactly one of candidates or n_classes='auto'")
        cap = check_int(max_classes, "max_classes", 1)
        began = time.perf_counter()

        def batch(ks: list[int]) -> ComparisonResult:
            left = (None if time_limit is None
                    else max(time_limit - (time.perf_counter() - began), 1e-3))
            done = _compare(data, None, ks, **{**common, "frame": None, "time_limit": left})
            # the batch's programs are padded to its own largest K: no later batch reuses them
            jax.clear_caches()
            return done

        result = auto_classes(batch, cap, workers, on_batch)
        if frame is None:
            return result
        return _with_effects(result, frame, **{k: v for k, v in common.items()
                                               if k != "frame"})
    if on_batch is not None:
        raise LcbayesError("on_batch applies to n_classes='auto' only (one batch otherwise: "
                           "use the returned comparison)")
    return _compare(data, candidates, n_classes, **common)


def _compare(data: Dataset, candidates, n_classes, *, methods: tuple[str, ...], seed,
             restarts: int, exact, time_limit: float | None, engine_options, progress,
             workers: int, executor, scheduler, frame, covariates, distal,
             bayes_factors: bool) -> ComparisonResult:
    """:func:`compare` of checked arguments on one set of candidates."""
    names, structures = candidate_list(data, candidates, n_classes)
    if frame is not None and any(st.kind != "latent_class" for st in structures):
        raise LcbayesError("covariates and distal need latent class candidates (n_classes=...)")
    data = structures[0].check_data(data)
    needed = _needed(methods, exact)
    options = resolve_options(engine_options, needed, data.n_observed_rows)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    sizes = [st.n_classes for st in structures if st.n_classes is not None]
    pad_classes = max(sizes) if len(set(sizes)) > 1 else None
    settings = {"seed": seed, "restarts": restarts, "pad_classes": pad_classes,
                "options": options, "progress": show and workers == 1,
                "smc_time_limit": None if time_limit is None else time_limit / len(structures)}
    started = time.perf_counter()
    shared = {"data": data, "settings": settings, "needed": needed, "exact": exact}
    with open_executor(executor, scheduler, workers) as runner:
        if isinstance(runner, SerialExecutor):
            outcomes = _run_here(names, structures, shared, workers, show)
        else:
            settings["progress"] = False
            outcomes = runner.map(_candidate, list(zip(names, structures, strict=True)),
                                  shared, progress=show, desc="compare")
    fits = {n.name: [done[n.name] for done, _, _ in outcomes] for n in needed}
    notes = [note for _, note, _ in outcomes]
    seconds = dict.fromkeys((n.name for n in registry.needs()), 0.0)
    for _, _, spent in outcomes:
        for name, value in spent.items():
            seconds[name] += value
    seconds["total"] = time.perf_counter() - started
    use_em = "em" in fits
    record = {"restarts": restarts, "time_limit": time_limit, "exact": exact,
              "pad_classes": pad_classes, "engine_options": _jsonable(options),
              "em_estimator": "ml", "prior": "dirichlet(1)",
              "vbem_starts": "restarts prior draws + one from the EM fit"
              if use_em else "restarts prior draws",
              "model_prior": "uniform"}
    used = seed_record(seed)
    seeds = {"em": used, "vbem": used, "smc": used, "bridge": used, "ais": used, "posterior": used,
             "effective_dimension": 0}
    result = ComparisonResult(
        names=tuple(names), structures=tuple(structures), methods=methods,
        fits={k: tuple(v) for k, v in fits.items()}, exact_notes=tuple(notes), data=data,
        settings=record, seeds=seeds, seconds=seconds, versions=versions())
    return result if frame is None else _with_effects(
        result, frame, covariates=covariates, distal=distal, seed=seed, restarts=restarts,
        bayes_factors=bayes_factors, started=started)


def _with_effects(result: ComparisonResult, frame, *, covariates, distal, seed, restarts: int,
                  bayes_factors: bool, started: float | None = None, **_) -> ComparisonResult:
    """``result`` with the covariate effects of every latent class candidate
    (:mod:`.covariate_effects`) and their seconds."""
    ks = [int(st.n_classes or 1) for st in result.structures]
    begun = time.perf_counter()
    effects = covariate_effects(result.data, frame, covariates or [], ks, distal=distal,
                                seed=seed, restarts=restarts, bayes_factors=bayes_factors)
    seconds = {**result.seconds, "covariates": time.perf_counter() - begun}
    if started is not None:
        seconds["total"] = time.perf_counter() - started
    else:
        seconds["total"] = seconds.get("total", 0.0) + seconds["covariates"]
    return replace(result, seconds=seconds, covariate_effects=effects)


def _jsonable(options: dict[str, dict]) -> dict[str, dict]:
    """The engine options as the run's record keeps them: numbers, text, lists."""
    def value(v):
        if isinstance(v, np.ndarray):
            return v.tolist()
        return v.item() if isinstance(v, np.generic) else v
    return {need: {k: value(v) for k, v in opts.items()} for need, opts in options.items()
            if opts}
