"""``lcbayes fit DATA --n-classes K --covariates GPA[,X2] [--distal Y] [--steps 1|3]
[--correction none|bch|ml]``: latent class regression and distal outcomes on the command line.

The file is read whole as a table; the indicators are ``--columns`` (default: every column
that is neither a covariate nor the distal outcome). ``--steps 1`` (default) fits everything
at once (:func:`lcbayes.em` with ``covariates=`` / ``distal=``, poLCA's model) and prints the
coefficient table (estimate, standard error, z, p, odds ratio), the shares and item
probabilities with standard errors and the distal outcome by class; ``--steps 3`` runs the
bias-adjusted three-step approach (:func:`lcbayes.three_step`: ``--assignment`` modal or
proportional, ``--correction`` none, bch or ml). ``--json`` prints the result's ``to_dict()``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import pandas as pd

from ..constructors import latent_class
from ..csvfile import read_table
from ..data import Dataset
from ..engines.em import em
from ..render import json_value
from .common import UsageError, default, sheet_option

__all__ = ["add_arguments", "run_covariates", "uses_covariates"]


def add_arguments(fit: argparse.ArgumentParser) -> None:
    """``fit``'s options of covariates and distal outcomes."""
    fit.add_argument("--covariates", default=None, metavar="X1[,X2]",
                     help="latent class regression: class membership on these columns (numbers "
                          "as they are, text as indicators against its first level); rows "
                          "lacking one are left out with a warning")
    fit.add_argument("--distal", default=None, metavar="Y",
                     help="a distal outcome: a class-dependent column reported apart from the "
                          "indicators (numbers: a normal distribution per class; text: "
                          "categorical; see --distal-type)")
    fit.add_argument("--distal-type", default=None, choices=["auto", "categorical", "continuous"],
                     help="how --distal is modelled (default auto: numbers continuous)")
    fit.add_argument("--steps", type=int, default=None, choices=[1, 3],
                     help="1: one step, everything jointly (default); 3: the three-step "
                          "approach (measurement model, class assignment, then the covariate or "
                          "outcome model with --correction)")
    fit.add_argument("--correction", default=None, choices=["none", "bch", "ml"],
                     help="--steps 3: no correction, BCH weights (Bolck, Croon & Hagenaars "
                          "2004) or the ML correction (Vermunt 2010) (default ml)")
    fit.add_argument("--assignment", default=None, choices=["modal", "proportional"],
                     help="--steps 3: modal (default) or proportional class assignment")


def uses_covariates(args: argparse.Namespace) -> bool:
    """Whether the command asks for a regression or three-step fit."""
    return any(getattr(args, name) is not None for name in
               ("covariates", "distal", "distal_type", "steps", "correction", "assignment"))


def _names(text: str | None) -> list[str]:
    return [] if text is None else [c.strip() for c in text.split(",") if c.strip()]


def _check(args: argparse.Namespace) -> None:
    if args.steps == 3 and args.covariates is None and args.distal is None:
        raise UsageError("--steps 3 needs --covariates or --distal: step 3 models one of them")
    if args.steps != 3 and (args.correction is not None or args.assignment is not None):
        raise UsageError("--correction and --assignment apply to --steps 3")
    if args.covariates is None and args.distal is None:
        raise UsageError("--distal-type applies with --distal" if args.distal_type is not None
                         else "--steps needs --covariates or --distal")
    if args.structure is not None or args.n_classes is None:
        raise UsageError("--covariates and --distal need --n-classes K (a latent class model), "
                         "not --structure")
    if args.method != "em":
        raise UsageError(f"--covariates and --distal are fitted by em, not --method {args.method}")
    if args.chunk_rows is not None:
        raise UsageError("--covariates and --distal need the rows in memory: leave out "
                         "--chunk-rows")
    for option in ("keep", "algorithm", "eta", "prior", "devices"):
        if getattr(args, option) is not None:
            raise UsageError(f"--{option.replace('_', '-')} does not apply with --covariates "
                             "or --distal")


def read_columns(args: argparse.Namespace) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The table of ``args.data``, its ``--covariates`` columns and its indicator columns
    (``--columns``, else those that are neither covariates nor ``--distal``)."""
    frame = read_table(args.data, encoding=args.encoding, sep=args.sep,
                       allow_ragged=args.allow_ragged, sheet=sheet_option(args),
                       na_values=args.na_values)
    frame.columns = [str(c) for c in frame.columns]
    covariates = _names(args.covariates)
    wanted = covariates + ([] if args.distal is None else [args.distal])
    absent = [c for c in wanted if c not in frame.columns]
    if absent:
        raise UsageError(f"{', '.join(map(repr, absent))} {'is' if len(absent) == 1 else 'are'} "
                         f"not a column of {args.data}; its columns are {list(frame.columns)}")
    items = _names(args.columns) or [c for c in frame.columns if c not in wanted]
    if not items:
        raise UsageError("no indicator columns are left: give --columns")
    return frame, covariates, items


def run_covariates(args: argparse.Namespace) -> int:
    """``fit`` with covariates or a distal outcome (module docstring)."""
    start = time.perf_counter()
    _check(args)
    frame, covariates, items = read_columns(args)
    data = Dataset.from_pandas(frame[items], max_categories=args.max_categories)
    structure = latent_class(data, args.n_classes)
    options = {"restarts": args.restarts, "tol": args.tol, "max_iter": args.max_iter}
    options = {k: v for k, v in options.items() if v is not None}
    se = {None: "empirical", "none": None}.get(args.se, args.se)
    outcome = None if args.distal is None else frame[args.distal]
    result: Any
    if args.steps == 3:
        from ..engines.regression.three_step import three_step
        result = three_step(structure, data,
                            covariates=frame[covariates] if covariates else None,
                            distal=outcome, distal_type=args.distal_type or "auto",
                            seed=args.seed,
                            assignment=args.assignment or default(three_step, "assignment"),
                            correction=args.correction or default(three_step, "correction"),
                            **options)
    else:
        result = em(structure, data, covariates=frame[covariates] if covariates else None,
                    distal=outcome, distal_type=args.distal_type or "auto", seed=args.seed,
                    standard_errors=se, **options)
    if args.json:
        out = result.to_dict()
        out.setdefault("coefficients", json_value(result.coefficients().to_dict(orient="records")))
        out["seconds"] = time.perf_counter() - start
        print(json.dumps(out))
    else:
        print(result.summary())
    return 0
