"""Expectation-maximisation for maximum-likelihood and MAP estimates, many restarts at once.

E step: exact inference (:mod:`lcbayes.inference`) gives the expected family counts
``N_ilk = sum_p w_p P(x_i = k, pa_i = l | y_p, theta)`` (Beal & Ghahramani eq. 19).
M step:

* ML (eq. 18): ``theta_ilk = N_ilk / N_il``;
* MAP in the softmax basis (default for a prior; what Beal & Ghahramani ran, §3.1, after MacKay
  1998; Karčiauskas eq. 3.6): ``theta_ilk = (N_ilk + lambda_ilk) / (N_il + lambda_il)``, always
  interior, valid for any ``lambda > 0``;
* MAP in the simplex basis (eq. 20):
  ``theta_ilk = (N_ilk + lambda_ilk - 1) / (N_il + lambda_il - r_i)``,
  the mode of the Dirichlet posterior density; needs ``lambda >= 1``.

The objective ``ln p(y | theta) + sum (lambda - 1 + b) ln theta`` (``b = 1`` in the softmax
basis, no prior term for ML) never decreases. A row whose counts are all zero (an empty class)
stays uniform, so zero counts never give NaN.

Every restart is a ``lax.while_loop`` of SQUAREM cycles (:mod:`lcbayes.engines.squarem`) in one
jitted program, ``batch_size`` restarts vmapped side by side; each stops when its objective
changes by less than ``tol`` per observed row, or after ``max_iter`` iterations. A random start
gives every data pattern random class responsibilities (Dirichlet(1) per hidden node) and takes
one ML M step from them, so starts lie near the data's margins. For latent class models the
classes of the result are ordered by decreasing size.

The jitted core :func:`run_em` also fits structures with tied CPT rows
(:mod:`lcbayes.inference.tying`); :func:`em` never ties rows.

``algorithm=`` swaps the SQUAREM or plain EM loop for another of Whiley (1999) chapter 2's
algorithms (:mod:`lcbayes.engines.algorithms`: incremental EM, (generalised) conjugate
gradients, Helmbold et al.'s updates, approximate conjugate gradients, deterministic annealing
EM), each run from the same starts by :func:`~lcbayes.engines.algorithms.run_algorithm` and
giving the same :class:`EMRuns` and :class:`EMResult`.

Example::

    data = lcb.Dataset.from_csv("carcinoma.csv")
    fit = lcb.em(lcb.latent_class(data, 3), data, restarts=20, seed=0)
    print(fit.summary())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from ..errors import ArgumentError, ArgumentTypeError
from ..inference import complete_columns, e_step, flat, flat_e_step, log_marginal, prepare
from ..inference.tying import RowTying, entry_weights, pool
from ..jax_setup import on_device
from ..memory import check_restarts_memory
from ..params import (
    PriorSpec,
    dirichlet_log_density,
    from_tables,
    prior_tables,
    probability_tables,
)
from ..program_cache import cached_jit
from ..progress import progress_bar
from ..sharding import pattern_shards
from ..structure import Structure
from ..validation import Seed, check_choice, check_int, check_positive, fit_data, prng_key
from . import squarem
from .algorithms.runner import algorithm_settings, run_algorithm
from .em_core import EMRuns, in_parts, m_step, run_restarts, starts
from .em_result import EMResult
from .padding import class_padding
from .run_record import check_batching, record_fields, start_engine, warn_unconverged

if TYPE_CHECKING:
    from .groups.layout import Invariance
    from .groups.result import GroupResult
    from .regression.fit import DistalType
    from .regression.result import RegressionResult

__all__ = ["EMResult", "EMRuns", "em", "em_restarts", "em_runner", "order_classes", "run_em"]


def _log(tables):
    return tuple(jnp.log(t) for t in tables)


_starts = cached_jit(starts, static_argnames=("structure",))


_TINY = 1e-300  # floor for logs of probabilities in the extrapolation (exact zeros allowed)


def em_runner(structure: Structure, patterns, weights, alphas, tol_total, limit, max_iter: int,
              shift: float, accelerate: bool, tying: RowTying | None = None,
              complete: tuple[int, ...] = (), held: tuple[jax.Array, jax.Array] | None = None,
              vmapped: bool = False):
    """EM from one start, traceable: ``run(tables) -> EMRuns`` of that start (no batch axis)
    for at most ``limit`` (<= ``max_iter``, the history length) iterations.

    Plain EM, or (``accelerate``) SQUAREM cycles extrapolating the log tables, renormalised row
    by row; either way the objective never decreases. ``alphas`` are the prior pseudo-count
    tables (``None``: ML) and ``shift`` is ``b - 1`` of the module docstring.

    ``tying`` (:mod:`lcbayes.inference.tying`) pools the counts of tied rows and counts every
    group's prior term once; the starts must already be tied. ``complete``
    (:func:`~lcbayes.inference.complete_columns` of ``patterns``) folds the iterations' E
    steps; the final log-likelihoods use the unfolded evidence. ``held = (active, values)``
    (flat, :meth:`.padding.ClassPadding.held`) holds the entries of switched-off classes at
    ``values`` (weight exactly zero) and leaves them out of the prior term. ``vmapped``: the
    caller vmaps ``run`` (the E step then stays in log space, :func:`flat_e_step`)."""
    evidence = prepare(structure, patterns, complete)
    shapes = structure.table_shapes
    weights_of_entries = entry_weights(tying, shapes)
    prior = None if alphas is None else flat.flatten(alphas) + shift  # lambda - 1 + b
    active, values = (None, None) if held is None else held
    if prior is not None and active is not None:  # active is None exactly when held is
        prior = jnp.where(active, prior, 0.0)

    def hold(x):
        return x if held is None else jnp.where(active, x, values)

    def from_free(u):
        return hold(jnp.exp(flat.log_normalise(u if held is None else
                                               jnp.where(active, u, -jnp.inf), shapes)))

    def objective(x, log_marg):
        if prior is None:
            return weights @ log_marg
        terms = xlogy(prior, x)
        return weights @ log_marg + (terms if weights_of_entries is None
                                     else weights_of_entries * terms).sum()

    def step(x):
        log_marg, counts = flat_e_step(structure, jnp.log(x), evidence, weights,
                                       vmapped=vmapped)
        return objective(x, log_marg), hold(m_step(pool(counts, tying), prior, shapes))

    def run(tables):
        x, history, n_iter, done = squarem.iterate(
            step, flat.flatten(tables), lambda t: jnp.log(jnp.maximum(t, _TINY)),
            from_free, tol_total, limit, max_iter,
            accelerate, weights_of_entries)
        log_marg = log_marginal(structure, _log(flat.unflatten(x, shapes)),
                                prepare(structure, patterns))
        return EMRuns(flat.unflatten(x, shapes), history, n_iter, done, weights @ log_marg,
                      objective(x, log_marg))

    return run


@partial(cached_jit, static_argnames=("structure", "max_iter", "shift", "batch_size",
                                     "accelerate", "complete"))
def run_em(structure: Structure, patterns, weights, alphas, tol_total, starts, limit,
           max_iter: int, shift: float, batch_size: int, accelerate: bool,
           tying: RowTying | None = None, complete: tuple[int, ...] = (),
           held: tuple[jax.Array, jax.Array] | None = None) -> EMRuns:
    """The jitted core: :func:`em_runner` from every start in ``starts`` (a batch of tables),
    ``batch_size`` restarts vmapped at a time."""
    run = em_runner(structure, patterns, weights, alphas, tol_total, limit, max_iter, shift,
                    accelerate, tying, complete, held, vmapped=batch_size > 1)
    return squarem.map_restarts(run, starts, batch_size)


def em_restarts(structure: Structure, data, *, restarts: int, seed: Seed = 0,
                tol: float = 1e-8, max_iter: int = 2000) -> EMRuns:
    """Every restart of a maximum-likelihood fit (SQUAREM, :func:`em`'s random starts and
    stopping rule), NumPy, unordered: the optima a data-informed reference is built from
    (:mod:`lcbayes.samplers.reference`). ``data`` must already fit ``structure``."""
    check_restarts_memory(structure, restarts, max_iter)
    patterns, weights = on_device(data.patterns), on_device(data.counts)
    starts = _starts(structure, patterns, weights, jax.random.split(prng_key(seed), restarts))
    batch_size = check_batching(None, restarts)
    tol_total = tol * max(data.n_observed_rows, 1)

    def run(batch, limit):
        return run_em(structure, patterns, weights, None, tol_total, batch, limit, max_iter,
                      0.0, batch_size, True, complete=complete_columns(data.patterns))

    return run_restarts(run, starts, max_iter, None, 1)[0]


@partial(cached_jit, static_argnames=("structure",))
def _final_e_step(structure: Structure, tables, patterns, weights):
    """The E step at the fitted tables, their logs taken inside the compiled program."""
    return e_step(structure, _log(tables), patterns, weights)


def _init_tables(structure: Structure, init) -> tuple[np.ndarray, ...] | None:
    """The tables of ``em(init=...)``: an EM fit's or a params mapping's (checked)."""
    if init is None:
        return None
    if isinstance(init, EMResult):
        if init.structure != structure:
            raise ArgumentError("init is an EM fit of a different structure")
        init = init.params
    if not isinstance(init, Mapping):
        raise ArgumentTypeError(f"init must be parameters {{node: CPT}} or an EMResult, got "
                                f"{type(init).__name__}")
    return probability_tables(structure, init, "init")


def order_classes(structure: Structure, tables, by=None) -> list[np.ndarray]:
    """Latent class models: ``tables`` (CPTs, or tables laid out like them, e.g. expected
    counts) with the classes reordered by decreasing weight in ``by`` (default: ``tables``
    themselves), the canonical labelling of every EM fit; other kinds unchanged."""
    tables = [np.asarray(t) for t in tables]
    if structure.kind != "latent_class":
        return tables
    root = structure.root
    order = np.argsort(-np.asarray((tables if by is None else by)[root])[0], kind="stable")
    return [t[:, order] if i == root else t[order] for i, t in enumerate(tables)]


def _check_regression_route(*, group, distal, init, unsupported: dict[str, bool]) -> None:
    """Refuse the options that ``em`` with covariates, a distal outcome or groups does not take:
    a latent class regression (:mod:`lcbayes.engines.regression`) and a multiple-group model
    (:mod:`lcbayes.engines.groups`) are fitted by maximum likelihood with SQUAREM-accelerated
    EM."""
    from .regression.result import RegressionResult
    refused = [k for k, v in unsupported.items() if v]
    what = "group" if group is not None else "covariates or distal"
    if refused:
        raise ArgumentError(f"{', '.join(refused)} cannot be given with {what}: the model is "
                            "fitted by maximum likelihood with SQUAREM-accelerated EM; leave "
                            "them out")
    if group is not None and distal is not None:
        raise ArgumentError("distal cannot be given with group: fit the multiple-group model, "
                            "then relate its classes to the outcome (lcb.three_step)")
    if group is not None and init is not None:
        raise ArgumentError("init cannot be given with group: the restarts start at random")
    if init is not None and not isinstance(init, RegressionResult):
        raise ArgumentError("init must be a RegressionResult of the same model (a fit "
                            f"with covariates), got {type(init).__name__}")


@overload
def em(structure: Structure, data, *, restarts: int = ..., seed: Seed = ...,
       prior: PriorSpec = ..., tol: float = ..., max_iter: int = ...,
       map_basis: Literal["softmax", "simplex"] = ..., batch_size: int | None = ...,
       keep: int | None = ..., burn_in: int = ..., algorithm: str = ..., eta: float | None = ...,
       betas: float | Sequence[float] | None = ..., blocks: int | None = ...,
       pad_classes: int | None = ..., init: Mapping[str, Any] | EMResult | None = ...,
       standard_errors: Literal["empirical", "observed"] | None = ...,
       devices: int | Sequence[jax.Device] | None = ..., progress: bool = ...,
       covariates: None = ..., distal: None = ...) -> EMResult: ...
@overload
def em(structure: Structure, data, *, restarts: int = ..., seed: Seed = ..., tol: float = ...,
       max_iter: int = ..., batch_size: int | None = ..., init: RegressionResult | None = ...,
       standard_errors: Literal["empirical", "observed"] | None = ..., covariates: Any = ...,
       distal: Any = ..., distal_type: DistalType = ...) -> RegressionResult: ...
@overload
def em(structure: Structure, data, *, restarts: int = ..., seed: Seed = ..., tol: float = ...,
       max_iter: int = ..., batch_size: int | None = ...,
       standard_errors: Literal["empirical", "observed"] | None = ..., covariates: Any = ...,
       group: Any, invariance: Invariance = ...) -> GroupResult: ...


def em(
    structure: Structure,
    data,
    *,
    restarts: int = 10,
    seed: Seed = 0,
    prior: PriorSpec = None,
    tol: float = 1e-8,
    max_iter: int = 2000,
    map_basis: Literal["softmax", "simplex"] = "softmax",
    batch_size: int | None = None,
    keep: int | None = None,
    burn_in: int = 10,
    algorithm: str = "squarem",
    eta: float | None = None,
    betas: float | Sequence[float] | None = None,
    blocks: int | None = None,
    pad_classes: int | None = None,
    init: Mapping[str, Any] | EMResult | RegressionResult | None = None,
    standard_errors: Literal["empirical", "observed"] | None = None,
    devices: int | Sequence[jax.Device] | None = None,
    progress: bool = False,
    covariates=None,
    distal=None,
    distal_type: DistalType = "auto",
    group=None,
    invariance: Invariance = "full",
) -> EMResult | RegressionResult | GroupResult:
    """Fit ``structure`` to ``data`` by EM (or another algorithm of Whiley 1999 ch. 2) from
    ``restarts`` random starts; keep the best.

    Args:
        structure: the model (:func:`~lcbayes.latent_class`, :func:`~lcbayes.hlc`,
            :func:`~lcbayes.dag`).
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes);
            missing values are marginalised.
        restarts: number of random starting points.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            result.
        prior: ``None`` for maximum likelihood; otherwise a Dirichlet prior (``"dirichlet"`` for
            pseudo-count 1, a number, or ``{node: pseudo-counts}``) for a MAP estimate.
        tol: convergence threshold on the change of the objective per observed row.
        max_iter: iteration limit per restart.
        map_basis: ``"softmax"`` (add-lambda estimate) or ``"simplex"`` (posterior mode, needs
            pseudo-counts >= 1); ignored for maximum likelihood.
        batch_size: restarts run side by side (``vmap``); the rest run one batch after another,
            each restart stopping on its own. Default: all of them on a GPU/TPU, one at a time
            on a CPU, where batching gains little, every restart would run as long as the
            slowest, and (many patterns) the E step's rarely needed log-space fallback
            (:mod:`lcbayes.inference.coded`) would be computed at every step. Results do not
            depend on it.
        keep: if given, a two-stage run: all ``restarts`` starts run ``burn_in`` iterations,
            then only the ``keep`` best continue to convergence (like Mplus'
            ``STARTS = restarts keep``). Much faster when some starts stall near saddle points;
            ``None`` (default) runs every restart to convergence.
        burn_in: iterations of the first stage when ``keep`` is given.
        algorithm: ``"squarem"`` (default): every iteration is one SQUAREM cycle (two EM
            steps, a squared extrapolation and one EM step from it, with a monotone
            safeguard; up to three E steps), which cuts the iterations of slowly converging
            starts many-fold; ``"em"``: plain EM, one E step per iteration (both stop on the
            same plain-EM-step criterion and reach the same fixed points); or one of Whiley's
            chapter 2 (:mod:`lcbayes.engines.algorithms`): ``"iem"`` (incremental EM),
            ``"cg"``, ``"gcg"`` (conjugate gradients, generalised CG), ``"em_eta"``, ``"eg"``,
            ``"gp"`` (Helmbold et al.), ``"acg_phi"``, ``"acg_theta"``, ``"acg_theta_chi"``
            (approximate CG), ``"daem"`` (deterministic annealing EM). Each stops when the
            objective changes by less than ``tol`` per row over an iteration. A prior needs
            em, squarem, iem, daem, cg or gcg; ``pad_classes`` em, squarem, iem or daem.
        eta: the learning rate of em_eta, eg, gp and the acg family (per-observation scale),
            fixed as in the thesis; ``None`` (default): adaptive, from
            :data:`lcbayes.engines.algorithms.DEFAULT_ETA`, and safeguarded (ours): each
            proposal is compared with the EM step from the same point and the better one taken
            (so the method is monotone and gains at least EM's step per iteration, at one more
            gradient evaluation); the rate grows by 1.2 after a proposal that gained and halves
            after one that lost.
        betas: DAEM's inverse temperatures: increasing values in ``(0, 1]`` ending at 1, or a
            number ``beta_min`` for a geometric schedule of 10 from it to 1 (``None``: from 0.5).
        blocks: IEM's number of blocks of data patterns (``None``: at most 100; the number of
            patterns visits one pattern at a time).
        pad_classes: run a latent class model inside the compiled program of the model with
            ``pad_classes`` classes, the extra classes switched off
            (:mod:`lcbayes.engines.padding`): fits of several sizes then compile once. The
            same fit up to rounding and the convergence tolerance (what
            :func:`lcbayes.compare` does).
        init: one more start, given: parameters ``{node: CPT}`` of ``structure`` (e.g. a
            model found by :func:`lcbayes.learn_classes`, or published estimates) or an EM
            fit of it. It runs after the random starts, in the same compiled program;
            ``restarts=0`` runs it alone (then the fit is EM from ``init``, with every score
            of :class:`EMResult`).
        standard_errors: also compute the standard errors of the estimates from the
            ``"empirical"`` information (poLCA's) or the ``"observed"`` information
            (:mod:`lcbayes.information`); ``None`` (default): not (they cost one more
            compiled program per structure).
        devices: ``None`` (default): one device, JAX's default; a number ``n``: the first
            ``n`` of ``jax.devices()``; or a sequence of ``jax.Device``. The data patterns are
            split over them and the sums all-reduced (:mod:`lcbayes.sharding`): the same fit
            to rounding, on several GPUs (not with ``algorithm="iem"``).
        progress: show a progress bar over the restarts (a plain line now and then where
            the output is a log): the restarts then run in
            :data:`~lcbayes.engines.em_core.PROGRESS_PARTS` parts of one compiled
            size, one after another; the same fit.
        covariates: a latent class regression (:mod:`lcbayes.engines.regression`): class membership
            ``softmax(x' beta)`` on these covariates, fitted jointly with the item tables
            (one step, poLCA's model), returning a
            :class:`~lcbayes.RegressionResult`. A DataFrame of the covariate columns
            (one row per data row, in order), column name(s) of ``data`` when it is a
            DataFrame, or :func:`lcbayes.covariate_design`'s ``Covariates``. Text columns
            are categorical (indicators against the first level), numbers enter as they are;
            rows with a missing covariate are left out with a warning. Takes ``restarts``,
            ``seed``, ``tol``, ``max_iter``, ``batch_size``, ``standard_errors`` and ``init``
            (a ``RegressionResult``); the other options are refused.
        distal: a distal outcome fitted in the same step (a latent class regression, with or
            without covariates): one column (a column name of a DataFrame ``data``, a Series or
            a one-column DataFrame), class-dependent and reported apart from the indicators
            (``RegressionResult.distal_table``); missing values are marginalised.
        distal_type: ``"auto"`` (numbers continuous: a normal distribution per class; text,
            booleans, ``Categorical`` categorical), ``"categorical"`` or ``"continuous"``.
        group: a multiple-group latent class model (:mod:`lcbayes.engines.groups`): class
            prevalences per group of this column (a column name of a DataFrame ``data``, or
            one label per row), returning a :class:`~lcbayes.GroupResult`. Rows without a
            group or with every item missing are left out with a warning. Takes
            ``invariance``, ``covariates`` (common slopes on top of the group's
            prevalences), ``restarts``, ``seed``, ``tol``, ``max_iter``, ``batch_size`` and
            ``standard_errors``.
        invariance: with ``group``: ``"full"`` (item tables shared by the groups),
            ``"none"`` (every item's table group-specific; the classes are then aligned
            across groups by their item profiles) or the names of the group-specific items
            (partial invariance).
    """
    if group is not None or covariates is not None or distal is not None:
        _check_regression_route(
            group=group, distal=distal, init=init,
            unsupported={"prior": prior is not None, "keep": keep is not None,
                         "algorithm": algorithm != "squarem",
                         "pad_classes": pad_classes is not None, "devices": devices is not None,
                         "progress": bool(progress), "blocks": blocks is not None,
                         "eta": eta is not None, "betas": betas is not None})
        if group is not None:
            from .groups.fit import fit_groups
            return fit_groups(structure, data, group, invariance=invariance,
                              covariates=covariates, restarts=restarts, seed=seed, tol=tol,
                              max_iter=max_iter, batch_size=batch_size,
                              standard_errors=standard_errors)
        from .regression.fit import fit_regression
        return fit_regression(structure, data, covariates, distal=distal,
                              distal_type=distal_type, init=cast("RegressionResult | None", init),
                              restarts=restarts, seed=seed,
                              tol=tol, max_iter=max_iter, batch_size=batch_size,
                              standard_errors=standard_errors)
    if invariance != "full":
        raise ArgumentError("invariance= needs group=: name the column whose groups the item "
                            "profiles may differ between")
    start, seed = start_engine(structure, seed)
    restarts = check_int(restarts, "restarts", 0 if init is not None else 1)
    init_tables = _init_tables(structure, init)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    keep = None if keep is None else check_int(keep, "keep", 1, restarts + (init is not None))
    burn_in = check_int(burn_in, "burn_in", 1)
    check_choice(map_basis, "map_basis", ("softmax", "simplex"))
    if standard_errors is not None:
        check_choice(standard_errors, "standard_errors", ("empirical", "observed"))
    batch_size = check_batching(batch_size, restarts + (init is not None))
    check_restarts_memory(structure, restarts, max_iter)
    padding = class_padding(structure, pad_classes)
    run_structure = structure if padding is None else padding.padded
    data = fit_data(structure, data)
    shards = pattern_shards(devices, data.n_patterns)
    alphas = prior_tables(structure, prior)
    settings = algorithm_settings(algorithm, prior=alphas is not None,
                                  padded=padding is not None, eta=eta, betas=betas,
                                  blocks=blocks, n_patterns=data.n_patterns)
    if shards is not None and settings.algorithm == "iem":
        raise ArgumentError("devices cannot be given with algorithm='iem': it visits blocks of "
                            "patterns one after another, so there is nothing to split; leave "
                            "devices=None")
    if alphas is not None and map_basis == "simplex" and min(a.min() for a in alphas) < 1:
        raise ArgumentError(
            "map_basis='simplex' needs every prior pseudo-count >= 1 (the posterior mode is on "
            "the boundary otherwise); use map_basis='softmax' or a larger prior")
    shift = -1.0 if map_basis == "simplex" else 0.0
    n_obs = max(data.n_observed_rows, 1)
    patterns = jnp.asarray(data.patterns)
    weights = jnp.asarray(data.counts)
    keys = jax.random.split(prng_key(seed), max(restarts, 1))
    alpha_arrays = None if alphas is None else tuple(
        jnp.asarray(a) for a in (alphas if padding is None else padding.pad(alphas, 0.0, 0.0)))
    held = None if padding is None else tuple(jnp.asarray(a) for a in padding.held())
    starts = _starts(run_structure, patterns, weights, keys,
                     None if padding is None else jnp.asarray(padding.class_log_mask()))
    if init_tables is not None:  # after the random starts (none if restarts=0)
        given = init_tables if padding is None else padding.pad(init_tables)
        starts = tuple(jnp.concatenate([s[:restarts], jnp.asarray(t)[None]])
                       for s, t in zip(starts, given, strict=True))
    restarts = starts[0].shape[0]
    if shards is not None:  # starts drawn from the unpadded patterns (lcbayes.sharding)
        patterns, weights = shards.place(data.patterns, data.counts)
        starts, alpha_arrays, held = shards.replicate((starts, alpha_arrays, held))
    args = (run_structure, patterns, weights, alpha_arrays, tol * n_obs)
    fold = {"complete": complete_columns(data.patterns), "held": held}
    if settings.algorithm in ("em", "squarem"):
        def run(batch, limit):
            return run_em(*args, batch, limit, max_iter, shift, batch_size,
                          settings.algorithm == "squarem", **fold)
    else:
        def run(batch, limit):
            return run_algorithm(*args, batch, limit, max_iter, shift, batch_size,
                                 settings.algorithm, settings.eta,
                                 None if settings.betas is None else jnp.asarray(settings.betas),
                                 settings.blocks, adaptive=settings.adaptive, **fold)
    staged = keep is not None and keep < restarts and burn_in < max_iter
    with progress_bar(progress, total=restarts + (keep if keep is not None and staged else 0),
                      desc="EM restarts", unit="start") as bar:
        runs, kept = run_restarts(run if bar is None else in_parts(run, bar), starts, max_iter,
                                  keep, burn_in)
    best = int(np.nanargmax(runs.objective))
    best_tables = [t[best] for t in runs.tables]
    tables = order_classes(structure, best_tables if padding is None
                            else list(padding.unpad(best_tables)))
    jtables = tuple(on_device(t) for t in (tables if padding is None else padding.pad(tables)))
    observed = np.where((np.asarray(patterns) >= 0).any(axis=1), np.asarray(weights),
                        0.0)  # all-missing rows: 1
    est = _final_e_step(run_structure, jtables, patterns, observed)
    if shards is not None:
        est, observed = shards.unpad_e_step(est), observed[:data.n_patterns]
    if padding is not None:
        est = padding.unpad_e_step(est)
    result = EMResult(
        params=from_tables(structure, tables),
        loglik=float(runs.loglik[best]),
        objective=float(runs.objective[best]),
        estimator="ml" if alphas is None else "map",
        map_basis=None if alphas is None else map_basis,
        log_prior=None if alphas is None else dirichlet_log_density(tables, alphas),
        restart_logliks=runs.loglik,
        restart_objectives=runs.objective,
        restart_kept=kept,
        entropy=float(observed @ np.asarray(est.hidden_entropy)),
        expected_counts=from_tables(structure, est.counts),
        score_prior=from_tables(structure, alphas if alphas is not None
                                else prior_tables(structure, "dirichlet")),
        algorithm=settings.algorithm,
        **record_fields(structure, data, runs, best, est.hidden_marginals, start, seed,
                        restarts, tol, max_iter),
    )
    warn_unconverged(result, "EM" if settings.algorithm in ("em", "squarem")
                     else f"EM ({settings.algorithm})")
    return result if standard_errors is None else result.with_standard_errors(
        data, method=standard_errors)

