"""The data of a multiple-group latent class model, and its invariance structure as a plain
latent class model of *expanded* items.

A multiple-group latent class model (Clogg & Goodman 1985; glca's ``glca(..., group=)``) has
class prevalences ``P(class | group)`` for every group and item tables that are shared by the
groups (*invariant* items) or group-specific (*free* items):

    p(y | g) = sum_r P(r | g) prod_{j invariant} theta_{j r y_j} prod_{j free} theta^{(g)}_{j r y_j}

A free item ``j`` is the same as ``G`` expanded items ``j[g]``: ``j[g]`` holds ``y_j`` in the rows
of group ``g`` and is missing elsewhere. A missing value contributes a factor of one, so the
likelihood of the expanded data under a latent class model with group-specific prevalences is
exactly the one above, with the same parameters: full invariance frees no item, no invariance
frees every item, partial invariance the items named. The expanded items keep the item's
categories (an absent category of one group still has its probability), so the parameter
count is glca's.

:func:`group_rows` reads the group column and the items and leaves out (with a warning giving
the count) the rows without a group and the rows whose items are all missing (glca drops these;
they carry no information about the items); :class:`GroupLayout` expands the items.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...constructors import latent_class
from ...data import Dataset
from ...encoding import encode_column
from ...errors import ArgumentError, DataError
from ...structure import Structure
from ...validation import data_for
from ..regression.design import MAX_LEVELS

__all__ = ["GroupLayout", "GroupedRows", "Invariance", "group_rows", "invariance_label",
           "invariance_model", "joint_data", "resolve_invariance"]

#: An invariance structure as users give it: ``"full"``, ``"none"`` or the free items' names.
Invariance = str | Sequence[str]


def resolve_invariance(invariance: Invariance, items: Sequence[str],
                       name: str = "invariance") -> tuple[str, ...]:
    """The free (group-specific) items of ``invariance``, in the items' order.

    ``"full"``: none; ``"none"``: all; a list of item names (or one name, or a comma-separated
    string): those. An item that is not an indicator is an :class:`ArgumentError`."""
    if isinstance(invariance, str):
        if invariance == "full":
            return ()
        if invariance == "none":
            return tuple(items)
        invariance = [s.strip() for s in invariance.split(",") if s.strip()]
    if not isinstance(invariance, Sequence) or not all(isinstance(s, str) for s in invariance):
        raise ArgumentError(f"{name} must be 'full', 'none' or a list of item names, got "
                            f"{invariance!r}")
    unknown = [s for s in invariance if s not in items]
    if unknown:
        raise ArgumentError(f"{name}: {unknown} are not indicators of the model (the items are "
                            f"{list(items)}); name items whose profiles may differ by group")
    if not invariance:
        raise ArgumentError(f"{name}: give 'full', 'none' or at least one item name")
    return tuple(s for s in items if s in set(invariance))


def invariance_label(free: Sequence[str], items: Sequence[str]) -> str:
    """``"full"``, ``"none"`` or ``"partial: A, B"`` (the free items)."""
    if not free:
        return "full"
    if len(free) == len(items):
        return "none"
    return "partial: " + ", ".join(free)


@dataclass(frozen=True)
class GroupedRows:
    """The rows of a multiple-group fit (:func:`group_rows`).

    Attributes:
        items: the indicators of the rows kept, coded with the structure's categories.
        group: ``(n,)`` group codes of those rows (indexes ``levels``).
        levels: the group labels in code order.
        kept: ``(n_rows,)`` which rows of the input were kept.
        name: the group column's name (``"group"`` for unnamed labels).
    """

    items: Dataset
    group: np.ndarray
    levels: tuple[Hashable, ...]
    kept: np.ndarray
    name: str


def _group_series(data, group, n_rows: int) -> pd.Series:
    """The group column: a column name of a DataFrame ``data``, or a Series / sequence of one
    label per row."""
    if isinstance(group, str):
        if not isinstance(data, pd.DataFrame) or group not in map(str, data.columns):
            raise DataError(f"group {group!r} is not a column of data; pass group=<column name "
                            "of a DataFrame data> or one group label per row")
        return data[group].reset_index(drop=True).rename(group)
    if isinstance(group, pd.Series | np.ndarray | list | tuple):
        series = pd.Series(np.asarray(group, dtype=object) if not isinstance(group, pd.Series)
                           else group.to_numpy(), name=getattr(group, "name", None) or "group")
        if len(series) != n_rows:
            raise DataError(f"group has {len(series)} labels but data has {n_rows} rows; give "
                            "one group label per row, in order")
        return series
    raise ArgumentError(f"group must be a column name of data or one label per row, got "
                        f"{type(group).__name__}")


def group_rows(structure: Structure, data, group, *, stacklevel: int = 2) -> GroupedRows:
    """The items and groups of ``data`` (module docstring).

    Raises:
        DataError: the group is an indicator or not a column, has more than
            :data:`~lcbayes.engines.regression.design.MAX_LEVELS` levels or only one."""
    items = data_for(structure, data)
    if not items.has_row_order:
        raise DataError("data are patterns with counts (no row order), so group labels cannot "
                        "be matched to them; build the Dataset from its rows")
    series = _group_series(data, group, items.n_rows)
    name = str(series.name)
    if name in structure.observed_names:
        raise DataError(f"group {name!r} is also an indicator of the model; a column is one or "
                        "the other (leave it out of the items)")
    codes, levels = encode_column(series, f"group {name!r}", MAX_LEVELS)
    no_group = codes < 0
    no_items = (items.codes < 0).all(axis=1)
    n = items.n_rows
    if no_group.any():
        warnings.warn(f"{int(no_group.sum())} of {n} rows have no {name} (the group) and are "
                      "left out", stacklevel=stacklevel + 1)
    if (no_items & ~no_group).any():
        warnings.warn(f"{int((no_items & ~no_group).sum())} of {n} rows have every item "
                      "missing and are left out (they carry no information about the items; "
                      "glca drops them too)", stacklevel=stacklevel + 1)
    kept = ~no_group & ~no_items
    if not kept.any():
        raise DataError(f"no row has both a {name} (the group) and an observed item")
    present = np.unique(codes[kept])
    if len(present) < 2:
        raise DataError(f"group {name!r} has one level ({levels[present[0]]!r}) among the rows "
                        "used: a multiple-group model needs at least two groups; fit without "
                        "group= instead")
    remap = np.full(len(levels), -1)
    remap[present] = np.arange(len(present))
    kept_items = Dataset(items.codes[kept], items.columns, items.labels)
    return GroupedRows(kept_items, remap[codes[kept]].astype(np.int64),
                       tuple(levels[i] for i in present), kept, name)


@dataclass(frozen=True)
class GroupLayout:
    """Which items are free (group-specific) and the expanded items that express it (module
    docstring).

    Attributes:
        group: the group column's name.
        levels: the group labels in code order.
        items: the indicators' names; item_labels: their categories.
        free: the free items, in the items' order.
    """

    group: str
    levels: tuple[Hashable, ...]
    items: tuple[str, ...]
    item_labels: tuple[tuple[Hashable, ...], ...]
    free: tuple[str, ...]

    @property
    def invariance(self) -> str:
        """``"full"``, ``"none"`` or ``"partial: A, B"``."""
        return invariance_label(self.free, self.items)

    def column(self, item: str, level: Hashable) -> str:
        """The expanded column of a free ``item`` in group ``level``: ``"item[level]"``."""
        return f"{item}[{level}]"

    @property
    def columns(self) -> tuple[str, ...]:
        """The expanded columns: the invariant items, then each free item once per group."""
        shared = tuple(i for i in self.items if i not in self.free)
        return shared + tuple(self.column(i, g) for i in self.free for g in self.levels)

    def source(self, column: str) -> tuple[str, Hashable | None]:
        """``(item, level)`` of an expanded column (``level`` None: invariant)."""
        if column in self.items and column not in self.free:
            return column, None
        for item in self.free:
            for level in self.levels:
                if self.column(item, level) == column:
                    return item, level
        raise KeyError(column)

    def expand(self, items: Dataset, group: np.ndarray) -> Dataset:
        """The expanded data of ``items`` (the indicators, in :attr:`items` order) with group
        codes ``group``."""
        index = {c: j for j, c in enumerate(items.columns)}
        labels = dict(zip(self.items, self.item_labels, strict=True))
        codes, out_labels = [], []
        for column in self.columns:
            item, level = self.source(column)
            values = items.codes[:, index[item]]
            if level is not None:
                values = np.where(group == self.levels.index(level), values, -1)
            codes.append(values)
            out_labels.append(labels[item])
        return Dataset(np.stack(codes, axis=1), self.columns, tuple(out_labels))

    def to_dict(self) -> dict:
        return {"group": self.group, "levels": [_plain(v) for v in self.levels],
                "items": list(self.items),
                "item_labels": [[_plain(v) for v in lab] for lab in self.item_labels],
                "free": list(self.free)}

    @classmethod
    def from_dict(cls, spec: dict) -> GroupLayout:
        return cls(spec["group"], tuple(spec["levels"]), tuple(spec["items"]),
                   tuple(tuple(lab) for lab in spec["item_labels"]), tuple(spec["free"]))


def _plain(value):
    """A label as JSON holds it (numpy scalars as Python ones)."""
    return value.item() if isinstance(value, np.generic) else value


def joint_data(expanded: Dataset, group: np.ndarray, name: str,
               levels: Sequence[Hashable]) -> Dataset:
    """The expanded items with the group as one more column: the data of the Bayesian model
    of :func:`invariance_model`."""
    return Dataset(np.column_stack([expanded.codes, group]), (*expanded.columns, name),
                   (*expanded.labels, tuple(levels)))


def invariance_model(structure: Structure, data, group, *,
                     invariance: Invariance = "full") -> tuple[Structure, Dataset]:
    """An invariance structure as a Bayesian latent class model and its data: the expanded
    items (module docstring) and the group as one more item, so that ``P(class, group)`` has
    a Dirichlet prior that every structure shares and the item tables (one per invariant
    item, one per group for a free item) have Dirichlet priors as everywhere in lcbayes.
    ``lcbayes.numpyro_model(model)`` is its NumPyro model; any lcbayes evidence engine takes
    ``(model, data)`` (:func:`lcbayes.compare_invariance` uses SMC).

    Rows are read as :func:`lcbayes.em` with ``group=`` reads them (rows without a group or
    with every item missing left out, with a warning)."""
    rows = group_rows(structure, data, group, stacklevel=2)
    name = rows.name
    items = structure.observed_names
    layout = GroupLayout(name, rows.levels, tuple(items), rows.items.labels,
                         resolve_invariance(invariance, items))
    joint = joint_data(layout.expand(rows.items, rows.group), rows.group, name, rows.levels)
    return latent_class(joint, int(structure.n_classes or 1),
                        name=structure.nodes[structure.root]), joint
