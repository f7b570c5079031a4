"""Annealed importance sampling of the evidence of any NumPyro model with continuous latents.

:func:`ais_numpyro` estimates ``ln Z = ln p(y) = ln ∫ p(z) p(y | z) dz`` for a user's NumPyro
model (observed sites given through the model's arguments) by AIS (Neal 2001), with
Hamiltonian Monte Carlo or MALA transitions. The estimator, its standard error and the AIS
ordering are those of :mod:`lcbayes.engines.annealing`.

**Prior and likelihood in unconstrained space.** Every latent sample site ``z_j`` (support
``S_j``) is written ``z_j = T_j(u_j)`` with NumPyro's bijection ``T_j = biject_to(S_j)`` from an
unconstrained ``u_j``. One run of the model under NumPyro's own reparameterisation (the one
behind :func:`numpyro.infer.util.potential_energy`, so the density is exactly the one NUTS
samples) gives every site's log density, which is split in two::

    log prior(u) = sum_j ln p(z_j | ...) + sum_j ln |det dT_j / du_j|    (latent sites + Jacobians)
    loglik(u)    = sum_o ln p(y_o | ...)                                 (observed sites)

where the observed sites are those with ``obs=`` values and every ``numpyro.factor`` site (so
the ``log_likelihood`` factor of :func:`lcbayes.numpyro_model` is the likelihood). Their sum is
minus NumPyro's potential energy. ``exp(log prior(u))`` is the prior density of ``u``: it
integrates to one, because it is the product of the latent sites' conditional densities in
the model's own order (with the observed values plugged in wherever the model uses them).

**Tempered targets.** For a schedule ``0 = tau_0 < tau_1 < ... < tau_K = 1``::

    ln f_tau(u) = log prior(u) + tau * loglik(u),      f_0 = prior, f_1 ∝ posterior.

**Algorithm.** ``C`` chains start from exact prior draws ``u_c^(0)``: the model is run
forward under :class:`numpyro.handlers.seed` with the observed sites conditioned (ancestral
sampling), the latent values are kept and mapped to unconstrained space with
:func:`numpyro.infer.util.unconstrain_fn`. Then for ``k = 1 .. K``::

    u_c^(k) ~ T_{k-1}(u_c^(k-1), .)                        (leaves f_{tau_{k-1}} invariant)
    ln w_c += (tau_k - tau_{k-1}) * loglik(u_c^(k))

and ``ln Z_hat = logsumexp_c ln w_c - ln C``. Each ``w_c`` is an unbiased estimate of ``Z``
provided the start is an exact prior draw and each transition leaves its target invariant.
The loop over ``k`` is one jitted :func:`jax.lax.scan` (the chains vectorised with
:func:`jax.vmap` in its body); it records the running ``ln w_c`` after up to 128 evenly
spaced steps (``AISResult.trace``) and the chains' mean acceptance probability at every step
(averaged per quarter of the schedule by step index in ``AISResult.acceptance``).

**Transitions.** ``kernel="hmc"``: momentum ``p ~ N(0, I)``, ``n_leapfrog`` leapfrog steps of
size ``eps`` on ``H(u, p) = -ln f_tau(u) + |p|^2 / 2``, then a Metropolis accept/reject with
probability ``min(1, exp(H_0 - H_L))``. ``kernel="mala"``: the Metropolis-adjusted Langevin
algorithm, implemented as HMC with a single leapfrog step (its proposal
``u + eps^2/2 grad ln f_tau(u) + eps xi`` and its acceptance ratio are exactly MALA's).
Proposals whose energy or gradient is not finite are rejected. Each chain draws its own
step size ``eps * U(0.8, 1.2)`` at every transition (:data:`STEP_JITTER`), independently of
its state, which keeps the kernel ``f_tau``-invariant and breaks the periodic trajectories
that make fixed-length HMC mix badly on near-Gaussian targets. Gradients are reverse-mode
(:func:`jax.vjp`, the machinery of :func:`jax.grad`): one pass gives the gradients of both
``log prior`` and ``loglik``, stored with the state, so the tempered gradient
``grad log prior + tau grad loglik`` at any ``tau`` costs no further model evaluation and a
transition costs ``n_leapfrog`` gradient evaluations.

**Step size.** A float ``step_size`` is used (jittered as above) at every temperature: the
chains are then independent and every ``w_c`` exactly unbiased. ``step_size=None`` adapts it
between temperatures from the population's mean acceptance probability ``a_{k-1}`` of the
transitions at the previous temperature, as adaptive SMC samplers do (Jasra, Stephens, Doucet
& Tsagaris 2011)::

    ln eps_k = ln eps_{k-1} + gamma_{k-1} (a_{k-1} - a*),     gamma_k = max(0.1, k^(-1/2))
    a* = 0.65 (HMC), 0.57 (MALA);   eps_1 = 0.5 d^(-1/4) (HMC), 0.5 d^(-1/3) (MALA)

in dimension ``d``: a multiplicative Robbins–Monro recursion whose gain falls like
``k^(-1/2)`` while the step size settles, then stays at :data:`ADAPT_GAIN_FLOOR` so that it
keeps tracking the target, which moves with the temperature (``eps`` is kept within
:data:`STEP_SIZE_BOUNDS`). Population adaptation is standard in SMC but makes the kernel at
step ``k`` depend on all chains' earlier states, each chain's own included, so the chains are
no longer independent and the weights no longer exactly unbiased. The bias shrinks with more
chains and with a smaller gain (a constant gain of 1 leaves more of it, which is why the gain
decreases); it is small but measurable (``tests/test_ais_numpyro.py`` checks it against
exact values);
with 1920 chains no bias was detectable. A fixed ``step_size`` removes it (take it, for
instance, from ``settings["step_size_quarters"]`` of a pilot run).

**What is estimated.** ``ln ∫ exp(log prior(u) + loglik(u)) du``, the normaliser of NumPyro's
log joint density. ``numpyro.factor`` sites always count as likelihood: a factor that in
truth belongs to the prior (a soft constraint) is then annealed in, and the estimate is the
log normaliser of the whole model, as it should be. ``param`` sites are held at their initial
values; ``deterministic`` sites are ignored. The model's arguments are closed over (baked into
the compiled program as constants, as NumPyro's MCMC does by default).

Example::

    def model(y):
        p = numpyro.sample("p", dist.Beta(2.0, 3.0))
        numpyro.sample("y", dist.Bernoulli(p), obs=y)

    result = ais_numpyro(model, y, chains=32, temperatures=256)
    print(result.summary())
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro import handlers

from .. import draws
from ..errors import ArgumentTypeError, LcbayesError
from ..validation import Seed, check_int, check_seed, prng_key, seed_record
from .annealing import AISResult, make_schedule, quarter_means
from .numpyro_sites import log_parts, prior_sampler

__all__ = [
    "ADAPT_GAIN_FLOOR",
    "MAX_CHECKPOINTS",
    "STEP_JITTER",
    "STEP_SIZE_BOUNDS",
    "TARGET_ACCEPTANCE",
    "ais_numpyro",
]

#: Most checkpoints of the running log weights kept in ``AISResult.trace``.
MAX_CHECKPOINTS = 128

#: Mean acceptance probability the adaptive step size aims at, per kernel.
TARGET_ACCEPTANCE = {"hmc": 0.65, "mala": 0.57}

#: The gain of the step-size recursion ``ln eps_{k+1} = ln eps_k + gamma_k (a_k - a*)`` is
#: ``gamma_k = max(ADAPT_GAIN_FLOOR, k^(-1/2))``.
ADAPT_GAIN_FLOOR = 0.1

#: Each chain's step size is ``eps * U(1 - STEP_JITTER, 1 + STEP_JITTER)``, drawn afresh at
#: every transition, against the periodic trajectories of fixed-length HMC.
STEP_JITTER = 0.2

#: The adaptive step size is kept inside these bounds.
STEP_SIZE_BOUNDS = (1e-8, 1e3)


class _ChainState(NamedTuple):
    """One chain: unconstrained position, its log prior (with Jacobian), log likelihood and
    the gradients of both (rows of ``jac``), so the tempered gradient at any ``tau`` is
    ``jac[0] + tau * jac[1]`` without another model evaluation."""

    u: jax.Array
    log_prior: jax.Array
    log_lik: jax.Array
    jac: jax.Array


def _check_arguments(model, chains, seed, kernel, step_size, n_leapfrog) -> tuple:
    if not callable(model):
        raise ArgumentTypeError(f"model must be a NumPyro model function, got "
                                f"{type(model).__name__}")
    chains = check_int(chains, "chains", 2)
    n_leapfrog = check_int(n_leapfrog, "n_leapfrog", 1)
    seed = check_seed(seed)
    if kernel not in TARGET_ACCEPTANCE:
        raise LcbayesError(f"kernel must be one of {sorted(TARGET_ACCEPTANCE)}, got {kernel!r}")
    if step_size is not None:
        if isinstance(step_size, bool) or not isinstance(step_size, int | float | np.number) \
                or not np.isfinite(step_size) or step_size <= 0:
            raise LcbayesError(f"step_size must be a finite number > 0 (or None to adapt it), "
                               f"got {step_size!r}")
        step_size = float(step_size)
    return chains, seed, step_size, n_leapfrog


def _compile_once(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` compiled without XLA backend optimisation (for code that runs once)."""
    lowered = jax.jit(fn).lower(*args)
    options = {"xla_backend_optimization_level": 0}
    try:
        compiled = lowered.compile(options)  # type: ignore[arg-type]  # XLA takes int values
    except Exception:  # an XLA build without that option: compile as usual
        compiled = lowered.compile()
    return compiled(*args)


def _checkpoint_steps(temperatures: int) -> np.ndarray:
    """Up to :data:`MAX_CHECKPOINTS` step indices ``1..K``, evenly spaced, ending at ``K``."""
    n = min(temperatures, MAX_CHECKPOINTS)
    return np.unique(np.round(np.linspace(0, temperatures, n + 1)[1:]).astype(int))


def ais_numpyro(
    model: Callable,
    *args: Any,
    chains: int = 16,
    temperatures: int = 1024,
    schedule: str | np.ndarray = "beal",
    seed: Seed = 0,
    kernel: str = "hmc",
    step_size: float | None = None,
    n_leapfrog: int = 5,
    **kwargs: Any,
) -> AISResult:
    """Annealed importance sampling estimate of the log evidence ``ln p(y)`` of a NumPyro model.

    The model's latent sample sites must be continuous; its observed sites (``obs=``) and
    ``numpyro.factor`` sites form the likelihood (module docstring). Two programs are compiled
    afresh for every call: the exact prior draws, and the whole temperature loop (one jitted
    :func:`jax.lax.scan`, the chains vectorised with :func:`jax.vmap` inside its body).

    Args:
        model: a NumPyro model function, e.g. :func:`lcbayes.numpyro_model` of a structure.
        *args: positional arguments of ``model`` (the observed data among them).
        chains: number of independent AIS chains ``C`` (an integer >= 2).
        temperatures: number of temperatures ``K`` after ``tau_0 = 0`` (an integer >= 1);
            ignored when ``schedule`` is an array.
        schedule: ``"beal"`` (Beal & Ghahramani eq. 69), ``"geometric"``, ``"linear"``, or an
            explicit array rising strictly from 0 to 1
            (:func:`lcbayes.engines.annealing.make_schedule`).
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            numbers.
        kernel: ``"hmc"`` (``n_leapfrog`` leapfrog steps + Metropolis correction) or
            ``"mala"`` (HMC with one leapfrog step, which is exactly MALA).
        step_size: leapfrog step size in unconstrained space, fixed at every temperature (the
            estimator is then exactly unbiased); ``None`` adapts it from the population's mean
            acceptance at the previous temperature towards 0.65 (HMC) or 0.57 (MALA).
        n_leapfrog: leapfrog steps per HMC transition (an integer >= 1; MALA uses 1).
        **kwargs: keyword arguments of ``model``. (A model keyword that clashes with an
            argument above must be bound first, e.g. with :func:`functools.partial`.)

    Returns:
        An :class:`~lcbayes.engines.annealing.AISResult` with ``kernel`` ``"hmc"`` or ``"mala"``;
        ``acceptance`` holds the mean Metropolis acceptance probability in each quarter of
        the schedule, and ``settings`` the step sizes (initial, final and mean per quarter),
        ``n_leapfrog``, the target acceptance, the dimension and the site names.

    Raises:
        LcbayesError: a bad argument, a model that fails on the given arguments, a discrete
            or scaled latent site, a subsampled plate, a model without latent sites, or prior
            draws at which the density is not finite.
    """
    start = time.perf_counter()
    chains, seed, step_size, n_leapfrog = _check_arguments(
        model, chains, seed, kernel, step_size, n_leapfrog)
    tau = make_schedule(schedule, temperatures)
    n_temps = tau.size - 1
    schedule_name = schedule if isinstance(schedule, str) else "custom"
    if kernel == "mala":
        n_leapfrog = 1

    prior_draw, latent, observed, shapes = prior_sampler(model, args, kwargs)
    _, unravel = ravel_pytree(jax.tree_util.tree_map(
        lambda a: jnp.zeros(a.shape, jnp.result_type(a.dtype, jnp.float64)), shapes))
    dim = sum(int(np.prod(a.shape)) for a in jax.tree_util.tree_leaves(shapes))
    fixed_model = handlers.seed(model, rng_seed=0)
    parts = partial(log_parts, fixed_model, args, kwargs, frozenset(observed))

    def evaluate(flat):
        """``[log prior, loglik]`` at ``flat`` and their gradients (rows of ``jac``)."""
        values, pullback = jax.vjp(lambda x: parts(unravel(x)), flat)
        (jac,) = jax.vmap(pullback)(jnp.eye(2, dtype=values.dtype))
        return values, jac

    def transition(state: _ChainState, p0, log_u, tau_k, eps, force):
        """One HMC transition leaving ``f_tau_k`` invariant from momentum ``p0`` and log
        uniform ``log_u``; returns the new state and the acceptance probability. With
        ``eps = 0`` and ``force`` it only evaluates the state at its position."""

        def grad(s):
            return s.jac[0] + tau_k * s.jac[1]

        def leapfrog(carry, _):
            s, p = carry
            p = p + 0.5 * eps * grad(s)
            u = s.u + eps * p
            values, jac = evaluate(u)
            s = _ChainState(u, values[0], values[1], jac)
            p = p + 0.5 * eps * grad(s)
            return (s, p), None

        (proposal, p1), _ = jax.lax.scan(leapfrog, (state, p0), None, length=n_leapfrog)
        h0 = -(state.log_prior + tau_k * state.log_lik) + 0.5 * p0 @ p0
        h1 = -(proposal.log_prior + tau_k * proposal.log_lik) + 0.5 * p1 @ p1
        log_ratio = jnp.where(jnp.isfinite(h1) & jnp.all(jnp.isfinite(proposal.jac)),
                              h0 - h1, -jnp.inf)
        accept = force | (log_u < log_ratio)
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), proposal, state)
        return new, jnp.exp(jnp.minimum(log_ratio, 0.0))

    adapt = step_size is None
    target = TARGET_ACCEPTANCE[kernel]
    eps0 = step_size if not adapt else 0.5 * dim ** (-0.25 if kernel == "hmc" else -1 / 3)
    checkpoints = _checkpoint_steps(n_temps)
    # Scan steps 0..K; step 0 only evaluates the prior draws (so the model's gradient is
    # compiled once, inside the leapfrog). Step k writes its log weights to row slots[k] of
    # the trace buffer, whose extra last row collects the steps that are not checkpoints.
    slots = np.full(n_temps + 1, checkpoints.size)
    slots[checkpoints] = np.arange(checkpoints.size)
    tau_prev = np.concatenate([[0.0], tau[:-1]])

    # Exact prior draws, one chain after another (lax.map), compiled without backend
    # optimisation: they run once, and NumPyro's rejection samplers (Gamma, Beta, Dirichlet)
    # are slow to compile, the more so batched or optimised. The seed's key splits into one
    # for the prior draws and one for the transitions.
    def draw_all(key):
        keys = jax.random.split(jax.random.split(key)[0], chains)
        flat = jax.lax.map(lambda key: ravel_pytree(prior_draw(key))[0], keys)
        return flat.astype(jnp.float64)

    flat0 = _compile_once(draw_all, prng_key(seed))

    @jax.jit
    def run(flat0, key, tau_prev, tau_next, slots):
        key = jax.random.split(key)[1]
        zeros = jnp.zeros(chains, dtype=flat0.dtype)
        state = _ChainState(flat0, zeros, zeros, jnp.zeros((chains, 2, dim), flat0.dtype))

        def step(carry, xs):
            state, eps, log_w, buffer = carry
            k, key_k, t_prev, t_next, slot = xs
            first = k == 0
            # One draw of uniforms on (-1, 1) per step (every generator call and every special
            # function costs compile time): normal momenta sqrt(2) erfinv(v), as
            # jax.random.normal makes them, a uniform (v + 1) / 2 on (0, 1) for the Metropolis
            # test and the step-size jitter.
            v = draws.uniform(key_k, (chains, dim + 2), dtype=state.u.dtype,
                              minval=jnp.nextafter(-1.0, 0.0), maxval=1.0)
            p0 = np.sqrt(2.0) * jax.scipy.special.erfinv(v[:, :dim])
            log_u = jnp.log(0.5 * (v[:, dim] + 1.0))
            jitter = 1.0 + STEP_JITTER * v[:, dim + 1]
            state, acc = jax.vmap(transition, in_axes=(0, 0, 0, None, 0, None))(
                state, p0, log_u, t_prev, jnp.where(first, 0.0, eps) * jitter, first)
            log_w = log_w + (t_next - t_prev) * state.log_lik
            buffer = buffer.at[slot].set(log_w)
            mean_acc = acc.mean()
            new_eps = eps
            if adapt:
                gain = jnp.maximum(ADAPT_GAIN_FLOOR, 1.0 / jnp.sqrt(jnp.maximum(k, 1)))
                new_eps = jnp.where(first, eps, jnp.clip(
                    eps * jnp.exp(gain * (mean_acc - target)), *STEP_SIZE_BOUNDS))
            out = (mean_acc, eps, jnp.stack([state.log_prior, state.log_lik], axis=1))
            return (state, new_eps, log_w, buffer), out

        buffer = jnp.zeros((checkpoints.size + 1, chains), dtype=flat0.dtype)
        carry = (state, jnp.asarray(eps0, dtype=flat0.dtype), zeros, buffer)
        xs = (jnp.arange(n_temps + 1), jax.random.split(key, n_temps + 1), tau_prev, tau_next,
              slots)
        (_, _, log_w, buffer), (acceptance, step_sizes, values) = jax.lax.scan(step, carry, xs)
        finite_start = jnp.all(jnp.isfinite(values[0]), axis=1) & jnp.all(
            jnp.isfinite(flat0), axis=1)
        return log_w, buffer[:-1].T, acceptance[1:], step_sizes[1:], values[0], finite_start

    log_w, trace, acceptance, step_sizes, start_values, finite_start = jax.block_until_ready(
        run(flat0, prng_key(seed), tau_prev, tau, slots))
    bad = ~np.asarray(finite_start)
    if np.any(bad):
        chain = int(np.flatnonzero(bad)[0])
        raise LcbayesError(
            f"{int(bad.sum())} of {chains} prior draws have a non-finite log prior or log "
            f"likelihood in unconstrained space (first: chain {chain}, [log prior, loglik] = "
            f"{np.asarray(start_values)[chain].tolist()}); the data may be impossible under "
            "the prior, or the prior puts mass where the transform to unconstrained space "
            "overflows (e.g. Dirichlet concentrations far below 1)")
    step_sizes = np.asarray(step_sizes)
    settings = {
        "step_size": step_size,
        "adaptive": adapt,
        "target_acceptance": target if adapt else None,
        "adapt_gain_floor": ADAPT_GAIN_FLOOR if adapt else None,
        "initial_step_size": float(eps0),
        "final_step_size": float(step_sizes[-1]),
        "step_size_quarters": quarter_means(step_sizes).tolist(),
        "n_leapfrog": n_leapfrog,
        "dimension": dim,
        "latent_sites": latent,
        "observed_sites": observed,
    }
    return AISResult.from_weights(
        np.asarray(log_w),
        trace=np.asarray(trace),
        trace_temperatures=tau[checkpoints],
        acceptance=quarter_means(np.asarray(acceptance)),
        chains=chains,
        temperatures=n_temps,
        schedule=schedule_name,
        kernel=kernel,
        seed=seed_record(seed),
        seconds=time.perf_counter() - start,
        settings=settings,
    )
