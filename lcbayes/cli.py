"""The ``lcbayes`` command.

``lcbayes fit DATA.csv --classes K [--columns A,B,...] [--method em|vbem|exact] [--restarts R]
[--seed S] [--json]`` fits a latent class model (or, with ``--structure FILE.json``, an HLC or DAG
structure) and prints a readable summary, or one JSON object with ``--json``:

* ``em`` (default): ML or MAP estimates with BIC, AIC, ICL, Cheeseman-Stutz, BICp, the alias
  correction and BIC with the effective dimension;
* ``vbem``: the variational lower bound ``elbo``, ``log_alias`` and ``elbo_corrected``;
* ``exact``: the exact log evidence ``log_evidence`` (small problems; too large ones exit 2).

Bad input prints a one-line error and exits with status 2. JAX's persistent compilation cache is
on, so a second run is fast.

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
from .dimension import effective_dimension
from .em import EMResult, em
from .errors import LcbayesError
from .exact import ExactEvidence, exact_evidence
from .structure import Structure, dag, hlc, latent_class
from .vbem import VBResult, vbem

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
    fit.add_argument("--method", default="em", choices=["em", "vbem", "exact"],
                     help="em (estimates and scores, default), vbem (variational bound) or "
                          "exact (exact log evidence, small problems)")
    fit.add_argument("--restarts", type=int, default=None,
                     help="random starts (default 10 for em, 3 for vbem)")
    fit.add_argument("--keep", type=int, default=None,
                     help="two-stage run: all restarts 10 iterations, the KEEP best continue")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument("--prior", type=float, default=None,
                     help="Dirichlet pseudo-count: a MAP fit for em (default: maximum "
                          "likelihood); the prior of vbem and exact (default 1)")
    fit.add_argument("--tol", type=float, default=None,
                     help="convergence tolerance per row (default 1e-8 for em, 1e-6 for vbem)")
    fit.add_argument("--max-iter", type=int, default=None,
                     help="iteration limit (default 2000 for em, 1000 for vbem)")
    fit.add_argument("--max-terms", type=float, default=1e7,
                     help="exact: refuse problems needing more terms (default 1e7)")
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
    result = _run_method(args, structure, data)
    if args.json:
        out = result.to_dict()
        if args.method != "em":
            out.update(n_parameters=structure.n_parameters,
                       effective_dimension=effective_dimension(structure))
        out["seconds"] = time.perf_counter() - start
        print(json.dumps(out))
    else:
        print(result.summary())
    return 0


def _run_method(args: argparse.Namespace, structure: Structure, data: Dataset
                ) -> EMResult | VBResult | ExactEvidence:
    bayes_prior = "dirichlet" if args.prior is None else args.prior
    if args.method == "exact":
        return exact_evidence(structure, data, prior=bayes_prior, max_terms=args.max_terms)
    if args.method == "vbem":
        return vbem(structure, data, restarts=3 if args.restarts is None else args.restarts,
                    seed=args.seed, prior=bayes_prior,
                    tol=1e-6 if args.tol is None else args.tol,
                    max_iter=1000 if args.max_iter is None else args.max_iter)
    return em(structure, data, restarts=10 if args.restarts is None else args.restarts,
              seed=args.seed, prior=args.prior, tol=1e-8 if args.tol is None else args.tol,
              max_iter=2000 if args.max_iter is None else args.max_iter, keep=args.keep)


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
