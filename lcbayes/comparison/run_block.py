"""The run block at the end of every comparison report: the data, the settings of the methods
that ran (an engine's settings are left out where it did not run), the seeds, the seconds per
engine (summed over the candidates, which run side by side, so the parts can add up to more
than the total; engines that took no time left out), the versions and the flags' thresholds."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .table import ComparisonResult

__all__ = ["run_block"]

#: Settings that belong to one method: shown only where it ran.
_METHOD_SETTINGS = {"time_limit": "smc"}


def run_block(comp: ComparisonResult) -> dict[str, dict]:
    """``{heading: {name: value}}`` of the report's run block (module docstring)."""
    meta = comp.metadata()
    data = meta["data"]
    settings = {k: v for k, v in meta["settings"].items()
                if k != "engine_options" and all(not k.startswith(p) or m in comp.methods
                                                 for p, m in _METHOD_SETTINGS.items())}
    settings.update({f"{engine}.{name}": value
                     for engine, options in meta["settings"].get("engine_options", {}).items()
                     for name, value in options.items()})
    seconds = {k: f"{v:.2f}" for k, v in meta["seconds"].items() if v or k == "total"}
    return {
        "Data": {"rows": data["n_rows"], "rows with an observed value":
                 data["n_observed_rows"], "columns": ", ".join(data["columns"]),
                 "categories": ", ".join(map(str, data["cardinalities"])),
                 "distinct patterns": data["n_patterns"]},
        "Settings": {"methods": ", ".join(meta["methods"]), **settings},
        "Seeds": meta["seeds"],
        "Seconds": {"note": "each engine's summed over the candidates, which run side by "
                    "side: the parts can add up to more than the total", **seconds},
        "Versions": meta["versions"],
        "Thresholds": meta["thresholds"],
    }
