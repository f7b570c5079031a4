"""The JSON forms of :class:`~lcbayes.comparison.table.ComparisonResult`: the table with the
run's record (:func:`summary_dict`, what the command line prints) and the lossless form
(:func:`comparison_to_dict`: every engine result and the data as well), which
:func:`comparison_from_dict` reads back into the same results, table and reports."""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..data import Dataset
from ..errors import ArgumentError
from ..render import json_value
from ..structure import Structure, json_label
from . import registry
from .evidence import POSTERIOR_DRAWS, POSTERIOR_LEVEL

if TYPE_CHECKING:
    from .table import ComparisonResult

__all__ = ["comparison_from_dict", "comparison_to_dict", "dataset_from_dict", "dataset_to_dict",
           "metadata", "summary_dict"]


def metadata(comp: ComparisonResult) -> dict:
    """The run's record: data shape, methods, settings, seeds, seconds, versions, flag
    thresholds and why exact evidences are missing."""
    d = comp.data
    thresholds = {k: v for f in registry.flags() for k, v in f.thresholds.items()}
    return {
        "data": {"n_rows": d.n_rows, "n_observed_rows": d.n_observed_rows,
                 "n_columns": d.n_columns, "n_patterns": d.n_patterns,
                 "columns": list(d.columns), "cardinalities": list(d.cardinalities)},
        "candidates": [{"name": n, "kind": s.kind, "structure": s.to_dict()}
                       for n, s in zip(comp.names, comp.structures, strict=True)],
        "methods": list(comp.methods),
        "settings": dict(comp.settings),
        "seeds": dict(comp.seeds),
        "seconds": dict(comp.seconds),
        "versions": dict(comp.versions),
        "thresholds": {**thresholds, "POSTERIOR_DRAWS": POSTERIOR_DRAWS,
                       "POSTERIOR_LEVEL": POSTERIOR_LEVEL},
        "exact_notes": {n: note for n, note in zip(comp.names, comp.exact_notes, strict=True)
                        if note},
        "flags": {f.name: f.description for f in registry.flags()},
        "best": comp.best,
        "best_is_largest": comp.best_is_largest,
        "notes": comp.notes(),
    }


def summary_dict(comp: ComparisonResult) -> dict:
    """``{"rows": [one JSON-ready object per candidate], "metadata": {...}}``: NaN and
    missing values are ``None``, ``flags`` a list of names; with covariates also
    ``"covariate_effects"``: one object per number of classes (its table)."""
    rows = []
    for record in comp.to_frame().to_dict(orient="records"):
        row = {k: json_value(v) for k, v in record.items()}
        row["flags"] = [f for f in record["flags"].split(",") if f]
        rows.append(row)
    out = {"rows": rows, "metadata": json_value(metadata(comp))}
    if comp.covariate_effects is not None:
        out["covariate_effects"] = json_value(
            comp.covariate_effects.to_frame().to_dict(orient="records"))
    return out


def dataset_to_dict(data: Dataset) -> dict:
    """A data set as JSON-ready values: columns, labels (as :meth:`Structure.to_dict` writes
    them) and the rows' codes; :func:`dataset_from_dict` reads it back."""
    return {"columns": list(data.columns),
            "labels": [[json_label(v) for v in labels] for labels in data.labels],
            "codes": data.codes.tolist()}


def dataset_from_dict(spec: dict) -> Dataset:
    """The data set of :func:`dataset_to_dict`: the same rows, patterns and counts."""
    codes = np.asarray(spec["codes"], dtype=np.int32).reshape(-1, len(spec["columns"]))
    with warnings.catch_warnings():  # rows with nothing observed were warned of once already
        warnings.simplefilter("ignore")
        return Dataset.from_codes(codes, columns=spec["columns"], labels=spec["labels"])


def _fit_to_json(value):
    """An engine's result as ``{"result": class name, "module": ..., "value": to_dict()}``;
    numbers and ``None`` as they are."""
    if hasattr(value, "to_dict"):
        kind = type(value)
        return {"result": kind.__name__, "module": kind.__module__, "value": value.to_dict()}
    return json_value(value)


def _fit_from_json(spec):
    """The result of :func:`_fit_to_json`, by the ``from_dict`` of its class (whose module must
    be imported: lcbayes' own are; a registered need's is imported where it registers)."""
    if not isinstance(spec, dict):
        return spec
    kind = getattr(sys.modules.get(spec["module"]), spec["result"], None)
    if not hasattr(kind, "from_dict"):
        raise ArgumentError(f"cannot read back a {spec['result']} of {spec['module']}: import "
                            "the module that defines it (and registers its need) first")
    return kind.from_dict(spec["value"])


def comparison_to_dict(comp: ComparisonResult) -> dict:
    """:func:`summary_dict` with every engine result (``fits``, one per candidate, ``None``
    where it did not run) and the data compared on."""
    out = {**summary_dict(comp),
           "fits": {need: [_fit_to_json(r) for r in results]
                    for need, results in comp.fits.items()},
           "data": dataset_to_dict(comp.data)}
    if comp.covariate_effects is not None:
        out["covariate_effects"] = comp.covariate_effects.to_dict()
    return out


def comparison_from_dict(cls: type[ComparisonResult], spec: dict) -> ComparisonResult:
    """The :class:`ComparisonResult` of :func:`comparison_to_dict` (e.g. after a JSON round
    trip): the same results, so the same table (rebuilt from them) and reports."""
    meta = spec["metadata"]
    names = tuple(c["name"] for c in meta["candidates"])
    return cls(
        names=names,
        structures=tuple(Structure.from_dict(c["structure"]) for c in meta["candidates"]),
        methods=tuple(meta["methods"]),
        fits={need: tuple(_fit_from_json(r) for r in results)
              for need, results in spec["fits"].items()},
        exact_notes=tuple(meta["exact_notes"].get(n) for n in names),
        data=dataset_from_dict(spec["data"]), settings=dict(meta["settings"]),
        seeds={k: tuple(v) if isinstance(v, list) else v for k, v in meta["seeds"].items()},
        seconds=dict(meta["seconds"]), versions=dict(meta["versions"]),
        covariate_effects=_effects_from_json(spec.get("covariate_effects")))


def _effects_from_json(spec: dict | None):
    """The covariate part of a comparison from its JSON form."""
    if spec is None:
        return None
    from .covariate_effects import CovariateEffects

    return CovariateEffects.from_dict(spec)
