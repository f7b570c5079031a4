"""Benchmark EM and VBEM with the data patterns sharded over JAX devices (``devices=``,
:mod:`lcbayes.sharding`): carcinoma (118 rows, 20 patterns, 3 classes) and a simulated latent
class model with 5 classes and 20 binary items (``--rows``, default 10^5).

Usage::

    python benchmarks/bench_sharding.py                # 2 host devices, 10^5 rows
    python benchmarks/bench_sharding.py --rows 20000   # quick

Each fit runs with ``devices=None`` (JAX's default device), ``devices=1`` (a one-device mesh)
and ``devices=2`` (the patterns split in halves), ``tol`` below rounding so that every run
takes ``--max-iter`` SQUAREM cycles; the first call of each includes compiling. The table
gives wall seconds of the first and of a second call, and the largest difference of the
log-likelihood (EM) or bound (VBEM) from ``devices=None``. It asserts nothing.

On a CPU there is one JAX device unless ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
is set before JAX starts; this script sets it to ``--devices`` (default 2) when XLA_FLAGS does
not name it. Host devices share the machine's cores, so on a small CPU two devices are not
faster than one; the point of ``devices=`` is several GPUs.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "carcinoma.csv"


def _timed(engine, *args, **kwargs):
    start = time.perf_counter()
    out = engine(*args, **kwargs)
    return out, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--devices", type=int, default=2,
                        help="host devices (XLA host platform device count)")
    parser.add_argument("--max-iter", type=int, default=50)
    parser.add_argument("--restarts", type=int, default=2)
    args = parser.parse_args()
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_force_host_platform_device_count={args.devices}").strip()

    import jax
    import numpy as np

    import lcbayes as lcb

    template = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 20)))
    lc5 = lcb.latent_class(template, 5)
    cases = {f"LC(5), 20 items, {args.rows} rows":
             (lc5, lcb.simulate(lc5, lcb.random_params(lc5, seed=1), n=args.rows, seed=2))}
    if DATA.is_file():
        carcinoma = lcb.Dataset.from_csv(DATA)
        cases = {"carcinoma LC(3)": (lcb.latent_class(carcinoma, 3), carcinoma), **cases}
    settings = {"tol": 1e-300, "max_iter": args.max_iter, "restarts": args.restarts, "seed": 0}
    print(f"JAX {jax.__version__}, devices: {jax.devices()}; {args.restarts} restarts x "
          f"{args.max_iter} SQUAREM cycles per fit")
    header = (f"{'data':44} {'engine':6} {'devices':>7} {'first s':>8} {'second s':>9} "
              f"{'iterations':>10} {'|diff|':>9}")
    print(header)
    print("-" * len(header))
    for name, (structure, data) in cases.items():
        for engine, value in ((lcb.em, "loglik"), (lcb.vbem, "elbo")):
            base = None
            for devices in (None, 1, args.devices):
                _, first = _timed(engine, structure, data, **settings, devices=devices)
                fit, second = _timed(engine, structure, data, **settings, devices=devices)
                base = getattr(fit, value) if base is None else base
                print(f"{name + f' ({data.n_patterns} patterns)':44} {engine.__name__:6} "
                      f"{devices!s:>7} {first:8.2f} {second:9.2f} "
                      f"{int(fit.restart_n_iter.sum()):10d} "
                      f"{abs(getattr(fit, value) - base):9.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
