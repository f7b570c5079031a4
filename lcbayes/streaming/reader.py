"""Reading a CSV or Parquet file bigger than memory into pattern blocks: :func:`scan_file`.

The file is parsed once, ``chunk_rows`` rows at a time, and never held whole:

1. **Labels** (:class:`_FirstPass`). Each column's distinct values are gathered over the chunks
   and turned into labels by the rules of :func:`lcbayes.encoding.encode_column` (sorted;
   integral numbers as integers; strings stripped; NA strings, empty and blank fields missing),
   so a file read here and by :meth:`lcbayes.Dataset.from_csv` gets the same labels and codes.
   A CSV column is typed as pandas types the whole file: numbers where every chunk's values are
   numbers, booleans where every chunk's are, else the text as written; a Parquet dictionary
   column (a pandas ``Categorical``) keeps its categories' order. A column with more than
   ``max_categories`` values, or none observed, is refused with
   :meth:`~lcbayes.Dataset.from_pandas`'s message (the first chunk that shows too many values
   stops the scan); a constant one, and a rare level that looks like a missing-value code
   (:mod:`lcbayes.missing_codes`), are reported. ``categories`` (``{column: labels}``, e.g. a
   model's) gives the labels of the columns it names; when it names them all, this pass is
   left out and the rows are coded as they are read. Meanwhile each chunk's rows, in
   provisional codes (values numbered as they come), are compressed to unique patterns with
   counts (*pieces*, int8 where the values are few: in memory up to ``block_patterns``
   patterns in all, then in files).
2. **Patterns.** The pieces are mapped to the labels' codes and added to the current block by
   their mixed-radix keys (:class:`~lcbayes.streaming.blocks.PatternSum`). Whenever the block
   passes ``block_patterns`` distinct patterns, full blocks are written as ``.npz`` files into a
   spill folder and the rest goes on (a pattern may be in several blocks: the engines add them
   up); the last block stays in memory. Where a CSV column's type changed between chunks (it
   is then text), the file is parsed a second time, coded against the labels directly.

Memory: one chunk of rows (pandas' parser dominates; ``reports/streaming.md`` measures it),
the pieces held and the distinct patterns of one block. The spill folders (in
``spill_dir``, default the system's temporary folder) are removed with the objects holding them:
the pieces' when the scan ends, the blocks' with the last
:class:`~lcbayes.streaming.blocks.PatternBlocks` holding it (see there). Missing values are data
as in :class:`~lcbayes.Dataset`: rows are never dropped; rows with no observed value count in
``n_rows``, not in ``n_observed_rows``, and are reported.

Example: ``lcb.scan_file("big.csv").to_dataset()`` (or ``"big.parquet"``), the distinct
patterns as a Dataset, where they fit in memory.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .. import missing_codes
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

PARQUET_SUFFIXES = (".parquet", ".pq")  #: read as Parquet (anything else is read as CSV)


def scan_file(
    path: str | os.PathLike,
    *,
    columns: Sequence[str] | None = None,
    chunk_rows: int = 250_000,
    max_categories: int = DEFAULT_MAX_CATEGORIES,
    categories: Mapping[str, Sequence[Hashable]] | None = None,
    block_patterns: int = 1_000_000,
    spill_dir: str | os.PathLike | None = None,
    sep: str | None = None,
    encoding: str | None = None,
    allow_ragged: bool = False,
    na_values: Iterable[Hashable] | str | None = None,
) -> PatternBlocks:
    """A CSV or Parquet file as :class:`~lcbayes.streaming.blocks.PatternBlocks`, read in
    chunks (module docstring).

    Args:
        path: a CSV file, or a Parquet file (``.parquet`` / ``.pq``; needs ``pyarrow``:
            ``pip install 'lcbayes[parquet]'``).
        columns: the columns to use, in this order (default: all, or ``categories``').
        chunk_rows: rows read at a time (the memory a scan holds; larger is no faster).
        max_categories: a column with more distinct values is refused (bin it first).
        categories: ``{column: labels}`` to code those columns against fixed labels (a value
            outside them is refused; the column may be constant or all missing).
        block_patterns: the most distinct patterns a block holds.
        spill_dir: an existing folder to write block files into (in a new folder of its own).
        sep, encoding, allow_ragged, na_values: as in :meth:`lcbayes.Dataset.from_csv` (the
            first three for a CSV file).
    """
    if not isinstance(path, str | os.PathLike):
        raise ArgumentTypeError(f"path must be a file path, got {type(path).__name__}")
    chunk_rows = check_int(chunk_rows, "chunk_rows", 1)
    block_patterns = check_int(block_patterns, "block_patterns", 1)
    max_categories = check_int(max_categories, "max_categories", 1)
    if spill_dir is not None and not Path(spill_dir).is_dir():
        raise ArgumentError(f"spill_dir must be an existing folder, got {str(spill_dir)!r}")
    table = _Table(Path(path), chunk_rows, sep, encoding, allow_ragged,
                   missing_codes.as_strings(na_values))
    if columns is None and categories is not None:
        columns = list(categories)
    columns = table.names if columns is None else chosen_columns(table.names, columns)
    fixed = {str(c): tuple(lab) for c, lab in (categories or {}).items()}
    if all(c in fixed for c in columns):  # the labels are known: one pass codes the rows
        labels = [fixed[c] for c in columns]
        pieces = _coded_chunks(table, columns, labels,
                               {c: _kind_of_labels(fixed[c]) for c in columns})
    else:
        first = _FirstPass(table, columns, fixed, max_categories, block_patterns, spill_dir)
        labels = first.labels()
        pieces = (_coded_chunks(table, columns, labels, first.read_as) if first.reread
                  else first.coded(labels))
    blocks = _blocks(pieces, columns, labels, block_patterns, spill_dir)
    fully_missing = blocks.n_rows - blocks.n_observed_rows
    if fully_missing and categories is None:  # as from_pandas: rows to classify may be empty
        warnings.warn(fully_missing_message(fully_missing, blocks.n_rows), stacklevel=2)
    if categories is None:
        missing_codes.warn_code_like_levels(columns, labels, missing_codes.level_counts(
            blocks, blocks.cardinalities))
    return blocks


class _Table:
    """A CSV or Parquet file read in chunks of rows."""

    def __init__(self, path: Path, chunk_rows: int, sep: str | None,
                 encoding: str | None, allow_ragged: bool, na_codes: tuple[str, ...]) -> None:
        self.path, self.chunk_rows, self.na_codes = path, chunk_rows, na_codes
        self.parquet = path.suffix.lower() in PARQUET_SUFFIXES
        if self.parquet:
            name = repr(str(path))
            if path.is_dir():
                raise DataError(f"{name} is a folder, not a data file; give the file's path")
            if not path.is_file():
                raise DataError(f"no such file: {name}")
            self.file = _parquet_file(path, name)
            self.names = [str(c) for c in self.file.schema_arrow.names]
            dupes = sorted({n for n in self.names if self.names.count(n) > 1})
            if dupes:    # a CSV file's are refused by table_format
                raise DataError(f"duplicate column names {dupes}: rename them to be unique")
        else:
            self.encoding, self.sep = table_format(path, encoding=encoding, sep=sep,
                                                   allow_ragged=allow_ragged)
            self.names = read_header(path, encoding=self.encoding, sep=self.sep)

    def chunks(self, columns: list[str],
               dtypes: Mapping[str, object] | None = None) -> Iterator[pd.DataFrame]:
        """The file's ``columns``, chunk by chunk (a CSV file's parsed with ``dtypes``)."""
        if self.parquet:
            for batch in self.file.iter_batches(batch_size=self.chunk_rows, columns=columns):
                yield missing_codes.mark_missing(batch.to_pandas()[columns], self.na_codes)
        else:
            for chunk in read_chunks(self.path, self.chunk_rows, encoding=self.encoding,
                                     sep=self.sep, usecols=columns, dtype=dtypes,
                                     na_values=list(self.na_codes),
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
class _FirstPass:
    """Pass 1 (module docstring): each column's distinct raw values, numbered as they come
    (provisional codes), and each chunk's rows in those codes compressed to unique patterns
    with counts (the *pieces*: in memory up to ``block_patterns`` patterns in all, then in
    files of their own folder, removed with this object), so that pass 2 maps the pieces to
    the labels' codes instead of parsing the file again. A CSV column typed differently in
    different chunks (``"mixed"``) is typed as text over the whole file, as pandas types it:
    its labels come from reading it again as text, and pass 2 then reads the file again
    (``reread``)."""

    def __init__(self, table: _Table, columns: list[str], fixed: Mapping[str, tuple],
                 max_categories: int, block_patterns: int, spill_dir) -> None:
        self.table, self.columns, self.fixed = table, columns, fixed
        self.max_categories, self.block_patterns, self.spill_dir = (max_categories,
                                                                    block_patterns, spill_dir)
        self.ids: dict[str, dict[Hashable, int]] = {c: {} for c in columns}
        self.kinds: dict[str, set[Hashable]] = {c: set() for c in columns}
        self.pieces: list[tuple[np.ndarray, np.ndarray] | Path] = []
        self.held = 0
        self.folder: SpillFolder | None = None
        n_rows = 0
        for chunk in table.chunks(columns, {}):
            codes = np.empty(chunk.shape, dtype=np.int32, order="F")
            for j, name in enumerate(columns):
                codes[:, j] = self._provisional(chunk[name], name)
            n_rows += chunk.shape[0]
            if not any(self._mixed(c) for c in columns):  # else the pieces are of no use
                self._keep(codes)
        check_not_empty(n_rows, len(columns))
        mixed = [c for c in columns if self._mixed(c)]
        self.reread = bool(mixed)
        if mixed:
            self.pieces = []
            self.ids.update({c: {} for c in mixed})
            self.kinds.update({c: set() for c in mixed})
            for chunk in table.chunks(mixed, dict.fromkeys(mixed, str)):
                for name in mixed:
                    self._provisional(chunk[name], name)

    def _mixed(self, name: str) -> bool:
        return not self.table.parquet and _kind(self.kinds[name]) == "mixed"

    def _provisional(self, series: pd.Series, name: str) -> np.ndarray:
        """One chunk of a column in provisional codes (``-1``: NA); refuses a column with too
        many values as soon as a chunk shows it."""
        index, distinct = pd.factorize(series)
        values = distinct.tolist()
        self.kinds[name].update([_chunk_kind(series, values)] if values else [])
        if self._mixed(name):
            self.ids[name].clear()  # read again as text
            return index
        ids = self.ids[name]
        local = np.fromiter((ids.setdefault(v, len(ids)) for v in values), dtype=np.int32,
                            count=len(values))
        bound = len(self.fixed[name]) + 1 if name in self.fixed else self.max_categories
        if len(ids) > bound:
            self._check(name)
        return np.append(local, MISSING)[index]

    def _check(self, name: str) -> None:
        if name in self.fixed:  # a value outside the given labels is refused here
            self._mapping(name, self.fixed[name])
            return
        with warnings.catch_warnings():  # of a constant column: at the end, once
            warnings.simplefilter("ignore", UserWarning)
            labels = _labels(name, _kind(self.kinds[name]), list(self.ids[name]),
                             len(self.ids[name]))
        if len(labels) > self.max_categories:
            raise DataError(too_many_message(name, f"more than {self.max_categories}",
                                             self.max_categories))  # no need to read on

    def _keep(self, codes: np.ndarray) -> None:
        """Keep one chunk's unique patterns in provisional codes, with counts."""
        chunk = PatternSum(len(self.ids[c]) for c in self.columns)
        chunk.add(codes)
        patterns, counts = chunk.take()
        patterns = patterns.astype(np.min_scalar_type(-1 - max(chunk.cardinalities)))  # int8
        if self.held + patterns.shape[0] <= self.block_patterns:
            self.held += patterns.shape[0]
            self.pieces.append((patterns, counts))
            return
        if self.folder is None:
            self.folder = SpillFolder.create(self.spill_dir)
        self.pieces.append(self.folder.write(len(self.pieces), patterns, counts))

    def labels(self) -> list[tuple[Hashable, ...]]:
        """Each column's labels: the given ones, or those of its distinct values."""
        return [self.fixed[c] if c in self.fixed else
                _labels(c, _kind(self.kinds[c]), list(self.ids[c]), self.max_categories)
                for c in self.columns]

    @property
    def read_as(self) -> dict[str, Hashable]:
        """Each column's kind, for reading the file again (:func:`_coded_chunks`)."""
        return {c: _kind_of_labels(self.fixed[c]) if c in self.fixed else _kind(self.kinds[c])
                for c in self.columns}

    def _mapping(self, name: str, labels: tuple[Hashable, ...]) -> np.ndarray:
        """Provisional code -> code of ``labels`` (the last entry: ``-1`` -> ``-1``)."""
        values = list(self.ids[name])
        coded, _ = encode_column(_value_series(_kind(self.kinds[name]), values), name,
                                 len(labels), labels)
        return np.append(coded, MISSING).astype(np.int32)

    def coded(self, labels: list[tuple[Hashable, ...]]
              ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Pass 2 over the pieces: their patterns in the codes of ``labels``, with counts."""
        maps = [self._mapping(c, lab) for c, lab in zip(self.columns, labels, strict=True)]
        for piece in self.pieces:
            if isinstance(piece, Path):
                with np.load(piece) as stored:
                    piece = stored["patterns"], stored["counts"]
            patterns, counts = piece
            codes = np.empty(patterns.shape, dtype=np.int32, order="F")
            for j, mapping in enumerate(maps):
                codes[:, j] = mapping[patterns[:, j]]
            yield codes, counts


def _kind(kinds: set[Hashable]) -> Hashable:
    """The kind of a column whose chunks were of ``kinds``."""
    return next(iter(kinds)) if len(kinds) == 1 else (None if not kinds else "mixed")


def _chunk_kind(series: pd.Series, values: list) -> Hashable:
    """The kind of one chunk of a column with these distinct observed ``values``:
    ``"number"``, ``"bool"``, ``"text"``, ``("category", categories)`` (a pandas
    ``Categorical``, as a Parquet dictionary column reads) or ``"mixed"`` (an object column
    of several types)."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "category", tuple(dtype.categories)
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(dtype):
        return "number"
    if all(isinstance(v, str) for v in values):
        return "text"
    return "bool" if all(isinstance(v, bool | np.bool_) for v in values) else "mixed"


def _value_series(kind: Hashable, values: list) -> pd.Series:
    """Distinct values of a column as the Series :func:`encode_column` reads them as."""
    if isinstance(kind, tuple):
        return pd.Series(pd.Categorical(values, categories=kind[1]))
    return pd.Series(values, dtype=None if kind == "number" else object)


def _labels(name: str, kind: Hashable, values: list,
            max_categories: int) -> tuple[Hashable, ...]:
    """The labels :func:`encode_column` gives a column of these distinct values (its errors and
    its warning of a constant column included): a ``Categorical``'s keep its categories'
    order, as :meth:`~lcbayes.Dataset.from_pandas` keeps it."""
    return encode_column(_value_series(kind, values), name, max_categories)[1]


def _kind_of_labels(labels: tuple[Hashable, ...]) -> str:
    """The kind of a column coded against given labels: how a CSV file's chunks are read."""
    if all(isinstance(v, bool | np.bool_) for v in labels):
        return "bool"
    if all(isinstance(v, int | np.integer) for v in labels):
        return "number"
    return "text"


# ---------------------------------------------------------------------- pass 2: patterns
def _coded_chunks(table: _Table, columns: list[str], labels: list[tuple[Hashable, ...]],
                  kinds: Mapping[str, Hashable]) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """The file read again, each chunk's rows coded against ``labels`` (counts: one each)."""
    dtypes = {c: str for c in columns if kinds[c] == "text"}  # numbers: pandas' own (faster)
    for chunk in table.chunks(columns, dtypes):
        codes = np.empty(chunk.shape, dtype=np.int32, order="F")  # columns contiguous
        for j, (name, lab) in enumerate(zip(columns, labels, strict=True)):
            codes[:, j] = _codes(chunk[name], name, lab)
        yield codes, None


def _blocks(pieces: Iterator[tuple[np.ndarray, np.ndarray | None]], columns: list[str],
            labels: list[tuple[Hashable, ...]], block_patterns: int,
            spill_dir: str | os.PathLike | None) -> PatternBlocks:
    """Coded rows (with counts; None: one each) as blocks of unique patterns (module
    docstring)."""
    block = PatternSum(len(lab) for lab in labels)
    files: list[Path] = []
    spill = None
    n_rows = n_observed = 0
    for codes, counts in pieces:
        observed = (codes >= 0).any(axis=1)
        weights = np.ones(codes.shape[0]) if counts is None else counts
        n_rows += round(float(weights.sum()))
        n_observed += round(float(weights[observed].sum()))
        block.add(codes, counts)
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
