"""The first minute of a new user, timed (issue "the first minute"): each figure is a fresh
process, as a user starts one, and every timing the README states is here.

* ``import lcbayes`` and ``lcbayes --help``;
* the first ``lcb.em`` call in a fresh process (compilation included), cold and warm cache;
* ``lcbayes fit carcinoma.csv --n-classes 3``, warm compilation cache;
* ``lcbayes compare carcinoma.csv --n-classes 1-5 --methods bic,vbem,ais``, cold and warm, with
  the AIS standard errors and ``P(K = 3)``;
* ``lcbayes compare carcinoma.csv --n-classes 1-5`` (the default methods: the SMC route), warm,
  with ``P(K = 3)`` (target 0.84-0.88: RJMCMC, the allocation sampler and long AIS runs agree
  on about 0.855), and the same comparison repeated inside one Python process;
* ``lcbayes demo``, warm (``--skip-demo`` leaves it out).

Usage::

    python benchmarks/first_minute.py [--data FILE.csv] [--repeat 3] [--skip-demo]

The data default to carcinoma as ``lcb.datasets`` ships it. Every warm step runs ``--repeat``
times and prints the fastest and slowest. It prints a table of seconds beside the targets and
asserts nothing. A cold run uses an empty compilation cache folder; a warm run the same folder
again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IN_PROCESS_COMPARE = """
import time
import lcbayes as lcb
data = lcb.Dataset.from_csv({path!r})
lcb.compare(data, n_classes=range(1, 6), seed=0)
seconds = []
for _ in range({repeat}):
    t = time.perf_counter()
    lcb.compare(data, n_classes=range(1, 6), seed=0)
    seconds.append(time.perf_counter() - t)
print(min(seconds), max(seconds))
"""

FIRST_EM = """
import time; t = time.perf_counter()
import lcbayes as lcb
data = lcb.Dataset.from_csv({path!r})
lcb.em(lcb.latent_class(data, 3), data, seed=0)
print(time.perf_counter() - t)
"""


def timed(argv: list[str], cache: Path, **kwargs) -> tuple[float, str]:
    """Seconds and stdout of ``argv`` in a fresh process with the cache folder ``cache``."""
    env = {**os.environ, "LCBAYES_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, **kwargs)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr}")
    return seconds, proc.stdout


def ais_posterior(result: dict) -> dict[str, float]:
    """``P(K)`` under a uniform prior over the candidates, from their AIS log evidences."""
    rows = {row["name"]: row["ais"] for row in result["rows"]}
    top = max(rows.values())
    weights = {name: math.exp(v - top) for name, v in rows.items()}
    total = sum(weights.values())
    return {name: w / total for name, w in weights.items()}


def spread(values: list[float]) -> str:
    """``min-max`` seconds."""
    return f"{min(values):.2f}-{max(values):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="a CSV file (default: carcinoma from lcb.datasets)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of every warm step")
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    py = sys.executable
    cli = [py, "-m", "lcbayes.cli"]
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            import lcbayes as lcb

            args.data = lcb.datasets.write_csv("carcinoma", Path(tmp) / "carcinoma.csv")
        if not args.data.is_file():
            raise SystemExit(f"no data file {args.data} (give --data)")
        path = str(args.data)
        cache = Path(tmp) / "cache"

        def warm(name: str, argv: list[str], target: str) -> str:
            runs = [timed(argv, cache) for _ in range(args.repeat)]
            rows.append((name, spread([r[0] for r in runs]), target))
            return runs[-1][1]

        warm("import lcbayes", [py, "-c", "import lcbayes"], "< 0.5")
        warm("lcbayes --help", [*cli, "--help"], "")
        first = float(timed([py, "-c", FIRST_EM.format(path=path)], cache)[1])
        rows.append(("first lcb.em call, cold cache (in-process)", f"{first:.2f}", ""))
        firsts = [float(timed([py, "-c", FIRST_EM.format(path=path)], cache)[1])
                  for _ in range(args.repeat)]
        rows.append(("first lcb.em call, warm cache (in-process)", spread(firsts), ""))
        fit = [*cli, "fit", path, "--n-classes", "3"]
        timed(fit, cache)  # its standard errors and output compile programs of their own
        warm("fit --n-classes 3, warm", fit, "< 2")
        ais = [*cli, "compare", path, "--n-classes", "1-5", "--methods", "bic,vbem,ais", "--json"]
        fresh = Path(tmp) / "fresh"
        rows.append(("compare 1-5 bic,vbem,ais, cold", f"{timed(ais, fresh)[0]:.2f}", "< 15"))
        runs = [timed(ais, fresh) for _ in range(args.repeat)]
        rows.append(("compare 1-5 bic,vbem,ais, warm", spread([r[0] for r in runs]), "< 5"))
        ais_out = json.loads(runs[-1][1])
        default = [*cli, "compare", path, "--n-classes", "1-5", "--json"]
        timed(default, cache)
        default_out = json.loads(warm("compare 1-5 (default: SMC route), warm", default,
                                      "< 5"))
        script = IN_PROCESS_COMPARE.format(path=path, repeat=args.repeat)
        low, high = timed([py, "-c", script], cache)[1].split()
        rows.append(("the same, repeated in one process", f"{float(low):.2f}-{float(high):.2f}",
                     ""))
        if not args.skip_demo:
            demo = [*cli, "demo", "--out", str(Path(tmp) / "demo")]
            timed(demo, cache)
            warm("demo, warm", demo, "")
    width = max(len(r[0]) for r in rows)
    print(f"{'step':{width}}  {'seconds':>11}  target")
    for name, seconds, target in rows:
        print(f"{name:{width}}  {seconds:>11}  {target}")
    print("\nAIS route (--methods bic,vbem,ais):")
    probabilities = ais_posterior(ais_out)
    for row in ais_out["rows"]:
        print(f"  {row['name']}: ln p(y) = {row['ais']:.3f} +/- {row['ais_stderr']:.3f} "
              f"(ESS {row['ais_ess']:.1f}), P = {probabilities[row['name']]:.3f}")
    print("\nDefault route (SMC with bridge sampling):")
    for row in default_out["rows"]:
        print(f"  {row['name']}: ln p(y) = {row['log_evidence']:.3f} +/- "
              f"{row['log_evidence_stderr']:.3f} ({row['evidence_method']}), "
              f"P = {row['posterior_prob']:.3f}")
    print("  target: P(LC(3)) 0.84-0.88")


if __name__ == "__main__":
    main()
