"""``lcbayes check DATA.csv --n-classes K [--structure FILE.json] [--draws N] [--chains C]
[--warmup W] [--replicates R] [--refit bad|all|none] [--seed S] [--report out.html|out.md]
[--json]``: does one model fit, and how well does it predict? Gibbs draws of the model
(:func:`lcbayes.gibbs`), their PSIS-LOO and WAIC (:func:`lcbayes.loo`) and posterior predictive
checks (:func:`lcbayes.posterior_predictive_check`), printed, as one JSON object, or as a
report."""

from __future__ import annotations

import argparse
import json
import time

from ..checking.loo import loo
from ..checking.ppc import posterior_predictive_check
from ..checking.report import write_check_report
from ..samplers.gibbs import gibbs
from .common import (
    UsageError,
    add_data_arguments,
    check_output,
    default,
    model_structure,
    read_data,
)

__all__ = ["add_arguments", "run"]


def add_arguments(check: argparse.ArgumentParser) -> None:
    """The arguments of ``lcbayes check``."""
    add_data_arguments(check)
    check.add_argument("--n-classes", type=int, help="number of latent classes (latent class "
                                                     "model)")
    check.add_argument("--structure", help="JSON file describing an HLC or DAG structure instead")
    check.add_argument("--draws", type=int, default=default(gibbs, "draws"),
                       help=f"Gibbs draws per chain (default {default(gibbs, 'draws')})")
    check.add_argument("--warmup", type=int, default=default(gibbs, "warmup"),
                       help=f"Gibbs warm-up sweeps (default {default(gibbs, 'warmup')})")
    check.add_argument("--chains", type=int, default=default(gibbs, "chains"),
                       help=f"Gibbs chains (default {default(gibbs, 'chains')})")
    check.add_argument("--replicates", type=int,
                       default=default(posterior_predictive_check, "draws"),
                       help="replicated data sets of the posterior predictive checks (default "
                            f"{default(posterior_predictive_check, 'draws')})")
    check.add_argument("--refit", default=default(loo, "refit"), choices=["bad", "all", "none"],
                       help="exact leave-one-out by refitting: for the patterns whose Pareto k "
                            "is too high (bad, default), all patterns, or none")
    check.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    check.add_argument("--report", help="write a report: .html (one file) or .md (Markdown "
                                        "with PNG figures beside it)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    check_output(args.report, "--report")
    if args.report is not None and not args.report.lower().endswith((".html", ".md")):
        raise UsageError(f"--report {args.report!r}: give a .html or .md file")
    data = read_data(args)
    structure, data = model_structure(args, data)
    model = (f"LC({args.n_classes})" if args.n_classes is not None
             else f"the {structure.kind} structure of {args.structure}")
    draws = gibbs(structure, data, draws=args.draws, warmup=args.warmup, chains=args.chains,
                  seed=args.seed)
    cross = loo(draws, data, refit=args.refit, seed=args.seed)
    check = posterior_predictive_check(draws, data, draws=args.replicates, seed=args.seed)
    seconds = time.perf_counter() - start
    if args.report is not None:
        write_check_report(args.report, cross, check, model,
                           {"data": args.data, "model": model, "draws": args.draws,
                            "warmup": args.warmup, "chains": args.chains,
                            "replicates": check.n_replicates, "refit": args.refit,
                            "seed": args.seed, "seconds": round(seconds, 2)})
    if args.json:
        print(json.dumps({"model": model, "loo": cross.to_dict(), "ppc": check.to_dict(),
                          "seconds": seconds}))
        return 0
    print(f"{model} on {data.n_rows} rows: {args.chains} Gibbs chains of {args.draws} draws "
          f"({draws.seconds:.1f} s)\n")
    print(cross.summary())
    print()
    print(check.summary())
    if args.report is not None:
        print(f"\nreport: {args.report}")
    return 0
