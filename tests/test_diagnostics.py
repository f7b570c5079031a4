"""Diagnostics: R-hat after relabelling, the R-hat warning, figures and report sections."""

from __future__ import annotations

import json
import warnings

import arviz as az
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from lcbayes.errors import LcbayesError
from lcbayes.samplers.diagnostics import (
    COLUMNS,
    TRACE_ITEMS,
    RhatWarning,
    diagnostics,
    plot_posterior_k,
    plot_rank,
)
from lcbayes.samplers.plots import redundant_rows

try:  # tests/ as a package
    from .switched_posterior import ITEMS, rjmcmc_like, switched
except ImportError:  # tests/ on sys.path
    from switched_posterior import ITEMS, rjmcmc_like, switched


@pytest.fixture(scope="module")
def stuck():
    """4 chains x 400 draws, each chain in its own labelling (two of them switch once)."""
    return switched(seed=3, draws=400, mode="stuck")


@pytest.fixture(scope="module")
def raw(stuck):
    """Diagnostics of the stuck chains without relabelling, and the R-hat warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = diagnostics(stuck.idata, relabel_method=None)
    return result, [w for w in caught if issubclass(w.category, RhatWarning)]


@pytest.fixture(scope="module")
def relabelled(stuck):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = diagnostics(stuck.idata)
    assert not [w for w in caught if issubclass(w.category, RhatWarning)]
    return result


#: A threshold that the R-hat of some, not all, of 4 x ~170 independent draws exceed.
LOW_THRESHOLD = 1.005


@pytest.fixture(scope="module")
def rj():
    data = rjmcmc_like(seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RhatWarning)
        return data, diagnostics(data.idata, relabel_method="ecr", rhat_threshold=LOW_THRESHOLD,
                                 max_rank_panels=4)


def test_rhat_of_stuck_chains_is_large_before_relabelling_and_about_one_after(raw, relabelled):
    before, _ = raw
    weights = [f"class_weights[{j}]" for j in range(3)]
    assert before.table.loc[weights, "r_hat"].min() > 1.5
    assert before.max_rhat > 1.5
    assert relabelled.max_rhat < 1.01  # and no RhatWarning (the fixture checks)
    assert relabelled.flagged == ()
    assert relabelled.relabel_method == "stephens"


def test_rhat_warning_counts_the_flagged_and_names_the_worst_three(raw):
    before, caught = raw
    assert len(caught) == 1
    message = str(caught[0].message)
    rhat = before.table["r_hat"]
    assert set(before.flagged) == set(rhat.index[rhat > 1.01]) and len(before.flagged) > 3
    assert list(rhat[list(before.flagged)]) == sorted(rhat[list(before.flagged)], reverse=True)
    named = [name for name in before.table.index if f"{name} (" in message]
    assert len(named) == 3 and f"and {len(before.flagged) - 3} more" in message
    # the worst, leaving out first classes and categories (one minus the others)
    others = set(before.flagged) - set(named) - redundant_rows(before.draws)
    assert not set(named) & redundant_rows(before.draws)
    assert min(rhat[named]) >= max(rhat[list(others)])


def test_summary_table_is_az_summary_of_the_relabelled_draws(relabelled):
    expected = az.summary(relabelled.relabelled.idata, round_to="none")
    assert list(relabelled.table.index) == list(expected.index)
    np.testing.assert_allclose(relabelled.table["r_hat"], expected["r_hat"])
    np.testing.assert_allclose(relabelled.table["ess_bulk"], expected["ess_bulk"])
    assert set(COLUMNS) <= set(relabelled.table.columns)
    n_rows = 3 + 3 * sum(len(relabelled.draws.posterior[f"{c}_category"]) for c in ITEMS)
    assert len(relabelled.table) == n_rows


def test_rjmcmc_diagnostics_condition_on_the_modal_k_and_report_posterior_k(rj):
    data, diag = rj
    k = data.idata.posterior["k"].values
    assert diag.conditioned_on == 3
    assert diag.posterior_k == pytest.approx({K: np.mean(k == K) for K in range(1, 6)})
    assert diag.draws.posterior.sizes["class"] == 3
    assert diag.relabelled.conditioned_on == 3 and diag.relabelled.method == "ecr"
    assert "k" in diag.table.index
    assert diag.table.loc["k", "r_hat"] == pytest.approx(az.rhat(data.idata, var_names=["k"])
                                                         ["k"].item())
    assert diag.max_rhat < 1.05


def test_figures_are_produced(rj):
    _, diag = rj
    figs = diag.figures()
    assert list(figs) == ["trace", "rank", "posterior_k", "class_profiles"]
    visible = {key: [ax for ax in fig.axes if ax.get_visible()] for key, fig in figs.items()}
    assert len(visible["trace"]) == 2 * (1 + TRACE_ITEMS)
    assert len(visible["rank"]) == diag.max_rank_panels
    assert len(visible["posterior_k"]) == 2
    assert len(visible["class_profiles"]) == len(ITEMS)
    bars = visible["posterior_k"][0].patches
    assert [round(b.get_height(), 6) for b in bars] == [round(p, 6)
                                                        for p in diag.posterior_k.values()]


def test_fixed_k_output_has_no_posterior_of_k(relabelled):
    assert relabelled.posterior_k is None and relabelled.conditioned_on is None
    with pytest.raises(LcbayesError, match="no variable 'k'"):
        plot_posterior_k(relabelled.idata)


def test_html_and_markdown_sections_embed_every_figure(rj, tmp_path):
    _, diag = rj
    section = diag.to_html(tmp_path / "diag.html")
    assert section.startswith("<section") and section.count("data:image/png;base64,") == 4
    page = (tmp_path / "diag.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and section in page
    assert "Posterior of the number of classes" in section and "theta_A[0, yes]" in section
    assert 0 < len(diag.flagged) < len(diag.table)
    for name in diag.table.index:  # flagged rows, and only they, are highlighted
        assert (f'<tr class="flagged"><td>{name}</td>' in section) == (name in diag.flagged)
    text = diag.to_markdown()
    assert text.count("](data:image/png;base64,") == 4 and "| r_hat |" in text
    written = diag.to_markdown(tmp_path / "md" / "diag.md")
    assert "(diag-class-profiles.png)" in written
    assert (tmp_path / "md" / "diag-class-profiles.png").read_bytes()[:4] == b"\x89PNG"


def test_to_dict_is_json_ready_and_summary_is_readable(rj):
    _, diag = rj
    d = json.loads(json.dumps(diag.to_dict()))
    assert d["conditioned_on"] == 3 and sum(d["posterior_k"].values()) == pytest.approx(1)
    assert d["sampler"]["engine"] == "rjmcmc" and d["sampler"]["acceptance"] == {"split": 0.1}
    assert d["summary"]["class_weights[0]"]["r_hat"] == pytest.approx(
        diag.table.loc["class_weights[0]", "r_hat"])
    assert d["relabelling"]["method"] == "ecr"
    text = diag.summary()
    assert "posterior of K: 1: 0.000, 2:" in text and "relabelled by ecr" in text
    assert "r_hat" in text


# ---------------------------------------------------------------------- bad input
def test_unknown_relabel_method_raises(stuck):
    with pytest.raises(LcbayesError, match="unknown relabel_method 'kl'"):
        diagnostics(stuck.idata, relabel_method="kl")


def test_k_not_visited_raises(rj):
    data, _ = rj
    with pytest.raises(LcbayesError, match="no draw has n_classes=7"):
        diagnostics(data.idata, n_classes=7)


def test_missing_observed_data_raises(stuck):
    idata = az.InferenceData(posterior=stuck.idata.posterior,
                             sample_stats=stuck.idata.sample_stats)
    with pytest.raises(LcbayesError, match="no observed_data group"):
        diagnostics(idata)


def test_rank_plot_of_unknown_parameters_raises(relabelled):
    with pytest.raises(LcbayesError, match="unknown parameters"):
        plot_rank(relabelled.draws, ["theta_Z[0, yes]"])
