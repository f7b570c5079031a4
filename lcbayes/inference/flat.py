"""Conditional probability tables laid end to end in one vector.

Node ``i``'s ``(q_i, r_i)`` table occupies entries ``offset_i + l r_i + k`` (row ``l``, value
``k``), nodes in structure order. The EM and VBEM loops and SQUAREM's extrapolation work on this
vector: a handful of whole-vector operations per step instead of a few per table, which matters
on a CPU where every small operation has a fixed cost (a 20-item latent class model has 21
tables).
"""

from __future__ import annotations

from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np

_Array = TypeVar("_Array", np.ndarray, jax.Array)

__all__ = ["entry_nodes", "entry_rows", "flatten", "log_normalise", "normalise", "offsets",
           "row_matrix", "row_nodes", "unflatten"]


def flatten(tables) -> jax.Array:
    """``(q_i, r_i)`` tables laid end to end in one vector."""
    return jnp.concatenate([jnp.ravel(t) for t in tables])


def unflatten(flat: _Array, shapes) -> tuple[_Array, ...]:
    """Inverse of :func:`flatten` for tables of the given ``(q_i, r_i)`` shapes (NumPy arrays
    of a NumPy vector)."""
    out, start = [], 0
    for q, r in shapes:
        out.append(flat[start:start + q * r].reshape(q, r))
        start += q * r
    return tuple(out)


def offsets(shapes) -> np.ndarray:
    """First entry of every table (``len(shapes) + 1`` values, the last is the length)."""
    return np.cumsum([0] + [q * r for q, r in shapes])


def entry_rows(shapes) -> np.ndarray:
    """The table row of every entry, numbered across tables (``(n_entries,)``)."""
    return np.repeat(np.arange(sum(q for q, _ in shapes)),
                     [r for q, r in shapes for _ in range(q)])


def normalise(counts: jax.Array, shapes) -> jax.Array:
    """Every table row divided by its sum; a row summing to zero becomes uniform (so an empty
    class never gives NaN). ``counts`` must be non-negative."""
    rows = entry_rows(shapes)
    n_rows = int(rows[-1]) + 1 if rows.size else 0
    width = np.repeat([r for q, r in shapes for _ in range(q)],
                      [r for q, r in shapes for _ in range(q)]).astype(np.float64)
    total = jax.ops.segment_sum(counts, rows, num_segments=n_rows)[rows]
    return jnp.where(total > 0, counts / jnp.where(total > 0, total, 1.0), 1.0 / width)


def entry_nodes(shapes) -> np.ndarray:
    """The table (node) of every entry (``(n_entries,)``)."""
    return np.repeat(np.arange(len(shapes)), [q * r for q, r in shapes])


def row_nodes(shapes) -> np.ndarray:
    """The table (node) of every table row (``(n_rows,)``)."""
    return np.repeat(np.arange(len(shapes)), [q for q, _ in shapes])


def log_normalise(log_values: jax.Array, shapes) -> jax.Array:
    """Log entries shifted so that every table row's probabilities sum to one."""
    rows = entry_rows(shapes)
    n_rows = int(rows[-1]) + 1
    top = jax.ops.segment_max(log_values, rows, num_segments=n_rows)[rows]
    total = jax.ops.segment_sum(jnp.exp(log_values - top), rows, num_segments=n_rows)[rows]
    return log_values - top - jnp.log(total)


def row_matrix(per_node, shapes) -> jax.Array:
    """Per-node ``(q, q)`` matrices acting on table rows (e.g. pooling tied rows) as one
    ``(n_entries, n_entries)`` matrix acting on the flat vector."""
    return jax.scipy.linalg.block_diag(*(jnp.kron(m, jnp.eye(r))
                                         for m, (_, r) in zip(per_node, shapes, strict=True)))
