"""Benchmark lcbayes EM against StepMix on latent class fits, and the CLI's cold/warm start.

Usage::

    python benchmarks/bench_em.py                 # full run (a few minutes on 2 cores)
    python benchmarks/bench_em.py --quick         # smoke test (N = 1000, max_iter 200, 2 repeats)
    python benchmarks/bench_em.py --no-stepmix    # lcbayes and the CLI only
    python benchmarks/bench_em.py --repeats 5     # more steady-state repeats of lcbayes
    python benchmarks/bench_em.py --algorithm all # every algorithm of lcb.em (Whiley ch. 2)
    python benchmarks/bench_em.py --algorithm gcg,iem --quick

It prints figures only; nothing is asserted about time.

With ``--algorithm NAMES`` (comma-separated names of ``lcb.em(algorithm=...)``, or ``all``) it
times those algorithms instead, one table per data set with an ``algorithm`` column: the
election ratings (12 four-level items with missing values, 3 classes) and the simulated set
(``--rows`` rows, 20 binary items, 5 classes). Every algorithm starts from the same random
starts (the seed) and stops on the same rule (``tol`` per row over one iteration); "first"
includes compilation, "steady" is one more identical call. Iterations are the algorithm's own
(a SQUAREM cycle, an IEM pass over the blocks, a CG step with its line search, a gradient
method's step with the EM step it is compared with at the default adaptive rate), so compare
seconds across algorithms and iterations within one.

What is measured:

* lcbayes: ``lcb.em`` on a ready :class:`lcbayes.Dataset` (rows already compressed to patterns;
  the compression time is printed separately as "prep"). The first call includes tracing and
  XLA compilation; "compile" is first-call seconds minus the steady-state seconds, the median
  of ``--repeats`` further identical calls. ``em`` converts its results to NumPy, so JAX's
  asynchronous dispatch is finished when it returns. The persistent compilation cache is not
  enabled in this process, so the first call really compiles.
* StepMix: ``StepMix(...).fit(X)`` on the raw rows (StepMix has no pattern compression), with
  the same number of restarts, the same stopping rule and the same iteration limit.
* The command line: ``lcbayes fit carcinoma.csv --n-classes 3 --restarts 16 --json`` twice with a
  fresh ``LCBAYES_CACHE_DIR`` (cold: empty compilation cache; warm: the cache the cold run
  wrote). Wall times include interpreter start-up and importing JAX.

Stopping rule (the same for both programs). lcbayes stops a restart at the first iteration
whose log-likelihood ``L_t = sum_rows ln p(y | theta_t)`` (evaluated in the E step, before the M
step) satisfies ``|L_t - L_{t-1}| < tol * N`` (``N`` = rows with an observed value), or after
``max_iter`` iterations. StepMix (stepmix/stepmix.py, ``StepMix.em``) computes in its E step
``lower_bound = np.average(ll, weights=sample_weight)``, the *average* log-likelihood per row
at the current parameters (before the M step), and stops when ``|change| < abs_tol`` or
``|change / lower_bound| < rel_tol``, or after ``max_iter`` iterations. So
``abs_tol = tol`` and ``rel_tol = 0`` (disabled) give exactly lcbayes' criterion, and both count
the stopping iteration in their iteration numbers. StepMix's ``lower_bound_`` is an average; its
log-likelihood below is ``model.score(X) * N`` (the average log-likelihood at the returned
parameters times N), comparable to lcbayes' ``loglik``.

Starting points: both programs draw random responsibilities and run one M step (lcbayes per
pattern, StepMix per row), which starts every restart close to the symmetric point. lcbayes'
iterations are SQUAREM cycles (up to three E steps each; ``acceleration="none"`` in ``lcb.em``
gives plain EM), so "restart-iterations" count cycles for lcbayes and E steps for StepMix.
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import lcbayes as lcb

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
TARGET_RATIO = 20.0


# ---------------------------------------------------------------------------- results
@dataclass
class LcbayesFigures:
    n_rows: int
    n_patterns: int
    prep_s: float           # Dataset construction (pattern compression) for these rows
    first_s: float
    steady_s: float | None    # None: no steady repeat fitted in the time budget
    steady_all: list[float]
    iter_best: int
    iter_mean: float
    iter_max: int
    n_converged: int
    loglik: float
    iter_total: int = 0
    label: str = "lcbayes"


@dataclass
class StepmixFigures:
    seconds: float
    seconds_all: list[float]
    iter_best: int
    iter_mean: float
    iter_total: int
    n_converged: int
    loglik: float
    measurement: str
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- data
def synthetic(n_rows: int, n_items: int, n_classes: int, seed: int):
    """Simulated latent class data with seeded parameters; returns (Dataset, prep seconds,
    true class shares)."""
    placeholder = lcb.Dataset.from_codes(
        np.array([[0] * n_items, [1] * n_items]), cardinalities=[2] * n_items
    )
    truth = lcb.latent_class(placeholder, n_classes)
    # Item probabilities uniform on [0, 1] (Dirichlet(1)); class shares from Dirichlet(10), so
    # no class is tiny and the model is well identified.
    params = lcb.random_params(truth, seed=seed, prior={"class": 10.0})
    sim = lcb.simulate(truth, params, n=n_rows, seed=seed + 1)
    # Time the pattern compression on the raw codes (what lcb.em needs and StepMix does not).
    start = time.perf_counter()
    data = lcb.Dataset.from_codes(sim.codes, columns=sim.columns, labels=sim.labels)
    prep = time.perf_counter() - start
    return data, prep, params["class"]


def carcinoma():
    path = DATA_DIR / "carcinoma.csv"
    if not path.is_file():
        return None, 0.0, path
    start = time.perf_counter()
    data = lcb.Dataset.from_csv(path)
    return data, time.perf_counter() - start, path


# ---------------------------------------------------------------------------- runners
def run_lcbayes(data, n_classes, restarts, tol, max_iter, seed, repeats, budget, prep_s,
                keep=None):
    structure = lcb.latent_class(data, n_classes)

    def fit():
        start = time.perf_counter()
        result = lcb.em(structure, data, restarts=restarts, seed=seed, tol=tol,
                        max_iter=max_iter, keep=keep)
        return result, time.perf_counter() - start

    result, first = fit()
    # Steady-state repeats; none starts once ``budget`` seconds are spent (if the first call
    # alone took that long, steady is unknown and the report uses the first call instead).
    steady: list[float] = []
    spent = first
    while len(steady) < repeats and spent < budget:
        steady.append(fit()[1])
        spent += steady[-1]
    med = statistics.median(steady) if steady else None
    return LcbayesFigures(
        n_rows=data.n_rows,
        n_patterns=result.n_patterns,
        prep_s=prep_s,
        first_s=first,
        steady_s=med,
        steady_all=steady,
        iter_best=result.n_iter,
        iter_mean=float(np.mean(result.restart_n_iter)),
        iter_max=int(np.max(result.restart_n_iter)),
        iter_total=int(np.sum(result.restart_n_iter)),
        label="lcbayes" if keep is None else f"lcb k={keep}",
        n_converged=int(np.sum(result.restart_converged)),
        loglik=result.loglik,
    )


def election():
    path = DATA_DIR / "election.csv"
    if not path.is_file():
        return None, path
    ratings = ["MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB", "CARESB",
               "KNOWB", "LEADB", "DISHONB", "INTELB"]
    return lcb.Dataset.from_csv(path, columns=ratings), path


def run_algorithms(title, data, n_classes, algorithms, restarts, tol, max_iter, seed):
    """Every algorithm from the same starts: seconds (first call, with compilation, and one
    steady repeat), iterations and the best log-likelihood."""
    structure = lcb.latent_class(data, n_classes)
    print()
    print(f"== {title}: rows {data.n_rows}, patterns {data.n_patterns}, restarts {restarts}, "
          f"tol {tol:g}, max_iter {max_iter}")
    header = (f"   {'algorithm':<14} {'first s':>9} {'steady s':>9} {'it best':>8} "
              f"{'it mean':>8} {'it max':>7} {'conv':>6} {'loglik':>16} {'vs squarem':>11}")
    print(header)
    print("   " + "-" * (len(header) - 3))
    reference = None
    for name in algorithms:
        times, result = [], None
        for _ in range(2):
            start = time.perf_counter()
            result = lcb.em(structure, data, restarts=restarts, seed=seed, tol=tol,
                            max_iter=max_iter, algorithm=name)
            times.append(time.perf_counter() - start)
        if name == "squarem":
            reference = result.loglik
        gap = "" if reference is None else f"{result.loglik - reference:+11.2e}"
        print(f"   {name:<14} {fmt_s(times[0]):>9} {fmt_s(times[1]):>9} {result.n_iter:>8} "
              f"{np.mean(result.restart_n_iter):>8.1f} {np.max(result.restart_n_iter):>7} "
              f"{int(np.sum(result.restart_converged)):>3}/{restarts:<2} {result.loglik:>16.4f} "
              f"{gap}", flush=True)


def run_stepmix(data, n_classes, restarts, tol, max_iter, seed, repeats):
    from stepmix.stepmix import StepMix

    binary = all(c == 2 for c in data.cardinalities)
    measurement = "binary" if binary else "categorical"
    # Raw rows (not patterns); binary items as 0/1 floats, categorical as integer codes 0..r-1.
    X = data.codes.astype(np.float64) if binary else data.codes.astype(np.int64)
    n = X.shape[0]

    def fit():
        model = StepMix(
            n_components=n_classes,
            measurement=measurement,
            n_init=restarts,
            abs_tol=tol,        # average log-likelihood per row: the same as lcbayes' tol
            rel_tol=0.0,        # off: stop on the absolute per-row change only, like lcbayes
            max_iter=max_iter,
            init_params="random",
            random_state=seed,
            verbose=0,
            progress_bar=0,
        )
        # Count E steps per restart (one per iteration plus one after each restart for
        # StepMix's likelihood buffer). A Python call per iteration costs microseconds.
        calls: list[int] = []
        e_step, init = model._e_step, model._initialize_parameters

        def counting_init(*args, **kwargs):
            calls.append(0)
            return init(*args, **kwargs)

        def counting_e_step(*args, **kwargs):
            calls[-1] += 1
            return e_step(*args, **kwargs)

        model._initialize_parameters = counting_init
        model._e_step = counting_e_step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            model.fit(X)
            seconds = time.perf_counter() - start
        per_restart = [c - 1 for c in calls]
        return model, seconds, per_restart, caught

    runs = [fit() for _ in range(repeats)]
    model, _, per_restart, caught = runs[0]
    seconds_all = [r[1] for r in runs]
    notes = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    return StepmixFigures(
        seconds=statistics.median(seconds_all),
        seconds_all=seconds_all,
        iter_best=int(model.n_iter_),
        iter_mean=float(np.mean(per_restart)),
        iter_total=int(np.sum(per_restart)),
        n_converged=int(np.sum(np.array(per_restart) < max_iter)),
        loglik=float(model.score(X)) * n,
        measurement=measurement,
        notes=notes,
    )


def run_cli(path: Path, restarts: int) -> tuple[list[tuple[str, float, dict | None, str]], str]:
    exe = Path(sys.executable).parent / "lcbayes"
    base = [str(exe)] if exe.is_file() else [sys.executable, "-m", "lcbayes.cli"]
    cmd = [*base, "fit", str(path), "--n-classes", "3", "--restarts", str(restarts), "--json"]
    out = []
    with tempfile.TemporaryDirectory(prefix="lcbayes-bench-cache-") as cache:
        env = {**os.environ, "LCBAYES_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            start = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - start
            info = None
            if proc.returncode == 0:
                try:
                    info = json.loads(proc.stdout)
                except json.JSONDecodeError:
                    info = None
            err = "" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()}"
            out.append((label, wall, info, err))
    return out, " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd))


# ---------------------------------------------------------------------------- printing
def fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 100 else f"{x:.1f}"


def print_case(title, lc: LcbayesFigures, sm: StepmixFigures | None, sm_skip: str | None,
               restarts: int):
    print()
    print(f"== {title}")
    print(f"   rows {lc.n_rows}, patterns {lc.n_patterns}, restarts {restarts}")
    header = (f"   {'program':<9} {'prep s':>8} {'first s':>9} {'compile s':>10} {'steady s':>9} "
              f"{'it best':>8} {'it mean':>8} {'it max':>7} {'conv':>6} {'loglik':>16}")
    print(header)
    print("   " + "-" * (len(header) - 3))
    have_steady = lc.steady_s is not None
    # Without a steady repeat the first call (compile included) stands in: an upper bound.
    lc_s = lc.steady_s if have_steady else lc.first_s
    compile_s = fmt_s(lc.first_s - lc.steady_s) if have_steady else "n/a"
    steady_s = fmt_s(lc.steady_s) if have_steady else "n/a"
    print(f"   {lc.label:<9} {lc.prep_s:>8.3f} {fmt_s(lc.first_s):>9} {compile_s:>10} "
          f"{steady_s:>9} {lc.iter_best:>8} {lc.iter_mean:>8.1f} {lc.iter_max:>7} "
          f"{lc.n_converged:>3}/{restarts:<2} {lc.loglik:>16.4f}")
    if sm is not None:
        print(f"   {'stepmix':<9} {'-':>8} {'-':>9} {'-':>10} {fmt_s(sm.seconds):>9} "
              f"{sm.iter_best:>8} {sm.iter_mean:>8.1f} {'-':>7} {sm.n_converged:>3}/{restarts:<2} "
              f"{sm.loglik:>16.4f}")
    if have_steady:
        steady = ", ".join(f"{t:.3f}" for t in lc.steady_all)
        print(f"   lcbayes steady-state repeats (s): {steady}")
    else:
        print("   lcbayes: no steady-state repeat (the first call took longer than --budget); "
              "figures below use the first call, compile included")
    # On a CPU lcbayes runs restarts one after another, each stopping on its own (with
    # keep=K, all starts run burn-in iterations side by side, then K continue).
    print(f"   {lc.label} per restart-iteration: {1e6 * lc_s / max(lc.iter_total, 1):.1f} us "
          f"(restart-iterations computed: {lc.iter_total})")
    if sm is None:
        print(f"   stepmix: skipped ({sm_skip})")
        return
    print(f"   stepmix measurement={sm.measurement!r}, runs (s): "
          + ", ".join(f"{t:.3f}" for t in sm.seconds_all))
    print(f"   stepmix per restart-iteration: {1e6 * sm.seconds / max(sm.iter_total, 1):.1f} us "
          f"(restart-iterations computed: {sm.iter_total})")
    for note in sm.notes:
        print(f"   stepmix warning: {note}")
    ratio = sm.seconds / lc_s
    ratio_prep = sm.seconds / (lc_s + lc.prep_s)
    verdict = "MET" if ratio >= TARGET_RATIO else "NOT MET"
    bound = "" if have_steady else ">= "
    which = "steady" if have_steady else "first call"
    print(f"   speed ratio stepmix / lcbayes {which}: {bound}{ratio:.3g}x "
          f"(target >= {TARGET_RATIO:.0f}x: {verdict}); "
          f"counting lcbayes' pattern prep too: {bound}{ratio_prep:.3g}x")
    if ratio < 1:
        print(f"   (lcbayes is {1 / ratio:.3g}x slower than stepmix, "
              f"{TARGET_RATIO / ratio:.3g}x short of the target)")
    print(f"   loglik difference lcbayes - stepmix: {lc.loglik - sm.loglik:+.4f}")


# ---------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes for a smoke test (N = 1000, max_iter 200, 2 repeats)")
    parser.add_argument("--no-stepmix", action="store_true", help="skip the StepMix fits")
    parser.add_argument("--repeats", type=int, default=None,
                        help="steady-state repeats of each lcbayes fit (default 5, quick 2)")
    parser.add_argument("--stepmix-repeats", type=int, default=1,
                        help="repeats of each StepMix fit, median reported (default 1)")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the synthetic data set (default 100000, quick 1000)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds of lcbayes fitting per data set after which no further "
                             "steady-state repeat starts (default 300, quick 30)")
    parser.add_argument("--restarts", type=int, default=16, help="restarts (default 16)")
    parser.add_argument("--tol", type=float, default=1e-8,
                        help="stopping threshold on the log-likelihood change per row, both "
                             "programs (default 1e-8, lcbayes' default)")
    parser.add_argument("--max-iter", type=int, default=None,
                        help="iteration limit per restart, both programs (default 1000, "
                             "StepMix's default; quick 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algorithm", default=None,
                        help="time these algorithms of lcb.em instead (comma-separated names, or "
                             "'all'): election and the simulated set, an algorithm column")
    parser.add_argument("--keep", type=int, default=4,
                        help="also time the two-stage run em(keep=K): all starts run 10 "
                             "iterations, the K best continue (default 4)")
    args = parser.parse_args(argv)

    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    n_rows = args.rows if args.rows is not None else (1000 if args.quick else 100_000)
    max_iter = args.max_iter if args.max_iter is not None else (200 if args.quick else 1000)
    budget = args.budget if args.budget is not None else (30.0 if args.quick else 300.0)
    n_items, n_classes = 20, 5
    restarts, tol, seed = args.restarts, args.tol, args.seed

    import jax

    print("lcbayes EM benchmark" + (" (quick)" if args.quick else ""))
    print(f"  python {sys.version.split()[0]}, jax {jax.__version__} ({jax.default_backend()}, "
          f"{len(jax.devices())} device(s)), lcbayes {lcb.__version__}, cpus {os.cpu_count()}")
    sm_skip = None
    if args.no_stepmix:
        sm_skip = "--no-stepmix"
    else:
        try:
            import stepmix
            from stepmix.stepmix import StepMix  # noqa: F401

            version = getattr(stepmix, "__version__", None)
            if version is None:
                from importlib.metadata import version as dist_version

                version = dist_version("stepmix")
            print(f"  stepmix {version}")
        except ImportError as exc:
            sm_skip = f"stepmix not importable ({exc}); install the 'bench' extra"
    print(f"  restarts {restarts}, tol {tol:g} per row (StepMix abs_tol={tol:g}, rel_tol=0), "
          f"max_iter {max_iter}, seed {seed}, lcbayes steady repeats {repeats} "
          f"(budget {budget:g} s), stepmix repeats {args.stepmix_repeats}")
    print("  times in seconds; 'compile' = first call - steady; 'it' = EM iterations "
          "(best restart / mean / max over restarts); 'conv' = restarts that met tol")

    if args.algorithm is not None:
        from lcbayes.engines.algorithms import ALGORITHMS

        names = ALGORITHMS if args.algorithm == "all" else tuple(args.algorithm.split(","))
        unknown = sorted(set(names) - set(ALGORITHMS))
        if unknown:
            parser.error(f"unknown algorithm {', '.join(unknown)}; choose from "
                         f"{', '.join(ALGORITHMS)} or all")
        ratings, path = election()
        if ratings is None:
            print(f"\n== election: skipped (no file at {path})")
        else:
            run_algorithms("election: 3 classes, 12 four-level ratings", ratings, 3, names,
                           restarts, tol, max_iter, seed)
        data, _, shares = synthetic(n_rows, n_items, n_classes, seed)
        run_algorithms(f"synthetic LC: {n_items} binary items, {n_classes} classes (true shares "
                       f"{np.round(shares, 3).tolist()})", data, n_classes, names, restarts,
                       tol, max_iter, seed)
        return 0

    # 1 + 3: synthetic data
    data, prep, shares = synthetic(n_rows, n_items, n_classes, seed)
    variants = [run_lcbayes(data, n_classes, restarts, tol, max_iter, seed, repeats, budget,
                            prep, keep) for keep in (None, args.keep)]
    sm = None
    if sm_skip is None:
        sm = run_stepmix(data, n_classes, restarts, tol, max_iter, seed, args.stepmix_repeats)
    for lc in variants:
        print_case(f"synthetic LC: N={n_rows}, {n_items} binary items, {n_classes} classes "
                   f"(true shares {np.round(shares, 3).tolist()})", lc, sm, sm_skip, restarts)

    # 2 + 3: carcinoma
    data, prep, path = carcinoma()
    if data is None:
        print()
        print(f"== carcinoma: skipped (no file at {path})")
    else:
        variants = [run_lcbayes(data, 3, restarts, tol, max_iter, seed, repeats, budget, prep,
                                keep) for keep in (None, args.keep)]
        sm = None
        if sm_skip is None:
            sm = run_stepmix(data, 3, restarts, tol, max_iter, seed, args.stepmix_repeats)
        for lc in variants:
            print_case("carcinoma: 3 classes (poLCA loglik -293.7050)", lc, sm, sm_skip,
                       restarts)

        # 4: command line, cold and warm compilation cache
        runs, cmd = run_cli(path, restarts)
        print()
        print("== CLI on carcinoma (fresh LCBAYES_CACHE_DIR)")
        print(f"   $ {cmd}")
        for label, wall, info, err in runs:
            if info is None:
                print(f"   {label:<5} wall {wall:7.3f} s   FAILED {err}")
            else:
                print(f"   {label:<5} wall {wall:7.3f} s   in-process {info['seconds']:.3f} s   "
                      f"loglik {info['loglik']:.4f}   n_iter {info['n_iter']}")
        if all(info is not None for _, _, info, _ in runs):
            print(f"   warm / cold wall: {runs[1][1] / runs[0][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
