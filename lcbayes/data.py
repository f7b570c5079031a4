"""Categorical data sets: integer codes, category labels and unique patterns with counts.

A :class:`Dataset` holds, per column, the category labels and the data's unique *patterns* of
integer codes (``-1`` = missing) with their *counts*; every engine of lcbayes works on patterns and
weights, never on raw rows (Karčiauskas 2005, §1.1). It has two forms:

* **rows** (:meth:`Dataset.from_csv`, :meth:`~Dataset.from_pandas`, :meth:`~Dataset.from_codes`,
  ``Dataset(codes=..., columns=..., labels=...)``): the ``N x J`` codes are kept in their order
  and compressed once into patterns;
* **patterns** (:meth:`Dataset.from_patterns`, or ``lcbayes.scan_file(...).to_dataset()`` for a
  file bigger than memory): the patterns and counts are the data; the rows (``codes``,
  ``pattern_index``, :meth:`~Dataset.to_pandas`) are made on first access only, pattern by
  pattern (``np.repeat``), since such a data set has no original row order. Everything else
  (``n_rows``, ``n_missing``, :meth:`~Dataset.select`, :meth:`~Dataset.with_categories`,
  :meth:`~Dataset.summary`, every engine) works from the patterns without making rows.

Missing values (NaN, None, ``pandas.NA``, empty strings) are data: engines marginalise them, so a
missing entry contributes a factor of one to the likelihood. Rows are never dropped or imputed; a
row with no observed value is kept (it contributes nothing) and reported.

Example::

    data = Dataset.from_csv("survey.csv", columns=["A", "B", "C"])
    data.patterns, data.counts      # (n_patterns, 3) codes and their multiplicities
    same = Dataset.from_patterns(data.patterns, data.counts, data.columns, data.labels)
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import missing_codes
from .csvfile import read_table
from .encoding import (
    MISSING,
    check_codes,
    check_names,
    check_not_empty,
    encode_column,
    fully_missing_message,
    unique_rows,
)
from .errors import DataError

__all__ = ["DEFAULT_MAX_CATEGORIES", "MISSING", "Dataset", "chosen_columns"]

DEFAULT_MAX_CATEGORIES = 50


@dataclass(frozen=True, eq=False, init=False)
class Dataset:
    """Categorical data as unique patterns with counts and labels (module docstring).

    Build one with :meth:`from_csv`, :meth:`from_pandas`, :meth:`from_codes` or
    :meth:`from_patterns`; ``Dataset(codes, columns, labels)`` takes checked codes.

    Attributes:
        columns: column names.
        labels: per column, the category labels in code order.
        patterns: ``(n_patterns, n_columns)`` int32 unique rows of codes (sorted); ``-1``
            marks a missing value.
        counts: ``(n_patterns,)`` float64 multiplicity of each pattern.
        codes: ``(n_rows, n_columns)`` int32 codes (of a pattern-form data set: made on first
            access, the rows of each pattern together in pattern order).
        pattern_index: ``(n_rows,)`` index of each row's pattern (made on first access in the
            pattern form).
    """

    columns: tuple[str, ...]
    labels: tuple[tuple[Hashable, ...], ...]
    patterns: np.ndarray
    counts: np.ndarray
    if TYPE_CHECKING:  # private state, set by _fill
        _pattern_form: bool
        _codes: np.ndarray | None
        _pattern_index: np.ndarray | None

    def __init__(self, codes: np.ndarray, columns: tuple[str, ...],
                 labels: tuple[tuple[Hashable, ...], ...]) -> None:
        codes = np.asarray(codes)
        if codes.ndim != 2:
            raise DataError(f"codes must be a 2-d array (rows x columns), got shape {codes.shape}")
        if len(columns) != codes.shape[1] or len(labels) != codes.shape[1]:
            raise DataError(f"codes have {codes.shape[1]} columns but {len(columns)} names and "
                            f"{len(labels)} label lists were given")
        codes = codes.astype(np.int32)
        patterns, index, counts = unique_rows(codes)
        self._fill(columns, labels, patterns, counts, codes, index.reshape(-1))

    def _fill(self, columns, labels, patterns, counts, codes=None, pattern_index=None) -> None:
        """Set the fields; ``codes`` None makes the pattern form."""
        values = {"columns": columns, "labels": labels, "_pattern_form": codes is None,
                  "patterns": patterns.astype(np.int32), "counts": counts.astype(np.float64),
                  "_codes": codes, "_pattern_index": None if codes is None
                  else pattern_index.astype(np.int64)}
        for name, value in values.items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
            object.__setattr__(self, name, value)

    @classmethod
    def _of_patterns(cls, patterns: np.ndarray, counts: np.ndarray, columns, labels) -> Dataset:
        """A pattern-form data set of checked ``patterns`` with counts: duplicate patterns
        merged, patterns of count zero left out, sorted as :func:`unique_rows` sorts."""
        keep = counts > 0
        unique, index, _ = unique_rows(np.asarray(patterns, dtype=np.int32)[keep])
        merged = np.bincount(index.reshape(-1), weights=counts[keep], minlength=len(unique))
        data = cls.__new__(cls)
        data._fill(tuple(columns), tuple(labels), unique, merged)
        return data

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
        names, out_labels = check_codes(arr, "codes", columns, labels, cardinalities)
        data = cls(codes=arr, columns=names, labels=out_labels)
        data._warn_fully_missing()
        return data

    @classmethod
    def from_patterns(
        cls,
        patterns: np.ndarray | Sequence[Sequence[int]],
        counts: np.ndarray | Sequence[float],
        columns: Sequence[str] | None = None,
        labels: Sequence[Sequence[Hashable]] | None = None,
        cardinalities: Sequence[int] | None = None,
    ) -> Dataset:
        """A pattern-form data set (module docstring) from rows of codes with counts.

        ``patterns`` are checked as :meth:`from_codes` checks codes (a pattern given twice has
        its counts added; one of count zero is left out); ``counts`` are non-negative whole
        numbers (integers or integral floats). No row is made.

        Args:
            patterns: ``(n_patterns, n_columns)`` integer codes, ``-1`` for missing.
            counts: ``(n_patterns,)`` the number of rows of each pattern.
            columns, labels, cardinalities: as in :meth:`from_codes`.
        """
        arr = np.asarray(patterns)
        weights = np.asarray(counts)
        if weights.ndim != 1 or (arr.ndim == 2 and weights.shape[0] != arr.shape[0]):
            raise DataError(f"counts must be one number per pattern, got shape {weights.shape} "
                            f"for patterns of shape {arr.shape}")
        numeric = weights.dtype.kind in "iuf"
        if not numeric or np.any(~np.isfinite(weights) | (weights < 0) | (weights % 1 != 0)):
            raise DataError("counts must be non-negative whole numbers (the rows of each "
                            f"pattern), got e.g. {weights[:5].tolist()}")
        weights = weights.astype(np.float64)
        names, out_labels = check_codes(arr[weights > 0] if arr.ndim == 2 else arr, "patterns",
                                        columns, labels, cardinalities)
        data = cls._of_patterns(arr, weights, names, out_labels)
        data._warn_fully_missing()
        return data

    @classmethod
    def from_pandas(
        cls,
        frame: pd.DataFrame,
        columns: Sequence[str] | None = None,
        max_categories: int = DEFAULT_MAX_CATEGORIES,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
        *,
        na_values: Iterable[Hashable] | str | None = None,
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
            na_values: further values that mean missing (codes such as ``-99`` or ``"."``,
                compared as text and as numbers: :mod:`lcbayes.missing_codes`); a rare level
                that looks like such a code and is not given here is warned about.
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
            frame = frame[chosen_columns(names, columns)]
        check_not_empty(frame.shape[0], frame.shape[1])
        frame = missing_codes.mark_missing(frame, missing_codes.as_strings(na_values))
        fixed = categories or {}
        encoded = [encode_column(frame[c], c, max_categories, fixed.get(c))
                   for c in frame.columns]
        codes = np.stack([codes for codes, _ in encoded], axis=1)
        labels = tuple(labels for _, labels in encoded)
        data = cls(codes=codes, columns=tuple(frame.columns), labels=labels)
        if categories is None:  # rows to classify may have nothing observed
            data._warn_fully_missing()
            missing_codes.warn_code_like_levels(
                data.columns, data.labels,
                [np.bincount(codes[codes[:, j] >= 0, j], minlength=len(labels[j]))
                 for j in range(codes.shape[1])])
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
        allow_ragged: bool = False,
        na_values: Iterable[Hashable] | str | None = None,
        sheet: str | int | None = None,
        **read_csv_kwargs,
    ) -> Dataset:
        """Read a CSV file (header row required): a path or ``"-"`` (standard input), gzip,
        bzip2, xz or zip compressed or not, or an ``.xlsx`` workbook (needs ``openpyxl``).

        Encoding and delimiter are found unless given as ``encoding`` and ``sep``; empty fields
        and pandas' NA strings are missing values; control characters, duplicate column names
        and ragged rows are refused (``allow_ragged``: short rows' missing fields are missing
        values): :func:`lcbayes.csvfile.read_table`; ``na_values`` are further values read as
        missing (``[-99, "."]``), ``sheet`` the sheet of a workbook (its name, or its number
        from 0; needed where several sheets hold data). Other arguments are as in
        :meth:`from_pandas`; extra keyword arguments go to :func:`pandas.read_csv`.
        """
        frame = read_table(path, encoding=encoding, sep=sep, allow_ragged=allow_ragged,
                           sheet=sheet, na_values=na_values, **read_csv_kwargs)
        return cls.from_pandas(frame, columns=columns, max_categories=max_categories)

    # ------------------------------------------------------------------ properties
    @property
    def codes(self) -> np.ndarray:
        """``(n_rows, n_columns)`` int32 codes, ``-1`` = missing (made once in the pattern
        form: each pattern repeated by its count, in pattern order)."""
        if (codes := self._codes) is None:
            codes = np.repeat(self.patterns, self.counts.astype(np.int64), axis=0)
            codes.setflags(write=False)
            object.__setattr__(self, "_codes", codes)
        return codes

    @property
    def pattern_index(self) -> np.ndarray:
        """``(n_rows,)`` index of each row's pattern (made once in the pattern form, without
        the codes)."""
        if (index := self._pattern_index) is None:
            index = np.repeat(np.arange(self.n_patterns), self.counts.astype(np.int64))
            index.setflags(write=False)
            object.__setattr__(self, "_pattern_index", index)
        return index

    @property
    def has_row_order(self) -> bool:
        """Whether the rows are the data's own, in order (the rows form), so that other
        columns of the same rows (covariates) can be matched to them."""
        return not self._pattern_form

    @property
    def n_rows(self) -> int:
        """Number of rows (fully missing rows included)."""
        return int(self.counts.sum())

    @property
    def n_columns(self) -> int:
        return int(self.patterns.shape[1])

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
        per_column = self.counts @ (self.patterns < 0)
        return {c: int(n) for c, n in zip(self.columns, per_column, strict=True)}

    @property
    def n_fully_missing(self) -> int:
        """Number of rows with no observed value (kept; they add nothing to the likelihood)."""
        return int(self.counts[np.all(self.patterns < 0, axis=1)].sum())

    @property
    def n_observed_rows(self) -> int:
        """Number of rows with at least one observed value (the ``N`` of BIC)."""
        return self.n_rows - self.n_fully_missing

    # ------------------------------------------------------------------ methods
    def select(self, columns: Sequence[str]) -> Dataset:
        """The data set restricted to ``columns`` (in that order), patterns recomputed; a
        pattern-form data set stays one (no rows are made)."""
        columns = tuple(columns)
        if columns == self.columns:
            return self
        unknown = [c for c in columns if c not in self.columns]
        if unknown:
            raise DataError(
                f"unknown column(s) {unknown}; the data has columns {list(self.columns)}"
            )
        check_names(columns, len(columns))
        check_not_empty(self.n_rows, len(columns))
        idx = [self.columns.index(c) for c in columns]
        return self._recoded({j: None for j in idx}, columns,
                             tuple(self.labels[i] for i in idx))

    def with_categories(self, categories: Mapping[str, Sequence[Hashable]]) -> Dataset:
        """The same values coded against other labels (``{column: labels}``, e.g. a model's:
        the rows may lack some of them); a value outside them is a :class:`DataError`."""
        mappings: dict[int, np.ndarray | None] = {j: None for j in range(self.n_columns)}
        labels = list(self.labels)
        for j, name in enumerate(self.columns):
            if name not in categories or tuple(categories[name]) == self.labels[j]:
                continue
            target = tuple(categories[name])
            lookup = {label: i for i, label in enumerate(target)}
            seen = self.labels[j]
            used = np.unique(self.patterns[:, j][self.patterns[:, j] >= 0])
            unknown = [seen[c] for c in used if seen[c] not in lookup]
            if unknown:
                raise DataError(f"column {name!r} has value(s) {unknown[:5]} that are not "
                                f"among its categories {list(target)}")
            # code -1 picks the trailing MISSING
            mappings[j] = np.array([lookup.get(label, MISSING) for label in seen] + [MISSING])
            labels[j] = target
        if tuple(labels) == self.labels:
            return self
        return self._recoded(mappings, self.columns, tuple(labels))

    def _recoded(self, mappings: dict[int, np.ndarray | None], columns, labels) -> Dataset:
        """The columns ``mappings`` names, in its order, each through its code mapping (None:
        unchanged), in the same form as this data set."""
        def recode(arr: np.ndarray) -> np.ndarray:
            return np.stack([arr[:, j] if m is None else m[arr[:, j]]
                             for j, m in mappings.items()], axis=1)

        if self._pattern_form:
            return Dataset._of_patterns(recode(self.patterns), self.counts, columns, labels)
        return Dataset(codes=recode(self.codes), columns=columns, labels=labels)

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
            warnings.warn(fully_missing_message(self.n_fully_missing, self.n_rows),
                          stacklevel=3)


# ---------------------------------------------------------------------- helpers
def chosen_columns(names: Sequence[str], columns: Sequence[str]) -> list[str]:
    """``columns`` as names of a table whose columns are ``names``, or a :class:`DataError`
    (none named, one named twice, an unknown one)."""
    columns = [str(c) for c in columns]
    if not columns:
        raise DataError("columns is empty: name at least one column")
    asked_twice = sorted({c for c in columns if columns.count(c) > 1})
    if asked_twice:
        raise DataError(f"columns {asked_twice} are listed more than once")
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise DataError(f"unknown column(s) {unknown}; the data has columns {list(names)}")
    return columns
