"""Types and helpers shared by the exact inference routes."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from .coded import CodedOneHot

__all__ = ["LOG_ZERO_THRESHOLD", "EStep", "Evidence", "finite_log", "normalise_rows",
           "one_hot_columns", "restore_minus_inf", "safe_normaliser"]

#: Stand-in for ``ln 0`` inside matrix products: ``0 * -inf`` would be NaN, ``0 * -1e280`` is 0,
#: and a sum of a few thousand such entries stays finite and far below any real log probability.
_LOG_ZERO = -1e280
LOG_ZERO_THRESHOLD = -1e270


@partial(jax.tree_util.register_dataclass, data_fields=["one_hot", "log_consistency"],
         meta_fields=["folded"])
@dataclass(frozen=True)
class Evidence:
    """The data in the form the inference routes consume, built once per data set.

    Attributes:
        one_hot: ``(P, R)`` one-hot codes of the observed leaf values (all zeros where a value is
            missing), columns grouped as the route needs them; on the enumeration route with
            many patterns, the same matrix as block codes (:class:`.coded.CodedOneHot`).
        log_consistency: ``(P, S)`` 0 / ``-inf`` agreement of each joint enumerated state with
            the observed values of observed parent nodes (enumeration route), else ``None``.
        folded: leaves (node indices) observed in every pattern whose first category's column
            is left out of ``one_hot`` (static; see :func:`lcbayes.inference.enumeration.prepare`).
    """

    one_hot: jax.Array | CodedOneHot
    log_consistency: jax.Array | None
    folded: tuple[int, ...] = field(default=())


class EStep(NamedTuple):
    """Everything an E step (or VBE step) needs from exact inference.

    Attributes:
        log_marginal: ``(P,)`` ``ln p(y_p)`` per pattern (the log normaliser when the tables
            are unnormalised, as in the VBE step).
        counts: per node, ``(q_i, r_i)`` expected family counts ``sum_p w_p P(x_i, pa_i | y_p)``
            (Beal & Ghahramani eq. 19); observed leaves with a missing value add nothing.
        hidden_marginals: per hidden node (in ``Structure.hidden_nodes`` order), ``(P, r_h)``
            posterior marginals.
        hidden_entropy: ``(P,)`` entropy of the joint posterior of the hidden nodes (ICL).
        completion_entropy: ``(P,)`` entropy of the joint posterior of everything the pattern
            leaves free, the hidden nodes and any missing observed parents (the ``H[q(s_i)]``
            of Beal & Ghahramani's bound and of the Cheeseman-Stutz completion).
    """

    log_marginal: jax.Array
    counts: tuple[np.ndarray | jax.Array, ...]
    hidden_marginals: tuple[np.ndarray | jax.Array, ...]
    hidden_entropy: jax.Array
    completion_entropy: jax.Array


def one_hot_columns(patterns: jax.Array, columns, cardinalities) -> jax.Array:
    """``(P, sum r)`` one-hot codes of the given pattern columns, zeros for missing values."""
    if not columns:
        return jnp.zeros((patterns.shape[0], 0))
    return jnp.concatenate(
        [jax.nn.one_hot(patterns[:, c], r, dtype=jnp.float64)
         for c, r in zip(columns, cardinalities, strict=True)],
        axis=1,
    )


def finite_log(log_table: jax.Array) -> jax.Array:
    """``log_table`` with ``-inf`` replaced by a huge finite negative, for matrix products."""
    return jnp.where(jnp.isneginf(log_table), _LOG_ZERO, log_table)


def restore_minus_inf(values: jax.Array) -> jax.Array:
    """Undo :func:`finite_log` after a product: any sum that picked a zero becomes ``-inf``."""
    return jnp.where(values < LOG_ZERO_THRESHOLD, -jnp.inf, values)


def safe_normaliser(log_marg: jax.Array) -> jax.Array:
    """``log_marg`` with ``-inf`` (impossible patterns) replaced by 0, so that normalising a
    row of ``-inf`` log joints gives zeros instead of NaN."""
    return jnp.where(jnp.isfinite(log_marg), log_marg, 0.0)


def normalise_rows(log_joint: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(ln sum_s exp l_ps, exp(l_ps) / sum_s exp l_ps)`` for a ``(P, S)`` log joint that may
    hold ``-inf`` or :func:`finite_log` stand-ins for ``ln 0``.

    One ``exp`` pass serves both the log normaliser and the posterior. A row with no possible
    state has log normaliser ``-inf`` and posterior zeros (no NaN)."""
    top = jax.lax.stop_gradient(log_joint.max(axis=1))
    shift = jnp.where(top > LOG_ZERO_THRESHOLD, top, 0.0)
    scaled = jnp.exp(log_joint - shift[:, None])
    total = scaled.sum(axis=1)
    possible = total > 0
    log_norm = jnp.where(possible, jnp.log(jnp.where(possible, total, 1.0)) + shift, -jnp.inf)
    return log_norm, scaled / jnp.where(possible, total, 1.0)[:, None]
