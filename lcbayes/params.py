"""Parameters (conditional probability tables), Dirichlet priors, prior draws and simulation.

Parameters are a dict ``{node name: CPT}`` whose CPT for node ``i`` has shape
``(*parent_cardinalities, r_i)`` and sums to one over its last axis; ``P(x_i = k | pa_i = l)``.
A Dirichlet prior is a dict of the same shapes holding pseudo-counts ``lambda_ilk > 0``, an
independent Dirichlet for every CPT row (Beal & Ghahramani eq. 3; global and local parameter
independence).

Internally the engines use *tables*: a tuple, in node order, of ``(q_i, r_i)`` arrays (the CPTs
with their parent axes flattened in C order).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, overload

import jax.numpy as jnp
import numpy as np
import pandas as pd

from .data import MISSING, Dataset
from .errors import ArgumentError, LcbayesError, StructureError
from .structure import Structure
from .validation import Seed, check_seed, numpy_rng

__all__ = [
    "PriorSpec",
    "config_labels",
    "dirichlet_prior",
    "log_prior",
    "params_frame",
    "random_params",
    "simulate",
]

Params = dict[str, Any]
#: What a ``prior=`` argument accepts: ``None`` (no prior / maximum likelihood), ``"dirichlet"``
#: (pseudo-count 1 everywhere), one positive number, or ``{node: number or array}`` (unnamed
#: nodes get 1).
PriorSpec = None | str | float | Mapping[str, Any]


def to_tables(structure: Structure, params: Mapping[str, Any], xp=jnp) -> tuple[Any, ...]:
    """CPTs as ``(q_i, r_i)`` tables in node order (``xp=np``: NumPy arrays, no JAX program)."""
    missing = [n for n in structure.nodes if n not in params]
    if missing:
        raise StructureError(f"params lack CPTs for node(s) {missing}")
    tables = []
    for i, name in enumerate(structure.nodes):
        table = xp.asarray(params[name], dtype=xp.float64)
        if table.shape != structure.cpt_shape(i):
            raise StructureError(
                f"CPT of {name!r} has shape {table.shape}, expected {structure.cpt_shape(i)} "
                "(parent cardinalities..., own cardinality)"
            )
        tables.append(table.reshape(structure.n_configs(i), structure.cardinalities[i]))
    return tuple(tables)


def probability_tables(structure: Structure, params: Mapping[str, Any], name: str = "params"
                       ) -> tuple[np.ndarray, ...]:
    """:func:`to_tables` as NumPy arrays, checked to be probabilities (finite, non-negative,
    rows summing to 1 within 1e-6); ``name`` is the argument a bad table is reported under."""
    tables = to_tables(structure, params, xp=np)
    for node, t in zip(structure.nodes, tables, strict=True):
        if not (np.all(np.isfinite(t)) and np.all(t >= 0)
                and np.allclose(t.sum(axis=1), 1.0, atol=1e-6)):
            raise ArgumentError(f"{name}: the CPT of {node!r} is not a table of probabilities "
                                "(rows of non-negative numbers summing to 1)")
    return tables


def from_tables(structure: Structure, tables: Sequence[Any]) -> Params:
    """``(q_i, r_i)`` tables back to ``{node: CPT}`` as NumPy arrays."""
    return {
        name: np.asarray(t).reshape(structure.cpt_shape(i))
        for i, (name, t) in enumerate(zip(structure.nodes, tables, strict=True))
    }


def dirichlet_prior(
    structure: Structure, *, concentration: float | Mapping[str, Any] = 1.0
) -> Params:
    """Dirichlet pseudo-counts for every CPT row.

    Args:
        structure: the model.
        concentration: one positive number for every entry, or ``{node: number or array}``
            (an array broadcastable to that node's CPT shape); unnamed nodes get 1.
    """
    if isinstance(concentration, Mapping):
        unknown = [k for k in concentration if k not in structure.nodes]
        if unknown:
            raise StructureError(
                f"prior names unknown node(s) {unknown}; nodes are {list(structure.nodes)}"
            )
        per_node = dict(concentration)
    else:
        per_node = {n: concentration for n in structure.nodes}
    prior = {}
    for i, name in enumerate(structure.nodes):
        value = np.asarray(per_node.get(name, 1.0), dtype=np.float64)
        try:
            value = np.broadcast_to(value, structure.cpt_shape(i)).copy()
        except ValueError:
            raise StructureError(
                f"prior for {name!r} has shape {value.shape}, not broadcastable to its CPT "
                f"shape {structure.cpt_shape(i)}"
            ) from None
        if not np.all(np.isfinite(value)) or np.any(value <= 0):
            raise StructureError(f"prior pseudo-counts for {name!r} must be finite and > 0")
        prior[name] = value
    return prior


@overload
def prior_tables(structure: Structure, prior: None) -> None: ...
@overload
def prior_tables(structure: Structure, prior: str | float | Mapping[str, Any]
                 ) -> tuple[np.ndarray, ...]: ...
@overload
def prior_tables(structure: Structure, prior: PriorSpec) -> tuple[np.ndarray, ...] | None: ...
def prior_tables(structure: Structure, prior: PriorSpec) -> tuple[np.ndarray, ...] | None:
    """Resolve a ``prior=`` argument to ``(q_i, r_i)`` pseudo-count tables (``None`` = no prior)."""
    if prior is None:
        return None
    if isinstance(prior, str):
        if prior != "dirichlet":
            raise StructureError(
                f"prior must be None, 'dirichlet', a number or a dict, got {prior!r}"
            )
        prior = 1.0
    if isinstance(prior, bool) or not isinstance(prior, Mapping | int | float):
        raise StructureError(f"prior must be None, 'dirichlet', a number or a dict, got {prior!r}")
    full = dirichlet_prior(structure, concentration=prior)
    return tuple(
        full[n].reshape(structure.n_configs(i), structure.cardinalities[i])
        for i, n in enumerate(structure.nodes)
    )


def proper_prior_tables(structure: Structure, prior: PriorSpec, engine: str
                        ) -> tuple[np.ndarray, ...]:
    """:func:`prior_tables` for an engine that needs a proper prior (``None`` is refused with a
    message naming ``engine``)."""
    lambdas = prior_tables(structure, prior)
    if lambdas is None:
        raise LcbayesError(f"{engine} needs a proper Dirichlet prior: pass prior='dirichlet', a "
                           "number or {node: pseudo-counts}, not None")
    return lambdas


def dirichlet_log_density(tables: Sequence[Any], alphas: Sequence[Any]) -> float:
    """``sum_rows ln Dir(theta_row | lambda_row)`` (Beal & Ghahramani eq. 3), zeros allowed
    where ``lambda = 1``. Plain NumPy: it is evaluated once per result, never in a loop."""
    from scipy.special import gammaln, xlogy  # loaded on use, not when a command starts

    total = 0.0
    for table, alpha in zip(tables, alphas, strict=True):
        alpha = np.asarray(alpha, dtype=np.float64)
        norm = gammaln(alpha.sum(-1)) - gammaln(alpha).sum(-1)
        total += float(norm.sum() + xlogy(alpha - 1.0, np.asarray(table)).sum())
    return total


def log_prior(structure: Structure, params: Mapping[str, Any], *,
              prior: PriorSpec = "dirichlet") -> float:
    """Log density of ``params`` under the Dirichlet ``prior`` (in the simplex basis)."""
    alphas = prior_tables(structure, prior)
    if alphas is None:
        raise StructureError("log_prior needs a prior, got None")
    return dirichlet_log_density(to_tables(structure, params), alphas)


def random_params(structure: Structure, *, seed: Seed = 0, prior: PriorSpec = "dirichlet"
                  ) -> Params:
    """Parameters drawn from a Dirichlet prior (default pseudo-count 1: uniform on every
    simplex); the same seed gives the same parameters."""
    alphas = prior_tables(structure, prior if prior is not None else "dirichlet")
    rng = numpy_rng(check_seed(seed))
    tables = []
    for alpha in alphas:
        draws = rng.gamma(alpha)
        tables.append(draws / draws.sum(axis=-1, keepdims=True))
    return from_tables(structure, tuple(tables))


def simulate(
    structure: Structure,
    params: Mapping[str, Any],
    n: int,
    *,
    seed: Seed = 0,
    missing: float = 0.0,
) -> Dataset:
    """Draw ``n`` rows of the observed variables by ancestral sampling.

    Args:
        structure: the model.
        params: its CPTs (rows are renormalised).
        n: number of rows (> 0).
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            data.
        missing: probability that each observed entry is deleted (missing completely at
            random), in ``[0, 1)``.

    Returns:
        A :class:`~lcbayes.data.Dataset` with the structure's observed columns and labels.
    """
    if int(n) < 1:
        raise StructureError(f"n must be a positive number of rows, got {n!r}")
    if not 0.0 <= missing < 1.0:
        raise StructureError(f"missing must be a probability in [0, 1), got {missing!r}")
    rng = numpy_rng(check_seed(seed))
    tables = [np.asarray(t, dtype=np.float64) for t in to_tables(structure, params)]
    states = np.zeros((int(n), structure.n_nodes), dtype=np.int64)
    for i in structure.topological_order:
        table = tables[i] / tables[i].sum(axis=1, keepdims=True)
        pa = structure.parents[i]
        config = (
            np.ravel_multi_index(tuple(states[:, p] for p in pa), structure.parent_cardinalities(i))
            if pa else np.zeros(int(n), dtype=np.int64)
        )
        cdf = np.cumsum(table, axis=1)[config]
        u = rng.random(int(n))[:, None]
        states[:, i] = np.minimum((u > cdf).sum(axis=1), structure.cardinalities[i] - 1)
    codes = states[:, list(structure.observed_nodes)]
    if missing > 0:
        codes = np.where(rng.random(codes.shape) < missing, MISSING, codes)
    return Dataset(
        codes=codes,
        columns=structure.observed_names,
        labels=tuple(structure.labels[i] for i in structure.observed_nodes),
    )


def config_labels(structure: Structure, i: int) -> list[str]:
    """Names of node ``i``'s parent configurations, in CPT row order: ``"class 1"``, ... for
    the items of a latent class model, ``"H1=0, H2=1"`` for other parents, ``"(all)"`` for a
    node without parents."""
    pa = structure.parents[i]
    if not pa:
        return ["(all)"]
    if structure.kind == "latent_class":
        return [f"class {k + 1}" for k in range(structure.cardinalities[pa[0]])]
    ranges = [range(structure.cardinalities[p]) for p in pa]
    names = [structure.nodes[p] for p in pa]
    return [", ".join(f"{n}={structure.labels[p][v]}" for n, p, v in zip(names, pa, combo,
                                                                          strict=True))
            for combo in itertools.product(*ranges)]


def params_frame(structure: Structure, values: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """CPT-shaped values as a long table: one row per node, parent configuration and category
    (columns ``node``, ``parents`` (:func:`config_labels`), ``category``), one column per entry
    of ``values`` (``{column: {node: CPT-shaped array}}``, e.g. ``{"probability": params}``)."""
    rows: dict[str, list] = {"node": [], "parents": [], "category": []}
    columns: dict[str, list] = {name: [] for name in values}
    for i, node in enumerate(structure.nodes):
        configs = config_labels(structure, i)
        for l, config in enumerate(configs):
            for k, label in enumerate(structure.labels[i]):
                rows["node"].append(node)
                rows["parents"].append(config)
                rows["category"].append(label)
                for name, tables in values.items():
                    table = np.asarray(tables[node]).reshape(len(configs), -1)
                    columns[name].append(float(table[l, k]))
    return pd.DataFrame({**rows, **columns})
