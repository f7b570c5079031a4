"""compare: the table's contract, model choice on simulated data, flags, reports.

Compiling an engine for a structure shape dominates the cost, so the data sets share one
shape (four binary items, all 16 patterns present) and AIS is compiled once. The main
comparison's evidence is the default one, SMC and bridge sampling, in small runs (the VB bound
is no candidate's evidence).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

import lcbayes as lcb
from lcbayes.comparison import (
    AIS_BELOW_VBEM_SE,
    posterior_probabilities,
    selectable_methods,
)

NO_AIS = ("bic", "bic_e", "aic", "icl", "cs", "vbem", "smc")
#: Small SMC and bridge sampling runs: the evidence of LC(2) and LC(3) to a few tenths.
ENGINES = {"smc": {"particles": 32, "runs": 2, "target_stderr": None},
           "bridge": {"runs": 2, "draws": 200, "warmup": 50}}
IDENTITY = {"name", "kind", "n_classes", "n_parameters", "effective_dimension"}
EVIDENCE = {"log_evidence", "evidence_method", "log_evidence_stderr", "posterior_prob",
            "posterior_low", "posterior_high", "log_bayes_factor", "flags", "flag_notes",
            "seconds"}


def _two_class_data(n: int = 300, seed: int = 1) -> lcb.Dataset:
    """Two well separated classes (60/40) on four binary items."""
    template = lcb.Dataset.from_codes(np.zeros((2, 4), dtype=int) + np.array([[0], [1]]))
    truth = lcb.latent_class(template, 2)
    params = {"class": np.array([0.6, 0.4])}
    for c in template.columns:
        params[c] = np.array([[0.1, 0.9], [0.85, 0.15]])
    return lcb.simulate(truth, params, n=n, seed=seed)


@pytest.fixture(scope="module")
def two_class() -> lcb.Dataset:
    data = _two_class_data()
    assert data.n_patterns == 16  # the shape every data set here shares
    return data


@pytest.fixture(scope="module")
def uniform() -> lcb.Dataset:
    """Every pattern of four binary items once: exactly independent, so the one-class model
    fits it perfectly and a two-class ML fit can only sit on the singular set."""
    return lcb.Dataset.from_codes(np.array(list(itertools.product(range(2), repeat=4))))


@pytest.fixture(scope="module")
def main(two_class) -> lcb.ComparisonResult:
    return lcb.compare(two_class, n_classes=range(1, 4), methods=NO_AIS, restarts=3, seed=0,
                       engine_options=ENGINES, progress=False)


@pytest.fixture(scope="module")
def exact_comp(uniform) -> lcb.ComparisonResult:
    return lcb.compare(uniform, n_classes=[1, 2], methods=("bic", "cs", "vbem"), restarts=3,
                       seed=0, exact=True, progress=False)


@pytest.fixture(scope="module")
def short_ais(two_class) -> lcb.ComparisonResult:
    """AIS with 4 temperatures on 300 rows: far too short."""
    return lcb.compare(two_class, n_classes=[1], methods=("vbem", "ais"), restarts=3, seed=0,
                       engine_options={"ais": {"chains": 8, "temperatures": 4}}, progress=False)


# ---------------------------------------------------------------------- the table
def test_frame_has_the_documented_columns(main, short_ais):
    frame = main.to_frame()
    scores = {"loglik", "bic", "bic_e", "aic", "icl", "cs", "cs_corrected", "elbo",
              "elbo_corrected", "exact", "smc_evidence", "smc_evidence_stderr", "smc",
              "smc_stderr", "bridge", "bridge_stderr"}
    ranks = {f"rank_{m}" for m in ("bic", "bic_e", "aic", "icl", "cs", "vbem", "exact", "smc",
                                   "evidence")}
    assert set(frame.columns) == IDENTITY | scores | EVIDENCE | ranks
    assert list(frame["name"]) == ["LC(1)", "LC(2)", "LC(3)"]
    assert list(frame["n_parameters"]) == [4, 9, 14]
    assert list(frame["effective_dimension"]) == [4, 9, 13]  # Geiger et al.: LC(3) on 4 items
    assert not any(c.startswith("ais") for c in frame)  # only what was requested
    ais_frame = short_ais.to_frame()
    assert {"ais", "ais_stderr", "ais_ess", "rank_ais", "elbo", "elbo_corrected"} <= set(
        ais_frame)
    assert "loglik" not in ais_frame and "bic" not in ais_frame  # no EM method, no EM fit
    assert short_ais.em == (None,)


def test_scores_match_the_engines(main, two_class):
    frame = main.to_frame().set_index("name")
    fit = lcb.em(lcb.latent_class(two_class, 2), two_class, restarts=3, seed=0)
    row = frame.loc["LC(2)"]
    assert row["loglik"] == pytest.approx(fit.loglik, abs=1e-9)
    assert row["bic"] == pytest.approx(fit.loglik - 9 / 2 * math.log(300))
    assert row["cs_corrected"] == pytest.approx(fit.cs + math.log(2))
    assert row["elbo_corrected"] == pytest.approx(row["elbo"] + math.log(2))
    assert row["elbo"] >= row["cs"] - 1e-9  # started from the EM fit too (Cor. 6.2)
    assert frame.loc["LC(1)", "exact"] == pytest.approx(frame.loc["LC(1)", "elbo"], abs=1e-8)
    assert np.isnan(row["exact"])  # 300 rows: too large for max_terms


def test_ranks_follow_the_scores(main):
    frame = main.to_frame()
    for method in ("bic", "bic_e", "aic", "icl", "cs", "vbem", "evidence"):
        column = {"cs": "cs_corrected", "vbem": "elbo_corrected",
                  "evidence": "log_evidence"}.get(method, method)
        ranks = frame[f"rank_{method}"].to_numpy(dtype=int)
        order = np.argsort(-frame[column].to_numpy(), kind="stable")
        assert list(ranks[order]) == [1, 2, 3], method


def test_posterior_sums_to_one_and_bayes_factors_are_relative_to_the_best(main, short_ais):
    for comp in (main, short_ais):
        frame = comp.to_frame()
        prob = frame["posterior_prob"].to_numpy()
        assert prob.sum() == pytest.approx(1.0)
        assert np.all(frame["posterior_low"] <= prob) and np.all(prob <= frame[
            "posterior_high"])
        best = frame["log_evidence"].idxmax()
        assert frame.loc[best, "log_bayes_factor"] == 0.0
        assert np.allclose(frame["log_bayes_factor"],
                           frame["log_evidence"] - frame["log_evidence"].max())
        assert np.allclose(np.log(prob), frame["log_evidence"] - logsumexp(
            frame["log_evidence"]))


def test_two_separated_classes_are_chosen(main):
    frame = main.to_frame().set_index("name")
    for method in ("bic", "bic_e", "cs", "vbem", "smc", "evidence"):
        assert frame.loc["LC(2)", f"rank_{method}"] == 1, method
    assert main.best == "LC(2)"
    assert list(frame["evidence_method"]) == ["exact", "smc", "smc"]
    # LC(3) on four binary items is over-fitted but its evidence is within a nat of LC(2)'s
    # (the VB bound, 4 nats lower there, would overstate LC(2)'s probability)
    assert frame["posterior_prob"].idxmax() == "LC(2)"
    assert frame.loc["LC(2)", "posterior_prob"] > 0.5


def test_same_seed_same_table(main, two_class, capsys):
    again = lcb.compare(two_class, n_classes=range(1, 4), methods=NO_AIS, restarts=3, seed=0,
                        engine_options=ENGINES, progress=False)
    assert capsys.readouterr().err == ""  # progress=False is silent
    pd.testing.assert_frame_equal(main.to_frame().drop(columns="seconds"),
                                  again.to_frame().drop(columns="seconds"))


def test_progress_bar_goes_to_stderr(uniform, capsys):
    lcb.compare(uniform, n_classes=[1], methods=("bic",), restarts=3, progress=True)
    assert "compare" in capsys.readouterr().err


def test_exact_evidence_drives_the_posterior(exact_comp, uniform):
    frame = exact_comp.to_frame()
    exact = [lcb.exact_evidence(lcb.latent_class(uniform, k), uniform).log_evidence
             for k in (1, 2)]
    assert list(frame["evidence_method"]) == ["exact", "exact"]
    assert np.allclose(frame["log_evidence"], exact, atol=1e-10)
    expected = np.exp(np.array(exact) - logsumexp(exact))
    assert np.allclose(frame["posterior_prob"], expected)
    assert np.allclose(frame["posterior_low"], expected)  # no AIS error to propagate
    assert np.allclose(frame["posterior_high"], expected)
    assert np.all(frame["elbo"] <= frame["exact"] + 1e-9)  # the bound holds


# ---------------------------------------------------------------------- flags
def test_bic_singular_flags_a_fit_on_the_singular_set(exact_comp):
    frame = exact_comp.to_frame().set_index("name")
    assert frame.loc["LC(1)", "flags"] == ""
    assert "bic_singular" in frame.loc["LC(2)", "flags"].split(",")
    assert "no significant gain" in frame.loc["LC(2)", "flag_notes"]
    # real: two classes reproduce the one-class (uniform) distribution, gaining nothing
    one, two = exact_comp.em
    assert two.loglik - one.loglik < 1e-6
    params = two.params
    patterns = np.array(list(itertools.product(range(2), repeat=4)))
    joint = sum(params["class"][k] * np.prod([params[f"X{j + 1}"][k, patterns[:, j]]
                                              for j in range(4)], axis=0)
                for k in range(2))
    assert np.allclose(joint, 1 / 16, atol=1e-4)


def test_bic_singular_spares_a_real_class_and_flags_a_superfluous_one(main):
    frame = main.to_frame().set_index("name")
    assert "bic_singular" not in frame.loc["LC(2)", "flags"]
    assert "bic_singular" in frame.loc["LC(3)", "flags"]  # the truth has two classes


def test_ais_below_the_vb_bound_is_flagged_and_not_trusted(short_ais):
    row = short_ais.to_frame().iloc[0]
    # real: a one-class model has a closed-form evidence that the VB bound attains
    assert row["elbo"] == pytest.approx(row["exact"], abs=1e-8)
    assert row["ais"] < row["elbo"] - AIS_BELOW_VBEM_SE * row["ais_stderr"]
    assert {"ais_below_vbem", "ais_off_exact"} <= set(row["flags"].split(","))
    assert row["evidence_method"] == "exact"
    without_exact = short_ais.with_fits(exact=(None,))
    row = without_exact.to_frame().iloc[0]
    # the flagged AIS value is not used, and the VB bound is no candidate's evidence
    assert row["evidence_method"] == "none" and np.isnan(row["log_evidence"])


def test_not_converged_and_local_optimum_flags(main):
    one, two, three = main.em
    stalled = main.with_fits(em=(one, dataclasses.replace(two, converged=False), three))
    assert stalled.to_frame()["flags"].str.contains("not_converged").tolist() == [
        False, True, False]
    vb = main.vbem
    stalled_vb = main.with_fits(vbem=(dataclasses.replace(vb[0], converged=False), vb[1],
                                      vb[2]))
    assert "VBEM" in stalled_vb.to_frame()["flag_notes"][0]
    worse = main.with_fits(em=(one, two, dataclasses.replace(three, loglik=two.loglik - 1.0)))
    assert worse.to_frame()["flags"].str.contains("em_local_optimum").tolist() == [
        False, False, True]


def test_posterior_intervals_propagate_ais_error():
    prob, low, high = posterior_probabilities([-10.0, -10.0, np.nan], [1.0, 1.0, np.nan])
    assert prob[:2] == pytest.approx([0.5, 0.5]) and np.isnan(prob[2])
    assert low[0] < 0.2 and high[0] > 0.8  # difference ~ N(0, 2): wide
    same = posterior_probabilities([-10.0, -10.0, np.nan], [1.0, 1.0, np.nan])
    assert np.array_equal(low, same[1], equal_nan=True)  # seeded
    prob, low, high = posterior_probabilities([-10.0, -12.0], [0.0, 0.0])
    assert np.array_equal(prob, low) and np.array_equal(prob, high)
    _, low, high = posterior_probabilities([-10.0, -12.0], [0.0, 0.5])
    assert low[1] < prob[1] < high[1] and low[0] < prob[0] < high[0]


# ---------------------------------------------------------------------- input errors
def test_bad_input_is_refused_with_a_clear_message(two_class, uniform):
    lc2 = lcb.latent_class(two_class, 2)
    with pytest.raises(lcb.LcbayesError, match="exactly one of candidates"):
        lcb.compare(two_class)
    with pytest.raises(lcb.LcbayesError, match="exactly one of candidates"):
        lcb.compare(two_class, [lc2], n_classes=[1])
    with pytest.raises(lcb.LcbayesError, match="candidates is empty"):
        lcb.compare(two_class, [])
    with pytest.raises(lcb.LcbayesError, match=r"valid methods are bic, bic_e.*ais"):
        lcb.compare(two_class, n_classes=[1], methods=["bic", "laplacian"])
    with pytest.raises(lcb.LcbayesError, match="same structure"):
        lcb.compare(two_class, [lc2, lcb.latent_class(two_class, 2)])
    other = lcb.Dataset.from_codes(np.array([[0, 1], [1, 0]]), columns=["X1", "Z"])
    with pytest.raises(lcb.LcbayesError, match=r"observes column\(s\) \['Z'\]"):
        lcb.compare(two_class, [lc2, lcb.latent_class(other, 2)])
    with pytest.raises(lcb.LcbayesError, match="same columns"):
        lcb.compare(two_class, [lc2, lcb.latent_class(two_class.select(["X1", "X2", "X3"]),
                                                      2)])
    with pytest.raises(lcb.LcbayesError, match="classes must be integers >= 1"):
        lcb.compare(two_class, n_classes=[0, 1])
    with pytest.raises(lcb.LcbayesError, match="exact must be"):
        lcb.compare(two_class, n_classes=[1], exact="yes")
    with pytest.raises(lcb.TooLargeError, match="LC\\(2\\)"):
        lcb.compare(two_class, n_classes=[2], methods=("bic",), exact=True)
    assert set(selectable_methods()) >= {"bic", "bic_e", "aic", "icl", "cs", "vbem", "ais"}


# ---------------------------------------------------------------------- reports
def test_to_dict_is_strict_json(main):
    out = json.loads(json.dumps(main.to_dict(), allow_nan=False))
    assert set(out) == {"rows", "metadata", "fits", "data"} and len(out["rows"]) == 3
    assert {k: out[k] for k in ("rows", "metadata")} == json.loads(json.dumps(
        main.summary_dict(), allow_nan=False))  # what the command line prints
    assert out["rows"][1]["exact"] is None and out["rows"][2]["flags"] == ["bic_singular"]
    meta = out["metadata"]
    assert meta["seeds"]["em"] == 0 and meta["settings"]["restarts"] == 3
    assert {"lcbayes", "jax", "numpyro", "python"} <= set(meta["versions"])
    assert meta["data"]["n_rows"] == 300 and meta["best"] == "LC(2)"


def test_html_report_is_one_self_contained_file(main, short_ais, tmp_path):
    for name, comp in (("main", main), ("ais", short_ais)):
        path = comp.to_html(tmp_path / f"{name}.html")
        assert [p.name for p in tmp_path.iterdir() if p.stem == name] == [f"{name}.html"]
        text = path.read_text()
        assert '<img alt=\'scores\' src="data:image/png;base64,' in text
        assert "<table>" in text and "LC(1)" in text and "How to read this" in text
        assert "src=\"http" not in text and "href=" not in text
    assert "ais_traces" in text and "ais_acceptance" in text  # the AIS diagnostics
    assert 'class="flag"' in text and "ais_below_vbem" in text  # flagged cell highlighted


def test_markdown_report_has_the_table_and_linked_figures(main, tmp_path):
    text = main.to_markdown()
    assert "| model | K | d | d_e | loglik | BIC |" in text and "| LC(2) |" in text
    written = main.to_markdown(tmp_path / "cmp.md", title="Two classes")
    assert written.startswith("# Two classes")
    assert (tmp_path / "cmp.md").read_text() == written
    for png in ("cmp-scores.png", "cmp-posterior.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG" and f"]({png})" in written


def test_summary_is_a_readable_table(main):
    text = main.summary()
    assert "LC(2)" in text and "BIC" in text and "bic_singular" in text
    assert "Highest log evidence: LC(2)" in text
    assert repr(main).startswith("ComparisonResult(3 candidates")


def test_ais_dominated_by_few_chains_is_flagged(short_ais):
    run = short_ais.ais[0]
    healthy = short_ais.with_fits(ais=(dataclasses.replace(run, ess=run.chains),))
    assert "ais_low_ess" not in healthy.to_frame().iloc[0]["flags"]
    skewed = short_ais.with_fits(ais=(dataclasses.replace(run, ess=1.2),))
    assert "ais_low_ess" in skewed.to_frame().iloc[0]["flags"].split(",")


# ---------------------------------------------------------------------- readable output
def _first(comp: lcb.ComparisonResult, n: int) -> lcb.ComparisonResult:
    """The comparison of the first ``n`` candidates only (the same engine results)."""
    return dataclasses.replace(comp, names=comp.names[:n], structures=comp.structures[:n],
                               fits={k: v[:n] for k, v in comp.fits.items()},
                               exact_notes=comp.exact_notes[:n])


def test_plain_table_fits_100_columns_and_wide_shows_every_column(main):
    narrow, wide = main.summary(), main.summary(wide=True)
    assert max(len(line) for line in narrow.splitlines()) <= 100
    head = next(line for line in narrow.splitlines() if line.startswith("model"))
    assert head.split()[:4] == ["model", "K", "d", "BIC"]
    assert head.split()[-7:] == ["ln", "p(y|m)", "s.e.", "from", "p(m|y)", "[95%]", "flags"]
    assert "SMC/bridge" in head  # an evidence estimate that fits; scores that do not, named
    assert "Left out for width: BIC_e, AIC, ICL, CS, VB F + ln S (--wide shows them)" in narrow
    row = next(line for line in narrow.splitlines() if line.startswith("LC(3)"))
    assert row.split()[-1] == "SG"  # bic_singular as its code, explained below
    assert "SG = bic_singular: the K-class ML fit" in narrow
    assert max(len(line) for line in wide.splitlines()) > 100
    for heading in ("d_e", "loglik", "BIC_e", "AIC", "ICL", "CS*", "VB F*", "exact"):
        assert f" {heading} " in wide.splitlines()[3] + " "  # every score column, as before
    assert set(main.score_columns) <= set(main.to_dict()["rows"][0])  # JSON keeps them all


def test_best_value_of_every_score_column_is_marked(main):
    frame = main.to_frame()
    text = main.to_markdown()
    table = text.split("## Scores")[1].split("## Evidence")[0]
    lines = [line for line in table.splitlines() if line.startswith("| LC(")]
    head = [c.strip() for c in table.splitlines()[2].strip("|").split("|")]
    for heading, column in (("CS*", "cs"), ("VB F*", "elbo"), ("CS", "cs_corrected")):
        cells = [line.strip("|").split("|")[head.index(heading)].strip() for line in lines]
        bold = [i for i, cell in enumerate(cells) if cell.startswith("**")]
        assert bold == [int(frame[column].idxmax())], heading  # CS*, VB F* were never bold


def test_best_at_the_largest_k_suggests_a_wider_range(main, tmp_path):
    assert not main.best_is_largest and main.notes() == []
    assert main.to_dict()["metadata"]["best_is_largest"] is False
    edge = _first(main, 2)  # LC(1), LC(2): the best, LC(2), is the largest compared
    assert edge.best == "LC(2)" and edge.best_is_largest
    assert edge.wider_classes() == range(1, 6)
    meta = json.loads(json.dumps(edge.to_dict()))["metadata"]
    assert meta["best_is_largest"] is True and "--n-classes 1-5" in meta["notes"][0]
    assert "Note: LC(2), the largest number of classes compared" in edge.summary()
    assert "> **Note**: LC(2)" in edge.to_markdown()
    html = edge.to_html(tmp_path / "edge.html").read_text()
    assert "<b>Note</b>: LC(2), the largest number" in html
    assert not _first(main, 1).best_is_largest  # one candidate: no range to widen


def test_reports_have_settings_versions_and_the_class_profiles(main, tmp_path):
    html = main.to_html(tmp_path / "r.html", data_name="survey.csv").read_text()
    md = main.to_markdown(tmp_path / "r.md", data_name="survey.csv")
    for text in (html, md):
        for item in ("survey.csv", "distinct patterns", "bic, bic_e, aic, icl, cs, vbem",
                     "em 0, vbem 0", "lcbayes ", "jax ", "numpyro "):
            assert item in text, item
        assert "200000.000" not in text and "exact.max_terms = 200000" in text.replace(
            "<tr><th>exact.max_terms</th><td>", "exact.max_terms = ")
    assert "<img alt='class_profiles'" in html
    assert (tmp_path / "r-class-profiles.png").read_bytes()[:4] == b"\x89PNG"
    from lcbayes.comparison.figures import figures

    profiles = figures(main)["class_profiles"]
    ax = profiles.axes[0]
    assert "LC(2)" in ax.get_title() and "EM estimate" in ax.get_title()
    labels = [t.get_text() for t in profiles.legends[0].get_texts()]
    shares = main.em[1].class_weights
    assert labels == [f"class {k + 1} ({shares[k]:.2f})" for k in range(2)]
    heights = sorted(round(b.get_height(), 6) for b in ax.patches)
    expected = sorted(round(main.em[1].params[c][k, 1], 6) for c in ("X1", "X2", "X3", "X4")
                      for k in range(2))
    assert heights == expected  # P(second category | class) of every item and class


def test_the_scores_axis_leaves_out_a_far_candidate(main):
    from lcbayes.comparison.figures import figures, visible_range

    two = dataclasses.replace(main, methods=("bic", "vbem"))  # the same fits, fewer scores
    frame = two.to_frame()
    ax = figures(two)["scores"].axes[0]
    scores = frame[["bic", "elbo_corrected", "exact"]].to_numpy(dtype=float)
    low, high, off = visible_range(scores)
    assert off == [0] and low > frame.loc[0, "bic"] + 100  # LC(1), 150 nats below the rest
    assert ax.get_ylim() == pytest.approx((low, high))
    assert [t.get_text().split(" off scale")[0] for t in ax.texts] == ["LC(1)"]


def test_the_table_does_not_depend_on_the_threads(two_class, main):
    """The needs run as tasks on threads in an order that depends on timing (VBEM after EM,
    AIS beside them); every number depends on the seed alone."""
    serial = lcb.compare(two_class, n_classes=range(1, 4), methods=NO_AIS, restarts=3, seed=0,
                         engine_options=ENGINES, progress=False, workers=1)
    wide = lcb.compare(two_class, n_classes=range(1, 4), methods=NO_AIS, restarts=3, seed=0,
                       engine_options=ENGINES, progress=False, workers=5)
    columns = [c for c in main.to_frame().columns if c != "seconds"]
    for other in (serial, wide):
        pd.testing.assert_frame_equal(other.to_frame()[columns], main.to_frame()[columns])
