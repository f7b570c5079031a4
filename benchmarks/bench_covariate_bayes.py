"""Bayes factors for "does this covariate matter?" and "does this outcome differ by class?"
(:func:`lcbayes.covariate_evidence`): the numbers behind ``reports/covariate-bayes.md``.

Usage::

    python benchmarks/bench_covariate_bayes.py             # writes reports/covariate-bayes.md
    python benchmarks/bench_covariate_bayes.py --quick     # fewer seeds and scales, prints only
    python benchmarks/bench_covariate_bayes.py --out /tmp/cb.md

What is run (``lcb.covariate_evidence`` at its defaults unless said: prior scale 2.5, 4 NUTS
chains x 1000 draws after 1000 warm-up per model, the bridge on the second halves):

1. cheating (``lcb.datasets.frame("cheating")``, LIEEXAM LIEPAPER FRAUD COPYEXAM, K = 2,
   membership ~ GPA; 4 rows lack GPA): ``ln B`` with its error at seeds 0..R-1, the spread of
   the independent runs beside the mean reported error (does the error bar hold?), and the
   prior sensitivity at the scales of ``--scales`` (the Lindley-Bartlett slope);
2. bridge against AIS (``lcb.ais_numpyro`` on the same NumPyro model, 32 chains x 2000
   temperatures) for cheating's two models;
3. a tiny case (K = 2, three binary items, a binary covariate, N = 24; the data of
   ``tests/test_covariate_bayes.py``) against its exact evidence (a sum over every allocation
   and a quadrature over the coefficients), at seeds 0..R-1: the errors in units of the
   reported standard error;
4. simulated data (``tests/test_covariate_bayes.simulate``: K = 2, four binary items, a
   covariate 1..4, N = 1000) with no effect and a moderate one (slope 0.5 per unit, 0.56 per
   SD), three data sets each;
5. distal outcomes (``tests/test_covariate_bayes._distal_frame``: N = 600, categorical and
   continuous, by class or not);
6. the seconds per ``covariate_evidence`` call (two models: EM start, two NUTS runs, two
   bridges): the first call of a shape (compiling, compilation cache off) and the steady ones;
   the 2 cores may be shared: the load average before and after is reported.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("LCBAYES_CACHE_DIR", "off")  # the first calls really compile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import lcbayes as lcb  # noqa: E402
from lcbayes.render import versions  # noqa: E402
from tests.test_covariate_bayes import (  # noqa: E402
    ITEMS,
    _distal_frame,
    exact_log_evidence,
    simulate,
    tiny,
)

REPORT = ROOT / "reports" / "covariate-bayes.md"
SCALES = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 100.0)


def _evidence(structure, frame, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        result = lcb.covariate_evidence(structure, frame, **options)
        return result, time.perf_counter() - start


def _structure(frame, items, k=2):
    return lcb.latent_class(lcb.Dataset.from_pandas(frame[list(items)]), k)


def cheating(seeds: int, scales: tuple[float, ...]) -> dict:
    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    runs, seconds = [], []
    for seed in range(seeds):
        res, sec = _evidence(structure, frame, covariates=["GPA"], seed=seed)
        runs.append(res)
        seconds.append(sec)
    sensitivity, _ = _evidence(structure, frame, covariates=["GPA"], seed=0,
                               sensitivity=tuple(s for s in scales if s != 2.5))
    models = []
    for i, drop in enumerate((None, "covariates")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, data = lcb.covariate_model(structure, frame, covariates=["GPA"], drop=drop)
            start = time.perf_counter()
            ais = lcb.ais_numpyro(model, data, chains=32, temperatures=2000, seed=0)
        models.append({"model": runs[0].models[i], "bridge": runs[0].log_evidence[i],
                       "bridge_se": runs[0].stderr[i], "ais": ais.log_evidence,
                       "ais_se": ais.stderr, "ais_seconds": time.perf_counter() - start})
    return {"runs": runs, "seconds": seconds, "ais": models, "sensitivity": sensitivity}


def tiny_case(seeds: int) -> dict:
    frame = tiny()
    exact = exact_log_evidence(frame, 2.5)
    structure = _structure(frame, "ABC")
    runs = [_evidence(structure, frame, covariates=["x"], seed=seed)[0] for seed in range(seeds)]
    return {"exact": exact, "runs": runs}


def simulated(datasets: int) -> dict:
    out = {}
    for slope in (0.0, 0.5):
        rows = []
        for d in range(datasets):
            frame = simulate(slope, seed=10 + d)
            res, sec = _evidence(_structure(frame, ITEMS), frame, covariates=["x"], seed=0)
            fit = res.posteriors[0]
            rows.append({"data": d, "ln_b": res.log_bayes_factor,
                         "se": res.log_bayes_factor_stderr, "slope": fit.coef_mean[1, 1],
                         "slope_sd": fit.coef_sd[1, 1], "seconds": sec})
        out[slope] = rows
    return out


def distal() -> list[dict]:
    rows = []
    for kind in ("categorical", "continuous"):
        for differs in (True, False):
            frame = _distal_frame(differs, kind)
            res, sec = _evidence(_structure(frame, ITEMS), frame, distal="Y", seed=0)
            rows.append({"kind": kind, "differs": differs, "ln_b": res.log_bayes_factor,
                         "se": res.log_bayes_factor_stderr, "n_tested": res.n_tested,
                         "seconds": sec})
    return rows


def report(ch: dict, ti: dict, sim: dict, dist: list[dict], load: tuple) -> str:
    runs = ch["runs"]
    lnb = [r.log_bayes_factor for r in runs]
    ses = [r.log_bayes_factor_stderr for r in runs]
    first = runs[0]
    lines = [
        "# Does the covariate matter? Bayes factors for latent class regression", "",
        "Made by `python benchmarks/bench_covariate_bayes.py` (`lcb.covariate_evidence`: NUTS "
        "draws of each model, bridge sampling with a normal proposal symmetrised over the "
        "K! labellings, Frühwirth-Schnatter's relative error; 4 chains x 1000 draws after "
        "1000 warm-up per model; prior SD 2.5 per standardised coefficient unless said). "
        "Natural logs; ln B > 0 favours the model with the covariate (or with the outcome by "
        "class).", "",
        "## Cheating ~ GPA (K = 2, 315 of 319 rows)", "",
        f"**ln B = {first.log_bayes_factor:.3f} +/- {first.log_bayes_factor_stderr:.3f}** "
        f"(seed 0): ln p(y) = {first.log_evidence[0]:.3f} +/- {first.stderr[0]:.3f} with GPA, "
        f"{first.log_evidence[1]:.3f} +/- {first.stderr[1]:.3f} without; "
        f"P(GPA matters | y) = {first.posterior_probability:.4f} at even prior odds.", "",
        f"{len(runs)} independent runs (seeds 0..{len(runs) - 1}): ln B mean {np.mean(lnb):.3f}, "
        f"SD over runs {np.std(lnb, ddof=1):.3f}, mean reported error "
        f"{np.mean(ses):.3f}; per model, SD over runs "
        + ", ".join(f"{np.std([r.log_evidence[i] for r in runs], ddof=1):.3f}"
                    for i in range(2))
        + " against mean reported errors "
        + ", ".join(f"{np.mean([r.stderr[i] for r in runs]):.3f}" for i in range(2)) + ".", "",
        "Posterior of the GPA coefficient (class 2 vs class 1, raw scale) with GPA: mean "
        f"{first.posteriors[0].coef_mean[1, 1]:.4f}, SD {first.posteriors[0].coef_sd[1, 1]:.4f} "
        "(poLCA's ML estimate -0.8425, SE 0.2813 for its class order, the same classes here).",
        "", "### Prior sensitivity (Lindley-Bartlett)", "",
        "The membership coefficients have prior N(0, s^2) on the standardised design; the "
        "nested model leaves one coefficient out, so once s is well above the coefficient's "
        "posterior SD, ln B falls by about 1 per unit of ln s (the last column).", "",
        "| prior scale s | ln B | s.e. | d ln B / d ln s |", "|---|---|---|---|"]
    for r in ch["sensitivity"].prior_sensitivity().itertuples():
        slope = "" if math.isnan(r.slope_per_log_scale) else f"{r.slope_per_log_scale:.3f}"
        lines.append(f"| {r.prior_scale:g} | {r.log_bayes_factor:.3f} | {r.stderr:.3f} | "
                     f"{slope} |")
    lines += ["", "### Bridge sampling against AIS on the same NumPyro model", "",
              "| model | bridge ln p(y) | s.e. | AIS ln p(y) (32 x 2000) | s.e. | "
              "difference / combined s.e. | AIS seconds |", "|---|---|---|---|---|---|---|"]
    for m in ch["ais"]:
        z = (m["bridge"] - m["ais"]) / math.hypot(m["bridge_se"], m["ais_se"])
        lines.append(f"| {m['model']} | {m['bridge']:.3f} | {m['bridge_se']:.3f} | "
                     f"{m['ais']:.3f} | {m['ais_se']:.3f} | {z:+.2f} | "
                     f"{m['ais_seconds']:.1f} |")
    exact = ti["exact"]
    lines += ["", "## Against the exact evidence (K = 2, 3 binary items, binary covariate, "
              "N = 24)", "",
              "The exact value sums over every allocation of the rows to the classes (a "
              "dynamic programme over the cells; the item tables integrate in closed form) and "
              "integrates the two standardised coefficients on a grid (step 0.1 and 0.05 "
              "agree to 1e-7). With N = 24 the labels are barely identified: the chains visit "
              "both modes, which the symmetrised proposal covers.", "",
              f"Exact: ln p(y) = {exact[0]:.4f} with the covariate, {exact[1]:.4f} without, "
              f"ln B = {exact[0] - exact[1]:.4f}.", "",
              "| seed | with: bridge - exact | s.e. | z | without: bridge - exact | s.e. | z |",
              "|---|---|---|---|---|---|---|"]
    zs = []
    for seed, r in enumerate(ti["runs"]):
        d = r.log_evidence - np.asarray(exact)
        zs += list(d / r.stderr)
        lines.append(f"| {seed} | {d[0]:+.4f} | {r.stderr[0]:.4f} | {d[0] / r.stderr[0]:+.2f} "
                     f"| {d[1]:+.4f} | {r.stderr[1]:.4f} | {d[1] / r.stderr[1]:+.2f} |")
    lines += ["", f"RMS of z over the {len(zs)} estimates: {math.sqrt(np.mean(np.square(zs))):.2f} "
              "(1 if the error bars are right).", "",
              "## Simulated data (K = 2, four binary items, covariate 1..4, N = 1000)", "",
              "Seconds per `covariate_evidence` call; the first call of a data shape includes "
              "compiling.", "",
              "| effect | data set | ln B | s.e. | slope mean | slope SD | seconds |",
              "|---|---|---|---|---|---|---|"]
    for slope, rows in sim.items():
        name = "none" if slope == 0 else f"moderate ({slope} per unit)"
        for r in rows:
            lines.append(f"| {name} | {r['data']} | {r['ln_b']:.3f} | {r['se']:.3f} | "
                         f"{r['slope']:.3f} | {r['slope_sd']:.3f} | {r['seconds']:.1f} |")
    lines += ["", "## Distal outcomes (N = 600, no covariates; by class against one "
              "distribution for all classes)", "",
              "Seconds as above: the first call of each kind compiles its programs.", "",
              "| outcome | differs by class | parameters tested | ln B | s.e. | seconds |",
              "|---|---|---|---|---|---|"]
    for r in dist:
        lines.append(f"| {r['kind']} | {'yes' if r['differs'] else 'no'} | {r['n_tested']} | "
                     f"{r['ln_b']:.3f} | {r['se']:.3f} | {r['seconds']:.1f} |")
    steady = ch["seconds"][1:]
    lines += ["", "## Seconds per `covariate_evidence` call (2 CPU cores)", "",
              f"Cheating, two models (EM start, two NUTS runs of 4 x 2000 iterations, two "
              f"bridges): first call {ch['seconds'][0]:.1f} s (compiling the programs, "
              "compilation cache off)"
              + (f", then {statistics.median(steady):.1f} s per call (median of "
                 f"{len(steady)})" if steady else "") + ". "
              f"Load average before and after: {load[0]:.1f}, {load[1]:.1f} (the cores are "
              "shared; the times are wall-clock).", "",
              "## Versions", "", "```"]
    lines += [f"{k}: {v}" for k, v in versions().items()] + ["```", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, 3 scales, print only")
    parser.add_argument("--seeds", type=int, default=10, help="independent runs of cheating "
                        "and of the tiny case (default 10)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    seeds = 2 if args.quick else args.seeds
    scales = (1.0, 2.5, 10.0) if args.quick else SCALES
    before = os.getloadavg()[0]
    ch = cheating(seeds, scales)
    ti = tiny_case(seeds)
    sim = simulated(1 if args.quick else 3)
    dist = [] if args.quick else distal()
    text = report(ch, ti, sim, dist, (before, os.getloadavg()[0]))
    print(text)
    out = args.out or (None if args.quick else REPORT)
    if out is not None:
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
