"""Effective dimension of a discrete Bayesian network with hidden variables.

Geiger, Heckerman & Meek (1996), "Asymptotic model selection for directed networks with hidden
variables", §3 (the effective dimension and its regular rank):
with hidden variables, BIC's penalty ``d/2 ln N`` must use the dimension of the model's image in
the space of distributions of the *observed* variables, not the number of network parameters.
That dimension is the rank of the Jacobian ``J(theta) = d w / d theta`` of the map from the free
network parameters ``theta`` (for every CPT row its first ``r - 1`` probabilities; the last is one
minus their sum) to the joint distribution ``w = p(y)`` of the observed variables. The map is
polynomial, so ``J`` has a *regular rank*, attained for almost every ``theta`` and never exceeded;
a random interior ``theta`` gives it with probability one, and every evaluation is a lower bound,
so GHM take the maximum over a few random points.

Here ``p(y)`` comes from the exact inference core (:func:`lcbayes.inference.log_marginal`, any of
the kinds ``latent_class``, ``hlc`` and ``dag``), the Jacobian from ``jax.jacfwd`` in float64,
jitted once per structure, and the rank from an SVD. A latent class model needs no compiled
program: with ``f_k(y) = prod_j theta_jk(y_j)`` and ``p(y) = sum_k pi_k f_k(y)`` its Jacobian
is closed-form (Goodman 1974's identifiability matrix), ``dp/dpi_k = f_k - f_K`` and
``dp/dtheta_jkv = pi_k f_k(y) / theta_jk(y_j) ([y_j = v] - [y_j = r_j])`` over the free
entries (:func:`_latent_class_jacobian`, tested against ``jax.jacfwd``). Rows are the
configurations ``y``; each is scaled by ``1 / sqrt(p(y))`` (the Jacobian of ``2 sqrt(p(y))``,
whose Gram matrix is the Fisher information). Scaling rows by positive numbers leaves the rank
unchanged and makes rows of rare and frequent configurations comparable.

The effective dimension never exceeds the number of free parameters
(:attr:`~lcbayes.structure.Structure.n_parameters`) nor the dimension of the observed simplex,
``prod r_j - 1``; without hidden variables it equals the number of free parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .errors import StructureError
from .inference import log_marginal
from .params import random_params
from .render import JSONRecord
from .structure import Structure
from .validation import Seed, check_seed, check_structure, numpy_rng

__all__ = ["DimensionResult", "effective_dimension", "effective_dimension_details"]

#: Default tolerance factor: a singular value counts when it exceeds
#: ``RTOL_FACTOR * max(n_rows, n_parameters) * eps * s_max``.
RTOL_FACTOR = 10.0
#: Random points are drawn from Dirichlet(``_CONCENTRATION``) on every CPT row and then mixed
#: with the uniform row, ``0.9 theta + 0.1 / r``, so every probability is at least ``0.1 / r``.
_CONCENTRATION = 2.0
_UNIFORM_WEIGHT = 0.1
#: Rows of the Jacobian computed per jitted call, at most (a power of two).
_MAX_CHUNK = 1024
#: Rough bound on the float64 entries of a chunk's largest forward-mode intermediate.
_CHUNK_BUDGET = 2**24
#: Subset method: first ``_SUBSET_FACTOR * n_parameters`` rows (at least ``_SUBSET_MIN``), then
#: doubling, at most ``_SUBSET_DOUBLINGS`` times.
_SUBSET_FACTOR = 4
_SUBSET_MIN = 64
_SUBSET_DOUBLINGS = 4


@dataclass(frozen=True)
class DimensionResult(JSONRecord):
    """What :func:`effective_dimension_details` found.

    Attributes:
        dimension: the effective dimension (the largest rank found, clipped to ``upper_bound``).
        n_parameters: the standard dimension ``sum_i q_i (r_i - 1)``.
        upper_bound: ``min(n_parameters, n_configurations - 1)``.
        method: ``"full"`` (every observed configuration) or ``"subset"`` (random rows).
        n_configurations: ``prod r_j`` over the observed variables.
        n_rows: rows of the Jacobian behind ``dimension``.
        ranks: the rank found at each random point evaluated (evaluation stops once a rank
            reaches ``upper_bound``).
        singular_values: the singular values, descending, at the point that gave ``dimension``.
        threshold: the absolute threshold applied to ``singular_values``.
    """

    dimension: int
    n_parameters: int
    upper_bound: int
    method: str
    n_configurations: int
    n_rows: int
    ranks: tuple[int, ...]
    singular_values: np.ndarray
    threshold: float

    def to_frame(self) -> pd.DataFrame:
        """One row per singular value (descending) at the point that gave ``dimension``:
        ``index`` (from 1), ``singular_value`` and ``counted`` (above ``threshold``)."""
        return pd.DataFrame({"index": np.arange(1, len(self.singular_values) + 1),
                             "singular_value": self.singular_values,
                             "counted": self.singular_values > self.threshold})

    def summary(self) -> str:
        """The dimension against its bounds, and how it was found."""
        return (f"Effective dimension {self.dimension} of {self.n_parameters} free parameters "
                f"(upper bound {self.upper_bound}; {self.n_configurations} observed "
                f"configurations)\n  {self.method} Jacobian of {self.n_rows} rows; ranks at the "
                f"points evaluated: {', '.join(map(str, self.ranks)) or 'none'}; threshold "
                f"{self.threshold:.3g}")


def effective_dimension(
    structure: Structure,
    *,
    seed: Seed = 0,
    n_points: int = 3,
    tol: float | None = None,
    max_rows: int = 4096,
) -> int:
    """The effective dimension of ``structure`` (Geiger, Heckerman & Meek 1996).

    The regular rank of the Jacobian of the map from the free network parameters (per CPT row,
    its first ``r - 1`` probabilities) to the joint distribution ``p(y)`` of the observed
    variables (Geiger, Heckerman & Meek 1996, §3: the rank theorem for networks with hidden
    variables and the randomised evaluation of the regular rank). This is the ``d`` of BIC for
    models with hidden variables. It is at most
    ``structure.n_parameters`` and at most ``prod r_j - 1``; without hidden variables it equals
    ``structure.n_parameters``.

    Method. At ``n_points`` random interior points (Dirichlet(2) rows mixed with 10% of the
    uniform row, reproducible from ``seed``) the Jacobian of ``2 sqrt(p(y))`` (rows scaled by
    ``1 / sqrt(p(y))``, which keeps the rank) is computed with ``jax.jacfwd`` in float64 from the
    exact inference core, and its rank is the number of singular values above
    ``tol * s_max``. The result is the largest rank found (every rank is a lower bound of the
    regular rank); evaluation stops early once a rank reaches the upper bound.

    * ``"full"`` (``prod r_j <= max_rows``): one row per observed configuration, all of them.
    * ``"subset"`` (more configurations): rows at distinct observed configurations drawn
      uniformly at random, first ``4 * n_parameters`` of them (at least 64), doubling (at most
      four times) until the rank reaches the upper bound or stops growing over a doubling. A
      row subset of ``J`` has rank at most ``rank J``, so the result is still a lower bound of
      the regular rank; it is exact once the rows span ``J``'s row space, which in practice
      (about ``2 * n_parameters`` distinct rows sufficed in our tests) the first batch already
      does. It can fall short only when some parameters move ``p(y)`` on very few
      configurations (e.g. a CPT row for a rare joint state of many observed parents).

    Args:
        structure: the model (``latent_class``, ``hlc`` or ``dag``).
        seed: seed of the random points (a non-negative integer or a ``jax.random`` key); the
            same seed gives the same answer.
        n_points: number of random points (at least 1).
        tol: relative tolerance: a singular value counts when it exceeds ``tol * s_max``.
            Default ``10 * max(n_rows, n_parameters) * eps`` (``eps`` of float64), i.e. about
            ``1e-12`` for 4096 rows; the gaps in the test vectors span ~1e-4 (smallest kept) to
            ~1e-16 (largest dropped).
        max_rows: the largest number of observed configurations for the full method.

    Returns:
        The effective dimension, an int in ``[0, min(n_parameters, prod r_j - 1)]``.
    """
    return effective_dimension_details(structure, seed=seed, n_points=n_points, tol=tol,
                                       max_rows=max_rows).dimension


def effective_dimension_details(
    structure: Structure,
    *,
    seed: Seed = 0,
    n_points: int = 3,
    tol: float | None = None,
    max_rows: int = 4096,
) -> DimensionResult:
    """:func:`effective_dimension` with the method, ranks and singular values behind it."""
    check_structure(structure)
    seed = check_seed(seed)
    if int(n_points) < 1:
        raise StructureError(f"n_points must be at least 1, got {n_points!r}")
    if tol is not None and not 0.0 <= float(tol) < 1.0:
        raise StructureError(f"tol must be a relative tolerance in [0, 1), got {tol!r}")
    if int(max_rows) < 1:
        raise StructureError(f"max_rows must be positive, got {max_rows!r}")
    cards = tuple(structure.cardinalities[i] for i in structure.observed_nodes)
    n_configs = math.prod(cards)
    d = structure.n_parameters
    upper = min(d, n_configs - 1)
    method = "full" if n_configs <= int(max_rows) else "subset"
    if upper == 0:
        return DimensionResult(0, d, 0, method, n_configs, 0, (), np.zeros(0), 0.0)

    rng = numpy_rng(seed)
    point_seeds = rng.integers(0, 2**32, size=int(n_points))
    if method == "full":
        configs = np.indices(cards).reshape(len(cards), -1).T
        schedule = [n_configs]
    else:
        first = min(n_configs, max(_SUBSET_FACTOR * d, _SUBSET_MIN))
        schedule = [min(n_configs, first * 2**j) for j in range(_SUBSET_DOUBLINGS + 1)]
        schedule = sorted(set(schedule))
        configs = _random_configurations(cards, schedule[-1], rng)
    chunk = _chunk_rows(structure, n_configs)

    best: tuple[int, int, np.ndarray, float] | None = None  # rank, rows, singular values, tol
    ranks = []
    for point_seed in point_seeds:
        theta = _random_point(structure, int(point_seed))
        blocks: list[np.ndarray] = []
        previous = -1
        for n_rows in schedule:
            while sum(len(b) for b in blocks) < n_rows:
                start = sum(len(b) for b in blocks)
                rows = configs[start:start + chunk]
                blocks.append(_latent_class_jacobian(structure, theta, rows)
                              if structure.kind == "latent_class"
                              else _jacobian_rows(structure, theta, rows, chunk))
            jac = np.concatenate(blocks)[:n_rows]
            rank, sv, abs_tol = _rank(jac, tol)
            if rank >= upper or rank == previous:
                break
            previous = rank
        ranks.append(min(rank, upper))
        if best is None or rank > best[0]:
            best = (rank, n_rows, sv, abs_tol)
        if rank >= upper:
            break
    assert best is not None
    dimension = min(best[0], upper)
    assert 0 <= dimension <= min(d, n_configs - 1)
    return DimensionResult(dimension, d, upper, method, n_configs, best[1], tuple(ranks),
                           best[2], best[3])


# ---------------------------------------------------------------------- internals
def _rank(jac: np.ndarray, tol: float | None) -> tuple[int, np.ndarray, float]:
    """Numerical rank, singular values and the absolute threshold used."""
    sv = np.linalg.svd(jac, compute_uv=False)
    if sv.size == 0 or sv[0] == 0.0:
        return 0, sv, 0.0
    rtol = RTOL_FACTOR * max(jac.shape) * np.finfo(np.float64).eps if tol is None else float(tol)
    threshold = rtol * float(sv[0])
    return int(np.sum(sv > threshold)), sv, threshold


def _random_point(structure: Structure, seed: int) -> np.ndarray:
    """Free parameters of a random interior point: per CPT row its first ``r - 1`` entries."""
    params = random_params(structure, seed=seed, prior=_CONCENTRATION)
    parts = []
    for i, name in enumerate(structure.nodes):
        r = structure.cardinalities[i]
        table = np.asarray(params[name], dtype=np.float64).reshape(structure.n_configs(i), r)
        table = (1.0 - _UNIFORM_WEIGHT) * table + _UNIFORM_WEIGHT / r
        parts.append(table[:, :-1].ravel())
    return np.concatenate(parts)


def _random_configurations(cards: tuple[int, ...], n: int, rng: np.random.Generator
                           ) -> np.ndarray:
    """``(n, J)`` distinct observed configurations in random order (``n <= prod cards``)."""
    total = math.prod(cards)
    if total < 2**62:
        index = rng.choice(total, size=n, replace=False)
        return np.stack(np.unravel_index(index, cards), axis=1)
    seen: dict[bytes, None] = {}
    rows: list[np.ndarray] = []
    while len(rows) < n:  # collisions are vanishingly rare in a space this large
        for row in rng.integers(0, cards, size=(n, len(cards))):
            key = row.tobytes()
            if key not in seen and len(rows) < n:
                seen[key] = None
                rows.append(row)
    return np.asarray(rows)


def _chunk_rows(structure: Structure, n_configs: int) -> int:
    """Rows per jitted call: a power of two that depends on the structure alone, so the full
    and subset methods (and every point) share one compilation."""
    if structure.kind == "hlc":
        width = max(
            structure.cardinalities[v] * structure.n_configs(v) for v in structure.hidden_nodes
        )
    else:
        width = structure.n_enumerated_states
    per_row = max(1, structure.n_parameters * width)
    cap = max(16, min(_MAX_CHUNK, 2 ** int(math.log2(max(1, _CHUNK_BUDGET // per_row)))))
    return min(cap, 1 << max(0, n_configs - 1).bit_length())


def _jacobian_rows(structure: Structure, theta: np.ndarray, configs: np.ndarray, chunk: int
                   ) -> np.ndarray:
    """Rows of the scaled Jacobian for ``configs`` (padded to ``chunk`` rows for the jit)."""
    n = len(configs)
    padded = np.zeros((chunk, configs.shape[1]), dtype=np.int32)
    padded[:n] = configs
    padded[n:] = configs[0]
    jac = _scaled_jacobian(structure, jnp.asarray(theta, dtype=jnp.float64),
                           jnp.asarray(padded))
    return np.asarray(jac)[:n]


def _latent_class_jacobian(structure: Structure, theta: np.ndarray, configs: np.ndarray
                           ) -> np.ndarray:
    """:func:`_scaled_jacobian` of a latent class model in closed form (module docstring), in
    NumPy: ``(len(configs), d)``, the columns in the order of the free parameters."""
    source, last, _, entry_row = _table_layout(structure)
    entries = np.where(last, 0.0, np.append(theta, 0.0)[source])
    row_sums = np.zeros(int(entry_row[-1]) + 1)
    np.add.at(row_sums, entry_row, entries)
    entries = np.where(last, 1.0 - row_sums[entry_row], entries)
    tables, start = [], 0
    for i in range(structure.n_nodes):
        q, r = structure.n_configs(i), structure.cardinalities[i]
        tables.append(entries[start:start + q * r].reshape(q, r))
        start += q * r
    weights = tables[structure.root][0]                            # (K,)
    seen = [tables[i][:, configs[:, c]].T                          # (n, K) theta_jk(y_j)
            for c, i in enumerate(structure.observed_nodes)]
    f = np.prod(seen, axis=0)                                      # (n, K)
    scale = 1.0 / np.sqrt(f @ weights)                             # 2 sqrt(p)' = p' / sqrt(p)
    columns = []
    for i in range(structure.n_nodes):
        r = structure.cardinalities[i]
        if i == structure.root:
            columns.append(f[:, :-1] - f[:, -1:])
            continue
        y = configs[:, structure.observed_nodes.index(i)]
        share = weights * f / seen[structure.observed_nodes.index(i)]  # (n, K)
        sign = (y[:, None] == np.arange(r - 1)).astype(float) - (y == r - 1)[:, None]
        columns.append((share[:, :, None] * sign[:, None, :]).reshape(len(configs), -1))
    return np.concatenate(columns, axis=1) * scale[:, None]


@lru_cache(maxsize=256)
def _table_layout(structure: Structure) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Index arrays that turn the free parameters into every CPT entry, in node order: entry
    ``e`` is ``theta[source[e]]`` or, where ``last[e]``, one minus the sum of its CPT row's free
    entries; ``row[f]`` is the CPT row of free parameter ``f`` and ``entry_row[e]`` that of
    entry ``e`` (rows numbered across all nodes)."""
    source, last, row, entry_row = [], [], [], []
    offset = n_rows = 0
    for i in range(structure.n_nodes):
        r = structure.cardinalities[i]
        for _ in range(structure.n_configs(i)):
            source += [offset + k for k in range(r - 1)] + [0]
            last += [False] * (r - 1) + [True]
            row += [n_rows] * (r - 1)
            entry_row += [n_rows] * r
            offset += r - 1
            n_rows += 1
    return (np.asarray(source, dtype=np.int64), np.asarray(last, dtype=bool),
            np.asarray(row, dtype=np.int64), np.asarray(entry_row, dtype=np.int64))


def _log_tables(structure: Structure, theta: jax.Array) -> tuple[jax.Array, ...]:
    """``(q_i, r_i)`` log CPTs from the free parameters."""
    source, last, row, entry_row = _table_layout(structure)
    n_rows = int(entry_row[-1]) + 1
    row_sums = jax.ops.segment_sum(theta, row, num_segments=n_rows)
    theta_ext = jnp.concatenate([theta, jnp.zeros(1)])  # theta may be empty (all r_i == 1)
    entries = jnp.where(last, 1.0 - row_sums[entry_row], theta_ext[source])
    log_entries = jnp.log(entries)
    tables, start = [], 0
    for i in range(structure.n_nodes):
        q, r = structure.n_configs(i), structure.cardinalities[i]
        tables.append(log_entries[start:start + q * r].reshape(q, r))
        start += q * r
    return tuple(tables)


@partial(jax.jit, static_argnums=0)
def _scaled_jacobian(structure: Structure, theta: jax.Array, patterns: jax.Array) -> jax.Array:
    """``(P, d)`` Jacobian of ``2 sqrt(p(y))`` over the free parameters, one row per pattern."""

    def root_probability(t: jax.Array) -> jax.Array:
        return 2.0 * jnp.exp(0.5 * log_marginal(structure, _log_tables(structure, t), patterns))

    return jax.jacfwd(root_probability)(theta)
