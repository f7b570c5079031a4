"""``compare(..., engine_options={need: {option: value}})``: the options of the engine runs
behind the methods (:class:`~.registry.Need`), checked before anything runs.

Every need takes options under its own name: ``{"ais": {"chains": 32}, "smc": {"particles":
256}, "blrt": {"replicates": 99}, "em": {"max_iter": 500}, "exact": {"max_terms": 1e6}}``.
A
need names the engine function whose keyword arguments it accepts (:attr:`Need.engine`); a
registered need without one receives its options unchecked. What the comparison itself sets
for every engine (the seed, the restarts, the starting fit, the padding, the progress bar, the
executor, the SMC time share) cannot be given here: it is an argument of :func:`compare`.
The defaults are the engines' own, except :data:`COMPARE_DEFAULTS` and, on fewer than
:data:`SMALL_DATA_ROWS` rows, :data:`SMALL_DATA_DEFAULTS`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from ..errors import ArgumentError
from . import registry

__all__ = ["COMPARE_DEFAULTS", "SET_BY_COMPARE", "SMALL_DATA_DEFAULTS", "SMALL_DATA_ROWS",
           "resolve"]

#: Where the comparison's default differs from the engine's: AIS runs groups of chains until
#: its standard error is at most 0.15; the exact evidence stops at 2e5 count tables.
COMPARE_DEFAULTS: dict[str, dict] = {"ais": {"target_stderr": 0.15},
                                     "exact": {"max_terms": 2e5}}

#: Below this many rows the comparison sizes its evidence runs by :data:`SMALL_DATA_DEFAULTS`.
SMALL_DATA_ROWS = 500

#: The evidence runs of a comparison on small data, sized to the error the table needs: its
#: posterior model probabilities need log evidences to a tenth of a nat or so; the engines'
#: defaults (256 particles, 1000 draws) are sized for the harder posteriors of larger data.
SMALL_DATA_DEFAULTS: dict[str, dict] = {"smc": {"particles": 128},
                                        "bridge": {"draws": 250, "warmup": 100}}

#: Engine arguments the comparison sets itself (module docstring).
SET_BY_COMPARE = ("structure", "data", "seed", "restarts", "init", "fit", "fits", "progress",
                  "pad_classes", "executor", "scheduler", "workers", "time_limit", "n_classes")


def _accepted(engine) -> set[str] | None:
    """The keyword options ``engine`` accepts (``None``: any, it takes ``**kwargs``)."""
    params = inspect.signature(engine).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def _check_need(name: str, options, need: registry.Need) -> dict:
    if not isinstance(options, Mapping):
        raise ArgumentError(f"engine_options[{name!r}] must be a dict of options, got "
                            f"{type(options).__name__}")
    options = dict(options)
    fixed = sorted(set(options) & set(SET_BY_COMPARE))
    if fixed:
        raise ArgumentError(f"engine_options[{name!r}] sets {fixed}, which compare sets for "
                            f"every engine: pass them to lcb.compare itself (seed, restarts, "
                            f"time_limit, workers, ...)")
    accepted = None if need.engine is None else _accepted(need.engine)
    unknown = sorted(set(options) - accepted) if accepted is not None else []
    if unknown:
        assert accepted is not None and need.engine is not None  # whence unknown options
        choices = sorted(accepted - set(SET_BY_COMPARE))
        takes = (f"{need.engine.__name__} takes {choices}" if choices
                 else f"the {name!r} engine takes none")
        raise ArgumentError(f"engine_options[{name!r}] has unknown options {unknown}; {takes}")
    return options


def resolve(engine_options: Mapping[str, Mapping] | None,
            needed: list[registry.Need], rows: int | None = None) -> dict[str, dict]:
    """``{need: options}`` for every need in ``needed``: :data:`COMPARE_DEFAULTS` (and on
    fewer than :data:`SMALL_DATA_ROWS` ``rows``, :data:`SMALL_DATA_DEFAULTS`) updated by
    ``engine_options``, checked (module docstring). Options for a registered need that this
    comparison does not run are checked too, then left out."""
    given = {} if engine_options is None else engine_options
    if not isinstance(given, Mapping):
        raise ArgumentError(f"engine_options must be a dict {{engine: {{option: value}}}}, got "
                            f"{type(given).__name__}")
    known = {n.name: n for n in registry.needs()}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ArgumentError(f"engine_options has unknown engines {unknown}; the engines are "
                            f"{sorted(known)}")
    checked = {name: _check_need(name, opts, known[name]) for name, opts in given.items()}
    small = rows is not None and rows < SMALL_DATA_ROWS
    return {n.name: {**COMPARE_DEFAULTS.get(n.name, {}),
                     **(SMALL_DATA_DEFAULTS.get(n.name, {}) if small else {}),
                     **checked.get(n.name, {})}
            for n in needed}
