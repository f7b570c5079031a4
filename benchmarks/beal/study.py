"""Beal & Ghahramani (2006) §4.1: every one of the 136 structures scored by MAP, BIC, BICp,
Cheeseman-Stutz and VB in one batched computation per method.

Each structure is the fully connected *host* (:func:`.ghahramani.full_structure`, ``d = 66``)
with some CPT rows tied (:func:`.ghahramani.pooling_matrices`, as a
:class:`lcbayes.inference.tying.RowTying`).
The tying is data, not shape, so one jitted EM program and one jitted VBEM program on the host,
mapped over the 136 ``(q, q)`` pooling matrices and ``1 / group size`` row weights, score every
structure: two compilations per data shape instead of 272. :func:`fit_all` pads the data
patterns to a common count (zero-weight copies), so all 20 data sizes can share one program.

Protocol (Beal & Ghahramani §4.1): per restart the parameters are drawn from the
Dirichlet(1) prior of the structure (in NumPy, outside the compiled programs; the draws of
:func:`lcbayes.vbem` with the same seed), the same draws for EM and VBEM. EM is MAP in the
softmax basis, ``theta = (lambda + N) / (lambda_0 + N)`` (§3.1); VBEM starts with one ordinary
E step at the drawn parameters (§4.1). Both stop when their objective changes by less than
``tol`` per datum or after ``max_iter`` iterations (Beal: ``1e-6``, 1000). Each score keeps the
best of the restarts (3 in the paper).

Scores (natural-log evidence scale, Beal & Ghahramani §3; ``theta^`` the MAP estimate, ``n``
the rows):

* ``MAP``: ``ln p(y | theta^)`` (eq. 29), never alias-corrected;
* ``BIC*``: ``ln p(y | theta^) - d/2 ln n`` (eq. 22), ``d`` of the sub-structure (eq. 23);
* ``BICp*``: ``BIC* + ln p(theta^ | m)``, the Dirichlet density (eq. 3) in the simplex basis,
  every CPT row of the sub-structure once (§4.1);
* ``CS*``: Cheeseman-Stutz (eq. 27), ``ln p(s^, y | m) + ln p(y | theta^) - ln p(s^, y |
  theta^)``, with eq. 5 at the fractional counts of an E step at ``theta^`` (eq. 28), pooled per
  sub-structure row, and ``sum N^ ln theta^`` (eq. 30);
* ``VB*``: the final VBEM lower bound ``F`` (eq. 52);
* ``BIC``, ``BICp``, ``CS``, ``VB``: the starred score ``+ ln S`` (eq. 24, §3.5), ``S`` the
  number of posterior aliases (:func:`.ghahramani.log_alias`, rule
  ``"children"``).

The column names are those of the paper's Table 2 (``*``: no alias correction).

Example::

    from beal import ghahramani as bg, study      # benchmarks/ on sys.path

    data = bg.nested_datasets(seed=0)[480]
    table = study.score_all(data, seed=0)                 # one row per structure
    bg.rank_of(table["VB"].to_numpy(), bg.structure_index(bg.TRUE_CODES))
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.scipy.special import xlogy

from lcbayes import scores
from lcbayes.data import Dataset
from lcbayes.engines.dirichlet import complete_data_log_evidence
from lcbayes.engines.em_loop import run_em
from lcbayes.engines.vbem import run_vbem
from lcbayes.errors import LcbayesError
from lcbayes.inference import e_step, flat, prepare
from lcbayes.inference.tying import pool, row_tying
from lcbayes.params import dirichlet_log_density, from_tables, prior_tables
from lcbayes.structure import Structure

from . import ghahramani as bg

__all__ = ["EM_METHODS", "METHODS", "StudyFit", "chunks", "execute", "fit_all", "score_all"]

#: Every score of the study, uncorrected names (the corrected ones add ``ln S``).
METHODS: tuple[str, ...] = ("MAP", "BIC", "BICp", "CS", "VB")
#: The scores computed from the MAP estimate of EM.
EM_METHODS: tuple[str, ...] = ("MAP", "BIC", "BICp", "CS")


class _EMOut(NamedTuple):
    tables: tuple[jax.Array, ...]    # per node (S, R, q, r) MAP tables (host-shaped, tied)
    loglik: jax.Array                # (S, R) ln p(y | theta^), eq. 29
    objective: jax.Array             # (S, R) MAP objective
    complete_evidence: jax.Array     # (S, R) ln p(s^, y | m), eq. 28
    complete_loglik: jax.Array       # (S, R) ln p(s^, y | theta^), eq. 30
    entropy: jax.Array               # (S, R) sum_i H[p(s_i | y_i, theta^)]
    n_iter: jax.Array
    converged: jax.Array


@partial(jax.jit, static_argnames=("host", "max_iter", "batch_size", "accelerate"))
def _em_study(patterns, weights, priors, tol_total, pooling, row_weights, starts, *,
              host: Structure, max_iter: int, batch_size: int, accelerate: bool) -> _EMOut:
    """MAP EM (softmax basis) of every structure from its tied starting tables ``starts`` (per
    node ``(S, R, q, r)``), then one E step at every estimate for Cheeseman-Stutz
    (eqs 27-30)."""
    evidence = prepare(host, patterns)

    shapes = host.table_shapes

    def one(args):
        groups, _, tables = args
        tying = row_tying(groups, shapes)
        runs = run_em(host, patterns, weights, priors, tol_total, tables, max_iter, max_iter,
                      0.0, tables[0].shape[0], accelerate, tying)

        def completion(tables):
            est = e_step(host, tuple(jnp.log(t) for t in tables), evidence, weights)
            pooled = flat.unflatten(pool(flat.flatten(est.counts), tying), shapes)
            loglik = sum(xlogy(c, t).sum() for c, t in zip(est.counts, tables, strict=True))
            return (complete_data_log_evidence(pooled, priors, (tying.row_weights,)), loglik,
                    weights @ est.hidden_entropy)

        evid, cll, entropy = jax.vmap(completion)(runs.tables)
        return _EMOut(runs.tables, runs.loglik, runs.objective, evid, cll, entropy,
                      runs.n_iter, runs.converged)

    return jax.lax.map(one, (pooling, row_weights, starts), batch_size=batch_size)


@partial(jax.jit, static_argnames=("host", "max_iter", "batch_size"))
def _vb_study(patterns, weights, priors, tol_total, pooling, row_weights, starts, *,
              host: Structure, max_iter: int, batch_size: int):
    """VBEM of every structure from its tied starting tables ``starts`` (per node
    ``(S, R, q, r)``): one E step at them, then VBM and VBE steps (Beal & Ghahramani §4.1)."""
    def one(args):
        groups, _, tables = args
        return run_vbem(host, patterns, weights, priors, tables, tol_total, max_iter,
                        tables[0].shape[0], tying=row_tying(groups, host.table_shapes))

    return jax.lax.map(one, (pooling, row_weights, starts), batch_size=batch_size)


@cache
def _sub_priors(codes: bg.Codes) -> tuple[np.ndarray, ...]:
    """Dirichlet(1) pseudo-count tables of structure ``codes`` (nodes ``s1, s2, y1 .. y4``)."""
    return prior_tables(bg.structure_from_codes(codes), "dirichlet")


def _prior_starts(codes: bg.Codes, seed: int, restarts: int) -> tuple[np.ndarray, ...]:
    """``restarts`` parameter sets of structure ``codes`` drawn from its Dirichlet(1) prior,
    host-shaped ``(restarts, q, r)`` per node (tied rows equal,
    :func:`.ghahramani.host_params`). The draws are those of
    ``lcbayes.vbem(structure_from_codes(codes), data, restarts=restarts, seed=seed)``: one NumPy
    generator, per node in order one gamma draw of shape ``(restarts, *prior.shape)``."""
    rng = np.random.default_rng(seed)
    draws = []
    for lam in _sub_priors(codes):
        gamma = rng.gamma(lam, size=(restarts, *lam.shape))
        draws.append(gamma / gamma.sum(axis=-1, keepdims=True))
    names = (*bg.HIDDEN, *bg.OBSERVED)
    host = [bg.host_params(codes, {name: d[r] for name, d in zip(names, draws, strict=True)})
            for r in range(restarts)]
    return tuple(np.stack([p[name].reshape(-1, p[name].shape[-1]) for p in host])
                 for name in names)


def chunks(per_structure, workers: int) -> list:
    """The ``S`` structures' arrays cut into ``workers`` chunks of ``ceil(S / workers)``, the
    last padded with copies of the last structure (every chunk has one shape)."""
    total = jax.tree_util.tree_leaves(per_structure)[0].shape[0]
    size = -(-total // workers)
    padded = jax.tree_util.tree_map(
        lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], size * workers - total, axis=0)]),
        per_structure)
    return [jax.tree_util.tree_map(lambda x, i=i: x[i * size:(i + 1) * size], padded)
            for i in range(workers)]


def execute(program, shared, chunks, total: int):
    """Run a compiled study on every chunk, concurrently in threads when there are several
    (JAX releases the GIL); returns the NumPy outputs of the first ``total`` structures."""
    def execute(chunk):
        return jax.tree_util.tree_map(np.asarray, program(*shared, *chunk))

    if len(chunks) == 1:
        outputs = [execute(chunks[0])]
    else:
        with ThreadPoolExecutor(len(chunks)) as pool:
            outputs = list(pool.map(execute, chunks))
    return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[:total], *outputs)


def _sub_rows(code: int) -> list[int]:
    """Host rows (``l = 2 s1 + s2``) that stand for the sub-structure's parent configurations
    of an observed node with parent code ``code``: the first row of every tied group."""
    config = bg.CONFIG_MAPS[code]
    return [config.index(k) for k in range(len(set(config)))]


def _sub_tables(codes: bg.Codes, host_tables: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Host-shaped ``(q, r)`` tables of structure ``codes`` as the sub-structure's tables (the
    inverse of :func:`.ghahramani.host_params`)."""
    n_hidden = len(bg.HIDDEN)
    return (*host_tables[:n_hidden],
            *(t[_sub_rows(c)] for c, t in zip(codes, host_tables[n_hidden:], strict=True)))


@dataclass(frozen=True, repr=False)
class StudyFit:
    """Every restart of every structure at one data size (:func:`fit_all`).

    Per-restart arrays have shape ``(n_structures, restarts)`` in the order of ``codes``;
    ``None`` where the method was not run. ``em_tables`` (MAP estimates) and ``vb_alphas``
    (Dirichlet posteriors) are host-shaped ``(n_structures, restarts, q, r)`` per node;
    :meth:`params` and :meth:`posterior` give them in the sub-structure's own CPT shapes.

    Attributes:
        loglik: ``ln p(y | theta^)`` (the MAP score).
        objective: the MAP objective (log-likelihood plus the softmax-basis prior term).
        log_prior: ``ln p(theta^ | m)`` in the simplex basis (eq. 3).
        cs: the Cheeseman-Stutz score ``CS*`` (eq. 27).
        entropy: ``sum_i H[p(s_i | y_i, theta^)]``; ``CS* = ln p(s^, y | m) + entropy``
            (Beal & Ghahramani §3.2), a check of eq. 27.
        elbo: the VBEM bound ``VB*``.
    """

    codes: tuple[bg.Codes, ...]
    n: int
    seed: int
    restarts: int
    tol: float
    max_iter: int
    methods: tuple[str, ...]
    em_tables: tuple[np.ndarray, ...] | None
    loglik: np.ndarray | None
    objective: np.ndarray | None
    log_prior: np.ndarray | None
    complete_evidence: np.ndarray | None
    cs: np.ndarray | None
    entropy: np.ndarray | None
    em_n_iter: np.ndarray | None
    em_converged: np.ndarray | None
    vb_alphas: tuple[np.ndarray, ...] | None
    elbo: np.ndarray | None
    vb_n_iter: np.ndarray | None
    vb_converged: np.ndarray | None
    seconds: dict[str, float]

    def index(self, codes: Sequence[int]) -> int:
        """Row of structure ``codes`` (any labelling)."""
        return self.codes.index(bg.canonical(codes))

    def params(self, codes: Sequence[int], restart: int | None = None) -> dict[str, np.ndarray]:
        """MAP CPTs of ``codes`` (for ``structure_from_codes(codes)``) of one restart (default:
        the one with the highest MAP objective)."""
        if self.em_tables is None:
            raise LcbayesError("EM was not run (methods without MAP, BIC, BICp, CS)")
        return self._sub_structure(codes, restart, self.em_tables, self.objective)

    def posterior(self, codes: Sequence[int], restart: int | None = None
                  ) -> dict[str, np.ndarray]:
        """VB Dirichlet posteriors of ``codes`` (CPT-shaped, for ``structure_from_codes(codes)``)
        of one restart (default: the one with the highest bound)."""
        if self.vb_alphas is None:
            raise LcbayesError("VBEM was not run (methods without VB)")
        return self._sub_structure(codes, restart, self.vb_alphas, self.elbo)

    def _sub_structure(self, codes, restart, host_tables, score) -> dict[str, np.ndarray]:
        """Host tables of one structure and restart (default: the best by ``score``) mapped
        back to the sub-structure's own CPT shapes."""
        i = self.index(codes)
        r = int(np.argmax(score[i])) if restart is None else restart
        sub = bg.canonical(codes)
        return from_tables(bg.structure_from_codes(sub), _sub_tables(
            sub, [t[i, r] for t in host_tables]))

    def to_frame(self) -> pd.DataFrame:
        """One row per structure: ``codes``, ``d``, ``log_alias``, the best-of-restarts scores
        (``MAP``, ``BIC*``, ``BICp*``, ``CS*``, ``VB*``), the alias-corrected ``BIC``, ``BICp``,
        ``CS``, ``VB``, and the iterations of the best VBEM restart and whether it
        converged."""
        d = np.array([bg.n_parameters(c) for c in self.codes])
        log_s = np.array([bg.log_alias(c) for c in self.codes])
        out = {"codes": list(self.codes), "d": d, "log_alias": log_s}
        uncorrected = {}
        if self.loglik is not None:
            bic = np.array([[scores.bic(v, k, self.n) for v in row]
                            for row, k in zip(self.loglik, d, strict=True)])
            uncorrected.update({
                "MAP": self.loglik, "BIC": bic, "BICp": bic + self.log_prior, "CS": self.cs,
            })
        if self.elbo is not None:
            uncorrected["VB"] = self.elbo
        for m in self.methods:
            out["MAP" if m == "MAP" else m + "*"] = np.max(uncorrected[m], axis=1)
        for m in self.methods:
            if m != "MAP":
                out[m] = out[m + "*"] + log_s
        if self.elbo is not None:
            best = np.argmax(self.elbo, axis=1)
            rows = np.arange(len(self.codes))
            out["VB iterations"] = self.vb_n_iter[rows, best]
            out["VB converged"] = self.vb_converged[rows, best]
        return pd.DataFrame(out)

    def to_dict(self) -> dict:
        """JSON-ready summary: the settings, the timings and :meth:`to_frame` as records."""
        frame = self.to_frame()
        frame["codes"] = [list(c) for c in frame["codes"]]
        return {"n": self.n, "seed": self.seed, "restarts": self.restarts, "tol": self.tol,
                "max_iter": self.max_iter, "methods": list(self.methods),
                "seconds": dict(self.seconds), "scores": frame.to_dict(orient="records")}

    def summary(self, truth: Sequence[int] = bg.TRUE_CODES) -> str:
        """Per score: the top structure and the rank (1 = best) of the structure ``truth``."""
        frame = self.to_frame()
        columns = [c for c in frame.columns if c in (*METHODS, *(m + "*" for m in METHODS))]
        lines = [f"{len(self.codes)} structures, n = {self.n}, {self.restarts} restarts; rank of "
                 f"{tuple(truth)}:"]
        target = self.index(truth) if bg.canonical(truth) in self.codes else None
        for c in columns:
            top = frame.loc[frame[c].idxmax()]
            rank = "" if target is None else bg.rank_of(frame[c].to_numpy(), target)
            lines.append(f"  {c:<6} rank {rank!s:>4}   top {top['codes']} "
                         f"(d = {top['d']}, {top[c]:.3f})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        times = ", ".join(f"{k}={v:.2f}" for k, v in self.seconds.items())
        return (f"StudyFit(n={self.n}, structures={len(self.codes)}, restarts={self.restarts}, "
                f"methods={self.methods}, seconds: {times})")


def _check(data: Dataset, restarts: int, tol: float, max_iter: int, methods, n_patterns,
           batch_size, workers) -> tuple[str, ...]:
    if not isinstance(data, Dataset):
        raise LcbayesError(f"data must be a Dataset with columns {bg.OBSERVED}, got "
                           f"{type(data).__name__}")
    for name, value in (("restarts", restarts), ("max_iter", max_iter), ("workers", workers)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise LcbayesError(f"{name} must be an integer >= 1, got {value!r}")
    if not (isinstance(tol, int | float) and tol > 0):
        raise LcbayesError(f"tol must be a positive number, got {tol!r}")
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise LcbayesError(f"methods must be a non-empty subset of {METHODS}, got {methods!r}")
    if n_patterns is not None and n_patterns < data.n_patterns:
        raise LcbayesError(f"n_patterns={n_patterns} is below the data's {data.n_patterns} "
                           "patterns")
    if batch_size is not None and (isinstance(batch_size, bool)
                                   or not isinstance(batch_size, int) or batch_size < 1):
        raise LcbayesError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    return tuple(m for m in METHODS if m in methods)


def _padded(data: Dataset, n_patterns: int | None) -> tuple[jax.Array, jax.Array]:
    """Patterns and weights with zero-weight copies of the first pattern appended up to
    ``n_patterns`` (they add nothing to any count or likelihood). A pattern with no observed
    value gets weight zero too (its factor is one; :func:`lcbayes.vbem` does the same)."""
    patterns = np.asarray(data.patterns)
    weights = np.where((patterns >= 0).any(axis=1), np.asarray(data.counts, float), 0.0)
    extra = 0 if n_patterns is None else n_patterns - len(patterns)
    patterns = np.concatenate([patterns, np.repeat(patterns[:1], extra, axis=0)])
    weights = np.concatenate([weights, np.zeros(extra)])
    return jnp.asarray(patterns), jnp.asarray(weights)


def fit_all(
    data: Dataset,
    seed: int = 0,
    restarts: int = 3,
    tol: float = 1e-6,
    max_iter: int = 1000,
    methods: Sequence[str] = METHODS,
    codes: Sequence[Sequence[int]] | None = None,
    n_patterns: int | None = None,
    batch_size: int | None = None,
    workers: int = 1,
    acceleration: str = "squarem",
) -> StudyFit:
    """Run EM and VBEM on every structure (Beal & Ghahramani §4.1 protocol, module docstring).

    Args:
        data: a data set with columns ``y1 .. y4`` and labels ``0 .. 4``
            (:func:`.ghahramani.nested_datasets`).
        seed: random seed. Every structure draws its starts from a NumPy generator of this
            seed, exactly as ``lcbayes.vbem(structure_from_codes(c), data, restarts, seed)``
            does, so its VB score is that call's bound and does not depend on the other
            ``codes``.
        restarts: prior draws per structure, shared by EM and VBEM (Beal: 3).
        tol: stop when the objective (MAP objective, VB bound) changes by less than this per
            datum (Beal: 1e-6).
        max_iter: iteration limit (Beal: 1000); one iteration of accelerated EM is one SQUAREM
            cycle.
        methods: the scores wanted (a subset of :data:`METHODS`); EM runs for any of
            :data:`EM_METHODS`, VBEM for ``"VB"``.
        codes: the structures (default all 136, :func:`.ghahramani.parent_codes`), stored
            canonically.
        n_patterns: pad the data's patterns to this many (zero-weight copies of one pattern),
            so data sets of several sizes share one compiled program.
        batch_size: structures run side by side (``vmap``); the rest follow one batch after
            another (``lax.map``), each batch stopping with its slowest restart. Default: all
            on a GPU/TPU, one at a time on a CPU (the restarts of a structure always run side by
            side).
        workers: split the structures into this many equal chunks run concurrently in
            threads (one compiled program; JAX releases the GIL), e.g. 2 on a 2-core CPU.
        acceleration: ``"squarem"`` (default) or ``"none"`` for EM, as in :func:`lcbayes.em`;
            both stop on the same plain-EM-step criterion and reach the same fixed points.
    """
    methods = _check(data, restarts, tol, max_iter, methods, n_patterns, batch_size, workers)
    if acceleration not in ("squarem", "none"):
        raise LcbayesError(f"acceleration must be 'squarem' or 'none', got {acceleration!r}")
    codes = tuple(bg.canonical(c) for c in (bg.parent_codes() if codes is None else codes))
    host = bg.full_structure(data)
    data = host.check_data(data)
    patterns, weights = _padded(data, n_patterns)
    priors = tuple(jnp.asarray(a) for a in prior_tables(host, "dirichlet"))
    tying = bg.batched_pooling(codes)
    pooling = tuple(jnp.asarray(tying[name]) for name in host.nodes)
    row_weights = tuple(1.0 / p.sum(axis=-1) for p in pooling)
    drawn = [_prior_starts(c, seed, restarts) for c in codes]
    starts = tuple(jnp.asarray(np.stack(node)) for node in zip(*drawn, strict=True))
    if batch_size is None:
        batch_size = 1 if jax.default_backend() == "cpu" else len(codes)
    n = data.n_observed_rows
    shared = (patterns, weights, priors, tol * n)
    static = {"host": host, "max_iter": int(max_iter),
              "batch_size": min(batch_size, -(-len(codes) // workers))}

    studies = {}
    if any(m in EM_METHODS for m in methods):
        studies["em"] = (_em_study, {**static, "accelerate": acceleration == "squarem"})
    if "VB" in methods:
        studies["vb"] = (_vb_study, static)
    parts = chunks((pooling, row_weights, starts), workers)

    def compile_study(study):
        program, options = study
        return program.lower(*shared, *parts[0], **options).compile()

    start = time.perf_counter()
    with ThreadPoolExecutor(len(studies)) as pool:  # XLA compiles the two programs in parallel
        programs = dict(zip(studies, pool.map(compile_study, studies.values()), strict=True))
    seconds = {"compile": time.perf_counter() - start}
    outputs = {}
    for name, program in programs.items():
        start = time.perf_counter()
        outputs[name] = execute(program, shared, parts, len(codes))
        seconds[name] = time.perf_counter() - start
    em, vb = outputs.get("em"), outputs.get("vb")

    log_prior = cs = None
    if em is not None:
        log_prior = np.array([[dirichlet_log_density(
            _sub_tables(c, [t[i, r] for t in em.tables]), _sub_priors(c))
            for r in range(restarts)] for i, c in enumerate(codes)])
        cs = np.vectorize(scores.cheeseman_stutz)(em.loglik, em.complete_evidence,
                                                  em.complete_loglik)
    return StudyFit(
        codes=codes, n=n, seed=int(seed), restarts=int(restarts), tol=float(tol),
        max_iter=int(max_iter), methods=methods,
        em_tables=None if em is None else em.tables,
        loglik=None if em is None else em.loglik,
        objective=None if em is None else em.objective,
        log_prior=log_prior,
        complete_evidence=None if em is None else em.complete_evidence,
        cs=cs,
        entropy=None if em is None else em.entropy,
        em_n_iter=None if em is None else em.n_iter,
        em_converged=None if em is None else em.converged,
        vb_alphas=None if vb is None else vb.alphas,
        elbo=None if vb is None else vb.elbo,
        vb_n_iter=None if vb is None else vb.n_iter,
        vb_converged=None if vb is None else vb.converged,
        seconds=seconds,
    )


def score_all(
    data: Dataset,
    seed: int = 0,
    restarts: int = 3,
    tol: float = 1e-6,
    max_iter: int = 1000,
    methods: Sequence[str] = METHODS,
    **options,
) -> pd.DataFrame:
    """Scores of every structure at one data size: :meth:`StudyFit.to_frame` of
    :func:`fit_all` (same arguments; ``options`` are its keyword-only extras)."""
    return fit_all(data, seed=seed, restarts=restarts, tol=tol, max_iter=max_iter,
                   methods=methods, **options).to_frame()

