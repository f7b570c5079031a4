"""Weighted particles: the effective sample size, the adaptive tempering step and systematic
resampling, for the evidence estimators that temper a particle system
(:mod:`lcbayes.samplers.tempered_smc` over temperatures, :mod:`lcbayes.samplers.particle_filter`
within a row) and the bridge estimators that weight their draws.

* ``ESS(w) = (sum w)^2 / sum w^2`` of unnormalised weights (Kong, Liu & Wong 1994), in log space.
* The adaptive step (Jasra, Stephens, Doucet & Tsagaris 2011; Zhou, Johansen & Aston 2016): the
  largest ``d <= remaining`` with ``ESS(w exp(d l)) >= target`` for the incremental log weights
  ``l``, found by bisection (the ESS falls as ``d`` grows once the weights are unequal).
* Systematic resampling (Kitagawa 1996; Douc, Cappé & Moulines 2005): one uniform ``u``, the
  points ``(u + i) / M`` inverted through the weights' cumulative sum.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

__all__ = ["ess", "largest_step", "systematic"]


def ess(log_w: jax.Array) -> jax.Array:
    """The effective sample size ``(sum w)^2 / sum w^2`` of unnormalised log weights."""
    return jnp.exp(2.0 * logsumexp(log_w) - logsumexp(2.0 * log_w))


def largest_step(log_w: jax.Array, log_inc: jax.Array, remaining, target,
                 bisections: int) -> jax.Array:
    """The largest step ``d`` in ``[0, remaining]`` with ``ess(log_w + d log_inc) >= target``:
    ``remaining`` where the whole of it keeps the target, else the lower end of ``bisections``
    halvings (0 where none keeps it)."""
    def halve(_, bounds):
        low, high = bounds
        middle = 0.5 * (low + high)
        fine = ess(log_w + middle * log_inc) >= target
        return jnp.where(fine, middle, low), jnp.where(fine, high, middle)

    low = jax.lax.fori_loop(0, bisections, halve, (0.0 * remaining, remaining))[0]
    return jnp.where(ess(log_w + remaining * log_inc) >= target, remaining, low)


def systematic(key, log_w: jax.Array) -> jax.Array:
    """``(M,)`` systematic resampling indices from ``M`` log weights."""
    m = log_w.shape[0]
    cdf = jnp.cumsum(jax.nn.softmax(log_w))
    u = (jax.random.uniform(key) + jnp.arange(m)) / m
    return jnp.minimum(jnp.searchsorted(cdf, u * cdf[-1]), m - 1)
