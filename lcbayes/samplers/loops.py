"""Loop helpers shared by the samplers (:mod:`.gibbs`, :mod:`.network_gibbs`, :mod:`.rjmcmc`,
:mod:`.allocation`): padded axis sizes, ``n`` sweeps inside a ``lax`` loop and the number of
sweeps before each kept draw."""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["kept_counts", "padded_size", "sweeps"]


def padded_size(n: int, minimum: int) -> int:
    """``max(n, minimum)`` rounded up to a multiple of a quarter of the power of two below it
    (at most 25% padding), so that data sets of similar size share one compiled sampler."""
    m = max(int(n), minimum)
    step = max(1, 2 ** (m.bit_length() - 3))
    return -(-m // step) * step


def sweeps(n, step, state, key):
    """``n`` (traced) applications of ``step(key_i, state)``, keys folded from ``key``."""
    return jax.lax.fori_loop(0, n, lambda i, s: step(jax.random.fold_in(key, i), s), state)


def kept_counts(i, warmup, thin):
    """Sweeps before kept draw ``i``: ``warmup + thin`` before the first, ``thin`` after."""
    return jnp.where(i == 0, warmup + thin, thin)
