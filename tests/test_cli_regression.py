"""``lcbayes fit --covariates / --distal / --steps``: the coefficient table, JSON and bad input
(one line, exit 2)."""

from __future__ import annotations

import json

import pytest

import lcbayes as lcb
from lcbayes.cli import main


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LCBAYES_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jax-cache"))


@pytest.fixture(scope="module")
def cheating_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "cheating.csv"
    lcb.datasets.frame("cheating").to_csv(path, index=False)
    return str(path)


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_fit_covariates_prints_polca_coefficients(capsys, cheating_csv):
    status, out, err = _run(capsys, "fit", cheating_csv, "--n-classes", "2", "--covariates",
                            "GPA", "--restarts", "10", "--tol", "1e-11")
    assert status == 0
    assert "4 of 319 rows lack a covariate" in err
    gpa = next(line for line in out.splitlines() if line.strip().startswith("GPA"))
    estimate, se = (float(v) for v in gpa.split()[1:3])
    assert estimate == pytest.approx(-0.842483494, rel=1e-3)     # poLCA 1.6.0.2
    assert se == pytest.approx(0.281314132, rel=1e-3)
    assert "odds_ratio" in out and "maximum log-likelihood: -429.6383" in out


def test_fit_covariates_json_round_trips(capsys, cheating_csv):
    status, out, _ = _run(capsys, "fit", cheating_csv, "--n-classes", "2", "--covariates",
                          "GPA", "--distal", "COPYEXAM", "--distal-type", "categorical",
                          "--restarts", "5", "--json")
    assert status == 0
    spec = json.loads(out)
    fit = lcb.RegressionResult.from_dict(spec)
    assert fit.distal["name"] == "COPYEXAM" and fit.distal["kind"] == "categorical"
    assert "COPYEXAM" not in fit.structure.observed_names
    assert spec["coefficients"][1]["term"] == "GPA"


@pytest.mark.parametrize(("argv", "message"), [
    (["--steps", "3"], "--steps 3 needs --covariates or --distal"),
    (["--covariates", "AGE"], "'AGE' is not a column"),
    (["--covariates", "GPA", "--distal", "FRAUD", "--columns", "LIEEXAM,FRAUD"],
     "distal 'FRAUD' is also an indicator"),
    (["--covariates", "GPA", "--correction", "bch"], "--correction and --assignment apply to"),
    (["--covariates", "GPA", "--method", "vbem"], "fitted by em, not --method vbem"),
])
def test_fit_covariates_bad_input_is_one_line_exit_2(capsys, cheating_csv, argv, message):
    status, _, err = _run(capsys, "fit", cheating_csv, "--n-classes", "2", *argv)
    assert status == 2
    errors = [line for line in err.splitlines() if line.startswith("lcbayes: error")]
    assert len(errors) == 1 and message in errors[0]


def test_fit_three_step_bch(capsys, cheating_csv):
    """``--steps 3 --correction bch``: the converged BCH estimate for GPA (StepMix 3.0.0 with
    its structural step run to convergence gives -0.714; benchmarks/bench_three_step.py)."""
    status, out, _ = _run(capsys, "fit", cheating_csv, "--n-classes", "2", "--covariates",
                          "GPA", "--steps", "3", "--correction", "bch", "--json")
    assert status == 0
    spec = json.loads(out)
    gpa = next(row for row in spec["coefficients"] if row["term"] == "GPA")
    assert gpa["estimate"] == pytest.approx(-0.714, abs=2e-3)
    assert lcb.ThreeStepResult.from_dict(spec).coefficients().shape[0] == 2
