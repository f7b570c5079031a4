"""The reference mixture of reference-tempered SMC (:mod:`lcbayes.samplers.tempered_smc`): its
density ``Q = sum_m omega_m Q_m`` on a particle and the final correction's sum over the
relabellings of the classes, with the Dirichlet densities both are made of.

``Q_m(z, theta) = prod_i q^m_i(z_i) g^m(theta)`` (:mod:`lcbayes.samplers.reference` builds
it). A particle carries its allocation's ``cross[m, k, l] = sum_p n_pk ln q^m_p(l)``, so
``ln q^m(z)`` is the trace of ``cross[m]`` and ``ln q^m(sigma z)`` a sum over the matching
``sigma``; ``g^m`` factors over the classes as well, so ``sum_sigma Q_m(sigma x)`` is one
``K x K`` permanent (:func:`lcbayes.samplers.bridge.log_permanent`).

The functions take the particles' state (``log_weights (N, S)``, ``log_theta (N, S, J, R)``,
``cross (N, M, S, S)``, ``component (N,)``: :class:`~lcbayes.samplers.tempered_smc.
TemperedState`) and the items' ``categories (J, R)``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from ..engines.dirichlet import log_normaliser
from .bridge import log_permanent
from .gibbs import LCPrior

__all__ = ["DirichletTerms", "Reference", "active_slots", "dirichlet_terms", "log_reference",
           "particle_corrections", "safe_parameters"]


class Reference(NamedTuple):
    """``M`` product reference components on ``S`` class slots (the first ``k`` active).

    Attributes:
        log_q: ``(M, P, S)`` ``ln q^m_p(k)`` of every pattern (``-inf`` on inactive slots).
        weight_shapes: ``(M, S)`` Dirichlet shapes ``a^m`` of the class weights.
        table_shapes: ``(M, S, J, R)`` Dirichlet shapes ``a^m_jk`` of the item tables (1 in
            padded categories).
        log_omega: ``(M,)`` log mixture weights (summing to one).
    """

    log_q: jax.Array
    weight_shapes: jax.Array
    table_shapes: jax.Array
    log_omega: jax.Array


def active_slots(prior: LCPrior, k) -> jax.Array:
    """``(S,)`` True on the first ``k`` class slots."""
    return jnp.arange(prior.delta.shape[0]) < k


class DirichletTerms(NamedTuple):
    """Product Dirichlet densities ``ln Dir(pi | a) + sum_jk ln Dir(theta_jk | a_jk)`` on the
    active slots as ``norm + sum weights * ln pi + sum tables * ln theta`` (leading axes for
    several densities): ``norm`` the log normalisers, ``weights``/``tables`` the shapes less
    one (zero off the active slots and padded categories)."""

    norm: jax.Array
    weights: jax.Array
    tables: jax.Array


def dirichlet_terms(weight_shapes, table_shapes, categories, active) -> DirichletTerms:
    """:class:`DirichletTerms` of shapes ``(..., S)`` and ``(..., S, J, R)``."""
    cells = categories & active[:, None, None]
    w = jnp.where(active, weight_shapes, 1.0)
    t = jnp.where(cells, table_shapes, 1.0)
    norm = log_normaliser(w, active) + jnp.sum(
        log_normaliser(t, cells), axis=(-2, -1),
        where=active[:, None] & jnp.ones(t.shape[-2], bool))
    return DirichletTerms(norm, jnp.where(active, w - 1.0, 0.0), jnp.where(cells, t - 1.0, 0.0))


def safe_parameters(categories, prior: LCPrior, k, state) -> tuple[jax.Array, jax.Array]:
    """The particles' ``ln pi`` and ``ln theta`` with zeros off the active cells."""
    active = active_slots(prior, k)
    return (jnp.where(active, state.log_weights, 0.0),
            jnp.where(categories & active[:, None, None], state.log_theta, 0.0))


def log_reference(categories, prior: LCPrior, reference: Reference, k, state) -> jax.Array:
    """``(N, M)`` ``ln omega_m Q_m(z, theta)`` of every particle under every component."""
    active = active_slots(prior, k)
    terms = dirichlet_terms(reference.weight_shapes, reference.table_shapes, categories,
                             active)
    safe_w, safe_t = safe_parameters(categories, prior, k, state)
    trace = jnp.sum(jnp.where(active, jnp.diagonal(state.cross, axis1=2, axis2=3), 0.0), -1)
    return (reference.log_omega + terms.norm + trace
            + jnp.einsum("ms,ns->nm", terms.weights, safe_w)
            + jnp.einsum("msjr,nsjr->nm", terms.tables, safe_t))


def particle_corrections(categories, prior: LCPrior, reference: Reference, k, state
                         ) -> jax.Array:
    """``(N,)`` ``ln w(m, x)`` of every particle, the final correction (module docstring): per
    component
    ``m'`` the permanent of ``A[c, l] = sum_p n_pc ln q^m'_p(l) + (a^m'_l - 1) ln pi_c + sum_j
    ln Dir(theta_cj | a^m'_lj)`` over the ``k!`` relabellings of the active classes (the rest
    of ``ln Q_m'`` does not depend on ``sigma``); the numerator is the particle's own
    component's identity term."""
    active = active_slots(prior, k)
    slots = prior.delta.shape[0]
    both = active[:, None] & active[None, :]
    idle = jnp.where(~active[:, None] & ~active[None, :] & jnp.eye(slots, dtype=bool), 0.0,
                     -jnp.inf)
    cats = categories
    row_norm = jnp.sum(log_normaliser(reference.table_shapes, cats), -1)   # (M, S)
    weight_norm = log_normaliser(reference.weight_shapes, active)
    base = reference.log_omega + weight_norm                                # (M,)

    def one(m, log_w, log_t, cross):
        safe_w = jnp.where(active, log_w, 0.0)
        safe_t = jnp.where(cats, log_t, 0.0)
        tables = jnp.einsum("mljr,cjr->mcl", jnp.where(cats, reference.table_shapes - 1.0, 0.0),
                            safe_t)
        log_a = (cross + (reference.weight_shapes - 1.0)[:, None, :] * safe_w[None, :, None]
                 + tables + row_norm[:, None, :])
        log_a = jnp.where(both[None], log_a, idle[None])
        own = base[m] + jnp.sum(jnp.where(active, jnp.diagonal(log_a[m]), 0.0))
        return own - logsumexp(base + jax.vmap(log_permanent)(log_a))

    return jax.vmap(one)(state.component, state.log_weights, state.log_theta, state.cross)
