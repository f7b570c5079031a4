"""Evidence at scale (issue 29): how well ``lcb.smc``'s two estimates of ``ln p(y | K)`` hold
at 10^3-10^5 rows, measured against exact values, a long-run reference, the VB bound and real
data, and how long they take. Writes ``reports/evidence-at-scale.md``.

Usage::

    python benchmarks/bench_evidence.py                   # every part at full size (hours)
    python benchmarks/bench_evidence.py --quick           # every part shrunk (a few minutes)
    python benchmarks/bench_evidence.py --parts exact coverage    # some parts only
    python benchmarks/bench_evidence.py --report-only     # the report from the saved parts

Every part saves its raw results (each ``lcb.smc`` result's ``to_dict()``, with every run's
estimates) as ``PART.json`` in ``--results`` (default ``benchmarks/results/evidence/``;
``--quick``: its ``quick/`` folder); the report is assembled from the parts saved there, so
parts can be run separately and the report rebuilt without rerunning any. Every number in the
report comes from those files.

Estimators (:func:`lcbayes.smc`): independent runs of a collapsed particle filter over the rows
(the *SMC* estimate, unbiased for ``Z``) and bridge sampling from each run's final particles
(the *bridge* estimate); the *chosen* estimate is ``SMCResult.log_evidence`` (the more precise
where they agree, else the larger). Intervals are ``estimate +/- 1.96 s.e.`` (the s.e. already
carries the Student-t factor of the runs). Full settings: ``lcb.smc``'s defaults (read from its
signature): at least ``runs`` runs, more up to its error target, and rounds with doubled
particles where a round gives no estimate; the timing part makes exactly ``timing_runs``.

``--n-classes`` and ``--timing-data ROWSxITEMS ...`` narrow a run (the device runs used them);
parts run on a GPU are saved in the results' ``gpu/`` folder and reported in their own
section.

Parts (``--parts``; in this order):

1. ``exact``: LC(1) at N = 10^3, 10^4, 10^5, 5 data sets each, against
   :func:`lcbayes.exact_evidence` (closed form at one class): error, s.e., whether
   ``|error| <= 2 s.e.`` (up to float64 summation rounding, ``N eps |ln Z|``) and
   ``s.e. <= 0.3``.
2. ``coverage``: 50 small enumerable problems (LC(2), 4 binary items, 30 rows, parameters drawn
   from the prior per seed): the share of nominal 95% intervals covering the exact evidence,
   for the SMC and the bridge estimate separately (target 90-98%).
3. ``simulated``: 8 binary items, N = 10^4, from 3 classes (weights 0.5/0.3/0.2; item
   probabilities 0.85 in class 1, 0.15 in class 2, 0.85 on the first half and 0.15 on the second
   half of the items in class 3), K = 1..6: both estimates, the VB bound ``F`` (``lcb.vbem``,
   10 restarts) and the gap to it in s.e., ``P(K | y)`` from the chosen estimates, time per
   candidate; Chib's estimator; and references computed by a different method than the chosen
   estimate: Chib's where reliable, and a long run for K = 2..6 (``lcb.smc`` with 512
   particles x 4 runs, another seed) read through the estimator the chosen one is not, with
   the distance in combined s.e. (target: within 2 s.e. + 0.3 nats).
4. ``election``: the 12 candidate ratings of ``../shared/data/election.csv`` (1785 rows, four
   levels, missing values; ``--data``), K = 1..6: both estimates, their agreement, ``F``, time;
   Chib's estimator (``lcb.chib`` at its defaults, independent Gibbs chains) as the second,
   independent estimator; and the old default, AIS (``lcb.ais`` at its defaults, 16 chains x
   4096 temperatures), for contrast (full mode only).
5. ``timing``: seconds per SMC run and per candidate (at the default runs) at N = 10^3, 10^4,
   10^5 rows of 8 binary items and 10^5 rows of 20 binary items (the model of part 3
   extended), K = 1..6, 2 runs each.

Compilation: candidates of one data set share one compiled program (``pad_classes`` = the
largest K, as ``lcb.compare`` does); one untimed warm-up call at K = 1 compiles it first, so the
seconds per candidate are run time (the warm-up's seconds are reported as compile time; the
long-run reference's seconds include its own compilation). The persistent compilation cache
(:mod:`lcbayes.cache`) may make compiling a cache load.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import inspect
import json
import math
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import jax
import numpy as np

import lcbayes as lcb
from lcbayes.comparison.evidence import posterior_probabilities
from lcbayes.params import from_tables
from lcbayes.render import fmt, json_value, md_table, versions, write_text

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "reports" / "evidence-at-scale.md"
RESULTS = REPO / "benchmarks" / "results" / "evidence"
DATA = REPO.parent / "shared" / "data"
PARTS = ("exact", "coverage", "simulated", "election", "timing")
ELECTION_ITEMS = ("MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB", "CARESB",
                  "KNOWB", "LEADB", "DISHONB", "INTELB")
#: The simulated model: class weights, and an item's probability of its second category in
#: class 1 (every item), class 2 (every item) and class 3 (first half of the items; the second
#: half has class 2's).
WEIGHTS = (0.5, 0.3, 0.2)
HIGH, LOW = 0.85, 0.15
TRUE_CLASSES = 3
MODEL_TEXT = (f"class weights {'/'.join(map(str, WEIGHTS))}; each item's second category with "
              f"probability {HIGH} in class 1, {LOW} in class 2, and in class 3 {HIGH} on the "
              f"first half of the items and {LOW} on the second")
#: Targets (module docstring): interval coverage range, largest s.e. at one class, multiples
#: of the s.e. for "within" and "below F".
COVERAGE_RANGE = (0.90, 0.98)
MAX_STDERR = 0.3
#: Nats allowed beyond 2 combined s.e. between the chosen estimate and a reference.
REFERENCE_SLACK = 0.3
WITHIN_SE = 2.0
Z95 = NormalDist().inv_cdf(0.975)
#: ``lcb.smc``'s default particles and runs per candidate (the full settings; the timing part
#: projects per-candidate time at the default runs).
DEFAULT_PARTICLES, DEFAULT_RUNS = (inspect.signature(lcb.smc).parameters[name].default
                                   for name in ("particles", "runs"))


@dataclass(frozen=True)
class Settings:
    """Sizes of every part (module docstring); :data:`FULL` and :data:`QUICK`."""

    mode: str
    particles: int = DEFAULT_PARTICLES
    runs: int = DEFAULT_RUNS
    exact_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    exact_seeds: int = 5
    coverage_seeds: int = 50
    coverage_items: int = 4
    coverage_rows: int = 30
    sim_items: int = 8
    sim_rows: int = 10_000
    classes: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    vb_restarts: int = 10
    ref_classes: tuple[int, ...] = (2, 3, 4, 5, 6)
    ref_particles: int = 512
    ref_runs: int = 4
    election_rows: int | None = None
    election_ais: bool = True
    timing_data: tuple[tuple[int, int], ...] = ((1_000, 8), (10_000, 8), (100_000, 8),
                                               (100_000, 20))
    timing_runs: int = 2


FULL = Settings("full")
#: Quick: the default particles (fewer give the SMC estimate no estimate past 10^3 rows), 4 runs,
#: fewer sizes, seeds, rows and candidates; the first 600 election rows; no AIS.
QUICK = Settings("quick", runs=4, exact_sizes=(1_000, 10_000), exact_seeds=1,
                 coverage_seeds=6, sim_rows=2_000, classes=(1, 2, 3, 4), vb_restarts=3,
                 ref_classes=(2,), ref_particles=256, ref_runs=2, election_rows=600,
                 election_ais=False, timing_data=((1_000, 8), (10_000, 8)))


# ---------------------------------------------------------------------------- data
def derived_seed(seed: int, *keys: int) -> int:
    """A 31-bit seed for one data set or run, from the run's ``--seed`` and its keys."""
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0] >> 1)


def simulated(rows: int, items: int, seed: int) -> lcb.Dataset:
    """``rows`` rows of ``items`` binary items from the 3-class model (:data:`WEIGHTS`)."""
    model = lcb.latent_class(lcb.Dataset.from_codes(np.repeat([[0], [1]], items, axis=1)),
                             TRUE_CLASSES)
    tables = [np.array([[1 - HIGH, HIGH], [1 - LOW, LOW],
                        [1 - HIGH, HIGH] if j < items // 2 else [1 - LOW, LOW]])
              for j in range(items)]
    params = from_tables(model, (np.array([WEIGHTS]), *tables))
    return lcb.simulate(model, params, rows, seed=seed)


def election(data_dir: Path, rows: int | None) -> lcb.Dataset | None:
    """The 12 candidate ratings of ``election.csv`` (the first ``rows`` rows if given), or
    ``None`` where the file is absent."""
    path = data_dir / "election.csv"
    if not path.is_file():
        return None
    data = lcb.Dataset.from_csv(path, columns=ELECTION_ITEMS)
    if rows is None:
        return data
    return lcb.Dataset.from_codes(np.asarray(data.codes)[:rows], columns=data.columns,
                                  labels=data.labels)


# ---------------------------------------------------------------------------- parts
def warm_up(data: lcb.Dataset, particles: int, pad: int, seed: int) -> float:
    """Seconds of one two-run ``lcb.smc`` call at K = 1 that compiles the program shared by the
    candidates ``K <= pad`` of ``data`` (a K = 1 run is one step)."""
    start = time.perf_counter()
    lcb.smc(lcb.latent_class(data, 1), data, particles=particles, runs=2, seed=seed,
            pad_classes=pad)
    return time.perf_counter() - start


def part_exact(s: Settings, seed: int, data_dir: Path) -> dict:
    """Part 1: LC(1) against its closed-form evidence."""
    rows = []
    for n in s.exact_sizes:
        for i in range(s.exact_seeds):
            sd = derived_seed(seed, 1, n, i)
            data = simulated(n, s.sim_items, sd)
            structure = lcb.latent_class(data, 1)
            exact = lcb.exact_evidence(structure, data)
            res = lcb.smc(structure, data, particles=s.particles, runs=s.runs, seed=sd)
            rows.append({"rows": n, "seed": sd, "exact": exact.log_evidence,
                         "result": res.to_dict()})
            print(f"  exact N={n} seed {i}: error SMC "
                  f"{res.smc_log_evidence - exact.log_evidence:.2e}, bridge "
                  f"{res.bridge_log_evidence - exact.log_evidence:.2e}", flush=True)
    return {"cases": rows}


def part_coverage(s: Settings, seed: int, data_dir: Path) -> dict:
    """Part 2: small LC(2) problems with exact evidence."""
    template = lcb.Dataset.from_codes(np.repeat([[0], [1]], s.coverage_items, axis=1))
    model = lcb.latent_class(template, 2)
    rows = []
    for i in range(s.coverage_seeds):
        sd = derived_seed(seed, 2, i)
        data = lcb.simulate(model, lcb.random_params(model, seed=sd), s.coverage_rows, seed=sd)
        structure = lcb.latent_class(data, 2)
        exact = lcb.exact_evidence(structure, data)
        res = lcb.smc(structure, data, particles=s.particles, runs=s.runs, seed=sd)
        rows.append({"seed": sd, "patterns": data.n_patterns, "exact": exact.log_evidence,
                     "result": res.to_dict()})
    print(f"  coverage: {len(rows)} problems", flush=True)
    return {"problem": f"LC(2), {s.coverage_items} binary items, {s.coverage_rows} rows, "
                       "parameters drawn from the Dirichlet(1) prior per seed",
            "cases": rows}


def candidates(data: lcb.Dataset, s: Settings, seed: int, with_vb: bool,
               fixed_runs: bool = False) -> tuple[float, list[dict]]:
    """Compile seconds, then per K of ``s.classes``: the ``lcb.smc`` result and (``with_vb``)
    the VB bound ``F``; ``fixed_runs``: exactly ``s.runs`` runs (else ``lcb.smc`` adds runs
    up to its error target, as by default)."""
    pad = max(s.classes)
    compile_s = warm_up(data, s.particles, pad, seed)
    rows = []
    for k in s.classes:
        structure = lcb.latent_class(data, k)
        res = lcb.smc(structure, data, particles=s.particles, runs=s.runs, seed=seed,
                      pad_classes=pad, **({"target_stderr": None} if fixed_runs else {}))
        row = {"classes": k, "result": res.to_dict()}
        if with_vb:
            vb = lcb.vbem(structure, data, restarts=s.vb_restarts, seed=seed, pad_classes=pad)
            row["elbo"] = vb.elbo
            row["elbo_seconds"] = vb.seconds
        rows.append(row)
        est = estimates(res)
        print(f"  K={k}: SMC {cell(*est['SMC'])}, bridge {cell(*est['bridge'])}, "
              f"{res.seconds:.1f} s", flush=True)
    return compile_s, rows


def add_chib(data: lcb.Dataset, rows: list[dict], seed: int) -> None:
    """Chib's estimate (``lcb.chib`` at its defaults) of every candidate, into its row."""
    for row in rows:
        chib = lcb.chib(lcb.latent_class(data, row["classes"]), data, seed=seed)
        row["chib"] = {"log_evidence": chib.log_evidence, "stderr": chib.stderr,
                       "reliable": chib.reliable, "reason": chib.reason,
                       "seconds": chib.seconds}
        print(f"  Chib K={row['classes']}: {fmt(chib.log_evidence)} ({fmt(chib.stderr)}), "
              f"{'reliable' if chib.reliable else 'flagged'}, {chib.seconds:.1f} s", flush=True)


def part_simulated(s: Settings, seed: int, data_dir: Path) -> dict:
    """Part 3: the simulated data, K = 1..6, Chib's estimator, and the long-run reference."""
    sd = derived_seed(seed, 3)
    data = simulated(s.sim_rows, s.sim_items, sd)
    compile_s, rows = candidates(data, s, sd, with_vb=True)
    add_chib(data, rows, sd)
    references = []
    for k in s.ref_classes:
        res = lcb.smc(lcb.latent_class(data, k), data, particles=s.ref_particles,
                      runs=s.ref_runs, seed=derived_seed(seed, 3, k), pad_classes=max(s.classes))
        references.append({"classes": k, "result": res.to_dict()})
        print(f"  reference K={k}: SMC {fmt(res.smc_log_evidence)}, bridge "
              f"{fmt(res.bridge_log_evidence)}, {res.seconds:.1f} s", flush=True)
    return {"rows": data.n_rows, "patterns": data.n_patterns, "compile_seconds": compile_s,
            "candidates": rows, "references": references}


def part_election(s: Settings, seed: int, data_dir: Path) -> dict:
    """Part 4: election, K = 1..6: ``lcb.smc``, Chib's estimator from independent Gibbs chains
    (``lcb.chib`` at its defaults) as the second estimator, and AIS at its defaults for
    contrast (full mode)."""
    data = election(data_dir, s.election_rows)
    if data is None:
        return {"skipped": f"{data_dir / 'election.csv'} is absent"}
    compile_s, rows = candidates(data, s, seed, with_vb=True)
    add_chib(data, rows, seed)
    if s.election_ais:
        for row in rows:
            ais = lcb.ais(lcb.latent_class(data, row["classes"]), data, seed=seed,
                          pad_classes=max(s.classes))
            row["ais"] = {"log_evidence": ais.log_evidence, "stderr": ais.stderr,
                          "ess": ais.ess, "chains": ais.chains,
                          "temperatures": ais.temperatures, "seconds": ais.seconds}
            print(f"  AIS K={row['classes']}: {fmt(ais.log_evidence)} ({fmt(ais.stderr)}), "
                  f"{ais.seconds:.1f} s", flush=True)
    return {"rows": data.n_rows, "patterns": data.n_patterns,
            "missing": int(sum(data.n_missing.values())),
            "compile_seconds": compile_s, "candidates": rows}


def part_timing(s: Settings, seed: int, data_dir: Path) -> dict:
    """Part 5: seconds per run and per candidate at growing N."""
    sets = []
    timed = dataclasses.replace(s, runs=s.timing_runs)
    for rows, items in s.timing_data:
        sd = derived_seed(seed, 5, rows, items)
        data = simulated(rows, items, sd)
        compile_s, found = candidates(data, timed, sd, with_vb=False, fixed_runs=True)
        sets.append({"rows": rows, "items": items, "patterns": data.n_patterns,
                     "compile_seconds": compile_s, "candidates": found})
    return {"data": sets}


RUNNERS = {"exact": part_exact, "coverage": part_coverage, "simulated": part_simulated,
           "election": part_election, "timing": part_timing}


def machine() -> dict:
    """Cores, CPU model, memory and the load average now."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    memory = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2 ** 30
    device = jax.devices()[0]
    return {"cores": os.cpu_count(), "cpu": model, "memory_gib": memory,
            "device": f"{device.platform}: {device.device_kind}",
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def source_state() -> str:
    """The commit of the working tree, marked when it has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=False).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD")
    return f"{commit} + uncommitted changes" if git("status", "--porcelain") else commit


def run_part(name: str, s: Settings, seed: int, data_dir: Path, results: Path) -> Path:
    """Run one part and save its JSON (settings, machine, timings and results)."""
    print(f"[{name}] ({s.mode})", flush=True)
    before = machine()
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    start = time.perf_counter()
    out = RUNNERS[name](s, seed, data_dir)
    record = {"part": name, "mode": s.mode, "seed": seed, "settings": dataclasses.asdict(s),
              "started": started, "wall_seconds": time.perf_counter() - start, "machine": before,
              "load_average_after": machine()["load_average"], "source": source_state(),
              "versions": versions(), **out}
    path = results / f"{name}.json"
    write_text(path, json.dumps(json_value(record), indent=1))
    print(f"[{name}] {record['wall_seconds']:.0f} s -> {path}", flush=True)
    return path


# ---------------------------------------------------------------------------- reading
def num(value) -> float:
    """A saved number (``None`` for NaN)."""
    return math.nan if value is None else float(value)


def result(row: dict) -> lcb.SMCResult:
    return lcb.SMCResult.from_dict(row["result"])


def within(error: float, se: float, slack: float = 0.0) -> bool:
    """``|error| <= 2 s.e.`` (plus ``slack``), False for a missing estimate."""
    return bool(np.isfinite(error) and np.isfinite(se) and abs(error) <= WITHIN_SE * se + slack)


def distance(a: float, a_se: float, b: float, b_se: float) -> float:
    """``(a - b)`` in combined standard errors (NaN when both are zero)."""
    se = math.hypot(a_se, b_se)
    return (a - b) / se if se > 0 else math.nan


def gap_text(classes: int, gap: tuple[float, float]) -> str:
    """``K=k: -x nats (y s.e.)`` of an estimate's distance above the VB bound."""
    nats, se = gap
    return f"K={classes}: {fmt(nats)} nats ({fmt(nats / se, 1) if se > 0 else '-'} s.e.)"


def listed(values) -> str:
    return ", ".join(map(str, values))


def yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def estimates(res: lcb.SMCResult) -> dict[str, tuple[float, float, str]]:
    """``name -> (value, s.e., reason)`` of the SMC and bridge estimates."""
    return {"SMC": (res.smc_log_evidence, res.smc_stderr, res.smc_reason),
            "bridge": (res.bridge_log_evidence, res.bridge_stderr, res.bridge_reason)}


def cell(value: float, se: float, reason: str) -> str:
    """``value (s.e.)``, or why there is no estimate."""
    return f"none ({reason})" if reason else f"{fmt(value)} ({fmt(se)})"


def rounding(rows: int, exact: float) -> float:
    """Float64 summation rounding of ``rows`` terms adding up to ``exact``: ``N eps |ln Z|``."""
    return rows * float(np.finfo(np.float64).eps) * abs(exact)


def wilson(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson interval of a proportion."""
    if n == 0:
        return math.nan, math.nan
    p, z2 = hits / n, Z95 ** 2
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return centre - half, centre + half


# ---------------------------------------------------------------------------- report sections
# Each section returns (lines, targets); a target is (what, part, figure, verdict).
def section_exact(part: dict) -> tuple[list[str], list[tuple]]:
    head = ["N", "seed", "exact ln Z", "SMC - exact", "SMC s.e.", "bridge - exact",
            "bridge s.e.", "within 2 s.e.", "s.e. <= 0.3", "runs x particles", "s"]
    body, ok_all, worst_error, worst_se = [], True, 0.0, 0.0
    for row in part["cases"]:
        res, exact = result(row), num(row["exact"])
        slack = rounding(row["rows"], exact)
        cells, ok_within, ok_se = [], True, True
        for value, se, reason in estimates(res).values():
            error = value - exact
            cells += [f"none ({reason})", ""] if reason else [f"{error:.2e}", f"{se:.2e}"]
            ok_within &= within(error, se, slack)
            ok_se &= bool(np.isfinite(se) and se <= MAX_STDERR)
            worst_error = max(worst_error, abs(error) if np.isfinite(error) else math.inf)
            worst_se = max(worst_se, se if np.isfinite(se) else math.inf)
        ok_all &= ok_within and ok_se
        body.append([str(row["rows"]), str(row["seed"]), fmt(exact, 4), *cells, yes(ok_within),
                     yes(ok_se), f"{res.runs} x {res.particles}", fmt(res.seconds, 1)])
    sizes = sorted({row["rows"] for row in part["cases"]})
    missing = [n for n in FULL.exact_sizes if n not in sizes]
    lines = [f"LC(1) on {part['settings']['sim_items']} binary items simulated from 3 classes "
             f"({MODEL_TEXT}) against `lcb.exact_evidence` (closed form at one class). At "
             "one class every particle holds the same counts, so both estimators are exact "
             "up to rounding; this part checks that they stay so at 10^5 rows. \"Within 2 "
             "s.e.\" allows float64 summation rounding, N eps |ln Z|. Seconds include "
             "compiling wherever a data set has a new shape.", "",
             *md_table(head, body), ""]
    verdict = _verdict(ok_all, missing, "N")
    figure = (f"{len(part['cases'])} cases at N = {', '.join(map(str, sizes))}: largest "
              f"|error| {worst_error:.1e} nats, largest s.e. {worst_se:.1e}")
    return lines, [("LC(1) at N = 10^3-10^5: |estimate - exact| <= 2 s.e. and s.e. <= 0.3, "
                    "SMC and bridge", "1", figure, verdict)]


def _verdict(ok: bool, missing: list, name: str) -> str:
    if not ok:
        return "**not met**"
    if missing:
        return f"met where run (not run: {name} = {', '.join(map(str, missing))})"
    return "met"


def section_coverage(part: dict) -> tuple[list[str], list[tuple]]:
    cases = part["cases"]
    head = ["estimator", "problems", "estimates", "covered", "coverage", "95% interval",
            "mean error", "RMSE", "mean s.e.", "target 90-98%"]
    body, targets = [], []
    for name in ("SMC", "bridge"):
        errors, ses, refused = [], [], 0
        for row in cases:
            value, se, reason = estimates(result(row))[name]
            if reason:
                refused += 1
                continue
            errors.append(value - num(row["exact"]))
            ses.append(se)
        errors, ses = np.asarray(errors), np.asarray(ses)
        hits = int(np.sum(np.abs(errors) <= Z95 * ses))
        share = hits / errors.size if errors.size else math.nan
        low, high = wilson(hits, errors.size)
        ok = bool(COVERAGE_RANGE[0] <= share <= COVERAGE_RANGE[1])
        body.append([name, str(len(cases)), str(errors.size), str(hits), f"{share:.1%}",
                     f"{low:.0%}-{high:.0%}", fmt(float(np.mean(errors)), 3) if errors.size
                     else "", fmt(float(np.sqrt(np.mean(errors ** 2))), 3) if errors.size
                     else "", fmt(float(np.mean(ses)), 3) if ses.size else "", yes(ok)])
        targets.append((f"coverage of nominal 95% intervals in 90-98% ({name})", "2",
                        f"{share:.1%} ({hits} of {errors.size} estimates; 95% interval "
                        f"{low:.0%}-{high:.0%}; {refused} problems without an estimate)",
                        "met" if ok else "**not met**"))
    lines = [f"{part['problem']}; {len(cases)} problems, each with `lcb.exact_evidence`. "
             "An interval covers when |estimate - exact| <= 1.96 s.e.; problems where an "
             "estimator gave no estimate are left out of its coverage and counted. The 95% "
             "interval of the coverage itself (Wilson) shows what the number of problems can "
             "resolve.", "", *md_table(head, body), ""]
    return lines, targets


def _chosen(res: lcb.SMCResult) -> str:
    if not np.isfinite(res.log_evidence):
        return "none"
    if res.agree:
        return "bridge" if res.log_evidence == res.bridge_log_evidence else "SMC"
    return "SMC" if res.log_evidence == res.smc_log_evidence else "bridge"


def candidate_table(rows: list[dict]) -> tuple[list[str], dict]:
    """The per-K table of parts 3 and 4 and the derived numbers: posterior, gaps to F."""
    results = [result(r) for r in rows]
    chosen = np.array([r.log_evidence for r in results])
    chosen_se = np.array([r.stderr for r in results])
    prob, low, high = posterior_probabilities(chosen, chosen_se)
    head = ["K", "SMC (s.e.)", "bridge (s.e.)", "agree", "chosen", "s.e. <= 0.3", "F (VB)",
            "chosen - F", "in s.e.", "P(K | y) [95%]", "steps", "s per run", "s"]
    body, below = [], []
    for row, res, p, lo, hi in zip(rows, results, prob, low, high, strict=True):
        est = estimates(res)
        gap = res.log_evidence - num(row["elbo"])
        in_se = gap / res.stderr if res.stderr > 0 else math.nan
        if gap < -WITHIN_SE * res.stderr - 1e-6:
            below.append(row["classes"])
        body.append([str(row["classes"]), cell(*est["SMC"]), cell(*est["bridge"]),
                     yes(res.agree), _chosen(res),
                     yes(bool(np.isfinite(res.stderr) and res.stderr <= MAX_STDERR)),
                     fmt(num(row["elbo"])), fmt(gap), fmt(in_se, 1),
                     f"{p:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(p) else "",
                     f"{np.mean(res.run_steps):.0f}", fmt(float(np.mean(res.run_seconds)), 1),
                     fmt(res.seconds, 1)])
    best = int(rows[int(np.nanargmax(prob))]["classes"]) if np.isfinite(prob).any() else None
    gaps = [(row["classes"], (res.log_evidence - num(row["elbo"]), res.stderr))
            for row, res in zip(rows, results, strict=True)]
    return md_table(head, body), {"below": below, "best": best, "prob": prob,
                                  "results": results, "gaps": gaps}


def _settings_line(part: dict, res: lcb.SMCResult) -> str:
    return (f"{part['rows']} rows, {part['patterns']} patterns; `lcb.smc` with {res.particles} "
            f"particles x {part['settings']['runs']} runs, {res.sweeps} sweep(s), ESS target "
            f"{res.ess_target:g}, candidates padded to {max(part['settings']['classes'])} class "
            f"slots (one program, compiled or loaded from the compilation cache in an "
            f"untimed warm-up of {part['compile_seconds']:.0f} s); F from `lcb.vbem` with "
            f"{part['settings']['vb_restarts']} restarts.")


TABLE_NOTE = ("Columns: both estimates with their s.e. (\"none\" says why an estimator gave no "
              "estimate), whether they agree within 2 combined s.e., which one `lcb.smc` "
              "chose, the VB bound F (a lower bound on ln p(y | K)) and the chosen estimate's "
              "distance above it in nats and s.e., P(K | y) from the chosen estimates under a "
              "uniform prior on the K shown (95% range from their s.e.), the mean SMC steps "
              "(resample-move) and seconds per run, and the candidate's seconds.")


def _other_methods(k: int, ours: lcb.SMCResult, chib: dict | None,
                   ref: lcb.SMCResult | None) -> list[tuple[str, float, float]]:
    """``(name, value, s.e.)`` of the estimates of ``ln p(y | K)`` by a method other than the
    one ``lcb.smc`` chose: Chib's where its own check passed, and the long run's estimate by the
    estimator the chosen one is not."""
    found = []
    if chib is not None and chib["reliable"]:
        found.append(("Chib", num(chib["log_evidence"]), num(chib["stderr"])))
    if ref is not None:
        chosen = _chosen(ours)
        other = "SMC" if chosen == "bridge" else "bridge"
        value, se, why = estimates(ref)[other]
        if not why:
            found.append((f"long-run {other}", value, se))
    return found


def reference_check(part: dict, results: list[lcb.SMCResult]) -> tuple[list[str], tuple]:
    """The table of the chosen estimates against references computed by a different method
    (Chib's estimator where reliable; the long run's other estimator), and the target row:
    within 2 combined s.e. + 0.3 nats of every such reference."""
    refs = {row["classes"]: result(row) for row in part["references"]}
    head = ["K", "chosen (method)", "reference", "method", "ref. s.e.", "chosen - ref.",
            "in comb. s.e.", "within 2 s.e. + 0.3", "long run: SMC, bridge (s.e.)", "ref. s"]
    body, failed, without = [], [], []
    for row, ours in zip(part["candidates"], results, strict=True):
        k = row["classes"]
        ref = refs.get(k)
        others = _other_methods(k, ours, row.get("chib"), ref)
        long_run = ("" if ref is None else ", ".join(
            cell(*est) for est in estimates(ref).values()))
        if not others:
            without.append(k)
            body.append([str(k), f"{cell(ours.log_evidence, ours.stderr, '')} ({_chosen(ours)})",
                         "none", "", "", "", "", "", long_run,
                         "" if ref is None else fmt(ref.seconds, 0)])
        for name, value, se in others:
            gap = ours.log_evidence - value
            ok = within(gap, math.hypot(ours.stderr, se), REFERENCE_SLACK)
            if not ok:
                failed.append(k)
            body.append([str(k), f"{cell(ours.log_evidence, ours.stderr, '')} ({_chosen(ours)})",
                         fmt(value), name, fmt(se), fmt(gap),
                         fmt(distance(ours.log_evidence, ours.stderr, value, se), 1), yes(ok),
                         long_run,
                         fmt(ref.seconds, 0) if ref is not None and name.startswith("long")
                         else ""])
    ref0 = next(iter(refs.values()), None)
    lines = ["References computed by a different method than the chosen estimate: Chib's "
             "estimator (independent Gibbs chains) where its own check passes, and a long run "
             + (f"(`lcb.smc` with {ref0.particles} particles x "
                f"{part['settings']['ref_runs']} runs, another seed; its seconds include "
                "compiling) " if ref0 is not None else "")
             + "read through the estimator the chosen one is not (its SMC product where the "
             "bridge was chosen, and the reverse).", "", *md_table(head, body), ""]
    figure = (f"outside at K = {listed(sorted(set(failed)))}" if failed
              else "within at every K with a reference")
    if without:
        figure += f"; no different-method reference at K = {listed(without)}"
    return lines, ("chosen estimate within 2 combined s.e. + 0.3 of a long-run reference "
                   "computed by a different method", "3", figure,
                   "**not met**" if failed or without else "met")


def section_simulated(part: dict) -> tuple[list[str], list[tuple]]:
    table, derived = candidate_table(part["candidates"])
    first = derived["results"][0]
    lines = [f"{part['settings']['sim_items']} binary items simulated from {TRUE_CLASSES} "
             f"classes ({MODEL_TEXT}). {_settings_line(part, first)}",
             "", TABLE_NOTE, "", *table, ""]
    ref_lines, ref_target = reference_check(part, derived["results"])
    # Chib's estimator is one of the references here (two agreeing estimators is election's
    # target, not this part's: over-fitted K have no reliable second estimator)
    chib_lines, _ = chib_check(part["candidates"], derived["results"], "simulated", "3")
    lines += chib_lines + ref_lines
    refused = [row["classes"] for row, res in zip(part["candidates"], derived["results"],
                                                  strict=True)
               if res.smc_reason or res.bridge_reason]
    ks = [row["classes"] for row in part["candidates"]]
    missing_k = [k for k in FULL.classes if k not in ks]
    wide = [row["classes"] for row, res in zip(part["candidates"], derived["results"],
                                               strict=True)
            if not (np.isfinite(res.stderr) and res.stderr <= MAX_STDERR)]
    targets = [
        ("no estimate below the VB bound F by more than 2 s.e. (K = 1..6, N = 10^4)", "3",
         "below at " + ", ".join(gap_text(c, g) for c, g in derived["gaps"]
                                 if c in derived["below"]) if derived["below"] else
         f"none below (K = {ks[0]}..{ks[-1]}, N = {part['rows']})",
         "**not met**" if derived["below"] else _verdict(True, missing_k, "K")),
        ("every K's chosen estimate with s.e. <= 0.3 (N = 10^4)", "3",
         f"s.e. above 0.3 at K = {listed(wide)}" if wide
         else f"largest s.e. {fmt(max(r.stderr for r in derived['results']))}",
         "**not met**" if wide else _verdict(True, missing_k, "K")),
        ref_target,
        (f"P(K | y) highest at the true K = {TRUE_CLASSES}", "3",
         f"highest at K = {derived['best']} (P = {np.nanmax(derived['prob']):.3f})",
         "met" if derived["best"] == TRUE_CLASSES else "**not met**"),
        ("both estimators give an estimate at every K (N = 10^4)", "3",
         f"an estimator gave none at K = {listed(refused)}" if refused
         else "every K has both",
         "**not met**" if refused else _verdict(True, missing_k, "K")),
    ]
    return lines, targets


def chib_check(rows: list[dict], results: list[lcb.SMCResult], part: str = "election",
               number: str = "4") -> tuple[list[str], list[tuple]]:
    """The table of ``lcb.smc``'s chosen estimate against Chib's, and the target row: two
    independent estimators agree within 2 combined s.e., each s.e. <= 0.5."""
    pairs = [(row["classes"], res, row["chib"]) for row, res in zip(rows, results, strict=True)
             if "chib" in row]
    if not pairs:
        return ["Chib's estimator was not run in this part's record.", ""], []
    head = ["K", "chosen (s.e.)", "Chib (s.e.)", "Chib flagged", "chosen - Chib",
            "in comb. s.e.", "agree", "both s.e. <= 0.5", "Chib s"]
    body, failed = [], []
    for k, res, chib in pairs:
        value, se = num(chib["log_evidence"]), num(chib["stderr"])
        gap = res.log_evidence - value
        combined = math.hypot(res.stderr, se)
        agree = within(gap, combined)
        small = res.stderr <= 0.5 and se <= 0.5
        if not (agree and small):
            failed.append(k)
        body.append([str(k), cell(res.log_evidence, res.stderr, "" if math.isfinite(
                         res.log_evidence) else "no estimate"), cell(value, se, ""),
                     "yes: " + chib["reason"] if not chib["reliable"] else "no", fmt(gap),
                     fmt(distance(res.log_evidence, res.stderr, value, se), 1), yes(agree),
                     yes(small),
                     fmt(num(chib["seconds"]), 1)])
    ks = [k for k, _, _ in pairs]
    figure = (f"agree with s.e. <= 0.5 at K = {listed(ks)}" if not failed
              else f"fails at K = {listed(failed)} (of {listed(ks)})")
    flagged = [k for k, _, chib in pairs if not chib["reliable"]]
    if flagged:
        figure += f"; Chib flagged by its own check at K = {listed(flagged)}"
    return (["The second, independent estimator: Chib's (`lcb.chib` at its defaults: Gibbs "
             "chains from random allocations, theta* among the MAP and the draws), against the "
             "chosen `lcb.smc` estimate (\"flagged\": Chib's own reliability check failed, "
             "with its reason):", "", *md_table(head, body), ""],
            [(f"{part}: two independent estimators (chosen `lcb.smc`, Chib) agree within "
              "2 combined s.e., each s.e. <= 0.5, K = 1..6", number, figure,
              "met" if not failed else "**not met**")])


def section_election(part: dict) -> tuple[list[str], list[tuple]]:
    if "skipped" in part:
        return [f"Skipped: {part['skipped']}.", ""], [
            ("election: SMC and bridge agree at every K", "4", part["skipped"], "not run")]
    table, derived = candidate_table(part["candidates"])
    first = derived["results"][0]
    lines = [f"The 12 candidate ratings (four levels), {part['missing']} missing values summed "
             f"out. {_settings_line(part, first)}", "", TABLE_NOTE, "", *table, ""]
    if any("ais" in row for row in part["candidates"]):
        head = ["K", "AIS ln Z", "AIS s.e.", "ESS", "chains x temperatures", "AIS - chosen",
                "AIS s"]
        body = [[str(row["classes"]), fmt(num(row["ais"]["log_evidence"])),
                 fmt(num(row["ais"]["stderr"])), fmt(num(row["ais"]["ess"]), 1),
                 f"{row['ais']['chains']} x {row['ais']['temperatures']}",
                 fmt(num(row["ais"]["log_evidence"]) - res.log_evidence),
                 fmt(num(row["ais"]["seconds"]), 1)]
                for row, res in zip(part["candidates"], derived["results"], strict=True)]
        lines += ["The old default, `lcb.ais` at its defaults, for contrast (candidates padded "
                  "to one program as above; the first candidate's seconds include compiling "
                  "it):", "", *md_table(head, body), ""]
    else:
        lines += ["AIS (the old default) was not run in this mode (`election_ais` off: quick "
                  "mode); the full run includes it.", ""]
    chib_lines, chib_target = chib_check(part["candidates"], derived["results"])
    lines += chib_lines
    results = derived["results"]
    both = [(row["classes"], res) for row, res in zip(part["candidates"], results, strict=True)
            if not res.smc_reason and not res.bridge_reason]
    disagree = [k for k, res in both if not res.agree]
    one = [row["classes"] for row, res in zip(part["candidates"], results, strict=True)
           if res.smc_reason or res.bridge_reason]
    figure = (f"disagree at K = {listed(disagree)}" if disagree
              else "agree wherever both estimate")
    if one:
        figure += f"; an estimate missing at K = {listed(one)}"
    gaps = ", ".join(f"K={k}: {fmt(res.smc_log_evidence - res.bridge_log_evidence)}"
                     for k, res in both)
    ks = [row["classes"] for row in part["candidates"]]
    missing_k = [k for k in FULL.classes if k not in ks]
    ok = not disagree and not one
    below = derived["below"]
    return lines, [*chib_target,
                   ("election (N = 1785, missing values): SMC and bridge both estimate and "
                    "agree within 2 combined s.e. at K = 1..6", "4",
                    f"N = {part['rows']}: {figure} (SMC - bridge: {gaps})",
                    _verdict(ok, missing_k, "K") if ok else "**not met**"),
                   ("election: no estimate below the VB bound F by more than 2 s.e.", "4",
                    f"N = {part['rows']}: " + (
                        "below at " + ", ".join(gap_text(c, g) for c, g in derived["gaps"]
                                                if c in below)
                        if below else f"none below (K = {listed(ks)})"),
                    "**not met**" if below else _verdict(True, missing_k, "K"))]


def section_timing(part: dict) -> tuple[list[str], list[tuple]]:
    head = ["data", "patterns", "K", "steps", "s per run", f"s per candidate ({DEFAULT_RUNS} "
            "runs, projected)", "compile s"]
    body, totals = [], []
    for entry in part["data"]:
        per_candidate = []
        for row in entry["candidates"]:
            res = result(row)
            per_run = float(np.mean(res.run_seconds))
            per_candidate.append(per_run * DEFAULT_RUNS)
            body.append([f"{entry['rows']} x {entry['items']}", str(entry["patterns"]),
                         str(row["classes"]), f"{np.mean(res.run_steps):.0f}", fmt(per_run, 1),
                         fmt(per_run * DEFAULT_RUNS, 0), fmt(entry["compile_seconds"], 0)])
        entry_ks = [row["classes"] for row in entry["candidates"]]
        totals.append(f"{entry['rows']} x {entry['items']} (K = {listed(entry_ks)}): "
                      f"{sum(per_candidate) / 60:.1f} min")
    runs, particles = part["settings"]["timing_runs"], part["settings"]["particles"]
    done = {(e["rows"], e["items"]) for e in part["data"]}
    missing = [f"{r} x {j}" for r, j in FULL.timing_data if (r, j) not in done]
    lines = [f"`lcb.smc` with {particles} particles, {runs} timed runs per candidate after an "
             "untimed warm-up that compiles the data set's program (or loads it from the "
             f"compilation cache: \"compile s\"); \"s per candidate\" is "
             f"{DEFAULT_RUNS} (the default runs) x the mean seconds per run, a projection from "
             f"the {runs} runs. Rows x binary items simulated from part 3's model "
             f"({MODEL_TEXT}).", "", *md_table(head, body), ""]
    figure = "the candidates together, at the default runs: " + "; ".join(totals)
    if missing:
        figure += f" (not run: {', '.join(missing)})"
    return lines, [("seconds per candidate at 10^3-10^5 rows (no numeric target in this "
                    "benchmark's brief)", "5", figure, "reported")]


SECTIONS = {
    "exact": ("1. Exact at one class", section_exact),
    "coverage": ("2. Small enumerable problems: coverage", section_coverage),
    "simulated": ("3. Simulated binary items, K = 1..6", section_simulated),
    "election": ("4. election", section_election),
    "timing": ("5. Timing", section_timing),
}


#: The folder (inside the results folder) of the parts run on a GPU.
DEVICE_FOLDER = "gpu"


def sections(parts: dict[str, dict], title_suffix: str, target_suffix: str
             ) -> tuple[list[str], list[tuple]]:
    """The report's section of every part and its rows of the targets table."""
    body, targets = [], []
    for name, (title, section) in SECTIONS.items():
        if name not in parts and title_suffix:
            continue
        body += [f"## {title}{title_suffix}", ""]
        if name not in parts:
            body += [f"Not run yet: `python benchmarks/bench_evidence.py --parts {name}`.", ""]
            continue
        part = parts[name]
        lines, found = section(part)
        load = part["machine"]["load_average"]
        body += [f"*{part['mode']} mode, seed {part['seed']}, {part['wall_seconds']:.0f} s wall "
                 f"on {part['started']}, load average {load[0]:.1f} before and "
                 f"{part['load_average_after'][0]:.1f} after; source {part['source']}.*", "",
                 *lines]
        targets += [(t, f"{p}{target_suffix}", f, v) for t, p, f, v in found]
    return body, targets


def report(parts: dict[str, dict], results: Path) -> str:
    """The Markdown report of the parts saved in ``results`` (``name -> JSON record``)."""
    body, targets = sections(parts, "", "")
    device_parts = load_parts(results / DEVICE_FOLDER)
    if device_parts:
        device = next(iter(device_parts.values()))["machine"].get("device", "a GPU")
        more_body, more_targets = sections(device_parts, f" (on {device})", " GPU")
        body += [f"# On a GPU ({device})", "",
                 f"The same parts run on a machine lent with one accelerator ({device}), "
                 "saved in `" + shown(results / DEVICE_FOLDER) + "`; JAX ran there on the "
                 "GPU, in 64-bit floats. These are not the 2-core figures the targets name, "
                 "but the accuracy figures hold on any hardware.", "", *more_body]
        targets += more_targets
    first = next(iter(parts.values()), None)
    modes = sorted({p["mode"] for p in parts.values()})
    head = ["#", "target", "our figure", "verdict"]
    lines = ["# Evidence at scale (issue 29)", "",
             "How well `lcb.smc`'s two estimates of ln p(y | K) hold at 10^3-10^5 rows. "
             "Regenerate: `python benchmarks/bench_evidence.py` (full; `--quick` shrinks every "
             "part, `--parts` runs some, `--report-only` rebuilds this file from "
             f"the saved parts; these are in `{shown(results)}`).", ""]
    if "quick" in modes:
        lines += ["**Quick mode**: the parts marked *quick* ran at smoke-test sizes (fewer "
                  "runs, seeds, rows, candidates and reference particles than the targets "
                  "name; each part states its settings); their verdicts say what those sizes "
                  "show, not what the full benchmark will.", ""]
    if first is not None:
        m = first["machine"]
        lines += [f"**Machine**: {m['cores']} cores ({m['cpu']}), "
                  f"{fmt(m['memory_gib'], 0)} GiB memory, shared with other work (each part "
                  "gives its load average); JAX backend "
                  f"{first['versions']['jax_backend']} (parts run on a GPU have their own "
                  "section at the end).", ""]
    lines += ["**Estimators**: `lcb.smc` runs a collapsed particle filter over the rows (the "
              "*SMC* estimate, the log of the mean of the runs' Z) and bridge sampling from each "
              "run's final particles (the *bridge* estimate, the mean of the runs' logs); the "
              "s.e. is from the spread of the independent runs, with the Student-t factor of "
              "their number, and an estimator whose runs spread by more than 1 nat gives no "
              "estimate.", "", "## Targets", "", *md_table(head, [
                  [p, t, f, v] for t, p, f, v in targets]), "",
              *body, "## Versions", ""]
    if first is not None:
        lines += [f"- {k}: {v}" for k, v in first["versions"].items()] + [""]
    return "\n".join(lines)


def shown(path: Path) -> str:
    """``path`` relative to the repository where it is inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def load_parts(results: Path) -> dict[str, dict]:
    """The saved parts in ``results``, in :data:`PARTS` order."""
    return {name: json.loads((results / f"{name}.json").read_text()) for name in PARTS
            if (results / f"{name}.json").is_file()}


def run(s: Settings, parts, seed: int, data_dir: Path, results: Path, out: Path) -> Path:
    """Run ``parts`` with settings ``s``, save each, then write the report of every part saved
    in ``results`` to ``out``."""
    for name in parts:
        run_part(name, s, seed, data_dir, results)
    return write_text(out, report(load_parts(results), results))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every part shrunk (minutes)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing; the report from the saved parts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA, help="folder of election.csv")
    parser.add_argument("--results", type=Path, default=None,
                        help="folder of the parts' JSON (default benchmarks/results/evidence/, "
                             "its quick/ with --quick)")
    parser.add_argument("--out", type=Path, default=REPORT, help="the report's path")
    parser.add_argument("--n-classes", type=int, nargs="+", default=None,
                        help="candidates K of every part run (default 1..6)")
    parser.add_argument("--timing-data", nargs="+", default=None, metavar="ROWSxITEMS",
                        help="the timing part's data sets, e.g. 100000x20")
    args = parser.parse_args(argv)
    results = args.results or (RESULTS / "quick" if args.quick else RESULTS)
    settings = QUICK if args.quick else FULL
    if args.n_classes:
        settings = dataclasses.replace(settings, classes=tuple(args.n_classes))
    if args.timing_data:
        settings = dataclasses.replace(settings, timing_data=tuple(
            tuple(int(v) for v in size.lower().split("x")) for size in args.timing_data))
    path = run(settings, [] if args.report_only else args.parts, args.seed, args.data,
               results, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
