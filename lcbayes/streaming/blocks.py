"""Data as a sequence of blocks of unique patterns with counts, for engines that stream.

A :class:`PatternBlocks` is what the streaming engines read: the column names and labels of a
categorical data set and its rows as blocks of ``(patterns, counts)``, each block at most
``block_patterns`` patterns. A pattern may occur in several blocks (its counts then add up);
the likelihood is a sum over blocks, so an E step that sums the blocks' expected counts is
exact. Blocks live in memory (:meth:`PatternBlocks.from_dataset`, :meth:`from_arrays`) or in
``.npz`` files that are read one at a time (the readers of :mod:`lcbayes.streaming`), so a
pass over the data holds one block, not the data set.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError

__all__ = ["PatternBlocks"]


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
    """

    columns: tuple[str, ...]
    labels: tuple[tuple[Hashable, ...], ...]
    blocks: tuple[tuple[np.ndarray, np.ndarray] | Path, ...]
    n_rows: int
    n_observed_rows: int
    block_patterns: int

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of categories of each column."""
        return tuple(len(lab) for lab in self.labels)

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
