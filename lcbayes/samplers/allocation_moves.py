"""The moves of the collapsed allocation sampler (:mod:`lcbayes.samplers.allocation`, whose
module docstring states the tempered target and derives the acceptance ratios): a random swap of
two class labels, one ejection / absorption move, and the Gibbs update of every row's class by
data augmentation. Pure functions of one chain's :class:`AllocState` at one heat, jitted inside
the sampler's scan and vmapped over heats and chains; no move loops over the rows."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp

from .gibbs import LCData, draw_classes, draw_dirichlets

__all__ = ["AllocData", "AllocPrior", "AllocState", "Tables", "alloc_data", "allocated",
           "augmented_gibbs", "class_likelihoods", "collapsed_loglik", "eject_absorb",
           "initial_state", "p_eject", "swap_labels", "sweep", "target_tables"]


class AllocData(NamedTuple):
    """The rows as the moves read them: ``lc`` the :class:`~lcbayes.samplers.gibbs.LCData`
    (patterns, the pattern of every row), ``x (N, J, R)`` every row's one-hot values (zeros for
    a missing value and for padding rows), ``w (N,)`` 1 for a row, 0 for padding, ``n_rows``
    their sum."""

    lc: LCData
    x: jax.Array
    w: jax.Array
    n_rows: jax.Array


class AllocPrior(NamedTuple):
    """``ln p(K)`` for ``K = 1..S``, the weights' ``alpha``, the items' ``lam (J, R)`` (1 in
    padded categories) and ``lam_total (J,)``, and the ejection's Beta shape ``a``."""

    log_prior_k: jax.Array
    alpha: jax.Array
    lam: jax.Array
    lam_total: jax.Array
    a: jax.Array


class AllocState(NamedTuple):
    """One chain at one heat: ``k`` active classes (the first ``k`` of ``S`` slots), ``z (N,)``
    every row's class, ``n (S,)`` rows per class, ``nr (S, J, R)`` rows per class and value of
    every item (missing values count nowhere)."""

    k: jax.Array
    z: jax.Array
    n: jax.Array
    nr: jax.Array


def alloc_data(lc: LCData) -> AllocData:
    """:class:`AllocData` of the rows of :func:`lcbayes.samplers.gibbs.lc_data`."""
    w = jnp.asarray(lc.row_weights)
    x = jnp.asarray(lc.one_hot)[jnp.asarray(lc.rows)] * w[:, None, None]
    return AllocData(lc, x, w, w.sum())


def allocated(data: AllocData, k, z: jax.Array, slots: int) -> AllocState:
    """The state of allocation ``z`` to ``k`` classes: its counts ``n`` and ``nr`` (dense
    one-hot arithmetic, cheaper than scatters under ``vmap``)."""
    onehot = jax.nn.one_hot(z, slots) * data.w[:, None]
    return AllocState(jnp.asarray(k, dtype=jnp.int32), z.astype(jnp.int32), onehot.sum(axis=0),
                      jnp.einsum("ns,njr->sjr", onehot, data.x))


def initial_state(data: AllocData, slots: int, k) -> AllocState:
    """Rows dealt to the first ``k`` classes in turn."""
    return allocated(data, k, jnp.arange(data.w.shape[0]) % k, slots)


class Tables(NamedTuple):
    """The log-gamma terms of the tempered target at one heat ``h``, over the possible counts
    ``m = 0 .. N`` (the row axis's length), so the moves read them instead of calling
    ``ln Γ``: ``values (J, R, N + 1)`` ``ln Γ(lam_jr + h m) - ln Γ(lam_jr)``, ``items (J, N + 1)``
    the same of ``lam_total``, ``weights (N + 1,)`` ``ln Γ(alpha + m) - ln Γ(alpha)``,
    ``shape (N + 1,)`` ``ln Γ(a + m)``, ``double (2 N + 1,)`` ``ln Γ(2 a + m)`` (the ejection's
    Beta), ``k_terms (S + 2,)`` ``ln p(K) + ln Γ(K alpha) - ln Γ(K alpha + N)`` at ``K``
    (``-inf`` at ``K = 0`` and ``S + 1``)."""

    values: jax.Array
    items: jax.Array
    weights: jax.Array
    shape: jax.Array
    double: jax.Array
    k_terms: jax.Array


def target_tables(data: AllocData, prior: AllocPrior, heat) -> Tables:
    """The :class:`Tables` of ``heat`` (computed once per replica, before the sweeps)."""
    m = jnp.arange(data.w.shape[0] + 1.0)
    ka = jnp.arange(1, prior.log_prior_k.shape[0] + 1) * prior.alpha
    k_terms = prior.log_prior_k + gammaln(ka) - gammaln(ka + data.n_rows)
    return Tables(gammaln(prior.lam[..., None] + heat * m) - gammaln(prior.lam)[..., None],
                  gammaln(prior.lam_total[:, None] + heat * m) - gammaln(prior.lam_total)[:, None],
                  gammaln(prior.alpha + m) - gammaln(prior.alpha), gammaln(prior.a + m),
                  gammaln(2.0 * prior.a + jnp.arange(2 * m.shape[0] - 1.0)),
                  jnp.pad(k_terms, 1, constant_values=-jnp.inf))


def _lookup(table: jax.Array, counts: jax.Array) -> jax.Array:
    """``table[..., count]`` for every count (``table``'s leading axes broadcast against
    ``counts``')."""
    index = jnp.asarray(counts).astype(jnp.int32)[..., None]
    return jnp.take_along_axis(jnp.broadcast_to(table, (*index.shape[:-1], table.shape[-1])),
                               index, axis=-1)[..., 0]


def class_likelihoods(tables: Tables, nr: jax.Array) -> jax.Array:
    """``ln F_h`` of each class (classes on the leading axes of ``nr``): per item
    ``ln B(lam_j + h n_kj) - ln B(lam_j)`` (Dirichlet-multinomial with fractional counts; an
    empty class gives 0)."""
    return (_lookup(tables.values, nr).sum((-2, -1))
            - _lookup(tables.items, nr.sum(-1)).sum(-1))


def collapsed_loglik(tables: Tables, nr: jax.Array) -> jax.Array:
    """``ln F_h(z) = ln int p(y | z, theta)^h p(theta) dtheta``, the sum of
    :func:`class_likelihoods`; at ``h = 1`` it is ``ln p(y | z, K)``."""
    return class_likelihoods(tables, nr).sum()


def augmented_gibbs(key, u_rows: jax.Array, data: AllocData, prior: AllocPrior,
                    state: AllocState, heat, shares: int
                    ) -> tuple[AllocState, jax.Array, tuple[jax.Array, jax.Array]]:
    """The Gibbs step of the sweep: ``pi ~ Dir(alpha + n_k)`` on the active classes,
    ``theta_kj ~ Dir(lam_j + h n_kj)``, then every row's class at once from
    ``p(z_i = k | pi, theta) ∝ pi_k prod_{j seen} theta_kj[y_ij]^h``, by inverse CDF of the
    rows' uniforms ``u_rows``. The one :func:`~lcbayes.samplers.gibbs.draw_dirichlets` call
    (from ``key``) also draws ``shares`` ejection shares ``Beta(a, a)`` (for the next sweep) as
    pairs of gammas, normalised apart; returns ``(state, ln p (shares,), (ln pi, ln theta))``."""
    slots = state.n.shape[0]
    active = jnp.arange(slots) < state.k
    log_g, log_theta = draw_dirichlets(
        key, jnp.concatenate([prior.alpha + state.n, jnp.full(2 * shares, prior.a)]),
        prior.lam + heat * state.nr, data.lc.categories,
        jnp.concatenate([active, jnp.ones(2 * shares, dtype=bool)]))
    log_w = log_g[:slots] - logsumexp(log_g[:slots])
    pairs = log_g[slots:].reshape(shares, 2)
    z = draw_classes(u_rows, data.lc, log_w, heat * log_theta)
    return (allocated(data, state.k, z, slots), pairs[:, 0] - logsumexp(pairs, axis=1),
            (log_w, log_theta))


def swap_labels(u, state: AllocState) -> AllocState:
    """Classes ``l`` (uniform among the active ones, from the uniform ``u``) and ``k - 1`` (the
    last active one) swap labels: the target is symmetric in the labels, so the move is always
    accepted, and the absorption (which absorbs the last class) then reaches every class."""
    slot = jnp.arange(state.n.shape[0])
    last = state.k - 1
    l = jnp.floor(u * state.k).astype(jnp.int32)
    other = jnp.where(slot == l, last, jnp.where(slot == last, l, slot))  # slot i gets other[i]
    z = jnp.where(state.z == l, last, jnp.where(state.z == last, l, state.z))
    return AllocState(state.k, z.astype(jnp.int32), state.n[other], state.nr[other])


def p_eject(k, slots: int) -> jax.Array:
    """Probability of proposing an ejection with ``k`` classes: 1 at ``k = 1``, 0 at
    ``k = slots``, else 1/2 (absorption otherwise)."""
    return jnp.where(k == 1, 1.0, jnp.where(k >= slots, 0.0, 0.5))


def _log_q_eject(tables: Tables, n_small, stay, m, k, slots: int) -> jax.Array:
    """``ln q(z -> z')`` of the ejection from ``k`` classes (counts ``n_small``) to ``k + 1``
    whose new last class holds ``m`` rows of one class (``stay`` of its rows remain): one source
    class when ``m > 0``; with ``m = 0``, every class could have ejected nothing. ``ln B(a +
    m, a + s) = ln Γ(a + m) + ln Γ(a + s) - ln Γ(2 a + m + s)`` from the tables."""
    def log_beta(x, y):
        return _lookup(tables.shape, x) + _lookup(tables.shape, y) - _lookup(tables.double,
                                                                              x + y)

    none = logsumexp(jnp.where(jnp.arange(slots) < k, log_beta(jnp.zeros(slots), n_small),
                               -jnp.inf))
    chosen = jnp.where(m > 0, log_beta(m, stay), none)
    return jnp.log(p_eject(k, slots)) - jnp.log(k) + chosen - log_beta(0.0, 0.0)


def _log_q_absorb(m, k_big, slots: int) -> jax.Array:
    """``ln q(z' -> z)`` of absorbing the last of ``k_big`` classes (``m`` rows) into one of
    the others, chosen uniformly: one choice gives ``z`` when ``m > 0``, all do when
    ``m = 0``."""
    small = k_big - 1
    return (jnp.log1p(-p_eject(k_big, slots)) + jnp.where(m > 0, 0.0, jnp.log(small))
            - jnp.log(small))


def eject_absorb(u: jax.Array, data: AllocData, tables: Tables, state: AllocState, log_share
                 ) -> tuple[AllocState, jax.Array, jax.Array]:
    """One ejection (probability :func:`p_eject`; ``ln p`` of its ``Beta(a, a)`` share drawn
    by the caller) or absorption, accepted by Metropolis-Hastings, from uniforms ``u``
    (``(N + 3,)``: the rows' Bernoulli draws, the move type, the class, the acceptance); returns
    ``(state, ejection proposed, accepted)``. Each log target ratio reads only the classes that
    change; counts change by one-hot arithmetic (no scatter under ``vmap``)."""
    k, z, n, nr = state
    slots = n.shape[0]
    slot = jnp.arange(slots)
    u_rows, u_move, u_class, u_accept = u[:-3], u[-3], u[-2], u[-1]
    eject = u_move < p_eject(k, slots)
    # ejection: rows of class j move to the new class k with probability p ~ Beta(a, a);
    # absorption: the last class (k - 1) joins class i, uniform among the others
    j = jnp.floor(u_class * k).astype(jnp.int32)
    i = jnp.floor(u_class * jnp.maximum(k - 1, 1)).astype(jnp.int32)
    new, last = jnp.minimum(k, slots - 1), jnp.maximum(k - 1, 0)
    moved = ((z == j) & (jnp.log(u_rows) < log_share)) * data.w
    m, mx = moved.sum(), jnp.einsum("n,njr->jr", moved, data.x)
    m_last = n[last]
    # classes before and after: [j - moved, moved, j, i + last, i, last]
    sizes = jnp.stack([n[j] - m, m, n[j], n[i] + m_last, n[i], m_last])
    terms = (_lookup(tables.weights, sizes) + class_likelihoods(
        tables, jnp.stack([nr[j] - mx, mx, nr[j], nr[i] + nr[last], nr[i], nr[last]])))
    k_terms = tables.k_terms[jnp.stack([k - 1, k, k + 1])]
    e_ratio = (k_terms[2] - k_terms[1] + terms[0] + terms[1] - terms[2]
               + _log_q_absorb(m, k + 1, slots) - _log_q_eject(tables, n, n[j] - m, m, k, slots))
    e_shift = (slot == new) * 1.0 - (slot == j)
    a_shift = (slot == i) * 1.0 - (slot == last)
    a_ratio = (k_terms[0] - k_terms[1] + terms[3] - terms[4] - terms[5]
               + _log_q_eject(tables, n + a_shift * m_last, n[i], m_last, k - 1, slots)
               - _log_q_absorb(m_last, k, slots))
    accepted = jnp.log(u_accept) < jnp.where(eject, e_ratio, a_ratio)
    take_e, take_a = accepted & eject, accepted & ~eject
    shift = take_e * e_shift * m + take_a * a_shift * m_last
    table_shift = (take_e * e_shift[:, None, None] * mx
                   + take_a * a_shift[:, None, None] * nr[last])
    z = jnp.where(take_e & (moved > 0), new, jnp.where(take_a & (z == last), i, z))
    k = k + take_e.astype(k.dtype) - take_a.astype(k.dtype)
    return AllocState(k, z.astype(jnp.int32), n + shift, nr + table_shift), eject, accepted


def sweep(key, data: AllocData, prior: AllocPrior, tables: Tables, state: AllocState,
          log_shares: jax.Array, heat) -> tuple[AllocState, jax.Array, tuple, jax.Array,
                                                jax.Array]:
    """One sweep at ``heat`` (``tables`` its :class:`Tables`): for every ejection share ``p``
    of ``log_shares`` (``ln p``, drawn in the previous sweep) a random relabelling and one
    ejection or absorption, then the Gibbs step (:func:`augmented_gibbs`). Returns ``(state,
    the next sweep's ln p, (ln pi, ln theta) of the Gibbs step, proposed, accepted)``, the last
    two counts of ejections and absorptions. All uniforms come from one draw."""
    rows, moves = state.z.shape[0], log_shares.shape[0]
    k_gamma, k_uniform = jax.random.split(key)
    u = jax.random.uniform(k_uniform, (moves + 1, rows + 4),
                           minval=jnp.finfo(jnp.float64).tiny)

    def move(state, inputs):
        u, log_share = inputs
        state = swap_labels(u[0], state)
        state, eject, accepted = eject_absorb(u[1:], data, tables, state, log_share)
        return state, (jnp.stack([eject, ~eject]), jnp.stack([eject, ~eject]) & accepted)

    state, (proposed, accepted) = jax.lax.scan(move, state, (u[1:], log_shares))
    state, log_shares, params = augmented_gibbs(k_gamma, u[0, :rows], data, prior, state, heat,
                                                moves)
    return (state, log_shares, params, proposed.sum(0, dtype=jnp.int32),
            accepted.sum(0, dtype=jnp.int32))
