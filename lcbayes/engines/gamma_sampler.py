"""Exact log-gamma and log-Dirichlet draws, vectorised for annealing loops.

``jax.random.loggamma`` runs a rejection loop per element with its own key, which dominates a
sampler that draws a few dozen Dirichlet rows at each of thousands of temperatures. Here the
Marsaglia & Tsang (2000) rejection sampler works on the whole array: a few proposals per
element are drawn at once (array-wide random calls) and the first accepted is kept; a loop
finishes the rare elements with none accepted. Draws are exact.

For shape ``a >= 1``, with ``d = a - 1/3`` and ``c = 1 / sqrt(9 d)``: draw ``x ~ N(0, 1)``,
``v = (1 + c x)^3``; accept ``d v`` when ``v > 0`` and
``ln u < x^2 / 2 + d - d v + d ln v``. Shapes ``a < 1`` use ``Gamma(a) = Gamma(a + 1) U^(1/a)``,
in logs ``ln G = ln G_{a+1} + ln(U) / a``, which stays finite however small ``a`` is.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import draws
from ..inference import flat

__all__ = ["FIRST_ROUNDS", "log_dirichlet", "log_dirichlet_flat", "log_gamma"]

#: Proposals drawn per element before the rejection loop (each accepted with p >= 0.95).
FIRST_ROUNDS = 3


def _candidates(key, d, c, rounds: int):
    """``rounds`` Marsaglia-Tsang proposals per element: ``(ln(d v), accepted)``.

    One uniform draw per call: the normal ``x`` comes from two uniforms (Box-Muller), the
    acceptance test uses a third."""
    u = draws.uniform(key, (3, rounds, *d.shape), minval=jnp.finfo(jnp.float64).tiny)
    x = jnp.sqrt(-2.0 * jnp.log(u[0])) * jnp.cos(2.0 * jnp.pi * u[1])
    v = (1.0 + c * x) ** 3
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    accept = (v > 0) & (jnp.log(u[2]) < 0.5 * x * x + d - d * v + d * log_v)
    return jnp.log(d) + log_v, accept


def log_gamma(key: jax.Array, shape: jax.Array) -> jax.Array:
    """``ln G`` with ``G ~ Gamma(shape, 1)`` element-wise (``shape > 0``), exact.

    ``FIRST_ROUNDS`` proposals per element are drawn at once and the first accepted is kept;
    a ``while_loop`` then finishes the rare elements with none accepted (usually no round)."""
    shape = jnp.asarray(shape, dtype=jnp.float64)
    boosted = jnp.where(shape < 1.0, shape + 1.0, shape)
    d = boosted - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    k_first, k_loop, k_boost = jax.random.split(key, 3)
    values, accepted = _candidates(k_first, d, c, FIRST_ROUNDS)
    first = jnp.argmax(accepted, axis=0)
    value = jnp.take_along_axis(values, first[None], axis=0)[0]
    done = accepted.any(axis=0)

    def pending(carry):
        return jnp.any(~carry[2])

    def round_(carry):
        i, value, done = carry
        proposal, accept = _candidates(jax.random.fold_in(k_loop, i), d, c, 1)
        take = accept[0] & ~done
        return i + 1, jnp.where(take, proposal[0], value), done | accept[0]

    _, value, _ = jax.lax.while_loop(pending, round_, (0, value, done))
    u = draws.uniform(k_boost, shape.shape, minval=jnp.finfo(jnp.float64).tiny)
    return jnp.where(shape < 1.0, value + jnp.log(u) / shape, value)


def log_dirichlet(key: jax.Array, concentrations: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
    """Log rows of ``Dir(concentration_row)`` for every table (rows over the last axis), from
    one :func:`log_gamma` call on all entries together."""
    shapes = tuple((a.size // a.shape[-1], a.shape[-1]) for a in concentrations)
    draws = flat.unflatten(log_dirichlet_flat(key, flat.flatten(concentrations), shapes), shapes)
    return tuple(d.reshape(a.shape) for d, a in zip(draws, concentrations, strict=True))


def log_dirichlet_flat(key: jax.Array, concentrations: jax.Array, shapes) -> jax.Array:
    """:func:`log_dirichlet` on tables laid end to end (:mod:`lcbayes.inference.flat`)."""
    return flat.log_normalise(log_gamma(key, concentrations), shapes)
