"""The first minute of a new user, timed (issue "the first minute"): each figure is a fresh
process, as a user starts one.

* ``import lcbayes`` and ``lcbayes --help``;
* the first ``lcb.em`` call in a fresh process (compilation included), cold and warm cache;
* ``lcbayes fit carcinoma.csv --classes 3``, cold and warm compilation cache;
* ``lcbayes compare carcinoma.csv --classes 1-5 --methods bic,vbem,ais``, cold and warm, with
  the AIS standard errors and ``P(K = 3)`` (the target: within 0.05 of 0.88; RJMCMC, the
  allocation sampler and long AIS runs agree on about 0.855);
* ``lcbayes demo``, warm (``--skip-demo`` leaves it out).

Usage::

    python benchmarks/first_minute.py [--data ../shared/data/carcinoma.csv] [--skip-demo]

It prints a table of seconds beside the issue's targets and asserts nothing. A cold run uses an
empty compilation cache folder; a warm run the same folder again.
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

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "carcinoma.csv"

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


def posterior_of_k(result: dict) -> dict[str, float]:
    """``P(K)`` under a uniform prior over the candidates, from their AIS log evidences."""
    rows = {row["name"]: row["ais"] for row in result["rows"]}
    top = max(rows.values())
    weights = {name: math.exp(v - top) for name, v in rows.items()}
    total = sum(weights.values())
    return {name: w / total for name, w in weights.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"no data file {args.data} (give --data)")
    py = sys.executable
    cli = [py, "-m", "lcbayes.cli"]
    path = str(args.data)
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        rows.append(("import lcbayes", timed([py, "-c", "import lcbayes"], cache)[0], "< 0.5"))
        rows.append(("lcbayes --help", timed([*cli, "--help"], cache)[0], ""))
        first = float(timed([py, "-c", FIRST_EM.format(path=path)], cache)[1])
        rows.append(("first lcb.em call, cold cache (in-process)", first, ""))
        first = float(timed([py, "-c", FIRST_EM.format(path=path)], cache)[1])
        rows.append(("first lcb.em call, warm cache (in-process)", first, ""))
        fit = [*cli, "fit", path, "--classes", "3"]
        timed(fit, cache)  # its standard errors and output compile programs of their own
        rows.append(("fit --classes 3, warm", timed(fit, cache)[0], "< 2"))
        compare = [*cli, "compare", path, "--classes", "1-5", "--methods", "bic,vbem,ais",
                   "--json"]
        fresh = Path(tmp) / "fresh"
        seconds, out = timed(compare, fresh)
        rows.append(("compare 1-5 bic,vbem,ais, cold", seconds, "< 15"))
        seconds, out = timed(compare, fresh)
        rows.append(("compare 1-5 bic,vbem,ais, warm", seconds, "< 5"))
        if not args.skip_demo:
            demo = [*cli, "demo", "--out", str(Path(tmp) / "demo")]
            timed(demo, cache)
            rows.append(("demo, warm", timed(demo, cache)[0], "< 20"))
    width = max(len(r[0]) for r in rows)
    print(f"{'step':{width}}  seconds  target")
    for name, seconds, target in rows:
        print(f"{name:{width}}  {seconds:7.2f}  {target}")
    result = json.loads(out)
    print("\nAIS on carcinoma (compare defaults):")
    probabilities = posterior_of_k(result)
    for row in result["rows"]:
        print(f"  {row['name']}: ln p(y) = {row['ais']:.3f} +/- {row['ais_stderr']:.3f} "
              f"(ESS {row['ais_ess']:.1f}), P = {probabilities[row['name']]:.3f}")
    print("  target: every s.e. < 0.15; P(LC(3)) within 0.05 of 0.88")


if __name__ == "__main__":
    main()
