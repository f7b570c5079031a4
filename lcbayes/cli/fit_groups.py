"""``lcbayes fit DATA --n-classes K --group G [--invariance full|none|ITEMS]`` and
``lcbayes compare DATA --n-classes K --group G [--invariance all|SPEC;SPEC]``: multiple-group
latent class analysis on the command line.

The file is read whole as a table; the indicators are ``--columns`` (default: every column that
is neither the group nor a covariate). ``fit`` prints the fit (:func:`lcbayes.em` with
``group=``): prevalences by group, item probabilities, glca's fit statistics; ``--invariance``
is ``full`` (default), ``none`` or a comma-separated list of the group-specific items.
``compare`` compares invariance structures by their evidence
(:func:`lcbayes.compare_invariance`): ``all`` (default) or structures separated by ``;``
(e.g. ``"full;none;HLTH,POOR"``), ``--engine-option smc.NAME=VALUE`` passes options to
:func:`lcbayes.smc`; ``--markdown`` writes the table with the figures of
prevalences by group and of the items whose profiles differ most. ``--json`` prints the
result's ``to_dict()``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from ..constructors import latent_class
from ..data import Dataset
from ..engines.em import em
from .common import UsageError, parse_engine_options
from .fit_covariates import read_columns

__all__ = ["add_arguments", "run_compare_groups", "run_fit_groups"]


def add_arguments(parser: argparse.ArgumentParser, *, compare: bool) -> None:
    """``--group`` and ``--invariance`` of ``fit`` (one structure) or ``compare`` (several)."""
    parser.add_argument("--group", default=None, metavar="G",
                        help="multiple-group latent class analysis: class prevalences per "
                             "level of this column; rows without it or with every item "
                             "missing are left out with a warning")
    parser.add_argument(
        "--invariance", default=None, metavar="all|SPEC;SPEC" if compare else "full|none|ITEMS",
        help=("with --group: the invariance structures compared by evidence: all (default: "
              "full, none, each single-item partial and a forward search) or structures "
              "separated by ';' (full, none or comma-separated free items)") if compare else
             ("with --group: full (default: item probabilities shared by the groups), none "
              "(group-specific) or comma-separated items whose probabilities are "
              "group-specific"))


def _read(args: argparse.Namespace):
    if args.invariance is not None and args.group is None:
        raise UsageError("--invariance needs --group")
    if args.structure or args.n_classes is None:
        raise UsageError("--group needs one number of classes (--n-classes K), not --structure")
    if getattr(args, "distal", None) is not None:
        raise UsageError("--group cannot be combined with --distal")
    _classes(args)
    args.covariates = getattr(args, "covariates", None)
    frame, covariates, items = read_columns(args)
    if args.group not in frame.columns:
        raise UsageError(f"--group {args.group!r} is not a column of {args.data}; its columns "
                         f"are {list(frame.columns)}")
    items = [c for c in items if c != args.group]
    with warnings.catch_warnings():   # such rows are left out, with a warning, by the fit
        warnings.filterwarnings("ignore", message=".*rows have no observed value")
        data = Dataset.from_pandas(frame[items], max_categories=args.max_categories)
    return frame, covariates, data


def _classes(args: argparse.Namespace) -> int:
    try:
        return int(str(args.n_classes))
    except ValueError:
        raise UsageError("--group compares invariance structures at one number of classes: "
                         f"give --n-classes K, not {args.n_classes!r}") from None


def run_fit_groups(args: argparse.Namespace) -> int:
    """``fit --group`` (module docstring)."""
    start = time.perf_counter()
    frame, covariates, data = _read(args)
    invariance = args.invariance or "full"
    options = {"restarts": args.restarts, "tol": args.tol, "max_iter": args.max_iter}
    se = {None: "empirical", "none": None}.get(args.se, args.se)
    result = em(latent_class(data, _classes(args)), frame, group=args.group,
                invariance=invariance, covariates=covariates or None, seed=args.seed,
                standard_errors=se, **{k: v for k, v in options.items() if v is not None})
    if args.json:
        out = result.to_dict()
        out["seconds"] = time.perf_counter() - start
        print(json.dumps(out))
    else:
        print(result.summary())
    return 0


def run_compare_groups(args: argparse.Namespace) -> int:
    """``compare --group`` (module docstring)."""
    from ..comparison.invariance import compare_invariance

    frame, covariates, data = _read(args)
    if covariates:
        raise UsageError("compare --group compares invariance structures without covariates; "
                         "fit them with lcbayes fit --group G --covariates ...")
    engines = parse_engine_options(args.engine_option)
    spec = args.invariance or "all"
    invariance = spec if spec == "all" else [s.strip() for s in spec.split(";") if s.strip()]
    result = compare_invariance(latent_class(data, _classes(args)), frame, args.group,
                                invariance=invariance, seed=args.seed,
                                engine_options=engines,
                                **({} if args.restarts is None else {"restarts": args.restarts}))
    if args.markdown:
        _write_markdown(result, Path(args.markdown))
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(result.summary())
        if args.markdown:
            print(f"wrote {args.markdown}")
    return 0


def _write_markdown(result, path: Path) -> None:
    """The table and the two figures (PNG files beside the Markdown file)."""
    from ..render import fmt, md_table

    stem = path.with_suffix("")
    table = result.table.drop(columns=["free"])
    figures = {"prevalences": result.prevalence_figure(), "profiles": result.profile_figure()}
    lines = ["# Measurement invariance compared by evidence", "",
             result.summary().splitlines()[0], "",
             *md_table(list(table.columns), [[str(v) if isinstance(v, str) else fmt(v, 4)
                                               for v in row] for row in table.to_numpy()]), ""]
    for name, fig in figures.items():
        target = stem.parent / f"{stem.name}-{name}.png"
        fig.savefig(target, dpi=110)
        lines += [f"![{name}]({target.name})", ""]
    try:
        path.write_text("\n".join(lines), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the report: {exc}") from None
