"""AIS benchmark: Beal & Ghahramani's 136 structures at n = 480, and accuracy per second.

Usage::

    python benchmarks/bench_ais.py                      # both parts (136 x 16384 temperatures)
    python benchmarks/bench_ais.py --part beal --temperatures 4096 --batch 34
    python benchmarks/bench_ais.py --part accuracy --repeats 20

**Part 1 (beal).** One AIS chain with ``--temperatures`` (default 16384 = Beal's K) Beal-schedule
temperatures for each of the 136 structures on one n = 480 data set drawn from the paper's true
parameters. Every structure is the fully connected host with tied CPT rows
(:func:`beal.tied_ais.tied_runner`), so one compiled program anneals all of them, ``--batch``
structures vmapped at a time. Prints compile and run seconds (Beal: 55,000 s for one such
sweep on a 1 GHz Pentium III; target here < 300 s), the MH acceptance rate per schedule quarter
(Beal Fig. 6c) and, with ``--vb``, how many AIS estimates fall below the VBEM bound (Table 3).

**Part 2 (accuracy).** Small LC, HLC and DAG problems whose exact evidence is computable:
``--repeats`` independent AIS runs of 16 chains per kernel (``rw``, ``mh``, ``gibbs``) and schedule
length, run as one call of ``16 * repeats`` i.i.d. chains split into groups. Prints the mean
stated stderr, the root mean square error against the exact value, the coverage of the nominal
95% interval, the seconds per run and the efficiency ``RMSE^2 x seconds`` (lower is better; it
is independent of how the compute is split between chains and temperatures).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import lcbayes as lcb
from beal import ghahramani as bg
from beal import study as study_module
from beal.tied_ais import tied_runner
from lcbayes.engines.ais import DEFAULT_CONCENTRATION, KERNELS
from lcbayes.engines.annealing import beal_schedule, weight_statistics
from lcbayes.params import prior_tables


def beal_part(temperatures: int, batch: int, seed: int, with_vb: bool, workers: int,
              blocks: str) -> None:
    data = bg.nested_datasets(seed, sizes=[480])[480]
    codes = bg.parent_codes()
    host = bg.full_structure(data)
    data = host.check_data(data)
    priors = prior_tables(host, "dirichlet")
    tying = bg.batched_pooling(codes)
    pooling = tuple(jnp.asarray(tying[name]) for name in host.nodes)
    c0, c1 = DEFAULT_CONCENTRATION
    run = tied_runner(host, data.patterns, data.counts, priors, beal_schedule(temperatures),
                      (c0, c1 * data.n_observed_rows), blocks=blocks)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(codes))

    @jax.jit
    def study(pooling, keys):
        """Final log weight and acceptances of one chain per structure."""
        def one(args):
            log_w, accepted = run(*args)
            return log_w[-1, 0], accepted[:, 0]
        return jax.lax.map(one, (pooling, keys), batch_size=batch)

    print(f"Part 1: {len(codes)} structures, n = {data.n_rows} ({data.n_patterns} patterns), "
          f"1 chain x {temperatures} temperatures each, MH blocks {blocks!r}, {batch} "
          f"structures vmapped at a time, {workers} worker thread(s)")
    chunks = study_module.chunks((pooling, keys), workers)
    start = time.perf_counter()
    compiled = study.lower(*chunks[0]).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    log_z, accepted = study_module.execute(compiled, (), chunks, len(codes))
    run_s = time.perf_counter() - start
    log_z, accepted = np.asarray(log_z), np.asarray(accepted)
    quarters = [part.mean() for part in np.array_split(accepted, 4, axis=1)]
    true_index = bg.structure_index(bg.TRUE_CODES)
    rank = int((log_z > log_z[true_index]).sum()) + 1
    print(f"  compile {compile_s:.1f} s, run {run_s:.1f} s, total {compile_s + run_s:.1f} s "
          f"(Beal 2006: 55,000 s; target < 300 s)")
    print(f"  {run_s / len(codes) / temperatures * 1e6:.1f} us per structure-temperature "
          "(wall)")
    print("  MH acceptance by schedule quarter: " + ", ".join(f"{q:.3f}" for q in quarters))
    print(f"  true structure: AIS ln Z = {log_z[true_index]:.2f}, rank {rank} of {len(codes)}")
    if with_vb:
        fit = study_module.fit_all(data, seed=seed, restarts=3, methods=("VB",),
                                   workers=workers)
        elbo = fit.to_frame()["VB*"].to_numpy()
        below = float(np.mean(log_z < elbo) * 100)
        print(f"  AIS(1) below the uncorrected VB bound for {below:.1f}% of structures "
              f"(Beal Table 3 at n <= 560: <= 5.7%)")


def _cases():
    """(name, structure, data, exact ln Z) for the small accuracy problems."""
    rng = np.random.default_rng(0)
    out = []

    def dataset(cards, n):
        codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
        return lcb.Dataset(codes=codes, columns=tuple(f"X{j + 1}" for j in range(len(cards))),
                           labels=tuple(tuple(range(c)) for c in cards))

    builders = {
        "LC(2), 4 binary items, n=30": (lambda d: lcb.latent_class(d, 2), [2, 2, 2, 2], 30),
        "HLC 2x2, n=14": (lambda d: lcb.hlc(d, {"H": ["H1", "X3"], "H1": ["X1", "X2"]},
                                            {"H": 2, "H1": 2}), [2, 3, 2], 14),
        "DAG 2 hidden + observed parent, n=16": (
            lambda d: lcb.dag(d, {"X1": ["s1"], "X2": ["s1", "X1"], "X3": ["s2"]},
                              {"s1": 2, "s2": 2}), [2, 2, 2], 16),
    }
    for name, (build, cards, n) in builders.items():
        model = build(dataset(cards, 1))
        data = lcb.simulate(model, lcb.random_params(model, seed=3), n, seed=3)
        structure = build(data)
        out.append((name, structure, data,
                    lcb.exact_evidence(structure, data, max_terms=1e9).log_evidence))
    return out


def accuracy_part(repeats: int, schedules, seed: int) -> None:
    print(f"\nPart 2: accuracy against exact evidence, {repeats} runs of 16 chains each")
    header = (f"{'problem':<38} {'kernel':<6} {'K':>6} {'stderr':>7} {'RMSE':>7} "
              f"{'cover95':>7} {'s/run':>7} {'RMSE^2*s':>9}")
    print(header)
    for name, structure, data, exact in _cases():
        for kernel in KERNELS:
            for temperatures in schedules:
                lcb.ais(structure, data, chains=16 * repeats, temperatures=temperatures,
                        seed=seed, kernel=kernel)  # compile
                start = time.perf_counter()
                res = lcb.ais(structure, data, chains=16 * repeats, temperatures=temperatures,
                              seed=seed + 1, kernel=kernel)
                seconds = (time.perf_counter() - start) / repeats
                groups = [weight_statistics(g) for g in res.log_weights.reshape(repeats, 16)]
                errors = np.array([g["log_evidence"] - exact for g in groups])
                stderrs = np.array([g["stderr"] for g in groups])
                rmse = float(np.sqrt(np.mean(errors ** 2)))
                cover = float(np.mean(np.abs(errors) <= 1.96 * stderrs))
                print(f"{name:<38} {kernel:<6} {temperatures:>6} {stderrs.mean():>7.4f} "
                      f"{rmse:>7.4f} {cover:>7.2f} {seconds:>7.3f} {rmse ** 2 * seconds:>9.2e}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("beal", "accuracy", "both"), default="both")
    parser.add_argument("--temperatures", type=int, default=16384)
    parser.add_argument("--batch", type=int, default=17, help="structures vmapped at a time")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--schedules", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vb", action="store_true", help="also count AIS < VBEM (Table 3)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="threads running chunks of structures concurrently")
    parser.add_argument("--blocks", choices=("node", "joint"), default="node")
    args = parser.parse_args(argv)
    print(f"lcbayes {lcb.__version__}, jax {jax.__version__} ({jax.default_backend()}), "
          f"Python {platform.python_version()}, {platform.machine()}")
    if args.part in ("beal", "both"):
        beal_part(args.temperatures, args.batch, args.seed, args.vb, args.workers, args.blocks)
    if args.part in ("accuracy", "both"):
        accuracy_part(args.repeats, args.schedules, args.seed)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
