"""SMC over the rows for HLC trees and DAGs (lcb.smc on non-latent-class structures): within
the error of the exact evidence on small problems (missing values, two hidden parents, an
observed parent whose value is sometimes missing), one round of runs over the rows with no
reference, and in compare the SMC estimate alone, bridge sampling having no estimate there."""

from __future__ import annotations

import numpy as np
import pytest

import lcbayes as lcb


def _codes(cards, n, seed, missing, columns):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    codes[rng.random(codes.shape) < missing] = -1
    codes[(codes < 0).all(axis=1), 0] = 0
    return lcb.Dataset.from_codes(codes, columns=list(columns))


def _hlc():
    data = _codes((2, 3, 2, 2), 12, 5, 0.1, "ABCD")
    return lcb.hlc(data, {"H": ["H1", "A", "B"], "H1": ["C", "D"]}, {"H": 2, "H1": 2}), data


def _observed_parent():
    data = _codes((2, 2, 3, 2), 14, 9, 0.3, "ABCD")
    parents = {"B": ["A", "H"], "C": ["H"], "D": ["C"]}
    return lcb.dag(data, parents=parents, hidden={"H": 2}), data


@pytest.mark.parametrize("make", [_hlc, _observed_parent], ids=["hlc", "dag_observed_parent"])
def test_network_smc_agrees_with_the_exact_evidence(make):
    structure, data = make()
    exact = lcb.exact_evidence(structure, data, max_terms=1e9).log_evidence
    result = lcb.smc(structure, data, particles=64, runs=6, target_stderr=None, seed=0)
    assert abs(result.log_evidence - exact) < 3 * result.stderr + 0.02
    assert 0 < result.stderr < 0.2 and result.reason == ""
    assert result.method == "rows" and result.runs == 6
    # no reference: no components, no final correction, nothing that could move
    assert np.all(result.run_components == 0) and np.isnan(result.run_correction).all()
    assert result.reference_stable and np.isnan(result.moved)
    assert result.stderr == result.runs_stderr
    assert result.n_classes is None and structure.kind in result.summary()


def test_network_smc_refuses_class_padding():
    structure, data = _hlc()
    with pytest.raises(lcb.ArgumentError, match="pad_classes"):
        lcb.smc(structure, data, pad_classes=3)


def test_compare_gives_an_hlc_candidate_the_smc_evidence_without_a_flag():
    structure, data = _hlc()
    lc = lcb.latent_class(data, 2)
    # the HLC runs of test_network_smc_agrees_with_the_exact_evidence[hlc] (their compiled
    # program serves); LC(2) with small SMC and bridge runs (the numbers are not the point)
    options = {"smc": {"particles": 64, "runs": 6, "target_stderr": None, "max_components": 2},
               "bridge": {"runs": 2, "draws": 200, "warmup": 50}}
    comp = lcb.compare(data, {"LC2": lc, "HLC": structure}, methods=["bic", "smc"], seed=0,
                       engine_options=options)
    row = comp.to_frame().set_index("name").loc["HLC"]
    assert np.isfinite(row["smc"]) and np.isnan(row["bridge"])
    assert comp.fits["bridge"][list(comp.names).index("HLC")] is None  # latent class only
    assert row["evidence_method"] == "smc" and row["log_evidence"] == row["smc_evidence"]
    assert row["smc_evidence"] == row["smc"] and row["smc_evidence_stderr"] == row["smc_stderr"]
    assert "smc_no_estimate" not in row["flags"] and "evidence_disagree" not in row["flags"]
    lc_row = comp.to_frame().set_index("name").loc["LC2"]
    assert np.isfinite(lc_row["smc"]) and np.isfinite(lc_row["bridge"])
    assert not comp.best_is_largest or comp.best == "LC2"
