"""The collapsed allocation sampler over the number of classes ``K``, with parallel tempering.

Nobile & Fearnside (2007), "Bayesian finite mixtures with an unknown number of components: the
allocation sampler", as in BayesBinMix (Papastamoulis & Rattray 2017) for polytomous items with
missing values. The model is :func:`lcbayes.rjmcmc`'s (Whiley eq. 5.7): ``p(K)`` on
``1 .. max_classes``, ``pi | K ~ Dir(alpha, .., alpha)``, ``theta_kj ~ Dir(lam_j)``. The weights
and the item tables are integrated out analytically, so the state is ``(K, z)`` alone, the
labelled allocation of every row to one of ``K`` classes (classes may be empty), and the target
is ``p(K) p(z | K) p(y | z, K)`` with (Dirichlet-multinomial)::

    p(z | K)    = Γ(K alpha) / Γ(K alpha + N) prod_k Γ(alpha + n_k) / Γ(alpha)
    p(y | z, K) = prod_k prod_j B(lam_j + n_kj) / B(lam_j),

``n_kj`` the counts of item ``j``'s values among the rows of class ``k``; a missing value
counts nowhere (its factor sums out to one) and rows with nothing observed are left out (their
class sums out). Summed over ``z`` this is ``p(K) p(y | K)``, the evidence of
:func:`lcbayes.exact_evidence`, so ``p(K | y)`` is read off the draws of ``K``.

Tempering uses the power posterior: at heat ``h`` the replica's target is
``p(K) p(z | K) F_h(z)`` with ``F_h(z) = int p(y | z, theta)^h p(theta) dtheta =
prod_k prod_j B(lam_j + h n_kj) / B(lam_j)`` (a Dirichlet-multinomial with fractional counts;
``F_1 = p(y | z, K)``), the marginal of the augmented target
``p(K) p(pi | K) p(theta) prod_i pi_{z_i} p(y_i | theta_{z_i})^h``. A sweep of one replica at
heat ``h``:

1. ``jumps`` times (default :data:`JUMPS`): classes ``l`` (uniform among the ``K``) and ``K``
   swap labels (the target is symmetric in the labels, so this is always accepted and lets the
   absorption reach every class), then an ejection with probability ``e_K`` (1 at ``K = 1``, 0
   at ``max_classes``, else 1/2), else an absorption, accepted with probability ``min(1, R)``:

   * ejection ``K -> K + 1``: a class ``j`` uniform among ``K``, ``p ~ Beta(a, a)``, each
     row of ``j`` moves to the new class ``K + 1`` with probability ``p``; integrating ``p``
     out, a move of ``m`` of ``n_j`` rows has probability ``B(a + m, a + n_j - m) / B(a, a)``;
   * absorption ``K + 1 -> K``: the last class joins a class uniform among the other ``K``.

   These are each other's reverse. Labels make one case degenerate: when the new class is
   empty (``m = 0``) every ``j`` could have ejected nothing and every absorbing class gives
   the same ``z``, so::

       q_E(z -> z') = e_K / K  [m > 0: B(a + m, a + n_j - m) ; m = 0: sum_i B(a, a + n_i)] / B(a, a)
       q_A(z' -> z) = (1 - e_{K+1}) / K  [m > 0: 1 ; m = 0: K]
       R_eject = target_h(K + 1, z') q_A(z' -> z) / (target_h(K, z) q_E(z -> z')),

   and an absorption's ``R`` is ``1 / R_eject`` of its reverse ejection. Only the two classes
   that change enter ``R``; the log-gammas of every possible count ``0 .. N`` at the replica's
   heat are tabulated once. The shares ``p`` are drawn in the previous sweep's step 2
   (independent of the state; the first sweep's are uniform, exact for the default ``a = 1``).
2. Gibbs step by data augmentation: ``pi ~ Dir(alpha + n_k)`` on the ``K`` classes,
   ``theta_kj ~ Dir(lam_j + h n_kj)``, then every row's class at once from
   ``p(z_i = k | pi, theta) ∝ pi_k prod_{j seen} theta_kj[y_ij]^h``; the parameters are then
   dropped. This is the two-block Gibbs sampler of the augmented target, whose ``z`` chain is
   reversible for ``target_h(z | K)``; it updates all rows at once (no loop over the rows).

Parallel tempering (Metropolis-coupled chains, Geyer 1991): each chain runs ``H`` replicas at
heats ``1 = h_1 > h_2 > .. > h_H``; before every sweep a pair of neighbouring heats
``(r, r+1)`` is chosen uniformly and their states swap with probability
``min(1, F_{h_r}(x_{r+1}) F_{h_{r+1}}(x_r) / (F_{h_r}(x_r) F_{h_{r+1}}(x_{r+1})))``. Only the
cold replica (``h = 1``) is kept. Heats below one flatten the likelihood, so those replicas
change ``K`` more easily and pass their states down.

For the output, every kept state ``(K, z)`` comes with the weights and tables that the cold
replica's last Gibbs step drew given the allocation before it: stationary, ``(K, pi, theta)``
is a posterior draw and ``z`` a draw given them, so ``(K, pi, theta, z)`` is a draw from the
joint posterior. The draws then have :func:`lcbayes.rjmcmc`'s form (``k``, ``class_weights``,
``theta_<column>``, relabelling, diagnostics, ``predict_proba``). Sweeps are ``lax`` loops in
one jitted function, replicas and chains vmapped, float64.

Example::

    res = lcb.allocation_sampler(data, max_classes=6, seed=0)
    res.posterior_k        # {1: 0.0, 2: 0.07, 3: 0.88, ...}
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..constructors import latent_class
from ..data import Dataset
from ..errors import ArgumentError
from ..jax_setup import QUICK_COMPILE
from ..params import PriorSpec
from ..render import json_value
from ..validation import Seed, as_dataset, check_int, check_seed, numpy_rng, prng_key, seed_record
from .allocation_moves import (
    AllocPrior,
    AllocState,
    alloc_data,
    collapsed_loglik,
    initial_state,
    sweep,
    target_tables,
)
from .gibbs import LCData, LCPrior, LCState, lc_data, log_joint_parts
from .idata import lc_inference_data
from .loops import kept_counts, sweeps
from .results import RJMCMCResult, finish_k_run
from .rjmcmc import class_name, exchangeable_prior, prior_k_probabilities, run_counts

__all__ = ["EJECTION_SHAPE", "MOVES", "AllocationResult", "allocation_prior", "allocation_sampler",
           "heat_ladder", "run_chains"]

#: Move types, in the order of the ``proposed`` / ``accepted`` sample statistics.
MOVES = ("eject", "absorb", "swap")
#: ``a`` of the ejection's ``Beta(a, a)`` share of moved rows (1: uniform).
EJECTION_SHAPE = 1.0
#: Ejection / absorption proposals per sweep (each after a random label swap); more raise
#: the ESS of ``k`` for a little more time per sweep.
JUMPS = 8
#: Lowest heat of the default ladder: ``heats=H`` gives ``H`` heats evenly from 1 down to it.
LOWEST_HEAT = 0.4


@dataclass(frozen=True, repr=False, eq=False)
class AllocationResult(RJMCMCResult):
    """Draws of :func:`lcbayes.allocation_sampler` (:class:`~lcbayes.RJMCMCResult`'s
    contract; the acceptance rates are of ``eject``, ``absorb`` and ``swap``)."""

    engine = "allocation"

    @property
    def heats(self) -> list[float]:
        """The heats of the tempered replicas, the kept (cold) one first."""
        return list(self.settings["heats"])

    def summary(self) -> str:
        """:meth:`RJMCMCResult.summary` and the heats."""
        return (super().summary() + "\nheats of the tempered replicas: "
                + ", ".join(f"{h:g}" for h in self.heats))


def heat_ladder(heats: int | Sequence[float]) -> np.ndarray:
    """The heats: ``H`` evenly spaced from 1 down to :data:`LOWEST_HEAT` for an integer, or the
    given decreasing heats in ``(0, 1]`` starting at 1."""
    if isinstance(heats, int | np.integer) and not isinstance(heats, bool):
        n = check_int(heats, "heats", 1)
        return np.linspace(1.0, LOWEST_HEAT, n) if n > 1 else np.ones(1)
    try:
        ladder = np.asarray(heats, dtype=np.float64)
    except (TypeError, ValueError):
        ladder = np.array([np.nan])
    if (ladder.ndim != 1 or ladder.size == 0 or ladder[0] != 1.0 or np.any(ladder <= 0)
            or np.any(np.diff(ladder) >= 0)):
        raise ArgumentError(f"heats must be a number of heats >= 1 or decreasing heats in "
                            f"(0, 1] starting at 1, got {heats!r}")
    return ladder


def allocation_prior(data: Dataset, lc: LCData, name: str, prior: PriorSpec, p_k: np.ndarray
                     ) -> AllocPrior:
    """The :class:`~lcbayes.samplers.allocation_moves.AllocPrior` of :func:`lcbayes.rjmcmc`'s
    exchangeable prior (:func:`lcbayes.samplers.rjmcmc.exchangeable_prior`; hidden node
    ``name``), ``p(K)`` ``p_k`` and :data:`EJECTION_SHAPE`."""
    hyper = exchangeable_prior(data, name, prior, p_k, lc.categories.shape[1])
    return AllocPrior(hyper.log_prior_k, hyper.delta, hyper.lam,
                      jnp.where(jnp.asarray(lc.categories), hyper.lam, 0.0).sum(-1),
                      jnp.asarray(EJECTION_SHAPE))


@partial(jax.jit, static_argnums=(0, 1), compiler_options=QUICK_COMPILE)
def run_chains(draws: int, jumps: int, lc: LCData, prior: AllocPrior, heats, keys, k0, warmup,
               thin):
    """``draws`` kept cold states of every chain (one per key, every replica starting with
    ``k0`` classes), with parameter draws given each: ``(k, ln pi, ln theta, log-likelihood,
    log joint, collapsed log-likelihood, proposed, accepted)``."""
    data = alloc_data(lc)
    slots = prior.log_prior_k.shape[0]
    n_heats = heats.shape[0]
    tables = LCPrior(jnp.full(slots, prior.alpha), jnp.broadcast_to(prior.lam, (slots,
                                                                               *prior.lam.shape)))
    targets = jax.vmap(target_tables, in_axes=(None, None, 0))(data, prior, heats)
    cold_target = jax.tree_util.tree_map(lambda t: t[0], targets)

    def step(key, carry):
        states, log_shares, _, proposed, accepted = carry
        k_sweep, k_swap = jax.random.split(key)
        if n_heats > 1:
            u_pair, u_swap = jax.random.uniform(k_swap, (2,))
            r = jnp.floor(u_pair * (n_heats - 1)).astype(jnp.int32)
            pair = jnp.stack([r, r + 1])

            def tempered(order):  # ln F of the pair's states at the heats in ``order``
                return jax.vmap(collapsed_loglik)(
                    jax.tree_util.tree_map(lambda t: t[order], targets), states.nr[pair]).sum()

            swap = jnp.log(u_swap) < tempered(pair[::-1]) - tempered(pair)
            order = jnp.arange(n_heats)
            order = jnp.where(swap, order.at[r].set(r + 1).at[r + 1].set(r), order)
            states = jax.tree_util.tree_map(lambda x: x[order], states)
            proposed, accepted = proposed.at[2].add(1), accepted.at[2].add(swap)
        states, log_shares, params, tried, took = jax.vmap(sweep, in_axes=(0, None, None, 0, 0,
                                                                           0, 0))(
            jax.random.split(k_sweep, n_heats), data, prior, targets, states, log_shares, heats)
        cold = jax.tree_util.tree_map(lambda x: x[0], params)
        return (states, log_shares, cold, proposed.at[:2].add(tried[0]),
                accepted.at[:2].add(took[0]))

    def chain(key, k):
        k_start, key = jax.random.split(key)

        def body(carry, i):
            zeros = jnp.zeros(len(MOVES), dtype=jnp.int32)
            states, log_shares, params, proposed, accepted = sweeps(
                kept_counts(i, warmup, thin), step, (*carry, zeros, zeros),
                jax.random.fold_in(key, i))
            cold = jax.tree_util.tree_map(lambda x: x[0], states)
            log_w, log_theta = params
            loglik, log_prior = log_joint_parts(lc, tables, LCState(cold.k, log_w, log_theta,
                                                                    cold.z))
            log_joint = loglik + log_prior + prior.log_prior_k[cold.k - 1]
            return (states, log_shares, params), (
                cold.k, log_w, log_theta, loglik, log_joint,
                collapsed_loglik(cold_target, cold.nr), proposed, accepted)

        start = initial_state(data, slots, k)
        states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n_heats, *x.shape)),
                                        start)
        # the first sweep's shares: uniform, Beta(a, a) at the default a = 1 (else the start)
        log_shares = jnp.log(jax.random.uniform(k_start, (n_heats, jumps),
                                                minval=jnp.finfo(jnp.float64).tiny))
        params = (jnp.zeros(slots), jnp.zeros(prior.lam.shape)[None].repeat(slots, 0))
        return jax.lax.scan(body, (AllocState(*states), log_shares, params),
                            jnp.arange(draws))[1]

    return jax.vmap(chain)(keys, k0)


def allocation_sampler(data, *, max_classes: int = 10, draws: int = 2_000, warmup: int = 500,
                       chains: int = 4, heats: int | Sequence[float] = 4,
                       prior_k: str | np.ndarray | Callable[[int], float] = "uniform",
                       prior: PriorSpec = "dirichlet", seed: Seed = 0, thin: int = 1,
                       jumps: int = JUMPS) -> AllocationResult:
    """Posterior over the number of classes by the collapsed allocation sampler with parallel
    tempering (module docstring); the same model and arguments as :func:`lcbayes.rjmcmc`.

    Args:
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes; every
            column an item, any number of categories); missing values are summed out.
        max_classes: largest ``K`` (>= 2).
        draws: kept draws per chain (cold replica).
        warmup: sweeps discarded before the first kept draw.
        chains: independent chains (vmapped), each with its own tempered replicas, starting
            with ``K`` drawn from ``prior_k`` and the rows dealt to the classes in turn.
        heats: the number of tempered replicas per chain (heats evenly from 1 down to
            :data:`LOWEST_HEAT`; 1: no tempering) or the heats themselves, decreasing from 1.
        prior_k: ``p(K)``: ``"uniform"``, ``"poisson"`` (Poisson(1) truncated), an array of
            ``max_classes`` weights or a function of ``K``.
        prior: exchangeable Dirichlet pseudo-counts, as for :func:`lcbayes.rjmcmc`.
        seed: a non-negative integer or a ``jax.random`` key.
        thin: keep every ``thin``-th sweep.
        jumps: ejection / absorption proposals per sweep (each after a random label swap; they
            are cheap next to the Gibbs step, and more of them change ``K`` more often).

    Returns:
        An :class:`AllocationResult`: ``posterior_k``, ``acceptance`` (``eject``, ``absorb``
        of the cold replica, ``swap``), ``k_mixing``, ``to_inference_data()`` in
        :func:`lcbayes.rjmcmc`'s form plus the sample statistic
        ``collapsed_log_likelihood`` (``ln p(y | z, K)``).

    Warns:
        KMixingWarning: as :func:`lcbayes.rjmcmc`.
    """
    start = time.perf_counter()
    data = as_dataset(data)
    seed = check_seed(seed)
    counts = run_counts(max_classes, draws, warmup, chains, thin)
    jumps = check_int(jumps, "jumps", 1)
    ladder = heat_ladder(heats)
    slots = counts["max_classes"]
    p_k = prior_k_probabilities(prior_k, slots)
    lc = lc_data(data)
    structure = latent_class(data, slots, name=class_name(data))
    alloc_prior = allocation_prior(data, lc, structure.nodes[0], prior, p_k)
    k0 = numpy_rng(seed).choice(np.arange(1, slots + 1), size=counts["chains"], p=p_k)
    keys = jax.random.split(prng_key(seed), counts["chains"])
    k, log_w, log_theta, loglik, log_joint, collapsed, proposed, accepted = map(
        np.asarray, run_chains(counts["draws"], jumps, LCData(*map(jnp.asarray, lc)), alloc_prior,
                               jnp.asarray(ladder), keys, jnp.asarray(k0, dtype=jnp.int32),
                               counts["warmup"], counts["thin"]))
    tried, took = proposed.sum(axis=(0, 1)), accepted.sum(axis=(0, 1))
    acceptance = {m: float(took[i] / tried[i]) if tried[i] else None
                  for i, m in enumerate(MOVES)}
    settings = {**counts, "heats": [float(h) for h in ladder], "jumps": jumps,
                "seed": seed_record(seed),
                "prior_k": {i + 1: float(v) for i, v in enumerate(p_k)},
                "prior": prior if isinstance(prior, str | int | float) else "custom"}
    idata = lc_inference_data(
        data, np.exp(log_w), np.exp(log_theta), loglik, log_joint, k=k,
        stats={"collapsed_log_likelihood": ((), collapsed),
               "proposed": (("move",), proposed), "accepted": (("move",), accepted)},
        stat_coords={"move": list(MOVES)},
        attrs={"engine": "allocation", **counts, "jumps": jumps,
               "seed": json_value(settings["seed"]),
               "heats_json": json.dumps(settings["heats"]), "prior": settings["prior"],
               "prior_k_json": json.dumps(settings["prior_k"]),
               "acceptance_json": json.dumps(acceptance)})
    result = AllocationResult(idata=idata, structure=structure, settings=settings,
                              seconds=time.perf_counter() - start)
    return finish_k_run(result)
