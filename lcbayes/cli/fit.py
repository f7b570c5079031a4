"""``lcbayes fit DATA.csv --classes K [--structure FILE.json] [--method em|vbem|exact]``: fit one
model and print a readable summary, or one JSON object (the result's ``to_dict()``) with
``--json``:

* ``em`` (default): ML or MAP estimates with BIC, AIC, ICL, Cheeseman-Stutz, BICp, the alias
  correction and BIC with the effective dimension;
* ``vbem``: the variational lower bound ``elbo``, ``log_alias`` and ``elbo_corrected``;
* ``exact``: the exact log evidence ``log_evidence`` (small problems; too large ones exit 2).

Options left out keep the engine's defaults (shown in ``--help``).
"""

from __future__ import annotations

import argparse
import json
import time

from ..constructors import latent_class
from ..dimension import effective_dimension
from ..engines.em import em
from ..engines.exact import exact_evidence
from ..engines.vbem import vbem
from .common import (
    UsageError,
    add_data_arguments,
    default,
    engine_options,
    read_data,
    structure_file,
)

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    """The ``fit`` subcommand."""
    fit = sub.add_parser("fit", help="fit one model by EM and print its estimates and scores")
    add_data_arguments(fit)
    fit.add_argument("--classes", type=int, help="number of latent classes (latent class model)")
    fit.add_argument("--structure", help="JSON file describing an HLC or DAG structure instead")
    fit.add_argument("--method", default="em", choices=["em", "vbem", "exact"],
                     help="em (estimates and scores, default), vbem (variational bound) or "
                          "exact (exact log evidence, small problems)")
    fit.add_argument("--restarts", type=int, default=None,
                     help=f"random starts (default {default(em, 'restarts')} for em, "
                          f"{default(vbem, 'restarts')} for vbem)")
    fit.add_argument("--keep", type=int, default=None,
                     help=f"two-stage run: all restarts {default(em, 'burn_in')} iterations, "
                          "the KEEP best continue")
    fit.add_argument("--seed", type=int, default=default(em, "seed"),
                     help=f"random seed (default {default(em, 'seed')})")
    fit.add_argument("--prior", type=float, default=None,
                     help="Dirichlet pseudo-count: a MAP fit for em (default: maximum "
                          "likelihood); the prior of vbem and exact (default 1)")
    fit.add_argument("--tol", type=float, default=None,
                     help=f"convergence tolerance per row (default {default(em, 'tol'):g} for "
                          f"em, {default(vbem, 'tol'):g} for vbem)")
    fit.add_argument("--max-iter", type=int, default=None,
                     help=f"iteration limit (default {default(em, 'max_iter')} for em, "
                          f"{default(vbem, 'max_iter')} for vbem)")
    fit.add_argument("--max-terms", type=float, default=default(exact_evidence, "max_terms"),
                     help=f"exact: refuse problems needing more terms (default "
                          f"{default(exact_evidence, 'max_terms'):g})")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    fit.set_defaults(handler=run)


def _result(args: argparse.Namespace, structure, data):
    bayes_prior = "dirichlet" if args.prior is None else args.prior
    if args.method == "exact":
        return exact_evidence(structure, data, prior=bayes_prior, max_terms=args.max_terms)
    options = engine_options(args, restarts="restarts", tol="tol", max_iter="max_iter")
    if args.method == "vbem":
        return vbem(structure, data, seed=args.seed, prior=bayes_prior, **options)
    return em(structure, data, seed=args.seed, prior=args.prior, keep=args.keep, **options)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    data = read_data(args)
    if (args.classes is None) == (args.structure is None):
        raise UsageError("give exactly one of --classes K or --structure FILE.json")
    if args.classes is not None:
        structure = latent_class(data, args.classes)
    else:
        structure = structure_file(args.structure, data)
        data = structure.check_data(data)
    result = _result(args, structure, data)
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
