"""``lcbayes fit DATA.csv --n-classes K [--structure FILE.json] [--method em|vbem|ais|exact]``:
fit one model and print a readable summary, or one JSON object (the result's ``to_dict()``)
with ``--json``:

* ``em`` (default): ML or MAP estimates with BIC, AIC, ICL, Cheeseman-Stutz, BICp, the alias
  correction and BIC with the effective dimension; ``--algorithm`` picks the estimation
  algorithm (SQUAREM by default; Whiley 1999 ch. 2's, :mod:`lcbayes.engines.algorithms`) and
  ``--eta`` its learning rate;
* ``vbem``: the variational lower bound ``elbo``, ``log_alias`` and ``elbo_corrected``;
* ``ais``: annealed importance sampling (:func:`lcbayes.ais`): the log evidence
  ``log_evidence``, its standard error ``stderr``, the effective number of chains ``ess`` and
  the run's settings;
* ``exact``: the exact log evidence ``log_evidence`` (small problems; too large ones exit 2).

``--covariates``, ``--distal``, ``--steps`` and ``--correction``: latent class regression,
distal outcomes and the three-step approach (:mod:`lcbayes.cli.fit_covariates`).

Options left out keep the engine's defaults (read from its signature, shown in ``--help``); an
option of another method is refused.
"""

from __future__ import annotations

import argparse
import json
import time

from ..dimension import effective_dimension
from ..engines.ais import KERNELS, ais
from ..engines.algorithms import ALGORITHMS, DEFAULT_ETA
from ..engines.em import em
from ..engines.exact import exact_evidence
from ..engines.vbem import vbem
from ..render import fmt_count, fmt_setting, fmt_stat, wrap
from .common import (
    UsageError,
    add_data_arguments,
    default,
    engine_options,
    model_structure,
    read_data,
)
from .fit_covariates import add_arguments as add_covariate_arguments
from .fit_covariates import run_covariates, uses_covariates
from .fit_groups import add_arguments as add_group_arguments
from .fit_groups import run_fit_groups

__all__ = ["PROGRESS_RESTARTS", "add_arguments", "run"]

#: ``fit`` shows a progress bar over EM's restarts from this many on (below, a fit takes a
#: second or two).
PROGRESS_RESTARTS = 100

#: The methods each method-specific option applies to (``--seed``, ``--prior`` apply to all
#: but exact / all).
OPTION_METHODS = {
    "restarts": ("em", "vbem"), "keep": ("em",), "se": ("em",), "algorithm": ("em",),
    "eta": ("em",), "tol": ("em", "vbem"),
    "max_iter": ("em", "vbem"), "max_terms": ("exact",), "chains": ("ais",),
    "temperatures": ("ais",), "schedule": ("ais",), "kernel": ("ais",),
    "target_stderr": ("ais",), "max_chains": ("ais",), "devices": ("em", "vbem"),
}


def add_arguments(fit: argparse.ArgumentParser) -> None:
    """The arguments of ``lcbayes fit`` (its line in ``lcbayes --help`` is in
    :data:`lcbayes.cli.COMMANDS`)."""
    add_data_arguments(fit)
    fit.add_argument("--n-classes", type=int, help="number of latent classes (latent class model)")
    fit.add_argument("--structure", help="JSON file describing an HLC or DAG structure instead")
    fit.add_argument("--method", default="em", choices=["em", "vbem", "ais", "exact"],
                     help="em (estimates and scores, default), vbem (variational bound), ais "
                          "(annealed importance sampling of the log evidence) or exact (exact "
                          "log evidence, small problems)")
    fit.add_argument("--restarts", type=int, default=None,
                     help=f"random starts (default {default(em, 'restarts')} for em, "
                          f"{default(vbem, 'restarts')} for vbem)")
    fit.add_argument("--se", default=None, choices=["empirical", "observed", "none"],
                     help="standard errors of the EM estimates: empirical information "
                          "(poLCA's, default), observed information, or none")
    fit.add_argument("--keep", type=int, default=None,
                     help=f"two-stage run: all restarts {default(em, 'burn_in')} iterations, "
                          "the KEEP best continue")
    fit.add_argument("--algorithm", default=None, choices=ALGORITHMS,
                     help="em: the estimation algorithm (default squarem; em is plain EM; the "
                          "others are Whiley 1999 ch. 2's: incremental EM, conjugate gradients, "
                          "Helmbold et al.'s, approximate CG, deterministic annealing)")
    fit.add_argument("--eta", type=float, default=None,
                     help=f"em: fixed learning rate of --algorithm {', '.join(DEFAULT_ETA)} "
                          "(default: adaptive)")
    fit.add_argument("--seed", type=int, default=default(em, "seed"),
                     help=f"random seed (default {default(em, 'seed')})")
    fit.add_argument("--prior", type=float, default=None,
                     help="Dirichlet pseudo-count: a MAP fit for em (default: maximum "
                          "likelihood); the prior of vbem, ais and exact (default 1)")
    fit.add_argument("--tol", type=float, default=None,
                     help=f"convergence tolerance per row (default {default(em, 'tol'):g} for "
                          f"em, {default(vbem, 'tol'):g} for vbem)")
    fit.add_argument("--max-iter", type=int, default=None,
                     help=f"iteration limit (default {default(em, 'max_iter')} for em, "
                          f"{default(vbem, 'max_iter')} for vbem)")
    fit.add_argument("--max-terms", type=float, default=None,
                     help=f"exact: refuse problems needing more terms (default "
                          f"{default(exact_evidence, 'max_terms'):g})")
    fit.add_argument("--chains", type=int, default=None,
                     help=f"ais: chains (default {default(ais, 'chains')})")
    fit.add_argument("--temperatures", type=int, default=None,
                     help=f"ais: annealing steps (default {default(ais, 'temperatures')})")
    fit.add_argument("--schedule", default=None, choices=["beal", "geometric", "linear"],
                     help=f"ais: temperature schedule (default {default(ais, 'schedule')})")
    fit.add_argument("--kernel", default=None, choices=KERNELS,
                     help=f"ais: transition kernel (default {default(ais, 'kernel')})")
    fit.add_argument("--target-stderr", type=float, default=None,
                     help="ais: run groups of --chains chains until the standard error is at "
                          f"most this (default {fmt_setting(default(ais, 'target_stderr'))}: "
                          "one group)")
    fit.add_argument("--max-chains", type=int, default=None,
                     help="ais with --target-stderr: the most chains (default: lcb.ais's, "
                          "a multiple of --chains)")
    fit.add_argument("--devices", type=int, default=None,
                     help="em, vbem: split the data patterns over the first N JAX devices "
                          "(GPUs; default: one device)")
    add_covariate_arguments(fit)
    add_group_arguments(fit, compare=False)
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    fit.set_defaults(handler=run)


def _check_options(args: argparse.Namespace) -> None:
    """Refuse an option the chosen method does not use (it would be ignored silently)."""
    for name, methods in OPTION_METHODS.items():
        if getattr(args, name) is not None and args.method not in methods:
            option = "--" + name.replace("_", "-")
            raise UsageError(f"{option} applies to --method {' or '.join(methods)}, not "
                             f"{args.method}")


def _result(args: argparse.Namespace, structure, data):
    bayes_prior = "dirichlet" if args.prior is None else args.prior
    if args.method == "exact":
        return exact_evidence(structure, data, prior=bayes_prior,
                              **engine_options(args, max_terms="max_terms"))
    if args.method == "ais":
        return ais(structure, data, seed=args.seed, prior=bayes_prior,
                   **engine_options(args, chains="chains", temperatures="temperatures",
                                    schedule="schedule", kernel="kernel",
                                    target_stderr="target_stderr", max_chains="max_chains"))
    options = engine_options(args, restarts="restarts", tol="tol", max_iter="max_iter",
                             devices="devices")
    if args.method == "vbem":
        return vbem(structure, data, seed=args.seed, prior=bayes_prior, **options)
    se = {None: "empirical", "none": None}.get(args.se, args.se)
    restarts = default(em, "restarts") if args.restarts is None else args.restarts
    return em(structure, data, seed=args.seed, prior=args.prior, keep=args.keep,
              eta=args.eta, **engine_options(args, algorithm="algorithm"),
              standard_errors=se if args.prior is None else None,
              progress=not args.json and restarts >= PROGRESS_RESTARTS, **options)


def _ais_settings(result) -> str:
    """The AIS run's settings as one line (seed and the kernel's own settings)."""
    settings = {"seed": result.seed, **result.settings}
    return "  settings: " + "; ".join(f"{k} = {fmt_setting(v)}" for k, v in settings.items())


def run(args: argparse.Namespace) -> int:
    if args.group is not None or args.invariance is not None:
        return run_fit_groups(args)
    if uses_covariates(args):
        return run_covariates(args)
    start = time.perf_counter()
    _check_options(args)
    data = read_data(args)
    structure, data = model_structure(args, data)
    result = _result(args, structure, data)
    indices = result.fit_indices(data) if args.method == "em" else None
    if args.json:
        out = result.to_dict()
        if args.method != "em":
            out.update(n_parameters=structure.n_parameters,
                       effective_dimension=effective_dimension(structure))
        else:
            assert indices is not None  # computed for method em
            out.update(abic=indices["abic"], caic=indices["caic"], indices=indices)
        out["seconds"] = time.perf_counter() - start
        print(json.dumps(out))
    else:
        print(result.summary())
        if args.method == "ais":
            print(_ais_settings(result))
        if indices is not None:
            print("\n".join(_index_lines(indices)))
    return 0


def _index_lines(indices: dict) -> list[str]:
    """Goodness of fit against the saturated table (poLCA's G^2, X^2, df) and the quality of
    the classification, as applied papers report them."""
    gof = indices["goodness_of_fit"]
    lines = [f"G^2: {fmt_stat(gof['g2'])}  X^2: {fmt_stat(gof['chi2'])}  (residual df "
             f"{gof['df']}; {gof['n_complete_rows']} complete rows in "
             f"{fmt_count(gof['n_cells'])} cells)"]
    if gof["note"]:
        lines += wrap(f"note: {gof['note']}", indent="  ", hanging="    ")
    quality = indices["classification"]
    if quality is not None:
        lines.append(f"entropy R^2: {quality['entropy_r2']:.4f}; smallest class share "
                     f"{quality['smallest_class_share']:.4f} (modal assignment "
                     f"{quality['smallest_modal_share']:.4f})")
    return lines
