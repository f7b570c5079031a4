"""``lcbayes compare DATA.csv --classes 1-5 [--structure FILE.json ...] [--methods ...]
[--report out.html] [--markdown out.md] [--wide] [--json]``: score every candidate by every
method (:func:`lcbayes.compare`) and print a table of the essential columns within 100
characters a line (every column with ``--wide``), or with ``--json`` one object ``{"rows":
[...], "metadata": {...}}`` (NaN as ``null``, no progress bars). The ``--methods`` choices come from
the method registry (:mod:`lcbayes.comparison.registry`); defaults from :func:`lcbayes.compare`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..comparison import compare, default_methods, selectable_methods
from ..comparison.table import Comparison
from ..constructors import latent_class
from ..engines.ais import KERNELS
from ..engines.em import em
from ..engines.vbem import vbem
from .common import (
    UsageError,
    add_data_arguments,
    check_output,
    default,
    engine_options,
    read_data,
    structure_file,
)

__all__ = ["add_parser", "parse_classes", "run", "write_reports"]


def _stderr_target(text: str) -> float | str:
    """``--target-stderr``: a positive number or ``off``."""
    if text.lower() in ("off", "none"):
        return "off"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'off', got {text!r}") from None


def add_parser(sub) -> None:
    """The ``compare`` subcommand."""
    cmp = sub.add_parser(
        "compare", help="compare numbers of classes (and other structures) by every method",
        description="Score candidate models by BIC, BIC_e, AIC, ICL, Cheeseman-Stutz, VBEM, "
                    "SMC with bridge sampling (or AIS) and (small problems) the exact "
                    "evidence; print a table with log "
                    "evidences, posterior model probabilities, Bayes factors and diagnostic "
                    "flags.")
    add_data_arguments(cmp)
    cmp.add_argument("--classes", help="numbers of latent classes: a range 1-5, a list 1,2,4 "
                                       "or both (2-4,6)")
    cmp.add_argument("--structure", action="append", default=[],
                     help="JSON file of an HLC or DAG candidate (repeatable; named by the "
                          "file name)")
    cmp.add_argument("--methods", default=",".join(default_methods()),
                     help=f"comma-separated methods, from {', '.join(selectable_methods())} "
                          f"(default {','.join(default_methods())})")
    cmp.add_argument("--restarts", type=int, default=None,
                     help=f"EM and VBEM starts (default {default(compare, 'restarts')})")
    cmp.add_argument("--seed", type=int, default=default(compare, "seed"),
                     help=f"random seed (default {default(compare, 'seed')})")
    cmp.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                     help="seconds for the SMC evidence runs of all candidates together, "
                          "shared equally (default: no limit)")
    cmp.add_argument("--smc-particles", type=int, default=None,
                     help=f"particles per SMC run in the first round (default "
                          f"{default(compare, 'smc_particles')}; doubled where a round gives "
                          "no estimate)")
    cmp.add_argument("--smc-runs", type=int, default=None,
                     help=f"independent SMC runs per candidate before the error target "
                          f"decides (default {default(compare, 'smc_runs')})")
    cmp.add_argument("--chains", type=int, default=None,
                     help=f"AIS chains (default {default(compare, 'ais_chains')})")
    cmp.add_argument("--temperatures", type=int, default=None,
                     help=f"AIS temperatures (default {default(compare, 'ais_temperatures')})")
    cmp.add_argument("--kernel", default=None, choices=KERNELS,
                     help=f"AIS transition kernel (default {default(compare, 'ais_kernel')})")
    cmp.add_argument("--target-stderr", type=_stderr_target, default=None,
                     help=f"AIS runs groups of --chains chains until its standard error is at "
                          f"most this, or 'off' for one group (default "
                          f"{default(compare, 'ais_target_stderr')})")
    cmp.add_argument("--max-chains", type=int, default=None,
                     help="most AIS chains a --target-stderr run makes (default 8 x --chains)")
    cmp.add_argument("--blrt-replicates", type=int, default=None,
                     help=f"most bootstrap replicates of --methods ...,blrt (default "
                          f"{default(compare, 'blrt_replicates')}; stops sooner when the "
                          "p-value is clearly above or below 0.05)")
    cmp.add_argument("--exact", default="auto", choices=["auto", "yes", "no"],
                     help="exact evidence: where small enough (auto, default), required (yes) "
                          "or skipped (no)")
    cmp.add_argument("--max-terms", type=float, default=None,
                     help=f"exact evidence size limit (default "
                          f"{default(compare, 'max_terms'):g})")
    cmp.add_argument("--max-iter", type=int, default=None,
                     help=f"EM and VBEM iteration limit (default: the engines', "
                          f"{default(em, 'max_iter')} and {default(vbem, 'max_iter')})")
    cmp.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="run the candidates on the Dask cluster of this scheduler "
                          "(tcp://host:8786; default: $LCBAYES_SCHEDULER); needs lcbayes[dask]")
    cmp.add_argument("--workers", type=int, default=None,
                     help="run the candidates on a local Dask cluster of this many worker "
                          "processes (needs lcbayes[dask]); the table is the same")
    cmp.add_argument("--report", help="write a self-contained HTML report here")
    cmp.add_argument("--markdown", help="write a Markdown report here (PNG figures beside it)")
    cmp.add_argument("--wide", action="store_true",
                     help="print every score column (default: the essential columns, within "
                          "100 characters a line)")
    cmp.add_argument("--json", action="store_true",
                     help="print one JSON object {rows, metadata}; no progress bars")
    cmp.set_defaults(handler=run)


def parse_classes(text: str) -> list[int]:
    """``"1-5"`` -> ``[1, 2, 3, 4, 5]``; ``"1,2,4"``, ``"2-4,6"`` and ``"3"`` work too."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            values = [int(lo)] if not sep else [int(lo), int(hi)]
        except ValueError:
            raise UsageError(f"bad --classes {text!r}: expected numbers and ranges such as "
                             "1-5 or 1,2,4") from None
        if min(values) < 1:
            raise UsageError(f"bad --classes {text!r}: numbers of classes must be >= 1")
        if sep and values[1] < values[0]:
            raise UsageError(f"bad --classes {text!r}: the range {part} runs backwards; "
                             f"write {values[1]}-{values[0]}")
        out += list(range(values[0], values[-1] + 1))
    if len(set(out)) != len(out):
        raise UsageError(f"bad --classes {text!r}: a number of classes appears twice")
    return out


def write_reports(comp: Comparison, html_path: str | None, md_path: str | None,
                  **report_args) -> list[str]:
    """Write the HTML and Markdown reports asked for; returns the paths written."""
    written = []
    try:
        if html_path is not None:
            written.append(str(comp.to_html(html_path, **report_args)))
        if md_path is not None:
            comp.to_markdown(md_path, **report_args)
            written.append(str(md_path))
    except OSError as exc:
        raise UsageError(f"cannot write the report: {exc}") from None
    return written


def run(args: argparse.Namespace) -> int:
    if args.classes is None and not args.structure:
        raise UsageError("give --classes (e.g. 1-5) and/or --structure FILE.json")
    ks = parse_classes(args.classes) if args.classes is not None else []
    check_output(args.report, "--report")
    check_output(args.markdown, "--markdown")
    data = read_data(args)
    candidates = {f"LC({k})": latent_class(data, k) for k in ks}
    for path in args.structure:
        name = Path(path).stem
        if name in candidates:
            raise UsageError(f"two candidates are called {name!r}; rename a structure file")
        candidates[name] = structure_file(path, data)
    options = engine_options(args, restarts="restarts", ais_chains="chains",
                             ais_temperatures="temperatures", ais_kernel="kernel",
                             max_terms="max_terms", max_iter="max_iter",
                             ais_target_stderr="target_stderr", ais_max_chains="max_chains",
                             blrt_replicates="blrt_replicates", time_budget="time_budget",
                             smc_particles="smc_particles", smc_runs="smc_runs")
    if options.get("ais_target_stderr") == "off":
        options["ais_target_stderr"] = None
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    comp = compare(data, candidates, methods=args.methods, seed=args.seed,
                   exact={"auto": "auto", "yes": True, "no": False}[args.exact],
                   progress=not args.json,
                   executor="dask" if args.workers is not None else None,
                   scheduler=args.scheduler, workers=args.workers, **options)
    written = write_reports(comp, args.report, args.markdown, data_name=Path(args.data).name)
    if args.json:
        print(json.dumps(comp.to_dict()))
    else:
        print(comp.summary(wide=args.wide))
        for path in written:
            print(f"wrote {path}")
    return 0
