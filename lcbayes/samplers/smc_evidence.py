"""``lcb.smc``: the evidence of a latent class model from independent SMC runs, each checked by
bridge sampling from its final particles (:mod:`lcbayes.samplers.smc`,
:mod:`lcbayes.samplers.bridge`, :mod:`lcbayes.samplers.smc_result`); of an HLC tree or DAG
from the same particle filter alone (:mod:`lcbayes.samplers.smc_network`).

Why this engine (measured in ``benchmarks/bench_evidence.py``, ``reports/evidence-at-scale.md``):
AIS tempers the mixture likelihood, whose tempered posteriors a random walk or a Gibbs kernel
crosses ever more slowly as N grows (ESS 1-3 of 128 chains at 10^4 rows). Adding rows instead
keeps every intermediate target an ordinary posterior, so the exact conjugate Gibbs kernel
mixes within it at any N; integrating the parameters out of the weights (a collapsed particle
filter over the allocations) makes the weights of particles that agree equal, and handles
the empty classes of an over-fitted K exactly; a mode-jumping move
(:mod:`lcbayes.samplers.mode_jump`) carries the particles to modes that a few rows make
dominant and Gibbs sweeps would not reach (without it, one row order of 300 election rows left
every run 10-15 nats low). An earlier version that carried the parameters
(IBIS with data tempering) needed 200-300 steps at 10^4 rows and gave 1-2 nats of spread per
run with 128 particles, biased low by the skew of its weights; the collapsed filter gives
0.1-0.9 nats at the same cost. Bridge sampling with the Rao-Blackwellised,
relabelling-symmetrised importance density is the second estimator, from the same runs: precise
to a few hundredths where K is not larger than the data support, unreliable (and then refused
by its runs' spread) on over-fitted K, whose posterior has many unequal modes. On data whose
single rows can collapse the weights (election: 12 four-level items), the SMC product is
heavy-tailed (runs 50-60 nats low at K = 5, below the VB bound) and bridge sampling, after
rounds with more particles, carries the answer.

Example::

    res = lcb.smc(lcb.latent_class(data, 3), data, seed=0)
    res.log_evidence, res.stderr          # the bridge estimate and its error
    res.smc_log_evidence, res.agree       # the SMC estimate; do they agree?
    lcb.smc(structure, data, time_limit=60)   # no run or round starts past 60 s
    lcb.smc(tree, data)                        # an HLC tree: the SMC estimate alone
"""

from __future__ import annotations

import math
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..engines.run_record import start_engine
from ..errors import ArgumentError
from ..params import PriorSpec, proper_prior_tables
from ..structure import Structure
from ..validation import (
    Seed,
    check_int,
    check_positive,
    fit_data,
    prng_key,
    seed_record,
)
from .bridge import bridge_estimate
from .gibbs import LCPrior
from .particle_filter import TEMPER_ESS
from .smc import SMCData, run_smc, smc_data
from .smc_network import NetworkData, network_data, network_prior, run_network_smc
from .smc_result import MIN_RUNS, SMCResult

__all__ = ["COMPONENT_SWEEPS", "POSTERIOR_ROWS", "POSTERIOR_SWEEPS", "posterior_sweeps",
           "smc", "smc_prior"]

#: Most resample-move steps of one run that move the particles (later ones only resample).
MAX_MOVES = 4096
#: Gibbs sweeps of the final particles whose draws feed bridge sampling: below
#: :data:`POSTERIOR_ROWS` rows, then from it on. More sweeps give more posterior draws: 16
#: instead of 4 cut the spread of the runs' bridge estimates from 1.9 to 0.7 nats at election
#: K = 5 (1785 rows, 256 particles, 6 runs) for 12% more time per run (16 sweeps keeping only
#: every 4th as a draw: 1.2 nats, so the number of draws is what counts); on carcinoma's 118
#: rows, where 4 sweeps give s.e. of 0.04 at most, 16 tripled the time of a run, which is
#: mostly bridge sampling there.
POSTERIOR_SWEEPS = (4, 16)
#: Rows from which the larger number of :data:`POSTERIOR_SWEEPS` applies.
POSTERIOR_ROWS = 1000
#: ``q``'s components are the allocations of this many of the sweeps (evenly spaced): its cost
#: grows with its components times the points, and components from all 16 sweeps gave no
#: smaller spread than from every 4th (0.70 vs 0.66 nats, the runs above) at 16% more time.
COMPONENT_SWEEPS = 4


def smc_prior(structure: Structure, prior: PriorSpec, slots: int, categories: np.ndarray
           ) -> LCPrior:
    """Dirichlet pseudo-counts on ``slots`` class slots (the prior must be the same for every
    class, as the label symmetry of the evidence and of bridge sampling's ``q`` assume)."""
    tables = proper_prior_tables(structure, prior, "smc")
    weights = np.asarray(tables[0][0], dtype=np.float64)
    if not np.allclose(weights, weights[0]) or any(
            not np.allclose(t, t[:1]) for t in tables[1:]):
        raise ArgumentError("smc needs the same prior for every class (label-symmetric): give "
                            "prior='dirichlet', a number, or per-node tables whose class rows "
                            "are equal")
    lam = np.ones((slots, *categories.shape))
    for j, table in enumerate(tables[1:]):
        lam[:, j, :table.shape[1]] = table[0]
    return LCPrior(jnp.full(slots, weights[0]), jnp.asarray(lam))


def posterior_sweeps(rows: int) -> int:
    """Gibbs sweeps of the final particles for bridge sampling on ``rows`` rows
    (:data:`POSTERIOR_SWEEPS`)."""
    return POSTERIOR_SWEEPS[rows >= POSTERIOR_ROWS]


def _one_run(key, data: SMCData, prior: LCPrior, k: int, settings: dict, particles: int
             ) -> tuple[float, float, int]:
    """One SMC run and the bridge estimate from its posterior draws: ``(ln Z_r, ln B_r,
    resample-move steps)``. After the last row, ``settings["posterior_sweeps"]`` Gibbs sweeps of
    every particle: the second half of the particles give the posterior draws bridged with (every
    sweep), the first half ``q``'s allocation draws (:data:`COMPONENT_SWEEPS` of the sweeps)."""
    k_smc, k_bridge = jax.random.split(key)
    log_z, steps, _, kept = run_smc(
        k_smc, data, prior, k, settings["ess_target"], particles=particles,
        sweeps=settings["sweeps"], max_moves=MAX_MOVES, draws=settings["posterior_sweeps"],
        jumps=settings["mode_jumps"])
    half = particles // 2

    def pooled(part, every=1):
        return jax.tree.map(lambda a: a[::every, part].reshape(-1, *a.shape[2:]), kept)

    log_b, _ = bridge_estimate(
        k_bridge, data.one_hot, data.counts, data.categories, prior, k,
        pooled(slice(None, half), settings["posterior_sweeps"] // COMPONENT_SWEEPS),
        pooled(slice(half, None)),
        draws=settings["bridge_draws"] or settings["posterior_sweeps"] * half)
    return float(log_z), float(log_b), int(steps)


def _recheck(current: SMCResult, made: int, runs: int) -> bool:
    """Whether to add runs to a round whose error target is met: its two estimates disagree
    beyond their error bars, so one error bar is too small (a few runs of a heavy-tailed
    estimator can lie close together by chance: carcinoma K = 4, four SMC runs within 0.04
    nats, 0.17 above bridge sampling), and the round has made fewer than twice ``runs``."""
    both = np.isfinite(current.smc_log_evidence) and np.isfinite(current.bridge_log_evidence)
    return both and not current.agree and made < 2 * runs


def smc(structure: Structure, data, *, particles: int = 128, runs: int = 4,
        max_runs: int = 16, target_stderr: float | None = 0.3, max_particles: int = 1024,
        sweeps: int = 1, ess_target: float = 0.9, bridge_draws: int | None = None,
        time_limit: float | None = None, seed: Seed = 0, prior: PriorSpec = "dirichlet",
        pad_classes: int | None = None, mode_jumps: bool = True) -> SMCResult:
    """``ln p(y | K)`` of a latent class model by sequential Monte Carlo over the rows, checked
    by bridge sampling (module docstring; the algorithm in :mod:`lcbayes.samplers.smc`).

    The runs go in rounds. A round makes ``runs`` runs with its particles, then adds runs one
    at a time while the chosen estimate's standard error is above ``target_stderr``, up to
    ``max_runs``. Where a round ends with no estimate (both estimators' runs spread by more
    than :data:`MAX_RUN_SD <lcbayes.samplers.smc_result.MAX_RUN_SD>`: too few particles for
    this model) or still above the target, the next round doubles the particles, up to
    ``max_particles``; the result is the last round's, the earlier ones are listed in
    ``settings["rounds"]``.

    Args:
        structure: a latent class structure (:func:`lcbayes.latent_class`), or an HLC tree
            or DAG (:func:`lcbayes.hlc`, :func:`lcbayes.dag`): those get the SMC estimate
            alone (:mod:`lcbayes.samplers.smc_network`; bridge sampling needs the class
            symmetry of a latent class model).
        data: the data; missing values are summed out, rows with none observed add nothing.
        particles: particles per run in the first round (at least 4; half of the final ones
            build the bridge's importance density, half are bridged with).
        runs: runs of every round (their spread is the error bar, scaled by Student's t for
            so few runs; at least 2).
        max_runs: most runs of a round. A round whose two estimates disagree beyond their
            error bars goes on to twice ``runs`` runs before it stops on the error target.
            Stopping on the error makes the error bar slightly
            optimistic; ``runs`` runs and more keep that small (``benchmarks/
            bench_evidence.py`` measures the intervals' coverage).
        target_stderr: the standard error (nats) that ends a round; ``None``: exactly
            ``runs`` runs with ``particles`` particles (one round).
        max_particles: most particles of a round (rounds double them up to this).
        sweeps: Gibbs sweeps after each resampling.
        ess_target: resample and move when the effective sample size falls below this
            fraction of the particles (between 0 and 1; frequent moves keep the particles
            diverse: 0.9 gave a quarter of the spread of 0.5 at the same cost).
        bridge_draws: draws from the importance density per run (default as many as the
            posterior draws bridged with: :func:`posterior_sweeps` ``x particles / 2``).
        time_limit: seconds; no run starts that would end past them (projected from the
            round's runs so far, or twice the last round's) once two runs of a round are
            made, and no round starts that could not make two; so fewer runs and particles
            may run.
        seed: an integer or a ``jax.random`` key: every run's row order (each run orders
            the rows afresh, so runs that a row order leads into the same minor mode of the
            posterior do not agree by construction) and draws.
        prior: Dirichlet pseudo-counts as everywhere in lcbayes, the same for every class.
        pad_classes: run inside this many class slots (``compare`` passes its largest ``K`` so
            that its candidates share one compiled program); the same estimator.
        mode_jumps: make the mode-jumping move of :mod:`lcbayes.samplers.mode_jump` as the
            rows pass a geometric grid (latent class models; ``False`` only to measure what
            it brings).

    Returns:
        An :class:`~lcbayes.SMCResult`.
    """
    start, seed = start_engine(structure, seed)
    particles = check_int(particles, "particles", 4)
    settings: dict[str, Any]  # checked values of several types
    settings = {"runs": check_int(runs, "runs", 2), "sweeps": check_int(sweeps, "sweeps", 1),
                "max_runs": check_int(max_runs, "max_runs", 2),
                "max_particles": check_int(max_particles, "max_particles", 4),
                "ess_target": check_positive(ess_target, "ess_target"),
                "bridge_draws": None if bridge_draws is None
                else check_int(bridge_draws, "bridge_draws", 2),
                "posterior_sweeps": 0,   # set for a latent class model (bridge sampling)
                "mode_jumps": bool(mode_jumps)}
    if not settings["ess_target"] < 1:
        raise ArgumentError(f"ess_target must be between 0 and 1, got {ess_target!r}")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    if target_stderr is not None:
        target_stderr = check_positive(target_stderr, "target_stderr")
    data = fit_data(structure, data)
    key = prng_key(seed)
    def order(index: int) -> np.random.Generator:    # run index's own row order
        return np.random.default_rng([*np.atleast_1d(seed_record(seed)), index])

    first: SMCData | NetworkData
    sizes: dict[str, int | str]
    if structure.kind == "latent_class":
        k = structure.n_classes
        assert k is not None  # a latent class structure has a number of classes
        slots = k if pad_classes is None else check_int(pad_classes, "pad_classes", k)
        first = smc_data(data, order(0))
        lc_prior = smc_prior(structure, prior, slots, first.categories)
        n_rows = int(first.classes[0].rows.size)
        sizes = {"rows": n_rows, "patterns": int(first.one_hot.shape[0])}
        settings["posterior_sweeps"] = posterior_sweeps(n_rows)
        unavailable = ""

        def one_run(run_key, m, index):
            ordered = first if index == 0 else smc_data(data, order(index))
            return _one_run(run_key, jax.tree.map(jnp.asarray, ordered), lc_prior, k,
                            settings, m)
    else:
        if pad_classes is not None:
            raise ArgumentError("pad_classes applies to latent class models only")
        k = None
        first = network_data(structure, data, order(0))
        lam = jnp.asarray(network_prior(structure, prior))
        sizes = {"rows": int(first.rows.size), "patterns": int(first.classes[0].ends.size),
                 "kind": structure.kind}
        unavailable = (f"bridge sampling needs the class symmetry of a latent class model; "
                       f"not available for a {structure.kind} structure")

        def one_run(run_key, m, index):
            network = first if index == 0 else network_data(structure, data, order(index))
            log_z, steps, _ = run_network_smc(
                run_key, jax.tree.map(jnp.asarray, network), lam, settings["ess_target"],
                TEMPER_ESS, structure=structure, particles=m, sweeps=settings["sweeps"],
                max_moves=MAX_MOVES)
            return float(log_z), math.nan, int(steps)
    rounds: list[dict] = []
    made = 0

    def result(estimates, seconds, m, stopped) -> SMCResult:
        run_smc_values, run_bridge, steps = (np.asarray(v) for v in zip(*estimates,
                                                                        strict=True))
        return SMCResult.from_runs(
            run_smc_values, run_bridge, bridge_unavailable=unavailable,
            run_steps=steps.astype(np.int64),
            run_seconds=np.asarray(seconds), seconds=time.perf_counter() - start,
            n_classes=k, particles=m, sweeps=settings["sweeps"],
            ess_target=settings["ess_target"],
            bridge_draws=settings["bridge_draws"] or settings["posterior_sweeps"] * (m // 2),
            seed=seed_record(seed),
            settings={"runs": settings["runs"], "max_runs": settings["max_runs"],
                      "target_stderr": target_stderr,
                      "max_particles": settings["max_particles"], "time_limit": time_limit,
                      "stopped": stopped, "rounds": rounds, "pad_classes": pad_classes,
                      "posterior_sweeps": settings["posterior_sweeps"],
                      "mode_jumps": settings["mode_jumps"], **sizes})

    def fits(per_run: float) -> bool:
        return time_limit is None or time.perf_counter() - start + per_run <= time_limit

    m, last_per_run = particles, 0.0
    while True:
        estimates: list[tuple[float, float, int]] = []
        seconds: list[float] = []
        stopped = "runs" if target_stderr is None else "max_runs"
        while len(estimates) < max(settings["runs"], settings["max_runs"]):
            if len(estimates) >= settings["runs"]:
                if target_stderr is None:
                    break
                current = result(estimates, seconds, m, stopped)
                if current.stderr <= target_stderr and not _recheck(current, len(estimates),
                                                                    settings["runs"]):
                    stopped = "target_stderr"
                    break
                if np.isnan(current.stderr):   # more runs rarely narrow a wide spread
                    stopped = "no_estimate"
                    break
            projected = float(np.mean(seconds)) if seconds else 2.0 * last_per_run
            if len(estimates) >= MIN_RUNS and not fits(projected):
                stopped = "time_limit"
                break
            t = time.perf_counter()
            estimates.append(one_run(jax.random.fold_in(key, made), m, made))
            seconds.append(time.perf_counter() - t)
            made += 1
        final = result(estimates, seconds, m, stopped)
        last_per_run = float(np.mean(seconds))
        if (stopped not in ("max_runs", "no_estimate") or 2 * m > settings["max_particles"]
                or not fits(MIN_RUNS * 2.0 * last_per_run)):
            return final
        rounds.append({"particles": m, "runs": len(estimates), "stopped": stopped,
                       "log_evidence": final.log_evidence, "stderr": final.stderr,
                       "smc_reason": final.smc_reason, "bridge_reason": final.bridge_reason,
                       "seconds": float(np.sum(seconds))})
        m *= 2
