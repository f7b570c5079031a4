"""The lossless JSON form of :class:`~lcbayes.samplers.diagnostics.DiagnosticsResult`: its
summary (what the command line prints) with the draws, the relabelling, the whole ``az.summary``
table and the settings, read back by :func:`diagnostics_from_dict`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..render import json_value, record_from_dict
from .idata import inference_data_from_dict, inference_data_to_dict, settings_from_json
from .relabelling import RelabelResult

if TYPE_CHECKING:
    from .diagnostics import DiagnosticsResult

__all__ = ["diagnostics_from_dict", "diagnostics_to_dict", "frame_from_json", "frame_to_json"]


def frame_to_json(frame: pd.DataFrame) -> dict:
    """A table with a text index as ``{"index": [...], "columns": {name: [values]}}`` (NaN as
    ``None``); :func:`frame_from_json` reads it back."""
    return {"index": [str(i) for i in frame.index],
            "columns": {str(c): json_value(frame[c].to_numpy()) for c in frame.columns}}


def frame_from_json(spec: dict) -> pd.DataFrame:
    """The table of :func:`frame_to_json`; a column of numbers (``None`` for NaN) as floats."""
    def column(values: list) -> np.ndarray:
        numeric = all(v is None or (isinstance(v, int | float) and not isinstance(v, bool))
                      for v in values)
        return np.asarray(values, dtype=np.float64 if numeric else object)

    return pd.DataFrame({c: column(v) for c, v in spec["columns"].items()},
                        index=list(spec["index"]))


def diagnostics_to_dict(result: DiagnosticsResult) -> dict:
    """:meth:`~DiagnosticsResult.summary_dict` with the input draws, the summarised draws (as
    the relabelling holds them, else on their own), the relabelling, the whole table, the
    settings and ``max_rank_panels``."""
    relabelled = result.relabelled
    return {
        **result.summary_dict(),
        "inference_data": inference_data_to_dict(result.idata),
        "summarised_draws": (inference_data_to_dict(result.draws) if relabelled is None
                             else None),
        "relabelled": relabelled.to_dict() if relabelled is not None else None,
        "table": frame_to_json(result.table),
        "settings": json_value(result.settings),
        "max_rank_panels": result.max_rank_panels,
    }


def diagnostics_from_dict(cls: type[DiagnosticsResult], spec: dict) -> DiagnosticsResult:
    """The :class:`DiagnosticsResult` of :func:`diagnostics_to_dict`."""
    relabelled = (RelabelResult.from_dict(spec["relabelled"]) if spec["relabelled"] is not None
                  else None)
    draws = (relabelled.idata if relabelled is not None
             else inference_data_from_dict(spec["summarised_draws"]))
    return record_from_dict(cls, spec, idata=inference_data_from_dict(spec["inference_data"]),
                            draws=draws, relabelled=relabelled,
                            table=frame_from_json(spec["table"]),
                            settings=settings_from_json(spec["settings"]))
