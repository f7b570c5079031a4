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

import numbers
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["DEFAULT_MAX_CATEGORIES", "MISSING", "Dataset"]

MISSING = -1
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
        patterns, index, counts = _unique_rows(codes)
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
                raise DataError(_all_missing_message(name))
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
                _warn_constant(name, out_labels[-1][int(observed[0])])
        data = cls(codes=arr, columns=names, labels=tuple(out_labels))
        data._warn_fully_missing()
        return data

    @classmethod
    def from_pandas(
        cls,
        frame: pd.DataFrame,
        columns: Sequence[str] | None = None,
        max_categories: int = DEFAULT_MAX_CATEGORIES,
    ) -> Dataset:
        """Build a data set from a DataFrame whose columns are categorical in practice.

        Accepted column types: strings, integers, integral floats, booleans and pandas
        ``Categorical`` (whose category order is kept). Labels of other columns are sorted.
        NaN, None, ``pandas.NA`` and empty strings are missing values.

        Args:
            frame: the data.
            columns: the columns to use, in this order (default: all).
            max_categories: a column with more distinct values is refused (bin it first).
        """
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame, got {type(frame).__name__}")
        names = [str(c) for c in frame.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DataError(f"duplicate column names {dupes}: rename them so each is unique")
        frame = frame.set_axis(names, axis=1)
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
        encoded = [_encode_column(frame[c], c, max_categories) for c in frame.columns]
        codes = np.stack([codes for codes, _ in encoded], axis=1)
        labels = tuple(labels for _, labels in encoded)
        data = cls(codes=codes, columns=tuple(frame.columns), labels=labels)
        data._warn_fully_missing()
        return data

    @classmethod
    def from_csv(
        cls,
        path: str | Path,
        columns: Sequence[str] | None = None,
        max_categories: int = DEFAULT_MAX_CATEGORIES,
        **read_csv_kwargs,
    ) -> Dataset:
        """Read a CSV file (header row required) with :func:`pandas.read_csv`.

        Empty fields and pandas' default NA strings (``NA``, ``NaN``, ``null``, ...) are missing
        values. Other arguments are as in :meth:`from_pandas`; extra keyword arguments go to
        :func:`pandas.read_csv`.
        """
        path = Path(path)
        if not path.is_file():
            raise DataError(f"no such file: {str(path)!r}")
        try:
            frame = pd.read_csv(path, **read_csv_kwargs)
        except pd.errors.EmptyDataError:
            raise DataError(
                f"{str(path)!r} is empty: it needs a header row and data rows"
            ) from None
        except pd.errors.ParserError as exc:
            raise DataError(f"{str(path)!r} is not a readable CSV file: {exc}") from None
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


def _all_missing_message(name: str) -> str:
    return f"column {name!r} has no observed value (all missing): leave it out of columns"


def _warn_constant(name: str, label: Hashable) -> None:
    warnings.warn(
        f"column {name!r} is constant ({label!r}); it is kept but carries no information "
        "about hidden variables",
        stacklevel=4,
    )


def _missing_mask(series: pd.Series) -> np.ndarray:
    mask = series.isna().to_numpy(dtype=bool)
    if (
        series.dtype == object
        or pd.api.types.is_string_dtype(series.dtype)
        or isinstance(series.dtype, pd.CategoricalDtype)
    ):
        blank = series.astype(object).map(lambda v: isinstance(v, str) and v.strip() == "")
        mask = mask | blank.to_numpy(dtype=bool)  # isna() may give a read-only array
    return mask


def _encode_column(
    series: pd.Series, name: str, max_categories: int
) -> tuple[np.ndarray, tuple[Hashable, ...]]:
    """Integer codes and labels of one column, or a :class:`DataError` naming it."""
    missing = _missing_mask(series)
    if missing.all():
        raise DataError(_all_missing_message(name))
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        labels = tuple(c for c in dtype.categories if not (isinstance(c, str) and c.strip() == ""))
        values = series.to_numpy(dtype=object)[~missing]
    else:
        values = series.to_numpy(dtype=object)[~missing]
        if pd.api.types.is_bool_dtype(dtype):
            values = np.array([bool(v) for v in values], dtype=object)
        elif pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
            values = _integral_values(values, name)
        elif not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
            raise DataError(
                f"column {name!r} has dtype {dtype}, which is not categorical: convert it to "
                "strings, integers or a pandas Categorical (binning it if it is continuous)"
            )
        else:
            values = np.array([_normalise_object(v, name) for v in values], dtype=object)
        labels = _sorted_unique(values)
    if len(labels) > max_categories:
        raise DataError(
            f"column {name!r} has {len(labels)} distinct values (max_categories={max_categories}):"
            " it looks continuous or high-cardinality; bin it (e.g. pandas.cut) or raise "
            "max_categories"
        )
    lookup = {lab: i for i, lab in enumerate(labels)}
    codes = np.full(series.shape[0], MISSING, dtype=np.int32)
    codes[~missing] = [lookup[v] for v in values]
    if len(set(values)) == 1:
        _warn_constant(name, values[0])
    return codes, labels


def _integral_values(values: np.ndarray, name: str) -> np.ndarray:
    floats = values.astype(np.float64)
    frac = floats[~np.isfinite(floats) | (floats != np.round(floats))]
    if frac.size:
        raise DataError(
            f"column {name!r} has non-integer numbers (e.g. {frac[0]!r}); lcbayes needs "
            "categorical columns: bin it first (e.g. pandas.cut) or leave it out of columns"
        )
    return np.array([int(v) for v in floats], dtype=object)


def _normalise_object(value: object, name: str) -> Hashable:
    """Python scalars of an object column: integral floats become ints, strings are stripped."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not np.isfinite(float(value)) or float(value) != round(float(value)):
            raise DataError(
                f"column {name!r} has non-integer number {value!r}; bin it first "
                "(e.g. pandas.cut) or leave it out of columns"
            )
        return int(value)
    if isinstance(value, Hashable):
        return value
    raise DataError(f"column {name!r} holds unhashable values like {value!r}")


def _unique_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, axis=0, return_inverse=True, return_counts=True)`` (rows sorted
    lexicographically), fast: each row becomes one integer in mixed radix (first column most
    significant, codes shifted by one so that -1 sorts first), which keeps the order; rows too
    wide for a 63-bit key take the row-wise route."""
    radices = (codes.max(axis=0, initial=-1).astype(np.int64) + 2) if codes.size else []
    if codes.shape[0] == 0 or float(np.prod(np.asarray(radices, dtype=float))) >= 2.0**62:
        return np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    key = np.zeros(codes.shape[0], dtype=np.int64)
    for j, radix in enumerate(radices):
        key = key * radix + (codes[:, j].astype(np.int64) + 1)
    _, first, index, counts = np.unique(key, return_index=True, return_inverse=True,
                                        return_counts=True)
    return codes[first], index, counts


def _sorted_unique(values: np.ndarray) -> tuple[Hashable, ...]:
    unique = set(values.tolist())
    try:
        return tuple(sorted(unique))
    except TypeError:  # mixed types: order by their text
        return tuple(sorted(unique, key=lambda v: (type(v).__name__, str(v))))
