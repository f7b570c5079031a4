"""Sequential Monte Carlo over the rows: ``ln p(y | K)`` of a latent class model at any N.

The particle filter of :mod:`lcbayes.samplers.particle_filter` (Chen & Liu 2000; Fearnhead
2004) with a latent class model's particles: the class counts ``N_k``, ``N_kjr`` of the rows
added so far. Adding row ``i`` with values ``y``, the Dirichlet-multinomial predictive of each
class (``pi`` and ``theta`` integrated out under the Dirichlet prior),

    p_k = (delta + N_k) / (sum_k (delta + N_k)) prod_{j seen} (lambda_jy + N_kjy) /
          (sum_r lambda_jr + N_kj),

gives the incremental weight ``w = sum_k p_k = p(y_i | z_<i, y_<i)``: a Rao-Blackwellised
weight, so particles that agree on the allocations carry equal weights, and an empty class
contributes its exact prior predictive (no sampled parameters of empty classes to get stuck,
the failure of over-fitted K). The move is the exact data-augmentation Gibbs sweep (``pi,
theta | z`` from their Dirichlet posteriors, then every added row's class given them).

The Gibbs sweep works on the smallest prefix size class (``N``, ``N / 4``, ... down to
:data:`MIN_PREFIX` rows or more) that holds the rows added, the patterns numbered by first
occurrence so that a prefix of rows uses a prefix of the patterns; within a class the rows are
sorted by pattern, so the rows of each pattern added so far come from one cumulative sum (no
scatter); where patterns repeat, each pattern's rows are allocated to the classes by one
multinomial draw (:func:`sorted_allocations`).

As the rows added pass the points of a geometric grid (and after the last row), the first
move of the resample-move step is the mode-jumping move of :mod:`lcbayes.samplers.mode_jump`
(an independence Metropolis-Hastings step whose proposal holds the modes EM finds at the rows
added so far), on the patterns of the prefix class that holds those rows: a few rows can turn a
mode no particle visits into the dominant one, which Gibbs sweeps alone do not reach.

After the last resample-move, a few more Gibbs sweeps of the particles at all the rows give
draws of ``(theta, z)`` from the posterior for the bridge sampling estimator
(:mod:`lcbayes.samplers.bridge`).

Classes are laid out in ``slots`` (the first ``k`` active), so ``compare``'s candidates
``K = 1 .. K_max`` can share one compiled program; runs are independent calls of it (keys
folded from the seed), so :mod:`lcbayes.samplers.smc_result` can give an error bar from their
spread.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset
from .gibbs import LCPrior, class_log_lik, draw_dirichlets
from .mode_jump import prefix_jump
from .particle_filter import TEMPER_ESS, RowModel, filter_rows
from .particles import Particles

__all__ = ["MIN_PREFIX", "PREFIX_RATIO", "ROWS_PER_PATTERN", "Particles", "PrefixClass", "SMCData",
           "by_rows", "holding", "included_counts", "ordered_rows", "pattern_allocations",
           "prefix_classes", "row_allocations", "row_class_counts", "run_smc", "running_sum",
           "smc_data", "sorted_allocations"]

#: Prefix size classes shrink by this factor (module docstring).
PREFIX_RATIO = 2
#: Smallest prefix size class, in rows.
MIN_PREFIX = 256
#: Rows per pattern from which a prefix class allocates by pattern (:func:`sorted_allocations`).
ROWS_PER_PATTERN = 8


class PrefixClass(NamedTuple):
    """The first ``n`` rows of the order, sorted by pattern: ``rows (n,)`` their patterns in the
    order (for the reweighting), ``sorted_rows (n,)`` the patterns sorted, ``position (n,)``
    each sorted row's place in the order, ``starts``/``ends (P,)`` each pattern's segment of the
    sorted rows (``P`` the patterns these rows use)."""

    rows: np.ndarray
    sorted_rows: np.ndarray
    position: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


class SMCData(NamedTuple):
    """The observed rows in their SMC order.

    Attributes:
        one_hot: ``(P, J, R)`` one-hot codes of the patterns, numbered by first occurrence in
            the order (zeros for missing values and padded categories).
        categories: ``(J, R)`` True where category ``r`` exists for item ``j``.
        classes: the :class:`PrefixClass` of every size class, largest (all ``N`` rows) first.
        counts: ``(P,)`` rows per pattern.
    """

    one_hot: np.ndarray
    categories: np.ndarray
    classes: tuple[PrefixClass, ...]
    counts: np.ndarray


def _prefix_class(rows: np.ndarray, patterns: int) -> PrefixClass:
    """The prefix class of ``rows`` with ``patterns`` pattern segments (those beyond the
    patterns the rows use are empty)."""
    position = np.argsort(rows, kind="stable").astype(np.int32)
    sorted_rows = rows[position]
    segments = np.arange(patterns)
    return PrefixClass(rows, sorted_rows, position,
                       np.searchsorted(sorted_rows, segments, "left").astype(np.int32),
                       np.searchsorted(sorted_rows, segments, "right").astype(np.int32))


def ordered_rows(data: Dataset, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``data`` with at least one observed value in a random order from ``rng``:
    ``(codes (P, J), rows (N,))``, the patterns renumbered by first occurrence in the order
    (``codes`` their values, -1 missing) and each row's pattern."""
    patterns = np.asarray(data.patterns)
    index = np.asarray(data.pattern_index)
    index = index[np.any(patterns >= 0, axis=1)[index]]
    ordered = index[rng.permutation(index.size)]
    used = ordered[np.sort(np.unique(ordered, return_index=True)[1])]
    renumber = np.full(patterns.shape[0], -1)
    renumber[used] = np.arange(used.size)
    return patterns[used], renumber[ordered].astype(np.int32)


def prefix_classes(rows: np.ndarray, patterns: int) -> tuple[PrefixClass, ...]:
    """The :class:`PrefixClass` of every size class (all ``N`` rows, ``N / 4``, ... down to
    :data:`MIN_PREFIX` or more), largest first. A class of ``n`` rows has ``min(n, patterns)``
    pattern segments whatever the order (``patterns`` the data's), so every row order gives
    arrays of the same shapes: each run orders the rows afresh in one compiled program."""
    sizes = [rows.size]
    while sizes[-1] // PREFIX_RATIO >= MIN_PREFIX:
        sizes.append(-(-sizes[-1] // PREFIX_RATIO))
    return tuple(_prefix_class(rows[:s], min(s, patterns)) for s in sizes)


def smc_data(data: Dataset, rng: np.random.Generator) -> SMCData:
    """The rows of ``data`` for a latent class model (:func:`ordered_rows`), cut into prefix
    size classes."""
    cards = np.asarray(data.cardinalities)
    codes, rows = ordered_rows(data, rng)
    width = int(cards.max())
    one_hot = np.zeros((*codes.shape, width))
    p, j = np.nonzero(codes >= 0)
    one_hot[p, j, codes[p, j]] = 1.0
    return SMCData(one_hot, np.arange(width)[None, :] < cards[:, None],
                   prefix_classes(rows, codes.shape[0]),
                   np.bincount(rows, minlength=codes.shape[0]).astype(np.float64))


def log_predictive(prior: LCPrior, categories, active, n_k, n_kjr, y) -> jax.Array:
    """``(S,)`` ``ln [p(z = k | z_<i) p(y | z = k, y_<i, z_<i)]`` of one particle's counts for a
    new row with one-hot values ``y (J, R)`` (zeros where missing): the Dirichlet-multinomial
    predictive ``(delta + N_k) / (sum delta + n) prod_{j seen} (lambda_jr + N_kjr) /
    (sum_r lambda_jr + N_kj)``; ``-inf`` on inactive slots."""
    weight = jnp.log(prior.delta + n_k) - jnp.log(jnp.sum(jnp.where(active, prior.delta + n_k,
                                                                    0.0)))
    seen = y.sum(-1)                                                     # (J,)
    value = jnp.sum(y * jnp.log(prior.lam + n_kjr), axis=-1)              # (S, J)
    total = jnp.log(jnp.sum(jnp.where(categories, prior.lam + n_kjr, 0.0), axis=-1))
    return jnp.where(active, weight + jnp.sum(seen * (value - total), axis=-1), -jnp.inf)


def running_sum(x: jax.Array) -> jax.Array:
    """The cumulative sum of ``x`` along its first axis, as a parallel prefix sum
    (``lax.associative_scan``): on CPU, XLA's ``cumsum`` of a long axis took twice as long
    (10 vs 6 ms for 128 x 10^4 values)."""
    return jax.lax.associative_scan(jnp.add, x)


def _row_states(key, logits: jax.Array, rows: np.ndarray | jax.Array) -> jax.Array:
    """``(n,)`` a state for every row of ``rows`` (pattern numbers) from the softmax of its
    pattern's ``logits``, by inversion of one single-precision uniform per row."""
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=1), axis=1)[rows]
    u = jax.random.uniform(key, rows.shape, dtype=jnp.float32) * cdf[:, -1]
    return jnp.minimum((u[:, None] > cdf).sum(axis=1), logits.shape[1] - 1)


def by_rows(prefix: PrefixClass) -> bool:
    """Whether prefix class ``prefix`` allocates row by row: fewer than
    :data:`ROWS_PER_PATTERN` rows per pattern (else one multinomial draw per pattern)."""
    return prefix.rows.shape[0] < ROWS_PER_PATTERN * prefix.starts.shape[0]


def row_allocations(key, logits: jax.Array, prefix: PrefixClass, n_included) -> jax.Array:
    """``(P, S)`` rows of each pattern drawn into each state: every row among the first
    ``n_included`` of the order draws its state from the softmax of its pattern's ``logits``
    (inverse CDF of one uniform); each pattern's rows are counted from the cumulative sum over
    its segment of the sorted rows (no scatter)."""
    slots = logits.shape[1]
    z = _row_states(key, logits, prefix.sorted_rows)
    chosen = jax.nn.one_hot(z, slots, dtype=jnp.float32) * (prefix.position < n_included)[:, None]
    cum = jnp.concatenate([jnp.zeros((1, slots), jnp.float32), running_sum(chosen)])
    return (cum[prefix.ends] - cum[prefix.starts]).astype(logits.dtype)   # exact below 2^24


def included_counts(prefix: PrefixClass, n_included) -> jax.Array:
    """``(P,)`` rows of each pattern among the first ``n_included`` of the order (the same for
    every particle: one cumulative sum over the sorted rows, no scatter)."""
    inside = (prefix.position < n_included).astype(jnp.float64)
    cum = jnp.concatenate([jnp.zeros(1), running_sum(inside)])
    return cum[prefix.ends] - cum[prefix.starts]


def pattern_allocations(key, logits: jax.Array, prefix: PrefixClass, included) -> jax.Array:
    """``(P, S)`` rows of each pattern drawn into each state: for every pattern ``p`` a
    multinomial draw of its ``c_p = included[p]`` rows with the probabilities
    ``softmax(logits_p)``, exact, and in work linear in the rows with no loop over them.

    Each row draws its state by inversion of a uniform, so the rows of ``p`` in states
    ``<= s`` are the uniforms below the cumulative probability ``F_ps``. The sorted uniforms
    of ``c`` rows are ``E_1 / T, (E_1 + E_2) / T, ...`` with ``T = E_1 + .. + E_{c+1}`` for
    iid exponentials ``E`` (Devroye 1986, *Non-Uniform Random Variate Generation*, V.2.2), so
    that count is the number of partial sums below ``F_ps T``: one binary search in the
    cumulative sums per pattern and state. Pattern ``p`` owns the ``c_p + 1`` exponentials
    from slot ``starts[p] + p`` on (one spare per pattern)."""
    patterns = prefix.starts.shape[0]
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=1), axis=1)
    cdf = cdf / cdf[:, -1:]
    spacings = jax.random.exponential(key, (prefix.rows.shape[0] + patterns,),
                                      dtype=jnp.float32).astype(jnp.float64)
    sums = jnp.concatenate([jnp.zeros(1), running_sum(spacings)])
    first = prefix.starts + jnp.arange(patterns)
    last = first + included.astype(first.dtype)
    base = sums[first]
    threshold = base[:, None] + cdf * (sums[last + 1] - base)[:, None]
    found = jnp.searchsorted(sums, threshold.ravel(), side="left").reshape(cdf.shape)
    at_most = jnp.clip(found - first[:, None] - 1, 0, last[:, None] - first[:, None])
    at_most = jnp.where(cdf >= 1.0, last[:, None] - first[:, None], at_most)
    return jnp.diff(at_most, axis=1, prepend=0).astype(logits.dtype)


def sorted_allocations(key, logits: jax.Array, prefix: PrefixClass, n_included) -> jax.Array:
    """``(P, S)`` rows of each pattern among the first ``n_included`` of the order drawn into
    each state from the softmax of the pattern's ``logits``: by :func:`pattern_allocations`
    where the prefix class has at least :data:`ROWS_PER_PATTERN` rows per pattern (its binary
    searches then cost less than a pass over the states at every row), else
    :func:`row_allocations` (the same distribution)."""
    if by_rows(prefix):
        return row_allocations(key, logits, prefix, n_included)
    return pattern_allocations(key, logits, prefix, included_counts(prefix, n_included))


def row_class_counts(key, logits: jax.Array, prefix: PrefixClass, rows_one_hot: jax.Array,
                     n_included) -> tuple[jax.Array, jax.Array]:
    """The class counts ``n_k (S,)`` and ``n_kjr (S, J, R)`` of the first ``n_included`` rows
    of the order, every row's state drawn from the softmax of its pattern's ``logits``
    (inverse CDF of one uniform), counted by one product of the rows' one-hot states with their
    one-hot values ``rows_one_hot (n, J, R)`` (no grouping by pattern: where patterns seldom
    repeat, cheaper than a cumulative sum over the rows; counts below 2^24 are exact in single
    precision)."""
    n, slots = prefix.rows.shape[0], logits.shape[1]
    z = _row_states(key, logits, prefix.rows)
    chosen = jax.nn.one_hot(z, slots, dtype=jnp.float32) * (jnp.arange(n) < n_included)[:, None]
    n_kjr = chosen.T @ rows_one_hot.reshape(n, -1)
    return (chosen.sum(axis=0).astype(logits.dtype),
            n_kjr.reshape(slots, *rows_one_hot.shape[1:]).astype(logits.dtype))


def _class_counts(key, one_hot, categories, prefix: PrefixClass, rows_one_hot, n_included,
                  log_weights, log_theta) -> tuple[jax.Array, jax.Array]:
    """The allocation half of the Gibbs sweep for one particle: the class counts ``n_k (S,)``
    and ``n_kjr (S, J, R)`` of the first ``n_included`` rows' classes drawn given ``(pi,
    theta)``: by pattern (:func:`pattern_allocations`) where a prefix class has at least
    :data:`ROWS_PER_PATTERN` rows per pattern, else row by row (:func:`row_class_counts`)."""
    logits = log_weights[None, :] + class_log_lik(one_hot, categories, log_theta)
    if rows_one_hot is not None:
        return row_class_counts(key, logits, prefix, rows_one_hot, n_included)
    n_pk = pattern_allocations(key, logits, prefix, included_counts(prefix, n_included))
    return n_pk.sum(axis=0), jnp.einsum("pk,pjr->kjr", n_pk, one_hot)


def _allocate(index: int, data: SMCData, key, n, particles: Particles) -> Particles:
    """Every particle's class counts at the first ``n`` rows given its ``(pi, theta)``, on
    prefix size class ``index`` (which holds them)."""
    prefix = data.classes[index]
    one_hot = data.one_hot[:prefix.starts.shape[0]]
    rows_one_hot = data.one_hot[prefix.rows].astype(jnp.float32) if by_rows(prefix) else None
    m = particles.log_weights.shape[0]
    n_k, n_kjr = jax.vmap(_class_counts, (0, None, None, None, None, None, 0, 0))(
        jax.random.split(key, m), one_hot, data.categories, prefix, rows_one_hot, n,
        particles.log_weights, particles.log_theta)
    return particles._replace(n_k=n_k, n_kjr=n_kjr)


def holding(classes: tuple[PrefixClass, ...], rows) -> jax.Array:
    """Index of the smallest prefix size class with at least ``rows`` rows."""
    bounds = jnp.asarray([c.rows.shape[0] for c in classes])
    return jnp.sum(bounds >= rows) - 1


def _draw_parameters(key, prior: LCPrior, categories, active, particles: Particles
                     ) -> Particles:
    """The parameter half of the Gibbs sweep: ``pi ~ Dir(delta + N_k)``, ``theta_jk ~
    Dir(lambda_jk + N_jk)`` for every particle."""
    log_w, log_t = jax.vmap(draw_dirichlets, (0, 0, 0, None, None))(
        jax.random.split(key, particles.n_k.shape[0]), prior.delta + particles.n_k,
        prior.lam + particles.n_kjr, categories, active)
    return particles._replace(log_weights=log_w, log_theta=log_t)


@partial(jax.jit, static_argnames=("particles", "sweeps", "max_moves", "draws", "jumps"))
def run_smc(key, data: SMCData, prior: LCPrior, k, ess_target, temper_ess=TEMPER_ESS, *,
            particles: int, sweeps: int, max_moves: int, draws: int, jumps: bool = True
            ) -> tuple[jax.Array, jax.Array, jax.Array, Particles]:
    """One SMC run of a latent class model (module docstring) from ``key``, rows tempered
    below an effective sample size of ``temper_ess M``: ``(ln Z_hat, resample-move steps,
    history, posterior draws)``; the history is ``(max_moves, 2)`` rows ``(rows added, ESS)``
    at each resampling, zeros after the last. Past ``max_moves`` resamplings the particles are
    still resampled but no longer moved (the estimate stays unbiased, its error grows). The
    posterior draws are ``draws`` further Gibbs sweeps of the final particles at all the rows,
    stacked (``(draws, M, ...)``): each a parameter draw with the class counts it was drawn
    from. ``jumps``: make the mode-jumping move (module docstring)."""
    rows = data.classes[0].rows
    total = rows.shape[0]
    slots = prior.delta.shape[0]
    active = jnp.arange(slots) < k
    table_shape = (particles, *prior.lam.shape)
    allocations = [partial(_allocate, i, data) for i in range(len(data.classes))]
    predictive = jax.vmap(log_predictive, (None, None, None, 0, 0, None))

    def sweep(n, particles, key):
        k_par, k_rows = jax.random.split(key)
        particles = _draw_parameters(k_par, prior, data.categories, active, particles)
        return jax.lax.switch(holding(data.classes, n), allocations, k_rows, n, particles)

    def jump_on(index, key, n, particles):
        prefix = data.classes[index]
        return prefix_jump(key, data.one_hot[:prefix.starts.shape[0]], data.categories,
                           included_counts(prefix, n), prior, k, particles)

    jumps_on = [partial(jump_on, i) for i in range(len(data.classes))]

    def jump(n, particles, key):
        """A Gibbs sweep with :func:`~lcbayes.samplers.mode_jump.prefix_jump` between its
        halves, on the patterns of the prefix class that holds the first ``n`` rows."""
        k_par, k_jump, k_rows = jax.random.split(key, 3)
        particles = _draw_parameters(k_par, prior, data.categories, active, particles)
        index = holding(data.classes, n)
        particles = jax.lax.switch(index, jumps_on, k_jump, n, particles)
        return jax.lax.switch(index, allocations, k_rows, n, particles)

    def row_predictive(particles: Particles, i) -> jax.Array:
        return predictive(prior, data.categories, active, particles.n_k, particles.n_kjr,
                          data.one_hot[rows[i]])

    def add(particles: Particles, i, z) -> Particles:
        y = data.one_hot[rows[i]]
        one = jax.nn.one_hot(z, slots)
        return particles._replace(n_k=particles.n_k + one,
                                  n_kjr=particles.n_kjr + one[:, :, None, None] * y)

    model = RowModel(Particles(jnp.zeros((particles, slots)), jnp.zeros(table_shape),
                               jnp.zeros((particles, slots)), jnp.zeros(table_shape)),
                     row_predictive, add, sweep, jump if jumps else None)
    end = filter_rows(key, model, total, ess_target, temper_ess, particles=particles,
                      sweeps=sweeps, max_moves=max_moves)

    def posterior_draw(particles, key):
        k_par, k_rows = jax.random.split(key)
        drawn = _draw_parameters(k_par, prior, data.categories, active, particles)
        return _allocate(0, data, k_rows, total, drawn), drawn

    kept = jax.lax.scan(posterior_draw, end.particles,
                        jax.random.split(jax.random.fold_in(end.key, 1), draws))[1]
    return end.log_z, end.moves, end.history, kept
