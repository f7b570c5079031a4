"""One-hot evidence stored as small integer codes, one per block of leaves.

The enumeration route's two heavy products are ``Y M`` (log joint) and ``mass^T Y`` (expected
counts) with ``Y`` the ``(P, R)`` 0/1 one-hot matrix of the patterns' leaf values
(:mod:`~lcbayes.inference.enumeration`). Read densely, both stream all ``P R`` entries of ``Y``
from memory every step. But a row of ``Y`` is fixed by a few small integers: split the leaves
into consecutive *blocks* whose joint value spaces are small (at most ``block_size`` codes),
give every pattern one code per block, and keep per block a static *code book* ``A_b``
``(C_b, W_b)`` holding the one-hot row of every code. Row ``p`` of ``Y`` is the concatenation
of ``A_b[c_pb]`` over the blocks, so

* ``Y M = sum_b (A_b M_b)[c_b]``: a ``(C_b, S)`` table per block, then one gather per block;
* ``mass^T Y = [ (segment_sum_b mass)^T A_b ]_b``: one segment sum per block, then a product
  with the code book.

A 20-item binary latent class model has two blocks of 1024 codes: the ``(P, 20)`` matrix
becomes ``(P, 2)`` codes, and the step's work no longer grows with the number of items.

A leaf's *levels* are its values plus, when some pattern misses it, a last level "missing"
whose one-hot row is all zeros (the factor 1 of a summed-out leaf). A folded leaf (observed in
every pattern, :func:`lcbayes.inference.enumeration.prepare`) has no column for its first
value, so level 0 has the zero row.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["BLOCK_SIZE", "CodedOneHot", "Leaf", "encode"]

#: Largest number of codes in a block made of several leaves (a leaf with more values than
#: this is a block of its own).
BLOCK_SIZE = 1024


@dataclass(frozen=True)
class Leaf:
    """How one leaf's levels map to its one-hot columns.

    Attributes:
        column: the leaf's column in the pattern matrix.
        columns: per level, its one-hot column within the leaf's ``width`` columns, or ``-1``
            for the all-zero row (a missing value, or the first value of a folded leaf).
        width: the leaf's number of one-hot columns.
    """

    column: int
    columns: tuple[int, ...]
    width: int

    @property
    def n_levels(self) -> int:
        return len(self.columns)

    def rows(self) -> np.ndarray:
        """``(n_levels, width)`` one-hot row of every level."""
        out = np.zeros((self.n_levels, self.width))
        for level, col in enumerate(self.columns):
            if col >= 0:
                out[level, col] = 1.0
        return out


def _blocks(leaves: tuple[Leaf, ...], block_size: int) -> tuple[tuple[Leaf, ...], ...]:
    """Consecutive leaves grouped while their joint levels stay within ``block_size``."""
    blocks: list[list[Leaf]] = []
    size = 0
    for leaf in leaves:
        if blocks and size * leaf.n_levels <= block_size:
            blocks[-1].append(leaf)
            size *= leaf.n_levels
        else:
            blocks.append([leaf])
            size = leaf.n_levels
    return tuple(tuple(b) for b in blocks)


@lru_cache(maxsize=512)
def _code_book(block: tuple[Leaf, ...]) -> np.ndarray:
    """``(C_b, W_b)`` one-hot row of every code of a block; the first leaf varies slowest."""
    book = np.ones((1, 0))
    for leaf in block:
        rows = leaf.rows()
        book = np.concatenate([np.repeat(book, leaf.n_levels, axis=0),
                               np.tile(rows, (book.shape[0], 1))], axis=1)
    return book


@partial(jax.tree_util.register_dataclass, data_fields=["codes"], meta_fields=["blocks"])
@dataclass(frozen=True)
class CodedOneHot:
    """A ``(P, R)`` one-hot matrix as ``(P, B)`` block codes (module docstring).

    Attributes:
        codes: ``(P, B)`` int32 code of every pattern in every block.
        blocks: per block, its leaves (static).
    """

    codes: jax.Array
    blocks: tuple[tuple[Leaf, ...], ...]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.codes.shape[0], sum(leaf.width for b in self.blocks for leaf in b))

    def _slices(self):
        start = 0
        for b, block in enumerate(self.blocks):
            book = _code_book(block)
            yield b, book, slice(start, start + book.shape[1])
            start += book.shape[1]

    def dot(self, m: jax.Array) -> jax.Array:
        """``Y @ m`` for an ``(R, S)`` matrix: ``(P, S)``."""
        out = jnp.zeros((self.codes.shape[0], m.shape[1]), dtype=m.dtype)
        for b, book, cols in self._slices():
            out = out + (book @ m[cols])[self.codes[:, b]]
        return out

    def exp_dot(self, m: jax.Array, offset: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``exp(Y @ m + offset)`` for an ``(R, S)`` matrix and an ``(S,)`` offset, in factored
        form with ``exp`` taken on the code tables only: ``(F, g)`` such that
        ``exp(Y @ m + offset) = exp(g)[:, None] * F``.

        Per block the table ``T_b = A_b m_b`` (the first block's plus ``offset``) is shifted by
        its row maxima ``g_b`` before ``exp``, so every factor lies in ``[0, 1]``:
        ``F = prod_b exp(T_b - g_b)[c_b]`` and ``g = sum_b g_b[c_b]``. ``C_b S`` exponentials
        per block replace ``P S``. An entry of ``F`` is exact unless it falls below the
        smallest normal double (the caller checks)."""
        n_states = m.shape[1]
        # [I | 0]: puts exp(T - g) beside g in one gathered row. Being a product, it also keeps
        # XLA from fusing the exp into the gather, which would take it P S times.
        widen = jnp.eye(n_states, n_states + 1, dtype=m.dtype)
        picked = []
        for b, book, cols in self._slices():
            table = book @ m[cols] + (offset[None, :] if b == 0 else 0.0)
            top = table.max(axis=1)
            rows = (jnp.exp(table - top[:, None]) @ widen).at[:, n_states].set(top)
            picked.append(rows[self.codes[:, b]])
        factor = functools.reduce(jnp.multiply, [p[:, :n_states] for p in picked])
        return factor, functools.reduce(jnp.add, [p[:, n_states] for p in picked])

    def tdot(self, mass: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(mass.T @ Y, mass.sum(axis=0))`` for a ``(P, S)`` matrix: ``(S, R)`` and ``(S,)``
        (the column sums come from the first block's code sums, not from another pass)."""
        if not self.blocks:
            return jnp.zeros((mass.shape[1], 0), dtype=mass.dtype), mass.sum(axis=0)
        parts, total = [], None
        for b, book, _ in self._slices():
            sums = jax.ops.segment_sum(mass, self.codes[:, b], num_segments=book.shape[0])
            parts.append(sums.T @ book)
            total = sums.sum(axis=0) if total is None else total
        assert total is not None  # there are blocks
        return jnp.concatenate(parts, axis=1), total


def encode(patterns: jax.Array, leaves: tuple[Leaf, ...],
           block_size: int = BLOCK_SIZE) -> CodedOneHot:
    """Block codes of ``(P, J)`` patterns (``-1`` = missing, the leaf's last level)."""
    blocks = _blocks(leaves, block_size)
    codes = []
    for block in blocks:
        code = jnp.zeros(patterns.shape[0], dtype=jnp.int32)
        for leaf in block:
            y = patterns[:, leaf.column].astype(jnp.int32)
            level = jnp.where(y < 0, leaf.n_levels - 1, y)
            code = code * leaf.n_levels + level
        codes.append(code)
    stacked = (jnp.stack(codes, axis=1) if codes
               else jnp.zeros((patterns.shape[0], 0), dtype=jnp.int32))
    return CodedOneHot(stacked, blocks)
