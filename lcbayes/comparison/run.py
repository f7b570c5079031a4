""":func:`compare`: run the engines every requested method needs on every candidate, then build
the table (:class:`~.table.Comparison`).

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
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Literal

import pandas as pd

from ..data import Dataset
from ..engines.ais import KERNELS, ais
from ..engines.em import em
from ..errors import LcbayesError, TooLargeError
from ..execution import Executor, SerialExecutor
from ..execution import executor as open_executor
from ..progress import new_bar
from ..render import versions
from ..samplers.smc_evidence import smc
from ..structure import Structure
from ..validation import Seed, as_dataset, check_int, check_positive, check_seed, seed_record
from . import registry
from .candidates import candidates as candidate_list
from .candidates import check_methods
from .table import Comparison

__all__ = ["AIS_TARGET_STDERR", "EXACT_MAX_TERMS", "compare"]

#: Default standard error AIS runs more chains to reach (issue "the first minute": every
#: carcinoma candidate at most 0.15, which the default kernel reaches with 32-64 chains).
AIS_TARGET_STDERR = 0.15
#: Default ``max_terms`` of the exact evidence (about a fifth of a second of work).
EXACT_MAX_TERMS = 2e5

_AIS = inspect.signature(ais).parameters
_EM = inspect.signature(em).parameters
_SMC = inspect.signature(smc).parameters


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
        return (None, f"too large for max_terms={settings['max_terms']:g}",
                time.perf_counter() - t)


def _first_note(exact) -> str | None:
    return "not requested (exact=False)" if exact is False else None


def _side_by_side(task: tuple[str, Structure], data: Dataset, settings: dict,
                  needed: list[registry.Need], exact) -> tuple[dict, str | None, dict]:
    """The needed engine runs of one candidate ``(name, structure)`` that may run side by
    side with other candidates', one after another, with its note and seconds per need."""
    note, done, spent = _first_note(exact), {}, {}
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
    outcomes = [({}, _first_note(exact), {}) for _ in structures]
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
    classes: Iterable[int] | int | None = None,
    methods: Sequence[str] | str | None = None,
    seed: Seed = 0,
    restarts: int = _EM["restarts"].default,
    ais_chains: int = _AIS["chains"].default,
    ais_temperatures: int = _AIS["temperatures"].default,
    ais_kernel: Literal["rw", "mh", "gibbs"] = _AIS["kernel"].default,
    ais_target_stderr: float | None = AIS_TARGET_STDERR,
    ais_max_chains: int | None = None,
    smc_particles: int = _SMC["particles"].default,
    smc_runs: int = _SMC["runs"].default,
    time_budget: float | None = None,
    exact: bool | Literal["auto"] = "auto",
    max_terms: float = EXACT_MAX_TERMS,
    max_iter: int | None = None,
    blrt_replicates: int = 500,
    progress: bool | None = None,
    workers: int | None = None,
    executor: Literal["serial", "dask"] | Executor | None = None,
    scheduler: str | None = None,
) -> Comparison:
    """Score every candidate structure by every requested method.

    Args:
        data: the data (a :class:`~lcbayes.Dataset`, or a DataFrame of categorical columns).
        candidates: structures on the columns of ``data`` (any kind, all on the same columns),
            as a list (named ``"LC(3)"``, ``"HLC(...)"``, ``"DAG(...)"``) or ``{name:
            structure}``. Give this or ``classes``.
        classes: numbers of latent classes, e.g. ``range(1, 6)``: shorthand for
            ``[lcb.latent_class(data, k) for k in classes]``.
        methods: names of registered methods (:func:`lcbayes.comparison.selectable_methods`;
            built in: ``bic``, ``bic_e``, ``aic``, ``icl``, ``cs``, ``bicp``, ``abic``,
            ``caic``, ``entropy`` (one ML EM fit serves them all), ``lmr``, ``blrt`` (each
            latent class candidate against one class fewer), ``vbem``, ``smc``, ``ais``), a
            list or comma-separated. Default: every default method (``bic``, ``bic_e``,
            ``aic``, ``icl``, ``cs``, ``vbem``, ``smc``). Only what they need runs.
        seed: every engine runs with this seed (so any row can be reproduced by calling the
            engine directly), and so do the posterior Monte Carlo draws. The same seed gives
            the same table (apart from ``seconds``).
        restarts: random starts of EM and of VBEM.
        ais_chains, ais_temperatures, ais_kernel: AIS chains (per group), annealing steps and
            kernel (:func:`lcbayes.ais`, Beal's schedule).
        ais_target_stderr, ais_max_chains: AIS runs groups of ``ais_chains`` chains until its
            standard error is at most ``ais_target_stderr`` or ``ais_max_chains`` chains
            (default ``8 * ais_chains``) have run; ``None``: one group. On carcinoma (118
            rows) K = 2..5 reach 0.15 with 32-64 chains of 4096 temperatures.
        smc_particles, smc_runs: particles and runs of the first SMC round
            (:func:`lcbayes.smc`: more runs follow up to its error target, and rounds with
            twice the particles where a round gives no estimate); the runs' spread is the error
            bar of both of its estimates.
        time_budget: seconds for the SMC runs of all candidates together, shared equally
            (each candidate stops starting runs and rounds once its share would be spent,
            after two runs); ``None``: no limit.
        exact: ``"auto"`` computes the exact evidence where it needs at most ``max_terms``
            terms (a structure with nothing hidden to sum, e.g. one class, always), ``True``
            requires it (:class:`~lcbayes.TooLargeError` otherwise), ``False`` skips it.
        max_terms: the exact evidence's limit on distinct count tables.
        max_iter: iteration limit of EM and VBEM (default: theirs, 2000 and 1000).
        blrt_replicates: the most bootstrap replicates of the ``blrt`` method (it stops
            sooner when the p-value is clearly above or below 0.05; :func:`lcbayes.blrt`).
        progress: a progress bar over the candidates (and AIS temperatures when
            ``workers=1``) on stderr; ``None``: when stderr is a terminal.
        workers: candidates' engine runs go side by side on this many threads (default: the
            number of CPU cores), each after the first candidate's run of the same engine,
            which compiles the program the others share; with
            ``executor="dask"`` and no ``scheduler``: the worker processes of the local Dask
            cluster. Every candidate's numbers depend on its seed alone, not on ``workers``.
        executor, scheduler: where the candidates run (:func:`lcbayes.execution.executor`):
            ``None`` here (or on the Dask scheduler named by ``LCBAYES_SCHEDULER``), ``"dask"``
            one candidate per task on a Dask cluster: ``scheduler="tcp://host:8786"`` joins a
            running one, else a ``LocalCluster`` is started for the call. The data is sent to
            every worker once; the table is the same as here, number for number.

    Returns:
        A :class:`~lcbayes.Comparison`; ``.to_frame()`` is the table.
    """
    if isinstance(data, pd.DataFrame):
        data = as_dataset(data)
    if not isinstance(data, Dataset):
        raise LcbayesError(f"data must be a lcbayes Dataset or a pandas DataFrame, got "
                           f"{type(data).__name__}")
    methods = check_methods(methods)
    if exact not in ("auto", True, False):
        raise LcbayesError(f"exact must be 'auto', True or False, got {exact!r}")
    seed = check_seed(seed)
    restarts = check_int(restarts, "restarts", 1)
    blrt_replicates = check_int(blrt_replicates, "blrt_replicates", 1)
    ais_chains = check_int(ais_chains, "ais_chains", 1)
    ais_temperatures = check_int(ais_temperatures, "ais_temperatures", 1)
    if ais_target_stderr is not None:
        ais_target_stderr = check_positive(ais_target_stderr, "ais_target_stderr")
        ais_max_chains = check_int(8 * ais_chains if ais_max_chains is None else ais_max_chains,
                                   "ais_max_chains", ais_chains)
    elif ais_max_chains is not None:
        raise LcbayesError("ais_max_chains needs ais_target_stderr")
    smc_particles = check_int(smc_particles, "smc_particles", 4)
    smc_runs = check_int(smc_runs, "smc_runs", 2)
    if time_budget is not None:
        time_budget = check_positive(time_budget, "time_budget")
    if ais_kernel not in KERNELS:
        raise LcbayesError(f"ais_kernel must be one of {', '.join(map(repr, KERNELS))}, got "
                           f"{ais_kernel!r}")
    names, structures = candidate_list(data, candidates, classes)
    data = structures[0].check_data(data)
    needed = _needed(methods, exact)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    sizes = [st.n_classes for st in structures if st.kind == "latent_class"]
    pad_classes = max(sizes) if len(set(sizes)) > 1 else None
    workers = check_int(os.cpu_count() or 1 if workers is None else workers, "workers", 1)
    settings = {"seed": seed, "restarts": restarts, "ais_chains": ais_chains,
                "pad_classes": pad_classes, "ais_temperatures": ais_temperatures,
                "ais_kernel": ais_kernel, "ais_target_stderr": ais_target_stderr,
                "ais_max_chains": ais_max_chains, "max_terms": max_terms,
                "smc_particles": smc_particles, "smc_runs": smc_runs,
                "smc_time_budget": None if time_budget is None
                else time_budget / len(structures),
                "blrt_replicates": blrt_replicates, "progress": show and workers == 1,
                "iter_args": {} if max_iter is None else {"max_iter": max_iter}}
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
    record = {"restarts": restarts, "ais_chains": ais_chains,
              "ais_temperatures": ais_temperatures, "ais_kernel": ais_kernel,
              "ais_target_stderr": ais_target_stderr, "ais_max_chains": ais_max_chains,
              "ais_schedule": "beal", "smc_particles": smc_particles, "smc_runs": smc_runs,
              "time_budget": time_budget, "exact": exact, "max_terms": float(max_terms),
              "pad_classes": pad_classes, "blrt_replicates": blrt_replicates,
              "max_iter": max_iter, "em_estimator": "ml", "prior": "dirichlet(1)",
              "vbem_starts": "restarts prior draws + one from the EM fit"
              if use_em else "restarts prior draws",
              "model_prior": "uniform"}
    used = seed_record(seed)
    seeds = {"em": used, "vbem": used, "smc": used, "ais": used, "posterior": used,
             "effective_dimension": 0}
    return Comparison(
        names=tuple(names), structures=tuple(structures), methods=methods,
        fits={k: tuple(v) for k, v in fits.items()}, exact_notes=tuple(notes), data=data,
        settings=record, seeds=seeds, seconds=seconds, versions=versions())
