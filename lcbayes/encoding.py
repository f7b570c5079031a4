"""Turning table columns into integer category codes, and rows into unique patterns.

:func:`encode_column` is how :class:`~lcbayes.Dataset` reads a pandas column: strings (stripped),
integers, integral floats, booleans and pandas ``Categorical`` are categorical; NaN, None,
``pandas.NA`` and blank strings are missing (code ``-1``); anything else is refused with a
:class:`~lcbayes.DataError` naming the column and the fix. Labels are sorted, except those of a
``Categorical`` (its category order) and those given as ``categories`` (a fitted model's, so
that new rows are coded as the model's columns are).

:func:`unique_rows` compresses coded rows into unique patterns with counts, the form every
engine works on (Karčiauskas 2005, §1.1).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["MISSING", "all_missing_message", "encode_column", "unique_rows", "warn_constant"]

#: The code of a missing value.
MISSING = -1


def all_missing_message(name: str) -> str:
    return f"column {name!r} has no observed value (all missing): leave it out of columns"


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
        raise DataError(
            f"column {name!r} has {len(labels)} distinct values (max_categories={max_categories}):"
            " it looks continuous or high-cardinality; bin it (e.g. pandas.cut) or raise "
            "max_categories"
        )
    lookup = {lab: i for i, lab in enumerate(labels)}
    codes = np.full(series.shape[0], MISSING, dtype=np.int32)
    codes[~missing] = [lookup[v] for v in values]
    if categories is None and len(set(values)) == 1:
        warn_constant(name, values[0])
    return codes, labels


def unique_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _sorted_unique(values: np.ndarray) -> tuple[Hashable, ...]:
    unique = set(values.tolist())
    try:
        return tuple(sorted(unique))
    except TypeError:  # mixed types: order by their text
        return tuple(sorted(unique, key=lambda v: (type(v).__name__, str(v))))
