"""Multiple-group latent class analysis (lcbayes.engines.groups): glca 1.4.2's printed numbers
on gss08 (benchmarks/oracles/03_glca_gss08.*), the likelihood recomputed independently,
invariants, bad input and the surfaces (JSON, predict_proba, CLI)."""

import itertools
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.engines.groups.saturated import saturated_loglik
from lcbayes.errors import ArgumentError, DataError

ORACLE = json.loads((Path(__file__).parents[1] / "benchmarks" / "oracles"
                     / "03_glca_gss08.json").read_text())
GSS08 = Path(__file__).parent / "data" / "gss08.csv"
ITEMS = ["DEFECT", "HLTH", "RAPE", "POOR", "SINGLE", "NOMORE"]
LEVELS = ["<= HS", "HIGH SCHOOL", "COLLEGE", "GRADUATE"]
EXACT = {"tol": 1e-10, "max_iter": 20000}


@pytest.fixture(scope="module")
def gss08():
    frame = pd.read_csv(GSS08)
    frame["DEGREE"] = pd.Categorical(frame["DEGREE"], categories=LEVELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[ITEMS]), 3)
    return frame, structure


def _fit(gss08, **kw):
    frame, structure = gss08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lcb.em(structure, frame, group="DEGREE", seed=0, **EXACT, **kw)


@pytest.fixture(scope="module")
def full(gss08):
    return _fit(gss08, restarts=10, standard_errors="empirical")


@pytest.fixture(scope="module")
def none(gss08):
    # many local maxima (glca: 8 of 200 single starts reach the best)
    return _fit(gss08, invariance="none", restarts=300, standard_errors="empirical")


def _glca_scores(fit, oracle):
    assert fit.loglik == pytest.approx(oracle["loglik"], abs=1e-4)
    assert fit.n_parameters == oracle["npar"]
    assert fit.df == oracle["df"]
    assert -2 * fit.aic == pytest.approx(oracle["AIC"], abs=2e-4)
    assert -2 * fit.bic == pytest.approx(oracle["BIC"], abs=2e-4)
    assert fit.n_observed_rows == oracle["N"] == 352


def _glca_saturated(codes: np.ndarray, strata: np.ndarray, cards: list[int]) -> float:
    """glca 1.4.2's saturated log-likelihood (ObsLik in its glca.cpp), rewritten here as the
    test's oracle of glca's G^2: its EM enumerates the cells of a row with missing items with
    a stride that is reset, not multiplied, after each missing item, so a row with three or
    more missing items is spread over the wrong cells. Our saturated_loglik is the correct
    maximum; this reproduces the number glca prints."""
    total = 0.0
    strides = np.cumprod([1, *cards[:-1]])
    for stratum in np.unique(strata):
        rows = codes[strata == stratum]
        cells = []
        for row in rows:
            missing = [m for m in range(len(cards)) if row[m] < 0]
            size = math.prod(cards[m] for m in missing)
            index = np.zeros(size, dtype=int)
            step = 1
            for m in range(len(cards)):
                if row[m] >= 0:
                    index += strides[m] * row[m]
                else:
                    index += strides[m] * ((np.arange(size) // step) % cards[m])
                    step = cards[m]
            cells.append(index)
        theta = np.full(math.prod(cards), len(rows) / math.prod(cards))
        for _ in range(1000):
            expected, loglik = np.zeros_like(theta), 0.0
            for index in cells:
                mass = theta[index].sum()
                np.add.at(expected, index, theta[index] / mass)
                loglik += math.log(mass)
            new = expected / len(rows)
            change, theta = np.abs(new - theta).max(), new
            if change < 1e-8:
                break
        total += loglik
    return total


def test_full_invariance_equals_glca(full):
    _glca_scores(full, ORACLE["a_measure_inv"])
    assert [int(n) for n in full.prevalences().groupby("group", sort=False)["n"].first()] == \
        ORACLE["a_measure_inv"]["Ng"]
    # prevalences by group: glca's gamma, matched by class
    ours = full.prevalences().pivot(index="group", columns="class", values="prevalence")
    theirs = np.asarray(ORACLE["a_measure_inv"]["param"]["gamma"])
    ours = ours.reindex(LEVELS).to_numpy()
    best = min(itertools.permutations(range(3)), key=lambda p: np.abs(ours[:, p] - theirs).sum())
    np.testing.assert_allclose(ours[:, best], theirs, atol=1e-5)
    assert full.aligned_to is None


def test_g2_is_against_the_correct_saturated_table_and_glcas_rule_reproduces_glca(gss08, full):
    frame, structure = gss08
    items = lcb.Dataset.from_pandas(frame[ITEMS], categories=structure.categories())
    kept = (items.codes >= 0).any(axis=1)
    codes = items.codes[kept]
    group = frame["DEGREE"].cat.codes.to_numpy()[kept]
    glca = _glca_saturated(codes, group, [2] * 6)
    assert glca == pytest.approx(ORACLE["a_measure_inv"]["loglik0_saturated"], abs=1e-6)
    assert 2 * (glca - full.loglik) == pytest.approx(ORACLE["a_measure_inv"]["Gsq"], abs=2e-4)
    # ours: the maximum over the full tables, a higher likelihood than glca's wrong sum ...
    ours = full.saturated_loglik
    assert ours == pytest.approx(saturated_loglik(codes, (2,) * 6, group))
    assert full.gsq == pytest.approx(2 * (ours - full.loglik))
    # ... reached: the rows with at most two missing items alone give glca's number
    few = (codes < 0).sum(axis=1) <= 2
    assert saturated_loglik(codes[few], (2,) * 6, group[few]) == pytest.approx(
        _glca_saturated(codes[few], group[few], [2] * 6), abs=1e-5)


def test_saturated_loglik_of_complete_rows_is_the_observed_proportions():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, size=(200, 3))
    strata = rng.integers(0, 2, size=200)
    expected = 0.0
    for s in (0, 1):
        _, counts = np.unique(codes[strata == s], axis=0, return_counts=True)
        expected += float(counts @ np.log(counts / counts.sum()))
    assert saturated_loglik(codes, (3, 3, 3), strata) == pytest.approx(expected)


def test_no_invariance_equals_glcas_best_and_aligns_classes(none):
    _glca_scores(none, ORACLE["b_no_measure_inv"])
    assert none.aligned_to == "HIGH SCHOOL"          # the largest group
    assert "matched to those of 'HIGH SCHOOL'" in none.summary()
    # aligned: every group's class r is the one nearest the reference's class r
    ref = np.concatenate(list(none.item_probabilities("HIGH SCHOOL").values()), axis=1)
    for level in LEVELS:
        own = np.concatenate(list(none.item_probabilities(level).values()), axis=1)
        cost = ((ref[:, None] - own[None]) ** 2).sum(axis=2)
        assert np.trace(cost) == pytest.approx(
            min(sum(cost[i, p[i]] for i in range(3)) for p in itertools.permutations(range(3))))


def test_deviance_test_equals_gofglca(full, none):
    test = lcb.invariance_test(full, none)
    oracle = ORACLE["invariance_test"]
    assert test.statistic == pytest.approx(oracle["deviance"], abs=2e-4)
    assert test.df == oracle["df"]
    assert test.p_chisq == pytest.approx(oracle["p_value"], abs=1e-5)
    assert "44.26" in test.summary()
    with pytest.raises(ArgumentError, match="not nested"):
        lcb.invariance_test(none, full)


def test_sex_covariate_on_top_of_the_groups_equals_glca(gss08):
    frame, structure = gss08
    frame = frame.assign(SEX=pd.Categorical(frame["SEX"], categories=["MALE", "FEMALE"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = lcb.em(structure, frame, group="DEGREE", covariates=["SEX"], restarts=10, seed=0,
                     standard_errors="empirical", **EXACT)
    oracle = ORACLE["c_measure_inv_SEX"]
    _glca_scores(fit, oracle)
    # the classes matched to glca's by P(DEFECT = YES); glca's reference class is 3
    theirs = np.asarray(oracle["param"]["rho"]["<= HS"]["DEFECT"])[:, 0]
    ours = fit.item_probabilities()["DEFECT"][:, 1]
    order = [int(np.argmin(np.abs(ours - t))) for t in theirs]
    coef = fit.fit.coef[fit.fit.covariates.names.index("SEXFEMALE")]
    slope = [coef[order[0]] - coef[order[2]], coef[order[1]] - coef[order[2]]]
    np.testing.assert_allclose(slope, oracle["param"]["beta"]["<= HS"][1], atol=1e-4)
    intercepts = {level: fit.fit.coef[0] + (fit.fit.coef[fit.fit.covariates.names.index(
        f"DEGREE{level}")] if level != LEVELS[0] else 0) for level in LEVELS}
    for level in LEVELS:
        b = intercepts[level]
        np.testing.assert_allclose([b[order[0]] - b[order[2]], b[order[1]] - b[order[2]]],
                                   oracle["param"]["beta"][level][0], atol=1e-4)


def test_partial_likelihood_recomputed_from_the_tables(gss08):
    frame, structure = gss08
    fit = _fit(gss08, invariance=["HLTH", "POOR"], restarts=5)
    assert fit.layout.invariance == "partial: HLTH, POOR"
    assert fit.n_parameters == 3 * 4 + 3 * 2 * 4 + 2 * 4
    items = lcb.Dataset.from_pandas(frame[ITEMS], categories=structure.categories()).codes
    prev = fit.prevalences().pivot(index="group", columns="class", values="prevalence")
    total = 0.0
    for row, level in zip(items, frame["DEGREE"], strict=True):
        if (row < 0).all():
            continue
        tables = fit.item_probabilities(level)
        terms = np.log(prev.loc[level].to_numpy())
        for j, item in enumerate(ITEMS):
            if row[j] >= 0:
                terms = terms + np.log(tables[item][:, row[j]])
        total += logsumexp(terms)
    assert total == pytest.approx(fit.loglik, abs=1e-8)
    # invariant items have one table; free ones differ between groups
    assert np.array_equal(fit.item_probabilities(LEVELS[0])["RAPE"],
                          fit.item_probabilities(LEVELS[3])["RAPE"])
    ranked = fit.profile_differences()
    assert set(ranked.loc[ranked["difference"] > 0, "item"]) <= {"HLTH", "POOR"}


def test_predict_proba_with_a_group_and_json_round_trip(gss08, full):
    frame, _ = gss08
    rows = frame[(frame[ITEMS].notna()).any(axis=1)]
    posterior = full.predict_proba(rows)
    np.testing.assert_allclose(posterior, full.fit.posteriors, atol=1e-10)
    back = lcb.GroupResult.from_dict(json.loads(json.dumps(full.to_dict())))
    assert back.loglik == full.loglik and back.df == full.df and back.gsq == full.gsq
    np.testing.assert_allclose(back.predict_proba(rows), posterior)
    pd.testing.assert_frame_equal(back.prevalences(), full.prevalences())
    with pytest.raises(DataError, match="not seen"):
        full.predict_proba(rows.assign(DEGREE=rows["DEGREE"].astype(str).replace(
            "GRADUATE", "PHD")))
    sim = full.simulate(rows[["DEGREE"]], seed=1)
    assert list(sim.columns) == ["class", "DEGREE", *ITEMS] and len(sim) == len(rows)


def test_rows_without_group_or_items_are_left_out_with_counts(gss08):
    frame, structure = gss08
    frame = frame.copy()
    frame.loc[:4, "DEGREE"] = None
    with pytest.warns(UserWarning) as record:
        fit = lcb.em(structure, frame, group="DEGREE", restarts=2, seed=0)
    messages = [str(w.message) for w in record]
    assert any("5 of 355 rows have no DEGREE" in m for m in messages)
    assert any("3 of 355 rows have every item missing" in m for m in messages)
    assert fit.fit.n_used_rows == 355 - 5 - 3 and fit.n_rows == 355


def test_bad_input_is_refused_clearly(gss08):
    frame, structure = gss08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DataError, match="one level"):
            lcb.em(structure, frame.assign(G="a"), group="G")
        with pytest.raises(ArgumentError, match=r"\['AGE'\] are not indicators"):
            lcb.em(structure, frame, group="DEGREE", invariance=["AGE"])
        with pytest.raises(DataError, match="also an indicator"):
            lcb.em(structure, frame, group="HLTH")
        with pytest.raises(DataError, match="not a column"):
            lcb.em(structure, frame, group="NOPE")
        with pytest.raises(ArgumentError, match="needs group"):
            lcb.em(structure, frame, invariance="none")
        with pytest.raises(ArgumentError, match="prior"):
            lcb.em(structure, frame, group="DEGREE", prior="dirichlet")
    small = frame.assign(G=np.where(np.arange(len(frame)) < 6, "tiny", "big"))
    with pytest.warns(UserWarning, match=r"'tiny' \(\d rows\).*fewer rows than their own 8"):
        lcb.em(structure, small, group="G", invariance=["HLTH", "POOR"], restarts=1, seed=0)


def test_cli_fit_and_errors(capsys, tmp_path):
    cols = ",".join(ITEMS)
    assert main(["fit", str(GSS08), "--n-classes", "3", "--group", "DEGREE", "--columns", cols,
                 "--restarts", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "multiple_group_latent_class" and out["n_parameters"] == 26
    assert out["loglik"] == pytest.approx(ORACLE["a_measure_inv"]["loglik"], abs=1e-4)
    one = tmp_path / "one.csv"
    pd.read_csv(GSS08).assign(G="x").to_csv(one, index=False)
    for argv, message in [
            (["fit", str(one), "--n-classes", "3", "--group", "G", "--columns", cols],
             "one level"),
            (["fit", str(GSS08), "--n-classes", "3", "--group", "DEGREE", "--columns", cols,
              "--invariance", "AGE"], "not indicators"),
            (["fit", str(GSS08), "--n-classes", "3", "--group", "NOPE"], "not a column"),
            (["compare", str(GSS08), "--n-classes", "2-3", "--group", "DEGREE"],
             "one number of classes")]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


@pytest.mark.slow  # three SMC programs compiled (about a minute); the benchmark
# benchmarks/bench_invariance.py runs invariance="all"
def test_compare_invariance_ranks_structures_with_error_bars(gss08, tmp_path, capsys):
    frame, structure = gss08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lcb.compare_invariance(structure, frame, "DEGREE",
                                        invariance=["full", "none", ["POOR"]], restarts=5,
                                        engine_options={"smc": {"particles": 64, "runs": 4}})
    table = result.table.set_index("invariance")
    assert list(table.index) == ["full", "none", "partial: POOR"]
    assert table["posterior_prob"].sum() == pytest.approx(1.0)
    assert (table["prob_low"] <= table["posterior_prob"]).all()
    assert (table["stderr"] < 1.0).all()
    # 54 more parameters that the data do not need: the evidence punishes them heavily
    assert result.best == "full"
    assert table.loc["none", "log_evidence"] < table.loc["full", "log_evidence"] - 20
    back = lcb.InvarianceComparisonResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back.best == result.best and len(back.fits) == 3
    assert result.prevalence_figure() is not None and result.profile_figure(items=2) is not None


def test_the_bayesian_model_is_the_joint_of_the_conditional_and_the_group(gss08, full):
    """The evidence's model (the group one more item) has the conditional model's maximum
    likelihood plus the groups' multinomial ``sum_g n_g ln(n_g / N)`` and ``G - 1`` more
    parameters (P(class, group) is the same family as P(group) P(class | group))."""
    frame, structure = gss08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, joint = lcb.invariance_model(structure, frame, "DEGREE")
        fit = lcb.em(model, joint, restarts=10, seed=0, **EXACT)
    counts = np.asarray(ORACLE["a_measure_inv"]["Ng"], dtype=float)
    assert fit.loglik == pytest.approx(full.loglik + counts @ np.log(counts / counts.sum()),
                                       abs=1e-5)
    assert model.n_parameters == full.n_parameters + len(counts) - 1
    assert joint.columns == (*ITEMS, "DEGREE") and joint.n_rows == 352


@pytest.mark.slow  # two SMC programs compiled
def test_cli_compare_writes_the_table_and_figures(capsys, tmp_path):
    report = tmp_path / "invariance.md"
    assert main(["compare", str(GSS08), "--n-classes", "3", "--group", "DEGREE", "--columns",
                 ",".join(ITEMS), "--invariance", "full;POOR", "--restarts", "5",
                 "--engine-option", "smc.particles=32", "--markdown", str(report)]) == 0
    out = capsys.readouterr().out
    assert "partial: POOR" in out and "Most probable:" in out and "wrote" in out
    text = report.read_text()
    assert "| full |" in text or "| full " in text
    assert (tmp_path / "invariance-prevalences.png").is_file()
    assert (tmp_path / "invariance-profiles.png").is_file()
    assert main(["compare", str(GSS08), "--n-classes", "3", "--group", "DEGREE", "--columns",
                 ",".join(ITEMS), "--engine-option", "ais.chains=4"]) == 2
    assert "only 'smc' options" in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(5))
def test_no_invariance_reaches_glcas_maximum_from_the_default_restarts(gss08, seed):
    frame, structure = gss08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = lcb.em(structure, frame, group="DEGREE", invariance="none", seed=seed)
    assert fit.loglik == pytest.approx(ORACLE["b_no_measure_inv"]["loglik"], abs=1e-4)
    line = fit.summary().splitlines()[-1]
    reached = int(line.split("best reached by ")[1].split()[0])
    logliks = fit.fit.restart_logliks
    assert reached == int(np.sum(np.abs(logliks - fit.loglik) < 1e-6 * abs(fit.loglik)))
    assert "a start from the separate fits of each group" in line and reached >= 1


def test_a_best_reached_by_one_start_only_is_warned_about(none):
    from dataclasses import replace

    from lcbayes.engines.groups.fit import _warn_unique_best

    best = none.fit.loglik
    alone = replace(none.fit, restart_logliks=np.array([best - 1.0, best, best - 2.0]))
    with pytest.warns(UserWarning, match="one of 3 starts alone reached the best"):
        _warn_unique_best(alone, None)
    separate = replace(none.fit, restart_logliks=np.array([best - 1.0, best - 2.0, best]))
    with pytest.warns(UserWarning, match="group 'COLLEGE' reached its best log-likelihood in "
                                         "one of its 50 restarts only"):
        _warn_unique_best(separate, (None, (1, "COLLEGE", 50)))  # the last start: separate
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_unique_best(replace(alone, restart_logliks=np.array([best, best])), None)
        _warn_unique_best(separate, (None, (2, "COLLEGE", 50)))
