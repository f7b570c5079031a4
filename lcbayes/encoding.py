"""Turning table columns into integer category codes, and rows into unique patterns.

:func:`encode_column` is how :class:`~lcbayes.Dataset` reads a pandas column: strings (stripped),
integers, integral floats, booleans and pandas ``Categorical`` are categorical; NaN, None,
``pandas.NA`` and blank strings are missing (code ``-1``); anything else is refused with a
:class:`~lcbayes.DataError` naming the column and the fix. Labels are sorted, except those of a
``Categorical`` (its category order) and those given as ``categories`` (a fitted model's, so
that new rows are coded as the model's columns are).

:func:`unique_rows` compresses coded rows into unique patterns with counts, the form every
engine works on (Karčiauskas 2005, §1.1); :func:`pattern_keys` gives each row one integer that is
the same in every chunk of a file (the streaming reader merges chunks by it). :func:`check_codes`
checks integer codes as :class:`~lcbayes.Dataset` takes them.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from .errors import DataError, shown

__all__ = ["MISSING", "all_missing_message", "check_codes", "check_names", "check_not_empty",
           "encode_column", "fully_missing_message", "grouped_keys", "key_groups",
           "key_patterns", "pattern_keys",
           "too_many_message", "unique_rows", "warn_constant"]

#: The code of a missing value.
MISSING = -1


def all_missing_message(name: str) -> str:
    return f"column {name!r} has no observed value (all missing): leave it out of columns"


def too_many_message(name: str, count: str, max_categories: int) -> str:
    return (f"column {name!r} has {count} distinct values (max_categories={max_categories}): it "
            "looks continuous or high-cardinality; bin it (e.g. pandas.cut) or raise "
            "max_categories")


def fully_missing_message(n_fully_missing: int, n_rows: int) -> str:
    return (f"{n_fully_missing} of {n_rows} rows have no observed value; they are kept and "
            "contribute nothing to the likelihood")


def warn_constant(name: str, label: Hashable) -> None:
    warnings.warn(
        f"column {name!r} is constant ({label!r}); it is kept but carries no information "
        "about hidden variables",
        stacklevel=4,
    )


def encode_column(
    series: pd.Series, name: str, max_categories: int,
    categories: Sequence[Hashable] | None = None,
) -> tuple[np.ndarray, tuple[Hashable, ...]]:
    """Integer codes and labels of one column, or a :class:`DataError` naming it.

    With ``categories`` (the labels of a fitted model's column) the codes index them; a value
    outside them is refused, and a column with no observed value or one value is fine (new
    rows to classify), so neither is reported."""
    missing = _missing_mask(series)
    if missing.all() and categories is None:
        raise DataError(all_missing_message(name))
    dtype = series.dtype
    values = series.to_numpy(dtype=object)[~missing]
    if isinstance(dtype, pd.CategoricalDtype):
        labels = tuple(c for c in dtype.categories if not (isinstance(c, str) and c.strip() == ""))
    else:
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
    if categories is not None:
        labels = tuple(categories)
        unknown = sorted({v for v in values if v not in set(labels)}, key=str)
        if unknown:
            raise DataError(
                f"column {name!r} has value(s) {unknown[:5]} that the model does not know; its "
                f"categories are {list(labels)}"
            )
    elif len(labels) > max_categories:
        raise DataError(too_many_message(name, str(len(labels)), max_categories))
    lookup = {lab: i for i, lab in enumerate(labels)}
    codes = np.full(series.shape[0], MISSING, dtype=np.int32)
    codes[~missing] = [lookup[v] for v in values]
    if categories is None and len(set(values)) == 1:
        warn_constant(name, values[0])
    return codes, labels


def unique_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, axis=0, return_inverse=True, return_counts=True)`` (rows sorted
    lexicographically), fast: each row becomes one integer (:func:`pattern_keys`), which keeps
    the order, or one per group of columns (:func:`grouped_keys`) sorted by
    :func:`numpy.lexsort` where the rows are too wide for one 63-bit key."""
    if not codes.shape[0]:
        return np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    keys = grouped_keys(codes, codes.max(axis=0, initial=-1).astype(np.int64) + 1)
    if keys.shape[1] == 1:
        _, first, index, counts = np.unique(keys[:, 0], return_index=True, return_inverse=True,
                                            return_counts=True)
        return codes[first], index, counts
    order = np.lexsort(keys.T[::-1])  # the first group's key first
    ordered = keys[order]
    new = np.concatenate([[True], np.any(ordered[1:] != ordered[:-1], axis=1)])
    index = np.empty(codes.shape[0], dtype=np.intp)
    index[order] = np.cumsum(new) - 1
    start = np.flatnonzero(new)
    return codes[order[start]], index, np.diff(np.append(start, codes.shape[0]))


def key_groups(cardinalities: Sequence[int] | np.ndarray) -> list[slice]:
    """Consecutive groups of columns, each of which has a 63-bit :func:`pattern_keys`."""
    groups, start, size = [], 0, 1.0
    for j, card in enumerate(cardinalities):
        if j > start and size * (int(card) + 1) >= 2.0**62:
            groups.append(slice(start, j))
            start, size = j, 1.0
        size *= int(card) + 1
    return [*groups, slice(start, len(cardinalities))]


def grouped_keys(codes: np.ndarray, cardinalities: Sequence[int]) -> np.ndarray:
    """``(rows, groups)`` int64: the :func:`pattern_keys` of each of the :func:`key_groups`;
    the rows of keys sort (lexicographically) as the rows of codes do."""
    cards = np.asarray(cardinalities, dtype=np.int64)
    keys = []
    for g in key_groups(cards):
        key = pattern_keys(codes[:, g], cards[g])
        assert key is not None  # key_groups keeps every group's keys within 63 bits
        keys.append(key)
    return np.stack(keys, axis=1)


def pattern_keys(codes: np.ndarray, cardinalities: Sequence[int] | np.ndarray
                 ) -> np.ndarray | None:
    """Each row of ``codes`` (``-1 .. r_j - 1`` in column ``j``) as one int64 in mixed radix
    ``r_j + 1`` (first column most significant, codes shifted by one so that -1 sorts first):
    keys sort as the rows do and are the same in every chunk of a file. None when the rows are
    too wide for a 63-bit key."""
    radices = np.asarray(cardinalities, dtype=np.int64) + 1
    if float(np.prod(radices.astype(float))) >= 2.0**62:
        return None
    key = np.zeros(codes.shape[0], dtype=np.int64)
    for j, radix in enumerate(radices):
        key *= radix
        key += codes[:, j]
        key += 1
    return key


def key_patterns(keys: np.ndarray, cardinalities: Sequence[int]) -> np.ndarray:
    """The int32 rows of codes whose :func:`pattern_keys` are ``keys``."""
    radices = np.asarray(cardinalities, dtype=np.int64) + 1
    out = np.empty((keys.shape[0], radices.shape[0]), dtype=np.int32)
    rest = np.asarray(keys, dtype=np.int64)
    for j in range(radices.shape[0] - 1, -1, -1):
        rest, digit = np.divmod(rest, radices[j])
        out[:, j] = digit - 1
    return out


def check_codes(arr: np.ndarray, name: str, columns, labels, cardinalities):
    """The column names and labels of the integer codes ``arr`` (rows x columns; ``-1`` =
    missing), checked as :meth:`~lcbayes.Dataset.from_codes` documents; warns of constant
    columns. ``name`` names ``arr`` in the messages."""
    if arr.ndim != 2:
        raise DataError(f"{name} must be a 2-d array (rows x columns), got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise DataError(f"{name} must be integers (-1 for missing), got dtype {arr.dtype}")
    n_rows, n_cols = arr.shape
    names = tuple(f"X{j + 1}" for j in range(n_cols)) if columns is None else tuple(columns)
    check_names(names, n_cols)
    check_not_empty(n_rows, n_cols)
    if labels is not None and len(labels) != n_cols:
        raise DataError(f"labels has {len(labels)} entries for {n_cols} columns")
    if cardinalities is not None and len(cardinalities) != n_cols:
        raise DataError(f"cardinalities has {len(cardinalities)} entries for {n_cols} columns")
    out_labels = []
    for j, column in enumerate(names):
        col = arr[:, j]
        if np.any(col < MISSING):
            raise DataError(f"column {column!r} has codes below -1; use -1 for missing values")
        observed = col[col >= 0]
        if observed.size == 0:
            raise DataError(all_missing_message(column))
        if labels is not None:
            card = len(labels[j])
        elif cardinalities is not None:
            card = int(cardinalities[j])
        else:
            card = int(observed.max()) + 1
        if cardinalities is not None and int(cardinalities[j]) != card:
            raise DataError(
                f"column {column!r}: cardinality {cardinalities[j]} disagrees with its "
                f"{card} labels"
            )
        if observed.max() >= card:
            raise DataError(
                f"column {column!r} has code {observed.max()} but only {card} categories; "
                "codes must run from 0 to cardinality - 1"
            )
        out_labels.append(tuple(labels[j]) if labels is not None else tuple(range(card)))
        if observed.min() == observed.max():
            warn_constant(column, out_labels[-1][int(observed[0])])
    return names, tuple(out_labels)


def check_names(names: tuple[str, ...], n_cols: int) -> None:
    """Refuse a wrong number of column names or a name given twice."""
    if len(names) != n_cols:
        raise DataError(f"{len(names)} column names given for {n_cols} columns")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DataError(f"duplicate column names {dupes}: rename them so each is unique")


def check_not_empty(n_rows: int, n_cols: int) -> None:
    """Refuse data without rows or columns."""
    if n_cols == 0:
        raise DataError("the data has no columns: give at least one categorical column")
    if n_rows == 0:
        raise DataError("the data has no rows: give at least one row")


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


def _integral_values(values: np.ndarray, name: str) -> np.ndarray:
    floats = values.astype(np.float64)
    frac = floats[~np.isfinite(floats) | (floats != np.round(floats))]
    if frac.size:
        raise DataError(
            f"column {name!r} has non-integer numbers (e.g. {shown(frac[0])}); lcbayes needs "
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
        return int(value)  # type: ignore[call-overload]  # typeshed: Real has no __int__
    if isinstance(value, Hashable):
        return value
    raise DataError(f"column {name!r} holds unhashable values like {value!r}")


def _sorted_unique(values: np.ndarray) -> tuple[Hashable, ...]:
    unique = set(values.tolist())
    try:
        return tuple(sorted(unique))
    except TypeError:  # mixed types: order by their text
        return tuple(sorted(unique, key=lambda v: (type(v).__name__, str(v))))
