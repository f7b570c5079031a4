"""compare's default evidence route, reference-tempered SMC and bridge sampling combined: its
columns, the combination of the two estimates (their precision-weighted mean where they agree,
the union of their intervals where they do not), each row's evidence, its flags
(``evidence_disagree``, ``smc_below_vbem`` and its veto, ``smc_reference_moving``,
``smc_no_estimate``, ``chib_disagree``), the time budget and the command line's options."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy.special import ndtri

import lcbayes as lcb
from lcbayes.cli import main as cli_main
from lcbayes.comparison import default_methods
from lcbayes.comparison.policy import DISAGREE_SE

#: Small runs where the numbers are not the point (the same programs in every test here).
SMC = {"particles": 64, "runs": 3, "target_stderr": None, "max_components": 2}
BRIDGE = {"runs": 2, "draws": 200, "warmup": 50}
Z = float(ndtri(0.975))


@pytest.fixture(scope="module")
def two_class() -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]))
    model = lcb.latent_class(template, 2)
    return lcb.simulate(model, lcb.random_params(model, seed=1), 150, seed=1)


@pytest.fixture(scope="module")
def comp(two_class) -> lcb.ComparisonResult:
    return lcb.compare(two_class, n_classes=[1, 2], methods=("vbem", "smc"), restarts=2, seed=0,
                       engine_options={"smc": SMC, "bridge": BRIDGE}, progress=False)


def _smc(runs, *, moved: float = math.nan, stable: bool = True) -> lcb.SMCResult:
    """An SMC result with the given runs' estimates (the other fields are settings)."""
    n = len(runs)
    return lcb.SMCResult.from_runs(
        runs, moved=moved, reference_stable=stable, run_steps=np.ones(n, dtype=np.int64),
        run_seconds=np.ones(n), run_components=np.full(n, 2, dtype=np.int64),
        run_correction=np.zeros(n), n_classes=2, particles=8, sweeps=1, ess_target=0.9,
        method="reference", seed=0, seconds=1.0)


def _row(comp, smc=None, bridge: tuple[float, float] | None = None) -> dict:
    """LC(2)'s row with its SMC result replaced by ``smc`` and its bridge estimate by
    ``bridge`` = ``(value, s.e.)``."""
    replaced = {}
    if smc is not None:
        replaced["smc"] = (comp.fits["smc"][0], smc)
    if bridge is not None:
        real = comp.fits["bridge"][1]
        replaced["bridge"] = (comp.fits["bridge"][0], dataclasses.replace(
            real, log_evidence=bridge[0], stderr=bridge[1]))
    return comp.with_fits(**replaced).to_frame().iloc[1].to_dict()


def _flags(row: dict) -> set[str]:
    return set(row["flags"].split(",")) - {""}


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
    assert two["log_evidence_stderr"] == two["smc_evidence_stderr"]
    assert two["smc_evidence"] >= two["elbo"]  # F is a lower bound
    # the columns are the two engines' own estimates
    smc, bridge = comp.fits["smc"][1], comp.fits["bridge"][1]
    assert (two["smc"], two["smc_stderr"]) == (smc.log_evidence, smc.stderr)
    assert (two["bridge"], two["bridge_stderr"]) == (bridge.log_evidence, bridge.stderr)
    assert abs(two["smc"] - two["bridge"]) < 3 * math.hypot(smc.stderr, bridge.stderr) + 0.05
    assert comp.settings["engine_options"]["smc"]["runs"] == 3 and comp.seeds["smc"] == 0
    assert comp.settings["engine_options"]["bridge"]["draws"] == 200
    assert comp.seeds["bridge"] == 0
    assert smc.runs == 3 and bridge.runs == 2 and smc.method == "reference"
    # the posterior rests on the combined evidence
    assert frame["posterior_prob"].sum() == pytest.approx(1.0)


def test_agreeing_estimates_are_weighted_by_their_precision(comp):
    truth = float(comp.to_frame().iloc[1]["smc_evidence"])
    smc = _smc([truth - 0.1, truth + 0.1, truth])
    bridge = (truth + 0.2, 0.15)
    row = _row(comp, smc, bridge)
    assert not _flags(row) & {"evidence_disagree", "smc_no_estimate"}
    wa, wb = 1 / smc.stderr**2, 1 / bridge[1] ** 2
    assert row["smc_evidence"] == pytest.approx((wa * smc.log_evidence + wb * bridge[0])
                                                / (wa + wb))
    assert row["smc_evidence_stderr"] == pytest.approx(1 / math.sqrt(wa + wb))
    assert row["smc_evidence_stderr"] < min(smc.stderr, bridge[1])
    assert row["evidence_method"] == "smc" and row["log_evidence"] == row["smc_evidence"]


def test_disagreeing_estimates_are_flagged_and_get_the_union_of_their_intervals(comp):
    truth = float(comp.to_frame().iloc[1]["smc_evidence"])
    apart = _smc([truth + 3.0, truth + 3.1, truth + 2.9])
    bridge = (truth, 0.05)
    row = _row(comp, apart, bridge)
    assert abs(apart.log_evidence - truth) > DISAGREE_SE * math.hypot(apart.stderr, bridge[1])
    assert "evidence_disagree" in _flags(row)
    assert "SMC" in row["flag_notes"] and "bridge" in row["flag_notes"]
    low = min(apart.log_evidence - Z * apart.stderr, bridge[0] - Z * bridge[1])
    high = max(apart.log_evidence + Z * apart.stderr, bridge[0] + Z * bridge[1])
    assert row["log_evidence"] == pytest.approx((low + high) / 2)  # neither one chosen
    assert row["log_evidence_stderr"] == pytest.approx((high - low) / (2 * Z))
    assert row["evidence_method"] == "smc"  # still the evidence, with the wider bar
    # within the threshold: no flag
    close = _row(comp, _smc([truth + 0.05, truth + 0.1, truth]), (truth, 0.05))
    assert "evidence_disagree" not in _flags(close)


def test_an_estimate_below_the_bound_is_vetoed_and_the_bound_is_no_evidence(comp):
    vb = comp.vbem[1].elbo
    row = _row(comp, _smc([vb - 5.0, vb - 5.1]), (vb - 5.0, 0.05))
    assert "smc_below_vbem" in _flags(row)
    assert "below F" in row["flag_notes"]
    # the VB bound is not the fallback: with no other estimate requested, no evidence
    assert row["evidence_method"] == "none" and math.isnan(row["log_evidence"])
    assert np.isfinite(row["elbo"]) and np.isfinite(row["smc_evidence"])
    # an estimate on the bound to rounding (exact at one class: F = ln Z) is not flagged
    rounding = _row(comp, _smc([vb - 1e-7] * 2), (vb - 1e-7, 0.0))
    assert "smc_below_vbem" not in _flags(rounding) and rounding["evidence_method"] == "smc"
    assert "smc_below_vbem" not in comp.to_frame().iloc[0]["flags"]


def test_a_moving_reference_is_flagged_and_widens_the_error_bar(comp):
    truth = float(comp.to_frame().iloc[1]["smc_evidence"])
    runs = [truth - 0.05, truth + 0.05, truth]
    moving = _smc(runs, moved=0.8, stable=False)
    settled = _smc(runs, moved=0.8, stable=True)
    assert moving.stderr == pytest.approx(math.hypot(moving.runs_stderr, 0.8))
    assert settled.stderr == settled.runs_stderr < moving.stderr
    row = _row(comp, moving)
    assert "smc_reference_moving" in _flags(row)
    assert "moved the SMC estimate by 0.80" in row["flag_notes"]
    assert row["smc_stderr"] == moving.stderr
    assert "smc_reference_moving" not in _flags(_row(comp, settled))
    real = comp.fits["smc"][1]
    assert ("smc_reference_moving" in comp.to_frame().iloc[1]["flags"]) == (
        not real.reference_stable)


def test_missing_estimates_are_flagged_and_the_other_estimate_is_used(comp):
    truth = float(comp.to_frame().iloc[1]["smc_evidence"])
    bridge = (truth + 0.01, 0.05)
    # one finished SMC run: an estimate without a standard error
    one = _smc([truth + 0.5, math.nan])
    assert one.reason and math.isnan(one.stderr) and np.isfinite(one.log_evidence)
    row = _row(comp, one, bridge)
    assert "smc_no_estimate" in _flags(row)
    assert f"SMC: {one.reason}" in row["flag_notes"]
    assert "evidence_disagree" not in _flags(row)
    assert row["log_evidence"] == pytest.approx(bridge[0])
    assert row["log_evidence_stderr"] == pytest.approx(bridge[1])
    # no SMC run finished: the bridge estimate alone
    none = _smc([math.nan, math.nan])
    assert none.reason == "no run finished" and math.isnan(none.log_evidence)
    row = _row(comp, none, bridge)
    assert "smc_no_estimate" in _flags(row)
    assert row["log_evidence"] == pytest.approx(bridge[0]) and row["evidence_method"] == "smc"
    # bridge sampling without a standard error: the SMC estimate with its own
    smc = _smc([truth - 0.05, truth + 0.05, truth])
    row = _row(comp, smc, (truth + 0.3, math.nan))
    assert "smc_no_estimate" in _flags(row) and "bridge:" in row["flag_notes"]
    assert row["log_evidence"] == pytest.approx(smc.log_evidence)
    assert row["log_evidence_stderr"] == pytest.approx(smc.stderr)
    # neither: no evidence
    row = _row(comp, none, (math.nan, math.nan))
    assert row["evidence_method"] == "none" and math.isnan(row["log_evidence"])
    assert "smc_no_estimate" not in comp.to_frame().iloc[1]["flags"]


def test_chib_is_the_independent_check(two_class):
    both = lcb.compare(two_class, n_classes=[2], methods=("vbem", "smc", "chib"), restarts=2,
                       seed=0, engine_options={"smc": SMC, "bridge": BRIDGE},
                       exact=False, progress=False)
    row = both.to_frame().iloc[0]
    assert abs(row["smc_evidence"] - row["chib"]) < 3 * math.hypot(
        row["smc_evidence_stderr"], row["chib_stderr"]) + 0.05
    assert "chib_disagree" not in row["flags"]
    assert row["evidence_method"] == "smc"  # before Chib in the policy
    chib = both.fits["chib"][0]
    shifted = dataclasses.replace(chib, log_evidence=chib.log_evidence + 5.0)
    flagged = both.with_fits(chib=(shifted,)).to_frame().iloc[0]
    assert "chib_disagree" in flagged["flags"] and "Chib" in flagged["flag_notes"]
    # an unreliable Chib estimate is no check
    unreliable = dataclasses.replace(shifted, reliable=False, reason="chains disagree")
    assert "chib_disagree" not in both.with_fits(chib=(unreliable,)).to_frame().iloc[0]["flags"]


def test_time_limit_is_shared_and_recorded(two_class):
    # the candidates and particles of the comp fixture: its compiled SMC programs serve, so
    # the seconds are the runs' own (compiling would be most of them)
    timed = lcb.compare(two_class, n_classes=[1, 2], methods=("smc",), seed=0,
                        engine_options={"smc": {**SMC, "runs": 20}, "bridge": BRIDGE},
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
                     "--engine-option", "smc.max_components=2",
                     "--engine-option", "bridge.runs=2", "--engine-option", "bridge.draws=200",
                     "--engine-option", "bridge.warmup=50", "--time-limit", "60",
                     "--exact", "no", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    options = out["metadata"]["settings"]["engine_options"]
    assert options["smc"] == {"particles": 64, "runs": 2, "max_components": 2}
    assert options["bridge"] == {"runs": 2, "draws": 200, "warmup": 50}
    assert out["metadata"]["settings"]["time_limit"] == 60
    row = out["rows"][0]
    assert row["evidence_method"] == "smc"
    assert row["smc"] is not None and row["bridge"] is not None
