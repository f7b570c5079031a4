"""``lcbayes rjmcmc DATA.csv [--method rjmcmc|allocation] [--max-classes K] [--draws N]
[--warmup N] [--chains C] [--heats H] [--seed S] [--prior-k uniform|poisson]
[--relabel-method stephens|ecr|pivot|constraint] [--evidence auto|yes|no] [--time-limit SECONDS]
[--engine-option smc.particles=P] [--report out.html] [--markdown out.md] [--json]``:
sample the posterior over the number of classes ``K = 1 .. max_classes`` and the parameters by
reversible jump (:func:`lcbayes.rjmcmc`) or by the collapsed allocation sampler with ``--heats``
tempered replicas per chain (``--method allocation``, :func:`lcbayes.allocation_sampler`),
with the sampler's defaults for the options left out, relabel the draws with the most visited
``K`` and summarise them with ArviZ (:func:`lcbayes.diagnostics`: R-hat, bulk and tail ESS).

It prints the posterior of ``K``, the acceptance rate of every move type and the summary table.
When the sampler's posterior of ``K`` cannot be believed (the chains did not mix between numbers
of classes, or piled at ``--max-classes``:
:attr:`~lcbayes.samplers.results.KMixingResult.reliable`), it says so plainly and runs the route
that holds at that size (:mod:`.evidence_route`): ``lcbayes compare`` of ``K = 1 ..`` (one more
than the largest ``K`` the sampler visited, at most ``--max-classes``) by BIC, VBEM and SMC,
whose evidences give ``p(K | y)`` with 95% intervals, printed beside the sampler's with which
one to believe. ``--evidence yes`` runs it always, ``no`` never; ``--time-limit`` and
``--engine-option`` are passed on to ``compare``.

With ``--json`` it prints one object (:func:`rjmcmc_summary`): ``posterior_k`` and ``prior_k`` as
``{"K": probability}`` (JSON object keys are strings: ``"1"`` .. ``"max_classes"``),
``modal_k``, ``sampler``, ``heats`` (allocation sampler, else ``null``), ``acceptance``
(``{move: rate}``: split, merge, birth, death, or eject, absorb, swap; ``null`` for a move
never proposed) and
``proposed`` (``{move: count}``), ``k_diagnostics`` (R-hat and ESS of the trace of ``k``),
``k_mixing`` (:meth:`lcbayes.samplers.results.KMixingResult.to_dict`: ``r_hat``, ``ess_bulk``,
``split``, ``merge``, ``mixed``, ``suggested_draws``, ``ceiling_share``, ``ceiling_rising``,
``at_ceiling``, ``reliable`` and ``warning``), ``diagnostics`` (R-hat/ESS
summary after relabelling on ``modal_k``: ``max_rhat``, ``min_ess_bulk``, ``flagged`` and the
table ``summary``, classes numbered from 1), ``relabelling``, ``seconds``, ``sampler_seconds``,
``n_rows``, ``n_patterns``, ``columns``, ``seed``, ``draws``, ``warmup``, ``chains``, ``thin``,
``max_classes``, and ``evidence``: ``null`` when the evidence route did not run, else
:meth:`~.evidence_route.EvidenceRoute.to_dict` (``reason``, ``n_classes``, ``methods``,
``believe``, ``verdict``, ``rows`` per ``K`` with ``log_evidence``, ``log_evidence_stderr``,
``evidence_method``, ``posterior``, ``posterior_low``, ``posterior_high``,
``sampler_posterior`` and ``flags``, ``unmeasured_note``, ``edge_note``, ``prior_note``,
``seconds`` and the whole ``comparison``, as ``lcbayes compare --json`` prints it). ``--report``
writes the diagnostics (settings with the data's name, tables, figures, versions) as one
self-contained HTML file, ``--markdown`` as Markdown with PNG figures.

Warnings go to stderr, each once: the R-hat flag (the worst parameters and a count) and, when
the chains did not move between numbers of classes, one line with the R-hat and ESS of ``k``,
the split/merge acceptance, a ``--draws`` to rerun with and the ``lcbayes compare`` command
that needs no mixing (with the evidence route run: the pointer to its posterior), and, when
the posterior of ``K`` is still rising at ``--max-classes``, a larger bound to rerun with
(:class:`~lcbayes.samplers.results.KMixingResult`).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..data import Dataset
from ..render import json_value
from ..samplers.allocation import allocation_sampler
from ..samplers.relabelling import METHODS as RELABEL_METHODS
from ..samplers.results import KMixingWarning
from ..samplers.rjmcmc import rjmcmc
from . import evidence_route as route
from .common import (
    UsageError,
    add_data_arguments,
    check_output,
    default,
    engine_options,
    read_data,
)

if TYPE_CHECKING:
    from ..samplers.diagnostics import DiagnosticsResult
    from ..samplers.results import RJMCMCResult

__all__ = ["SAMPLERS", "add_arguments", "rjmcmc_summary", "run"]

#: The samplers of ``--method``.
SAMPLERS = {"rjmcmc": rjmcmc, "allocation": allocation_sampler}


def add_arguments(rj: argparse.ArgumentParser) -> None:
    """The arguments of ``lcbayes rjmcmc`` (its line in ``lcbayes --help`` is in
    :data:`lcbayes.cli.COMMANDS`)."""
    rj.description = ("Sample the number of classes K = 1..MAX_CLASSES and the parameters of a "
                    "latent class model by reversible jump (Gibbs updates, split/merge and "
                    "birth/death moves; Dirichlet(1) priors unless --prior), relabel the draws "
                    "with the most visited K and print the posterior of K, the acceptance "
                    "rates and an ArviZ summary (R-hat, bulk and tail ESS).")
    add_data_arguments(rj)
    rj.add_argument("--method", default="rjmcmc", choices=list(SAMPLERS),
                    help="rjmcmc (reversible jump, default) or allocation (the collapsed "
                         "allocation sampler of Nobile & Fearnside with parallel tempering)")
    for option, name, text in (
            ("--draws", "draws", "kept draws per chain"),
            ("--warmup", "warmup", "sweeps discarded before the first kept draw")):
        rj.add_argument(option, type=int, default=None,
                        help=f"{text} (default {default(rjmcmc, name)}, allocation "
                             f"{default(allocation_sampler, name)})")
    rj.add_argument("--heats", type=int, default=None,
                    help=f"tempered replicas per chain of the allocation sampler (default "
                         f"{default(allocation_sampler, 'heats')})")
    for option, name, text in (
            ("--max-classes", "max_classes", "largest number of classes K"),
            ("--chains", "chains", "independent chains"),
            ("--thin", "thin", "keep every THIN-th sweep"),
            ("--seed", "seed", "random seed")):
        rj.add_argument(option, type=int, default=default(rjmcmc, name),
                        help=f"{text} (default {default(rjmcmc, name)})")
    rj.add_argument("--prior-k", default=default(rjmcmc, "prior_k"),
                    choices=["uniform", "poisson"],
                    help="prior of K on 1..MAX_CLASSES: uniform (default) or poisson "
                         "(Poisson(1) truncated, proportional to 1/K!)")
    rj.add_argument("--prior", type=float, default=None,
                    help="Dirichlet pseudo-count of the class weights and item tables "
                         "(default 1)")
    rj.add_argument("--relabel-method", default="stephens", choices=list(RELABEL_METHODS),
                    help="relabelling before the diagnostics (default stephens)")
    route.add_arguments(rj)
    rj.add_argument("--report", help="write the diagnostics as a self-contained HTML file here")
    rj.add_argument("--markdown", help="write the diagnostics as Markdown here (PNG figures "
                                       "beside it)")
    rj.add_argument("--json", action="store_true", help="print one JSON object")
    rj.set_defaults(handler=run)


def rjmcmc_summary(result: RJMCMCResult, diag: DiagnosticsResult, data: Dataset,
                   data_name: str | None = None) -> dict:
    """The JSON object of ``lcbayes rjmcmc`` (module docstring) from the reversible jump
    ``result``, its diagnostics ``diag`` and the data (whose file ``data_name`` the mixing
    advice names); ``seconds`` is added by the caller. NaN becomes ``None``; keys of
    ``posterior_k`` and ``prior_k`` are strings."""
    idata = result.to_inference_data()
    attrs = idata["posterior"].attrs
    table = diag.summary_dict()
    proposed = idata["sample_stats"]["proposed"].sum(("chain", "draw"))
    heats = result.settings.get("heats")
    k_row = diag.table.loc["k"] if "k" in diag.table.index else None
    assert diag.k_mixing is not None  # the diagnostics of reversible jump draws have it
    return json_value({
        "n_rows": data.n_rows, "n_patterns": data.n_patterns, "columns": list(data.columns),
        "max_classes": attrs["max_classes"], "draws": attrs["draws"],
        "warmup": attrs["warmup"], "chains": attrs["chains"], "thin": attrs["thin"],
        "seed": attrs["seed"],
        "prior_k": json.loads(attrs["prior_k_json"]),
        "posterior_k": {str(k): p for k, p in result.posterior_k.items()},
        "modal_k": diag.conditioned_on,
        "sampler": result.engine,
        "heats": heats,
        "acceptance": result.acceptance,
        "proposed": {str(move): int(n) for move, n in zip(proposed["move"].values,
                                                         proposed.values, strict=True)},
        "k_diagnostics": {c: (k_row[c] if k_row is not None else None)
                          for c in ("r_hat", "ess_bulk", "ess_tail")},
        "k_mixing": diag.k_mixing.to_dict(data_name=data_name),
        "relabelling": table["relabelling"],
        "diagnostics": {key: table[key] for key in (
            "conditioned_on", "chains", "draws", "rhat_threshold", "max_rhat", "min_ess_bulk",
            "flagged", "summary")},
        "sampler_seconds": result.seconds,
    })


def _text(out: dict, diag: DiagnosticsResult, path: str) -> str:
    """The plain output: settings, posterior of K, moves, diagnostics (the warnings follow on
    stderr)."""
    title = ("Reversible-jump MCMC" if out["sampler"] == "rjmcmc"
             else f"Allocation sampler (heats {', '.join(f'{h:g}' for h in out['heats'])})")
    lines = [
        f"{title} over the number of latent classes: {path}",
        f"{out['n_rows']} rows ({out['n_patterns']} patterns), {len(out['columns'])} items; "
        f"K = 1..{out['max_classes']}; seed {out['seed']}",
        f"{out['chains']} chains x {out['draws']} draws after {out['warmup']} warm-up sweeps "
        f"(thin {out['thin']}); {out['sampler_seconds']:.1f} s sampling (compiling included)",
        "",
        "Posterior of the number of classes K:",
        "   K  prior    p(K | y)",
    ]
    for k, p in out["posterior_k"].items():
        bar = "#" * round(40 * p)
        lines.append(f"{k:>4}  {out['prior_k'][k]:.3f}  {p:8.4f}  {bar}".rstrip())
    lines += ["", "Acceptance rates per move type (accepted / proposed):"]
    for move, rate in out["acceptance"].items():
        text = "never proposed" if rate is None else f"{rate:.4f}"
        lines.append(f"  {move:<6} {text} of {out['proposed'][move]}")
    k_diag = out["k_diagnostics"]
    if k_diag["ess_bulk"] is not None:
        rhat = "n/a" if k_diag["r_hat"] is None else f"{k_diag['r_hat']:.3f}"
        lines.append(f"trace of k: R-hat {rhat}, bulk ESS {k_diag['ess_bulk']:.0f}, "
                     f"tail ESS {k_diag['ess_tail']:.0f}")
    lines += ["", diag.headline(), "", diag.table_text()]
    return "\n".join(lines)


def _sample(args: argparse.Namespace, data: Dataset) -> tuple[RJMCMCResult, DiagnosticsResult]:
    """Run the sampler of ``--method`` and diagnose its draws (the mixing advice is left to
    :func:`run`, which words it for the command line)."""
    from ..samplers.diagnostics import diagnostics  # ArviZ and matplotlib: only when run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KMixingWarning)
        options = engine_options(args, draws="draws", warmup="warmup")
        if args.method == "allocation":
            options.update(engine_options(args, heats="heats"))
        elif args.heats is not None:
            raise UsageError("--heats is an option of --method allocation")
        result = SAMPLERS[args.method](
            data, max_classes=args.max_classes, chains=args.chains, prior_k=args.prior_k,
            seed=args.seed, prior="dirichlet" if args.prior is None else args.prior,
            thin=args.thin, **options)
        return result, diagnostics(result, relabel_method=args.relabel_method)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    check_output(args.report, "--report")
    check_output(args.markdown, "--markdown")
    if args.prior is not None and not (np.isfinite(args.prior) and args.prior > 0):
        raise UsageError(f"--prior must be a positive number, got {args.prior}")
    route.check_arguments(args)
    data = read_data(args)
    result, diag = _sample(args, data)
    name = Path(args.data).name
    try:
        if args.report is not None:
            diag.to_html(args.report, data_name=name)
        if args.markdown is not None:
            diag.to_markdown(args.markdown, data_name=name)
    except OSError as exc:
        raise UsageError(f"cannot write the report: {exc}") from None
    out = rjmcmc_summary(result, diag, data, args.data)
    evidence = None
    assert diag.k_mixing is not None  # the diagnostics of reversible jump draws have it
    if route.wanted(args.evidence, diag.k_mixing):
        evidence = route.evidence_route(data, args, diag.k_mixing, result.posterior_k,
                                        {int(k): p for k, p in out["prior_k"].items()})
    warning = diag.k_mixing.warning(
        data_name=args.data, evidence_classes=evidence.classes[-1] if evidence else None)
    if warning:
        warnings.warn(warning, KMixingWarning, stacklevel=1)
    out["k_mixing"]["warning"] = warning  # pointing to the evidences when they ran
    out["evidence"] = evidence.to_dict() if evidence else None
    out["seconds"] = time.perf_counter() - start
    if args.json:
        print(json.dumps(out))
    else:
        print(_text(out, diag, args.data))
        if evidence:
            print("\n" + evidence.text())
        for path in (args.report, args.markdown):
            if path is not None:
                print(f"wrote {path}")
    return 0
