"""Reference-tempered SMC: ``ln p(y | K)`` of a latent class model from a data-informed start.

**The path.** A sequence of targets from a reference ``R`` that can be sampled exactly and whose
normaliser is one, to the posterior (Del Moral, Doucet & Jasra 2006; a geometric path from a
reference as in Fan et al. 2011's generalised stepping stones), on the parameters
``theta = (pi, theta_jk)``, the allocations ``z`` and a reference component ``m``::

    pi_beta(m, z, theta) ∝ [omega_m Q_m(z, theta)]^(1 - beta) p(y, z, theta)^beta,

``p(y, z, theta) = p(theta) prod_i pi_{z_i} prod_{j observed} theta_{j z_i}[y_ij]`` (Dirichlet
priors, missing values factors of one), ``Q_m(z, theta) = prod_i q^m_i(z_i) g^m(theta)`` a
product reference built from one EM optimum (:mod:`lcbayes.samplers.reference`): ``q^m_i`` the
row's class probabilities there, ``g^m`` Dirichlet densities of the expected counts there.
Every path that starts from the prior crosses a first-order phase transition at survey sizes
(``shared/notes/evidence-reference-tempering.md``); this one
starts in the ordered phase, so there is none to cross.

At ``beta = 0`` the target is the reference mixture (normaliser one); at ``beta = 1`` it is the
posterior for every ``m`` (normaliser ``M p(y)``), in ``M`` copies the particles do not cross
between (a particle keeps the component it started in), and of the posterior's ``K!``
relabelled copies of each mode they reach one. Both are symmetries of the final target, and
both are removed exactly by one more importance weight (**the final correction**): with
``Q = sum_m omega_m Q_m``,

    w(m, x) = omega_m Q_m(x) / sum_sigma Q(sigma x),     sum_m sum_sigma w(m, sigma x) = 1

for every ``x = (z, theta)`` (``sigma`` over the ``K!`` relabellings of the classes, under which
``p(y, x)`` is unchanged), so the target ``K! w(m, x) p(y, x)`` has normaliser exactly ``p(y)``
and

    ln p(y | K) = ln Z_hat + ln K! + ln mean_particles w(m, x).

Where the particles' copies are apart, ``w ≈ 1`` (the familiar ``+ ln K!``); where two
components are relabellings of one mode (the particles then cover it twice), or two classes
nearly coincide (an over-fitted ``K``: the relabelled copies overlap), ``w`` is ``1/2`` per such
pair, which a plain ``ln K!`` would overcount. ``sum_sigma Q_m(sigma x)`` is the permanent of a
``K x K`` matrix (:func:`lcbayes.samplers.bridge.log_permanent`). The estimate covers the
posterior mass the particles reach: the modes the reference components start in.

**The step** (one per temperature): the incremental log weight of a particle is ``(beta' -
beta) [ln p(y, z, theta) - ln omega_m Q_m(z, theta)]``; ``beta'`` is chosen by bisection so
that the effective sample size stays ``ess_target`` of the particles (Zhou, Johansen & Aston
2016); ``ln Z_hat`` gains the log of the weights' mean; systematic resampling; then
``sweeps`` blocked Gibbs sweeps at ``beta'``, every draw exact:

1. ``m | z, theta ∝ [omega_m Q_m(z, theta)]^(1 - beta)``;
2. ``pi | z, m ~ Dir((1 - beta) a^m + beta (delta + N_k))``, ``theta_jk | z, m ~
   Dir((1 - beta) a^m_jk + beta (lambda_jk + N_jkr))`` (Dirichlet reference and prior are
   conjugate to the tempered likelihood);
3. each row's class independently, ``∝ q^m_i(k)^(1 - beta) [pi_k p(y_i | theta_k)]^beta``:
   the rows of a pattern share it, so each pattern's rows are one multinomial draw
   (:mod:`lcbayes.samplers.allocations`), and a sweep costs patterns, not rows.

Particles are a vmapped batch axis; a run is one jitted ``lax.while_loop`` over temperatures
(:func:`run_tempered`). The kernel is BlackJAX-style: :func:`init` and :func:`build_kernel`'s
``step(key, state) -> (state, info)`` over :class:`TemperedState`, pure, so ``jit`` and
``vmap`` compose with them.

Example::

    data = tempered_data(dataset)                  # patterns, counts, rows
    end = run_tempered(key, data, prior, reference, k, particles=256, ess_target=0.9,
                       sweeps=1, max_steps=1000)
    end.log_evidence, end.steps
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..data import Dataset
from ..program_cache import cached_jit
from .allocations import (
    PrefixClass,
    all_rows,
    by_rows,
    every_row_allocations,
    pattern_allocations,
)
from .gibbs import LCPrior, class_log_lik, draw_dirichlets
from .loops import padded_size
from .particle_weights import ess, largest_step, systematic
from .reference_density import (
    Reference,
    active_slots,
    dirichlet_terms,
    log_reference,
    particle_corrections,
    safe_parameters,
)

__all__ = ["BISECTIONS", "MIN_PATTERNS", "Reference", "TemperedData", "TemperedEnd",
           "TemperedInfo", "TemperedState", "build_kernel", "init", "log_joint", "run_tempered",
           "tempered_data"]

#: Halvings of the bisection that chooses the next temperature.
BISECTIONS = 50
#: Smallest padded pattern axis (data sets of similar size share one compiled program).
MIN_PATTERNS = 16


class TemperedData(NamedTuple):
    """The data as the kernel reads them.

    Attributes:
        one_hot: ``(P, J, R)`` one-hot codes of the patterns with at least one observed value
            (zeros for missing values, padded categories and padded patterns).
        counts: ``(P,)`` rows per pattern (0 for padding).
        categories: ``(J, R)`` True where category ``r`` exists for item ``j``.
        rows: every row, sorted by pattern (:func:`lcbayes.samplers.allocations.all_rows`).
    """

    one_hot: jax.Array
    counts: jax.Array
    categories: jax.Array
    rows: PrefixClass


class TemperedState(NamedTuple):
    """The particles (leading axis ``N``) and where the path is.

    Attributes:
        component: ``(N,)`` reference component ``m`` of every particle.
        log_weights: ``(N, S)`` ``ln pi`` (``-inf`` on inactive slots).
        log_theta: ``(N, S, J, R)`` ``ln theta`` (``-inf`` in padded categories).
        n_k, n_kjr: ``(N, S)``, ``(N, S, J, R)`` the allocation's class counts.
        cross: ``(N, M, S, S)`` ``sum_p n_pk ln q^m_p(l)``: the allocation's reference log
            density under every component and relabelling (its trace is ``ln q^m(z)``).
        beta: the temperature of the particles' current target.
        log_z: ``ln Z_hat`` so far.
        steps: temperatures taken.
    """

    component: jax.Array
    log_weights: jax.Array
    log_theta: jax.Array
    n_k: jax.Array
    n_kjr: jax.Array
    cross: jax.Array
    beta: jax.Array
    log_z: jax.Array
    steps: jax.Array


class TemperedInfo(NamedTuple):
    """One step: the new temperature, the effective sample size of its weights (before
    resampling), the log of their mean (the step's factor of ``Z_hat``) and, at the step that
    reaches ``beta = 1``, the final correction ``ln sum_i W_i w(m_i, x_i)`` over the weighted
    particles (0 before)."""

    beta: jax.Array
    ess: jax.Array
    log_increment: jax.Array
    correction: jax.Array


class TemperedEnd(NamedTuple):
    """A finished run: ``log_evidence`` (``ln Z_hat + ln k! + ln mean w``), its parts,
    the temperatures taken (``steps``; ``betas``/``ess`` padded with NaN past them), and
    whether the path reached ``beta = 1``."""

    log_evidence: jax.Array
    log_z: jax.Array
    correction: jax.Array
    steps: jax.Array
    finished: jax.Array
    betas: jax.Array
    ess: jax.Array
    state: TemperedState


def tempered_data(data: Dataset) -> TemperedData:
    """:class:`TemperedData` of a data set (all its columns), NumPy arrays: the patterns with
    at least one observed value, padded to a size class (:func:`~.loops.padded_size`)."""
    cards = np.asarray(data.cardinalities)
    width = int(cards.max())
    patterns = np.asarray(data.patterns)
    seen = np.any(patterns >= 0, axis=1)
    patterns, counts = patterns[seen], np.asarray(data.counts, dtype=np.float64)[seen]
    size = padded_size(patterns.shape[0], MIN_PATTERNS)
    one_hot = np.zeros((size, patterns.shape[1], width))
    p, j = np.nonzero(patterns >= 0)
    one_hot[p, j, patterns[p, j]] = 1.0
    padded = np.zeros(size)
    padded[:counts.size] = counts
    categories = np.arange(width)[None, :] < cards[:, None]
    return TemperedData(one_hot, padded, categories, all_rows(padded))  # type: ignore[arg-type]


def log_joint(data: TemperedData, prior: LCPrior, k, state: TemperedState) -> jax.Array:
    """``(N,)`` ``ln p(y, z, theta)`` of every particle (prior densities plus the complete-data
    log-likelihood, from the counts)."""
    terms = dirichlet_terms(prior.delta, prior.lam, data.categories, active_slots(prior, k))
    safe_w, safe_t = safe_parameters(data.categories, prior, k, state)
    return (terms.norm + jnp.einsum("ns,ns->n", terms.weights + state.n_k, safe_w)
            + jnp.einsum("nsjr,nsjr->n", terms.tables + state.n_kjr, safe_t))


def _allocate(key, data: TemperedData, reference: Reference, logits) -> tuple[jax.Array, ...]:
    """One particle's rows drawn to the classes with pattern logits ``(P, S)``: ``n_k``,
    ``n_kjr`` and the cross terms with every component's ``ln q``."""
    if by_rows(data.rows):
        n_pk = every_row_allocations(key, logits, data.rows)
    else:
        n_pk = pattern_allocations(key, logits, data.rows, data.counts)
    safe_q = jnp.where(jnp.isfinite(reference.log_q), reference.log_q, 0.0)
    return (n_pk.sum(0), jnp.einsum("pk,pjr->kjr", n_pk, data.one_hot),
            jnp.einsum("pk,mpl->mkl", n_pk, safe_q))


def init(key, data: TemperedData, prior: LCPrior, reference: Reference, k, particles: int
         ) -> TemperedState:
    """``particles`` exact draws from the reference mixture (``beta = 0``): a component by
    ``omega``, ``theta`` from its Dirichlets, the rows from its class probabilities."""
    active = active_slots(prior, k)

    def one(key):
        k_m, k_par, k_rows = jax.random.split(key, 3)
        m = jax.random.categorical(k_m, reference.log_omega)
        log_w, log_t = draw_dirichlets(k_par, reference.weight_shapes[m],
                                       reference.table_shapes[m], data.categories, active)
        n_k, n_kjr, cross = _allocate(k_rows, data, reference, reference.log_q[m])
        return m.astype(jnp.int32), log_w, log_t, n_k, n_kjr, cross

    m, log_w, log_t, n_k, n_kjr, cross = jax.vmap(one)(jax.random.split(key, particles))
    return TemperedState(m, log_w, log_t, n_k, n_kjr, cross, jnp.asarray(0.0),
                         jnp.asarray(0.0), jnp.asarray(0))


def _sweep(key, data: TemperedData, prior: LCPrior, reference: Reference, k, beta,
           state: TemperedState) -> TemperedState:
    """Steps 1-3 of the module docstring for every particle at ``beta``."""
    active = active_slots(prior, k)
    k_m, k_par = jax.random.split(key)
    own = log_reference(data.categories, prior, reference, k, state)
    component = jax.random.categorical(
        k_m, jnp.where(jnp.isfinite(own), (1.0 - beta) * own, -jnp.inf), axis=1)

    def one(key, m, n_k, n_kjr):
        k_par, k_rows = jax.random.split(key)
        log_w, log_t = draw_dirichlets(
            k_par, (1.0 - beta) * reference.weight_shapes[m] + beta * (prior.delta + n_k),
            (1.0 - beta) * reference.table_shapes[m] + beta * (prior.lam + n_kjr),
            data.categories, active)
        logits = ((1.0 - beta) * reference.log_q[m]
                  + beta * jnp.where(active, log_w[None, :] + class_log_lik(
                      data.one_hot, data.categories, log_t), -jnp.inf))
        return (log_w, log_t, *_allocate(k_rows, data, reference, logits))

    log_w, log_t, n_k, n_kjr, cross = jax.vmap(one)(
        jax.random.split(k_par, component.shape[0]), component, state.n_k, state.n_kjr)
    return state._replace(component=component.astype(jnp.int32), log_weights=log_w,
                          log_theta=log_t, n_k=n_k, n_kjr=n_kjr, cross=cross)


def _next_beta(beta, delta, target) -> jax.Array:
    """The largest ``beta' <= 1`` whose weights ``(beta' - beta) delta`` keep an effective
    sample size of at least ``target``; a step too small to resolve (every halving failed)
    still advances by the last halving."""
    rest = 1.0 - beta
    step = largest_step(jnp.zeros_like(delta), delta, rest, target, BISECTIONS)
    return jnp.where(step >= rest, 1.0, beta + jnp.maximum(step, rest * 2.0 ** -BISECTIONS))


def build_kernel(data: TemperedData, prior: LCPrior, reference: Reference, k, *,
                 ess_target: float, sweeps: int):
    """``step(key, state) -> (state, info)``: one temperature of the module docstring
    (reweight to the next ``beta``, resample, ``sweeps`` Gibbs sweeps there). The step that
    reaches ``beta = 1`` computes the final correction from the weighted particles before
    resampling (the particle system the last factor of ``Z_hat`` was computed from), and
    neither resamples nor moves them: at ``beta = 1`` a move of ``m`` would spread them over
    the copies that ``Z_hat`` does not count."""
    def step(key, state: TemperedState) -> tuple[TemperedState, TemperedInfo]:
        n = state.component.shape[0]
        m_log = log_reference(data.categories, prior, reference, k, state)
        own = jnp.take_along_axis(m_log, state.component[:, None], axis=1)[:, 0]
        delta = log_joint(data, prior, k, state) - own
        beta = _next_beta(state.beta, delta, ess_target * n)
        log_w = (beta - state.beta) * delta
        increment = logsumexp(log_w) - jnp.log(n)
        last = beta >= 1.0

        def move(state):
            k_resample, k_move = jax.random.split(key)
            moved = jax.tree.map(lambda a: a[systematic(k_resample, log_w)] if a.ndim else a,
                                 state)
            for s in range(sweeps):   # a few sweeps: unrolled
                moved = _sweep(jax.random.fold_in(k_move, s), data, prior, reference, k,
                               beta, moved)
            return moved

        def correct(state):
            log_h = particle_corrections(data.categories, prior, reference, k, state)
            return logsumexp(log_w + log_h) - logsumexp(log_w)

        correction = jax.lax.cond(last, correct, lambda state: jnp.asarray(0.0), state)
        moved = jax.lax.cond(last, lambda state: state, move, state)
        moved = moved._replace(beta=beta, log_z=state.log_z + increment,
                               steps=state.steps + 1)
        return moved, TemperedInfo(beta, ess(log_w), increment, correction)

    return step


@partial(cached_jit, static_argnames=("particles", "sweeps", "max_steps"))
def run_tempered(key, data: TemperedData, prior: LCPrior, reference: Reference, k, *,
                 particles: int, ess_target: float, sweeps: int, max_steps: int
                 ) -> TemperedEnd:
    """One run from ``beta = 0`` to ``beta = 1`` (at most ``max_steps`` temperatures; a run
    that stops short is ``finished = False`` and its estimate is NaN)."""
    k_init, k_loop = jax.random.split(key)
    step = build_kernel(data, prior, reference, k, ess_target=ess_target, sweeps=sweeps)
    start = init(k_init, data, prior, reference, k, particles)
    history = jnp.full((2, max_steps), jnp.nan)

    def going(carry):
        return (carry[0].beta < 1.0) & (carry[0].steps < max_steps)

    def body(carry):
        state, history, _ = carry
        state, info = step(jax.random.fold_in(k_loop, state.steps), state)
        history = history.at[:, state.steps - 1].set(jnp.stack([info.beta, info.ess]))
        return state, history, info.correction

    state, history, correction = jax.lax.while_loop(going, body,
                                                    (start, history, jnp.asarray(0.0)))
    finished = state.beta >= 1.0
    estimate = state.log_z + jax.lax.lgamma(k + 1.0) + correction
    return TemperedEnd(jnp.where(finished, estimate, jnp.nan), state.log_z, correction,
                       state.steps, finished, history[0], history[1], state)
