"""Beal & Ghahramani (2006) §4.1: rank of the true structure among 136, per data size and method.

Usage::

    python benchmarks/beal_136.py                  # full study: 20 sizes, writes reports/
    python benchmarks/beal_136.py --quick          # smoke test: 3 sizes, prints only
    python benchmarks/beal_136.py --sizes 10 480 --restarts 1 --out /tmp/beal

Every structure is scored at every size with MAP, BIC, BICp, CS and VB (3 restarts, shared
prior-drawn starts), with and without the alias correction ``ln S``, by
:func:`beal.study.fit_all`: one compiled EM program and one compiled VBEM
program for the whole study (the data patterns of every size are padded to a common count).
The data are one fresh draw (``--seed``) of nested data sets from the paper's true parameters,
so the ranks differ from the paper's Table 2, whose data set is unpublished.

Prints per size the seconds of EM and VBEM and the ranks, then the wall time of the whole study
(data, compilation, both methods, report) and its parts. Writes to ``--out``:

* ``beal-ghahramani-table2.md``: our ranks beside the paper's Table 2, the ranks of the
  alternative reading of Fig. 1 (``ALTERNATIVE_TRUE_CODES``), convergence counts and timings;
* ``beal-ghahramani-fig2.png``: score against the number of parameters ``d`` for MAP, BIC,
  BICp, CS and VB at n = 10, 160, 640, 1280, 2560, 5120, 10240 (the paper's Fig. 2);
* ``beal-ghahramani-scores.csv``: every score of every structure at every size.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from beal import ghahramani as bg
from beal import study as beal_study
from lcbayes.execution import executor as open_executor

#: Score columns of the study, in the paper's Table 2 order (``*``: no alias correction).
COLUMNS = ("MAP", "BIC*", "BICp*", "CS*", "VB*", "BIC", "BICp", "CS", "VB")
#: Rows of the paper's Fig. 2; the panels show MAP and the alias-corrected scores.
FIG2_SIZES = (10, 160, 640, 1280, 2560, 5120, 10240)
FIG2_COLUMNS = ("MAP", "BIC", "BICp", "CS", "VB")
QUICK_SIZES = (10, 160, 640)
REPO = Path(__file__).resolve().parents[1]


def fit_size(n: int, datasets: dict, seed: int, restarts: int, n_patterns: int,
             workers: int) -> tuple[pd.DataFrame, dict, dict]:
    """Every structure at one size (a task of :mod:`lcbayes.execution`: its numbers depend
    on the size, the seed and the padding alone): scores, diagnostics, seconds."""
    data = datasets[n]
    fit = beal_study.fit_all(data, seed=seed, restarts=restarts, n_patterns=n_patterns,
                             workers=workers)
    frame = fit.to_frame()
    frame.insert(0, "n", n)
    diagnostics = {
        "n": n, "patterns": data.n_patterns,
        "EM s": round(fit.seconds["em"], 2), "VB s": round(fit.seconds["vb"], 2),
        "EM restarts not converged": int((~fit.em_converged).sum()),
        "VB restarts at the cap": int((~fit.vb_converged).sum()),
        "VB iterations (all restarts)": int(fit.vb_n_iter.sum()),
        "VB* < CS*": int((frame["VB*"] < frame["CS*"]).sum()),
        "top VB structure": str(frame.loc[frame["VB"].idxmax(), "codes"]),
    }
    return frame, diagnostics, dict(fit.seconds)


def run_study(sizes, seed: int, restarts: int, workers: int, executor=None, scheduler=None,
              dask_workers=None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Score every structure at every size. Returns the long table of scores (one row per size
    and structure), per-size diagnostics and the summed timings. ``executor``, ``scheduler``,
    ``dask_workers``: where the sizes run (:func:`lcbayes.execution.executor`; one task per
    size, the same numbers anywhere)."""
    start = time.perf_counter()
    # prefixes of one draw of the largest paper size, so any --sizes gives the same data
    datasets = bg.nested_datasets(seed, sizes=sorted(set(sizes) | {bg.SIZES[-1]}))
    datasets = {n: datasets[n] for n in sizes}
    n_patterns = max(d.n_patterns for d in datasets.values())
    times = {"data": time.perf_counter() - start, "compile": 0.0, "em": 0.0, "vb": 0.0}
    true_index = bg.structure_index(bg.TRUE_CODES)
    frames, diagnostics = [], []
    print(f"{len(sizes)} sizes, 136 structures, {restarts} restarts, seed {seed}, patterns "
          f"padded to {n_patterns}, {workers} worker(s)")
    print(f"{'n':>6} {'EM s':>6} {'VB s':>6} {'compile s':>9}  rank of the true structure: "
          + " ".join(f"{c:>5}" for c in COLUMNS))
    shared = {"datasets": datasets, "seed": seed, "restarts": restarts,
              "n_patterns": n_patterns, "workers": workers}
    with open_executor(executor, scheduler, dask_workers) as runner:
        outcomes = runner.map(fit_size, list(datasets), shared, desc="sizes")
    for frame, diagnostic, seconds in outcomes:
        for key, value in seconds.items():
            times[key] += value
        frames.append(frame)
        diagnostics.append(diagnostic)
        ranks = [bg.rank_of(frame[c].to_numpy(), true_index) for c in COLUMNS]
        print(f"{diagnostic['n']:>6} {seconds['em']:>6.2f} {seconds['vb']:>6.2f} "
              f"{seconds['compile']:>9.2f}"
              f"  {'':27}" + " ".join(f"{r:>5}" for r in ranks), flush=True)
    return pd.concat(frames, ignore_index=True), pd.DataFrame(diagnostics), times


def rank_table(scores: pd.DataFrame, codes) -> pd.DataFrame:
    """Rank (pessimistic ties) of structure ``codes`` per size and score column."""
    index = bg.structure_index(codes)
    rows = {}
    for n, group in scores.groupby("n", sort=True):
        rows[n] = {c: bg.rank_of(group[c].to_numpy(), index) for c in COLUMNS}
    return pd.DataFrame.from_dict(rows, orient="index")


def _markdown(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---:" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def write_report(path: Path, scores: pd.DataFrame, diagnostics: pd.DataFrame,
                 times: dict, args) -> None:
    ours = rank_table(scores, bg.TRUE_CODES)
    alternative = rank_table(scores, bg.ALTERNATIVE_TRUE_CODES)
    side = pd.DataFrame({"n": ours.index})
    for c in COLUMNS:
        side[c] = [f"{ours.loc[n, c]} ({bg.PAPER_TABLE2[n][c]})" if n in bg.PAPER_TABLE2
                   else str(ours.loc[n, c]) for n in ours.index]
    side["AIS(26)"] = [f"- ({bg.PAPER_TABLE2[n]['AIS(26)']})" if n in bg.PAPER_TABLE2 else "-"
                       for n in ours.index]
    alt = alternative.reset_index().rename(columns={"index": "n"})
    total = times["total"]
    text = f"""# Beal & Ghahramani (2006) Table 2: rank of the true structure among 136

Written by `benchmarks/beal_136.py` (seed {args.seed}, {args.restarts} restarts, tolerance
1e-6 per datum, at most 1000 iterations). Every structure is
scored at every size by `benchmarks/beal/study.py` (`fit_all`): MAP EM in the softmax basis
(SQUAREM-accelerated) and VBEM from the same prior draws, the best of the restarts per score.
Rank 1 is the highest score; a structure tied with the true one ranks above it. `*` marks
scores without the alias correction `ln S` (rule "children"); MAP is never corrected.

**Our data are a fresh draw (seed {args.seed}) from the paper's true parameters**, not the
paper's (unpublished) data set, so the ranks differ from the paper's; compare the trends. The
true structure is read as `{bg.TRUE_CODES}` (s1 -> y1, s2 -> y4); the alternative reading of
Fig. 1 is below.

## Rank of the true structure `{bg.TRUE_CODES}`: ours (paper)

{_markdown(side)}

The paper's AIS(26) column is shown for reference; AIS is not run here.

## Rank of the alternative reading `{bg.ALTERNATIVE_TRUE_CODES}` (y1 and y4 share s1)

{_markdown(alt)}

## Per size

VB and CS are run separately (as in the paper), so VB* < CS* can happen (the paper: 173 of
288,320 scores). Restart counts are out of {136 * args.restarts}; seconds exclude compilation.

{_markdown(diagnostics)}

## Timing

Whole study {total:.1f} s wall on {os.cpu_count()} CPU core(s) shared with other jobs
({platform.machine()}, {args.workers} worker thread(s)): data {times['data']:.1f} s,
compilation of the EM and VBEM programs {times['compile']:.1f} s (once, in parallel threads),
EM runs {times['em']:.1f} s, VBEM runs {times['vb']:.1f} s, report {times['report']:.1f} s.

Figure: `beal-ghahramani-fig2.png`; every score: `beal-ghahramani-scores.csv`.
"""
    path.write_text(text)


def write_figure(path: Path, scores: pd.DataFrame) -> None:
    sizes = [n for n in FIG2_SIZES if n in set(scores["n"])]
    fig, axes = plt.subplots(len(sizes), len(FIG2_COLUMNS), figsize=(13, 2.1 * len(sizes)),
                             sharex=True, squeeze=False)
    for r, (row, n) in enumerate(zip(axes, sizes, strict=True)):
        group = scores[scores["n"] == n]
        truth = group["codes"] == bg.canonical(bg.TRUE_CODES)
        for ax, column in zip(row, FIG2_COLUMNS, strict=True):
            ax.scatter(group["d"], group[column], s=6, color="0.3")
            ax.scatter(group.loc[truth, "d"], group.loc[truth, column], s=30, color="C3",
                       marker="x", label="true structure")
            ax.tick_params(labelsize=7)
            if r == 0:
                ax.set_title(column)
            if column == FIG2_COLUMNS[0]:
                ax.set_ylabel(f"n = {n}", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("d (parameters)")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Score against d (BIC, BICp, CS, VB alias-corrected), cf. Beal & Ghahramani "
                 "Fig. 2", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help=f"data sizes (default the paper's 20: {bg.SIZES[0]} .. "
                             f"{bg.SIZES[-1]})")
    parser.add_argument("--seed", type=int, default=0, help="data and restart seed")
    parser.add_argument("--restarts", type=int, default=3, help="prior draws per structure")
    parser.add_argument("--workers", type=int, default=2,
                        help="threads, each scoring an equal share of the structures")
    parser.add_argument("--scheduler", default=None,
                        help="run the sizes on the Dask cluster of this scheduler address")
    parser.add_argument("--dask-workers", type=int, default=None,
                        help="run the sizes on a local Dask cluster of this many processes")
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {QUICK_SIZES}, no report unless --out is given")
    parser.add_argument("--out", type=Path, default=None,
                        help="report directory (default reports/ for a full run)")
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else bg.SIZES)
    out = args.out if args.out is not None or args.quick else REPO / "reports"

    start = time.perf_counter()
    scores, diagnostics, times = run_study(
        sorted(set(sizes)), args.seed, args.restarts, args.workers,
        "dask" if args.dask_workers is not None else None, args.scheduler, args.dask_workers)
    report_start = time.perf_counter()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_figure(out / "beal-ghahramani-fig2.png", scores)
        scores.assign(codes=scores["codes"].map(lambda c: "".join(map(str, c)))).to_csv(
            out / "beal-ghahramani-scores.csv", index=False, float_format="%.6f")
    times["report"] = time.perf_counter() - report_start
    times["total"] = time.perf_counter() - start
    if out is not None:
        write_report(out / "beal-ghahramani-table2.md", scores, diagnostics, times, args)
        print(f"wrote {out}/beal-ghahramani-table2.md, -fig2.png, -scores.csv")
    print(f"whole study: {times['total']:.1f} s wall (data {times['data']:.1f} s, compile "
          f"{times['compile']:.1f} s, EM {times['em']:.1f} s, VBEM {times['vb']:.1f} s, "
          f"report {times['report']:.1f} s)")
    print(f"VBEM total (136 structures x {len(set(sizes))} sizes x {args.restarts} restarts): "
          f"{times['vb']:.1f} s, compilation excluded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
