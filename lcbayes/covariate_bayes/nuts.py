"""NUTS draws of the Bayesian latent class regression (:mod:`.model`).

The No-U-Turn sampler (Hoffman & Gelman 2014) of NumPyro's functional interface
(:func:`numpyro.infer.hmc.hmc`) runs on the model's unconstrained parameters (NumPyro's
transforms: stick-breaking for the Dirichlet rows, ``ln`` for the outcome's SDs), with a dense
mass matrix and step size adapted in the warm-up (Stan's windows), target acceptance
:data:`TARGET_ACCEPT`. The chains run one after another inside one compiled program
(:func:`jax.lax.map` over chains, :func:`jax.lax.scan` over iterations), the data an argument
of it, so that one shape of data compiles once per process (and once per machine with the
persistent compilation cache).

**Start and labels.** Every chain starts at the maximum likelihood fit of :func:`lcbayes.em`
(global over its restarts) plus independent ``N(0,`` :data:`START_JITTER` ``^2)`` noise in the
unconstrained space. The posterior has ``K!`` modes that differ only by the classes' labels
(:mod:`.model`: the prior is exchangeable); a chain started in one mode usually stays
there. Each draw is then mapped to the labelling closest to the ML fit's (the relabelling
minimising the squared distance of its item probabilities to the fit's); the number of draws
that needed it is reported, so that a chain that crossed between modes shows.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.hmc import hmc
from numpyro.infer.util import constrain_fn, potential_energy, unconstrain_fn

from .model import (
    BayesData,
    Drop,
    ModelSpec,
    lcr_model,
    permutations,
    relabel,
    unconstrained_layout,
)
from .problem import Problem, Start

__all__ = ["EVAL_BATCH", "START_JITTER", "TARGET_ACCEPT", "Draws", "evaluate", "run_nuts"]

#: NUTS's target mean acceptance probability in the warm-up.
TARGET_ACCEPT = 0.9
#: SD of the noise added to the ML fit (unconstrained scale) to start each chain.
START_JITTER = 0.2
#: Points evaluated at once by :func:`evaluate`.
EVAL_BATCH = 1024


class Draws(NamedTuple):
    """Posterior draws, every one in the ML fit's labelling: ``u`` ``(C, D, d)``
    unconstrained, ``potential`` ``(C, D)`` (minus the log density in that space),
    ``values`` the constrained sites ``{name: (C, D, ...)}`` with the deterministic
    ``loglik``; ``diverging``, ``n_steps`` ``(C, D)``; ``relabelled`` the draws mapped to the
    reference labelling."""

    u: np.ndarray
    potential: np.ndarray
    values: dict[str, np.ndarray]
    diverging: np.ndarray
    n_steps: np.ndarray
    relabelled: int


def _unravel(spec: ModelSpec):
    layout = unconstrained_layout(spec)

    def unravel(u: jax.Array) -> dict[str, jax.Array]:
        return {name: u[offset:offset + math.prod(shape)].reshape(shape)
                for name, offset, shape in layout}

    return unravel


@functools.cache
def _sampler(spec: ModelSpec, warmup: int, draws: int):
    model, unravel = lcr_model(spec), _unravel(spec)

    def potential_of(data: BayesData):
        return lambda u: potential_energy(model, (data,), {}, unravel(u))

    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_of, algo="NUTS")

    def chain(key, u0, data):
        state = init_kernel(u0, num_warmup=warmup, dense_mass=True, rng_key=key,
                            target_accept_prob=TARGET_ACCEPT, model_args=(data,))

        def step(s, _):  # one loop for warm-up and draws: one copy of NUTS to compile
            s = sample_kernel(s, model_args=(data,))
            return s, (s.z, s.diverging, s.num_steps)

        state, out = jax.lax.scan(step, state, None, length=warmup + draws)
        return tuple(a[warmup:] for a in out)

    return jax.jit(lambda keys, u0s, data: jax.lax.map(lambda a: chain(a[0], a[1], data),
                                                       (keys, u0s)))


@functools.cache
def _evaluator(spec: ModelSpec):
    model, unravel = lcr_model(spec), _unravel(spec)

    def one(u, data):
        params = unravel(u)
        return (potential_energy(model, (data,), {}, params),
                constrain_fn(model, (data,), {}, params, return_deterministic=True))

    return jax.jit(jax.vmap(one, in_axes=(0, None)))


def evaluate(spec: ModelSpec, u: np.ndarray, data: BayesData
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Potential energies ``(n,)`` and constrained values of the points ``u`` ``(n, d)``, in
    blocks of :data:`EVAL_BATCH` (one compiled shape; the last block padded)."""
    n = u.shape[0]
    blocks = []
    for first in range(0, n, EVAL_BATCH):
        block = u[first:first + EVAL_BATCH]
        padded = np.pad(block, ((0, EVAL_BATCH - block.shape[0]), (0, 0)))
        blocks.append(jax.tree.map(lambda a, m=block.shape[0]: np.asarray(a)[:m],
                                   _evaluator(spec)(jnp.asarray(padded), data)))
    potential = np.concatenate([b[0] for b in blocks])
    values = {k: np.concatenate([b[1][k] for b in blocks]) for k in blocks[0][1]}
    return potential, values


def _profiles(spec: ModelSpec, values: dict[str, np.ndarray]) -> np.ndarray:
    """``(n, K, F)`` item probabilities per class of each draw."""
    return np.concatenate([values[f"theta_{name}"] for name in spec.items], axis=-1)


def _align(problem: Problem, reference: np.ndarray, u: np.ndarray,
           values: dict[str, np.ndarray], tied: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each draw's relabelling closest to the reference (module docstring): the relabelled
    draws and a mask of those that changed."""
    perms = permutations(problem.spec.n_classes)
    profiles = _profiles(problem.spec, values)
    distance = np.stack([np.sum((profiles[:, perm] - reference[None]) ** 2, axis=(1, 2))
                         for perm in perms], axis=1)
    best = np.argmin(distance, axis=1)
    out = u.copy()
    for g in np.unique(best[best > 0]):
        rows = best == g
        out[rows] = relabel(problem.spec, u[rows], perms[g], tied)
    return out, best > 0


def run_nuts(problem: Problem, start: Start, data: BayesData, drop: Drop, *, chains: int,
             draws: int, warmup: int, key: jax.Array) -> Draws:
    """``chains`` NUTS chains of ``warmup + draws`` iterations on the model with ``drop`` left
    out (``data`` from :meth:`Problem.with_options`), started and labelled as in the module
    docstring."""
    spec = problem.spec
    model = lcr_model(spec)
    values0 = {k: jnp.asarray(v) for k, v in start.for_model(drop).items()}
    u_start = unconstrain_fn(model, (data,), {}, values0)
    flat = np.concatenate([np.asarray(u_start[name]).reshape(-1)
                           for name, _, _ in unconstrained_layout(spec)])
    k_chains, k_jitter = jax.random.split(key)
    u0 = flat[None] + START_JITTER * np.asarray(
        jax.random.normal(k_jitter, (chains, flat.size), dtype=jnp.float64))
    z, diverging, n_steps = _sampler(spec, warmup, draws)(
        jax.random.split(k_chains, chains), jnp.asarray(u0), data)
    u = np.asarray(z).reshape(chains * draws, -1)
    potential, values = evaluate(spec, u, data)
    u, switched = _align(problem, start.reference, u, values, drop == "distal")
    if switched.any():
        potential, values = evaluate(spec, u, data)

    def grid(a: np.ndarray) -> np.ndarray:
        return a.reshape(chains, draws, *a.shape[1:])

    return Draws(u=grid(u), potential=grid(potential),
                 values={k: grid(v) for k, v in values.items()},
                 diverging=np.asarray(diverging, dtype=bool),
                 n_steps=np.asarray(n_steps, dtype=np.int64),
                 relabelled=int(switched.sum()))
