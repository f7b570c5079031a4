"""Exact inference core: per-pattern ``ln p(y | theta)``, posteriors and expected counts.

Two routes, chosen from the structure's kind at trace time:

* :mod:`~lcbayes.inference.enumeration` for latent class models and small DAGs (joint
  enumeration of hidden states);
* :mod:`~lcbayes.inference.tree` for HLC trees (upward/downward sum-product).

The functions taking ``(structure, log_tables, patterns, ...)`` are pure JAX and jit with the
structure static. The public wrappers below take ``{node: CPT}`` parameters and a Dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Literal, overload

import jax
import jax.numpy as jnp
import numpy as np

from .. import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)
from ..data import Dataset
from ..params import from_tables, to_tables
from ..structure import Structure
from . import enumeration, flat, tree
from .estep import EStep, Evidence, normalise_rows

__all__ = [
    "EStep",
    "Evidence",
    "complete_columns",
    "e_step",
    "expected_counts",
    "family_posteriors",
    "flat_e_step",
    "flat_log_marginal",
    "hidden_marginals",
    "hidden_posteriors",
    "log_likelihood",
    "log_marginal",
    "prepare",
]


def _route(structure: Structure):
    return tree if structure.kind == "hlc" else enumeration


def prepare(structure: Structure, patterns: jax.Array | np.ndarray,
            complete: tuple[int, ...] = ()) -> Evidence:
    """The data patterns in the form the structure's route consumes (build once, reuse).

    ``complete``: pattern columns with no missing value (:func:`complete_columns`), which the
    enumeration route folds to save work (:mod:`~lcbayes.inference.enumeration`)."""
    if structure.kind == "hlc":
        return tree.prepare(structure, jnp.asarray(patterns))
    return enumeration.prepare(structure, jnp.asarray(patterns), complete)


def complete_columns(patterns: np.ndarray) -> tuple[int, ...]:
    """The columns of a ``(P, J)`` pattern matrix without a missing value (a static argument
    for :func:`prepare`)."""
    patterns = np.asarray(patterns)
    return tuple(int(c) for c in np.flatnonzero((patterns >= 0).all(axis=0)))


def _evidence(structure: Structure, data: Evidence | jax.Array | np.ndarray) -> Evidence:
    return data if isinstance(data, Evidence) else prepare(structure, data)


def log_marginal(structure: Structure, log_tables, data: Evidence | jax.Array | np.ndarray
                 ) -> jax.Array:
    """``(P,)`` ``ln p(y_p)`` for every pattern (missing values summed out).

    ``data`` is a ``(P, J)`` pattern matrix or the :class:`Evidence` built from it."""
    return _route(structure).log_marginal(structure, log_tables, _evidence(structure, data))


def e_step(structure: Structure, log_tables, data: Evidence | jax.Array, weights: jax.Array,
           virtual_evidence: tuple[jax.Array, ...] | None = None) -> EStep:
    """Exact E step over weighted patterns; see :class:`EStep`.

    ``virtual_evidence`` optionally adds, per hidden node (``Structure.hidden_nodes`` order), a
    ``(P, r_h)`` array of log factors on its states for each pattern."""
    return _route(structure).e_step(structure, log_tables, _evidence(structure, data), weights,
                                    virtual_evidence)


def flat_e_step(structure: Structure, flat_log: jax.Array, evidence: Evidence,
                weights: jax.Array, vmapped: bool = False) -> tuple[jax.Array, jax.Array]:
    """``(ln p(y_p) per pattern, expected counts)`` with log CPTs and counts laid end to end
    (:mod:`~lcbayes.inference.flat`): what an EM or VBEM iteration needs, in few operations.
    ``vmapped``: the caller runs under ``vmap`` (see
    :func:`lcbayes.inference.enumeration.flat_e_step`)."""
    if structure.kind != "hlc":
        return enumeration.flat_e_step(structure, flat_log, evidence, weights, vmapped)
    est = tree.e_step(structure, flat.unflatten(flat_log, structure.table_shapes), evidence,
                      weights, None)
    return est.log_marginal, flat.flatten(est.counts)


def flat_log_marginal(structure: Structure, flat_log: jax.Array, evidence: Evidence
                      ) -> jax.Array:
    """:func:`log_marginal` with the log CPTs laid end to end (:mod:`~.flat`)."""
    if structure.kind != "hlc":
        return normalise_rows(enumeration.flat_log_joint(structure, flat_log, evidence))[0]
    return tree.log_marginal(structure, flat.unflatten(flat_log, structure.table_shapes),
                             evidence)


_jit_e_step = jax.jit(e_step, static_argnums=0)


def _prepare(structure: Structure, params: Mapping[str, Any], data: Dataset):
    data = structure.check_data(data)
    log_tables = tuple(jnp.log(t) for t in to_tables(structure, params))
    return data, log_tables, jnp.asarray(data.patterns), jnp.asarray(data.counts)


@overload
def log_likelihood(structure: Structure, params: Mapping[str, Any], data: Dataset, *,
                   per_row: Literal[False] = False) -> float: ...
@overload
def log_likelihood(structure: Structure, params: Mapping[str, Any], data: Dataset, *,
                   per_row: Literal[True]) -> np.ndarray: ...
@overload
def log_likelihood(structure: Structure, params: Mapping[str, Any], data: Dataset, *,
                   per_row: bool = False) -> float | np.ndarray: ...
def log_likelihood(structure: Structure, params: Mapping[str, Any], data: Dataset, *,
                   per_row: bool = False) -> float | np.ndarray:
    """``sum_rows ln p(y_row | theta)`` with missing values marginalised; ``per_row``: the
    ``(n_rows,)`` terms ``ln p(y_row | theta)`` instead (0 for a row with nothing observed)."""
    data, log_tables, patterns, counts = _prepare(structure, params, data)
    log_marginal = _jit_e_step(structure, log_tables, patterns, counts).log_marginal
    if per_row:
        return np.asarray(log_marginal)[data.pattern_index]
    return float(counts @ log_marginal)


def hidden_posteriors(
    structure: Structure, params: Mapping[str, Any], data: Dataset
) -> dict[str, np.ndarray]:
    """Posterior marginal of every hidden node for every row: ``{node: (n_rows, r_h)}``."""
    data, log_tables, _, _ = _prepare(structure, params, data)
    return hidden_marginals(structure, log_tables, data)


def hidden_marginals(structure: Structure, log_tables, data: Dataset) -> dict[str, np.ndarray]:
    """:func:`hidden_posteriors` from log tables (``(q_i, r_i)`` per node, possibly
    sub-normalised, e.g. VBE's ``E[ln theta]``) and data already checked against the
    structure (:meth:`~lcbayes.Structure.check_data`)."""
    patterns, counts = jnp.asarray(data.patterns), jnp.asarray(data.counts)
    marg = _jit_e_step(structure, tuple(jnp.asarray(t) for t in log_tables), patterns,
                       counts).hidden_marginals
    return {
        structure.nodes[h]: np.asarray(m)[data.pattern_index]
        for h, m in zip(structure.hidden_nodes, marg, strict=True)
    }


def expected_counts(
    structure: Structure, params: Mapping[str, Any], data: Dataset
) -> dict[str, np.ndarray]:
    """Expected family counts ``sum_rows P(x_i = k, pa_i = l | y)``, CPT-shaped per node.

    An observed node without children whose value is missing adds nothing (its factor is
    summed out exactly)."""
    data, log_tables, patterns, counts = _prepare(structure, params, data)
    return from_tables(structure, _jit_e_step(structure, log_tables, patterns, counts).counts)


@partial(jax.jit, static_argnums=0)
def _per_pattern_counts(structure: Structure, log_tables, patterns: jax.Array):
    def one(pattern):
        return e_step(structure, log_tables, pattern[None, :], jnp.ones(1)).counts

    return jax.vmap(one)(patterns)


def family_posteriors(
    structure: Structure, params: Mapping[str, Any], data: Dataset
) -> dict[str, np.ndarray]:
    """Per pattern, ``P(x_i = k, pa_i = l | y_p)`` as ``{node: (n_patterns, *cpt_shape)}``.

    Rows follow ``data.select(structure.observed_names).patterns``. For an observed node without
    children whose value is missing in a pattern the entry is all zeros (its factor was summed
    out, so it has no family term)."""
    data, log_tables, patterns, _ = _prepare(structure, params, data)
    per = _per_pattern_counts(structure, log_tables, patterns)
    return {
        name: np.asarray(t).reshape((data.n_patterns, *structure.cpt_shape(i)))
        for i, (name, t) in enumerate(zip(structure.nodes, per, strict=True))
    }
