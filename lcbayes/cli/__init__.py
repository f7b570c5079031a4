"""The ``lcbayes`` command, one module per subcommand:

* ``lcbayes fit`` (:mod:`.fit`): fit one model (EM, VBEM or the exact evidence);
* ``lcbayes compare`` (:mod:`.compare`): compare candidates by every method;
* ``lcbayes check`` (:mod:`.check`): posterior predictive checks and PSIS-LOO of one model;
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

import atexit
import errno
import importlib
import os
import re
import sys
import threading
import warnings
from collections.abc import Collection, Iterable, Iterator, Sequence

from .._version import __version__
from ..errors import LcbayesError
from .interrupt import exit_on_interrupt, leave
from .parser import Parser

__all__ = ["COMMANDS", "entry", "main"]

#: The subcommands in the order ``lcbayes --help`` lists them, each with its line there. The
#: module of one (``lcbayes.cli.NAME``, with ``add_arguments(parser)`` and ``run(args)``) is
#: imported only when it is the one that runs, so that ``lcbayes --help``, ``--version`` and
#: ``lcbayes datasets`` start without JAX and ``fit`` without the comparison layer.
COMMANDS: dict[str, str] = {
    "fit": "fit one model (EM, VBEM, AIS or exact evidence) and print its estimates and scores",
    "compare": "compare numbers of classes (and other structures) by every method",
    "check": "does one model fit? posterior predictive checks and PSIS-LOO",
    "rjmcmc": "posterior over the number of classes by reversible-jump MCMC",
    "learn": "search for the number of latent classes (split/merge with parameter reuse)",
    "demo": "simulate a 3-class data set, compare 1-5 classes, write reports",
    "datasets": "list the shipped classic data sets, or write one as CSV",
}


def _parser(commands: Collection[str] | None = None) -> Parser:
    """The command's parser with the arguments of the subcommands in ``commands`` (all of
    them when None); the others are listed by name and line only."""
    parser = Parser(
        prog="lcbayes",
        description="Bayesian model comparison for latent class and other hidden-variable models.",
    )
    parser.add_argument("--version", action="version", version=f"lcbayes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, line in COMMANDS.items():
        command = sub.add_parser(name, help=line)
        if commands is None or name in commands:
            importlib.import_module(f"{__name__}.{name}").add_arguments(command)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the command
    itself has only ``--help`` and ``--version``, which take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``lcbayes`` command on ``argv`` (default: the process's arguments); returns the exit
    status (:func:`entry`, the console script, then ends the process)."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = _parser([name for name in [_command(words)] if name in COMMANDS])
    parser.words = None if argv is None else list(argv)
    args = parser.parse_args(argv)
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
            _drop_output()
            status = 1
        except OSError as exc:    # standard output cannot be written (a full disk)
            if not _is_output_error(exc):
                raise
            _drop_output()
            print(f"lcbayes: error: cannot write the output: {exc.strerror or exc}; write it "
                  "to a file with room (or give --report / --json a path)", file=sys.stderr)
            status = 2
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_output()
        status = status or 1
    except OSError as exc:
        _drop_output()
        print(f"lcbayes: error: cannot write the output: {exc.strerror or exc}",
              file=sys.stderr)
        status = 2
    messages = _collapsed(str(w.message) for w in caught if issubclass(w.category, UserWarning))
    for message in dict.fromkeys(messages):  # each once, in order
        print(f"lcbayes: warning: {message}", file=sys.stderr)
    return status


def entry() -> None:
    """The ``lcbayes`` console script (and ``python -m lcbayes``): :func:`main`, then the
    process ends as soon as its output is flushed and its exit handlers have run, without
    tearing the interpreter down (freeing every module and JAX's compiled programs, a third of
    a second of a small fit). With a thread still running it exits the usual way."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # main has reported what could not be written
            pass
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()
    os._exit(status)


#: JAX's warning for each program its persistent cache could not store or load.
_CACHE_ENTRY = re.compile(r"Error (writing|reading) persistent compilation cache entry")


def _collapsed(messages: Iterable[str]) -> Iterator[str]:
    """``messages`` with JAX's per-program cache warnings made one line (the first kept)."""
    entries = 0
    for message in messages:
        if _CACHE_ENTRY.match(message):
            entries += 1
            if entries > 1:
                continue
            message = (f"the compilation cache could not be used ({message[:200]}); results "
                       "are not affected, but compiled programs are not kept: set "
                       "LCBAYES_CACHE_DIR to a folder you can write (or to off)")
        yield message


def _is_output_error(exc: OSError) -> bool:
    """Whether ``exc`` came from writing standard output (flushing it fails the same way)."""
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return exc.errno in (errno.ENOSPC, errno.EIO, errno.EPIPE)


def _drop_output() -> None:
    """Send what is left of standard output nowhere, so that flushing it at exit is quiet."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):   # a stand-in stdout (a test's) has no descriptor
        pass
