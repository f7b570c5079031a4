"""The applied-paper indices where users see them: EMResult, ``lcbayes fit`` (text and JSON)
and ``compare``'s abic / caic / entropy methods."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.indices import classification_quality

from .conftest import data_csv


def test_em_result_abic_and_caic(carcinoma):
    fit = lcb.em(lcb.latent_class(carcinoma, 2), carcinoma, restarts=5, seed=0)
    n, d = fit.n_observed_rows, fit.n_parameters
    assert fit.abic == pytest.approx(fit.loglik - d / 2 * math.log((n + 2) / 24))
    assert fit.caic == pytest.approx(fit.loglik - d / 2 * (math.log(n) + 1))
    text = fit.summary()
    assert f"[Mplus scale: {-2 * fit.abic:.4f}]" in text and "CAIC" in text
    indices = fit.fit_indices(carcinoma)
    assert indices["abic"] == pytest.approx(fit.abic)
    assert indices["goodness_of_fit"]["df"] == 103


def test_cli_fit_prints_and_writes_the_indices(capsys):
    path = str(data_csv("carcinoma.csv"))
    assert main(["fit", path, "--n-classes", "2"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("G^2:"))
    g2, chi2 = (float(line.split()[k]) for k in (1, 3))
    assert (g2, chi2) == pytest.approx((62.36543, 92.64814), abs=1e-3)  # poLCA's printout
    assert "(residual df 103;" in line
    assert "entropy R^2:" in out
    assert all(len(line) <= 100 for line in out.splitlines())
    assert main(["fit", path, "--n-classes", "2", "--json"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["indices"]["goodness_of_fit"]["g2"] == pytest.approx(62.36543, abs=1e-3)
    assert spec["abic"] == pytest.approx(spec["indices"]["abic"])
    assert len(spec["indices"]["bivariate_residuals"]) == 21  # 7 items: 21 pairs


def test_compare_methods_abic_caic_entropy(carcinoma):
    comp = lcb.compare(carcinoma, n_classes=[1, 2, 3], methods=["abic", "caic", "entropy"],
                       seed=0)
    frame = comp.to_frame()
    for i, fit in enumerate(comp.em):
        assert frame["abic"].iloc[i] == pytest.approx(fit.abic)
        assert frame["caic"].iloc[i] == pytest.approx(fit.caic)
        quality = classification_quality(fit.structure, fit.params, carcinoma)
        assert frame["entropy_r2"].iloc[i] == pytest.approx(quality.entropy_r2)
        assert frame["smallest_class"].iloc[i] == pytest.approx(quality.smallest_class_share)
    assert "rank_entropy" not in frame.columns
    assert frame["rank_abic"].iloc[2] == 1


def test_standard_errors_in_the_fit_its_printout_frame_and_json(carcinoma, recwarn):
    fit = lcb.em(lcb.latent_class(carcinoma, 2), carcinoma, restarts=5, seed=0,
                 standard_errors="empirical")
    assert fit.se_method == "empirical"
    assert set(fit.standard_errors) == set(fit.params)
    text = fit.summary()
    share, se = fit.class_weights[0], fit.standard_errors["class"][0]
    assert f"{share:.4f} ({se:.4f})" in text and "empirical information" in text
    frame = fit.to_frame()
    assert "se" in frame.columns and frame["se"].notna().all()
    back = lcb.EMResult.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back.se_method == "empirical"
    for node, table in fit.standard_errors.items():
        np.testing.assert_allclose(back.standard_errors[node], table)
    plain = lcb.em(lcb.latent_class(carcinoma, 2), carcinoma, restarts=5, seed=0)
    assert plain.standard_errors is None and "(0." not in plain.summary().split("$A")[1][:80]


def test_cli_fit_standard_errors_option(capsys):
    path = str(data_csv("carcinoma.csv"))
    assert main(["fit", path, "--n-classes", "2", "--se", "observed", "--json"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["se_method"] == "observed" and "B" in spec["standard_errors"]
    assert main(["fit", path, "--n-classes", "2", "--se", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["standard_errors"] is None
    assert main(["fit", path, "--n-classes", "2", "--method", "vbem", "--se", "observed"]) == 2
