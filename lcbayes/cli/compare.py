"""``lcbayes compare DATA.csv --n-classes 1-5 [--structure FILE.json ...] [--methods ...]
[--engine-option ENGINE.NAME=VALUE ...] [--report out.html] [--markdown out.md] [--wide]
[--json]``: score every candidate by every
method (:func:`lcbayes.compare`) and print a table of the essential columns within 100
characters a line (every column with ``--wide``), or with ``--json`` one object ``{"rows":
[...], "metadata": {...}}`` (NaN as ``null``, no progress bars). The ``--methods`` choices come from
the method registry (:mod:`lcbayes.comparison.registry`); defaults from :func:`lcbayes.compare`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Literal

from ..comparison import compare, default_methods, selectable_methods
from ..comparison.table import ComparisonResult
from ..constructors import latent_class
from ..data import Dataset
from .common import (
    UsageError,
    add_data_arguments,
    add_engine_option_argument,
    add_executor_arguments,
    check_classes,
    check_output,
    default,
    engine_options,
    executor_options,
    parse_engine_options,
    read_data,
    structure_file,
)
from .fit_covariates import read_columns
from .fit_groups import add_arguments as add_group_arguments
from .fit_groups import run_compare_groups

__all__ = ["add_arguments", "parse_classes", "run", "write_reports"]

#: ``--exact`` as compare's ``exact=``.
_EXACT: dict[str, bool | Literal["auto"]] = {"auto": "auto", "yes": True, "no": False}


def add_arguments(cmp: argparse.ArgumentParser) -> None:
    """The arguments of ``lcbayes compare`` (its line in ``lcbayes --help`` is in
    :data:`lcbayes.cli.COMMANDS`)."""
    cmp.description = ("Score candidate models by BIC, BIC_e, AIC, ICL, Cheeseman-Stutz, VBEM, "
                    "SMC with bridge sampling (or AIS) and (small problems) the exact "
                    "evidence; print a table with log "
                    "evidences, posterior model probabilities, Bayes factors and diagnostic "
                    "flags.")
    add_data_arguments(cmp)
    cmp.add_argument("--n-classes", help="numbers of latent classes: a range 1-5, a list "
                                         "1,2,4 or both (2-4,6), or auto (classes added "
                                         "until the evidence has peaked)")
    cmp.add_argument("--max-classes", type=int, default=None,
                     help=f"with --n-classes auto: the most classes tried (default "
                          f"{default(compare, 'max_classes')})")
    cmp.add_argument("--structure", action="append", default=[],
                     help="JSON file of an HLC or DAG candidate (repeatable; named by the "
                          "file name)")
    cmp.add_argument("--methods", default=",".join(default_methods()),
                     help=f"comma-separated methods, from {', '.join(selectable_methods())} "
                          f"(default {','.join(default_methods())})")
    cmp.add_argument("--restarts", type=int, default=None,
                     help=f"random starts of EM, VBEM, Laplace and Chib (default "
                          f"{default(compare, 'restarts')})")
    cmp.add_argument("--seed", type=int, default=default(compare, "seed"),
                     help=f"random seed (default {default(compare, 'seed')})")
    cmp.add_argument("--exact", default="auto", choices=["auto", "yes", "no"],
                     help="exact evidence: where small enough (auto, default), required (yes) "
                          "or skipped (no)")
    cmp.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                     help="seconds for the SMC evidence runs of all candidates together, "
                          "shared equally (default: no limit)")
    add_engine_option_argument(cmp)
    add_executor_arguments(cmp, "the candidates")
    cmp.add_argument("--report", help="write a self-contained HTML report here")
    cmp.add_argument("--markdown", help="write a Markdown report here (PNG figures beside it)")
    cmp.add_argument("--wide", action="store_true",
                     help="print every score column (default: the essential columns, within "
                          "100 characters a line)")
    cmp.add_argument("--covariates", default=None, metavar="X1[,X2]",
                     help="also ask whether these columns matter for class membership (latent "
                          "class regression against no covariates for every K: likelihood "
                          "ratio, BIC); they are not indicators")
    cmp.add_argument("--distal", default=None, metavar="Y",
                     help="also ask whether this outcome differs by class (one step)")
    cmp.add_argument("--bayes-factors", default="yes", choices=["yes", "no"],
                     help="with --covariates or --distal: their log Bayes factors with error "
                          "bars for every K >= 2 (NUTS and bridge sampling; default yes)")
    add_group_arguments(cmp, compare=True)
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
            raise UsageError(f"bad --n-classes {text!r}: expected numbers and ranges such as "
                             "1-5 or 1,2,4") from None
        if min(values) < 1:
            raise UsageError(f"bad --n-classes {text!r}: numbers of classes must be >= 1")
        if sep and values[1] < values[0]:
            raise UsageError(f"bad --n-classes {text!r}: the range {part} runs backwards; "
                             f"write {values[1]}-{values[0]}")
        out += list(range(values[0], values[-1] + 1))
    if len(set(out)) != len(out):
        raise UsageError(f"bad --n-classes {text!r}: a number of classes appears twice")
    return out


def write_reports(comp: ComparisonResult, html_path: str | None, md_path: str | None,
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
    if args.group is not None or args.invariance is not None:
        return run_compare_groups(args)
    if args.n_classes is None and not args.structure:
        raise UsageError("give --n-classes (e.g. 1-5) and/or --structure FILE.json")
    auto = args.n_classes is not None and args.n_classes.strip().lower() == "auto"
    if auto and args.structure:
        raise UsageError("--n-classes auto compares latent class models alone; leave out "
                         "--structure or give the numbers of classes")
    if args.max_classes is not None and not auto:
        raise UsageError("--max-classes goes with --n-classes auto")
    ks = parse_classes(args.n_classes) if args.n_classes is not None and not auto else []
    check_output(args.report, "--report")
    check_output(args.markdown, "--markdown")
    extra: dict[str, Any] = {}
    if args.covariates is not None or args.distal is not None:
        if args.structure:
            raise UsageError("--covariates and --distal need latent class candidates "
                             "(--n-classes), not --structure")
        frame, covariates, items = read_columns(args)
        data = Dataset.from_pandas(frame[items], max_categories=args.max_categories)
        extra = {"covariates": frame[covariates] if covariates else None,
                 "distal": None if args.distal is None else frame[args.distal],
                 "bayes_factors": args.bayes_factors == "yes"}
    else:
        data = read_data(args)
    check_classes(ks, data)
    candidates: dict[str, Any] | None = {f"LC({k})": latent_class(data, k) for k in ks}
    if auto:
        candidates = None
        extra.update({"n_classes": "auto", **({} if args.max_classes is None else
                                               {"max_classes": args.max_classes})})
    for path in args.structure:
        name = Path(path).stem
        assert candidates is not None  # --structure is refused with auto
        if name in candidates:
            raise UsageError(f"two candidates are called {name!r}; rename a structure file")
        candidates[name] = structure_file(path, data)
    comp = compare(data, candidates, methods=args.methods, seed=args.seed,
                   exact=_EXACT[args.exact],
                   progress=not args.json, engine_options=parse_engine_options(
                       args.engine_option), **engine_options(
                       args, restarts="restarts", time_limit="time_limit"),
                   **executor_options(args), **extra)
    written = write_reports(comp, args.report, args.markdown, data_name=Path(args.data).name)
    if args.json:
        print(json.dumps(comp.summary_dict()))
    else:
        print(comp.summary(wide=args.wide))
        for path in written:
            print(f"wrote {path}")
    return 0
