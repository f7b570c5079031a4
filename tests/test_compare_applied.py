"""``compare``'s applied-paper methods (lmr, blrt) and the report's applied-paper table and
elbow plot."""

from __future__ import annotations

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.comparison.applied import applied_table


@pytest.fixture(scope="module")
def two_classes():
    rng = np.random.default_rng(0)
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 5)))
    truth = lcb.latent_class(blank, 2)
    params = {"class": np.array([0.5, 0.5])}
    for j, name in enumerate(truth.observed_names):
        p = np.array([0.85, 0.15]) if j % 2 else np.array([0.15, 0.85])
        params[name] = np.stack([1 - p, p], axis=1)
    return lcb.simulate(truth, params, 400, seed=int(rng.integers(1000)))


def test_lmr_and_blrt_columns_are_the_tests_on_the_candidates_fits(two_classes):
    comp = lcb.compare(two_classes, n_classes=[1, 2, 3], methods=["bic", "lmr", "blrt"],
                       engine_options={"blrt": {"replicates": 19}}, seed=0, progress=False)
    frame = comp.to_frame()
    assert np.isnan(frame["lmr_p"].iloc[0]) and np.isnan(frame["blrt_p"].iloc[0])
    assert frame["lmr_p"].iloc[1] < 1e-6 and frame["blrt_p"].iloc[1] == pytest.approx(1 / 20)
    null = lcb.em(lcb.latent_class(two_classes, 1), two_classes, restarts=10, seed=0)
    direct = lcb.lmr(null, comp.em[1], two_classes)
    assert frame["lmr_p"].iloc[1] == pytest.approx(direct.p_value)
    assert frame["vlmr_p"].iloc[1] == pytest.approx(direct.p_value_unadjusted)
    assert frame["blrt_p"].iloc[2] > 0.05  # a third class is not supported
    assert "rank_lmr" not in frame and comp.settings["engine_options"]["blrt"] == {"replicates": 19}
    page = applied_table(comp)
    assert "BLRT p" in page and "LMR p" in page and "aBIC" in page and "entropy" not in page


def test_report_has_the_applied_table_and_the_elbow_plot(two_classes, tmp_path):
    comp = lcb.compare(two_classes, n_classes=[1, 2, 3], methods=["bic", "abic", "caic",
                                                                  "entropy"], progress=False)
    html = comp.to_html(tmp_path / "r.html").read_text()
    assert "As applied papers report it" in html and "alt='elbow'" in html
    table = applied_table(comp)
    bic = -2 * comp.em[1].bic
    assert f"{bic:.2f}" in table and "entropy R2" in table and "LMR p" not in table


def test_cli_compare_applied_methods(two_classes, tmp_path, capsys):
    path = tmp_path / "d.csv"
    two_classes.to_pandas().to_csv(path, index=False)
    assert main(["compare", str(path), "--n-classes", "1-3", "--methods",
                 "bic,abic,caic,entropy,lmr,blrt", "--engine-option", "blrt.replicates=9",
                 "--wide"]) == 0
    out = capsys.readouterr().out
    assert "LMR p" in out and "BLRT p" in out and "aBIC" in out and "entropy R2" in out


def test_an_elbow_line_hidden_under_another_says_so(two_classes):
    from lcbayes.comparison.figures import _elbow_figure

    comp = lcb.compare(two_classes, n_classes=[1, 2, 3], methods=["bic", "bic_e"],
                       progress=False)
    frame = comp.to_frame()
    assert np.allclose(frame["bic"], frame["bic_e"])      # d_e = d: the lines coincide
    labels = _elbow_figure(frame).axes[0].get_legend_handles_labels()[1]
    assert labels == ["BIC", "BIC_e (= BIC)"]
