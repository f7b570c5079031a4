"""Honest failure in compare (issue 29): an AIS run carried by about one chain and a Chib
estimate whose chains disagree are flagged, with their reasons, and the row's log evidence
falls back to the next trusted estimate (here none: the VB bound is a bound, never the
evidence) instead of using them with an error bar."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.comparison.flags import SHORT_CODES
from lcbayes.comparison.registry import method
from lcbayes.params import from_tables


def _two_classes(n_rows: int = 300) -> lcb.Dataset:
    """5 binary items from 2 classes (weights 0.6 / 0.4, items 'yes' with probability 0.8 in
    one class and 0.2 in the other)."""
    template = lcb.Dataset.from_codes(np.repeat([[0], [1]], 5, axis=1))
    model = lcb.latent_class(template, 2)
    tables = (np.array([[0.6, 0.4]]), *(np.array([[0.2, 0.8], [0.8, 0.2]]),) * 5)
    return lcb.simulate(model, from_tables(model, tables), n_rows, seed=3)


@pytest.fixture(scope="module")
def data() -> lcb.Dataset:
    return _two_classes()


@pytest.fixture(scope="module")
def with_ais(data) -> lcb.ComparisonResult:
    return lcb.compare(data, n_classes=[2], methods=("vbem", "ais"), restarts=3, seed=0,
                       engine_options={"ais": {"chains": 16, "temperatures": 400,
                                               "target_stderr": None}},
                       exact=False, progress=False)


@pytest.fixture(scope="module")
def with_chib(data) -> lcb.ComparisonResult:
    return lcb.compare(data, n_classes=[2], methods=("vbem", "chib"), restarts=3, seed=0,
                       exact=False, progress=False)


def _row(comp: lcb.ComparisonResult) -> dict:
    return comp.to_frame().iloc[0].to_dict()


def _no_evidence(row: dict) -> bool:
    """Whether the row has no log evidence: with VBEM the only other method, nothing is next
    in line (its bound stays in its own column)."""
    return (row["evidence_method"] == "none" and np.isnan(row["log_evidence"])
            and np.isfinite(row["elbo_corrected"]))


def test_the_new_flags_have_two_letter_codes():
    codes = [SHORT_CODES["ais_no_estimate"], SHORT_CODES["chib_unreliable"]]
    assert all(len(c) == 2 for c in codes)
    assert len(set(SHORT_CODES.values())) == len(SHORT_CODES)  # every code names one flag
    for name in ("ais_no_estimate", "chib_unreliable"):
        assert name in method("ais" if name.startswith("ais") else "chib").evidence.vetoed_by


def test_a_healthy_ais_run_is_the_log_evidence(with_ais):
    row = _row(with_ais)
    assert with_ais.ais[0].ess >= 2
    assert "ais_no_estimate" not in row["flags"].split(",")
    assert row["evidence_method"] == "ais" and row["log_evidence"] == row["ais"]


def test_an_ais_run_carried_by_one_chain_is_no_estimate(with_ais):
    run = with_ais.ais[0]
    one = with_ais.with_fits(ais=(dataclasses.replace(run, ess=1.5),))
    row = _row(one)
    assert {"ais_no_estimate", "ais_low_ess"} <= set(row["flags"].split(","))
    assert f"ais_no_estimate: {one.ais[0].reason}" in row["flag_notes"]
    assert "ESS 1.50 of 16 chains" in row["flag_notes"]
    assert _no_evidence(row)
    out = one.to_dict()
    assert out["metadata"]["thresholds"]["AIS_NO_ESTIMATE_ESS"] == 2.0
    assert "falls back" in out["metadata"]["flags"]["ais_no_estimate"]
    assert f"{SHORT_CODES['ais_no_estimate']} = ais_no_estimate" in one.summary()
    just_two = with_ais.with_fits(ais=(dataclasses.replace(run, ess=2.0),))
    assert "ais_no_estimate" not in _row(just_two)["flags"].split(",")


def test_a_reliable_chib_estimate_is_the_log_evidence(with_chib):
    row = _row(with_chib)
    assert with_chib.fits["chib"][0].reliable
    assert "chib_unreliable" not in row["flags"].split(",")
    assert row["evidence_method"] == "chib" and row["log_evidence"] == row["chib"]


def test_an_unreliable_chib_estimate_is_flagged_and_not_used(with_chib):
    run = with_chib.fits["chib"][0]
    reason = "the 4 chains' estimates of ln p(theta* | y) span 9.00 nats"
    flagged = with_chib.with_fits(chib=(dataclasses.replace(run, reliable=False,
                                                             reason=reason),))
    row = _row(flagged)
    assert "chib_unreliable" in row["flags"].split(",")
    assert f"chib_unreliable: {reason}" in row["flag_notes"]
    assert _no_evidence(row)
    assert f"{SHORT_CODES['chib_unreliable']} = chib_unreliable" in flagged.summary()
