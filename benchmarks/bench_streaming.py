"""Streaming EM on 10^5 .. 10^7 simulated rows: scan speed, fit speed, passes and peak memory.

20 binary items, 5 latent classes. Every size is written to a CSV file in chunks of 10^6 rows
(never the whole data in memory; chunk ``k`` is drawn from seed ``(seed, k)``, so the first
10^6 rows of every file are the same rows), then fitted in a fresh Python process of its own,
so that its peak resident memory (``ru_maxrss``) belongs to that size alone:

* ``lcb.scan_file`` (one parse of the CSV: labels found while each chunk is compressed to
  its distinct patterns, which are then coded and merged into blocks);
* ``lcb.stream_em`` from the same seed, without and with ``warm_start="stepwise"`` (one
  stepwise EM pass first), each every restart in the same passes;
* ``lcb.stepwise_em`` alone (one pass, one start).

The acceptance check fits the 10^6-row file (the first 10^6 rows of the largest) in memory
with ``lcb.em`` on a Dataset and streamed from the file: the log-likelihoods must agree to
1e-6 relative.

Command (writes ``reports/streaming.md``; about 6 minutes on 2 shared cores, most of it the
10^7 size, and 0.4 GB of temporary disk)::

    python benchmarks/bench_streaming.py --sizes 100000 1000000 10000000
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ITEMS, CLASSES, CHUNK, RESTARTS, SEED = 20, 5, 10**6, 2, 0
BLOCK_PATTERNS = 2**18  # several blocks (spilled to .npz files) from 10^6 rows on
REPORT = Path(__file__).resolve().parents[1] / "reports" / "streaming.md"


def truth(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Class shares and ``P(item = 1 | class)``, ``(CLASSES,)`` and ``(ITEMS, CLASSES)``."""
    rng = np.random.default_rng(seed)
    shares = rng.dirichlet(np.full(CLASSES, 5.0))
    return shares, rng.choice([0.15, 0.5, 0.85], size=(ITEMS, CLASSES))


def write_csv(path: Path, n_rows: int) -> None:
    """``n_rows`` simulated rows written ``CHUNK`` at a time as ``0``/``1`` text."""
    shares, ones = truth()
    with path.open("wb") as out:
        out.write((",".join(f"y{j + 1}" for j in range(ITEMS)) + "\n").encode())
        for k, start in enumerate(range(0, n_rows, CHUNK)):
            rng = np.random.default_rng([SEED, k])
            n = min(CHUNK, n_rows - start)
            cls = rng.choice(CLASSES, size=n, p=shares)
            codes = (rng.random((n, ITEMS)) < ones.T[cls]).astype(np.uint8)
            text = np.full((n, 2 * ITEMS), ord(","), dtype=np.uint8)
            text[:, 0::2] = codes + ord("0")
            text[:, -1] = ord("\n")
            out.write(text.tobytes())


def structure():
    import lcbayes as lcb

    columns = [f"y{j + 1}" for j in range(ITEMS)]
    data = lcb.Dataset.from_codes(np.array([[0] * ITEMS, [1] * ITEMS]), columns=columns)
    return lcb.latent_class(data, CLASSES)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def fit_one(path: str, n_rows: int) -> dict:
    """One size, in this (fresh) process: scan, then stream_em cold and warm-started."""
    import lcbayes as lcb

    out = {"rows": n_rows}
    t = time.perf_counter()
    blocks = lcb.scan_file(path, chunk_rows=CHUNK, block_patterns=BLOCK_PATTERNS)
    out["scan_s"] = time.perf_counter() - t
    out["blocks"], out["peak_scan_mib"] = blocks.n_blocks, peak_mib()
    s = structure()
    for warm in (None, "stepwise"):
        t = time.perf_counter()
        fit = lcb.stream_em(s, blocks, restarts=RESTARTS, seed=SEED, warm_start=warm)
        key = warm or "cold"
        out[key] = {"seconds": time.perf_counter() - t, "passes": fit.n_passes,
                    "n_iter": fit.n_iter, "loglik": fit.loglik, "converged": fit.converged}
    t = time.perf_counter()
    alone = lcb.stepwise_em(s, blocks, seed=SEED)
    out["stepwise_alone"] = {"seconds": time.perf_counter() - t, "passes": alone.n_passes,
                             "loglik": alone.loglik}
    out["peak_mib"] = peak_mib()
    return out


def in_memory(path: str) -> dict:
    """The 10^6-row check: lcb.em on the file as a Dataset."""
    import lcbayes as lcb

    t = time.perf_counter()
    data = lcb.Dataset.from_csv(path)
    fit = lcb.em(structure(), data, restarts=RESTARTS, seed=SEED, algorithm="em")
    return {"seconds": time.perf_counter() - t, "loglik": fit.loglik, "n_iter": fit.n_iter,
            "peak_mib": peak_mib()}


def in_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(results: list[dict], check: dict, command: str, minutes: float) -> str:
    lines = [
        "# Streaming EM: 10^5 .. 10^7 rows from a CSV file", "",
        f"Command: `{command}` (`benchmarks/bench_streaming.py`, {minutes:.1f} minutes; not a "
        "part of `make_reports.py`: it writes 0.4 GB of temporary CSV).", "",
        f"Data: {ITEMS} binary items, {CLASSES} latent classes, simulated and written in chunks "
        f"of {CHUNK:,} rows. Model: the true latent class model, ML, {RESTARTS} restarts "
        f"(seed {SEED}), tol 1e-8 per row; `scan_file` blocks of at most "
        f"{BLOCK_PATTERNS:,} patterns. EM row-passes/s is rows times passes over seconds; "
        "\"its loglik below\" is stepwise EM's relative shortfall. "
        f"Machine: {platform.machine()}, 2 CPU cores shared "
        "with other agents' jobs while this ran, so the times are rough; they include JAX's "
        "compilation (or loading it from the persistent compilation cache). Each size ran in "
        "a fresh process; peak RSS is that process's `ru_maxrss` (scan and every fit).", "",
        "| rows | blocks | scan s | scan rows/s | EM: passes | EM s | EM row-passes/s | "
        "stepwise+EM: passes | stepwise+EM s | loglik | stepwise alone: s | its loglik "
        "below | peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cold, warm, alone = r["cold"], r["stepwise"], r["stepwise_alone"]
        lines.append(
            f"| {r['rows']:,} | {r['blocks']} | {r['scan_s']:.1f} | "
            f"{r['rows'] / r['scan_s']:,.0f} | {cold['passes']} | {cold['seconds']:.1f} | "
            f"{r['rows'] * cold['passes'] / cold['seconds']:,.0f} | {warm['passes']} | "
            f"{warm['seconds']:.1f} | {warm['loglik']:.4f} | {alone['seconds']:.1f} | "
            f"{(warm['loglik'] - alone['loglik']) / abs(warm['loglik']):.1e} | "
            f"{r['peak_mib']:.0f} |")
    gap = max(abs(r["cold"]["loglik"] - r["stepwise"]["loglik"]) for r in results)
    largest = results[-1]
    lines += ["", f"Peak memory at {largest['rows']:,} rows: {largest['peak_mib']:.0f} MiB "
              f"({'under' if largest['peak_mib'] < 2048 else 'NOT under'} 2 GiB).", "",
              "Every fit converged: " + ", ".join(
        f"{r['rows']:,}: {r['cold']['converged']}/{r['stepwise']['converged']}"
        for r in results) + " (cold / warm-started); cold and warm-started log-likelihoods "
        f"differ by at most {gap:.2e}.", ""]
    if check:
        rel = abs(check["memory"]["loglik"] - check["stream"]) / abs(check["memory"]["loglik"])
        lines += [
            "## The 10^6-row check", "",
            f"The first 10^6 rows fitted in memory (`lcb.em` on a Dataset, plain EM, "
            f"{check['memory']['seconds']:.1f} s, peak RSS {check['memory']['peak_mib']:.0f} MiB) "
            f"and streamed from the file: log-likelihood {check['memory']['loglik']:.6f} against "
            f"{check['stream']:.6f}, relative difference {rel:.1e} "
            f"({'within' if rel < 1e-6 else 'NOT within'} 1e-6).", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**5, 10**6, 10**7])
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--fit", nargs=2, metavar=("CSV", "ROWS"), help=argparse.SUPPRESS)
    parser.add_argument("--memory", metavar="CSV", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fit:
        print(json.dumps(fit_one(args.fit[0], int(args.fit[1]))))
        return
    if args.memory:
        print(json.dumps(in_memory(args.memory)))
        return
    results, check, started = [], {}, time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for n in sorted(args.sizes):
            path = Path(folder) / f"rows{n}.csv"
            write_csv(path, n)
            results.append(in_child("--fit", str(path), str(n)))
            print(json.dumps(results[-1]), flush=True)
            if n == 10**6:
                check = {"memory": in_child("--memory", str(path)),
                         "stream": results[-1]["cold"]["loglik"]}
                print(json.dumps(check), flush=True)
            path.unlink()
    command = "python benchmarks/bench_streaming.py --sizes " + " ".join(map(str, args.sizes))
    minutes = (time.perf_counter() - started) / 60
    args.out.write_text(report(results, check, command, minutes) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
