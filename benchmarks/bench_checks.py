"""Posterior predictive checks and PSIS-LOO (issue 48): accuracy against exact leave-one-out,
agreement with ArviZ, and speed.

Usage::

    python benchmarks/bench_checks.py                  # prints the figures
    python benchmarks/bench_checks.py --write reports/model-checks.md
    python benchmarks/make_reports.py              # with the other reports (--out reports)

Parts:

* **LOO against exact leave-one-out** on carcinoma (20 distinct patterns), K = 1..4: PSIS-LOO
  of Gibbs draws (4 chains x 1000) against exact LOO by refitting the posterior once per
  distinct pattern with one of its rows removed (``lcb.loo(..., refit="all")``), the gap beside
  twice the combined Monte Carlo error; and ``lcb.loo`` on patterns against ``az.loo`` on the
  rows (the same draws).
* **The checks' answers**: carcinoma's G^2 ppp at K = 1..4 (the acceptance: below 0.001 at one
  class, above 0.05 at three).
* **Speed** (warm: the compilation cache filled by a first run, which is also timed): the
  command ``lcbayes check carcinoma.csv --n-classes 3`` and ``lcbayes compare carcinoma.csv
  --n-classes 1-5 --methods bic,loo`` as whole processes, and election K = 3 (12 ratings, 1785
  rows) Gibbs + LOO + PPC in one process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import lcbayes as lcb

REPO = Path(__file__).resolve().parents[1]
ELECTION = REPO / "tests" / "data" / "election.csv"
RATINGS = ["MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB", "CARESB",
           "KNOWB", "LEADB", "DISHONB", "INTELB"]
TARGETS = {"check": 10.0, "compare": 10.0, "election": 60.0}


def loo_accuracy(seed: int) -> list[dict]:
    import arviz as az
    data = lcb.datasets.load("carcinoma")
    rows = []
    for k in range(1, 5):
        draws = lcb.gibbs(lcb.latent_class(data, k), data, seed=seed)
        psis = lcb.loo(draws, data, refit="none")
        start = time.perf_counter()
        exact = lcb.loo(draws, data, refit="all", seed=seed)
        seconds = time.perf_counter() - start
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arviz = az.loo(draws.idata)
        rows.append({"K": k, "psis": psis.elpd_loo, "exact": exact.elpd_loo,
                     "gap": psis.elpd_loo - exact.elpd_loo,
                     "two_mcse": 2 * float(np.hypot(psis.mcse, exact.mcse)),
                     "max_k": float(psis.pareto_k.max()),
                     "arviz_diff": abs(psis.elpd_loo - arviz.elpd_loo),
                     "refit_seconds": seconds})
    return rows


def check_answers(seed: int) -> list[tuple[int, float, int]]:
    data = lcb.datasets.load("carcinoma")
    out = []
    for k in range(1, 5):
        draws = lcb.gibbs(lcb.latent_class(data, k), data, seed=seed)
        check = lcb.posterior_predictive_check(draws, data, seed=seed)
        out.append((k, check.g2_ppp, len(check.misfitting_pairs())))
    return out


def _command(*argv: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lcbayes.cli", *argv], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def speed(seed: int) -> dict[str, tuple[float, float]]:
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        csv = Path(folder) / "carcinoma.csv"
        lcb.datasets.write_csv("carcinoma", csv)
        check = ("check", str(csv), "--n-classes", "3", "--seed", str(seed))
        out["check"] = (_command(*check), _command(*check))
        compare = ("compare", str(csv), "--n-classes", "1-5", "--methods", "bic,loo",
                   "--seed", str(seed))
        out["compare"] = (_command(*compare), _command(*compare))
    data = lcb.Dataset.from_csv(ELECTION, columns=RATINGS)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        draws = lcb.gibbs(lcb.latent_class(data, 3), data, seed=seed)
        lcb.loo(draws, data, seed=seed)
        lcb.posterior_predictive_check(draws, data, seed=seed)
        times.append(time.perf_counter() - start)
    out["election"] = (times[0], times[1])
    return out


def report(accuracy, answers, timings) -> str:
    lines = ["# Posterior predictive checks and PSIS-LOO", "",
             "Written by `python benchmarks/bench_checks.py --write reports/model-checks.md` "
             "(2 cores; seed 0).", "",
             "## PSIS-LOO against exact leave-one-out (carcinoma, 4 x 1000 Gibbs draws)", "",
             "Exact LOO refits the posterior once per distinct pattern with one of its rows "
             "removed. Acceptance: the gap within 2 Monte Carlo s.e. and 0.5.", "",
             "| K | PSIS elpd_loo | exact | gap | 2 MC s.e. | max Pareto k | vs az.loo | "
             "refits (s) |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in accuracy:
        lines.append(f"| {r['K']} | {r['psis']:.2f} | {r['exact']:.2f} | {r['gap']:+.3f} | "
                     f"{r['two_mcse']:.3f} | {r['max_k']:.2f} | {r['arviz_diff']:.1e} | "
                     f"{r['refit_seconds']:.1f} |")
    lines += ["", "## Carcinoma's pattern table (G^2 posterior predictive p)", "",
              "Acceptance: below 0.001 at one class, above 0.05 at three.", "",
              "| K | G^2 ppp | pairs with ppp < 0.05 |", "|---:|---:|---:|"]
    lines += [f"| {k} | {p:.3f} | {n} |" for k, p, n in answers]
    lines += ["", "## Speed (seconds; first run, then warm)", "",
              "| run | first | warm | target (warm) |", "|---|---:|---:|---:|"]
    names = {"check": "`lcbayes check carcinoma.csv --n-classes 3` (process)",
             "compare": "`lcbayes compare carcinoma.csv --n-classes 1-5 --methods bic,loo` "
                        "(process)",
             "election": "election K = 3: Gibbs + LOO + PPC (in process)"}
    for key, (first, warm) in timings.items():
        lines.append(f"| {names[key]} | {first:.1f} | {warm:.1f} | {TARGETS[key]:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", help="write the report here (Markdown)")
    parser.add_argument("--out", help="write model-checks.md into this folder")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    text = report(loo_accuracy(args.seed), check_answers(args.seed), speed(args.seed))
    print(text)
    for path in filter(None, [args.write, args.out and Path(args.out) / "model-checks.md"]):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
