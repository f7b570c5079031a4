"""Many-model work on a Dask cluster against the same work in one process: the speed-up, and a
check that the numbers are the same.

Usage::

    python benchmarks/bench_dask.py                      # 2 local workers, both parts
    python benchmarks/bench_dask.py --workers 4 --replicates 200
    python benchmarks/bench_dask.py --scheduler tcp://host:8786   # a running cluster
    python benchmarks/bench_dask.py --quick              # smoke run
    python benchmarks/bench_dask.py --parts ais tree     # AIS groups and learn_tree only

Parts:

1. BLRT: ``lcb.blrt`` of 3 against 4 classes on ``../shared/data/election.csv`` (1785 rows,
   12 items, missing values), ``--replicates`` replicates x 10 restarts, no sequential stop:
   serially, then on the cluster (blocks of 50 replicates are the tasks).
   The serial run shares its lanes over one XLA host device per core
   (``--xla_force_host_platform_device_count``, as ``bench_blrt.py`` does); so does every worker.
2. The Beal & Ghahramani study (``benchmarks/beal_136.py``): 136 structures at
   ``--beal-sizes`` data sizes, serially, then on the cluster (one task per size).
3. AIS chain groups: ``lcb.ais`` of carcinoma LC(3) (``../shared/data/carcinoma.csv``),
   ``--ais-groups`` groups of ``--ais-chains`` chains x ``--ais-temperatures`` temperatures,
   serially, then on the cluster (one task per group).
4. Structure search: ``lcb.learn_tree(method="east")`` on ``--tree-items`` binary items x
   ``--tree-rows`` rows (``benchmarks/learn_tree.py``'s many-items model: groups of 10 under a
   root), serially, then on the cluster (each step's candidates in chunks of
   ``tree_search.CHUNK``, one task per chunk); ``--tree-lc-bound`` adds the latent class
   bound (a task beside the search on the cluster, first when serial).

Each side runs once untimed first (so both have compiled their programs: in this process, and
in every worker), then once timed. Prints seconds, replicates/s or sizes/s, the speed-up and
whether the results are identical. ``--no-malloc-trim`` starts the local workers without
Dask's default ``MALLOC_TRIM_THRESHOLD_=65536``, which fixes glibc's malloc thresholds so that
every large temporary array is mapped and unmapped afresh (measured here: twice the CPU time
per EAST step on a worker as in one process). On 2 cores the serial run already uses both
cores inside XLA, so 2 workers gain little; the speed-up grows with real machines.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

import lcbayes as lcb

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "election.csv"
CARCINOMA = DATA.with_name("carcinoma.csv")
#: election.csv's columns that are not candidate ratings.
DEMOGRAPHICS = ("VOTE3", "AGE", "EDUC", "GENDER", "PARTY")


def timed(fn):
    """``fn()`` and its seconds."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def bench_blrt(args, scheduler: str) -> None:
    frame = pd.read_csv(DATA)
    data = lcb.Dataset.from_pandas(frame[[c for c in frame.columns if c not in DEMOGRAPHICS]])
    kw = {"replicates": args.replicates, "restarts": 10, "seed": 0, "sequential": False}
    fits = (lcb.em(lcb.latent_class(data, 2), data, restarts=20, seed=0),
            lcb.em(lcb.latent_class(data, 3), data, restarts=20, seed=0))
    warm = {**kw, "replicates": min(100, args.replicates)}
    lcb.blrt(data, 3, fits=fits, **warm)
    lcb.blrt(data, 3, fits=fits, scheduler=scheduler, **warm)
    serial, t_serial = timed(lambda: lcb.blrt(data, 3, fits=fits, **kw))
    remote, t_remote = timed(lambda: lcb.blrt(data, 3, fits=fits, scheduler=scheduler, **kw))
    same = np.array_equal(serial.replicate_lr, remote.replicate_lr)
    print(f"BLRT election 3 vs 4 classes, {args.replicates} replicates x 10 restarts:")
    print(f"  serial {t_serial:7.1f} s ({args.replicates / t_serial:.2f} replicates/s)")
    print(f"  dask   {t_remote:7.1f} s ({args.replicates / t_remote:.2f} replicates/s), "
          f"speed-up {t_serial / t_remote:.2f}x; identical replicate LRs: {same}; "
          f"p = {serial.p_value:.3f}")


def bench_beal(args, scheduler: str) -> None:
    from beal_136 import run_study

    sizes = args.beal_sizes
    run_study(sizes, 0, 3, 1)
    run_study(sizes, 0, 3, 1, scheduler=scheduler)
    (serial, _, _), t_serial = timed(lambda: run_study(sizes, 0, 3, 1))
    (remote, _, _), t_remote = timed(lambda: run_study(sizes, 0, 3, 1, scheduler=scheduler))
    same = serial.equals(remote)
    print(f"Beal & Ghahramani study, 136 structures x {len(sizes)} sizes:")
    print(f"  serial {t_serial:7.1f} s; dask {t_remote:7.1f} s, speed-up "
          f"{t_serial / t_remote:.2f}x; identical scores: {same}")


def bench_ais(args, scheduler: str) -> None:
    data = lcb.Dataset.from_csv(CARCINOMA)
    structure = lcb.latent_class(data, 3)
    kw = {"chains": args.ais_chains, "temperatures": args.ais_temperatures, "seed": 0}
    lcb.ais(structure, data, **kw)                                  # compiles here
    lcb.ais(structure, data, groups=2 * args.workers, scheduler=scheduler, **kw)  # and there
    serial, t_serial = timed(lambda: lcb.ais(structure, data, groups=args.ais_groups, **kw))
    remote, t_remote = timed(lambda: lcb.ais(structure, data, groups=args.ais_groups,
                                             scheduler=scheduler, **kw))
    same = (serial.log_evidence == remote.log_evidence
            and np.array_equal(serial.log_weights, remote.log_weights))
    print(f"AIS carcinoma LC(3), {args.ais_groups} groups x {args.ais_chains} chains x "
          f"{args.ais_temperatures} temperatures:")
    print(f"  serial {t_serial:7.1f} s; dask {t_remote:7.1f} s, speed-up "
          f"{t_serial / t_remote:.2f}x; identical weights: {same}; "
          f"ln Z = {serial.log_evidence:.3f} +- {serial.stderr:.3f}")


def bench_tree(args, scheduler: str) -> None:
    from learn_tree import many_items

    _, _, data = many_items(args.tree_items, args.tree_rows, 0)
    kw = {"seed": 0, "method": "east", "lc_bound": args.tree_lc_bound}
    runs = {}
    for name, where in (("serial", {}), ("dask", {"scheduler": scheduler})):
        _, t_first = timed(lambda where=where: lcb.learn_tree(data, **kw, **where))
        again, t_again = timed(lambda where=where: lcb.learn_tree(data, **kw, **where))
        runs[name] = (again, t_first, t_again)
    (serial, s_first, s_again), (remote, r_first, r_again) = runs["serial"], runs["dask"]
    same = ([m.hidden for m in serial.path] == [m.hidden for m in remote.path]
            and serial.fit.loglik == remote.fit.loglik)
    print(f"learn_tree (EAST, lc_bound={args.tree_lc_bound}), {args.tree_items} binary items "
          f"x {args.tree_rows} rows, {len(serial.path)} moves:")
    print(f"  first run (compiling): serial {s_first:7.1f} s; dask {r_first:7.1f} s, "
          f"speed-up {s_first / r_first:.2f}x")
    print(f"  second run:            serial {s_again:7.1f} s; dask {r_again:7.1f} s, "
          f"speed-up {s_again / r_again:.2f}x; identical path and fit: {same}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="local Dask worker processes")
    parser.add_argument("--scheduler", default=None, help="a running scheduler to use instead")
    parser.add_argument("--replicates", type=int, default=500)
    parser.add_argument("--beal-sizes", type=int, nargs="+",
                        default=[10, 80, 160, 640, 1280, 2560, 5120, 10240])
    parser.add_argument("--ais-groups", type=int, default=8)
    parser.add_argument("--ais-chains", type=int, default=16)
    parser.add_argument("--ais-temperatures", type=int, default=4096)
    parser.add_argument("--tree-items", type=int, default=20)
    parser.add_argument("--tree-rows", type=int, default=5000)
    parser.add_argument("--tree-lc-bound", action="store_true",
                        help="learn_tree with its latent class bound")
    parser.add_argument("--no-malloc-trim", action="store_true",
                        help="start the local workers without Dask's MALLOC_TRIM_THRESHOLD_="
                             "65536 (it fixes glibc's malloc thresholds: every large array "
                             "is mapped and unmapped afresh; here it doubled the workers' CPU "
                             "time per EAST step)")
    parser.add_argument("--quick", action="store_true",
                        help="60 replicates, 2 Beal sizes, 4 AIS groups x 512 temperatures, "
                             "a 10-item tree on 1000 rows")
    parser.add_argument("--parts", nargs="+", default=["blrt", "beal", "ais", "tree"],
                        choices=["blrt", "beal", "ais", "tree"])
    args = parser.parse_args(argv)
    if args.quick:
        args.replicates, args.beal_sizes = 60, [10, 160]
        args.ais_groups, args.ais_temperatures = 4, 512
        args.tree_items, args.tree_rows = 10, 1000
    flags = os.environ.get("XLA_FLAGS", "")  # the serial BLRT shares its lanes over the cores
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (f"{flags} --xla_force_host_platform_device_count="
                                   f"{os.cpu_count() or 1}").strip()
    print(f"{platform.machine()}, {os.cpu_count()} CPU core(s), lcbayes {lcb.__version__}")
    cluster = None
    if args.scheduler is None:
        import dask
        from distributed import LocalCluster
        if args.no_malloc_trim:  # workers keep glibc's own (adaptive) malloc thresholds
            dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None})
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
        print(f"LocalCluster of {args.workers} single-threaded worker processes"
              + (" without Dask's MALLOC_TRIM_THRESHOLD_" if args.no_malloc_trim else ""))
    scheduler = args.scheduler or cluster.scheduler_address
    try:
        if "blrt" in args.parts:
            bench_blrt(args, scheduler)
        if "beal" in args.parts:
            bench_beal(args, scheduler)
        if "ais" in args.parts:
            bench_ais(args, scheduler)
        if "tree" in args.parts:
            bench_tree(args, scheduler)
    finally:
        if cluster is not None:
            cluster.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
