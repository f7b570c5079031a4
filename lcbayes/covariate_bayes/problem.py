"""The data of a Bayesian latent class regression: checked arguments, the standardised design,
the distal outcome, the cells as :class:`~.model.BayesData`, and the starting point of
the chains (the maximum likelihood fit of :func:`lcbayes.em`, which also fixes the class
labels the draws are reported in).

The rows used are those with every covariate (the others are left out with a warning, as by
:func:`lcbayes.em`); a missing item or outcome is summed out. Numeric design columns are
centred and scaled, indicators centred (:mod:`.model`). The cells are padded with
zero-count cells to a power of two (at least :data:`MIN_CELLS`), so that data sets of one
shape share the compiled programs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeAlias

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..encoding import MISSING
from ..engines.regression.cells import make_cells, softmax
from ..engines.regression.design import INTERCEPT, Covariates
from ..engines.regression.fit import DistalType, resolve_covariates, resolve_distal
from ..errors import ArgumentError, DataError
from ..structure import Structure
from ..validation import Seed, check_choice, fit_data
from .model import (
    MAX_CLASSES,
    BayesData,
    Drop,
    ModelSpec,
    sum_to_zero_basis,
)

__all__ = ["MIN_CELLS", "CovariateSpec", "DistalSpec", "Outcome", "Problem", "Start",
           "build_problem", "check_drop", "class_shares", "fit_start"]

#: The fewest cells a program is compiled for.
MIN_CELLS = 32

#: What ``covariates=`` takes: a DataFrame of covariate columns, column name(s) of the data,
#: a :class:`~.design.Covariates`, or ``None`` (intercept-only membership).
CovariateSpec: TypeAlias = pd.DataFrame | Sequence[str] | str | Covariates | None
#: What ``distal=`` takes: a column name of the data, a Series, a one-column DataFrame, ``None``.
DistalSpec: TypeAlias = str | pd.Series | pd.DataFrame | None


@dataclass(frozen=True)
class Outcome:
    """A distal outcome: its column, kind, categories (categorical) or standardisation
    (continuous: mean and SD of its observed values), observed values among the rows used."""

    name: str
    kind: str
    labels: tuple[str, ...]
    mean: float
    sd: float
    n_observed: int


@dataclass(frozen=True)
class Problem:
    """Everything the model needs of one data set (module docstring); ``distal_values``: the
    outcome of the rows used (standardised, NaN missing; or codes, -1 missing)."""

    structure: Structure
    spec: ModelSpec
    data: BayesData
    covariates: Covariates
    centre: np.ndarray
    scale: np.ndarray
    distal: Outcome | None
    n_rows: int
    n_used_rows: int
    distal_values: np.ndarray = field(repr=False)

    @property
    def log_jacobian(self) -> float:
        """``-n_z ln SD``: the evidence of a continuous outcome in its own units minus that of
        the standardised outcome (0 otherwise)."""
        d = self.distal
        return -d.n_observed * float(np.log(d.sd)) if d and d.kind == "continuous" else 0.0

    def with_options(self, drop: Drop, prior_scale: float) -> BayesData:
        """The data arrays of the model with ``drop`` left out, at ``prior_scale``."""
        mask = np.ones(self.spec.n_design)
        if drop == "covariates":
            mask[1:] = 0.0
        return self.data._replace(slope_mask=jnp.asarray(mask),
                                  tie=jnp.asarray(float(drop == "distal")),
                                  prior_scale=jnp.asarray(float(prior_scale)))


class Start(NamedTuple):
    """The chains' starting point: ``values``, constrained values per site of the full model
    (and ``<site>_pooled`` for a class-independent outcome); ``reference``: ``(K, F)`` item
    probabilities per class of that fit, to align draws to its labels."""

    values: dict[str, np.ndarray]
    reference: np.ndarray

    def for_model(self, drop: Drop) -> dict[str, np.ndarray]:
        """The starting values of the model with ``drop`` left out: the cut slopes at 0, a
        class-independent outcome at its overall values."""
        values = dict(self.values)
        if drop == "covariates":
            values["class_effects"] = np.concatenate(
                [values["class_effects"][:1], np.zeros_like(values["class_effects"][1:])])
        if drop == "distal":
            for name in ("distal_probs", "distal_mean", "distal_sd"):
                if name in values:
                    pooled = values[name + "_pooled"]
                    values[name] = np.broadcast_to(pooled, values[name].shape).copy()
        return {k: v for k, v in values.items() if not k.endswith("_pooled")}


def check_drop(drop, problem: Problem, name: str = "drop") -> Drop:
    """``drop`` (the argument ``name``) checked against what the model has."""
    if drop is None:
        return None
    check_choice(drop, name, ("covariates", "distal"))
    if drop == "covariates" and problem.spec.n_design == 1:
        raise ArgumentError(f"{name}='covariates' needs covariates (the model has none)")
    if drop == "distal" and problem.distal is None:
        raise ArgumentError(f"{name}='distal' needs a distal outcome (distal=...)")
    return drop


def _standardise(cov: Covariates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The standardised design of the rows used and its centres and scales."""
    x = cov.matrix[cov.kept]
    numeric = [False]
    for column in cov.columns:
        numeric += [False] * (len(cov.levels[column]) - 1) if column in cov.levels else [True]
    centre = np.where(np.arange(x.shape[1]) > 0, x.mean(axis=0), 0.0)
    scale = np.where(np.asarray(numeric), x.std(axis=0), 1.0)
    return (x - centre) / scale, centre, scale


def fit_start(problem: Problem, data, *, distal: DistalSpec, distal_type: DistalType,
              restarts: int, seed: Seed) -> Start:
    """The ML fit of :func:`lcbayes.em` (on ``data``, with the covariates and the outcome as
    the user gave them) as the chains' :class:`Start`: its coefficients on the standardised
    design as sum-to-zero effects, its item tables and outcome parameters (nudged off the
    boundary, standardised), the outcome's pooled values for the class-independent model."""
    from ..engines.em import em

    structure, cov, k = problem.structure, problem.covariates, problem.spec.n_classes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = em(structure, data, covariates=cov if cov.n_design > 1 else None, distal=distal,
                 distal_type=distal_type, restarts=restarts, seed=seed)
    raw = fit.coef
    std = raw.copy()
    std[1:] = raw[1:] * problem.scale[1:, None]
    std[0] = raw[0] + problem.centre[1:] @ raw[1:]
    values = {"class_effects": (std - std.mean(axis=1, keepdims=True)) @ sum_to_zero_basis(k)}

    def nudged(table) -> np.ndarray:
        table = np.asarray(table, dtype=np.float64)
        return (table + 0.01) / (1 + 0.01 * table.shape[-1])

    for i in structure.observed_nodes:
        values[f"theta_{structure.nodes[i]}"] = nudged(fit.params[structure.nodes[i]])
    d, x, found = problem.distal, problem.distal_values, fit.distal or {}
    if d is not None and d.kind == "categorical":
        counts = np.bincount(x[x >= 0], minlength=len(d.labels)) + 1.0
        values["distal_probs"] = nudged(found["probabilities"])
        values["distal_probs_pooled"] = counts / counts.sum()
    elif d is not None:
        z = x[~np.isnan(x)]
        values["distal_mean"] = (np.asarray(found["means"]) - d.mean) / d.sd
        values["distal_sd"] = np.maximum(np.asarray(found["sds"]) / d.sd, 0.1)
        values["distal_mean_pooled"] = np.asarray(z.mean())
        values["distal_sd_pooled"] = np.asarray(z.std())
    reference = np.concatenate([values[f"theta_{name}"] for name in problem.spec.items], axis=1)
    return Start(values, reference)


def build_problem(structure: Structure, data, *, covariates: CovariateSpec,
                  distal: DistalSpec, distal_type: DistalType,
                  stacklevel: int = 3) -> Problem:
    """The :class:`Problem` of a data set (module docstring); ``covariates`` and ``distal`` as
    :func:`lcbayes.covariate_evidence` takes them. ``stacklevel``: of the warning about rows
    lacking a covariate, from the caller."""
    if structure.kind != "latent_class":
        raise ArgumentError("covariates need a latent class structure (lcb.latent_class), got "
                            f"a {structure.kind} structure")
    k = structure.n_classes or 0
    if not 2 <= k <= MAX_CLASSES:
        raise ArgumentError(f"the Bayesian latent class regression takes 2 to {MAX_CLASSES} "
                            f"classes, got n_classes={k}")
    frame, dataset = data, fit_data(structure, data)
    if not dataset.has_row_order:
        raise DataError("data are patterns with counts (no row order), so covariate rows "
                        "cannot be matched to them; build the Dataset from its rows")
    if covariates is None and distal is None:
        raise ArgumentError("give covariates=..., distal=... or both")
    cov = (Covariates(columns=(), levels={}, names=(INTERCEPT,),
                      matrix=np.ones((dataset.n_rows, 1)),
                      kept=np.ones(dataset.n_rows, dtype=bool)) if covariates is None
           else resolve_covariates(structure, frame, covariates, dataset.n_rows,
                                   stacklevel=stacklevel))
    design, centre, scale = _standardise(cov)
    codes, cards = dataset.codes[cov.kept].astype(np.int64), tuple(dataset.cardinalities)
    n_used = int(cov.kept.sum())
    outcome, seen, info, values = np.zeros(n_used), np.zeros(n_used), None, np.zeros(0)
    all_codes, all_cards = codes, cards
    if distal is not None:
        name, kind, values, labels = resolve_distal(structure, frame, distal, dataset.n_rows,
                                                    distal_type)
        if name in cov.columns:
            raise DataError(f"distal {name!r} is also a covariate; a column is one or the "
                            "other")
        values = values[cov.kept]
        if kind == "continuous":
            observed = values[~np.isnan(values)]
            if observed.size < 2 or np.ptp(observed) == 0:
                raise DataError(f"distal {name!r} needs two different observed values among "
                                "the rows used")
            mean, sd = float(observed.mean()), float(observed.std())
            values = (values - mean) / sd
            seen = (~np.isnan(values)).astype(np.float64)
            outcome = np.where(seen > 0, values, 0.0)
            info = Outcome(name, kind, (), mean, sd, int(seen.sum()))
        else:
            if len(labels) < 2:
                raise DataError(f"distal {name!r} has fewer than two categories")
            all_codes = np.concatenate([codes, values[:, None]], axis=1)
            all_cards = (*cards, len(labels))
            info = Outcome(name, kind, tuple(str(v) for v in labels), 0.0, 1.0,
                           int((values != MISSING).sum()))
    cells, _ = make_cells(all_codes, np.concatenate([design, outcome[:, None], seen[:, None]],
                                                    axis=1), all_cards)
    n_cells = int(cells.counts.shape[0])
    padded = max(MIN_CELLS, 1 << (n_cells - 1).bit_length())
    p = cov.n_design

    def pad(a) -> jnp.ndarray:
        a = np.asarray(a)
        return jnp.asarray(np.pad(a, [(0, padded - n_cells)] + [(0, 0)] * (a.ndim - 1)))

    extra = np.asarray(cells.design)
    bayes = BayesData(onehot=pad(cells.onehot), design=pad(extra[:, :p]),
                      counts=pad(cells.counts), outcome=pad(extra[:, p]),
                      seen=pad(extra[:, p + 1]), slope_mask=jnp.ones(p),
                      tie=jnp.asarray(0.0), prior_scale=jnp.asarray(1.0))
    spec = ModelSpec(items=tuple(structure.nodes[i] for i in structure.observed_nodes),
                     cardinalities=cards, n_classes=k, n_design=p,
                     distal_kind="none" if info is None else info.kind,
                     distal_categories=len(info.labels) if info else 0, n_cells=padded)
    return Problem(structure=structure, spec=spec, data=bayes, covariates=cov, centre=centre,
                   scale=scale, distal=info, n_rows=dataset.n_rows, n_used_rows=n_used,
                   distal_values=values)


def class_shares(problem: Problem, effects_std: np.ndarray) -> np.ndarray:
    """``(..., K)`` mean ``P(class | x)`` over the rows used, for standardised effects
    ``(..., P, K)``."""
    design = np.asarray(problem.data.design)
    counts = np.asarray(problem.data.counts)
    flat = effects_std.reshape(-1, *effects_std.shape[-2:])
    shares = np.stack([counts @ softmax(design @ e) for e in flat]) / problem.n_used_rows
    return shares.reshape(*effects_std.shape[:-2], -1)
