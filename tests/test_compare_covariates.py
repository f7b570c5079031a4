"""``compare(covariates=..., distal=...)`` and ``lcbayes compare --covariates``: the covariate
table per K (against poLCA's numbers), the figures, the reports and JSON."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.cli import main

POLCA_315 = -438.258466440721    # poLCA 1.6.0.2, cheating K = 2 ~ 1 on the 315 rows with GPA
POLCA_GPA = -429.638384352131    # cheating K = 2 ~ GPA


@pytest.fixture(scope="module")
def comparison():
    frame = lcb.datasets.frame("cheating")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lcb.compare(frame, n_classes=[1, 2], covariates=["GPA"], methods="bic",
                           exact=False, seed=0, restarts=10, bayes_factors=False)


def test_covariate_table_equals_polca(comparison):
    table = comparison.covariate_effects.to_frame()
    two = table[table.n_classes == 2].iloc[0]
    assert two.loglik == pytest.approx(POLCA_GPA, abs=1e-4)
    assert two.loglik_without == pytest.approx(POLCA_315, abs=1e-4)
    assert two.lr == pytest.approx(2 * (POLCA_GPA - POLCA_315), abs=1e-3)
    assert two.df == 1 and two.p < 1e-4
    one = table[table.n_classes == 1].iloc[0]
    assert one.lr == pytest.approx(0.0, abs=1e-9) and one.df == 0
    assert comparison.covariate_effects.n_dropped == 4
    # the indicators of the main table are the four items, GPA is not one of them
    assert comparison.data.columns == ("LIEEXAM", "LIEPAPER", "FRAUD", "COPYEXAM")


@pytest.mark.slow
def test_compare_reports_the_bayes_factor_with_its_error_bar():
    """The default ``bayes_factors=True``: ln B for GPA (lcb.covariate_evidence, prior scale
    2.5: 5.56 +- 0.03, reports/covariate-bayes.md; tests/test_covariate_bayes.py checks the
    engine itself in the default suite)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = lcb.compare(lcb.datasets.frame("cheating"), n_classes=[1, 2],
                           covariates=["GPA"], methods="bic", exact=False, seed=0)
    table = comp.covariate_effects.to_frame()
    two, one = table.iloc[1], table.iloc[0]
    assert two.log_bayes_factor == pytest.approx(5.56, abs=0.2)
    assert 0 < two.log_bayes_factor_stderr < 0.3
    assert np.isnan(one.log_bayes_factor)
    assert "log_bayes_factor" in comp.summary()


def test_reports_figures_and_json(comparison, tmp_path):
    assert {"membership"} <= set(comparison.figure_pngs())
    html = comparison.to_html(tmp_path / "r.html").read_text()
    assert "Covariates and distal outcome" in html and "GPA" in html
    md = comparison.to_markdown(tmp_path / "r.md")
    assert "membership ~ GPA" in md and (tmp_path / "r-membership.png").exists()
    same = lcb.ComparisonResult.from_dict(json.loads(json.dumps(comparison.to_dict())))
    pd.testing.assert_frame_equal(same.covariate_effects.to_frame(),
                                  comparison.covariate_effects.to_frame())
    summary = comparison.summary_dict()
    assert summary["covariate_effects"][1]["n_classes"] == 2


@pytest.mark.slow  # CI time; run before closing
def test_distal_outcome_differs_by_class():
    rng = np.random.default_rng(2)
    n = 1500
    classes = rng.choice(2, n)
    items = pd.DataFrame((rng.random((n, 4)) < np.array([[0.85] * 4, [0.2] * 4])[classes])
                         .astype(int), columns=list("ABCD"))
    frame = items.assign(Z=np.where(classes == 0, 0.0, 1.0) + rng.normal(0, 1, n),
                         W=rng.normal(0, 1, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        differs = lcb.compare(frame.drop(columns="W"), n_classes=[2], distal="Z",
                              methods="bic", exact=False, bayes_factors=False)
        same = lcb.compare(frame.drop(columns="Z"), n_classes=[2], distal="W",
                           methods="bic", exact=False, bayes_factors=False)
    row = differs.covariate_effects.to_frame().iloc[0]
    assert row.df_distal == 2 and row.p_distal < 1e-6
    assert same.covariate_effects.to_frame().iloc[0].p_distal > 0.001
    assert "distal" in differs.figure_pngs()


def test_cli_compare_covariates(capsys, tmp_path):
    path = tmp_path / "cheating.csv"
    lcb.datasets.frame("cheating").to_csv(path, index=False)
    status = main(["compare", str(path), "--n-classes", "1-2", "--covariates", "GPA",
                   "--methods", "bic", "--exact", "no", "--bayes-factors", "no", "--json"])
    out, _ = capsys.readouterr()
    assert status == 0
    rows = json.loads(out)["covariate_effects"]
    assert rows[1]["loglik_without"] == pytest.approx(POLCA_315, abs=1e-4)
    status = main(["compare", str(path), "--n-classes", "2", "--covariates", "AGE"])
    _, err = capsys.readouterr()
    assert status == 2 and "'AGE' is not a column" in err
