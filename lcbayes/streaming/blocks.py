"""Data as a sequence of blocks of unique patterns with counts, for engines that stream.

A :class:`PatternBlocks` is what the streaming engines read: the column names and labels of a
categorical data set and its rows as blocks of ``(patterns, counts)``, each block at most
``block_patterns`` patterns. A pattern may occur in several blocks (its counts then add up);
the likelihood is a sum over blocks, so an E step that sums the blocks' expected counts is
exact. Blocks live in memory (:meth:`PatternBlocks.from_dataset`, :meth:`from_arrays`) or in
``.npz`` files that are read one at a time (:func:`lcbayes.scan_file`), so a pass over the
data holds one block, not the data set.

**Lifetime of block files.** The files :func:`~lcbayes.scan_file` writes live in a folder of
their own (:class:`SpillFolder`), removed when the last :class:`PatternBlocks` that holds it is
garbage collected, or when the interpreter exits: keep the object while the paths in ``blocks``
are in use. A pickled copy (e.g. sent to a Dask worker on the same machine) only borrows the
folder: it never removes it, so the original must outlive it.

:class:`PatternSum` is the merge both sides use: distinct patterns with summed counts, added to
chunk by chunk in memory proportional to the distinct patterns, not the rows.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data import Dataset
from ..encoding import grouped_keys, key_groups, key_patterns
from ..errors import DataError

__all__ = ["PatternBlocks", "PatternSum", "SpillFolder"]


class SpillFolder:
    """A folder of block files. :meth:`create` makes a new one (in ``parent``, default the
    system's temporary folder) that is removed with everything in it when this object is
    garbage collected or the interpreter exits (module docstring); an unpickled copy borrows
    the folder and never removes it."""

    def __init__(self, path: str | Path, owner: bool = False) -> None:
        self.path = Path(path)
        self.owner = owner
        if owner:
            weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    @classmethod
    def create(cls, parent: str | os.PathLike | None = None) -> SpillFolder:
        return cls(tempfile.mkdtemp(prefix="lcbayes-blocks-", dir=parent), owner=True)

    def __reduce__(self):
        return SpillFolder, (str(self.path),)

    def write(self, index: int, patterns: np.ndarray, counts: np.ndarray) -> Path:
        """Block ``index`` as an ``.npz`` file of the folder (``patterns`` as they are: int32
        in a block of :class:`PatternBlocks`); its path."""
        path = self.path / f"block{index:06d}.npz"
        np.savez(path, patterns=patterns, counts=counts.astype(np.float64))
        return path


class PatternSum:
    """Distinct patterns of codes (``-1`` = missing) with summed counts, for columns of
    ``cardinalities`` categories, kept sorted by their :func:`~lcbayes.encoding.grouped_keys`:
    one int64 per pattern, or one per group of columns where the columns are too many for one
    63-bit key (sorted then by :func:`numpy.lexsort`)."""

    def __init__(self, cardinalities: Iterable[int]) -> None:
        self.cardinalities = tuple(int(c) for c in cardinalities)
        self.groups = key_groups(self.cardinalities)
        self.ids = np.zeros((0, len(self.groups)), dtype=np.int64)  # (patterns, groups) keys
        self.counts = np.zeros(0)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def add(self, codes: np.ndarray, counts: np.ndarray | None = None) -> None:
        """Add rows of ``codes`` with ``counts`` (default: one each)."""
        ids = grouped_keys(codes, self.cardinalities)
        if counts is None and ids.shape[1] == 1:  # compressed first: the merge sorts little
            keys, counts = np.unique(ids[:, 0], return_counts=True)
            ids = keys[:, None]
        elif counts is None:
            ids, counts = _summed(ids, np.ones(ids.shape[0]))
        self.ids, self.counts = _summed(np.concatenate([self.ids, ids]),
                                        np.concatenate([self.counts, counts]))

    def take(self, size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The first ``size`` (default: all) patterns and their counts, removed from the sum."""
        size = len(self) if size is None else size
        ids, counts = self.ids[:size], self.counts[:size]
        self.ids, self.counts = self.ids[size:], self.counts[size:]
        patterns = np.concatenate([key_patterns(ids[:, i], self.cardinalities[g])
                                   for i, g in enumerate(self.groups)], axis=1)
        return patterns.astype(np.int32), counts.astype(np.float64)


def _summed(ids: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of keys ``ids``, sorted, with their ``counts`` summed."""
    if ids.shape[1] == 1:
        order = np.argsort(ids[:, 0], kind="stable")  # two sorted runs: a linear merge
    else:
        order = np.lexsort(ids.T[::-1])  # the first group's key first
    ids, counts = ids[order], counts[order].astype(np.float64)
    if ids.shape[0] == 0:
        return ids, counts
    start = np.flatnonzero(np.concatenate([[True], np.any(ids[1:] != ids[:-1], axis=1)]))
    return ids[start], np.add.reduceat(counts, start)


@dataclass(frozen=True, eq=False)
class PatternBlocks:
    """Categorical data as blocks of unique patterns with counts (module docstring).

    Attributes:
        columns: column names.
        labels: per column, the category labels in code order.
        blocks: per block, either a pair ``(patterns, counts)`` of arrays (``(b, J)`` int32
            codes, ``-1`` = missing, and ``(b,)`` float64 counts) or the path of an ``.npz``
            file holding them under the names ``patterns`` and ``counts``.
        n_rows: number of rows (fully missing ones included).
        n_observed_rows: rows with at least one observed value (the ``N`` of BIC).
        block_patterns: the most patterns a block holds.
        spill: the folder of the file blocks, if any (module docstring: it is removed with
            the last object holding it).
    """

    columns: tuple[str, ...]
    labels: tuple[tuple[Hashable, ...], ...]
    blocks: tuple[tuple[np.ndarray, np.ndarray] | Path, ...]
    n_rows: int
    n_observed_rows: int
    block_patterns: int
    spill: SpillFolder | None = None

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of categories of each column."""
        return tuple(len(lab) for lab in self.labels)

    @property
    def n_columns(self) -> int:
        """Number of columns (with ``columns``, ``labels`` and ``cardinalities`` what the
        structure constructors read: ``lcb.latent_class(blocks, 5)``)."""
        return len(self.columns)

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The blocks in order, each ``(patterns, counts)``; file blocks are read one at a
        time."""
        for block in self.blocks:
            if isinstance(block, Path):
                with np.load(block) as stored:
                    yield stored["patterns"], stored["counts"]
            else:
                yield block

    @classmethod
    def from_arrays(cls, patterns: np.ndarray, counts: np.ndarray, columns: Sequence[str],
                    labels: Sequence[Sequence[Hashable]],
                    block_patterns: int = 65536) -> PatternBlocks:
        """Blocks in memory: ``patterns`` (``(P, J)`` codes) with ``counts`` cut into blocks
        of at most ``block_patterns`` rows of ``patterns``."""
        patterns = np.asarray(patterns, dtype=np.int32)
        counts = np.asarray(counts, dtype=np.float64)
        if patterns.ndim != 2 or counts.shape != patterns.shape[:1]:
            raise DataError(f"patterns must be (P, J) codes and counts (P,), got shapes "
                            f"{patterns.shape} and {counts.shape}")
        if len(columns) != patterns.shape[1] or len(labels) != patterns.shape[1]:
            raise DataError(f"patterns have {patterns.shape[1]} columns but {len(columns)} "
                            f"names and {len(labels)} label lists were given")
        if patterns.shape[0] == 0:
            raise DataError("the data has no rows: give at least one pattern")
        if np.any(counts < 0) or not np.all(np.isfinite(counts)):
            raise DataError("counts must be finite and non-negative")
        size = int(block_patterns)
        if size < 1:
            raise DataError(f"block_patterns must be at least 1, got {block_patterns}")
        blocks = tuple((patterns[i:i + size], counts[i:i + size])
                       for i in range(0, patterns.shape[0], size))
        observed = np.any(patterns >= 0, axis=1)
        return cls(columns=tuple(map(str, columns)), labels=tuple(map(tuple, labels)),
                   blocks=blocks, n_rows=round(float(counts.sum())),
                   n_observed_rows=round(float(counts[observed].sum())), block_patterns=size)

    @classmethod
    def from_dataset(cls, data, block_patterns: int = 65536) -> PatternBlocks:
        """The unique patterns of a :class:`~lcbayes.Dataset` in blocks."""
        return cls.from_arrays(data.patterns, data.counts, data.columns, data.labels,
                               block_patterns)

    def to_dataset(self) -> Dataset:
        """All blocks as one pattern-form :class:`~lcbayes.Dataset`
        (:meth:`~lcbayes.Dataset.from_patterns`: no rows are made), a pattern's counts in
        several blocks added up; memory: the distinct patterns and one block. Its warnings
        (constant columns, rows with no observed value) are left out: the scan gave them."""
        total = PatternSum(self.cardinalities)
        for patterns, counts in self:
            total.add(patterns, counts)
        patterns, counts = total.take()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return Dataset.from_patterns(patterns, counts, self.columns, self.labels)
