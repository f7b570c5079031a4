"""Posterior draws of a latent class model as bridge sampling (:mod:`lcbayes.samplers.bridge`)
reads them: parameters and the class counts of the allocation they were drawn from."""

from __future__ import annotations

from typing import NamedTuple

import jax
from jax.scipy.special import logsumexp

from .gibbs import class_log_lik

__all__ = ["Particles", "pattern_loglik"]


class Particles(NamedTuple):
    """``M`` draws: ``log_weights (M, S)`` (``-inf`` on inactive slots), ``log_theta (M, S,
    J, R)``, and the class counts of the Gibbs step that drew them, ``n_k (M, S)`` and
    ``n_kjr (M, S, J, R)`` (zeros for prior draws)."""

    log_weights: jax.Array
    log_theta: jax.Array
    n_k: jax.Array
    n_kjr: jax.Array


def pattern_loglik(one_hot, categories, log_weights, log_theta) -> jax.Array:
    """``(P,)`` ``ln p(y_p | pi, theta)`` of one particle, classes summed out."""
    return logsumexp(log_weights[None, :] + class_log_lik(one_hot, categories, log_theta),
                     axis=1)
