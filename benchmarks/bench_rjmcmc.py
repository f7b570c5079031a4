"""Reversible-jump MCMC and allocation sampler benchmark: sweeps per second and ESS of K per
second.

Usage::

    python benchmarks/bench_rjmcmc.py                  # N = 1000 and 10000, 4 x 2000 draws
    python benchmarks/bench_rjmcmc.py --quick          # smoke run: N = 1000, 4 x 200 draws
    python benchmarks/bench_rjmcmc.py --sizes 1000 --draws 5000 --warmup 1000
    python benchmarks/bench_rjmcmc.py --data ../shared/data/carcinoma.csv --max-classes 10 \
        --draws 5000 --warmup 1000                     # a CSV file instead of simulated rows
    python benchmarks/bench_rjmcmc.py --sampler allocation --heats 1 2 4 --jumps 1 8

``--sampler`` picks :func:`lcbayes.rjmcmc`, :func:`lcbayes.allocation_sampler` (the collapsed
allocation sampler with ``--heats`` tempered replicas per chain and ``--jumps`` ejection /
absorption proposals per sweep; one row per pair) or both (default).

Data: ``N`` rows of 8 binary items simulated from a 3-class latent class model
(:data:`SHARES`, :data:`PROFILES`; the third class differs from the others on half of the
items only, so the posterior of ``K`` is not a single point). The samplers run
with ``max_classes = 10`` (``--max-classes``), 4 chains (vmapped), a uniform prior on
``K`` and Dirichlet(1) priors.

Per ``N`` it runs the sampler twice with the same shapes (``draws`` is a static argument, so
both calls use one compiled program) and different seeds. The first call's extra time over the
second is reported as *compile*; the second is the *run*. Figures:

* sweeps/s: ``chains x (warmup + draws x thin)`` sweeps of the second call over its seconds
  (all chains together; per chain divide by the number of chains; an allocation sweep updates
  every heated replica);
* ESS(k)/s: ArviZ's bulk effective sample size of the trace of ``k`` (all chains,
  ``az.ess``) over the same seconds (the warm-up included in the seconds, not in the ESS);
* the posterior of ``K`` and the acceptance rate of every move type, for context.

The persistent compilation cache is left off so that *compile* is a real compile. Nothing is
asserted; the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import arviz as az
import jax
import numpy as np

import lcbayes as lcb
from lcbayes.cache import disable_compilation_cache
from lcbayes.samplers.allocation import JUMPS

#: True class shares of the simulated data.
SHARES = (0.5, 0.3, 0.2)
#: ``P(item = 1 | class)`` for the 8 binary items (rows: classes).
PROFILES = (
    (0.85, 0.85, 0.85, 0.85, 0.80, 0.80, 0.80, 0.80),
    (0.15, 0.15, 0.15, 0.15, 0.20, 0.20, 0.20, 0.20),
    (0.85, 0.85, 0.85, 0.85, 0.25, 0.25, 0.25, 0.25),
)
MAX_CLASSES = 10
CHAINS = 4


def simulated(n: int, seed: int) -> lcb.Dataset:
    """``n`` rows of 8 binary items X1..X8 from the model of :data:`SHARES`, :data:`PROFILES`."""
    columns = [f"X{j + 1}" for j in range(len(PROFILES[0]))]
    template = lcb.Dataset.from_codes(np.array([[0] * len(columns), [1] * len(columns)]),
                                      columns=columns, labels=[(0, 1)] * len(columns))
    truth = lcb.latent_class(template, len(SHARES))
    profiles = np.asarray(PROFILES)
    params = {"class": np.asarray(SHARES)}
    for j, column in enumerate(columns):
        params[column] = np.stack([1.0 - profiles[:, j], profiles[:, j]], axis=1)
    return lcb.simulate(truth, params, n=n, seed=seed)


def bench(data: lcb.Dataset, sampler: str, heats: int, jumps: int, max_classes: int,
          draws: int, warmup: int, thin: int, seed: int) -> dict:
    settings = dict(max_classes=max_classes, draws=draws, warmup=warmup, chains=CHAINS,
                    thin=thin)
    if sampler == "allocation":
        run_sampler = lcb.allocation_sampler
        settings.update(heats=heats, jumps=jumps)
    else:
        run_sampler = lcb.rjmcmc
    start = time.perf_counter()
    run_sampler(data, seed=seed, **settings)
    first = time.perf_counter() - start
    start = time.perf_counter()
    result = run_sampler(data, seed=seed + 1, **settings)
    run = time.perf_counter() - start
    sweeps = CHAINS * (warmup + draws * thin)
    ess_k = float(az.ess(result.to_inference_data(), var_names=["k"])["k"])
    name = sampler if sampler == "rjmcmc" else f"alloc h={heats} j={jumps}"
    return {"sampler": name, "n": data.n_rows, "patterns": data.n_patterns,
            "compile_s": first - run, "run_s": run,
            "sweeps": sweeps, "sweeps_per_s": sweeps / run, "ess_k": ess_k,
            "ess_k_per_s": ess_k / run,
            "posterior_k": {k: p for k, p in result.posterior_k.items() if p > 0},
            "acceptance": result.acceptance}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: N = 1000 only, 200 draws after 100 warm-up sweeps")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="numbers of rows (default 1000 10000)")
    parser.add_argument("--draws", type=int, default=None, help="kept draws per chain "
                                                                "(default 2000)")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up sweeps "
                                                                 "(default 500)")
    parser.add_argument("--thin", type=int, default=1, help="keep every THIN-th sweep")
    parser.add_argument("--seed", type=int, default=0, help="data and sampler seed")
    parser.add_argument("--sampler", choices=["rjmcmc", "allocation", "both"], default="both")
    parser.add_argument("--heats", type=int, nargs="+", default=[4],
                        help="tempered replicas per chain of the allocation sampler (default 4)")
    parser.add_argument("--jumps", type=int, nargs="+", default=[JUMPS],
                        help="ejection / absorption proposals per sweep of the allocation "
                             f"sampler (default {JUMPS})")
    parser.add_argument("--max-classes", type=int, default=MAX_CLASSES)
    parser.add_argument("--data", help="a CSV file to time instead of the simulated sets")
    args = parser.parse_args(argv)
    disable_compilation_cache()  # lcbayes turned it on when imported; *compile* is real
    sizes = args.sizes or ([1000] if args.quick else [1000, 10_000])
    sets = ([lcb.Dataset.from_csv(args.data)] if args.data
            else [simulated(n, args.seed) for n in sizes])
    samplers = [("rjmcmc", 0, 0)] if args.sampler != "allocation" else []
    if args.sampler != "rjmcmc":
        samplers += [("allocation", h, j) for h in args.heats for j in args.jumps]
    draws = args.draws or (200 if args.quick else 2000)
    warmup = args.warmup if args.warmup is not None else (100 if args.quick else 500)

    print(f"lcbayes {lcb.__version__}, JAX {jax.__version__} on {jax.default_backend()} "
          f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)")
    what = (args.data if args.data
            else f"8 binary items, 3 true classes {SHARES}")
    print(f"{what}: max_classes = {args.max_classes}, {CHAINS} chains x {draws} draws after "
          f"{warmup} warm-up sweeps (thin {args.thin})")
    header = (f"{'sampler':<16} {'N':>6} {'patterns':>8} {'compile s':>9} {'run s':>7} "
              f"{'sweeps/s':>9} {'ESS(k)':>7} {'ESS(k)/s':>9}")
    print(header)
    results = []
    for data in sets:
        for sampler, heats, jumps in samplers:
            r = bench(data, sampler, heats, jumps, args.max_classes, draws, warmup, args.thin,
                      args.seed)
            results.append(r)
            print(f"{r['sampler']:<16} {r['n']:>6} {r['patterns']:>8} {r['compile_s']:>9.1f} "
                  f"{r['run_s']:>7.2f} {r['sweeps_per_s']:>9.0f} {r['ess_k']:>7.1f} "
                  f"{r['ess_k_per_s']:>9.2f}", flush=True)
    print("\nposterior of K (second run) and acceptance rates per move type:")
    for r in results:
        post = ", ".join(f"{k}: {p:.3f}" for k, p in r["posterior_k"].items())
        acc = ", ".join(f"{m} {'-' if a is None else f'{a:.4f}'}"
                        for m, a in r["acceptance"].items())
        print(f"  {r['sampler']}, N = {r['n']}: p(K | y) {post}; acceptance {acc}")


if __name__ == "__main__":
    main()
