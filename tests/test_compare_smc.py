"""compare's default evidence route, SMC over the rows with bridge sampling: its columns, the
choice of each row's evidence, its flags (disagreement, below the VB bound, no estimate, Chib
disagreeing), the time budget and the command line's options."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main as cli_main
from lcbayes.comparison import default_methods


@pytest.fixture(scope="module")
def two_class() -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]))
    model = lcb.latent_class(template, 2)
    return lcb.simulate(model, lcb.random_params(model, seed=1), 150, seed=1)


@pytest.fixture(scope="module")
def comp(two_class) -> lcb.ComparisonResult:
    return lcb.compare(two_class, n_classes=[1, 2], methods=("vbem", "smc"), restarts=2, seed=0,
                       engine_options={"smc": {"particles": 64, "runs": 3}}, progress=False)


def _result(run_smc, run_bridge) -> lcb.SMCResult:
    """An SMC result with the given runs' estimates (the other fields are settings)."""
    runs = len(run_smc)
    return lcb.SMCResult.from_runs(
        run_smc, run_bridge, run_steps=np.ones(runs, dtype=np.int64),
        run_seconds=np.ones(runs), n_classes=2, particles=8, sweeps=1, ess_target=0.9,
        bridge_draws=8, seed=0, seconds=1.0)


def test_smc_is_a_default_method_and_ais_is_not():
    assert "smc" in default_methods() and "ais" not in default_methods()


def test_columns_and_the_evidence_of_each_row(comp):
    frame = comp.to_frame()
    assert {"smc_evidence", "smc_evidence_stderr", "bridge", "bridge_stderr", "smc",
            "smc_stderr", "rank_smc"} <= set(frame)
    one, two = frame.iloc[0], frame.iloc[1]
    assert one["evidence_method"] == "exact"  # one class: the closed form
    assert one["smc"] == pytest.approx(one["exact"], abs=1e-6)
    assert two["evidence_method"] == "smc"
    assert two["log_evidence"] == two["smc_evidence"]
    assert two["smc_evidence"] >= two["elbo"]  # F is a lower bound
    assert comp.settings["engine_options"]["smc"]["runs"] == 3 and comp.seeds["smc"] == 0
    assert comp.fits["smc"][1].runs == 3


def test_an_estimate_below_the_bound_is_vetoed(comp):
    vb = comp.vbem[1].elbo
    low = _result([vb - 5.0, vb - 5.1], [vb - 5.0, vb - 5.05])
    frame = comp.with_fits(smc=(comp.fits["smc"][0], low)).to_frame()
    row = frame.iloc[1]
    assert "smc_below_vbem" in row["flags"]
    assert row["evidence_method"] == "vbem"  # the next estimate
    # an estimate on the bound to rounding (exact at one class: F = ln Z) is not flagged
    rounding = _result([vb - 1e-7] * 2, [vb - 1e-7] * 2)
    frame = comp.with_fits(smc=(comp.fits["smc"][0], rounding)).to_frame()
    assert "smc_below_vbem" not in frame.iloc[1]["flags"]
    assert "smc_below_vbem" not in comp.to_frame().iloc[0]["flags"]


def test_disagreement_and_missing_estimates_are_flagged(comp):
    truth = float(comp.to_frame().iloc[1]["smc_evidence"])
    apart = _result([truth + 3.0, truth + 3.1, truth + 2.9], [truth, truth + 0.01, truth - 0.01])
    assert not apart.agree
    frame = comp.with_fits(smc=(comp.fits["smc"][0], apart)).to_frame()
    assert "smc_disagree" in frame.iloc[1]["flags"]
    assert frame.iloc[1]["log_evidence"] == pytest.approx(apart.smc_log_evidence)  # the larger
    wide = _result([truth, truth - 4.0], [truth, truth + 0.01])
    assert wide.smc_reason and math.isnan(wide.smc_log_evidence)
    frame = comp.with_fits(smc=(comp.fits["smc"][0], wide)).to_frame()
    assert "smc_no_estimate" in frame.iloc[1]["flags"]
    assert frame.iloc[1]["log_evidence"] == pytest.approx(wide.bridge_log_evidence)


def test_chib_is_the_independent_check(two_class):
    both = lcb.compare(two_class, n_classes=[2], methods=("vbem", "smc", "chib"), restarts=2,
                       seed=0, engine_options={"smc": {"particles": 64, "runs": 3}},
                       exact=False, progress=False)
    row = both.to_frame().iloc[0]
    assert abs(row["smc_evidence"] - row["chib"]) < 3 * math.hypot(
        row["smc_evidence_stderr"], row["chib_stderr"]) + 0.05
    assert "chib_disagree" not in row["flags"]
    chib = both.fits["chib"][0]
    shifted = dataclasses.replace(chib, log_evidence=chib.log_evidence + 5.0)
    assert "chib_disagree" in both.with_fits(chib=(shifted,)).to_frame().iloc[0]["flags"]


def test_time_limit_is_shared_and_recorded(two_class):
    # the candidates and particles of the comp fixture: its compiled SMC programs serve, so
    # the seconds are the runs' own (compiling would be most of them)
    timed = lcb.compare(two_class, n_classes=[1, 2], methods=("smc",), seed=0,
                        engine_options={"smc": {"particles": 64, "runs": 20}},
                        time_limit=1e-3, exact=False, progress=False)
    assert timed.settings["time_limit"] == 1e-3
    assert all(r.runs == 2 and r.settings["stopped"] == "time_limit"
               for r in timed.fits["smc"])
    with pytest.raises(lcb.ArgumentError, match="time_limit"):
        lcb.compare(two_class, n_classes=[2], methods=("smc",), time_limit=-1, progress=False)


def test_command_line_options(tmp_path, capsys, two_class):
    path = tmp_path / "d.csv"
    two_class.to_pandas().to_csv(path, index=False)
    # 64 particles, as in the comp fixture: the same compiled SMC programs
    code = cli_main(["compare", str(path), "--n-classes", "2", "--methods", "smc",
                     "--engine-option", "smc.particles=64", "--engine-option", "smc.runs=2",
                     "--time-limit", "60",
                     "--exact", "no", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metadata"]["settings"]["engine_options"]["smc"] == {"particles": 64, "runs": 2}
    assert out["metadata"]["settings"]["time_limit"] == 60
    assert out["rows"][0]["evidence_method"] == "smc"
