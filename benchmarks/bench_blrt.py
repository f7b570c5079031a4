"""Benchmark the bootstrap likelihood-ratio test: ``lcb``'s ``blrt`` for 3 against 4 classes on the
12 candidate ratings of ``../shared/data/election.csv`` (1785 rows, missing values).

Usage::

    python benchmarks/bench_blrt.py                  # 500 replicates, 10 restarts (the target)
    python benchmarks/bench_blrt.py --replicates 50  # quick
    python benchmarks/bench_blrt.py --devices 1      # one CPU device (one core for the lanes)

It prints figures and asserts nothing: the fits of 3 and 4 classes to the data (20 restarts),
then ``blrt`` with ``sequential=False`` (every replicate refitted: what "500 replicates" costs)
twice, the first call compiling (the persistent compilation cache may already hold the
programs), and once with the sequential stopping rule. For each: wall seconds, process CPU
seconds, replicates per second and the p-value. The target is under 2 minutes on 2 cores.

``blrt`` shares its EM lanes out over JAX's local devices. On a CPU there is one device unless
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` is set before JAX starts: this script
sets it to ``--devices`` (default: the number of CPU cores) when XLA_FLAGS does not name it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "election.csv"
DEMOGRAPHICS = ("VOTE3", "AGE", "EDUC", "GENDER", "PARTY")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=500)
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument("--devices", type=int, default=os.cpu_count() or 1,
                        help="CPU devices for the lanes (XLA host platform device count)")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"{args.data} not found: the BLRT benchmark needs the shared election data; "
              "skipped")
        return 0
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_force_host_platform_device_count={args.devices}").strip()

    import jax
    import pandas as pd

    import lcbayes as lcb
    from lcbayes.lrt import blrt

    frame = pd.read_csv(args.data)
    data = lcb.Dataset.from_pandas(frame[[c for c in frame.columns if c not in DEMOGRAPHICS]])
    print(f"election: {data.n_rows} rows, {data.n_columns} items, {data.n_patterns} patterns, "
          f"{sum(data.n_missing.values())} missing values; JAX devices: {jax.devices()}")

    def clock(label, call):
        wall, cpu = time.perf_counter(), time.process_time()
        out = call()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        return out, wall

    (fit3, fit4), _ = clock("EM fits of 3 and 4 classes (20 restarts each)", lambda: (
        lcb.em(lcb.latent_class(data, 3), data, restarts=20, seed=0),
        lcb.em(lcb.latent_class(data, 4), data, restarts=20, seed=0)))
    print(f"  logliks {fit3.loglik:.3f}, {fit4.loglik:.3f}")
    for label, sequential in (("first call", False), ("second call", False),
                              ("sequential", True)):
        result, wall = clock(
            f"blrt 3 vs 4, {args.replicates} replicates, {args.restarts} restarts, {label}",
            lambda s=sequential: blrt(data, 4, replicates=args.replicates,
                                      restarts=args.restarts, seed=0, sequential=s,
                                      fits=(fit3, fit4)))
        print(f"  {result.replicates_used} replicates: {result.replicates_used / wall:.2f} "
              f"replicates/s; LR = {result.lr:.2f}, p = {result.p_value:.4f} "
              f"(s.e. {result.p_value_stderr:.4f}); LR_b median "
              f"{float(sorted(result.replicate_lr)[len(result.replicate_lr) // 2]):.2f}, max "
              f"{float(max(result.replicate_lr)):.2f}; {result.n_failed} not converged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
