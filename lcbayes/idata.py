"""ArviZ ``InferenceData`` of latent class posterior draws (the Gibbs and RJMCMC engines).

Groups, variables and dims (a contract that :mod:`lcbayes.relabel` and the diagnostics read):

* ``posterior``: ``class_weights`` ``(chain, draw, class)``; for every data column ``c``,
  ``theta_<c>`` ``(chain, draw, class, <c>_category)`` with the column's category labels (as
  strings) for coordinates; ``class`` coordinates ``0 .. S-1``. With a varying number of
  classes, ``k`` ``(chain, draw)`` counts the active classes, which fill the first ``k`` slots;
  the other slots are NaN.
* ``sample_stats``: ``log_likelihood`` (``sum_rows ln p(y_row | theta)``, missing values summed
  out), ``log_joint`` (plus the log prior density) and any engine-specific statistics.
* ``observed_data``: ``y`` ``(row, item)``, integer codes with ``-1`` for missing.
* ``posterior.attrs``: the engine's settings, JSON-serialisable; ``labels_json`` maps every
  column to its labels.
"""

from __future__ import annotations

import json

import arviz as az
import numpy as np
import xarray as xr

from .data import Dataset

__all__ = ["lc_inference_data"]


def lc_inference_data(data: Dataset, weights: np.ndarray, theta: np.ndarray,
                      log_likelihood: np.ndarray, log_joint: np.ndarray, attrs: dict,
                      k: np.ndarray | None = None,
                      stats: dict[str, tuple[tuple[str, ...], np.ndarray]] | None = None,
                      stat_coords: dict[str, list] | None = None) -> az.InferenceData:
    """Assemble the InferenceData of the module docstring.

    Args:
        data: the data set the draws were made on (its columns in order).
        weights: ``(C, D, S)`` class weights.
        theta: ``(C, D, S, J, R)`` item tables, padded to the largest cardinality ``R``.
        log_likelihood, log_joint: ``(C, D)``.
        attrs: posterior attributes (str, int or float values).
        k: ``(C, D)`` active classes per draw (first ``k`` slots), or None when all are.
        stats: extra sample statistics, ``{name: (dims after (chain, draw), values)}``.
        stat_coords: coordinates of the extra statistics' dims.
    """
    n_chains, n_draws, slots = weights.shape
    coords = {"chain": np.arange(n_chains), "draw": np.arange(n_draws),
              "class": np.arange(slots)}
    weights = np.asarray(weights, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    posterior = {}
    if k is not None:
        inactive = np.arange(slots)[None, None, :] >= np.asarray(k)[:, :, None]
        weights = np.where(inactive, np.nan, weights)
        theta = np.where(inactive[..., None, None], np.nan, theta)
        posterior["k"] = (("chain", "draw"), np.asarray(k, dtype=np.int64))
    posterior["class_weights"] = (("chain", "draw", "class"), weights)
    for j, (column, labels) in enumerate(zip(data.columns, data.labels, strict=True)):
        dim = f"{column}_category"
        coords[dim] = [str(label) for label in labels]
        posterior[f"theta_{column}"] = (("chain", "draw", "class", dim),
                                        theta[:, :, :, j, :len(labels)])
    labels = {c: [str(v) for v in lab] for c, lab in zip(data.columns, data.labels, strict=True)}
    sample_stats = {"log_likelihood": (("chain", "draw"), np.asarray(log_likelihood)),
                    "log_joint": (("chain", "draw"), np.asarray(log_joint))}
    for name, (dims, values) in (stats or {}).items():
        sample_stats[name] = (("chain", "draw", *dims), np.asarray(values))
    chain_draw = {"chain": coords["chain"], "draw": coords["draw"]}
    return az.InferenceData(
        posterior=xr.Dataset(posterior, coords=coords,
                             attrs={**attrs, "labels_json": json.dumps(labels)}),
        sample_stats=xr.Dataset(sample_stats, coords={**chain_draw, **(stat_coords or {})}),
        observed_data=xr.Dataset(
            {"y": (("row", "item"), np.asarray(data.codes, dtype=np.int64))},
            coords={"row": np.arange(data.n_rows), "item": list(data.columns)}),
    )
