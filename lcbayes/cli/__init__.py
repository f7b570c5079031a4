"""The ``lcbayes`` command, one module per subcommand:

* ``lcbayes fit`` (:mod:`.fit`): fit one model (EM, VBEM or the exact evidence);
* ``lcbayes compare`` (:mod:`.compare`): compare candidates by every method;
* ``lcbayes rjmcmc`` (:mod:`.rjmcmc`): posterior over the number of classes;
* ``lcbayes learn`` (:mod:`.learn`): search for the number of classes (split/merge);
* ``lcbayes demo`` (:mod:`.demo`): the simulated three-class demo and its reports;
* ``lcbayes datasets`` (:mod:`.datasets`): the shipped classic data sets, listed or written
  as CSV.

Bad input prints a one-line error and exits with status 2; Ctrl-C prints one line and exits
with status 130 at once (:mod:`.interrupt`); output cut short by its reader (``| head``) ends
quietly with status 1. JAX's persistent compilation cache is
on (:mod:`lcbayes.cache`; ``LCBAYES_CACHE_DIR`` moves it or, set to ``off``, turns it off), so a
second run is fast. Options left out keep the defaults of the library function behind
the subcommand (read from its signature, so the two never disagree).

A structure file is JSON: ``{"kind": "hlc", "tree": {...}, "cardinalities": {...}}`` or
``{"kind": "dag", "parents": {...}, "hidden": {...}}`` with the arguments of
:func:`lcbayes.hlc` / :func:`lcbayes.dag`.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from .._version import __version__
from ..errors import LcbayesError
from . import compare, datasets, demo, fit, learn, rjmcmc
from .interrupt import exit_on_interrupt, leave

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lcbayes",
        description="Bayesian model comparison for latent class and other hidden-variable models.",
    )
    parser.add_argument("--version", action="version", version=f"lcbayes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (fit, compare, rjmcmc, learn, demo, datasets):
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lcbayes`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    with exit_on_interrupt(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = args.handler(args)
        except LcbayesError as exc:
            print(f"lcbayes: error: {exc}", file=sys.stderr)
            status = 2
        except KeyboardInterrupt:
            leave()
        except BrokenPipeError:   # the reader of the output left (``| head``): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            status = 1
    messages = (str(w.message) for w in caught if issubclass(w.category, UserWarning))
    for message in dict.fromkeys(messages):  # each once, in order
        print(f"lcbayes: warning: {message}", file=sys.stderr)
    return status
