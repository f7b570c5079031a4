"""Reading a CSV or Parquet file bigger than memory into pattern blocks: :func:`scan_file`.

The file is read twice, ``chunk_rows`` rows at a time, and never held whole:

1. **Labels.** Each column's distinct values are gathered over the chunks and turned into labels
   by the rules of :func:`lcbayes.encoding.encode_column` (sorted; integral numbers as integers;
   strings stripped; NA strings, empty and blank fields missing), so a file read here and by
   :meth:`lcbayes.Dataset.from_csv` gets the same labels and codes. A CSV column is typed as
   pandas types the whole file: numbers where every chunk's values are numbers, booleans where
   every chunk's are, else the text as written (such a column is read once more, as text); a
   Parquet dictionary column (a pandas ``Categorical``) keeps its categories' order. A
   column with more than ``max_categories`` values, or none observed, is refused with
   :meth:`~lcbayes.Dataset.from_pandas`'s message; a constant one is reported. ``categories``
   (``{column: labels}``, e.g. a model's) skips this pass for the columns it names.
2. **Patterns.** Each chunk is read again (text columns as strings, numbers as pandas types
   them: measured faster than a fixed float64), coded against those labels (numbers by a sorted
   search, other values by :func:`pandas.factorize` and the few distinct values coded) and
   compressed to unique patterns with counts, which are added to the current block
   by their mixed-radix keys (:class:`~lcbayes.streaming.blocks.PatternSum`). Whenever the block
   passes ``block_patterns`` distinct patterns, full blocks are written as ``.npz`` files into a
   spill folder and the rest goes on (a pattern may so be in several blocks: the engines add
   them up). The last block stays in memory.

Memory: one chunk of rows (its DataFrame and codes) and the distinct patterns of one block. The
spill folder (in ``spill_dir``, default the system's temporary folder) is removed with the last
:class:`~lcbayes.streaming.blocks.PatternBlocks` holding it (see there). Missing values are data
as in :class:`~lcbayes.Dataset`: rows are never dropped; rows with no observed value count in
``n_rows``, not in ``n_observed_rows``, and are reported.

Example::

    blocks = lcb.scan_file("big.csv", chunk_rows=1_000_000)   # or "big.parquet"
    data = blocks.to_dataset()      # the distinct patterns as a Dataset, when they fit
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..csvfile import read_chunks, read_header, table_format
from ..data import DEFAULT_MAX_CATEGORIES, chosen_columns
from ..encoding import (
    MISSING,
    check_not_empty,
    encode_column,
    fully_missing_message,
    too_many_message,
)
from ..errors import ArgumentError, ArgumentTypeError, DataError
from ..validation import check_int
from .blocks import PatternBlocks, PatternSum, SpillFolder

__all__ = ["PARQUET_SUFFIXES", "scan_file"]

#: File name endings read as Parquet (anything else is read as CSV).
PARQUET_SUFFIXES = (".parquet", ".pq")


def scan_file(
    path: str | os.PathLike,
    columns: Sequence[str] | None = None,
    *,
    chunk_rows: int = 1_000_000,
    max_categories: int = DEFAULT_MAX_CATEGORIES,
    categories: Mapping[str, Sequence[Hashable]] | None = None,
    block_patterns: int = 1_000_000,
    spill_dir: str | os.PathLike | None = None,
    sep: str | None = None,
    encoding: str | None = None,
) -> PatternBlocks:
    """A CSV or Parquet file as :class:`~lcbayes.streaming.blocks.PatternBlocks`, read in
    chunks (module docstring).

    Args:
        path: a CSV file, or a Parquet file (``.parquet`` / ``.pq``; needs ``pyarrow``:
            ``pip install 'lcbayes[parquet]'``).
        columns: the columns to use, in this order (default: all, or those of
            ``categories``).
        chunk_rows: rows read at a time.
        max_categories: a column with more distinct values is refused (bin it first).
        categories: ``{column: labels}`` to code those columns against fixed labels (a value
            outside them is refused); the first pass is skipped for them.
        block_patterns: the most distinct patterns a block holds.
        spill_dir: an existing folder to write block files into (in a new folder of its own).
        sep, encoding: of a CSV file, found as :meth:`lcbayes.Dataset.from_csv` finds them
            unless given.
    """
    if not isinstance(path, str | os.PathLike):
        raise ArgumentTypeError(f"path must be a file path, got {type(path).__name__}")
    chunk_rows = check_int(chunk_rows, "chunk_rows", 1)
    block_patterns = check_int(block_patterns, "block_patterns", 1)
    max_categories = check_int(max_categories, "max_categories", 1)
    if spill_dir is not None and not Path(spill_dir).is_dir():
        raise ArgumentError(f"spill_dir must be an existing folder, got {str(spill_dir)!r}")
    table = _Table(Path(path), chunk_rows, sep, encoding)
    if columns is None and categories is not None:
        columns = list(categories)
    columns = table.names if columns is None else chosen_columns(table.names, columns)
    fixed = {str(c): tuple(lab) for c, lab in (categories or {}).items()}
    labels = {c: fixed[c] for c in columns if c in fixed}
    kinds = {c: _kind_of_labels(lab) for c, lab in labels.items()}
    for name, (kind, lab) in _scan_labels(table, [c for c in columns if c not in labels],
                                          max_categories).items():
        kinds[name], labels[name] = kind, lab
    blocks = _scan_patterns(table, columns, [labels[c] for c in columns], kinds,
                            block_patterns, spill_dir)
    fully_missing = blocks.n_rows - blocks.n_observed_rows
    if fully_missing and categories is None:  # as from_pandas: rows to classify may be empty
        warnings.warn(fully_missing_message(fully_missing, blocks.n_rows), stacklevel=2)
    return blocks


class _Table:
    """A CSV or Parquet file read in chunks of rows."""

    def __init__(self, path: Path, chunk_rows: int, sep: str | None,
                 encoding: str | None) -> None:
        name = repr(str(path))
        if path.is_dir():
            raise DataError(f"{name} is a folder, not a data file; give the file's path")
        if not path.is_file():
            raise DataError(f"no such file: {name}")
        self.path, self.chunk_rows = path, chunk_rows
        self.parquet = path.suffix.lower() in PARQUET_SUFFIXES
        if self.parquet:
            self.file = _parquet_file(path, name)
            self.names = [str(c) for c in self.file.schema_arrow.names]
        else:
            self.encoding, self.sep = table_format(path, encoding=encoding, sep=sep)
            self.names = read_header(path, encoding=self.encoding, sep=self.sep)
        dupes = sorted({n for n in self.names if self.names.count(n) > 1})
        if dupes:
            raise DataError(f"duplicate column names {dupes}: rename them so each is unique")

    def chunks(self, columns: list[str],
               dtypes: Mapping[str, object] | None = None) -> Iterator[pd.DataFrame]:
        """The file's ``columns``, chunk by chunk (a CSV file's parsed with ``dtypes``)."""
        if self.parquet:
            for batch in self.file.iter_batches(batch_size=self.chunk_rows, columns=columns):
                yield batch.to_pandas()[columns]
        else:
            for chunk in read_chunks(self.path, self.chunk_rows, encoding=self.encoding,
                                     sep=self.sep, usecols=columns, dtype=dtypes,
                                     low_memory=False):  # the chunk is the memory bound
                yield chunk[columns]


def _parquet_file(path: Path, name: str):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"reading the Parquet file {name} needs pyarrow: pip install "
                        "'lcbayes[parquet]'") from None
    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(f"{name} is not a readable Parquet file: {exc}") from None


# ---------------------------------------------------------------------- pass 1: labels
def _scan_labels(table: _Table, columns: list[str],
                 max_categories: int) -> dict[str, tuple[Hashable, tuple[Hashable, ...]]]:
    """Per column, its kind (``"number"``, ``"bool"``, ``"text"``, ...) and labels."""
    if not columns:
        return {}
    kinds: dict[str, set[Hashable]] = {c: set() for c in columns}
    values: dict[str, set] = {c: set() for c in columns}

    def gather(chunk: pd.DataFrame, names: list[str]) -> None:
        for name in names:
            kind, distinct = _chunk_values(chunk[name])
            kinds[name].update([kind] if kind else [])
            if _kind(kinds[name]) == "mixed" and not table.parquet:
                values[name].clear()  # read again as text below
                continue
            values[name].update(distinct)
            if len(values[name]) > max_categories and len(_labels(
                    name, _kind(kinds[name]), values[name], len(values[name]))) > max_categories:
                raise DataError(too_many_message(name, f"more than {max_categories}",
                                                 max_categories))  # no need to read on

    n_rows = 0
    for chunk in table.chunks(columns):
        gather(chunk, columns)
        n_rows += chunk.shape[0]
    check_not_empty(n_rows, len(columns))
    mixed = [c for c in columns if _kind(kinds[c]) == "mixed" and not table.parquet]
    if mixed:  # typed as text over the whole file, as pandas types it
        kinds.update({c: set() for c in mixed})
        for chunk in table.chunks(mixed, dict.fromkeys(mixed, str)):
            gather(chunk, mixed)
    return {c: (_kind(kinds[c]), _labels(c, _kind(kinds[c]), values[c], max_categories))
            for c in columns}


def _kind(kinds: set[Hashable]) -> Hashable:
    """The kind of a column whose chunks were of ``kinds``."""
    return next(iter(kinds)) if len(kinds) == 1 else (None if not kinds else "mixed")


def _chunk_values(series: pd.Series) -> tuple[Hashable, list]:
    """The kind of one chunk of a column (None: no value observed; ``"mixed"``: an object
    column of several types; ``("category", categories)``: a pandas ``Categorical``, as a
    Parquet dictionary column reads) and its distinct observed values."""
    category = None
    if isinstance(series.dtype, pd.CategoricalDtype):
        category = ("category", tuple(series.dtype.categories))
        series = series.astype(object)
    distinct = pd.unique(series.to_numpy(dtype=object) if series.dtype == object else series)
    distinct = [v for v in distinct.tolist() if not pd.isna(v)]
    if not distinct or category:
        return (category if distinct else None), distinct
    if pd.api.types.is_bool_dtype(series.dtype):
        return "bool", distinct
    if pd.api.types.is_numeric_dtype(series.dtype):
        return "number", distinct
    if all(isinstance(v, str) for v in distinct):
        return "text", distinct
    return ("bool" if all(isinstance(v, bool | np.bool_) for v in distinct) else "mixed"), distinct


def _labels(name: str, kind: Hashable, values: set,
            max_categories: int) -> tuple[Hashable, ...]:
    """The labels :func:`encode_column` gives a column of these distinct values (its errors and
    its warning of a constant column included): a ``Categorical``'s keep its categories'
    order, as :meth:`~lcbayes.Dataset.from_pandas` keeps it."""
    if isinstance(kind, tuple):
        series = pd.Series(pd.Categorical(list(values), categories=kind[1]))
    else:
        series = pd.Series(sorted(values) if kind == "number" else list(values),
                           dtype=None if kind == "number" else object)
    return encode_column(series, name, max_categories)[1]


def _kind_of_labels(labels: tuple[Hashable, ...]) -> str:
    """The kind of a column coded against given labels: how a CSV file's chunks are read."""
    if all(isinstance(v, bool | np.bool_) for v in labels):
        return "bool"
    if all(isinstance(v, int | np.integer) for v in labels):
        return "number"
    return "text"


# ---------------------------------------------------------------------- pass 2: patterns
def _scan_patterns(table: _Table, columns: list[str], labels: list[tuple[Hashable, ...]],
                   kinds: Mapping[str, str], block_patterns: int,
                   spill_dir: str | os.PathLike | None) -> PatternBlocks:
    """The file's rows coded against ``labels`` as blocks of unique patterns (module
    docstring)."""
    dtypes = {c: str for c in columns if kinds[c] == "text"}  # numbers: pandas' own (faster)
    block = PatternSum(len(lab) for lab in labels)
    files: list[Path] = []
    spill = None
    n_rows = n_observed = 0
    for chunk in table.chunks(columns, dtypes):
        codes = np.empty(chunk.shape, dtype=np.int32, order="F")  # columns contiguous
        observed = np.zeros(chunk.shape[0], dtype=bool)
        for j, (name, lab) in enumerate(zip(columns, labels, strict=True)):
            codes[:, j] = _codes(chunk[name], name, lab)
            observed |= codes[:, j] >= 0
        n_rows += codes.shape[0]
        n_observed += int(np.count_nonzero(observed))
        block.add(codes)
        while len(block) > block_patterns:
            if spill is None:
                spill = SpillFolder.create(spill_dir)
            files.append(spill.write(len(files), *block.take(block_patterns)))
    check_not_empty(n_rows, len(columns))
    last = block.take()
    return PatternBlocks(columns=tuple(columns), labels=tuple(labels),
                         blocks=(*files, last) if last[0].shape[0] else tuple(files),
                         n_rows=n_rows, n_observed_rows=n_observed,
                         block_patterns=block_patterns, spill=spill)


def _codes(series: pd.Series, name: str, labels: tuple[Hashable, ...]) -> np.ndarray:
    """The int32 codes of one chunk of a column against its labels: numbers against integer
    labels by a sorted search, anything else by :func:`pandas.factorize` with the distinct
    values coded by :func:`encode_column` (which also words the error of a value that is not
    among the labels)."""
    if series.dtype.kind in "iuf" and all(type(v) is int for v in labels):
        values = series.to_numpy()
        ordered = np.asarray(labels, dtype=np.float64 if series.dtype.kind == "f" else np.int64)
        order = np.argsort(ordered)
        ordered = ordered[order]
        at = np.minimum(np.searchsorted(ordered, values), len(labels) - 1)
        found = ordered[at] == values
        missing = np.isnan(values) if series.dtype.kind == "f" else False
        if np.all(found | missing):  # else the route below words the error
            return np.where(found, order[at], MISSING).astype(np.int32)
    index, distinct = pd.factorize(series)
    coded, _ = encode_column(pd.Series(distinct), name, len(labels), labels)
    return np.append(coded, MISSING).astype(np.int32)[index]  # index -1 (NA) picks MISSING
