"""The parametric bootstrap likelihood-ratio test (BLRT) of K-1 against K latent classes.

**BLRT** (McLachlan 1987, Appl. Statist. 36:318-324; Nylund, Asparouhov & Muthén 2007, SEM
14:535-569). ``LR = 2 (L_K - L_{K-1})`` of EM fits to the data; ``B`` data sets of the same
size are simulated from the K-1 fit, *each simulated row keeping the missingness mask of the
data row in the same position* (missing values stay missing where they were, a fully missing
row stays fully missing), both models are refitted to every replicate, and ``p = (1 + #{LR_b >=
LR}) / (1 + B)`` (the Monte Carlo p-value, Davison & Hinkley 1997 ch. 4), with Monte Carlo
standard error ``sqrt(p (1 - p) / B)``. Every replicate's refit uses ``restarts`` random starts
(drawn as :func:`lcbayes.em` draws them) plus one informed start: the generating K-1 parameters
for the K-1 model (as Mplus does by default) and, for the K model, the replicate's K-1 estimate
with its largest class split in two and perturbed (so ``LR_b`` is not negative through a failed
search). Too few restarts miss maxima of the K model and make ``LR_b`` too small, the p-value
too small. All replicates x starts are *lanes* of one
compiled EM program per model size (:func:`lcbayes.engines.em_loop.em_runner`, SQUAREM), each lane
with its replicate's own patterns and counts (pattern tables padded with zero counts to a
common size), :data:`BLOCK` replicates per call, the lanes shared out over the local devices:
on a CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX starts gives
``N`` devices, which run side by side. With ``keep``, a two-stage run as Mplus' ``LRTSTARTS``:
every start runs ``burn_in`` iterations, the ``keep`` best of each replicate continue.

Sequential stopping (``sequential=True``): after 50, 100, 200, 400, ... replicates, with ``c``
exceedances among ``b``, stop when the exact (Clopper-Pearson) 99% interval of the exceedance
probability lies wholly below or wholly above ``alpha`` (a clear decision; a p-value near
``alpha`` runs all ``replicates``). ``replicates_used`` says where it stopped.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal

import jax
import jax.numpy as jnp
import numpy as np

from .. import draws
from ..constructors import latent_class
from ..encoding import unique_rows
from ..engines.em import em
from ..engines.em_loop import em_runner
from ..errors import ArgumentError, ArgumentTypeError
from ..execution import Executor
from ..execution import executor as open_executor
from ..inference import complete_columns, e_step, flat, prepare
from ..params import to_tables
from ..render import plural
from ..validation import (
    Seed,
    as_dataset,
    check_int,
    check_positive,
    check_seed,
    data_for,
    seed_record,
)
from .results import BLRTResult, check_fit

if TYPE_CHECKING:
    from ..structure import Structure

__all__ = ["BLOCK", "blrt"]

#: Replicates per call of the compiled lane program (bounds memory; a last, smaller block is
#: padded with zero-weight replicates so every call has one shape).
BLOCK = 50


def _clopper_pearson(c: int, b: int, level: float = 0.99) -> tuple[float, float]:
    from scipy.stats import beta
    a = (1.0 - level) / 2
    return (0.0 if c == 0 else float(beta.ppf(a, c, b - c + 1)),
            1.0 if c == b else float(beta.ppf(1 - a, c + 1, b - c)))


# ------------------------------------------------------------------ BLRT lanes
@partial(jax.jit, static_argnames=("structure", "max_iter", "batch", "complete"))
def _run_lanes(structure, patterns, weights, lane_rep, x0, limit, tol_total, max_iter: int,
               batch: int, complete: tuple[int, ...]):
    """EM (SQUAREM) of every lane from its flat start ``x0`` on replicate ``lane_rep``'s
    patterns, ``batch`` lanes vmapped side by side: ``(flat tables, loglik, converged)``."""
    shapes = structure.table_shapes

    def one(args):
        r, x = args
        run = em_runner(structure, patterns[r], weights[r], None, tol_total, limit, max_iter,
                        0.0, True, complete=complete, vmapped=batch > 1)
        out = run(flat.unflatten(x, shapes))
        return flat.flatten(out.tables), out.loglik, out.converged

    return jax.lax.map(one, (lane_rep, x0), batch_size=None if batch == 1 else batch)


@partial(jax.jit, static_argnames=("structure", "batch"))
def _random_starts(structure, patterns, weights, lane_rep, keys, batch: int):
    """Random starts as :func:`lcbayes.em` draws them: Dirichlet(1) class responsibilities per
    pattern, then one ML M step."""
    shapes = structure.table_shapes
    uniform = tuple(jnp.zeros(s) for s in shapes)

    def one(args):
        r, key = args
        noise = -jnp.log(draws.exponential(
            key, (patterns.shape[1], structure.cardinalities[structure.root])))
        counts = e_step(structure, uniform, prepare(structure, patterns[r]), weights[r],
                        (noise,)).counts
        return flat.normalise(flat.flatten(counts), shapes)

    return jax.lax.map(one, (lane_rep, keys), batch_size=None if batch == 1 else batch)


def _split(structure, tables, rng, eps: float = 0.1) -> list[np.ndarray]:
    """K-1 class tables as K: the largest class halved into two, perturbed apart."""
    root = structure.root
    tables = [np.asarray(t, dtype=np.float64) for t in tables]
    c = int(np.argmax(tables[root][0]))
    out = []
    for i, t in enumerate(tables):
        if i == root:
            pi = t[0].copy()
            pi[c] /= 2
            out.append(np.append(pi, pi[c])[None])
            continue
        tilt = np.exp(eps * rng.standard_normal(t.shape[1]))
        a, b = t[c] * tilt, t[c] / tilt
        new = np.vstack([t, b / b.sum()])
        new[c] = a / a.sum()
        out.append(new)
    return out


def _unflatten(x: np.ndarray, shapes) -> list[np.ndarray]:
    cuts = np.cumsum([q * r for q, r in shapes])[:-1]
    return [part.reshape(s) for part, s in zip(np.split(x, cuts), shapes, strict=True)]


def _flatten(tables) -> np.ndarray:
    return np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])


def _pattern_bound(data) -> int:
    """Most distinct patterns any replicate can have: per missingness mask of the data, the
    smaller of its rows and its cells."""
    masks, counts = np.unique(data.codes >= 0, axis=0, return_counts=True)
    cards = np.asarray(data.cardinalities, dtype=np.float64)
    return int(sum(min(n, np.prod(cards[m])) for m, n in zip(masks, counts, strict=True)))


@dataclass
class _Context:
    s0: Structure
    s1: Structure
    tables0: list
    mask: np.ndarray
    entropy: int | list[int]
    restarts: int
    keep: int | None
    burn_in: int
    max_iter: int
    tol_total: float
    batch: int | None
    block: int
    bound: int
    complete: tuple


def _simulate(ctx: _Context, rng) -> np.ndarray:
    """One replicate: rows drawn from the K-1 fit, then the data's missingness masks."""
    s, n = ctx.s0, ctx.mask.shape[0]
    pi = ctx.tables0[s.root][0]
    classes = rng.choice(s.n_classes, size=n, p=pi / pi.sum())
    codes = np.empty(ctx.mask.shape, dtype=np.int32)
    for j, i in enumerate(s.observed_nodes):
        cdf = np.cumsum(ctx.tables0[i], axis=1)[classes]
        codes[:, j] = np.minimum((rng.random(n)[:, None] > cdf).sum(axis=1),
                                 s.cardinalities[i] - 1)
    return np.where(ctx.mask, -1, codes)


def _fit(ctx: _Context, s, patterns, weights, starts):
    """Best lane per replicate of ``starts`` ``(B, L, D)``: flat tables, loglik, converged.
    The lanes are shared out over the local devices (dispatched asynchronously)."""
    n_rep, n_lanes, dim = starts.shape
    rep = np.repeat(np.arange(n_rep), n_lanes)
    x = starts.reshape(-1, dim)
    spare = patterns.shape[0] - 1  # a zero-weight replicate: its lanes stop at once
    devices = jax.local_devices()
    per = -(-rep.size // len(devices))

    def run(lane_rep, x0, limit):
        pad = per * len(devices) - lane_rep.size
        lane_rep = np.concatenate([lane_rep, np.full(pad, spare)])
        x0 = np.concatenate([x0, np.broadcast_to(x0[:1], (pad, dim))])
        outs = [_run_lanes(s, *jax.device_put((patterns, weights, lane_rep[i * per:][:per],
                                               x0[i * per:][:per]), device),
                           limit, ctx.tol_total, ctx.max_iter, ctx.batch or per, ctx.complete)
                for i, device in enumerate(devices)]
        return tuple(np.concatenate([np.asarray(o[j]) for o in outs])[:rep.size]
                     for j in range(3))

    if ctx.keep is not None and ctx.keep < n_lanes:
        x, ll, _ = run(rep, x, ctx.burn_in)
        order = np.argsort(-np.nan_to_num(ll.reshape(n_rep, n_lanes), nan=-np.inf), axis=1,
                           kind="stable")[:, :ctx.keep]
        chosen = (np.arange(n_rep)[:, None] * n_lanes + order).ravel()
        lane_rep = np.full(rep.size, spare)  # the same shape as the first stage
        lane_rep[:chosen.size] = rep[chosen]
        x0 = np.broadcast_to(x[0], x.shape).copy()
        x0[:chosen.size] = x[chosen]
        x, ll, conv = (o[:chosen.size] for o in run(lane_rep, x0, ctx.max_iter - ctx.burn_in))
        n_lanes = ctx.keep
    else:
        x, ll, conv = run(rep, x, ctx.max_iter)
    best = np.argmax(np.nan_to_num(ll.reshape(n_rep, n_lanes), nan=-np.inf), axis=1)
    index = np.arange(n_rep) * n_lanes + best
    return x[index], ll[index], conv[index]


def _replicates(ids: range, ctx: _Context):
    """Log-likelihoods of both models and failures on replicates ``ids`` (one block; a task
    of :mod:`lcbayes.execution`: its numbers depend on ``ids`` and the seed alone)."""
    B, n, R = ctx.block, len(ids), ctx.restarts
    rngs = [np.random.default_rng(np.random.SeedSequence(ctx.entropy, spawn_key=(1, b)))
            for b in ids]
    found = [unique_rows(_simulate(ctx, rng)) for rng in rngs]
    p_pad = min(ctx.bound, 2 ** math.ceil(math.log2(max(len(f[0]) for f in found))))
    patterns = np.empty((B + 1, p_pad, ctx.mask.shape[1]), dtype=np.int32)
    weights = np.zeros((B + 1, p_pad))
    for i, (p, _, c) in enumerate(found):
        patterns[i], weights[i, :len(p)] = p[np.minimum(np.arange(p_pad), len(p) - 1)], c
    patterns[n:] = patterns[0]  # zero-weight padding replicates (and the spare one)
    words = np.zeros((B, 2, R, 2), dtype=np.uint32)
    words[:n] = [np.random.SeedSequence(ctx.entropy, spawn_key=(2, b)).generate_state(4 * R)
                 .reshape(2, R, 2) for b in ids]
    lanes = np.repeat(np.arange(B), R)

    def random(s, which):
        x = _random_starts(s, jnp.asarray(patterns), jnp.asarray(weights), jnp.asarray(lanes),
                           jnp.asarray(words[:, which].reshape(-1, 2)), ctx.batch or B * R)
        return np.asarray(x).reshape(B, R, -1)

    first = np.broadcast_to(_flatten(ctx.tables0), (B, 1, _flatten(ctx.tables0).size))
    x0 = first if ctx.s0.n_classes == 1 else np.concatenate([first, random(ctx.s0, 0)], axis=1)
    best0, ll0, conv0 = _fit(ctx, ctx.s0, patterns, weights, x0)
    split = [_flatten(_split(ctx.s1, _unflatten(best0[i], ctx.s0.table_shapes),
                             rngs[i] if i < n else np.random.default_rng(0))) for i in range(B)]
    x1 = np.concatenate([np.asarray(split)[:, None], random(ctx.s1, 1)], axis=1)
    _, ll1, conv1 = _fit(ctx, ctx.s1, patterns, weights, x1)
    return ll0[:n], ll1[:n], int((~(conv0 & conv1))[:n].sum())


def _observed_fits(data, k: int, restarts: int, seed, fits):
    if fits is not None:
        if not isinstance(fits, tuple | list) or len(fits) != 2:
            raise ArgumentTypeError("fits must be a pair (fit of K-1 classes, fit of K classes)")
        f0, f1 = (check_fit(f, name, data) for f, name in zip(fits, ("fits[0]", "fits[1]"),
                                                                 strict=True))
        for f, want, name in ((f0, k - 1, "fits[0]"), (f1, k, "fits[1]")):
            assert f.n_classes is not None  # check_fit: a latent class model
            if f.n_classes != want:
                raise ArgumentError(f"{name} has {plural(f.n_classes, 'class', 'classes')}; "
                                    f"blrt(n_classes={k}) needs {want}")
        if f0.structure.observed_names != f1.structure.observed_names:
            raise ArgumentError("fits[0] and fits[1] model different data columns")
        return f0, f1
    s0, s1 = latent_class(data, k - 1), latent_class(data, k)
    f0 = em(s0, data, restarts=restarts, seed=seed)
    rng = np.random.default_rng(np.random.SeedSequence(_entropy(seed), spawn_key=(0,)))
    init = _split(s1, to_tables(s0, f0.params), rng)
    f1 = em(s1, data, restarts=restarts, seed=seed,
            init={name: t.reshape(s1.cpt_shape(i)) for i, (name, t) in
                  enumerate(zip(s1.nodes, init, strict=True))})
    return f0, f1


def _entropy(seed):
    return seed if isinstance(seed, int) else [int(w) for w in np.asarray(seed)]


def blrt(data, n_classes: int, *, replicates: int = 500, restarts: int = 10, seed: Seed = 0,
         alpha: float = 0.05, sequential: bool = True, fits=None,
         fit_restarts: int | None = None, keep: int | None = None, burn_in: int = 10,
         tol: float = 1e-8, max_iter: int = 2000, batch_size: int | None = None,
         executor: Literal["serial", "dask"] | Executor | None = None,
         scheduler: str | None = None, workers: int | None = None) -> BLRTResult:
    """Parametric bootstrap likelihood-ratio test of ``n_classes - 1`` against ``n_classes``
    latent classes (module docstring: estimator, missing values, starts, the stopping rule).

    Args:
        data: a :class:`~lcbayes.Dataset`, DataFrame or code array (``-1`` missing).
        n_classes: classes of the alternative (>= 2); the null has one fewer.
        replicates: most bootstrap replicates ``B`` (>= 1).
        restarts: random EM starts per model and replicate (plus one informed start).
        seed: integer or ``jax.random`` key; the same seed gives the same result.
        alpha: the level for the decision and the sequential rule.
        sequential: stop early at 50, 100, 200, ... replicates once the decision is clear.
        fits: ``(fit of k - 1 classes, fit of k classes)``: ML EM fits to ``data`` to use
            instead of fitting here (e.g. those of :func:`lcbayes.compare`).
        fit_restarts: EM restarts of the fits to the data (default ``max(restarts, 20)``).
        keep, burn_in: two-stage refits: all starts run ``burn_in`` iterations, the ``keep``
            best per replicate and model continue (default: every start to convergence).
        tol, max_iter: EM convergence per refit (change of the log-likelihood per observed row;
            SQUAREM cycles), as :func:`lcbayes.em`'s.
        batch_size: lanes vmapped side by side (default: 1 on a CPU, a whole block on a
            GPU/TPU); results do not depend on it beyond rounding.
        executor, scheduler, workers: where the blocks of :data:`BLOCK` replicates run
            (:func:`lcbayes.execution.executor`): ``None`` / ``"serial"`` here, ``"dask"`` on a
            Dask cluster (``scheduler`` joins a running one, else a ``LocalCluster`` of
            ``workers`` processes); the blocks between two checkpoints of the stopping rule
            run side by side there. The same numbers either way.
    """
    start = time.perf_counter()
    data = as_dataset(data)
    k = check_int(n_classes, "n_classes", 2)
    replicates = check_int(replicates, "replicates", 1)
    restarts = check_int(restarts, "restarts", 1)
    seed = check_seed(seed)
    if not (isinstance(alpha, float | int) and 0 < alpha < 1):
        raise ArgumentError(f"alpha must be a number between 0 and 1, got {alpha!r}")
    keep = None if keep is None else check_int(keep, "keep", 1)
    burn_in = check_int(burn_in, "burn_in", 1)
    max_iter = check_int(max_iter, "max_iter", burn_in + 1)
    tol = check_positive(tol, "tol")
    fit_restarts = max(restarts, 20) if fit_restarts is None else check_int(
        fit_restarts, "fit_restarts", 1)
    if batch_size is None:
        batch_size = 1 if jax.default_backend() == "cpu" else None
    else:
        batch_size = check_int(batch_size, "batch_size", 1)
    f0, f1 = _observed_fits(data, k, fit_restarts, seed, fits)
    data = data_for(f0.structure, data)
    lr = 2.0 * (f1.loglik - f0.loglik)
    ctx = _Context(f0.structure, f1.structure, [np.asarray(t) for t in to_tables(
        f0.structure, f0.params)], data.codes < 0, _entropy(seed), restarts, keep, burn_in,
        max_iter, tol * max(data.n_observed_rows, 1), batch_size, min(BLOCK, replicates),
        _pattern_bound(data), complete_columns(data.patterns))
    checkpoints, c = [], 50
    while c < replicates:
        checkpoints.append(c)
        c *= 2
    ll0, ll1, failed, done, stopped = [], [], 0, 0, False
    with open_executor(executor, scheduler, workers) as runner:
        for point in [*checkpoints, replicates]:
            blocks = [range(first, min(first + ctx.block, point))
                      for first in range(done, point, ctx.block)]
            for a, b, f in runner.map(_replicates, blocks, {"ctx": ctx}, desc="blrt"):
                ll0.append(a)
                ll1.append(b)
                failed += f
            done = point
            lr_b = 2.0 * (np.concatenate(ll1) - np.concatenate(ll0))
            exceed = int(np.sum(lr_b >= lr))
            interval = _clopper_pearson(exceed, done)
            if sequential and done < replicates and (interval[1] < alpha or
                                                     interval[0] > alpha):
                stopped = True
                break
    p = (1 + exceed) / (1 + done)
    return BLRTResult(
        n_classes=k, loglik_null=f0.loglik, loglik_alt=f1.loglik, lr=lr, p_value=p,
        p_value_stderr=math.sqrt(p * (1 - p) / done), p_value_interval=interval, alpha=alpha,
        replicates=replicates, replicates_used=done, stopped_early=stopped, n_exceed=exceed,
        n_failed=failed, replicate_lr=lr_b, replicate_loglik_null=np.concatenate(ll0),
        replicate_loglik_alt=np.concatenate(ll1), restarts=restarts,
        n_parameters_null=f0.n_parameters, n_parameters_alt=f1.n_parameters,
        n_rows=data.n_rows, seconds=time.perf_counter() - start, seed=seed_record(seed))


# ------------------------------------------------------------------ LMR
