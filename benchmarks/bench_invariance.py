"""Measurement invariance of multiple-group latent class models (``lcb.em(..., group=)``,
``lcb.compare_invariance``): speed and fit statistics on gss08 beside glca, and the
evidence-based choice of the invariance structure on simulated data. Writes
``reports/invariance.md``.

Usage::

    python benchmarks/bench_invariance.py --write reports/invariance.md   # N = 3000 per group
    python benchmarks/bench_invariance.py --quick                          # N = 500, no report
    python benchmarks/bench_invariance.py --quick --parts gss              # gss08 only
    python benchmarks/bench_invariance.py --load /tmp/inv.json --write reports/invariance.md

Part 1, gss08 (``../shared/data/gss08.csv`` when present, else ``tests/data/gss08.csv``):
items ``DEFECT HLTH RAPE POOR SINGLE NOMORE``, group ``DEGREE`` (ordered ``<= HS``,
``HIGH SCHOOL``, ``COLLEGE``, ``GRADUATE``), K = 3. ``lcb.compare_invariance(...,
invariance="all")`` (full, none, the six single-item partial structures and the forward
search) is timed twice in one process: the first call compiles (unless the persistent JAX
cache already holds the programs), the second is warm. The issue's target: every single-item
partial structure compared, EM and evidence, in under a minute on 2 cores. Then standalone
``lcb.em`` fits of full invariance (20 restarts) and no invariance (300 restarts: the
no-invariance likelihood has many local maxima) beside glca 1.4.2's numbers, and the
deviance test ``lcb.invariance_test(full, none)``.

glca's G^2 differs from ours on purpose: glca's saturated-model EM (``ObsLik`` in glca.cpp)
enumerates the completions of rows with three or more missing items wrongly (9 such rows in
gss08), so its saturated log-likelihood is -628.4882 where the correct one is -632.4008.
Log-likelihoods, parameter counts, df, AIC and BIC are comparable.

Part 2, simulated data (``numpy.random.default_rng([scenario, N])``): 3 groups of ``N`` rows
(``--n-per-group``, 3000; ``--quick``: 500), 8 binary items, K = 3; class 1 answers yes to
every item with probability 0.85, class 2 to items 1-4 with 0.85 and 5-8 with 0.15, class 3
to every item with 0.15; class prevalences (0.5, 0.3, 0.2), (0.3, 0.4, 0.3), (0.2, 0.3, 0.5)
by group. Scenario A: items Y2 and Y6 are non-invariant (group 2: every class's probability
reversed, ``p -> 1 - p``; group 3: flattened to 0.5 for every class); scenario B: every item
invariant. ``lcb.compare_invariance(..., invariance="all", seed=0)`` on each; the check is
whether the highest posterior probability falls on ``partial: Y2, Y6`` (A) and ``full`` (B).

The report is rewritten after every part (``--write``), so a long run that is stopped leaves
the parts done; ``--save`` keeps the measurements as JSON and ``--load`` rewrites the report
from them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

import lcbayes as lcb
from lcbayes.render import md_table, versions, write_text

ROOT = Path(__file__).resolve().parents[1]
GSS_ITEMS = ["DEFECT", "HLTH", "RAPE", "POOR", "SINGLE", "NOMORE"]
DEGREES = ["<= HS", "HIGH SCHOOL", "COLLEGE", "GRADUATE"]
#: glca 1.4.2 on gss08, K = 3, group DEGREE: (llik, npar, df, AIC, BIC, G^2)
GLCA = {"full": (-672.413846945, 26, 229, 1396.82769389, 1497.28210446, 87.8513540),
        "none": (-650.282082651, 80, 175, 1460.56416530, 1769.65465935, 43.5878254)}
GLCA_SATURATED = -628.4882
CORRECT_SATURATED = -632.4008
SIM_ITEMS = [f"Y{j + 1}" for j in range(8)]
PREVALENCES = np.array([[0.5, 0.3, 0.2], [0.3, 0.4, 0.3], [0.2, 0.3, 0.5]])
SCENARIOS = {"A": ("Y2", "Y6"), "B": ()}
EXPECTED = {"A": "partial: Y2, Y6", "B": "full"}


# ---------------------------------------------------------------------- data
def gss_frame() -> pd.DataFrame:
    path = ROOT.parent / "shared" / "data" / "gss08.csv"
    if not path.exists():
        path = ROOT / "tests" / "data" / "gss08.csv"
    frame = pd.read_csv(path)
    frame["DEGREE"] = pd.Categorical(frame["DEGREE"], categories=DEGREES)
    return frame


def base_profiles() -> np.ndarray:
    """``(K, J)`` P(yes | class) of the invariant items."""
    return np.array([[0.85] * 8, [0.85] * 4 + [0.15] * 4, [0.15] * 8])


def simulate(scenario: str, n: int) -> pd.DataFrame:
    rng = np.random.default_rng([ord(scenario), n])
    free = [SIM_ITEMS.index(i) for i in SCENARIOS[scenario]]
    blocks = []
    for g in range(3):
        p = base_profiles()
        if free and g == 1:
            p[:, free] = 1.0 - p[:, free]             # reversed
        elif free and g == 2:
            p[:, free] = 0.5                          # flattened
        z = rng.choice(3, size=n, p=PREVALENCES[g])
        y = rng.random((n, 8)) < p[z]
        block = pd.DataFrame(np.where(y, "yes", "no"), columns=SIM_ITEMS)
        block["G"] = f"g{g + 1}"
        blocks.append(block)
    frame = pd.concat(blocks, ignore_index=True)
    frame["G"] = pd.Categorical(frame["G"], categories=["g1", "g2", "g3"])
    return frame


# ---------------------------------------------------------------------- measurements
def comparison_record(comp) -> dict:
    table = comp.table.drop(columns=["free"]).copy()
    table["em_s"] = [comp.fits[k].fit.seconds for k in table["invariance"]]
    table["smc_s"] = [comp.evidences[k].seconds for k in table["invariance"]]
    table["particles"] = [comp.evidences[k].particles for k in table["invariance"]]
    table["runs"] = [len(comp.evidences[k].run_smc) for k in table["invariance"]]
    table["agree"] = [bool(comp.evidences[k].agree) for k in table["invariance"]]
    return {"seconds": comp.seconds, "best": comp.best,
            "table": json.loads(table.to_json(orient="records"))}


def part_gss() -> dict:
    frame = gss_frame()
    structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[GSS_ITEMS]), 3)
    runs = []
    for label in ("first (compiles)", "second (warm)"):
        comp = lcb.compare_invariance(structure, frame, "DEGREE", invariance="all", seed=0)
        rec = comparison_record(comp)
        rec["label"] = label
        runs.append(rec)
        print(f"gss08 compare_invariance, {label}: {comp.seconds:.1f} s, best {comp.best}")
        print(comp.summary())
    fits, seconds = {}, {}
    for inv, restarts in (("full", 20), ("none", 300)):
        t0 = time.perf_counter()
        fit = lcb.em(structure, frame, group="DEGREE", invariance=inv, restarts=restarts,
                     seed=0)
        fits[inv] = fit
        seconds[inv] = time.perf_counter() - t0
        print(f"gss08 em invariance={inv} restarts={restarts}: {seconds[inv]:.1f} s")
    test = lcb.invariance_test(fits["full"], fits["none"])
    ours = {inv: {"loglik": f.loglik, "npar": f.n_parameters, "df": f.df, "aic": -2 * f.aic,
                  "bic": -2 * f.bic, "gsq": f.gsq, "saturated": f.saturated_loglik,
                  "seconds": seconds[inv]} for inv, f in fits.items()}
    for inv, row in ours.items():
        ref = GLCA[inv]
        print(f"{inv:>5} ours  llik {row['loglik']:.6f} npar {row['npar']} df {row['df']} "
              f"AIC {row['aic']:.6f} BIC {row['bic']:.6f} G2 {row['gsq']:.6f}")
        print(f"{inv:>5} glca  llik {ref[0]:.6f} npar {ref[1]} df {ref[2]} AIC {ref[3]:.6f} "
              f"BIC {ref[4]:.6f} G2 {ref[5]:.6f}")
    print(f"deviance test full vs none: D = {test.statistic:.4f}, df {test.df}, "
          f"p = {test.p_chisq:.4g}")
    return {"rows": len(frame), "runs": runs, "ours": ours,
            "test": {"statistic": test.statistic, "df": test.df, "p": test.p_chisq}}


def part_sim(scenario: str, n: int) -> dict:
    frame = simulate(scenario, n)
    structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[SIM_ITEMS]), 3)
    comp = lcb.compare_invariance(structure, frame, "G", invariance="all", seed=0)
    rec = comparison_record(comp)
    rec.update(n_per_group=n, expected=EXPECTED[scenario],
               correct=comp.best == EXPECTED[scenario])
    print(f"simulated scenario {scenario}, N = {n} per group: {comp.seconds:.1f} s, best "
          f"{comp.best} (expected {EXPECTED[scenario]})")
    print(comp.summary())
    return rec


# ---------------------------------------------------------------------- report
def f(value, digits=4) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def comparison_table(rec: dict) -> list[str]:
    rows = [[r["invariance"], str(r["n_parameters"]), f(r["loglik"], 3), f(r["bic"], 2),
             f(r["log_evidence"], 2), f(r["stderr"], 2), f(r["posterior_prob"], 3),
             f"[{f(r['prob_low'], 3)}, {f(r['prob_high'], 3)}]", r["step"],
             f"{r['particles']} x {r['runs']}", "yes" if r["agree"] else "no",
             f(r["em_s"], 1), f(r["smc_s"], 1)] for r in rec["table"]]
    return md_table(["invariance", "npar", "ln L", "BIC", "ln Z", "s.e.", "P(M | y)",
                     "95% interval", "step", "particles x runs", "SMC = bridge", "EM s",
                     "SMC s"], rows)


def report(results: dict, args) -> str:
    lines = ["# Measurement invariance: multiple-group latent class models", "",
             f"Generated by `{results['command']}` on {results['date']} "
             f"({results['machine']}). Module docstring of `benchmarks/bench_invariance.py` "
             "for the set-up.", ""]
    gss = results.get("gss")
    lines += ["## gss08: speed of `compare_invariance` and fit statistics beside glca", ""]
    if gss is None:
        lines += ["Not run.", ""]
    else:
        lines += [f"{gss['rows']} rows, items {' '.join(GSS_ITEMS)}, group DEGREE (4 levels), "
                  "K = 3. `lcb.compare_invariance(structure, frame, \"DEGREE\", "
                  "invariance=\"all\", seed=0)`: full, none, the six single-item "
                  "partial structures and the forward search, every structure fitted by EM "
                  "(10 restarts, 200 for none) and its evidence estimated by SMC with bridge "
                  "sampling. Called twice in one process:", ""]
        lines += md_table(["call", "wall-clock s", "structures", "most probable",
                           "under a minute"],
                          [[r["label"], f(r["seconds"], 1), str(len(r["table"])), r["best"],
                            "yes" if r["seconds"] < 60 else "no"] for r in gss["runs"]])
        lines += ["", "The warm call, per structure (EM s is `fit.fit.seconds`, restarts and "
                  "for `none` the refit from the label-aligned start; SMC s "
                  "`evidences[label].seconds`):", ""]
        lines += comparison_table(gss["runs"][-1])
        lines += ["", "Standalone `lcb.em(structure, frame, group=\"DEGREE\", invariance=...)`, "
                  "full with 20 restarts, none with 300, beside glca 1.4.2 (AIC and BIC on "
                  "glca's scale: `-2 * fit.aic`, `-2 * fit.bic`):", ""]
        rows = []
        for inv in ("full", "none"):
            o, ref = gss["ours"][inv], GLCA[inv]
            rows.append([f"{inv} (lcbayes)", f(o["loglik"], 6), str(o["npar"]), str(o["df"]),
                         f(o["aic"], 5), f(o["bic"], 5), f(o["gsq"], 4), f(o["seconds"], 1)])
            rows.append([f"{inv} (glca)", f(ref[0], 6), str(ref[1]), str(ref[2]), f(ref[3], 5),
                         f(ref[4], 5), f(ref[5], 4), ""])
        lines += md_table(["fit", "ln L", "npar", "df", "AIC", "BIC", "G²", "wall-clock s"], rows)
        sat = gss["ours"]["full"]["saturated"]
        lines += ["", f"Saturated log-likelihood: lcbayes {f(sat, 4)}, glca "
                  f"{GLCA_SATURATED}. The G² differ by `2 * (saturated difference)` "
                  f"= {f(2 * (sat - GLCA_SATURATED), 4) if sat is not None else '-'}: glca's "
                  "saturated-model EM (`ObsLik` in glca.cpp) enumerates the cells of the 9 rows "
                  "with three or more missing items wrongly, the correct saturated "
                  f"log-likelihood is {CORRECT_SATURATED}. Everything else is comparable.", ""]
        t = gss["test"]
        lines += [f"Deviance test `lcb.invariance_test(full, none)`: D = {f(t['statistic'], 4)}"
                  f" on {t['df']} df, chi-square p = {t['p']:.4g}.", ""]
    lines += ["## Simulated data: the invariance structure chosen by the evidence", ""]
    for scenario in SCENARIOS:
        rec = results.get(f"sim{scenario}")
        what = ("Y2 and Y6 non-invariant (reversed in group 2, flat in group 3)"
                if SCENARIOS[scenario] else "every item invariant")
        lines += [f"### Scenario {scenario}: {what}", ""]
        if rec is None:
            status = results.get(f"sim{scenario}_status", "not run")
            lines += [f"Not measured: {status}.", ""]
            continue
        lines += [f"N = {rec['n_per_group']} rows per group ({3 * rec['n_per_group']} in all), "
                  f"{f(rec['seconds'], 1)} s. Most probable: **{rec['best']}** (truth: "
                  f"{rec['expected']}): {'correct' if rec['correct'] else 'WRONG'}.", ""]
        lines += comparison_table(rec)
        lines += [""]
    lines += results.get("notes", [])
    lines += ["## Versions", "", *[f"- {k}: {v}" for k, v in results["versions"].items()], ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 500 per group")
    parser.add_argument("--n-per-group", type=int, default=3000)
    parser.add_argument("--parts", default="gss,A,B", help="comma-separated: gss, A, B")
    parser.add_argument("--write", type=Path, default=None, help="the report's path")
    parser.add_argument("--save", type=Path, default=None, help="measurements as JSON")
    parser.add_argument("--load", type=Path, nargs="+", default=None,
                        help="rewrite the report from saved measurements (later files' parts "
                             "replace earlier ones'), measuring nothing")
    parser.add_argument("--note", action="append", default=[],
                        help="a paragraph added to the report (status of other runs)")
    args = parser.parse_args(argv)
    n = 500 if args.quick else args.n_per_group
    if args.load:
        results = {}
        for path in args.load:
            saved = json.loads(path.read_text())
            parts = {k: v for k, v in saved.items() if k in ("gss", "simA", "simB")}
            results.update({k: v for k, v in saved.items() if k not in results or k in parts})
            results.update(parts)
        for scenario in SCENARIOS:
            if f"sim{scenario}" in results:
                results.pop(f"sim{scenario}_status", None)
        results["command"] = " and ".join(
            json.loads(path.read_text())["command"] for path in args.load)
        results["notes"] = results.get("notes", []) + [x + "\n" for x in args.note]
        if args.write:
            write_text(args.write, report(results, args))
            print(f"wrote {args.write}")
        return
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    results = {"command": "python benchmarks/bench_invariance.py "
                          + " ".join(a for a in (argv or os.sys.argv[1:])),
               "date": dt.date.today().isoformat(),
               "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}",
               "versions": versions(), "notes": [x + "\n" for x in args.note]}
    for scenario in SCENARIOS:
        if scenario in parts:
            results[f"sim{scenario}_status"] = "running (not finished when this was written)"

    def flush() -> None:
        if args.save:
            write_text(args.save, json.dumps(results, indent=1, default=float))
        if args.write:
            write_text(args.write, report(results, args))

    if "gss" in parts:
        results["gss"] = part_gss()
        flush()
    for scenario in SCENARIOS:
        if scenario in parts:
            results[f"sim{scenario}"] = part_sim(scenario, n)
            flush()
    flush()
    if args.write:
        print(f"wrote {args.write}")


if __name__ == "__main__":
    main()
