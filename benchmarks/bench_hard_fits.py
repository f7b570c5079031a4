"""The fits that used to miss, stall or print nonsense (issue 45), measured. Writes
``reports/hard-fits.md``.

Usage::

    python benchmarks/bench_hard_fits.py --write reports/hard-fits.md

Part 1, wide data: 200 rows x 300 binary items simulated from two classes
(``numpy.random.default_rng(1)``; item probabilities 0.7 / 0.3), ``lcbayes fit FILE
--n-classes 2`` as a whole process, run twice (the second warm: the compilation cache
filled), with its peak memory (``ru_maxrss`` of the child); beside it the EM seconds the fit
prints, and the longest number in its output (significant digits).

Part 2, gss08 with no measurement invariance (``tests/data/gss08.csv``; items ``DEFECT HLTH
RAPE POOR SINGLE NOMORE``, group ``DEGREE``, K = 3): ``lcb.em(..., group="DEGREE",
invariance="none")`` with the default restarts and with 300 restarts, seeds 0..4, in one
process after one warm-up call of each; the log-likelihood against glca 1.4.2's maximum
-650.2821 and the seconds of each call.

Part 3, scikit-learn's ``check_estimator(LatentClassModel(restarts=2))`` with the checks
that do not apply (``lcbayes.estimator.EXPECTED_FAILED_CHECKS``): passed, expected to fail,
skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
GLCA_NONE = -650.2821
ITEMS = ["DEFECT", "HLTH", "RAPE", "POOR", "SINGLE", "NOMORE"]
LEVELS = ["<= HS", "HIGH SCHOOL", "COLLEGE", "GRADUATE"]


def wide(folder: Path) -> dict:
    rng = np.random.default_rng(1)
    classes = rng.integers(0, 2, 200)
    codes = (rng.random((200, 300)) < np.where(classes[:, None] == 1, 0.7, 0.3)).astype(int)
    path = folder / "wide.csv"
    pd.DataFrame(codes + 1, columns=[f"q{j}" for j in range(300)]).to_csv(path, index=False)
    runs = []
    for _ in range(2):
        start = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen([sys.executable, "-m", "lcbayes", "fit", str(path),
                                     "--n-classes", "2"], stdout=out, stderr=subprocess.DEVNULL,
                                    text=True)
            _, status, usage = os.wait4(proc.pid, 0)   # this child's own peak memory
            seconds = time.perf_counter() - start
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit("lcbayes fit failed on the wide data")
            out.seek(0)
            stdout = out.read()
        em = float(re.search(r"^EM .*; ([\d.]+) s$", stdout, re.MULTILINE).group(1))
        digits = max(len(n.replace(".", "").lstrip("0"))
                     for n in re.findall(r"\d[\d.]*", stdout))
        runs.append({"seconds": seconds, "em_seconds": em, "peak_mb": usage.ru_maxrss / 1024,
                     "digits": digits})
    return {"first": runs[0], "warm": runs[1]}


def groups() -> list[dict]:
    import lcbayes as lcb

    frame = pd.read_csv(ROOT / "tests" / "data" / "gss08.csv")
    frame["DEGREE"] = pd.Categorical(frame["DEGREE"], categories=LEVELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[ITEMS]), 3)
    rows = []
    for restarts in (None, 300):
        options = {} if restarts is None else {"restarts": restarts}
        for seed in (-1, 0, 1, 2, 3, 4):   # -1: the warm-up call, not reported
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = lcb.em(structure, frame, group="DEGREE", invariance="none",
                             seed=max(seed, 0) + (99 if seed < 0 else 0), **options)
            if seed >= 0:
                rows.append({"restarts": "default" if restarts is None else str(restarts),
                             "seed": seed, "loglik": fit.loglik,
                             "seconds": time.perf_counter() - start,
                             "line": fit.summary().splitlines()[-1]})
    return rows


def estimator_checks() -> dict:
    from sklearn.utils.estimator_checks import check_estimator

    import lcbayes as lcb
    from lcbayes.estimator import EXPECTED_FAILED_CHECKS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(lcb.LatentClassModel(restarts=2), on_fail=None,
                                  expected_failed_checks=EXPECTED_FAILED_CHECKS)
    statuses = [r["status"] for r in results]
    expected = sum(r["check_name"] in EXPECTED_FAILED_CHECKS for r in results)
    return {"total": len(results), "passed": statuses.count("passed"),
            "expected": expected, "skipped": statuses.count("skipped"),
            "other": len(results) - statuses.count("passed") - statuses.count("skipped")
            - expected}


def report(parts: dict) -> str:
    w = parts["wide"]
    lines = ["# Hard fits: wide data, multiple-group restarts, scikit-learn's checks", "",
             "Written by `python benchmarks/bench_hard_fits.py --write reports/hard-fits.md` "
             "(2 cores).", "", "## Wide data (200 rows x 300 binary items, K = 2)", "",
             "| run | whole process (s) | EM as printed (s) | ratio | peak memory (MB) | "
             "longest number (digits) |", "|---|---|---|---|---|---|"]
    for name in ("first", "warm"):
        r = w[name]
        lines.append(f"| {name} | {r['seconds']:.1f} | {r['em_seconds']:.2f} | "
                     f"{r['seconds'] / r['em_seconds']:.1f}x | {r['peak_mb']:.0f} | "
                     f"{r['digits']} |")
    verdict = {name: w[name]["seconds"] <= 3 * w[name]["em_seconds"] for name in w}
    lines += ["", "Target: the whole process within 3x its EM time, no number printed with "
              "more than 12 significant digits (before: 86 s against 5 s of EM, 1.8 GB, X^2 "
              "as a 90-digit integer). Ratio met: "
              + ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in verdict.items())
              + ". Beyond EM: the process start (JAX, pandas and the fit's modules; "
              "`fit` no longer imports the comparison layer) and the standard errors. \"first\" "
              "is this invocation's first run, with the compilation cache as it found it "
              "(after a change to lcbayes it compiles).", "",
              "## gss08, no measurement invariance, K = 3", "",
              f"glca 1.4.2's maximum: {GLCA_NONE}. Before the separate-groups start (main at "
              "f362b10, same machine): 300 restarts took 1.6-1.9 s warm and 5.6 s in the first "
              "call of a process; seeds 0-3 reached the maximum and seed 4 stopped at "
              "-650.3479; the default 10 restarts reached it for no seed (-654.51, -650.95).",
              "",
              "| restarts | seed | log-likelihood | reaches glca's (1e-4) | seconds | "
              "restarts line |", "|---|---|---|---|---|---|"]
    for r in parts["groups"]:
        lines.append(f"| {r['restarts']} | {r['seed']} | {r['loglik']:.4f} | "
                     f"{'yes' if abs(r['loglik'] - GLCA_NONE) < 1e-4 else 'no'} | "
                     f"{r['seconds']:.2f} | {r['line']} |")
    c = parts["checks"]
    lines += ["", "## scikit-learn's `check_estimator(LatentClassModel())`", "",
              f"{c['passed']} of {c['total']} check runs pass, {c['expected']} are runs of the "
              f"checks listed as not applying (`EXPECTED_FAILED_CHECKS`), {c['skipped']} "
              f"skipped by scikit-learn itself, {c['other']} other failures (before: 13 of 46 "
              "passed).",
              ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", help="the report to write")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        parts = {"wide": wide(Path(folder))}
    print(parts["wide"])
    parts["groups"] = groups()
    for row in parts["groups"]:
        print(row)
    parts["checks"] = estimator_checks()
    print(parts["checks"])
    text = report(parts)
    print(text)
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
