"""Categorical data sets: integer codes, category labels and unique patterns with counts.

A :class:`Dataset` holds ``N x J`` integer codes (``-1`` = missing) and, per column, the category
labels the codes stand for. It compresses the rows once into unique *patterns* with *counts*; every
engine of lcbayes works on patterns and weights, never on raw rows (Karčiauskas 2005, §1.1).

Missing values (NaN, None, ``pandas.NA``, empty strings) are data: engines marginalise them, so a
missing entry contributes a factor of one to the likelihood. Rows are never dropped or imputed; a
row with no observed value is kept (it contributes nothing) and reported.

Example::

    data = Dataset.from_csv("survey.csv", columns=["A", "B", "C"])
    data.patterns, data.counts      # (n_patterns, 3) codes and their multiplicities
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .csvfile import read_table
from .encoding import MISSING, all_missing_message, encode_column, unique_rows, warn_constant
from .errors import DataError

__all__ = ["DEFAULT_MAX_CATEGORIES", "MISSING", "Dataset"]

DEFAULT_MAX_CATEGORIES = 50


@dataclass(frozen=True, eq=False)
class Dataset:
    """Categorical data as integer codes with labels and unique patterns.

    Build one with :meth:`from_csv`, :meth:`from_pandas` or :meth:`from_codes`.

    Attributes:
        codes: ``(n_rows, n_columns)`` int32 codes; ``-1`` marks a missing value.
        columns: column names.
        labels: per column, the category labels in code order.
        patterns: ``(n_patterns, n_columns)`` unique rows of ``codes`` (sorted).
        counts: ``(n_patterns,)`` float64 multiplicity of each pattern.
        pattern_index: ``(n_rows,)`` index of each row's pattern.
    """

    codes: np.ndarray
    columns: tuple[str, ...]
    labels: tuple[tuple[Hashable, ...], ...]
    patterns: np.ndarray = field(init=False, repr=False)
    counts: np.ndarray = field(init=False, repr=False)
    pattern_index: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2:
            raise DataError(f"codes must be a 2-d array (rows x columns), got shape {codes.shape}")
        if len(self.columns) != codes.shape[1] or len(self.labels) != codes.shape[1]:
            raise DataError(
                f"codes have {codes.shape[1]} columns but {len(self.columns)} names and "
                f"{len(self.labels)} label lists were given"
            )
        codes = codes.astype(np.int32)
        codes.setflags(write=False)
        patterns, index, counts = unique_rows(codes)
        for name, value in (
            ("codes", codes),
            ("patterns", patterns.astype(np.int32)),
            ("counts", counts.astype(np.float64)),
            ("pattern_index", index.reshape(-1).astype(np.int64)),
        ):
            if name != "codes":
                value.setflags(write=False)
            object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_codes(
        cls,
        codes: np.ndarray | Sequence[Sequence[int]],
        columns: Sequence[str] | None = None,
        labels: Sequence[Sequence[Hashable]] | None = None,
        cardinalities: Sequence[int] | None = None,
    ) -> Dataset:
        """Build a data set from integer codes ``0 .. r-1`` with ``-1`` for missing.

        Args:
            codes: ``(n_rows, n_columns)`` integers.
            columns: column names (default ``"X1", "X2", ...``).
            labels: category labels per column (default ``0 .. r-1``).
            cardinalities: number of categories per column (default: one more than the largest
                code, or the length of ``labels``).
        """
        arr = np.asarray(codes)
        if arr.ndim != 2:
            raise DataError(f"codes must be a 2-d array (rows x columns), got shape {arr.shape}")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise DataError(f"codes must be integers (-1 for missing), got dtype {arr.dtype}")
        n_rows, n_cols = arr.shape
        names = tuple(f"X{j + 1}" for j in range(n_cols)) if columns is None else tuple(columns)
        _check_names(names, n_cols)
        _check_not_empty(n_rows, n_cols)
        if labels is not None and len(labels) != n_cols:
            raise DataError(f"labels has {len(labels)} entries for {n_cols} columns")
        if cardinalities is not None and len(cardinalities) != n_cols:
            raise DataError(f"cardinalities has {len(cardinalities)} entries for {n_cols} columns")
        out_labels = []
        for j, name in enumerate(names):
            col = arr[:, j]
            if np.any(col < MISSING):
                raise DataError(f"column {name!r} has codes below -1; use -1 for missing values")
            observed = col[col >= 0]
            if observed.size == 0:
                raise DataError(all_missing_message(name))
            if labels is not None:
                card = len(labels[j])
            elif cardinalities is not None:
                card = int(cardinalities[j])
            else:
                card = int(observed.max()) + 1
            if cardinalities is not None and int(cardinalities[j]) != card:
                raise DataError(
                    f"column {name!r}: cardinality {cardinalities[j]} disagrees with its "
                    f"{card} labels"
                )
            if observed.max() >= card:
                raise DataError(
                    f"column {name!r} has code {observed.max()} but only {card} categories; "
                    "codes must run from 0 to cardinality - 1"
                )
            out_labels.append(tuple(labels[j]) if labels is not None else tuple(range(card)))
            if observed.min() == observed.max():
                warn_constant(name, out_labels[-1][int(observed[0])])
        data = cls(codes=arr, columns=names, labels=tuple(out_labels))
        data._warn_fully_missing()
        return data

    @classmethod
    def from_pandas(
        cls,
        frame: pd.DataFrame,
        columns: Sequence[str] | None = None,
        max_categories: int = DEFAULT_MAX_CATEGORIES,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
    ) -> Dataset:
        """Build a data set from a DataFrame whose columns are categorical in practice.

        Accepted column types: strings, integers, integral floats, booleans and pandas
        ``Categorical`` (whose category order is kept). Labels of other columns are sorted.
        NaN, None, ``pandas.NA`` and empty strings are missing values.

        Args:
            frame: the data.
            columns: the columns to use, in this order (default: all, or those of
                ``categories``).
            max_categories: a column with more distinct values is refused (bin it first).
            categories: ``{column: labels}`` to code the columns against fixed labels (a
                fitted model's, :meth:`lcbayes.Structure.categories`): a value outside them is
                refused; a column may then be constant or entirely missing (new rows to
                classify). Columns not named keep their own sorted labels.
        """
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame, got {type(frame).__name__}")
        names = [str(c) for c in frame.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DataError(f"duplicate column names {dupes}: rename them so each is unique")
        frame = frame.set_axis(names, axis=1)
        if columns is None and categories is not None:
            columns = list(categories)
        if columns is not None:
            columns = [str(c) for c in columns]
            if not columns:
                raise DataError("columns is empty: name at least one column")
            asked_twice = sorted({c for c in columns if columns.count(c) > 1})
            if asked_twice:
                raise DataError(f"columns {asked_twice} are listed more than once")
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise DataError(
                    f"unknown column(s) {unknown}; the data has columns {names}"
                )
            frame = frame[columns]
        _check_not_empty(frame.shape[0], frame.shape[1])
        fixed = categories or {}
        encoded = [encode_column(frame[c], c, max_categories, fixed.get(c))
                   for c in frame.columns]
        codes = np.stack([codes for codes, _ in encoded], axis=1)
        labels = tuple(labels for _, labels in encoded)
        data = cls(codes=codes, columns=tuple(frame.columns), labels=labels)
        if categories is None:  # rows to classify may have nothing observed
            data._warn_fully_missing()
        return data

    @classmethod
    def from_csv(
        cls,
        path: str | Path,
        columns: Sequence[str] | None = None,
        max_categories: int = DEFAULT_MAX_CATEGORIES,
        *,
        encoding: str | None = None,
        sep: str | None = None,
        **read_csv_kwargs,
    ) -> Dataset:
        """Read a CSV file (header row required; :func:`lcbayes.csvfile.read_table`).

        The encoding (UTF-8, else Windows-1252 or Latin-1 with a warning) and the delimiter
        (comma, semicolon, tab or bar) are found unless given as ``encoding`` and ``sep``.
        Empty fields and pandas' default NA strings (``NA``, ``NaN``, ``null``, ...) are missing
        values. Other arguments are as in :meth:`from_pandas`; extra keyword arguments go to
        :func:`pandas.read_csv`.
        """
        frame = read_table(path, encoding=encoding, sep=sep, **read_csv_kwargs)
        return cls.from_pandas(frame, columns=columns, max_categories=max_categories)

    # ------------------------------------------------------------------ properties
    @property
    def n_rows(self) -> int:
        """Number of rows (fully missing rows included)."""
        return int(self.codes.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.codes.shape[1])

    @property
    def n_patterns(self) -> int:
        """Number of distinct rows."""
        return int(self.patterns.shape[0])

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of categories of each column."""
        return tuple(len(lab) for lab in self.labels)

    @property
    def n_missing(self) -> dict[str, int]:
        """Number of missing values per column."""
        return {c: int(n) for c, n in zip(self.columns, (self.codes < 0).sum(axis=0), strict=True)}

    @property
    def n_fully_missing(self) -> int:
        """Number of rows with no observed value (kept; they add nothing to the likelihood)."""
        return int(np.all(self.codes < 0, axis=1).sum())

    @property
    def n_observed_rows(self) -> int:
        """Number of rows with at least one observed value (the ``N`` of BIC)."""
        return self.n_rows - self.n_fully_missing

    # ------------------------------------------------------------------ methods
    def select(self, columns: Sequence[str]) -> Dataset:
        """The data set restricted to ``columns`` (in that order), patterns recomputed."""
        columns = tuple(columns)
        if columns == self.columns:
            return self
        unknown = [c for c in columns if c not in self.columns]
        if unknown:
            raise DataError(
                f"unknown column(s) {unknown}; the data has columns {list(self.columns)}"
            )
        _check_names(columns, len(columns))
        _check_not_empty(self.n_rows, len(columns))
        idx = [self.columns.index(c) for c in columns]
        return Dataset(
            codes=self.codes[:, idx], columns=columns, labels=tuple(self.labels[i] for i in idx)
        )

    def with_categories(self, categories: Mapping[str, Sequence[Hashable]]) -> Dataset:
        """The same values coded against other labels (``{column: labels}``, e.g. a model's:
        the rows may lack some of them); a value outside them is a :class:`DataError`."""
        codes = np.array(self.codes, copy=True)
        labels = list(self.labels)
        for j, name in enumerate(self.columns):
            if name not in categories or tuple(categories[name]) == self.labels[j]:
                continue
            target = tuple(categories[name])
            lookup = {label: i for i, label in enumerate(target)}
            seen = self.labels[j]
            used = np.unique(self.codes[:, j][self.codes[:, j] >= 0])
            unknown = [seen[c] for c in used if seen[c] not in lookup]
            if unknown:
                raise DataError(f"column {name!r} has value(s) {unknown[:5]} that are not "
                                f"among its categories {list(target)}")
            mapping = np.array([lookup.get(label, MISSING) for label in seen] + [MISSING])
            codes[:, j] = mapping[self.codes[:, j]]  # code -1 picks the trailing MISSING
            labels[j] = target
        if tuple(labels) == self.labels:
            return self
        return Dataset(codes=codes, columns=self.columns, labels=tuple(labels))

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a DataFrame of labels (missing values as ``None``)."""
        out = {}
        for j, name in enumerate(self.columns):
            lab = np.array([*self.labels[j], None], dtype=object)
            out[name] = lab[self.codes[:, j]]  # code -1 picks the trailing None
        return pd.DataFrame(out, dtype=object)

    def summary(self) -> str:
        """A short human-readable description."""
        lines = [
            f"Dataset: {self.n_rows} rows x {self.n_columns} columns, "
            f"{self.n_patterns} distinct patterns"
        ]
        missing = self.n_missing
        for name, lab in zip(self.columns, self.labels, strict=True):
            miss = f", {missing[name]} missing" if missing[name] else ""
            shown = ", ".join(map(str, lab[:6])) + (", ..." if len(lab) > 6 else "")
            lines.append(f"  {name}: {len(lab)} categories ({shown}){miss}")
        if self.n_fully_missing:
            lines.append(f"  {self.n_fully_missing} rows have no observed value (kept)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"Dataset(n_rows={self.n_rows}, columns={list(self.columns)}, "
            f"cardinalities={list(self.cardinalities)}, n_patterns={self.n_patterns})"
        )

    def _warn_fully_missing(self) -> None:
        if self.n_fully_missing:
            warnings.warn(
                f"{self.n_fully_missing} of {self.n_rows} rows have no observed value; they are "
                "kept and contribute nothing to the likelihood",
                stacklevel=3,
            )


# ---------------------------------------------------------------------- helpers
def _check_names(names: tuple[str, ...], n_cols: int) -> None:
    if len(names) != n_cols:
        raise DataError(f"{len(names)} column names given for {n_cols} columns")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DataError(f"duplicate column names {dupes}: rename them so each is unique")


def _check_not_empty(n_rows: int, n_cols: int) -> None:
    if n_cols == 0:
        raise DataError("the data has no columns: give at least one categorical column")
    if n_rows == 0:
        raise DataError("the data has no rows: give at least one row")


