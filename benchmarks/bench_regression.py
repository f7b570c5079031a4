"""Time the one-step latent class regression: election ``~ PARTY``, K = 3, 20 restarts, the 12
ratings with their missing values kept, in a process and on the command line, beside poLCA.

Usage::

    python benchmarks/bench_regression.py            # writes reports/covariates-speed.md
    python benchmarks/bench_regression.py --repeats 5

What is measured (nothing is asserted about time):

* in a process: ``lcb.em(structure, data, covariates=frame[["PARTY"]], restarts=20,
  standard_errors="empirical")``: the first call (tracing and compilation, with this process's
  compilation cache off) and the median of ``--repeats`` identical calls ("steady"), with and
  without the standard errors;
* the command line: ``lcbayes fit election.csv --n-classes 3 --covariates PARTY --columns ...
  --restarts 20 --json`` twice with a fresh ``LCBAYES_CACHE_DIR``: "cold" (empty compilation
  cache) and "warm" (the cache the cold run wrote), wall time including interpreter start-up;
* poLCA 1.6.0.2 (``nrep = 20, maxiter = 5000, tol = 1e-10, na.rm = FALSE``, standard errors
  on): the elapsed seconds that ``benchmarks/oracles/04_polca_timing.R`` recorded on this
  machine class (2 cores), from its JSON; ``--rerun-r`` reruns it when R and poLCA are here
  (the script's paths must be edited to this checkout, see benchmarks/oracles/README.md).

The log-likelihood of every run is printed beside poLCA's, so the times compare the same
optimum.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ELECTION = ROOT / "tests" / "data" / "election.csv"
ORACLE = ROOT / "benchmarks" / "oracles"
REPORT = ROOT / "reports" / "covariates-speed.md"
RATINGS = ["MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG",
           "MORALB", "CARESB", "KNOWB", "LEADB", "DISHONB", "INTELB"]


def in_process(repeats: int) -> dict:
    """First and steady seconds of the fit, with and without standard errors."""
    os.environ["LCBAYES_CACHE_DIR"] = "off"          # no persistent cache: really compile
    import lcbayes as lcb
    frame = pd.read_csv(ELECTION)
    data = lcb.Dataset.from_pandas(frame[RATINGS])
    structure = lcb.latent_class(data, 3)
    out = {}
    for se in (None, "empirical"):
        times, logliks = [], []
        for _ in range(repeats + 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                fit = lcb.em(structure, data, covariates=frame[["PARTY"]], restarts=20, seed=0,
                             standard_errors=se)
                times.append(time.perf_counter() - start)
            logliks.append(fit.loglik)
        out["with SEs" if se else "no SEs"] = {
            "first": times[0], "steady": statistics.median(times[1:]),
            "loglik": logliks[-1], "cells": fit.n_cells}
    return out


def command_line() -> dict:
    """Cold and warm wall seconds of the CLI fit."""
    argv = [sys.executable, "-m", "lcbayes", "fit", str(ELECTION), "--n-classes", "3",
            "--covariates", "PARTY", "--columns", ",".join(RATINGS), "--restarts", "20",
            "--json"]
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "LCBAYES_CACHE_DIR": cache}
        for label in ("cold", "warm", "warm again"):
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            out[label] = {"seconds": time.perf_counter() - start,
                          "loglik": json.loads(done.stdout)["loglik"]}
    return out


def polca(rerun: bool) -> dict:
    """poLCA's recorded (or rerun) seconds."""
    if rerun:
        subprocess.run(["Rscript", str(ORACLE / "04_polca_timing.R")], check=True)
        spec = json.loads(Path("/tmp/oracles/04_polca_timing.json").read_text())
    else:
        spec = json.loads((ORACLE / "04_polca_timing.json").read_text())
    return {"median": spec["median_s"], "all": spec["elapsed_s"],
            "loglik": spec["best_llik"][0]}


def report(fits: dict, cli: dict, r: dict) -> str:
    lines = ["# Latent class regression: speed", "",
             "Election (poLCA's `election`, 1,785 rows, 25 lack PARTY), 12 four-level ratings "
             "with missing values kept, K = 3, membership ~ PARTY, 20 restarts; 2 CPU cores. "
             "Made by `python benchmarks/bench_regression.py`.", "",
             "| run | seconds | log-likelihood |", "|---|---|---|"]
    for label, f in fits.items():
        lines.append(f"| lcbayes in a process, {label}, first call (compiles) | "
                     f"{f['first']:.2f} | {f['loglik']:.6f} |")
        lines.append(f"| lcbayes in a process, {label}, steady | {f['steady']:.2f} | "
                     f"{f['loglik']:.6f} |")
    for label, c in cli.items():
        lines.append(f"| `lcbayes fit ... --covariates PARTY`, {label} cache | "
                     f"{c['seconds']:.2f} | {c['loglik']:.6f} |")
    lines.append(f"| poLCA 1.6.0.2 (`nrep = 20`, `tol = 1e-10`, SEs), median of "
                 f"{len(r['all'])} | {r['median']:.2f} | {r['loglik']:.6f} |")
    cells = next(iter(fits.values()))["cells"]
    lines += ["", f"The fit works on {cells} unique (pattern, PARTY) cells. lcbayes stops a "
              "restart when the log-likelihood changes by less than 1e-8 per row over a "
              "SQUAREM cycle; poLCA at 1e-10 in total over an EM step (its default is 1e-10 "
              "too): both reach the same maximum (the log-likelihoods above agree to 1e-4). "
              "The command line's time includes starting Python and importing JAX (about "
              "1.5 s here).", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rerun-r", action="store_true")
    args = parser.parse_args()
    cli = command_line()
    fits = in_process(args.repeats)
    text = report(fits, cli, polca(args.rerun_r))
    print(text)
    REPORT.write_text(text)
    print(f"wrote {REPORT}")


if __name__ == "__main__":
    main()
