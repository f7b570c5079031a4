"""Annealed importance sampling of ``ln p(y | m)`` for lcbayes structures.

Beal & Ghahramani (2006) §3.6, Algorithm 3.1: chains start from exact prior draws and move
through ``f_k(theta) = p(theta) p(y | theta)^tau_k`` (eq. 63); after the transition at
``tau_{k-1}`` each chain adds ``(tau_k - tau_{k-1}) ln p(y | theta)`` to its log weight, and
``ln Z_hat = logsumexp_c ln w_c - ln C`` (:mod:`lcbayes.engines.annealing` states the
estimator and its standard error). No transition is ever run at ``tau = 1``. Three transition
kernels (:data:`KERNELS`):

``kernel="mh"`` (Beal's kernel): one Metropolis-Hastings sweep per temperature, hidden variables
summed out exactly by the inference core; the sweep proposes every node's CPTs in turn
(``update="node"``, default) or all CPTs at once (``update="joint"``, Beal's reading), each
block accepted or rejected on its own. Every CPT row is proposed
from a Dirichlet centred on the current row, ``theta' ~ Dir(a(theta))`` with
``a(theta) = alpha_k theta + FLOOR`` and accepted with probability (eq. 67)::

    min(1, f_{k-1}(theta') Dir(theta | a(theta')) / [f_{k-1}(theta) Dir(theta' | a(theta))])

The strength ``alpha_k = c0 + c1 * n * tau_{k-1}`` grows with the number of observed rows
``n`` times the temperature, as the tempered posterior's precision does (Beal §5's suggested
fix for the acceptance rate that collapses at large ``n`` under a fixed width). It is set in
advance, never from the chains, so the sampler stays exactly unbiased for ``Z``. ``FLOOR``
keeps proposal shapes away from zero (Dirichlet shapes ``<< 1`` underflow); the Hastings ratio
uses the same ``a(.)`` both ways, so it changes efficiency, not validity. Draws are made as log
gammas, so no probability underflows to 0.

``kernel="rw"`` (the default) is the same sweep with a Gaussian random walk in softmax
coordinates: every log entry moves by ``sigma_k eps`` (``eps ~ N(0, 1)``, ``sigma_k = RW_SCALE /
sqrt(alpha_k)``) and each CPT row is renormalised. In the additive log-ratio coordinates
``y_r = ln theta_r - ln theta_R`` the step ``sigma_k (eps_r - eps_R)`` does not depend on the
current row, so the proposal is symmetric, and the tempered target there is ``f_k`` times the
Jacobian ``prod_r theta_r``; a row with Dirichlet(lambda) prior then contributes
``sum_r lambda_r (ln theta'_r - ln theta_r)`` to the log acceptance ratio besides
``tau (ln p(y | theta') - ln p(y | theta))``. No gamma draws, so a step costs less than
``"mh"``'s.

``kernel="gibbs"`` anneals the complete-data likelihood instead (module
:mod:`lcbayes.inference.completion`): ``f_k(theta, s) = p(theta) p(s | theta)
p(y | s, theta)^tau_k``, whose marginal normalisers are again ``Z_0 = 1`` and ``Z_K = p(y)``.
Each temperature does one Gibbs sweep, ``theta | s ~ Dir(lambda + N_free + tau N_seen)`` then
``s | theta`` (exact multinomial draws per data pattern), and the weight increment is
``(tau_k - tau_{k-1}) ln p(y | s, theta)``. Every move is accepted, so it does not degrade at
large ``n`` like a fixed-width MH kernel; its increments are noisier (they depend on ``s``),
and it enumerates joint hidden states (at most ``MAX_GIBBS_STATES``).

Chains are vmapped and the whole temperature loop is one ``lax.scan``. Missing values are
summed out exactly, as everywhere in lcbayes.

Example::

    res = lcb.ais(lcb.latent_class(data, 2), data, chains=16, temperatures=4096, seed=0)
    res.log_evidence, res.stderr
    lcb.ais(structure, data, target_stderr=0.15)   # groups of 16 chains until s.e. <= 0.15
    lcb.ais(structure, data, groups=8, executor="dask", workers=2)  # 8 groups as Dask tasks

**Groups of chains** (``groups=G``): group ``g`` runs ``chains`` chains from the key
``fold_in(key, g)`` (group 0 from ``key`` itself, so ``groups=1`` is the plain run), and the
groups pool into one estimate. Each group is a task of :mod:`lcbayes.execution`: the same
numbers serially, on a ``LocalCluster`` or on a running scheduler; the AIS problem (the
data) is scattered to the workers once per round, and each worker compiles the program once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from ..errors import ArgumentError
from ..execution import Executor, SerialExecutor
from ..execution import executor as open_executor
from ..inference import Evidence, enumeration, flat, flat_log_marginal, prepare
from ..inference.completion import sample_completion, seen_indicators
from ..inference.tying import RowTying, pool, tie
from ..jax_setup import sized_programs
from ..params import PriorSpec, proper_prior_tables
from ..progress import advance_loop_bar, loop_bar
from ..structure import Structure
from ..validation import (
    Seed,
    check_choice,
    check_int,
    check_positive,
    fit_data,
    prng_key,
    seed_record,
)
from .annealing import AISResult, make_schedule, quarter_means, weight_statistics
from .gamma_sampler import log_dirichlet_flat
from .padding import class_padding
from .run_record import start_engine

__all__ = ["DEFAULT_CONCENTRATION", "FLOOR", "KERNELS", "MAX_GIBBS_STATES", "RW_SCALE",
           "AISProblem", "ais", "anneal", "make_problem"]

#: Default ``(c0, c1)`` of the MH proposal strength ``alpha_k = c0 + c1 n tau_{k-1}``.
DEFAULT_CONCENTRATION = (2.0, 0.5)
#: Added to every Dirichlet proposal shape (module docstring).
FLOOR = 0.05
#: Random-walk step ``RW_SCALE / sqrt(c0 + c1 n tau)`` per log entry (``kernel="rw"``; chosen
#: by the effective number of chains it gives, in the middle of the range that works).
RW_SCALE = 3.0
#: Largest number of joint hidden states the Gibbs kernel enumerates.
MAX_GIBBS_STATES = 4096
#: Checkpoints of the running log weights kept in ``AISResult.trace``.
TRACE_POINTS = 128


def _per_node(structure: Structure, entry_values, row_values, tying: RowTying | None
              ) -> jax.Array:
    """``(n_nodes,)`` sums of per-entry and per-row values, each tied group of rows counted
    once (the flat counterparts of summing over each CPT)."""
    shapes = structure.table_shapes
    rows = flat.entry_rows(shapes)
    n = structure.n_nodes
    row_w = jnp.ones(rows[-1] + 1) if tying is None else tying.row_weights
    total = jax.ops.segment_sum(row_w[rows] * entry_values, flat.entry_nodes(shapes),
                                num_segments=n)
    if row_values is not None:
        total = total + jax.ops.segment_sum(row_w * row_values, flat.row_nodes(shapes),
                                            num_segments=n)
    return total


def _log_dirichlet_draw(structure: Structure, key, shapes, tying: RowTying | None):
    """Log CPT rows drawn from ``Dir(shapes)`` via log gammas (no underflow to 0), tied."""
    return tie(log_dirichlet_flat(key, shapes, structure.table_shapes), tying)


def _log_prior(structure: Structure, log_x, priors, tying, active=None):
    """Per node, ``ln p(theta_i)`` up to its constant: ``sum (lambda - 1) ln theta`` (over
    the active entries, :mod:`.padding`)."""
    terms = (priors - 1.0) * log_x
    return _per_node(structure, terms if active is None else jnp.where(active, terms, 0.0),
                     None, tying)


def _log_proposal(structure: Structure, log_x, shapes, tying):
    """Per node, ``sum_rows ln Dir(x_row | shapes_row)``."""
    rows = flat.entry_rows(structure.table_shapes)
    row_sums = jax.ops.segment_sum(shapes, rows, num_segments=int(rows[-1]) + 1)
    return _per_node(structure, (shapes - 1.0) * log_x - gammaln(shapes), gammaln(row_sums),
                     tying)


def _shapes(log_x, strength):
    return strength * jnp.exp(log_x) + FLOOR


class _MHState(NamedTuple):
    log_x: jax.Array       # (n,) flat log CPTs
    loglik: jax.Array
    log_prior: jax.Array   # (n_nodes,)


class _GibbsState(NamedTuple):
    log_x: jax.Array
    free_counts: jax.Array   # (n,) flat
    seen_counts: jax.Array
    log_seen: jax.Array


class AISProblem(NamedTuple):
    """Everything a transition needs besides the structure (a pytree, traced)."""

    evidence: Evidence
    weights: jax.Array
    priors: jax.Array                       # (n,) flat Dirichlet pseudo-counts
    tying: RowTying | None
    seen: dict
    rows: jax.Array | None                  # (N,) pattern of every row (Gibbs kernel)
    strength: tuple[jax.Array, jax.Array]   # (c0, c1 * n)
    active: jax.Array | None = None         # (n,) False at switched-off classes (padding)


def _loglik(structure, log_x, problem: AISProblem):
    return problem.weights @ flat_log_marginal(structure, log_x, problem.evidence)


def _mh_init(structure, problem: AISProblem, key):
    log_x = _log_dirichlet_draw(structure, key, problem.priors, problem.tying)
    if problem.active is not None:  # Dir(lambda) of the classes in use; the others weigh 0
        log_x = _switch_off(structure, log_x, problem.active)
    return _MHState(log_x, _loglik(structure, log_x, problem),
                    _log_prior(structure, log_x, problem.priors, problem.tying, problem.active))


def _switch_off(structure: Structure, log_x, active):
    """Class weights of switched-off classes to ``-inf``, the weights in use renormalised;
    the item rows of switched-off classes are kept (finite, never used)."""
    weights = jnp.asarray(flat.entry_nodes(structure.table_shapes) == structure.root)
    off = weights & ~active
    return jnp.where(weights, flat.log_normalise(jnp.where(off, -jnp.inf, log_x),
                                                 structure.table_shapes), log_x)


def _blocks(structure: Structure, blocks: str) -> np.ndarray:
    """``(B, n_nodes)`` 0/1 membership of the node blocks of an MH sweep: all nodes together
    (``"joint"``, Beal's reading) or one node at a time (``"node"``)."""
    if blocks == "joint":
        return np.ones((1, structure.n_nodes), dtype=bool)
    return np.eye(structure.n_nodes, dtype=bool)


def _mh_step(structure, problem: AISProblem, state: _MHState, key, tau, blocks: str):
    """One MH sweep targeting ``f_tau`` (eq. 67) with Dirichlet proposals (:func:`_sweep`)."""
    k_prop, k_accept = jax.random.split(key)
    strength = problem.strength[0] + problem.strength[1] * tau
    forward = _shapes(state.log_x, strength)
    proposal = _log_dirichlet_draw(structure, k_prop, forward, problem.tying)
    log_q = (_log_proposal(structure, state.log_x, _shapes(proposal, strength), problem.tying)
             - _log_proposal(structure, proposal, forward, problem.tying))  # backward - forward
    gain = (_log_prior(structure, proposal, problem.priors, problem.tying) - state.log_prior
            + log_q)
    return _sweep(structure, problem, state, proposal, gain, k_accept, tau, blocks)


def _rw_step(structure, problem: AISProblem, state: _MHState, key, tau, blocks: str):
    """One MH sweep targeting ``f_tau`` with Gaussian random-walk proposals in softmax
    coordinates (module docstring, ``kernel="rw"``; :func:`_sweep`)."""
    k_prop, k_accept = jax.random.split(key)
    sigma = RW_SCALE / jnp.sqrt(problem.strength[0] + problem.strength[1] * tau)
    noise = jax.random.normal(k_prop, state.log_x.shape)
    proposal = tie(flat.log_normalise(state.log_x + sigma * noise, structure.table_shapes),
                   problem.tying)
    change = problem.priors * (proposal - state.log_x)
    if problem.active is not None:  # switched-off classes never move
        proposal = jnp.where(problem.active, proposal, state.log_x)
        change = jnp.where(problem.active, change, 0.0)
    gain = _per_node(structure, change, None, problem.tying)
    return _sweep(structure, problem, state, proposal, gain, k_accept, tau, blocks)


def _sweep(structure, problem: AISProblem, state: _MHState, proposal, gain, key, tau,
           blocks: str):
    """Every block of nodes (:func:`_blocks`) in turn takes its part of ``proposal`` or keeps
    its tables, accepted with probability ``min(1, exp(tau * (loglik gain) + block's gain))``
    (``gain``: per node, the log prior and proposal ratio). All proposals are drawn first (each
    depends only on its own block's current tables). Returns (state, fraction of blocks
    accepted, ln p(y | theta))."""
    in_block = _blocks(structure, blocks)
    member_entries = jnp.asarray(in_block[:, flat.entry_nodes(structure.table_shapes)])
    member = jnp.asarray(in_block)
    log_u = jnp.log(jax.random.uniform(key, (member.shape[0],)))

    def block_update(b, carry):
        log_x, loglik, accepted = carry
        candidate = jnp.where(member_entries[b], proposal, log_x)
        cand_loglik = _loglik(structure, candidate, problem)
        log_ratio = tau * (cand_loglik - loglik) + member[b] @ gain
        accept = log_u[b] < log_ratio   # a NaN ratio rejects
        return (jnp.where(accept, candidate, log_x), jnp.where(accept, cand_loglik, loglik),
                accepted + accept)

    log_x, loglik, accepted = jax.lax.fori_loop(
        0, member.shape[0], block_update, (state.log_x, state.loglik, 0.0))
    new = _MHState(log_x, loglik, _log_prior(structure, log_x, problem.priors, problem.tying,
                                             problem.active))
    return new, accepted / member.shape[0], loglik


def _complete(structure, problem: AISProblem, log_x, key, tau) -> _GibbsState:
    assert problem.rows is not None  # the Gibbs kernel's problem has rows (make_problem)
    comp = sample_completion(structure, flat.unflatten(log_x, structure.table_shapes),
                             problem.evidence, problem.seen, problem.rows, tau, key)
    return _GibbsState(log_x, pool(flat.flatten(comp.free_counts), problem.tying),
                       pool(flat.flatten(comp.seen_counts), problem.tying), comp.log_seen)


def _gibbs_init(structure, problem: AISProblem, key):
    k_theta, k_s = jax.random.split(key)
    log_x = _log_dirichlet_draw(structure, k_theta, problem.priors, problem.tying)
    return _complete(structure, problem, log_x, k_s, 0.0)


def _gibbs_step(structure, problem: AISProblem, state: _GibbsState, key, tau, blocks):
    """``theta | s`` then ``s | theta`` at ``tau``; returns (state, True, ln p(y | s, theta))."""
    k_theta, k_s = jax.random.split(key)
    shapes = problem.priors + state.free_counts + tau * state.seen_counts
    log_x = _log_dirichlet_draw(structure, k_theta, shapes, problem.tying)
    new = _complete(structure, problem, log_x, k_s, tau)
    return new, jnp.asarray(True), new.log_seen


_KERNELS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "rw": (_mh_init, _rw_step), "mh": (_mh_init, _mh_step), "gibbs": (_gibbs_init, _gibbs_step)}
#: The transition kernels of :func:`ais`, the default first.
KERNELS = tuple(_KERNELS)


def anneal(structure: Structure, kernel: str, blocks: str, chains: int, progress: bool,
           problem: AISProblem, tau: jax.Array, key: jax.Array):
    """The core: ``(K, C)`` running log weights and acceptances of ``chains`` chains through
    the temperatures ``tau`` (one ``lax.scan``; pure, so it can be vmapped, e.g. over the
    tyings of one host structure). ``progress``: advance the bar of
    :func:`lcbayes.progress.loop_bar` from inside the loop."""
    init, step = _KERNELS[kernel]
    k_init, k_run = jax.random.split(key)
    states = jax.vmap(lambda k: init(structure, problem, k))(jax.random.split(k_init, chains))
    chain_step = jax.vmap(lambda s, k, t: step(structure, problem, s, k, t, blocks),
                          in_axes=(0, 0, None))

    def body(carry, x):
        states, log_w = carry
        k, t_prev, t_next = x
        states, accepted, loglik = chain_step(states, jax.random.split(
            jax.random.fold_in(k_run, k), chains), t_prev)
        log_w = log_w + (t_next - t_prev) * loglik
        if progress:
            _report_progress(k, tau.shape[0] - 1)
        return (states, log_w), (log_w, accepted)

    steps = jnp.arange(tau.shape[0] - 1)
    _, (trace, accepted) = jax.lax.scan(body, (states, jnp.zeros(chains)),
                                        (steps, tau[:-1], tau[1:]))
    return trace, accepted


#: :func:`anneal` compiled for the number of data patterns
#: (:func:`lcbayes.jax_setup.sized_programs`).
_anneal_program = sized_programs(lambda options: jax.jit(anneal, static_argnums=(0, 1, 2, 3, 4),
                                                         compiler_options=options))


def make_problem(structure: Structure, patterns, weights, priors, kernel: str, strength,
                 tying: RowTying | None = None, active=None) -> AISProblem:
    """The traced inputs of a run: data patterns and their ``weights`` (integer row counts for
    ``"gibbs"``), flat prior pseudo-counts ``priors``, the MH ``strength = (c0, c1 n)``, an
    optional tying of CPT rows (:mod:`lcbayes.inference.tying`) and the ``active`` entries of
    a padded latent class model (:mod:`.padding`; ``"rw"`` kernel)."""
    if kernel == "gibbs":
        counts = np.asarray(weights)
        rows = jnp.asarray(np.repeat(np.arange(counts.size), counts.round().astype(int)))
        return AISProblem(enumeration.prepare(structure, patterns), weights, priors, tying,
                          seen_indicators(structure, patterns), rows, strength)
    return AISProblem(prepare(structure, patterns), weights, priors, tying, {}, None, strength,
                      active)


def _check(structure: Structure, chains, kernel: str, blocks: str, concentration
           ) -> tuple[int, float, float]:
    chains = check_int(chains, "chains", 1)
    check_choice(kernel, "kernel", tuple(_KERNELS))
    check_choice(blocks, "update", ("node", "joint"))
    if kernel == "gibbs" and structure.n_enumerated_states > MAX_GIBBS_STATES:
        raise ArgumentError(
            f"kernel='gibbs' enumerates {structure.n_enumerated_states} joint hidden states "
            f"(limit {MAX_GIBBS_STATES}); use kernel='mh'")
    c0, c1 = DEFAULT_CONCENTRATION if concentration is None else concentration
    if not (np.isfinite(c0) and np.isfinite(c1) and c0 > 0 and c1 >= 0):
        raise ArgumentError(f"concentration must be (c0 > 0, c1 >= 0), got {concentration!r}")
    return chains, float(c0), float(c1)


#: The default ``max_chains`` of a ``target_stderr`` run: this many groups of ``chains``
#: (``lcb.compare`` and the command line use the same).
MAX_GROUPS = 8


def _chain_limit(chains: int, target_stderr, max_chains) -> int:
    """The most chains :func:`ais` runs: ``chains`` without a target, else ``max_chains``."""
    if target_stderr is None:
        if max_chains is not None:
            raise ArgumentError("max_chains needs target_stderr (it bounds the chains run to "
                                "reach it)")
        return chains
    check_positive(target_stderr, "target_stderr")
    return check_int(MAX_GROUPS * chains if max_chains is None else max_chains, "max_chains",
                     chains)


#: Rounds with a target standard error stop, from the second group on, when the effective
#: number of chains is below this fraction of the chains (:func:`ais`).
LOW_ESS_STOP = 0.1


def _stop(traces: list, most: int, chains: int, target_stderr) -> str | None:
    """Why the rounds of :func:`ais` stop after ``traces`` (one per group), or ``None``."""
    stats = weight_statistics(np.concatenate([t[-1] for t in traces]))
    if target_stderr is not None and stats["stderr"] <= target_stderr:
        return "target"
    if len(traces) >= most:
        return "max_chains"
    if target_stderr is not None and len(traces) >= 2 and \
            stats["ess"] < LOW_ESS_STOP * chains * len(traces):
        return "low_ess"
    return None


class _Groups(NamedTuple):
    """What every group of chains of one :func:`ais` run shares (a task's shared argument).
    Its arrays are NumPy's: a JAX float64 array unpickled on a worker before lcbayes has
    switched JAX to 64 bits would come back as float32."""

    structure: Structure
    kernel: str
    blocks: str
    chains: int
    progress: bool
    problem: AISProblem
    tau: np.ndarray
    key: jax.Array


def _run_group(g: int, run: _Groups) -> tuple[np.ndarray, np.ndarray]:
    """Group ``g``'s ``(K, C)`` running log weights and acceptances (a task of
    :mod:`lcbayes.execution`): its chains start from ``run.key`` for ``g = 0``, else from
    ``fold_in(run.key, g)``."""
    key = run.key if g == 0 else jax.random.fold_in(run.key, g)
    with loop_bar(run.tau.shape[0] - 1, run.progress, desc="AIS temperatures", unit="temp"):
        trace, accepted = _anneal_program(run.problem.weights.shape[0])(
            run.structure, run.kernel, run.blocks, run.chains, run.progress, run.problem, run.tau,
            key)
    return np.asarray(trace), np.asarray(accepted)


def _report_progress(k, total: int) -> None:
    """Advance the innermost :func:`lcbayes.progress.loop_bar` every ``total // 100`` steps
    (``jax.debug.callback`` of a module-level function under ``lax.cond``, so the compiled
    program does not depend on the bar and is reused by every call)."""
    due = ((k + 1) % max(total // 100, 1) == 0) | (k + 1 == total)
    jax.lax.cond(due, lambda: jax.debug.callback(advance_loop_bar, k), lambda: None)


def ais(
    structure: Structure,
    data,
    *,
    chains: int = 16,
    temperatures: int = 4096,
    schedule: str | np.ndarray = "beal",
    seed: Seed = 0,
    prior: PriorSpec = "dirichlet",
    kernel: Literal["rw", "mh", "gibbs"] = "rw",
    update: Literal["node", "joint"] = "node",
    concentration: tuple[float, float] | None = None,
    target_stderr: float | None = None,
    max_chains: int | None = None,
    progress: bool = False,
    pad_classes: int | None = None,
    groups: int | None = None,
    executor: Literal["serial", "dask"] | Executor | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> AISResult:
    """Annealed importance sampling estimate of the log evidence ``ln p(y | m)``.

    Args:
        structure: the model (latent class, HLC or DAG).
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes);
            missing values are marginalised.
        chains: independent chains; ``log_evidence`` is the log of their mean weight.
        temperatures: number of annealing steps ``K`` (Beal used 16384).
        schedule: ``"beal"`` (eq. 69, ``e = 0.2``), ``"geometric"``, ``"linear"`` or an
            explicit array of temperatures from 0 to 1.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            numbers.
        prior: Dirichlet pseudo-counts (``"dirichlet"`` = 1 everywhere, a number or
            ``{node: pseudo-counts}``).
        kernel: ``"rw"`` (random-walk Metropolis-Hastings in softmax coordinates, the
            default), ``"mh"`` (Dirichlet-proposal Metropolis-Hastings, Beal's) or ``"gibbs"``
            (complete-data annealing); see the module docstring.
        update: ``"node"`` (each node's tables proposed and accepted on their own) or
            ``"joint"`` (all at once, as in the paper); MH kernels only.
        concentration: ``(c0, c1)`` of the MH proposal strength ``c0 + c1 n tau``
            (default :data:`DEFAULT_CONCENTRATION`); the ``"rw"`` step is
            ``RW_SCALE / sqrt(c0 + c1 n tau)``.
        target_stderr: if given, run rounds of ``groups`` (default 1) groups of ``chains``
            chains until the standard error of all chains so far is at most
            ``target_stderr`` or ``max_chains`` chains have run (the last round cut to fit),
            or, from the second group on, while the effective number of chains stays below
            :data:`LOW_ESS_STOP` of the chains (the weights rest on a few chains: more chains
            at these temperatures hardly help, more temperatures do); the
            reason is ``settings["stopped"]`` (``"target"``, ``"max_chains"`` or
            ``"low_ess"``). Chains are independent, so the groups pool into one estimate (the
            first group is the run without a target; all reuse one compiled program).
            Stopping on the estimate has the small bias of any sequential rule. The rounds do
            not depend on the executor, so neither do the numbers: on a cluster, make
            ``groups`` a multiple of its workers.
        max_chains: the most chains a run with ``target_stderr`` makes (default
            ``MAX_GROUPS * chains``, 8 groups).
        progress: show a progress bar over the temperatures.
        pad_classes: run a latent class model inside the compiled program of the model with
            ``pad_classes`` classes, the extra classes switched off
            (:mod:`lcbayes.engines.padding`; ``kernel="rw"``), so that runs of several sizes
            compile once. The same estimator; its random numbers are laid out on the padded
            shape, so the same ``pad_classes`` reproduces a run.
        groups: run ``groups`` groups of ``chains`` chains (module docstring), pooled into
            one estimate: ``groups * chains`` chains in all (with ``target_stderr``: the
            groups of one round). ``None``: one group.
        executor, scheduler, workers: where the groups run
            (:func:`lcbayes.execution.executor`): ``None`` / ``"serial"`` here, ``"dask"`` one
            group per task on a Dask cluster (``scheduler`` joins a running one, else a
            ``LocalCluster`` of ``workers`` processes). The same numbers either way.
    """
    start, seed = start_engine(structure, seed)
    chains, c0, c1 = _check(structure, chains, kernel, update, concentration)
    limit = _chain_limit(chains, target_stderr, max_chains)
    per_round = 1 if groups is None else check_int(groups, "groups", 1)
    most = per_round if target_stderr is None else limit // chains
    tau = make_schedule(schedule, temperatures)
    padding = class_padding(structure, pad_classes)
    if padding is not None and kernel != "rw":
        raise ArgumentError(f"pad_classes needs kernel='rw', got kernel={kernel!r}")
    data = fit_data(structure, data)
    lambdas = proper_prior_tables(structure, prior, "ais")
    run_structure, active = structure, None
    if padding is not None:  # the prior's value at switched-off entries is never used
        run_structure, active = padding.padded, jnp.asarray(padding.held()[0])
        lambdas = padding.pad(lambdas, 1.0, 1.0)
    priors = flat.flatten([jnp.asarray(a) for a in lambdas])
    strength = (jnp.asarray(c0), jnp.asarray(c1 * data.n_observed_rows))
    problem = make_problem(run_structure, jnp.asarray(data.patterns),
                           jnp.asarray(data.counts, dtype=jnp.float64), priors, kernel, strength,
                           active=active)
    traces: list[np.ndarray] = []
    accepts: list[np.ndarray] = []
    with open_executor(executor, scheduler, workers) as runner:
        here = isinstance(runner, SerialExecutor)
        host_problem, host_tau = jax.tree.map(np.asarray, (problem, tau))
        run = _Groups(run_structure, kernel, update, chains, bool(progress) and here,
                      host_problem, host_tau, prng_key(seed))
        while True:
            todo = list(range(len(traces), min(len(traces) + per_round, most)))
            for trace, accepted in runner.map(_run_group, todo, {"run": run},
                                              progress=bool(progress) and not here,
                                              desc="AIS groups"):
                traces.append(trace)
                accepts.append(accepted)
            stop = _stop(traces, most, chains, target_stderr)
            if stop is not None:
                break
    trace = np.concatenate(traces, axis=1)
    checkpoints = np.unique(np.linspace(0, len(tau) - 2, min(TRACE_POINTS, len(tau) - 1))
                            .round().astype(int))
    settings: dict[str, Any]  # settings of several types
    settings = {"prior": prior if isinstance(prior, str | int | float) else "custom"}
    if padding is not None:
        settings["pad_classes"] = padding.padded.cardinalities[padding.padded.root]
    if target_stderr is not None:
        settings.update(target_stderr=float(target_stderr), max_chains=limit,
                        chains_per_group=chains, stopped=stop)
    if groups is not None:
        settings.update(groups=len(traces), chains_per_group=chains)
    if kernel != "gibbs":
        settings.update(update=update, concentration=[c0, c1],
                        n_observed_rows=data.n_observed_rows,
                        **({"floor": FLOOR} if kernel == "mh" else {"scale": RW_SCALE}))
    return AISResult.from_weights(
        trace[-1],
        trace=trace[checkpoints].T,
        trace_temperatures=tau[checkpoints + 1],
        acceptance=quarter_means(np.concatenate(accepts, axis=1)),
        chains=trace.shape[1],
        temperatures=len(tau) - 1,
        schedule=schedule if isinstance(schedule, str) else "custom",
        kernel=kernel,
        seed=seed_record(seed),
        seconds=time.perf_counter() - start,
        settings=settings,
    )
