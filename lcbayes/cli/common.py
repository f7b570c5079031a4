"""What the subcommands of ``lcbayes`` share: usage errors, reading the data file and a
structure file, defaults read from the engines' signatures, and output paths checked before the
long computation starts."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LcbayesError

if TYPE_CHECKING:   # ``lcbayes datasets`` and ``--help`` import neither pandas nor JAX
    from ..data import Dataset
    from ..structure import Structure

__all__ = ["UsageError", "add_data_arguments", "add_engine_option_argument",
           "add_executor_arguments", "check_classes", "check_output", "default", "engine_options",
           "executor_options", "parse_engine_options", "read_data", "sheet_option",
           "structure_file"]


class UsageError(LcbayesError):
    """A command-line argument is wrong."""


def default(function: Callable, name: str):
    """The default of ``function``'s argument ``name`` (so the command line never repeats an
    engine's default)."""
    return inspect.signature(function).parameters[name].default


def engine_options(args: argparse.Namespace, **names: str) -> dict:
    """``{engine argument: value}`` of the options given on the command line (``names`` maps
    engine arguments to option attributes); an option left out keeps the engine's default."""
    return {arg: getattr(args, attr) for arg, attr in names.items()
            if getattr(args, attr) is not None}


def add_engine_option_argument(parser: argparse.ArgumentParser) -> None:
    """``--engine-option ENGINE.NAME=VALUE`` (repeatable): ``lcb.compare``'s
    ``engine_options`` on the command line (:func:`parse_engine_options`)."""
    parser.add_argument("--engine-option", action="append", default=[],
                        metavar="ENGINE.NAME=VALUE",
                        help="an option of one engine behind the methods, as lcb.compare's "
                             "engine_options (repeatable): ais.chains=32, smc.particles=256, "
                             "blrt.replicates=99, em.max_iter=500, exact.max_terms=1e6, "
                             "ais.target_stderr=null")


def add_executor_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--executor``, ``--scheduler`` and ``--workers``: where ``what`` run, as the
    ``executor``, ``scheduler`` and ``workers`` arguments of the Python functions
    (:func:`lcbayes.execution.executor`)."""
    parser.add_argument("--executor", default=None, choices=["serial", "dask"],
                        help=f"run {what} here (serial, default) or as Dask tasks (dask; needs "
                             "lcbayes[dask]): a local cluster of --workers processes, or the "
                             "cluster of --scheduler")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="the Dask scheduler to join (tcp://host:8786; default: "
                             "$LCBAYES_SCHEDULER); implies --executor dask")
    parser.add_argument("--workers", type=int, default=None,
                        help="how many run at once: threads here, or the processes of the "
                             "local Dask cluster with --executor dask (default: the CPU "
                             "cores); the numbers are the same")


def executor_options(args: argparse.Namespace) -> dict:
    """The ``executor``, ``scheduler`` and ``workers`` arguments of
    :func:`add_executor_arguments`, checked."""
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    executor = "dask" if args.scheduler is not None else args.executor
    if args.executor == "serial" and args.scheduler is not None:
        raise UsageError("--scheduler runs on Dask: leave out --executor serial")
    return {"executor": executor, "scheduler": args.scheduler, "workers": args.workers}


def parse_engine_options(items: list[str]) -> dict[str, dict]:
    """``["ais.chains=32", "ais.kernel=mh"]`` -> ``{"ais": {"chains": 32, "kernel": "mh"}}``:
    each value read as JSON (numbers, ``true``, ``null``, lists), else kept as text."""
    options: dict[str, dict] = {}
    for item in items:
        key, sep, text = item.partition("=")
        engine, dot, name = key.strip().partition(".")
        if not sep or not dot or not engine or not name:
            raise UsageError(f"bad --engine-option {item!r}: write ENGINE.NAME=VALUE, e.g. "
                             "ais.chains=32")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        options.setdefault(engine, {})[name] = value
    return options


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The data file, ``--columns`` and ``--max-categories`` of every data subcommand."""
    from ..data import DEFAULT_MAX_CATEGORIES

    parser.add_argument("data", help="CSV file with a header row, one column per categorical "
                                     "item (gzip, bzip2, xz or zip compressed, or an .xlsx "
                                     "workbook); - reads standard input")
    parser.add_argument("--columns", help="comma-separated columns to use (default: all)")
    parser.add_argument("--max-categories", type=int, default=DEFAULT_MAX_CATEGORIES,
                        help=f"refuse columns with more distinct values (default "
                             f"{DEFAULT_MAX_CATEGORIES})")
    parser.add_argument("--encoding", help="text encoding of the file (default: UTF-8, else "
                                           "Windows-1252 or Latin-1, with a warning)")
    parser.add_argument("--sep", help="the delimiter (default: sniffed among , ; tab |)")
    parser.add_argument("--na-values", metavar="CODES",
                        help="comma-separated values that mean missing, besides empty cells "
                             "(survey codes, e.g. --na-values='-99,.,N/A'; write = before a "
                             "first code that starts with -)")
    parser.add_argument("--sheet", help="the sheet of an Excel workbook to read, by name or "
                                        "number from 0 (needed where several hold data)")
    parser.add_argument("--allow-ragged", action="store_true",
                        help="read the fields missing from rows shorter than the header as "
                             "missing values (default: refuse such rows, naming their lines)")
    parser.add_argument("--chunk-rows", type=int, default=None,
                        help="read the file this many rows at a time, keeping only its "
                             "distinct patterns (files bigger than memory); a Parquet file "
                             "(.parquet, .pq) is always read so")


#: File suffixes read as Parquet.
PARQUET = (".parquet", ".pq")


def sheet_option(args: argparse.Namespace) -> str | int | None:
    """``--sheet``: a sheet's name, or its number from 0 where it is all digits."""
    sheet = args.sheet
    return int(sheet) if sheet is not None and sheet.isdigit() else sheet


def read_data(args: argparse.Namespace) -> Dataset:
    """The data file restricted to ``--columns``: a CSV file read whole, or (``--chunk-rows``,
    a Parquet file) read in chunks by :func:`lcbayes.scan_file` into the pattern form of
    :meth:`Dataset.from_patterns`, the same data set without its rows in memory."""
    from ..data import Dataset

    columns = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    chunk_rows = getattr(args, "chunk_rows", None)
    sheet = sheet_option(args)
    if chunk_rows is None and Path(args.data).suffix.lower() not in PARQUET:
        return Dataset.from_csv(args.data, columns=columns, max_categories=args.max_categories,
                                encoding=args.encoding, sep=args.sep,
                                allow_ragged=args.allow_ragged, na_values=args.na_values,
                                sheet=sheet)
    if sheet is not None:
        raise UsageError("--sheet chooses a sheet of an Excel workbook; it does not apply "
                         "with --chunk-rows or to a Parquet file")
    from ..streaming.reader import scan_file

    sizes = {} if chunk_rows is None else {"chunk_rows": chunk_rows}
    return scan_file(args.data, columns=columns, max_categories=args.max_categories,
                     encoding=args.encoding, sep=args.sep, allow_ragged=args.allow_ragged,
                     na_values=args.na_values, **sizes).to_dataset()


def check_classes(ks: list[int], data: Dataset) -> None:
    """Refuse more classes than the data have rows (a class per row is already saturated;
    more than the distinct patterns is warned about by the structure's check)."""
    for k in ks:
        if k > data.n_rows:
            raise UsageError(
                f"--n-classes {k} is more than the data's {data.n_rows} rows "
                f"({data.n_patterns} distinct response patterns): classes beyond the patterns "
                f"cannot be told apart; give at most {data.n_patterns}")


def model_structure(args: argparse.Namespace, data: Dataset) -> tuple[Structure, Dataset]:
    """The model ``--n-classes K`` or ``--structure FILE.json`` names (exactly one of them) and
    the data checked against it."""
    from ..constructors import latent_class

    if (args.n_classes is None) == (args.structure is None):
        raise UsageError("give exactly one of --n-classes K or --structure FILE.json")
    if args.n_classes is not None:
        check_classes([args.n_classes], data)
        return latent_class(data, args.n_classes), data
    structure = structure_file(args.structure, data)
    return structure, structure.check_data(data)


def structure_file(path: str, data: Dataset) -> Structure:
    """The HLC or DAG structure described by a JSON file (``{"kind": "hlc", "tree": ...,
    "cardinalities": ...}`` or ``{"kind": "dag", "parents": ..., "hidden": ...}``)."""
    from ..constructors import dag, hlc

    try:
        spec = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read structure file {path!r}: {exc}") from None
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind not in ("hlc", "dag"):
        raise UsageError(f"structure file {path!r} must be a JSON object with kind 'hlc' or "
                         "'dag'")
    structure = (hlc(data, spec.get("tree", {}), spec.get("cardinalities", {})) if kind == "hlc"
                 else dag(data, spec.get("parents", {}), spec.get("hidden", {})))
    left_out = [c for c in data.columns if c not in structure.observed_names]
    if left_out:
        warnings.warn(f"the structure in {path!r} observes {len(data.columns) - len(left_out)} "
                      f"of the data's {len(data.columns)} columns; left out: "
                      f"{', '.join(left_out)} (--columns chooses the columns and silences this)",
                      stacklevel=2)
    return structure


def check_output(path: str | None, option: str) -> None:
    """Refuse an output path that cannot be written before the long computation starts: a
    folder, a path under a file, or a place this process cannot write to (probed by creating
    and removing a file in the nearest existing folder)."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path!r} is a folder; give a file name")
    folder = target.absolute().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"{option} {path!r} cannot be written: {str(folder)!r} is a file, "
                         "not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
        if target.exists() and not os.access(target, os.W_OK):
            raise PermissionError(f"{str(target)!r} is read-only")
    except OSError as exc:
        raise UsageError(f"{option} {path!r} cannot be written ({exc.strerror or exc}); give "
                         "a path in a folder you can write to") from None
