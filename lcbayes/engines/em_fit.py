"""The fit of a structure without covariates or groups: what :func:`lcbayes.em` runs unless
``covariates=``, ``distal=`` or ``group=`` is given. Its options are checked here, the random
starts (and ``init=``) run by EM's jitted loop (:mod:`lcbayes.engines.em_loop`) or by one of
Whiley's alternative algorithms (:mod:`lcbayes.engines.algorithms`), each restart to
convergence or in Mplus' two stages (``keep=``), and the best kept as an :class:`EMResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ArgumentError, ArgumentTypeError
from ..inference import complete_columns
from ..jax_setup import on_device
from ..memory import check_restarts_memory
from ..params import PriorSpec, dirichlet_log_density, from_tables, prior_tables, probability_tables
from ..progress import progress_bar
from ..sharding import pattern_shards
from ..structure import Structure
from ..validation import Seed, check_choice, check_int, check_positive, fit_data, prng_key
from .algorithms.runner import algorithm_settings, run_algorithm
from .em_core import in_parts, run_restarts
from .em_loop import final_e_step, order_classes, run_em, start_tables
from .em_result import EMResult
from .padding import class_padding
from .run_record import check_batching, record_fields, start_engine, warn_unconverged

__all__ = ["fit_structure"]


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


def fit_structure(structure: Structure, data, *, restarts: int, seed: Seed, prior: PriorSpec,
                  tol: float, max_iter: int, map_basis: Literal["softmax", "simplex"],
                  batch_size: int | None, keep: int | None, burn_in: int, algorithm: str,
                  eta: float | None, betas: float | Sequence[float] | None,
                  blocks: int | None, pad_classes: int | None,
                  init: Mapping[str, Any] | EMResult | None,
                  standard_errors: Literal["empirical", "observed"] | None,
                  devices: int | Sequence[jax.Device] | None, progress: bool) -> EMResult:
    """:func:`lcbayes.em` of ``structure`` on ``data`` (its options, documented there): the
    best of the restarts, classes ordered by size, with standard errors if asked for."""
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
    starts = start_tables(run_structure, patterns, weights, keys,
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
    est = final_e_step(run_structure, jtables, patterns, observed)
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

