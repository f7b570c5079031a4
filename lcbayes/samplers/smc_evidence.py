"""``lcb.smc``: the log evidence of a latent class model by reference-tempered SMC
(:mod:`lcbayes.samplers.tempered_smc`) from independent runs, each with a fresh reference
(:mod:`lcbayes.samplers.reference`); of an HLC tree or DAG by the particle filter over the rows
(:mod:`lcbayes.samplers.smc_network`). :mod:`lcbayes.samplers.smc_result` turns the runs into
an estimate and an error bar.

**Rounds: components added until the estimate stops moving.** A run's reference covers the
modes its components start in, and the spread of runs cannot show a mode none of them starts
in. So the runs go in rounds: the first uses at most ``2`` reference components per run, each
next round twice as many (up to ``max_components``); a round makes ``runs`` runs, and the rounds
stop when a round had every distinct optimum of every run, or moved the estimate by no more than
twice the two rounds' combined standard error (or :data:`STABLE_NATS`, whichever is larger), or
the next would pass ``max_components``. The round that stops them is then topped up, one run at
a time, until its error target is met (:func:`run_round`): the runs that shrink the error bar
go to the reference that is kept. The result is the last round's; ``moved`` says how far the
last doubling moved it, and an unsettled reference widens the error bar.

**Fresh references.** Run ``r`` fits its own optima (VB and EM restarts seeded from ``seed``
and ``r``), so runs differ in the optima they found as well as in their draws.

Example::

    res = lcb.smc(lcb.latent_class(data, 3), data, seed=0)
    res.log_evidence, res.stderr, res.moved
    lcb.smc(structure, data, time_limit=60)   # no run or round starts past 60 s
    lcb.smc(tree, data)                        # an HLC tree: the particle filter over the rows
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset
from ..engines.run_record import start_engine
from ..errors import ArgumentError
from ..jax_setup import on_device
from ..params import PriorSpec
from ..structure import Structure
from ..validation import Seed, check_int, check_positive, fit_data, prng_key, seed_record
from .gibbs import symmetric_prior
from .particle_filter import TEMPER_ESS
from .reference import (
    Optimum,
    default_restarts,
    padded_count,
    product_reference,
    reference_optima,
    smoothing_for,
    tail_for,
)
from .smc_network import network_data, network_prior, run_network_smc
from .smc_result import MIN_RUNS, SMCResult, run_statistics
from .tempered_smc import TemperedData, run_tempered, tempered_data

__all__ = ["FEWEST_PARTICLES", "FIRST_COMPONENTS", "MAX_STEPS", "MIXING_ROWS", "PARTICLES_BY_ROWS",
           "STABLE_NATS", "default_particles", "default_sweeps", "smc"]

#: Most temperatures of one run (a run that needs more gives no estimate).
MAX_STEPS = 1000
#: Reference components per run in the first round (module docstring).
FIRST_COMPONENTS = 2
#: Rounds stop once the estimate moved by less than this many nats (or twice the combined
#: standard error of the two rounds, whichever is larger).
STABLE_NATS = 0.1
#: Below this many rows each temperature takes three Gibbs sweeps, from here on one
#: (:func:`default_sweeps`).
MIXING_ROWS = 50_000
#: Most steps of the particle filter over the rows (HLC trees and DAGs) that move particles.
MAX_MOVES = 4096


#: Particles by rows (:func:`default_particles`): ``(fewer than this many rows, particles)``.
PARTICLES_BY_ROWS = ((20_000, 256), (50_000, 128))
#: Particles from the last bound of :data:`PARTICLES_BY_ROWS` on.
FEWEST_PARTICLES = 64


def default_particles(rows: int) -> int:
    """Particles per run on ``rows`` rows (:data:`PARTICLES_BY_ROWS`): a step costs particles
    times rows, while the runs' spread shrinks as the posterior narrows with more rows."""
    return next((p for bound, p in PARTICLES_BY_ROWS if rows < bound), FEWEST_PARTICLES)


def default_sweeps(rows: int) -> int:
    """Gibbs sweeps per temperature on ``rows`` rows: 3 below :data:`MIXING_ROWS`, else 1.

    The resample-move estimate is unbiased only as far as the moves bring the resampled
    particles back to the current target; with too few sweeps the particles lag behind the
    path and every run comes out low by about the same amount, so the runs' spread does not
    show it (a run's sweeps, unlike its particles, move the estimate). From
    :data:`MIXING_ROWS` rows on a sweep costs too much for three (``reports/evidence-at-scale.md``
    measures both)."""
    return 3 if rows < MIXING_ROWS else 1


def _run_seed(seed, index: int) -> int:
    """The seed of run ``index``'s reference fits."""
    return int(np.random.SeedSequence([*np.atleast_1d(seed_record(seed)), index])
               .generate_state(1)[0] >> 1)


class _Rounds:
    """The runs of one call: each run's optima (fitted once, on first use) and its keys."""

    def __init__(self, structure: Structure, data: Dataset, seed, restarts: int,
                 prior: PriorSpec):
        self.structure, self.data, self.seed = structure, data, seed
        self.restarts, self.prior = restarts, prior
        self.optima: dict[int, list[Optimum]] = {}

    def of(self, index: int) -> list[Optimum]:
        if index not in self.optima:
            self.optima[index] = reference_optima(self.structure, self.data,
                                                  restarts=self.restarts,
                                                  seed=_run_seed(self.seed, index),
                                                  prior=self.prior)
        return self.optima[index]


def run_round(one_run: Callable[[int], tuple[float, int, int, float]], *, runs: int,
              max_runs: int, target_stderr: float | None, fits: Callable[[float], bool],
              made: list[tuple[float, int, int, float]] | None = None,
              seconds: list[float] | None = None
              ) -> tuple[list[tuple[float, int, int, float]], list[float], str]:
    """Runs ``0, 1, ...`` of one round: ``runs`` of them, then one at a time while the standard
    error is above ``target_stderr`` (up to ``max_runs``), none started once ``fits(projected
    seconds)`` fails after :data:`MIN_RUNS`; ``made`` and ``seconds``: the round's runs so far
    (it goes on from them). Returns every run's ``(ln Z, steps, components, correction)``, its
    seconds and why the round stopped."""
    made = [] if made is None else list(made)
    seconds = [] if seconds is None else list(seconds)
    stopped = "runs" if target_stderr is None else "max_runs"
    while len(made) < max(runs, max_runs):
        if len(made) >= runs:
            if target_stderr is None:
                break
            if run_statistics(np.array([m[0] for m in made]))[1] <= target_stderr:
                stopped = "target_stderr"
                break
        if len(made) >= MIN_RUNS and not fits(float(np.mean(seconds))):
            stopped = "time_limit"
            break
        t = time.perf_counter()
        made.append(one_run(len(made)))
        seconds.append(time.perf_counter() - t)
    return made, seconds, stopped


def smc(structure: Structure, data, *, particles: int | None = None, runs: int = 4,
        max_runs: int = 12, target_stderr: float | None = 0.3, sweeps: int | None = None,
        ess_target: float = 0.9, restarts: int | None = None, max_components: int = 8,
        time_limit: float | None = None, seed: Seed = 0, prior: PriorSpec = "dirichlet",
        pad_classes: int | None = None) -> SMCResult:
    """``ln p(y | K)`` by sequential Monte Carlo: for a latent class model, tempered from a
    reference built from EM and VB optima (module docstring; the algorithm in
    :mod:`lcbayes.samplers.tempered_smc`); for an HLC tree or DAG, the particle filter over the
    rows (:mod:`lcbayes.samplers.smc_network`).

    Args:
        structure: a latent class structure (:func:`lcbayes.latent_class`), an HLC tree or a
            DAG (:func:`lcbayes.hlc`, :func:`lcbayes.dag`).
        data: the data; missing values are summed out, rows with none observed add nothing.
        particles: particles per run (at least 4; default :func:`default_particles`).
        runs: runs of every round (their spread is the error bar, scaled by Student's t for
            so few runs; at least 2).
        max_runs: most runs of a round: runs are added one at a time while the standard error
            is above ``target_stderr``.
        target_stderr: the standard error (nats) that ends a round; ``None``: exactly ``runs``
            runs.
        sweeps: Gibbs sweeps at each temperature (default :func:`default_sweeps`: more on small
            data, whose broad posteriors the blocked sampler crosses slowly).
        ess_target: the effective sample size kept at each temperature, as a fraction of the
            particles (between 0 and 1: higher takes more, smaller steps).
        restarts: VB and EM restarts of each run's reference fits (default
            :func:`~lcbayes.samplers.reference.default_restarts`: more with more classes).
        max_components: most reference components per run (rounds double them from
            :data:`FIRST_COMPONENTS`).
        time_limit: seconds; no run starts that would end past them (projected from the runs
            so far) once two runs of a round are made, and no round starts that could not
            make two; so fewer runs or rounds may run (then the error bar says so).
        seed: an integer or a ``jax.random`` key: every run's reference fits and draws.
        prior: Dirichlet pseudo-counts as everywhere in lcbayes, the same for every class.
        pad_classes: run inside this many class slots, and with the reference padded to
            ``max_components`` components of weight zero (``compare`` passes its largest
            ``K`` so that its candidates and rounds share one compiled program); the same
            estimator.

    Returns:
        An :class:`~lcbayes.SMCResult`.
    """
    start, seed = start_engine(structure, seed)
    if particles is not None:
        particles = check_int(particles, "particles", 4)
    runs = check_int(runs, "runs", 2)
    max_runs = check_int(max_runs, "max_runs", 2)
    max_components = check_int(max_components, "max_components", 1)
    restarts = (default_restarts(structure.n_classes or 1) if restarts is None
                else check_int(restarts, "restarts", 1))
    ess_target = check_positive(ess_target, "ess_target")
    if not ess_target < 1:
        raise ArgumentError(f"ess_target must be between 0 and 1, got {ess_target!r}")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    if target_stderr is not None:
        target_stderr = check_positive(target_stderr, "target_stderr")
    data = fit_data(structure, data)
    sweeps = (default_sweeps(data.n_observed_rows) if sweeps is None
              else check_int(sweeps, "sweeps", 1))
    particles = default_particles(data.n_observed_rows) if particles is None else particles
    key = prng_key(seed)
    asked = {"runs": runs, "max_runs": max_runs, "target_stderr": target_stderr,
             "time_limit": time_limit, "restarts": restarts, "max_components": max_components,
             "pad_classes": pad_classes, "rows": data.n_observed_rows,
             "patterns": data.n_patterns}

    def fits(per_run: float) -> bool:
        return time_limit is None or time.perf_counter() - start + per_run <= time_limit

    common: dict[str, Any] = {"particles": particles, "sweeps": sweeps,
                              "ess_target": ess_target, "seed": seed_record(seed)}
    if structure.kind != "latent_class":
        if pad_classes is not None:
            raise ArgumentError("pad_classes applies to latent class models only")
        return _network(structure, data, key, prior, particles=particles, sweeps=sweeps,
                        ess_target=ess_target, runs=runs, max_runs=max_runs,
                        target_stderr=target_stderr, fits=fits, start=start,
                        common=common, asked=asked)
    k = structure.n_classes
    assert k is not None  # a latent class structure has a number of classes
    slots = k if pad_classes is None else check_int(pad_classes, "pad_classes", k)
    tempered = tempered_data(data)
    lc_prior = symmetric_prior(structure, prior, slots, np.asarray(tempered.categories))
    device = TemperedData(on_device(tempered.one_hot), on_device(tempered.counts),
                          on_device(tempered.categories), jax.tree.map(on_device, tempered.rows))
    fitted = _Rounds(structure, data, seed, restarts, prior)

    def one_run(components: int, index: int, made: int) -> tuple[float, int, int, float]:
        optima = fitted.of(index)[:components]
        # one class: the reference with t = 1 is the posterior itself, so one exact step
        # inside compare's padded class slots, every round shares the largest round's program
        size = components if pad_classes is None else padded_count(max_components)
        reference = product_reference(tempered, lc_prior, optima, k, size=size,
                                      smoothing=smoothing_for(data.n_observed_rows),
                                      tail=1.0 if k == 1 else tail_for(data.n_observed_rows))
        end = run_tempered(jax.random.fold_in(key, made), device, lc_prior, reference, k,
                           particles=particles, ess_target=ess_target, sweeps=sweeps,
                           max_steps=MAX_STEPS)
        return (float(end.log_evidence), int(end.steps), len(optima),
                float(end.correction))

    rounds: list[dict[str, Any]] = []
    made = 0
    components = min(FIRST_COMPONENTS, max_components)
    previous: SMCResult | None = None

    def summary(outcome, seconds, stopped) -> SMCResult:
        values, steps, used, corrections = (np.asarray(v)
                                            for v in zip(*outcome, strict=True))
        return SMCResult.from_runs(
            values, run_steps=steps.astype(np.int64), run_seconds=np.asarray(seconds),
            run_components=used.astype(np.int64),
            run_correction=corrections, n_classes=k,
            method="reference", seconds=time.perf_counter() - start,
            settings={**asked, "stopped": stopped, "rounds": list(rounds)}, **common)

    while True:
        def numbered(index: int, c: int = components, offset: int = made
                     ) -> tuple[float, int, int, float]:
            return one_run(c, index, offset + index)

        # a round that another may follow makes `runs` runs; the round that ends the call is
        # then topped up to the target (module docstring)
        capped = 2 * components > max_components
        outcome, seconds, stopped = run_round(
            numbered, runs=runs, max_runs=max_runs if capped else runs,
            target_stderr=target_stderr if capped else None, fits=fits)
        current = summary(outcome, seconds, stopped)
        exhausted = all(len(fitted.of(i)) <= components for i in range(len(outcome)))
        moved = (math.nan if previous is None
                 else current.log_evidence - previous.log_evidence)
        settled = previous is not None and np.isfinite(moved) and abs(moved) <= max(
            STABLE_NATS, 2.0 * math.hypot(np.nan_to_num(current.runs_stderr),
                                          np.nan_to_num(previous.runs_stderr)))
        last = (exhausted or settled or capped
                or not fits(MIN_RUNS * float(np.mean(seconds))))
        if last and not capped and target_stderr is not None:
            outcome, seconds, stopped = run_round(
                numbered, runs=runs, max_runs=max_runs, target_stderr=target_stderr,
                fits=fits, made=outcome, seconds=seconds)
            current = summary(outcome, seconds, stopped)
            if previous is not None:
                moved = current.log_evidence - previous.log_evidence
        made += len(outcome)
        values = current.run_log_evidence
        if last:
            return SMCResult.from_runs(
                values, moved=moved, reference_stable=bool(exhausted or settled),
                run_steps=current.run_steps, run_seconds=current.run_seconds,
                run_components=current.run_components, run_correction=current.run_correction,
                n_classes=k, method="reference", seconds=time.perf_counter() - start,
                settings={**current.settings, "rounds": rounds}, **common)
        rounds.append({"components": components, "runs": len(outcome), "stopped": stopped,
                       "log_evidence": current.log_evidence, "stderr": current.runs_stderr,
                       "seconds": float(np.sum(seconds))})
        previous = current
        components *= 2


def _network(structure: Structure, data: Dataset, key, prior: PriorSpec, *, particles: int,
             sweeps: int, ess_target: float, runs: int, max_runs: int,
             target_stderr: float | None,
             fits: Callable[[float], bool], start: float, common: dict, asked: dict
             ) -> SMCResult:
    """The particle filter over the rows for an HLC tree or a DAG: one round of runs, each
    with its own row order."""
    lam = jnp.asarray(network_prior(structure, prior))
    seed = common["seed"]

    def order(index: int) -> np.random.Generator:    # run index's own row order
        return np.random.default_rng([*np.atleast_1d(seed), index])

    def one_run(index: int) -> tuple[float, int, int, float]:
        network = network_data(structure, data, order(index))
        log_z, steps, _ = run_network_smc(
            jax.random.fold_in(key, index), jax.tree.map(jnp.asarray, network), lam,
            ess_target, TEMPER_ESS, structure=structure, particles=particles,
            sweeps=sweeps, max_moves=MAX_MOVES)
        return float(log_z), int(steps), 0, math.nan

    outcome, seconds, stopped = run_round(one_run, runs=runs, max_runs=max_runs,
                                          target_stderr=target_stderr, fits=fits)
    values, steps, used, corrections = (np.asarray(v) for v in zip(*outcome, strict=True))
    return SMCResult.from_runs(
        values, run_steps=steps.astype(np.int64), run_seconds=np.asarray(seconds),
        run_components=used.astype(np.int64), run_correction=corrections.astype(np.float64),
        n_classes=None, method="rows", seconds=time.perf_counter() - start,
        settings={**asked, "stopped": stopped, "rounds": [], "kind": structure.kind},
        **common)
