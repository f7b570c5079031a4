"""``compare``'s headline names what its answer rests on: the log evidence only where every
candidate has one (never the automatic exact sum of LC(1) alone), else the first requested
ranked score; every method asked for is in the printed table or in its "left out" line."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main

from .conftest import data_csv

APPLIED = "bic,abic,caic,entropy,lmr,blrt"
#: Small SMC and bridge sampling runs (the headline needs an evidence, not a precise one).
SMALL = {"smc": {"particles": 32, "runs": 2, "target_stderr": None},
         "bridge": {"runs": 2, "draws": 200, "warmup": 50}}


@pytest.fixture(scope="module")
def carcinoma_bic(carcinoma):
    return lcb.compare(carcinoma, n_classes=range(1, 6), methods=["bic"], seed=0, progress=False)


def test_a_score_alone_ranks_by_that_score_not_by_lc1s_exact_evidence(carcinoma_bic):
    comp = carcinoma_bic
    frame = comp.to_frame()
    assert np.isfinite(frame["log_evidence"].iloc[0])              # LC(1)'s exact sum
    assert not np.isfinite(frame["log_evidence"].iloc[1:]).any()
    assert comp.criterion == "bic" and comp.criterion_label == "BIC"
    assert comp.best == frame.loc[frame["bic"].idxmax(), "name"] == "LC(3)"
    assert frame["posterior_prob"].isna().all() and frame["log_bayes_factor"].isna().all()
    text = " ".join(comp.summary().split())
    assert "Best by BIC: LC(3)" in text and "Highest log evidence" not in text
    assert "only LC(1) has a log evidence, which ranks nothing" in text
    assert comp.metadata()["best"] == "LC(3)"


def test_the_reports_carry_the_same_headline(carcinoma_bic, tmp_path):
    html = carcinoma_bic.to_html(tmp_path / "r.html").read_text()
    markdown = carcinoma_bic.to_markdown()
    for page in (html, markdown):
        assert "Best by BIC: LC(3)" in page and "Highest log evidence" not in page


def test_an_evidence_for_every_candidate_ranks(carcinoma):
    comp = lcb.compare(carcinoma, n_classes=[1, 2], methods=["bic", "vbem", "smc"], seed=0,
                       engine_options=SMALL, progress=False)
    frame = comp.to_frame()
    assert comp.criterion == "log_evidence" and np.isfinite(frame["log_evidence"]).all()
    assert comp.best == frame.loc[frame["log_evidence"].idxmax(), "name"]
    assert frame["posterior_prob"].sum() == pytest.approx(1.0)
    assert f"Highest log evidence: {comp.best}." in comp.summary()


def test_only_tests_says_that_nothing_ranks(carcinoma):
    comp = lcb.compare(carcinoma, n_classes=[1, 2], methods=["lmr"], exact=False, seed=0,
                       progress=False)
    assert comp.criterion is None and comp.best is None
    assert "No score or log evidence for every candidate." in comp.summary()


@pytest.mark.parametrize("methods, criterion", [
    ("bic", "BIC"), (APPLIED, "BIC"), ("caic,lmr,vbem", "CAIC")])
def test_cli_headline_for_each_mix_of_methods(capsys, methods, criterion):
    code = main(["compare", str(data_csv("carcinoma.csv")), "--n-classes", "1-4",
                 "--methods", methods, "--engine-option", "blrt.replicates=9", "--seed", "0"])
    out = capsys.readouterr().out
    assert code == 0
    flat = " ".join(out.split())
    if criterion is not None:
        assert re.search(rf"Best by {criterion}: LC\(\d\)", flat)
        assert "Highest log evidence" not in out
    if "vbem" in methods:  # a bound is no evidence: it ranks as a score, never as the evidence
        assert "VBEM's F is a lower bound, not an evidence" in flat
    # every method asked for: its heading in the table, or named as left out for width
    headings = {"bic": ["BIC"], "abic": ["aBIC"], "caic": ["CAIC"], "entropy": ["entropy R2"],
                "lmr": ["LMR p"], "blrt": ["BLRT p"], "vbem": ["VB F"]}   # or left out
    table = out.partition("Flags")[0]
    for method in methods.split(","):
        for heading in headings[method]:
            assert heading in table, (method, heading)


def test_a_report_with_the_smc_evidence_draws_its_posterior(carcinoma, tmp_path):
    # the posterior figure coloured bars by a fixed list of methods without smc (KeyError);
    comp = lcb.compare(carcinoma, n_classes=[1, 2], methods=["bic", "smc"], seed=0,
                       engine_options=SMALL, progress=False)
    assert set(comp.to_frame()["evidence_method"]) <= {"smc", "exact"}
    page = comp.to_html(tmp_path / "smc.html").read_text()
    assert "Highest log evidence" in page and page.count("data:image/png") >= 2


def test_the_run_block_lists_only_the_methods_that_ran(carcinoma_bic):
    markdown = carcinoma_bic.to_markdown()
    settings = next(line for line in markdown.splitlines() if line.startswith("**Settings**"))
    assert "blrt." not in settings and "ais." not in settings
    assert "smc." not in settings and "restarts" in settings
    seconds = next(line for line in markdown.splitlines() if line.startswith("**Seconds**"))
    assert "can add up to more than the total" in seconds and "ais =" not in seconds
