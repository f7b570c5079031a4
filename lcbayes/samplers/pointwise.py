"""The pointwise log-likelihood of posterior draws: ``ln p(y_p | theta^(s))`` for every data
pattern ``p`` and draw ``s``, the hidden variables and missing values summed out by the exact
inference core (:func:`lcbayes.inference.log_marginal`), for every structure kind.

Leave-one-out cross-validation and WAIC (Vehtari, Gelman & Gabry 2017) read it per row. The
data are compressed to patterns, and every row of one pattern has the same likelihood vector
over the draws, so the per-pattern array with the patterns' counts carries everything; the
``log_likelihood`` group of an ``InferenceData`` (what ``az.loo``, ``az.waic`` and
``az.compare`` read) holds it per row, one variable ``y`` with dims ``(chain, draw, row)``.

The draws' tables come from the ``posterior`` group (:mod:`lcbayes.samplers.idata`): a latent
class model's ``class_weights`` and ``theta_<column>``, an HLC tree's or DAG's ``theta_<node>``
per CPT.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset
from ..errors import LcbayesError
from ..inference import log_marginal, prepare
from ..structure import Structure

if TYPE_CHECKING:
    import arviz as az
    import xarray as xr

__all__ = ["MAX_ROW_ENTRIES", "draw_tables", "draws_log_likelihood", "log_likelihood_group",
           "pattern_log_likelihood",
           "with_log_likelihood"]

#: The most ``chains x draws x rows`` values a ``log_likelihood`` group holds (160 MB of
#: float64); past it the group is left out and :func:`lcbayes.loo` works on the patterns.
MAX_ROW_ENTRIES = 2 * 10 ** 7
#: Draws whose likelihoods are computed in one compiled call.
DRAW_CHUNK = 256


def draw_tables(structure: Structure, posterior: xr.Dataset) -> list[np.ndarray]:
    """The CPTs of every draw, in the structure's node order, each ``(C, D, q, r)``."""
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    tables = []
    for i, name in enumerate(structure.nodes):
        if structure.kind == "latent_class":
            var = "class_weights" if i == structure.root else f"theta_{name}"
        else:
            var = f"theta_{name}"
        if var not in posterior:
            raise LcbayesError(f"the posterior has no {var!r}: these are not draws of this "
                               "structure")
        values = np.asarray(posterior[var].transpose("chain", "draw", ...).values, dtype=float)
        tables.append(values.reshape(chains, draws, *structure.table_shapes[i]))
    return tables


@partial(jax.jit, static_argnames=("structure",))
def _chunk_log_likelihood(structure: Structure, log_tables, evidence) -> jax.Array:
    return jax.vmap(lambda tables: log_marginal(structure, tables, evidence))(log_tables)


def draws_log_likelihood(structure: Structure, tables: list[np.ndarray],
                         patterns: np.ndarray) -> np.ndarray:
    """``(S, P)``: ``ln p(y_p | theta^(s))`` of every pattern (``(P, J)`` codes of the
    structure's observed columns, ``-1`` missing) under every draw's CPTs (``tables`` in node
    order, each ``(S, q, r)``)."""
    n_draws = tables[0].shape[0]
    if any(np.isnan(t).any() for t in tables):
        raise LcbayesError("some draws have unused class slots (NaN): condition the draws on "
                           "one number of classes first (lcbayes.samplers.idata.condition_on_k)")
    evidence = prepare(structure, jnp.asarray(patterns))
    out = np.empty((n_draws, len(patterns)))
    with np.errstate(divide="ignore"):
        for start in range(0, n_draws, DRAW_CHUNK):
            part = [np.log(t[start:start + DRAW_CHUNK]) for t in tables]
            size = part[0].shape[0]
            padded = tuple(jnp.asarray(np.concatenate(
                [q, np.repeat(q[-1:], DRAW_CHUNK - size, axis=0)])) for q in part)
            out[start:start + size] = np.asarray(
                _chunk_log_likelihood(structure, padded, evidence))[:size]
    return out


def pattern_log_likelihood(structure: Structure, patterns: np.ndarray,
                           posterior: xr.Dataset) -> np.ndarray:
    """``(C, D, P)``: :func:`draws_log_likelihood` at every draw of ``posterior``."""
    tables = draw_tables(structure, posterior)
    chains, draws = tables[0].shape[:2]
    flat = [t.reshape(chains * draws, *t.shape[2:]) for t in tables]
    return draws_log_likelihood(structure, flat, patterns).reshape(chains, draws, len(patterns))


def log_likelihood_group(data: Dataset, pattern_ll: np.ndarray) -> xr.Dataset | None:
    """The ``log_likelihood`` group, ``y`` per row ``(chain, draw, row)`` from the per-pattern
    values; ``None`` past :data:`MAX_ROW_ENTRIES` values."""
    import xarray as xr  # imported on first use (lcbayes.samplers.idata.xarray)
    chains, draws, _ = pattern_ll.shape
    if chains * draws * data.n_rows > MAX_ROW_ENTRIES:
        return None
    rows = pattern_ll[:, :, data.pattern_index]
    return xr.Dataset(
        {"y": (("chain", "draw", "row"), rows)},
        coords={"chain": np.arange(chains), "draw": np.arange(draws),
                "row": np.arange(data.n_rows)})


def with_log_likelihood(idata: az.InferenceData, structure: Structure,
                        data: Dataset) -> az.InferenceData:
    """``idata`` with its ``log_likelihood`` group added (left out past
    :data:`MAX_ROW_ENTRIES`; ``idata["posterior"].attrs["log_likelihood"]`` says which)."""
    group = log_likelihood_group(data, pattern_log_likelihood(structure, data.patterns,
                                                              idata["posterior"]))
    idata["posterior"].attrs["log_likelihood"] = "rows" if group is not None else "omitted"
    if group is not None:
        idata.add_groups(log_likelihood=group)
    return idata
