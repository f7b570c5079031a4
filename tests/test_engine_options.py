"""The options of a comparison's engine runs (lcbayes.comparison.engine_options): the
comparison's own defaults, the sizes of its evidence runs on small data, and what a user gives
overriding both."""

from __future__ import annotations

from lcbayes.comparison import registry
from lcbayes.comparison.engine_options import (
    COMPARE_DEFAULTS,
    SMALL_DATA_DEFAULTS,
    SMALL_DATA_ROWS,
    resolve,
)


def _needs(*names: str) -> list[registry.Need]:
    known = {n.name: n for n in registry.needs()}
    return [known[name] for name in names]


def test_small_data_sizes_the_evidence_runs():
    options = resolve(None, _needs("smc", "bridge", "ais"), rows=SMALL_DATA_ROWS - 1)
    assert options["smc"] == SMALL_DATA_DEFAULTS["smc"]
    assert options["bridge"] == SMALL_DATA_DEFAULTS["bridge"]
    assert options["ais"] == COMPARE_DEFAULTS["ais"]


def test_from_the_small_data_bound_on_the_engines_defaults_apply():
    for rows in (SMALL_DATA_ROWS, None):
        options = resolve(None, _needs("smc", "bridge"), rows=rows)
        assert options == {"smc": {}, "bridge": {}}


def test_what_the_user_gives_overrides_the_small_data_sizes():
    options = resolve({"smc": {"particles": 512, "runs": 3}, "bridge": {"draws": 800}},
                      _needs("smc", "bridge"), rows=100)
    assert options["smc"] == {"particles": 512, "runs": 3}
    assert options["bridge"] == {"draws": 800, "warmup": SMALL_DATA_DEFAULTS["bridge"]["warmup"]}


def test_the_sizes_are_options_the_engines_take():
    # resolve checks what a user gives against the engine's signature; the defaults must pass
    # the same check
    options = resolve(SMALL_DATA_DEFAULTS, _needs("smc", "bridge"), rows=100)
    assert options == SMALL_DATA_DEFAULTS
