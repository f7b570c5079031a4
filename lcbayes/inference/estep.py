"""The result type shared by the exact inference routes."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["EStep", "safe_normaliser"]


class EStep(NamedTuple):
    """Everything an E step (or VBE step) needs from exact inference.

    Attributes:
        log_marginal: ``(P,)`` ``ln p(y_p)`` per pattern (the log normaliser when the tables
            are unnormalised, as in the VBE step).
        counts: per node, ``(q_i, r_i)`` expected family counts ``sum_p w_p P(x_i, pa_i | y_p)``
            (Beal & Ghahramani eq. 19); observed leaves with a missing value add nothing.
        hidden_marginals: per hidden node (in ``Structure.hidden_nodes`` order), ``(P, r_h)``
            posterior marginals.
        hidden_entropy: ``(P,)`` entropy of the joint posterior of the hidden nodes.
    """

    log_marginal: jax.Array
    counts: tuple[jax.Array, ...]
    hidden_marginals: tuple[jax.Array, ...]
    hidden_entropy: jax.Array


def safe_normaliser(log_marg: jax.Array) -> jax.Array:
    """``log_marg`` with ``-inf`` (impossible patterns) replaced by 0, so that normalising a
    row of ``-inf`` log joints gives zeros instead of NaN."""
    return jnp.where(jnp.isfinite(log_marg), log_marg, 0.0)
