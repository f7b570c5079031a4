"""The ``lcbayes`` command.

``lcbayes fit DATA.csv --classes K [--columns A,B,...] [--restarts R] [--seed S] [--json]`` fits a
latent class model (or, with ``--structure FILE.json``, an HLC or DAG structure) by EM and prints
a poLCA-style summary, or one JSON object with ``--json``. Bad input prints a one-line error and
exits with status 2. JAX's persistent compilation cache is on, so a second run is fast.

A structure file is JSON: ``{"kind": "hlc", "tree": {...}, "cardinalities": {...}}`` or
``{"kind": "dag", "parents": {...}, "hidden": {...}}`` with the arguments of
:func:`lcbayes.hlc` / :func:`lcbayes.dag`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .cache import enable_compilation_cache
from .data import DEFAULT_MAX_CATEGORIES, Dataset
from .em import em
from .errors import LcbayesError
from .structure import Structure, dag, hlc, latent_class

__all__ = ["main"]


class _UsageError(LcbayesError):
    """A command-line argument is wrong."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lcbayes",
        description="Bayesian model comparison for latent class and other hidden-variable models.",
    )
    parser.add_argument("--version", action="version", version=f"lcbayes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit", help="fit one model by EM and print its estimates and scores")
    fit.add_argument("data", help="CSV file with a header row; one column per categorical item")
    fit.add_argument("--classes", type=int, help="number of latent classes (latent class model)")
    fit.add_argument("--structure", help="JSON file describing an HLC or DAG structure instead")
    fit.add_argument("--columns", help="comma-separated columns to use (default: all)")
    fit.add_argument("--method", default="em", choices=["em"], help="estimation method")
    fit.add_argument("--restarts", type=int, default=10, help="random starts (default 10)")
    fit.add_argument("--keep", type=int, default=None,
                     help="two-stage run: all restarts 10 iterations, the KEEP best continue")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument("--prior", type=float, default=None,
                     help="Dirichlet pseudo-count for a MAP fit (default: maximum likelihood)")
    fit.add_argument("--tol", type=float, default=1e-8,
                     help="convergence tolerance per row (default 1e-8)")
    fit.add_argument("--max-iter", type=int, default=2000, help="iteration limit (default 2000)")
    fit.add_argument("--max-categories", type=int, default=DEFAULT_MAX_CATEGORIES,
                     help="refuse columns with more distinct values (default 50)")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _structure(args: argparse.Namespace, data: Dataset) -> Structure:
    if (args.classes is None) == (args.structure is None):
        raise _UsageError("give exactly one of --classes K or --structure FILE.json")
    if args.classes is not None:
        return latent_class(data, args.classes)
    try:
        spec = json.loads(Path(args.structure).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise _UsageError(f"cannot read structure file {args.structure!r}: {exc}") from None
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "hlc":
        return hlc(data, spec.get("tree", {}), spec.get("cardinalities", {}))
    if kind == "dag":
        return dag(data, spec.get("parents", {}), spec.get("hidden", {}))
    raise _UsageError(
        f"structure file {args.structure!r} must be a JSON object with kind 'hlc' or 'dag'"
    )


def _fit(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    columns = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    data = Dataset.from_csv(args.data, columns=columns, max_categories=args.max_categories)
    structure = _structure(args, data)
    if args.structure is not None:
        data = structure.check_data(data)
    result = em(structure, data, restarts=args.restarts, seed=args.seed,
                prior=args.prior, tol=args.tol, max_iter=args.max_iter, keep=args.keep)
    if args.json:
        out = result.to_dict()
        out["seconds"] = time.perf_counter() - start
        print(json.dumps(out))
    else:
        print(result.summary())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lcbayes`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    enable_compilation_cache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = _fit(args)
        except LcbayesError as exc:
            print(f"lcbayes: error: {exc}", file=sys.stderr)
            status = 2
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"lcbayes: warning: {w.message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
