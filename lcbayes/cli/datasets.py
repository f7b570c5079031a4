"""``lcbayes datasets [NAME] [--out FILE]``: list the shipped data sets
(:mod:`lcbayes.datasets`), or write one as CSV (to standard output unless ``--out`` names a
file), so that every example can start from a real data file."""

from __future__ import annotations

import argparse
import sys

from .. import datasets
from .common import UsageError, check_output

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``lcbayes datasets`` (its line in ``lcbayes --help`` is in
    :data:`lcbayes.cli.COMMANDS`)."""
    parser.description = ("Without NAME: one line per shipped data set (name, size, what it is, "
                    "source). With NAME: the data set as CSV, every column, one row per "
                    "respondent, missing values empty.")
    parser.add_argument("name", nargs="?", default=None,
                        help=f"a data set: {', '.join(datasets.names())}")
    parser.add_argument("--out", default=None,
                        help="write the CSV to this file (default: standard output)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.name is None:
        if args.out is not None:
            raise UsageError("--out needs a data set NAME")
        for name in datasets.names():
            described = datasets.info(name)
            print(f"{name:10} {described.rows:5} rows x {len(described.columns)} columns  "
                  f"{described.description}. Source: {described.source}.")
        return 0
    if args.name not in datasets.SETS:
        raise UsageError(f"no data set named {args.name!r}; the data sets are "
                         f"{', '.join(datasets.names())}")
    if args.out is None:
        sys.stdout.write(datasets.frame(args.name).to_csv(index=False))
        return 0
    check_output(args.out, "--out")
    path = datasets.write_csv(args.name, args.out)
    print(f"wrote {path} ({datasets.info(args.name).rows} rows)", file=sys.stderr)
    return 0
