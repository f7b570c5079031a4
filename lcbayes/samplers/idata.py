"""ArviZ ``InferenceData`` of latent class posterior draws (the Gibbs and RJMCMC engines).

Groups, variables and dims (a contract that :mod:`lcbayes.samplers.relabelling` and the
diagnostics read):

* ``posterior``: ``class_weights`` ``(chain, draw, class)``; for every data column ``c``,
  ``theta_<c>`` ``(chain, draw, class, <c>_category)`` with the column's category labels (as
  strings) for coordinates; ``class`` coordinates ``1 .. S``, the class numbers every printed
  table and figure shows (select by position with ``isel``). With a varying number of classes,
  ``k`` ``(chain, draw)`` counts the active classes, which fill the first ``k`` slots; the
  other slots are NaN.
* ``sample_stats``: ``log_likelihood`` (``sum_rows ln p(y_row | theta)``, missing values summed
  out), ``log_joint`` (plus the log prior density) and any engine-specific statistics.
* ``observed_data``: ``y`` ``(row, item)``, integer codes with ``-1`` for missing.
* ``posterior.attrs``: the engine's settings, JSON-serialisable; ``labels_json`` maps every
  column to its labels.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..data import Dataset
from ..errors import ArgumentTypeError, LcbayesError
from ..render import json_value
from ..validation import check_choice

if TYPE_CHECKING:
    import arviz as az
    import xarray as xr

    from .results import SamplerResult

__all__ = ["ARRANGEMENTS", "arviz", "as_inference_data", "condition_on_k",
           "inference_data_from_dict", "inference_data_to_dict", "item_columns", "k_shares",
           "lc_inference_data", "network_inference_data", "observed_dataset", "select_draws",
           "settings_from_json", "with_class_log_likelihood"]

#: How a ``k``-conditioned selection arranges its draws (:func:`select_draws`).
ARRANGEMENTS = ("keep", "flatten")


def arviz():
    """ArviZ, imported on first use (it brings matplotlib) and without its once-a-day notice of
    a coming major version, a ``FutureWarning`` about ArviZ rather than the user's results."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing",
                                category=FutureWarning)
        import arviz as az
    return az


def xarray():
    """xarray, imported on first use (a quarter of a second that the command line's parser
    and ``lcbayes fit`` do not need)."""
    import xarray as xr
    return xr


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
    coords: dict[str, np.ndarray | list[str]] = {
        "chain": np.arange(n_chains), "draw": np.arange(n_draws), "class": np.arange(1, slots + 1)}
    weights = np.asarray(weights, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    posterior: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
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
    label_strings = {c: [str(v) for v in lab]
                     for c, lab in zip(data.columns, data.labels, strict=True)}
    sample_stats: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
        "log_likelihood": (("chain", "draw"), np.asarray(log_likelihood)),
        "log_joint": (("chain", "draw"), np.asarray(log_joint))}
    for name, (dims, values) in (stats or {}).items():
        sample_stats[name] = (("chain", "draw", *dims), np.asarray(values))
    chain_draw = {"chain": coords["chain"], "draw": coords["draw"]}
    xr = xarray()
    return arviz().InferenceData(
        posterior=xr.Dataset(posterior, coords=coords,
                             attrs={**attrs, "labels_json": json.dumps(label_strings)}),
        sample_stats=xr.Dataset(sample_stats, coords={**chain_draw, **(stat_coords or {})}),
        observed_data=xr.Dataset(
            {"y": (("row", "item"), np.asarray(data.codes, dtype=np.int64))},
            coords={"row": np.arange(data.n_rows), "item": list(data.columns)}),
    )


def network_inference_data(structure, data: Dataset, tables: np.ndarray,
                           log_likelihood: np.ndarray, log_joint: np.ndarray, attrs: dict
                           ) -> az.InferenceData:
    """The ``InferenceData`` of an HLC or DAG structure's draws: ``posterior`` holds one
    variable ``theta_<node>`` per CPT, ``(chain, draw, *parents, node)``, a hidden node's
    states on the dim ``<node>`` (coordinates ``0 .. r - 1``), an observed node's on
    ``<node>_category`` (its labels as strings); ``sample_stats`` and ``observed_data`` as
    in the module docstring. ``tables``: ``(C, D, F)`` CPTs laid end to end
    (:mod:`lcbayes.inference.flat`)."""
    from ..inference.flat import offsets

    n_chains, n_draws = tables.shape[:2]
    coords: dict[str, np.ndarray | list[str]] = {"chain": np.arange(n_chains),
                                                 "draw": np.arange(n_draws)}
    dims = [name if hidden else f"{name}_category"
            for name, hidden in zip(structure.nodes, structure.hidden, strict=True)]
    for i, dim in enumerate(dims):
        coords[dim] = [str(label) for label in structure.labels[i]]
    start = offsets(structure.table_shapes)
    posterior = {}
    for i, name in enumerate(structure.nodes):
        shape = structure.cpt_shape(i)
        posterior[f"theta_{name}"] = (
            ("chain", "draw", *(dims[p] for p in structure.parents[i]), dims[i]),
            np.asarray(tables[:, :, start[i]:start[i + 1]], dtype=np.float64).reshape(
                n_chains, n_draws, *shape))
    xr = xarray()
    chain_draw = {"chain": coords["chain"], "draw": coords["draw"]}
    return arviz().InferenceData(
        posterior=xr.Dataset(posterior, coords=coords, attrs=attrs),
        sample_stats=xr.Dataset({"log_likelihood": (("chain", "draw"), log_likelihood),
                                 "log_joint": (("chain", "draw"), log_joint)},
                                coords=chain_draw),
        observed_data=xr.Dataset(
            {"y": (("row", "item"), np.asarray(data.codes, dtype=np.int64))},
            coords={"row": np.arange(data.n_rows), "item": list(data.columns)}),
    )


def inference_data_to_dict(idata: az.InferenceData) -> dict:
    """Every group of ``idata`` as JSON-ready values: per group its attributes, coordinates and
    variables (dims, dtype and nested lists; NaN as ``None``). :func:`inference_data_from_dict`
    reads it back. The ``log_likelihood`` group (chains x draws x rows) is left out: it follows
    from the draws and ``observed_data``, and ``SamplerResult.from_dict`` computes it again."""
    def variable(var: xr.DataArray) -> dict:
        return {"dims": list(var.dims), "dtype": str(var.dtype),
                "data": json_value(var.values)}

    return {group: {"attrs": json_value(dict(idata[group].attrs)),
                    "coords": {str(c): variable(idata[group][c]) for c in idata[group].coords},
                    "data_vars": {str(v): variable(idata[group][v])
                                  for v in idata[group].data_vars}}
            for group in idata.groups() if group != "log_likelihood"}


def inference_data_from_dict(spec: dict) -> az.InferenceData:
    """The ``InferenceData`` of :func:`inference_data_to_dict`."""
    def array(var: dict) -> tuple[tuple[str, ...], np.ndarray]:
        dtype = np.dtype(var["dtype"]) if var["dtype"] != "object" else object
        if np.issubdtype(dtype, np.floating):
            values = np.array(var["data"], dtype=np.float64).astype(dtype)
        else:
            values = np.array(var["data"], dtype=dtype)
        return tuple(var["dims"]), values

    groups, xr = {}, xarray()
    for group, content in spec.items():
        coords = {c: array(v) for c, v in content["coords"].items()}
        data_vars = {v: array(d) for v, d in content["data_vars"].items()}
        groups[group] = xr.Dataset(data_vars, coords=coords, attrs=content["attrs"])
    return arviz().InferenceData(**groups)


def settings_from_json(settings: dict) -> dict:
    """A sampler's settings after a JSON round trip: ``prior_k`` keyed by ``K`` (integers, as
    the samplers record it) and a seed of several words as a tuple."""
    out = dict(settings)
    if isinstance(out.get("prior_k"), dict):
        out["prior_k"] = {int(k): float(p) for k, p in out["prior_k"].items()}
    if isinstance(out.get("seed"), list):
        out["seed"] = tuple(int(w) for w in out["seed"])
    return out


def as_inference_data(draws) -> az.InferenceData:
    """The ``InferenceData`` of a sampler result (:class:`~lcbayes.GibbsResult`,
    :class:`~lcbayes.RJMCMCResult`), or ``draws`` itself when it already is one."""
    convert = getattr(draws, "to_inference_data", None)
    if callable(convert):
        return convert()
    if isinstance(draws, arviz().InferenceData):
        return draws
    raise ArgumentTypeError(f"expected the result of lcb.gibbs or lcb.rjmcmc (or its "
                            f"InferenceData), got {type(draws).__name__}")


def item_columns(idata: az.InferenceData) -> list[str]:
    """The item columns, after checking the groups and variables the contract promises."""
    for group in ("posterior", "observed_data"):
        if group not in idata.groups():
            raise LcbayesError(f"the InferenceData has no {group} group (groups: "
                               f"{', '.join(idata.groups())}); pass the output of lcb.gibbs "
                               "or lcb.rjmcmc")
    post = idata["posterior"]
    if "class_weights" not in post:
        raise LcbayesError("posterior has no variable 'class_weights' (variables: "
                           f"{', '.join(map(str, post.data_vars))}); pass the output of "
                           "lcb.gibbs or lcb.rjmcmc")
    if "y" not in idata["observed_data"] or "item" not in idata["observed_data"]["y"].dims:
        raise LcbayesError("observed_data needs a variable 'y' with dims ('row', 'item') of "
                           "integer codes (-1 = missing)")
    items = [str(c) for c in idata["observed_data"]["item"].values]
    missing = [f"theta_{c}" for c in items if f"theta_{c}" not in post]
    if missing:
        raise LcbayesError(f"posterior lacks {', '.join(missing)} for the observed items "
                           f"{items}")
    for name in ["class_weights", *(f"theta_{c}" for c in items)]:
        if not {"chain", "draw", "class"} <= set(post[name].dims):
            raise LcbayesError(f"posterior variable {name} has dims {post[name].dims}; "
                               "expected ('chain', 'draw', 'class', ...)")
    return items


def select_draws(idata: az.InferenceData, k: int | None, chains: str = "keep"
                 ) -> tuple[az.InferenceData, np.ndarray, np.ndarray]:
    """The draws with ``k`` classes (all draws of fixed-``K`` output, ``k=None``) arranged by
    ``chains`` (``"keep"`` or ``"flatten"``, :mod:`lcbayes.samplers.relabelling`), and the
    input chain and draw of each."""
    check_choice(chains, "chains", ARRANGEMENTS)
    post = idata["posterior"]
    n_chains, n_draws = post.sizes["chain"], post.sizes["draw"]
    n_slots = post.sizes["class"]
    if "k" not in post:
        if k is not None and k != n_slots:
            raise LcbayesError(f"n_classes={k} was given but the posterior has no variable 'k' "
                               f"(fixed-K output with {n_slots} classes); leave n_classes=None")
        grid = np.indices((n_chains, n_draws))
        return idata, grid[0], grid[1]
    ks = post["k"].transpose("chain", "draw").values.astype(int)
    visited = dict(zip(*np.unique(ks, return_counts=True), strict=True))
    seen = ", ".join(f"K={v}: {n} draws" for v, n in visited.items())
    if k is None:
        raise LcbayesError(f"the posterior has a variable 'k' (reversible jump output); pass "
                           f"n_classes=K to relabel the draws with K classes ({seen})")
    if k not in visited:
        raise LcbayesError(f"no draw has n_classes={k}; the draws visit {seen}")
    hits = [np.flatnonzero(row == k) for row in ks]
    if chains == "flatten":
        src_chain = np.concatenate([np.full(len(h), c) for c, h in enumerate(hits)])[None]
        src_draw = np.concatenate(hits)[None]
    else:
        kept = [c for c, h in enumerate(hits) if len(h)]
        n = min(len(hits[c]) for c in kept)
        src_chain = np.repeat(np.array(kept)[:, None], n, axis=1)
        src_draw = np.stack([hits[c][:n] for c in kept])
    xr = xarray()
    index = {"chain": xr.DataArray(src_chain, dims=("chain", "draw")),
             "draw": xr.DataArray(src_draw, dims=("chain", "draw"))}
    groups = {}
    for group in idata.groups():
        ds = idata[group]
        if {"chain", "draw"} <= set(ds.dims):
            ds = ds.isel(index).drop_vars(["chain", "draw"]).assign_coords(
                chain=np.arange(src_chain.shape[0]), draw=np.arange(src_chain.shape[1]))
            if "class" in ds.dims:
                ds = ds.isel({"class": slice(0, k)})
            if group == "posterior":
                ds = ds.drop_vars("k").assign_attrs(relabel_k=int(k))
        groups[group] = ds
    return arviz().InferenceData(**groups), src_chain, src_draw


def condition_on_k(idata: az.InferenceData | SamplerResult, n_classes: int, *,
                   chains: str = "keep") -> az.InferenceData:
    """Reversible jump draws with ``n_classes`` classes and their first ``n_classes`` class
    slots, arranged as in the module docstring (``chains="keep"`` or ``"flatten"``), not
    relabelled, with the ``log_likelihood`` group of their rows
    (:mod:`lcbayes.samplers.pointwise`), so ``az.loo`` runs on them. ``idata``: an
    :class:`~lcbayes.RJMCMCResult` or its ``InferenceData``."""
    idata = as_inference_data(idata)
    item_columns(idata)
    out = select_draws(idata, n_classes, chains)[0]
    if "log_likelihood" not in out.groups():  # reversible jump draws have none of their own
        with_class_log_likelihood(out)
    return out


def with_class_log_likelihood(idata: az.InferenceData) -> az.InferenceData:
    """``idata`` (latent class draws with one number of classes) with the ``log_likelihood``
    group of its rows (:mod:`lcbayes.samplers.pointwise`), the data read from
    :func:`observed_dataset`."""
    from ..constructors import latent_class
    from .pointwise import with_log_likelihood
    data = observed_dataset(idata)
    return with_log_likelihood(idata, latent_class(data, idata["posterior"].sizes["class"]),
                               data)


def observed_dataset(idata: az.InferenceData) -> Dataset:
    """The data the draws were made on, from ``observed_data`` and the labels of
    ``posterior.attrs["labels_json"]`` (as strings)."""
    labels = json.loads(idata["posterior"].attrs["labels_json"])
    columns = [str(c) for c in idata["observed_data"]["item"].values]
    return Dataset.from_codes(np.asarray(idata["observed_data"]["y"].values), columns=columns,
                              labels=[labels[c] for c in columns])


def k_shares(idata: az.InferenceData) -> dict[int, float]:
    """``{K: share of all draws with k = K}`` for every ``K = 1 .. S`` (``S`` class slots, the
    largest number of classes), unvisited ``K`` included with share 0."""
    k = np.asarray(idata["posterior"]["k"]).astype(int).ravel()
    slots = idata["posterior"].sizes["class"]
    shares = np.bincount(k, minlength=slots + 1)[1:slots + 1] / k.size
    return {K: float(v) for K, v in enumerate(shares, start=1)}
