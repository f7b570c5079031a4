"""The mode-jumping move of a latent class model's SMC run (:mod:`lcbayes.samplers.smc`).

**Why.** The particle filter adds rows one at a time, so its target moves from the posterior
of the first ``n`` rows to that of ``n + 1``. Along the way the posterior can have modes that
are not relabellings of each other (two different splits of the rows into classes), and a
few rows can turn a mode of negligible mass into the dominant one: on 300 rows of the
election data, K = 2, one row order makes the posterior of the first 31 rows put almost
everything on one split and that of the first 39 on another. Gibbs sweeps do not cross
between such modes, so every particle stays in the first and the incremental weights of
rows 32-39 are all too small: the run ends 12-15 nats below the evidence, whatever the number
of particles (4096 gave -2 to -13) or sweeps (16: -6 to -10), although the estimator is
unbiased (a run that does find the other mode lands several nats too high).

**The move.** An independence Metropolis-Hastings step on ``(pi, theta)`` at the posterior of
the first ``n`` rows, ``p(theta | y_1..n) ∝ p(theta) prod_p p(y_p | theta)^c_p`` (classes
summed out, ``c_p`` pattern ``p``'s rows among them), as in the move step of Chopin's (2002)
IBIS with a proposal fitted to the problem rather than to the particles alone. The proposal
``q`` is the relabelling-symmetrised mixture of Dirichlet complete-data posteriors of
:mod:`lcbayes.samplers.bridge`, with components of two kinds:

* the expected class counts at the fixed points of :data:`JUMP_RESTARTS` runs of EM from
  prior draws on those ``n`` rows (each update the posterior mean given the expected counts,
  so every value stays interior): they find the modes the particles have not visited;
* the allocation counts of :data:`JUMP_CLOUD` particles of the other half of the particles
  (each half is moved in turn): they cover the modes the particles are in, so that a particle
  in a mode no EM run found is not stuck (an independence sampler cannot leave a point where
  ``q`` is far smaller than the target), and no particle's own allocation enters its ``q``.

Each particle's ``theta`` is first drawn from ``p(theta | z, y)`` (so that it is a draw from
``p(theta | y_1..n)`` with the classes summed out), the proposal accepted with probability
``min(1, [p~(theta') q(theta)] / [p~(theta) q(theta')])``, then the classes are drawn given the
kept ``theta`` (:mod:`lcbayes.samplers.smc` does both). The chain on the allocations stays
reversible with respect to their posterior, so the move may serve anywhere a Gibbs sweep
does. A ``q`` built from the particles being moved (as IBIS fits its proposal to them) would
make the kernel depend on the state it moves; built from the other half, each half's step
leaves the product of the particles' targets invariant (an ensemble move), so the estimator
keeps its properties.

**Limits.** An independence step needs ``q`` close to the target. Where the posterior
splits at a few dozen rows, its dimension is small enough; at election K = 6 (some 220 free
parameters, all 1785 rows) a Gibbs chain's draws lie about 100 nats deeper in ``q``'s tails
than ``q``'s own draws, so the step is never accepted there. Made every tenth sweep of Chib's
chains (:mod:`lcbayes.engines.chib`) it let chains that had settled in different modes agree
at election K = 5, but its estimates over five seeds then spread 0.9 nats against a stated
error of 0.22, so it was not kept there.

With the move made each time ``n`` passes a point of a geometric grid
(:data:`lcbayes.samplers.particle_filter.JUMP_RATIO`), the row order above gives runs 0.6-1.7
nats below Chib's estimate (four runs, 128 particles) instead of 13-15;
``benchmarks/bench_mode_jump.py`` (``reports/mode-jump.md``) measures it over row orders and
on all the election rows. On 10^4 rows of 8 binary items, and on election, it adds a fifth
to a third to a run's time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from .bridge import components_of, draw_q, log_prior, log_q
from .gibbs import LCPrior, class_log_lik, draw_dirichlets
from .particles import Particles, pattern_loglik

__all__ = ["JUMP_CLOUD", "JUMP_ITERATIONS", "JUMP_RESTARTS", "em_counts", "jump_move",
           "prefix_jump"]

#: EM runs from prior draws whose fixed points become components of ``q``.
JUMP_RESTARTS = 8
#: EM iterations of each run.
JUMP_ITERATIONS = 10
#: Particles whose allocation counts become components of ``q`` (evenly spaced).
JUMP_CLOUD = 8


def em_counts(key, one_hot, categories, counts, prior: LCPrior, k, *, restarts: int,
              iterations: int) -> Particles:
    """Expected class counts ``n_k (restarts, S)``, ``n_kjr (restarts, S, J, R)`` of the
    patterns ``one_hot (P, J, R)`` weighted by ``counts (P,)`` after ``iterations`` EM
    updates from each of ``restarts`` starts (equal weights, tables drawn from the prior);
    every update is the posterior mean given the expected counts, ``pi ∝ delta + N_k``,
    ``theta_jk ∝ lambda_jk + N_jk``, so no probability reaches zero. Only the counts are
    set (the parameters are the starts')."""
    slots = prior.delta.shape[0]
    active = jnp.arange(slots) < k

    def expected(log_w, log_t):
        logits = log_w[None, :] + class_log_lik(one_hot, categories, log_t)
        share = jax.nn.softmax(logits, axis=1) * counts[:, None]
        return share.sum(axis=0), jnp.einsum("pk,pjr->kjr", share, one_hot)

    def update(params, _):
        n_k, n_kjr = expected(*params)
        log_w = jnp.where(active, jnp.log(prior.delta + n_k), -jnp.inf)
        log_t = jnp.where(categories, jnp.log(prior.lam + n_kjr), -jnp.inf)
        return (log_w - logsumexp(log_w),
                log_t - logsumexp(log_t, axis=-1, keepdims=True)), None

    def run(key):
        _, log_t = draw_dirichlets(key, prior.delta, prior.lam, categories, active)
        log_w = jnp.where(active, -jnp.log(k * 1.0), -jnp.inf)
        params = jax.lax.scan(update, (log_w, log_t), None, length=iterations)[0]
        return Particles(*params, *expected(*params))

    return jax.vmap(run)(jax.random.split(key, restarts))


def _half_move(key, one_hot, categories, counts, prior: LCPrior, k, moving: Particles,
               sources: Particles) -> tuple[Particles, jax.Array]:
    """The step of :func:`jump_move` for the particles ``moving``, ``q``'s components the
    allocation counts of ``sources``."""
    k_q, k_accept = jax.random.split(key)
    parts = components_of(prior, categories, k, sources)

    def log_ratio(log_w, log_t):
        target = (counts @ pattern_loglik(one_hot, categories, log_w, log_t)
                  + log_prior(prior, categories, k, log_w, log_t))
        return target - log_q(categories, k, parts, log_w, log_t)

    m = moving.n_k.shape[0]
    new_w, new_t = jax.vmap(lambda key: draw_q(key, prior, categories, k, sources))(
        jax.random.split(k_q, m))
    gain = (jax.vmap(log_ratio)(new_w, new_t)
            - jax.vmap(log_ratio)(moving.log_weights, moving.log_theta))
    accept = jnp.log(jax.random.uniform(k_accept, (m,))) < gain
    return moving._replace(
        log_weights=jnp.where(accept[:, None], new_w, moving.log_weights),
        log_theta=jnp.where(accept[:, None, None, None], new_t, moving.log_theta)
    ), accept.mean()


def jump_move(key, one_hot, categories, counts, prior: LCPrior, k, particles: Particles,
              modes: Particles, *, cloud: int = JUMP_CLOUD) -> tuple[Particles, jax.Array]:
    """One independence Metropolis-Hastings step of every particle's ``(pi, theta)`` at the
    posterior of the patterns ``one_hot`` weighted by ``counts`` (module docstring); the
    particles' parameters must be draws given their allocations. Each half of the particles
    is moved with ``q``'s components the counts of ``modes`` (as :func:`em_counts` gives them)
    and of ``cloud`` particles of the other half: a particle's own allocation never enters its
    ``q``, so each step leaves the posterior exactly invariant given the other particles (the
    step changes no allocation). Returns the particles (their counts unchanged: the caller
    draws the classes given the new parameters) and the share of the proposals accepted."""
    half = particles.n_k.shape[0] // 2
    stride = max(1, half // cloud)
    first, second = (jax.tree.map(lambda a, part=part: a[part], particles)
                     for part in (slice(None, half), slice(half, None)))

    def sources(other: Particles) -> Particles:
        return jax.tree.map(lambda own, em: jnp.concatenate([own[::stride][:cloud], em]),
                            other, modes)

    k_first, k_second = jax.random.split(key)
    first, accepted_first = _half_move(k_first, one_hot, categories, counts, prior, k, first,
                                       sources(second))
    second, accepted_second = _half_move(k_second, one_hot, categories, counts, prior, k,
                                         second, sources(first))
    moved = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), first, second)
    return moved, (half * accepted_first + (particles.n_k.shape[0] - half) * accepted_second
                   ) / particles.n_k.shape[0]


def prefix_jump(key, one_hot, categories, counts, prior: LCPrior, k, particles: Particles
                ) -> Particles:
    """:func:`jump_move` at the posterior of the patterns weighted by ``counts`` with ``q``'s
    modes from :func:`em_counts` on those rows (the SMC's move)."""
    k_em, k_move = jax.random.split(key)
    modes = em_counts(k_em, one_hot, categories, counts, prior, k, restarts=JUMP_RESTARTS,
                      iterations=JUMP_ITERATIONS)
    return jump_move(k_move, one_hot, categories, counts, prior, k, particles, modes)[0]
