"""The covariate side of a latent class regression: the design matrix of class membership.

Class membership is a multinomial logit, ``P(class = r | x) = softmax_r(x' beta_r)`` with
``beta_1 = 0`` (class 1 the reference; Dayton & Macready 1988, Linzer & Lewis 2011 §2.2). ``x``
is a row of the *design*: an intercept, every numeric covariate as it is, and every categorical
covariate (text, ``bool``, pandas ``Categorical``) expanded to one 0/1 indicator per level but the
first, its *reference* level (the first in sorted order, or the ``Categorical``'s first category),
the way R's ``model.matrix`` codes a factor. The design's column names follow R:
``(Intercept)``, ``GPA``, ``SEXFEMALE``.

:func:`covariate_design` builds a :class:`Covariates` from a DataFrame and checks it: a name
that is not a column, a text covariate with more than :data:`MAX_LEVELS` levels, a constant
covariate or collinear covariates (a design column that is a linear combination of those before
it, which makes the information matrix singular) are refused with a message naming the column.
Rows with a missing covariate cannot be placed in a class model that depends on it: they are
left out, and a warning says how many (poLCA drops them silently). :meth:`Covariates.transform`
codes new rows with the same levels (for ``predict_proba`` and ``simulate``).

Example::

    frame = lcb.datasets.frame("cheating")
    cov = covariate_design(frame, ["GPA"])  # (Intercept), GPA; 4 rows lack GPA: warned
    cov.matrix[cov.kept]                    # (315, 2)
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...errors import ArgumentError, DataError
from ...render import json_value

__all__ = ["INTERCEPT", "MAX_LEVELS", "Covariates", "covariate_design"]

#: The design column of the intercept (R's name).
INTERCEPT = "(Intercept)"
#: Most levels a categorical covariate may have (more: it is an identifier or continuous).
MAX_LEVELS = 50


def _is_categorical(series: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)


def _levels(series: pd.Series, name: str) -> tuple[Hashable, ...]:
    if isinstance(series.dtype, pd.CategoricalDtype):
        levels = tuple(series.cat.categories)
    else:
        values = series.dropna()
        values = values.map(lambda v: v.strip() if isinstance(v, str) else v)
        values = values[values.map(lambda v: v != "")]
        levels = tuple(sorted(set(values), key=lambda v: (str(type(v)), v)))
    if len(levels) > MAX_LEVELS:
        raise DataError(f"covariate {name!r} is text with {len(levels)} levels (more than "
                        f"{MAX_LEVELS}): an identifier or a number stored as text? convert it "
                        "with pandas.to_numeric, or group its levels")
    return levels


@dataclass(frozen=True)
class Covariates:
    """A membership design (module docstring).

    Attributes:
        columns: the covariate columns, as given.
        levels: per categorical covariate, its levels (the first is the reference).
        names: the design's column names (``(Intercept)`` first).
        matrix: ``(n_rows, n_design)`` float64 design of the rows it was built from (NaN where
            a covariate is missing).
        kept: ``(n_rows,)`` whether a row has every covariate (the rows a fit uses).
    """

    columns: tuple[str, ...]
    levels: Mapping[str, tuple[Hashable, ...]]
    names: tuple[str, ...]
    matrix: np.ndarray = field(repr=False)
    kept: np.ndarray = field(repr=False)

    @property
    def n_design(self) -> int:
        """Columns of the design (intercept included)."""
        return len(self.names)

    @property
    def references(self) -> dict[str, Hashable]:
        """Each categorical covariate's reference level."""
        return {c: lv[0] for c, lv in self.levels.items()}

    @property
    def n_dropped(self) -> int:
        """Rows left out for a missing covariate."""
        return int((~self.kept).sum())

    def transform(self, frame: pd.DataFrame, *, name: str = "covariates") -> np.ndarray:
        """The design of new rows, coded with these levels (NaN where a covariate is
        missing); a level not seen in fitting is refused."""
        return _matrix(_check_frame(frame, self.columns, name), self.columns, self.levels,
                       name)

    def to_dict(self, *, rows: bool = False) -> dict:
        """JSON form of the design's description, and with ``rows`` of its rows too (the
        matrix, missing values as ``None``, and ``kept``)."""
        out = {"columns": list(self.columns),
               "levels": {c: [json_value(v) for v in lv] for c, lv in self.levels.items()},
               "names": list(self.names)}
        if rows:
            out.update(matrix=json_value(self.matrix), kept=self.kept.tolist())
        return out

    @classmethod
    def intercept_only(cls, n_rows: int) -> Covariates:
        """The design of a model with no covariates (every row kept)."""
        return cls(columns=(), levels={}, names=(INTERCEPT,), matrix=np.ones((n_rows, 1)),
                   kept=np.ones(n_rows, dtype=bool))

    @classmethod
    def from_description(cls, spec: Mapping) -> Covariates:
        """The design of :meth:`to_dict`: with its rows if they were written, else with none
        (enough for :meth:`transform`)."""
        width = len(spec["names"])
        matrix = np.asarray(spec.get("matrix", np.zeros((0, width))), dtype=np.float64)
        return cls(columns=tuple(spec["columns"]),
                   levels={c: tuple(lv) for c, lv in spec["levels"].items()},
                   names=tuple(spec["names"]), matrix=matrix.reshape(-1, width),
                   kept=np.asarray(spec.get("kept", []), dtype=bool))


def _check_frame(frame, columns: Sequence[str], name: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise ArgumentError(f"{name} must be a pandas DataFrame holding the covariate "
                            f"column(s) {list(columns)}, got {type(frame).__name__}")
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise DataError(f"covariate(s) {absent} are not columns of {name}; its columns are "
                        f"{[str(c) for c in frame.columns]}")
    return frame


def _matrix(frame: pd.DataFrame, columns: Sequence[str],
            levels: Mapping[str, tuple[Hashable, ...]], name: str) -> np.ndarray:
    parts = [np.ones((len(frame), 1))]
    for column in columns:
        series = frame[column]
        if column not in levels:
            if _is_categorical(series):
                raise DataError(f"{name}: covariate {column!r} was numeric when the model was "
                                "fitted but is text here")
            parts.append(series.to_numpy(dtype=np.float64, na_value=np.nan)[:, None])
            continue
        values = series.map(lambda v: v.strip() if isinstance(v, str) else v)
        missing = values.isna().to_numpy() | values.map(lambda v: v == "").to_numpy()
        known = set(levels[column])
        unseen = sorted({str(v) for v, m in zip(values, missing, strict=True)
                         if not m and v not in known})
        if unseen:
            raise DataError(f"{name}: covariate {column!r} has level(s) {unseen[:5]} that the "
                            f"model does not know; its levels are {list(levels[column])}")
        block = np.stack([(values == level).to_numpy(dtype=np.float64)
                          for level in levels[column][1:]], axis=1) if len(
            levels[column]) > 1 else np.zeros((len(frame), 0))
        block[missing] = np.nan
        parts.append(block)
    return np.concatenate(parts, axis=1)


def _first_dependent(matrix: np.ndarray) -> int | None:
    """The first column that is a linear combination of the columns before it."""
    scale = np.abs(matrix).max(axis=0)
    scaled = matrix / np.where(scale > 0, scale, 1.0)
    for j in range(1, matrix.shape[1] + 1):
        sub = scaled[:, :j]
        if np.linalg.matrix_rank(sub, tol=1e-9 * max(sub.shape)) < j:
            return j - 1
    return None


def covariate_design(frame: pd.DataFrame, covariates: Sequence[str], *,
                     name: str = "covariates", stacklevel: int = 2) -> Covariates:
    """The membership design of ``covariates`` (columns of ``frame``): module docstring.
    ``name`` is the argument errors are reported under; ``stacklevel`` that of the warning
    about rows left out (2: the caller's line).

    Raises:
        DataError: a covariate that is not a column, text with more than :data:`MAX_LEVELS`
            levels, or a design that is constant or collinear (names the column).
    """
    if isinstance(covariates, str):
        covariates = [covariates]
    covariates = [str(c) for c in covariates]
    if not covariates:
        raise ArgumentError(f"{name}: give at least one covariate column")
    if len(set(covariates)) < len(covariates):
        raise ArgumentError(f"{name}: covariate(s) named twice in {covariates}")
    frame = _check_frame(frame, covariates, name)
    levels = {c: _levels(frame[c], c) for c in covariates if _is_categorical(frame[c])}
    matrix = _matrix(frame, covariates, levels, name)
    names = [INTERCEPT]
    for c in covariates:
        names += [f"{c}{level}" for level in levels[c][1:]] if c in levels else [c]
    kept = ~np.isnan(matrix).any(axis=1)
    if not kept.any():
        raise DataError(f"{name}: no row has every covariate {covariates} observed")
    if np.isinf(matrix[kept]).any():
        raise DataError(f"{name}: a covariate has an infinite value")
    dependent = _first_dependent(matrix[kept])
    if dependent is not None:
        column = names[dependent]
        what = ("is constant (it is collinear with the intercept)"
                if np.ptp(matrix[kept][:, dependent]) == 0 else
                f"is a linear combination of {names[:dependent]}")
        raise DataError(f"{name}: design column {column!r} {what}, so the information matrix "
                        f"is singular and its coefficient is not identified; leave it out")
    n_dropped = int((~kept).sum())
    if n_dropped:
        warnings.warn(f"{n_dropped} of {len(kept)} rows lack a covariate among {covariates} "
                      "and are left out of the fit", stacklevel=stacklevel + 1)
    return Covariates(columns=tuple(covariates), levels=levels, names=tuple(names),
                      matrix=matrix, kept=kept)
