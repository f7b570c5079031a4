"""What a user reads of reversible jump and Gibbs draws: classes numbered from 1, the posterior
of K over every K, one K = 1 diagnosed and plotted, the mixing-in-K verdict and its advice, and
the report's settings and versions.

Draws are made up in the samplers' layout (:func:`lcbayes.samplers.idata.lc_inference_data`), so
nothing is compiled and every number is known.
"""

from __future__ import annotations

import json
import warnings

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import lcbayes as lcb
from lcbayes.samplers.diagnostics import RhatWarning, diagnostics
from lcbayes.samplers.idata import lc_inference_data
from lcbayes.samplers.plots import plot_class_profiles, plot_posterior_k, plot_trace
from lcbayes.samplers.results import (
    MAX_SUGGESTED_DRAWS,
    KMixingResult,
    KMixingWarning,
    RJMCMCResult,
    k_mixing,
)

try:  # tests/ as a package
    from .switched_posterior import rjmcmc_like
except ImportError:  # tests/ on sys.path
    from switched_posterior import rjmcmc_like

CHAINS, DRAWS, SLOTS = 2, 200, 4
ACCEPTANCE = {"split": 0.012, "merge": 0.034, "birth": 0.1, "death": None}


def _data() -> lcb.Dataset:
    rng = np.random.default_rng(0)
    return lcb.Dataset.from_codes((rng.random((40, 3)) < 0.5).astype(int),
                                  columns=("a", "b", "c"), labels=[("no", "yes")] * 3)


def _draws(k: np.ndarray, seed: int = 0):
    """Reversible-jump-like draws with ``k`` classes per draw (``(CHAINS, DRAWS)``): the class
    weights of one class are 1 up to rounding (as ``exp(ln w)`` gives them), the others and
    the items random."""
    rng = np.random.default_rng(seed)
    data = _data()
    weights = rng.dirichlet(np.ones(SLOTS), size=k.shape)
    one = np.where(rng.random(k.shape) < 0.5, 1.0, np.nextafter(1.0, 0.0))
    weights[k == 1] = np.eye(SLOTS)[0] * one[k == 1][:, None]
    theta = rng.dirichlet(np.ones(2), size=(*k.shape, SLOTS, 3))
    log_lik = rng.normal(-80.0, 1.0, size=k.shape)
    attrs = {"engine": "rjmcmc", "draws": DRAWS, "warmup": 10, "chains": CHAINS, "thin": 1,
             "max_classes": SLOTS, "seed": 5, "prior_k_json": json.dumps({1: 0.25, 2: 0.25,
                                                                          3: 0.25, 4: 0.25}),
             "acceptance_json": json.dumps(ACCEPTANCE)}
    idata = lc_inference_data(data, weights, theta, log_lik, log_lik - 3.0, attrs, k=k)
    settings = {"max_classes": SLOTS, "draws": DRAWS, "warmup": 10, "chains": CHAINS,
                "thin": 1, "seed": 5, "prior_k": {K: 0.25 for K in range(1, SLOTS + 1)},
                "prior": "dirichlet"}
    return RJMCMCResult(idata=idata, structure=lcb.latent_class(data, SLOTS),
                        settings=settings, seconds=1.0)


def _diagnose(result, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        diag = diagnostics(result, **kwargs)
    return diag, [w for w in caught if issubclass(w.category, KMixingWarning)]


@pytest.fixture(scope="module")
def stuck():
    """Each chain stays at its own K (2 and 3): no mixing between numbers of classes."""
    return _draws(np.repeat([[2], [3]], DRAWS, axis=1))


# ---------------------------------------------------------------------- numbering
def test_classes_are_numbered_from_one_in_the_draws_tables_and_figures(stuck):
    post = stuck.to_inference_data().posterior
    assert list(post["class"].values) == [1, 2, 3, 4]
    diag, _ = _diagnose(stuck, n_classes=3)
    assert {"class_weights[1]", "class_weights[3]", "theta_a[1, yes]"} <= set(diag.table.index)
    assert "class_weights[0]" not in diag.table.index and "[0," not in diag.summary()
    assert "class_weights[1]" in diag.to_html() and "theta_c[3, no]" in diag.to_markdown()
    assert "class_weights[1]" in stuck.to_frame() and "class_weights[0]" not in stuck.to_frame()
    legend = plot_class_profiles(diag.draws).legends[0]
    assert [t.get_text().split(" (")[0] for t in legend.get_texts()] == [
        "class 1", "class 2", "class 3"]


# ---------------------------------------------------------------------- posterior of K
def test_posterior_of_k_spans_every_k_from_one_with_zero_bars():
    draws = rjmcmc_like(seed=4)  # k in {2, 3, 4}, 5 class slots
    fig = plot_posterior_k(draws.idata)
    bars = fig.axes[0].patches
    assert [round(b.get_x() + b.get_width() / 2) for b in bars] == [1, 2, 3, 4, 5]
    k = draws.idata.posterior["k"].values
    assert [b.get_height() for b in bars] == pytest.approx([np.mean(k == K)
                                                            for K in range(1, 6)])
    assert bars[0].get_height() == 0 and bars[4].get_height() == 0
    assert list(fig.axes[0].get_xticks()) == [1, 2, 3, 4, 5]


def test_a_modal_k_of_one_is_diagnosed_plotted_and_reported(tmp_path):
    """One class: its weight is 1 up to rounding, whose density ArviZ cannot estimate
    ("Too many bins for data range"); the trace plot leaves it out."""
    k = np.ones((CHAINS, DRAWS), dtype=int)
    k[:, ::10] = 2
    result = _draws(k, seed=1)
    diag, _ = _diagnose(result)
    assert diag.conditioned_on == 1 and list(diag.posterior_k) == [1, 2, 3, 4]
    titles = {ax.get_title() for ax in plot_trace(diag.draws).axes}
    assert "class_weights" not in titles and {"theta_a", "theta_b", "theta_c"} <= titles
    section = diag.to_html(tmp_path / "k1.html")
    assert section.count("data:image/png;base64,") == 4 and "K = 1" in section


# ---------------------------------------------------------------------- mixing in K
def _mixing(r_hat: float, ess: float, draws: int = 150, ceiling: float = 0.0,
            rising: bool = True) -> KMixingResult:
    return KMixingResult(r_hat=r_hat, ess_bulk=ess, split=0.01, merge=None, draws=draws,
                   max_classes=6, ceiling_share=ceiling, ceiling_rising=rising)


@pytest.mark.parametrize(("r_hat", "ess", "mixed"), [
    (1.0, 400.0, True), (1.05, 100.0, True), (1.06, 400.0, False), (1.0, 99.0, False),
    (np.nan, np.nan, True),  # k never changes: nothing to mix
])
def test_chains_mixed_in_k_when_rhat_is_at_most_1_05_and_bulk_ess_at_least_100(r_hat, ess,
                                                                                 mixed):
    verdict = _mixing(r_hat, ess)
    assert verdict.mixed is mixed
    assert (verdict.warning() is None) is mixed
    assert (verdict.warning(data_name="d.csv") is None) is mixed


@pytest.mark.parametrize(("ess", "draws", "suggested"), [
    (8.0, 150, 2000),       # 150 x 100 / 8 = 1875, rounded up to 2000
    (30.0, 1000, 5000),     # 3333 -> 5000
    (60.0, 150, 500),       # at least twice the draws: 300 -> 500
    (1e-3, 10_000, MAX_SUGGESTED_DRAWS),
])
def test_suggested_draws_scale_by_100_over_ess_to_a_round_number(ess, draws, suggested):
    assert _mixing(1.2, ess, draws).suggested_draws == suggested


def test_the_mixing_warning_gives_the_numbers_and_both_ways_out():
    verdict = _mixing(1.234, 7.6)
    cli = verdict.warning(data_name="survey.csv")
    assert "did not mix between numbers of classes" in cli and "\n" not in cli
    assert "bulk ESS 8" in cli and "R-hat 1.234" in cli
    assert "split 0.010" in cli and "merge never proposed" in cli
    assert "--draws 2000" in cli and "lcbayes compare survey.csv --n-classes 1-6" in cli
    python = verdict.warning()
    assert "draws=2000" in python and "lcb.compare(data, n_classes=range(1, 7))" in python
    d = json.loads(json.dumps(verdict.to_dict(data_name="survey.csv")))
    assert d["mixed"] is False and d["suggested_draws"] == 2000 and d["warning"] == cli
    assert d["merge"] is None and d["ess_bulk"] == pytest.approx(7.6)


@pytest.mark.parametrize(("ceiling", "rising", "warned"), [
    (0.0, True, False), (0.049, True, False), (0.05, True, True), (1.0, True, True),
    (0.3, False, False),  # falling towards the bound: a larger K would add little
])
def test_a_posterior_of_k_rising_at_max_classes_asks_for_a_higher_bound(ceiling, rising,
                                                                        warned):
    verdict = _mixing(np.nan, np.nan, ceiling=ceiling, rising=rising)  # k constant: mixed
    assert verdict.at_ceiling is warned and (verdict.warning() is not None) is warned
    if warned:
        cli = verdict.warning(data_name="survey.csv")
        assert f"p(K = 6 | y) = {ceiling:.3f}" in cli and "--max-classes 12" in cli
        assert "max_classes=12" in verdict.warning() and "did not mix" not in cli
        assert verdict.to_dict(data_name="survey.csv")["at_ceiling"] is True


def test_a_posterior_at_max_classes_that_mixed_poorly_gets_both_pieces_of_advice():
    line = _mixing(1.3, 12.0, ceiling=0.9).warning(data_name="survey.csv")
    assert "did not mix" in line and "bulk ESS 12, R-hat 1.300" in line
    assert "--draws" in line and "--max-classes 12" in line and "\n" not in line


def test_the_ceiling_compares_the_posterior_with_the_prior_of_k(stuck):
    verdict = stuck.k_mixing
    shares, prior = stuck.posterior_k, stuck.prior_k
    top = stuck.max_classes
    assert verdict.ceiling_share == shares[top]
    assert verdict.ceiling_rising == (shares[top] / prior[top] >= shares[top - 1] / prior[top - 1])


def test_stuck_chains_carry_one_mixing_warning_with_their_numbers(stuck):
    verdict = stuck.k_mixing
    assert verdict == k_mixing(stuck.to_inference_data())
    assert verdict.r_hat > 1.05 and not verdict.mixed
    assert (verdict.split, verdict.merge, verdict.draws) == (0.012, 0.034, DRAWS)
    assert stuck.mixing_warning() == verdict.warning()
    diag, caught = _diagnose(stuck)
    assert [str(w.message) for w in caught] == [stuck.mixing_warning()]
    assert diag.k_mixing == verdict and diag.to_dict()["k_mixing"]["mixed"] is False
    assert stuck.mixing_warning(data_name="x.csv") in diag.to_html(data_name="x.csv")


def test_well_mixed_chains_carry_no_mixing_warning():
    draws = rjmcmc_like(seed=4)  # k drawn independently per draw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RhatWarning)
        diag, caught = _diagnose(draws.idata, relabel_method="ecr")
    assert diag.k_mixing.mixed and diag.k_mixing.ess_bulk > 100
    assert caught == [] and diag.mixing_warning() is None


# ---------------------------------------------------------------------- report
def test_report_has_the_data_name_settings_and_versions(stuck, tmp_path):
    diag, _ = _diagnose(stuck, n_classes=2)
    block = diag.settings_block(data_name="survey.csv")
    assert block["data"] == "survey.csv" and block["columns"] == "3: a, b, c"
    assert {key: block[key] for key in ("draws", "warmup", "chains", "thin", "max_classes",
                                        "prior", "seed")} == {
        "draws": "200", "warmup": "10", "chains": "2", "thin": "1", "max_classes": "4",
        "prior": "dirichlet", "seed": "5"}
    assert block["prior_k"] == "1: 0.25, 2: 0.25, 3: 0.25, 4: 0.25"
    page = diag.to_html(data_name="survey.csv")
    assert "<h3>Settings</h3>" in page and "<h3>Versions</h3>" in page
    assert "survey.csv" in page and f"<td>{lcb.__version__}</td>" in page
    text = diag.to_markdown(tmp_path / "rj.md", data_name="survey.csv")
    assert "| draws | 200 |" in text and "**Versions**: lcbayes = " in text
