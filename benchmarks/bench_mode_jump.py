"""The mode-jumping move (:mod:`lcbayes.samplers.mode_jump`): what it does to the SMC product
estimate of ``ln p(y | K)`` on the election data, runs with and without it measured against
Chib's estimate, and what it costs in seconds per run. Writes ``reports/mode-jump.md``.

Usage::

    python benchmarks/bench_mode_jump.py             # full run (about 6 min on 2 cores)
    python benchmarks/bench_mode_jump.py --quick     # smoke test (about a minute): prints only
    python benchmarks/bench_mode_jump.py --quick --out /tmp/mj.md --results /tmp/mj.json

Cases (the 12 candidate ratings of ``tests/data/election.csv``, four levels, missing values
summed out; ``--data``):

(a) the first 300 rows, K = 2: row orders 0..5;
(b) all 1785 rows, K = 2 and K = 3: row orders 0 and 1;
(c) the seconds per run of (b) with and without the move.

Row order ``o`` is drawn by ``numpy.random.default_rng([seed, o])`` (``--seed``, default 0);
every order gets 4 runs (``jax.random.PRNGKey(0..3)``) without and with the move. A run is one
call of :func:`lcbayes.samplers.smc.run_smc`, the particle filter of :func:`lcbayes.smc`, with
``lcb.smc``'s defaults (read from its signature): 128 particles, one Gibbs sweep per
resampling, resampling below an effective sample size of 0.9 M; its first output is the run's
SMC product estimate ``ln Z_r``, the quantity measured here (bridge sampling, ``lcb.smc``'s
other estimate, is not run). The reference is Chib's estimate (``lcb.chib(..., seed=seed)``
at its defaults: independent Gibbs chains), with its standard error and its own reliability
check. Per configuration (case, order, move) the runs' errors ``ln Z_r - ln Z_Chib`` (min /
mean / max), how many are more than :data:`LOW` nats low, the 4-run estimate ``ln mean_r Z_r``
(what ``lcb.smc`` pools) minus Chib's, and the seconds per run.

Timing: every row order of a data set gives arrays of the same shapes, so each (case, move)
is one compiled program; one untimed warm-up call (key ``PRNGKey(runs)``, first order) compiles
it before the timed runs (its seconds, compile and one run, are reported apart). The machine's
2 cores may be shared: the load average before and after is reported.

``--quick``: order 2 of (a) only, 2 runs each; it prints the report and writes nothing unless
``--out`` / ``--results`` are given. The full run writes the report to ``--out`` and the raw
results (every run's ``ln Z_r``, error, seconds and resample-move steps) to ``--results``
(default ``benchmarks/results/mode_jump.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from bench_evidence import source_state  # a script beside this one
from scipy.special import logsumexp

import lcbayes as lcb
from lcbayes.render import fmt, json_value, md_table, versions, write_text
from lcbayes.samplers.smc import run_smc, smc_data
from lcbayes.samplers.smc_evidence import MAX_MOVES, smc_prior
from lcbayes.validation import fit_data

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "reports" / "mode-jump.md"
RESULTS = REPO / "benchmarks" / "results" / "mode_jump.json"
DATA = REPO / "tests" / "data" / "election.csv"
ITEMS = ("MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB", "CARESB",
         "KNOWB", "LEADB", "DISHONB", "INTELB")
#: A run this many nats or more below Chib's estimate counts as a failure (stuck in a mode).
LOW = 5.0
#: Nats of spread among one order's runs (with the move) beyond which the Reading calls the
#: product imprecise.
PRECISE = 2.0
#: ``lcb.smc``'s defaults for the particle filter (module docstring).
PARTICLES, SWEEPS, ESS_TARGET = (inspect.signature(lcb.smc).parameters[name].default
                                 for name in ("particles", "sweeps", "ess_target"))


@dataclass(frozen=True)
class Case:
    """One data set and K: the first ``rows`` rows (``None``: all), the row orders and the runs
    per order and move."""

    name: str
    rows: int | None
    classes: int
    orders: tuple[int, ...]
    runs: int

    @property
    def label(self) -> str:
        return f"({self.name}) {'all' if self.rows is None else self.rows} rows, K = {self.classes}"


FULL = (Case("a", 300, 2, (0, 1, 2, 3, 4, 5), 4), Case("b", None, 2, (0, 1), 4),
        Case("b", None, 3, (0, 1), 4))
QUICK = (Case("a", 300, 2, (2,), 2),)


# ---------------------------------------------------------------------------- running
def election(path: Path, rows: int | None) -> lcb.Dataset:
    """The 12 candidate ratings of ``path`` (the first ``rows`` rows if given)."""
    data = lcb.Dataset.from_csv(path, columns=list(ITEMS))
    if rows is None:
        return data
    return lcb.Dataset.from_codes(np.asarray(data.codes)[:rows], columns=data.columns,
                                  labels=data.labels)


def one_run(key: int, data, prior, k: int, jumps: bool) -> tuple[float, int, float]:
    """One SMC run from ``PRNGKey(key)``: ``(ln Z_r, resample-move steps, seconds)``."""
    start = time.perf_counter()
    log_z, steps, _, _ = jax.block_until_ready(run_smc(
        jax.random.PRNGKey(key), data, prior, k, ESS_TARGET, particles=PARTICLES,
        sweeps=SWEEPS, max_moves=MAX_MOVES, draws=1, jumps=jumps))
    return float(log_z), int(steps), time.perf_counter() - start


def run_case(case: Case, path: Path, seed: int) -> dict:
    """Chib's estimate, then every order's runs without and with the move (module
    docstring)."""
    dataset = election(path, case.rows)
    structure = lcb.latent_class(dataset, case.classes)
    chib = lcb.chib(structure, dataset, seed=seed)
    print(f"{case.label}: Chib {chib.log_evidence:.2f} (s.e. {chib.stderr:.3f}, "
          f"{'reliable' if chib.reliable else 'flagged: ' + chib.reason}), "
          f"{chib.seconds:.1f} s", flush=True)
    data = fit_data(structure, dataset)
    ordered = {}
    for order in case.orders:
        sd = smc_data(data, np.random.default_rng([seed, order]))
        ordered[order] = (jax.tree.map(jnp.asarray, sd),
                          smc_prior(structure, "dirichlet", case.classes, sd.categories))
    configs, warmups = [], {}
    for jumps in (False, True):
        warmups[move_text(jumps)] = one_run(case.runs, *ordered[case.orders[0]], case.classes,
                                      jumps)[2]
        for order in case.orders:
            runs = [one_run(key, *ordered[order], case.classes, jumps)
                    for key in range(case.runs)]
            log_z = [r[0] for r in runs]
            config = {"order": order, "jumps": jumps, "log_z": log_z,
                      "errors": [v - chib.log_evidence for v in log_z],
                      "steps": [r[1] for r in runs], "seconds": [r[2] for r in runs]}
            configs.append(config)
            print(f"  order {order}, {'move   ' if jumps else 'no move'}: errors "
                  f"{np.round(config['errors'], 2)}, {low_count(config)} > {LOW:g} nats low, "
                  f"{np.mean(config['seconds']):.2f} s per run", flush=True)
    return {"name": case.name, "all_rows": case.rows is None, "rows": dataset.n_rows,
            "patterns": dataset.n_patterns,
            "classes": case.classes, "orders": list(case.orders), "runs": case.runs,
            "chib": {"log_evidence": chib.log_evidence, "stderr": chib.stderr,
                     "reliable": chib.reliable, "reason": chib.reason,
                     "seconds": chib.seconds},
            "warmup_seconds": warmups, "configs": configs}


def machine() -> dict:
    """Cores, JAX's platform and the load average now."""
    return {"cores": os.cpu_count(), "device": f"JAX on {jax.devices()[0].platform}",
            "load_average": list(os.getloadavg())}


def run(cases: tuple[Case, ...], path: Path, seed: int, command: str, mode: str) -> dict:
    """Every case, with the command, machine, source and timings of the whole run."""
    before = machine()
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    start = time.perf_counter()
    results = [run_case(case, path, seed) for case in cases]
    return {"command": command, "mode": mode, "seed": seed, "started": started,
            "wall_seconds": time.perf_counter() - start, "machine": before,
            "load_average_after": machine()["load_average"], "source": source_state(),
            "versions": versions(),
            "settings": {"particles": PARTICLES, "sweeps": SWEEPS, "ess_target": ESS_TARGET,
                         "max_moves": MAX_MOVES, "low": LOW},
            "cases": results}


# ---------------------------------------------------------------------------- report
def low_count(config: dict) -> int:
    """Runs more than :data:`LOW` nats below Chib's estimate."""
    return sum(e < -LOW for e in config["errors"])


def pooled_error(config: dict, chib: float) -> float:
    """``ln mean_r Z_r`` minus Chib's estimate (the runs pooled as ``lcb.smc`` pools them)."""
    return float(logsumexp(config["log_z"]) - math.log(len(config["log_z"])) - chib)


def case_label(case: dict) -> str:
    return f"({case['name']}) {case['rows']} rows, K = {case['classes']}"


def move_text(jumps: bool) -> str:
    return "with" if jumps else "without"


def summary(case: dict, jumps: bool) -> dict:
    """A case's runs with or without the move, over all its orders."""
    configs = [c for c in case["configs"] if c["jumps"] == jumps]
    errors = np.concatenate([c["errors"] for c in configs])
    return {"runs": errors.size, "low": sum(low_count(c) for c in configs),
            "min": float(errors.min()), "mean": float(errors.mean()),
            "max": float(errors.max()),
            "spread": max(max(c["errors"]) - min(c["errors"]) for c in configs),
            "pooled": [pooled_error(c, case["chib"]["log_evidence"]) for c in configs],
            "seconds": float(np.mean(np.concatenate([c["seconds"] for c in configs])))}


def chib_table(cases: list[dict]) -> list[str]:
    head = ["case", "rows", "patterns", "K", "Chib ln Z", "s.e.", "reliable", "s"]
    body = [[case_label(c), str(c["rows"]), str(c["patterns"]), str(c["classes"]),
             fmt(c["chib"]["log_evidence"]), fmt(c["chib"]["stderr"], 3),
             "yes" if c["chib"]["reliable"] else f"**no**: {c['chib']['reason']}",
             fmt(c["chib"]["seconds"], 1)] for c in cases]
    return md_table(head, body)


def config_table(case: dict) -> list[str]:
    """One row per order and move: every run's error, min / mean / max, failures, the pooled
    estimate's error and the seconds per run."""
    head = ["order", "move", "runs' errors", "min", "mean", "max", f"> {LOW:g} low",
            "pooled - Chib", "s per run"]
    chib = case["chib"]["log_evidence"]
    body = [[str(c["order"]), move_text(c["jumps"]), ", ".join(fmt(e) for e in c["errors"]),
             fmt(min(c["errors"])), fmt(float(np.mean(c["errors"]))), fmt(max(c["errors"])),
             f"{low_count(c)} / {len(c['errors'])}", fmt(pooled_error(c, chib)),
             fmt(float(np.mean(c["seconds"])), 2)]
            for c in sorted(case["configs"], key=lambda c: (c["order"], c["jumps"]))]
    return md_table(head, body)


def summary_table(cases: list[dict]) -> list[str]:
    head = ["case", "move", "runs", f"> {LOW:g} low", "min", "mean", "max",
            "widest spread in one order", "pooled - Chib (per order)", "s per run"]
    body = []
    for case in cases:
        for jumps in (False, True):
            s = summary(case, jumps)
            body.append([case_label(case), move_text(jumps), str(s["runs"]), str(s["low"]),
                         fmt(s["min"]), fmt(s["mean"]), fmt(s["max"]), fmt(s["spread"]),
                         ", ".join(fmt(p) for p in s["pooled"]), fmt(s["seconds"], 2)])
    return md_table(head, body)


def timing_table(cases: list[dict]) -> list[str]:
    head = ["case", "s per run without", "s per run with", "ratio", "warm-up s without",
            "warm-up s with"]
    body = []
    for case in cases:
        without, with_ = summary(case, False)["seconds"], summary(case, True)["seconds"]
        body.append([case_label(case), fmt(without, 2), fmt(with_, 2), fmt(with_ / without),
                     fmt(case["warmup_seconds"]["without"], 1),
                     fmt(case["warmup_seconds"]["with"], 1)])
    return md_table(head, body)


def verdict(off: dict, on: dict) -> str:
    """What the move did to the failures (runs more than :data:`LOW` nats low)."""
    if off["low"] == 0 and on["low"] == 0:
        return f"no run fell more than {LOW:g} nats low either way"
    if on["low"] == 0:
        return "the move removed every failure"
    if on["low"] < off["low"]:
        return f"the move removed {off['low'] - on['low']} of the {off['low']} failures"
    if on["low"] == off["low"]:
        return "the move did not reduce the failures"
    return "the move gave more failures, not fewer"


def reading(cases: list[dict]) -> list[str]:
    """The Reading paragraph: every figure from ``cases``."""
    sentences = []
    for case in cases:
        off, on = summary(case, False), summary(case, True)
        pooled = (f"{fmt(min(on['pooled']))} .. {fmt(max(on['pooled']))}"
                  if len(on["pooled"]) > 1 else fmt(on["pooled"][0]))
        sentences.append(
            f"{case_label(case)}: runs more than {LOW:g} nats low {off['low']} of "
            f"{off['runs']} without the move (errors {fmt(off['min'])} .. {fmt(off['max'])}, "
            f"mean {fmt(off['mean'])}), {on['low']} of {on['runs']} with it "
            f"({fmt(on['min'])} .. {fmt(on['max'])}, mean {fmt(on['mean'])}): "
            f"{verdict(off, on)}"
            + ("; every run with the move is below Chib's estimate" if on["max"] < 0 else "")
            + f"; with the move the pooled {case['runs']}-run estimates are {pooled} nats from "
            f"Chib's and one order's runs spread by up to {fmt(on['spread'])} nats.")
    full = [c for c in cases if c["all_rows"]]
    if full:
        ratios = ", ".join(f"{summary(c, True)['seconds'] / summary(c, False)['seconds']:.2f} "
                           f"at K = {c['classes']}" for c in full)
        sentences.append(f"On all rows the seconds per run with the move over those without "
                         f"are {ratios} (noisy: shared cores).")
        worst = max(summary(c, True)["spread"] for c in full)
        stuck = sum(summary(c, True)["low"] for c in full)
        if worst > PRECISE or stuck:
            sentences.append(
                "On the full election data the move does not make the product precise: with "
                f"it one order's runs spread by up to {fmt(worst)} nats"
                + (f" and {stuck} of {sum(summary(c, True)['runs'] for c in full)} runs "
                   f"still fell more than {LOW:g} nats low" if stuck else "")
                + "; bridge sampling, `lcb.smc`'s other estimate (not run here; see "
                "`reports/evidence-at-scale.md`), is the precise one on these data.")
    sentences.append("(The product is unbiased for Z, not for ln Z: a run that finds a mode "
                     "the others miss can land above Chib's estimate, and the pooled estimate "
                     "follows the highest runs.)")
    return [" ".join(sentences)]


def report(record: dict) -> str:
    """The Markdown report of a run's ``record``."""
    cases = record["cases"]
    m = record["machine"]
    s = record["settings"]
    full = [c for c in cases if c["all_rows"]]
    lines = ["# The mode-jumping move of the SMC product estimate", "",
             "What `lcbayes/samplers/mode_jump.py`'s move does to the SMC product estimate of "
             "ln p(y | K) on the 12 candidate ratings of the election data, each run against "
             "Chib's estimate, and what it costs per run (`benchmarks/bench_mode_jump.py`, its "
             "docstring has the details).", "",
             f"**Run**: `{record['command']}` ({record['mode']} mode, seed {record['seed']}), "
             f"started {record['started']}, {record['wall_seconds'] / 60:.1f} min wall; "
             f"{m['cores']} cores ({m['device']}), load average "
             f"{m['load_average'][0]:.1f} before and {record['load_average_after'][0]:.1f} "
             f"after (the cores are shared, so the seconds are noisy); lcbayes "
             f"{record['source']}.", "",
             f"**Runs**: `run_smc` with {s['particles']} particles, {s['sweeps']} Gibbs "
             f"sweep(s) per resampling, resampling below ESS {s['ess_target']} M (`lcb.smc`'s "
             "defaults); row order o from `numpy.random.default_rng([seed, o])`, runs from "
             "`jax.random.PRNGKey(0..runs-1)`; the same orders and keys without and with the "
             f"move. A run's error is its ln Z minus Chib's; \"> {s['low']:g} low\": runs more "
             f"than {s['low']:g} nats below; \"pooled\": ln of the mean of the runs' Z, as "
             "`lcb.smc` pools them.", "",
             "## Reading", "", *reading(cases), "",
             "## Chib's reference", "",
             "`lcb.chib` at its defaults (independent Gibbs chains), seed "
             f"{record['seed']}:", "", *chib_table(cases), "",
             "## Summary", "",
             "Each case's runs over all its row orders:", "", *summary_table(cases), ""]
    for case in cases:
        lines += [f"## {case_label(case)}", "",
                  f"Row orders: {', '.join(map(str, case['orders']))}; {case['runs']} runs "
                  "per order and move:", "", *config_table(case), ""]
    if full:
        lines += ["## (c) Seconds per run on all rows", "",
                  "Mean over the timed runs of every order; compile excluded: one untimed "
                  "warm-up call per case and move compiled the program first (its seconds, "
                  "compile plus one run, are the warm-up columns; the persistent compilation "
                  "cache, `lcbayes/cache.py`, can make compiling a cache load).", "",
                  *timing_table(full),
                  ""]
    lines += ["## Versions", "", *[f"- {k}: {v}" for k, v in record["versions"].items()], ""]
    return "\n".join(lines)


def shown(path: Path) -> str:
    """``path`` relative to the repository where it is inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="order 2 of (a), 2 runs; prints only unless --out/--results")
    parser.add_argument("--seed", type=int, default=0, help="row orders and Chib's seed")
    parser.add_argument("--data", type=Path, default=DATA, help="election.csv")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"the report's path (default {shown(REPORT)}; --quick: none)")
    parser.add_argument("--results", type=Path, default=None,
                        help=f"the raw results' JSON (default {shown(RESULTS)}; --quick: none)")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "benchmarks/bench_mode_jump.py", *argv])
    record = run(QUICK if args.quick else FULL, args.data, args.seed, command,
                 "quick" if args.quick else "full")
    print(f"wall {record['wall_seconds']:.0f} s", flush=True)
    text = report(record)
    out = args.out or (None if args.quick else REPORT)
    results = args.results or (None if args.quick else RESULTS)
    if results is not None:
        print(f"wrote {write_text(results, json.dumps(json_value(record), indent=1))}")
    if out is not None:
        print(f"wrote {write_text(out, text)}")
    else:
        print(text)


if __name__ == "__main__":
    main()
