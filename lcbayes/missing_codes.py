"""Missing-value codes: values that a survey file uses for "missing" (``-99``, ``.``, ``N/A``).

A blank cell is missing everywhere in lcbayes; a code is a category until it is declared with
``na_values`` (``--na-values`` on the command line), which every reader accepts. Undeclared,
a code silently becomes a class-defining category, so a level that looks like one is reported
(:func:`warn_code_like_levels`) when it is rare in its column.

A level *looks like a code* when its text is one of :data:`TEXT_CODES` (case and surrounding
spaces ignored), or it is a whole number that stands apart from the column's other numeric
levels: ``-7``, ``-8``, ``-9`` or a negative number of repeated 7s, 8s or 9s (``-99``,
``-888``) among non-negative levels, or a positive number of two or more digits made of 7s,
8s and 9s (``97``, ``99``, ``999``) at least five times the largest other level. It is
*rare* when at most :data:`RARE_SHARE` of the column's observed rows take it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["RARE_SHARE", "TEXT_CODES", "as_strings", "code_like", "level_counts",
           "mark_missing", "warn_code_like_levels"]

#: Texts that surveys and statistics packages write for a missing value.
TEXT_CODES = frozenset({".", "..", "?", "-", "--", "*", "n/a", "na", "n.a.", "#n/a", "nan",
                        "missing", "unknown", "dk", "refused", "no answer"})
#: The largest share of a column's observed rows a code-like level has to be reported.
RARE_SHARE = 0.1
_REPEATED = re.compile(r"^-?(7+|8+|9+)$")
_SEVENS_TO_NINES = re.compile(r"^[789]{2,}$")


def as_strings(na_values: Iterable[Any] | str | None) -> tuple[str, ...]:
    """``na_values`` (one value, or several) as the texts pandas' readers compare cells with;
    a comma-separated string is several (``"-99,."``, as ``--na-values`` gives them)."""
    if na_values is None:
        return ()
    if isinstance(na_values, str):
        values: list[Any] = [v for v in na_values.split(",") if v.strip()]
    elif isinstance(na_values, Iterable):
        values = list(na_values)
    else:
        values = [na_values]
    out = []
    for value in values:
        if not isinstance(value, str | int | float | np.integer | np.floating) or isinstance(
                value, bool):
            raise DataError(f"na_values must be strings or numbers (the codes read as missing), "
                            f"got {value!r} of type {type(value).__name__}")
        text = str(value).strip() if isinstance(value, str) else _number_text(value)
        out.append(text)
    return tuple(dict.fromkeys(out))


def _number_text(value: Any) -> str:
    """A number as a file would write it (``-99``, not ``-99.0``)."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def mark_missing(frame: pd.DataFrame, codes: Sequence[str]) -> pd.DataFrame:
    """``frame`` with every cell equal to one of ``codes`` (as text, or as a number where the
    code is one) made missing; the frame itself when there are no codes."""
    if not codes:
        return frame
    texts = set(codes)
    numbers = set()
    for code in codes:
        try:
            numbers.add(float(code))
        except ValueError:
            pass

    def is_code(value: object) -> bool:
        if isinstance(value, str):
            return value.strip() in texts
        if isinstance(value, bool | np.bool_):
            return False
        if isinstance(value, int | float | np.integer | np.floating):
            return float(value) in numbers
        return False

    mask = pd.DataFrame({c: frame[c].map(is_code) for c in frame.columns}, index=frame.index)
    return frame.mask(mask.astype(bool)) if mask.to_numpy().any() else frame


def code_like(label: Hashable, others: Sequence[Hashable]) -> bool:
    """Whether ``label`` looks like a missing-value code among a column's ``others`` levels
    (module docstring)."""
    if isinstance(label, str):
        if label.strip().lower() in TEXT_CODES:
            return True
        try:
            number = float(label)
        except ValueError:
            return False
    elif isinstance(label, bool | np.bool_) or not isinstance(label, int | float | np.integer
                                                              | np.floating):
        return False
    else:
        number = float(label)
    if not number.is_integer():
        return False
    text = str(int(number))
    rest = [float(str(o)) for o in others if _is_number(o)]
    if number < 0:
        return (number in (-7, -8, -9) or bool(_REPEATED.match(text))) and all(
            r >= 0 for r in rest)
    return bool(_SEVENS_TO_NINES.match(text)) and bool(rest) and number >= 5 * max(
        max(rest), 1)


def _is_number(value: Hashable) -> bool:
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, int | float | np.integer | np.floating):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def level_counts(blocks: Iterable[tuple[np.ndarray, np.ndarray]],
                 cardinalities: Sequence[int]) -> list[np.ndarray]:
    """The rows at each level of each column, from ``(patterns, counts)`` blocks (codes, -1
    missing)."""
    totals = [np.zeros(r) for r in cardinalities]
    for patterns, counts in blocks:
        for j, r in enumerate(cardinalities):
            seen = patterns[:, j] >= 0
            totals[j] += np.bincount(patterns[seen, j], weights=counts[seen], minlength=r)
    return totals


def warn_code_like_levels(columns: Sequence[str], labels: Sequence[Sequence[Hashable]],
                          counts: Sequence[np.ndarray], stacklevel: int = 3) -> None:
    """One warning naming every column's rare level that looks like a missing-value code
    (module docstring); ``counts[j][k]`` is the number of rows of column ``j`` at level
    ``k``."""
    found = []
    for name, column_labels, column_counts in zip(columns, labels, counts, strict=True):
        total = float(np.sum(column_counts))
        for k, label in enumerate(column_labels):
            others = [lab for i, lab in enumerate(column_labels) if i != k]
            if others and 0 < column_counts[k] <= RARE_SHARE * total and code_like(label,
                                                                                    others):
                found.append((name, label, int(column_counts[k]), int(total)))
    if not found:
        return
    listed = "; ".join(f"column {name!r} level {str(label)!r} ({n} of {total} rows)"
                       for name, label, n, total in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    codes = ",".join(dict.fromkeys(str(label) for _, label, _, _ in found))
    warnings.warn(f"levels that look like missing-value codes are read as categories: "
                  f"{listed}{more}; if they mean missing, give na_values={codes.split(',')!r} "
                  f"(--na-values '{codes}')", stacklevel=stacklevel)
