"""Reference-tempered SMC (lcb.smc): exact at one class, within its error of the exact evidence on
small enumerable problems (missing values and an over-fitted K too), the final correction
counting a duplicated reference component and coinciding classes once, the distinct optima up
to relabelling, the permanent behind the relabelling sum, the multinomial allocations, graded
error bars, reproducibility, the JSON form and refused arguments."""

from __future__ import annotations

import itertools
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

import lcbayes as lcb
from lcbayes.engines.em_core import EMRuns
from lcbayes.engines.vbem import VBRuns, vbem_restarts
from lcbayes.samplers.allocations import (
    all_rows,
    included_counts,
    pattern_allocations,
    prefix_class,
    row_allocations,
    running_sum,
)
from lcbayes.samplers.bridge import log_permanent
from lcbayes.samplers.gibbs import symmetric_prior
from lcbayes.samplers.reference import (
    MIN_RESTARTS,
    RESTARTS_PER_CLASS,
    SAME_MODE_SDS,
    VB_WINDOW,
    Optimum,
    default_restarts,
    distinct_optima,
    matched_gap,
    padded_count,
    product_reference,
    reference_optima,
    variational_optima,
)
from lcbayes.samplers.smc_result import SMCResult, run_statistics
from lcbayes.samplers.tempered_smc import TemperedData, run_tempered, tempered_data
from lcbayes.validation import fit_data


def _small(n_rows: int = 40, seed: int = 4, missing: float = 0.0, k: int = 2) -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]))
    model = lcb.latent_class(template, k)
    return lcb.simulate(model, lcb.random_params(model, seed=seed), n_rows, seed=seed,
                        missing=missing)


def _covers(result: SMCResult, exact: float, slack: float = 0.02) -> bool:
    return abs(result.log_evidence - exact) <= 3.0 * result.stderr + slack


def test_log_permanent_equals_the_sum_over_permutations():
    rng = np.random.default_rng(0)
    for k in range(1, 6):
        log_a = rng.normal(scale=5.0, size=(k, k))
        log_a[0, -1] = -np.inf
        brute = logsumexp([sum(log_a[i, p[i]] for i in range(k))
                           for p in itertools.permutations(range(k))])
        assert float(log_permanent(log_a)) == pytest.approx(brute, abs=1e-10)


def test_allocations_are_multinomial_per_pattern():
    counts = np.array([30.0, 1.0, 0.0, 12.0])
    rows = all_rows(counts)
    logits = jnp.log(jnp.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1], [0.6, 0.4]]))
    keys = jax.random.split(jax.random.PRNGKey(0), 2000)
    by_pattern = jax.vmap(lambda k: pattern_allocations(k, logits, rows, jnp.asarray(counts)))(
        keys)
    by_row = jax.vmap(lambda k: row_allocations(k, logits, rows, rows.rows.size))(keys)
    for drawn in (np.asarray(by_pattern), np.asarray(by_row)):
        assert np.allclose(drawn.sum(-1), counts)                 # every row allocated once
        mean = drawn.mean(0)
        assert np.allclose(mean, counts[:, None] * np.exp(np.asarray(logits)), atol=0.6)


def test_running_sum_and_included_counts():
    x = jnp.arange(10.0)
    assert np.allclose(running_sum(x), np.cumsum(np.arange(10.0)))
    prefix = prefix_class(np.array([0, 1, 0, 2, 1], dtype=np.int32), 3)
    assert np.allclose(included_counts(prefix, 3), [2, 1, 0])


def test_one_class_is_exact():
    data = _small(200)
    structure = lcb.latent_class(data, 1)
    res = lcb.smc(structure, data, seed=0, runs=2)
    assert res.log_evidence == pytest.approx(lcb.exact_evidence(structure, data).log_evidence,
                                             abs=1e-8)
    assert res.stderr < 1e-8 and set(res.run_steps) == {1}


def test_restarts_grow_with_the_classes():
    # more classes, more modes: each reference fits more restarts by default (a fixed ten
    # left election K = 12's runs 2 nats apart, reports/evidence-at-scale.md)
    assert default_restarts(1) == default_restarts(2) == MIN_RESTARTS
    assert default_restarts(12) == 12 * RESTARTS_PER_CLASS > MIN_RESTARTS
    data = _small(60, seed=2)
    for k in (3, 4):
        structure = lcb.latent_class(data, k)
        res = lcb.smc(structure, data, seed=0, particles=16, runs=2, target_stderr=None,
                      max_components=2)
        assert res.settings["restarts"] == default_restarts(k)
        assert lcb.smc(structure, data, seed=0, particles=16, runs=2, target_stderr=None,
                       max_components=2, restarts=3).settings["restarts"] == 3


@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_two_classes_agree_with_the_exact_evidence(missing):
    # fewer rows with missing values: each one multiplies the exact sum's terms
    data = _small(40 if missing == 0 else 24, missing=missing)
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data).log_evidence
    res = lcb.smc(structure, data, seed=1, particles=128)
    assert res.method == "reference" and _covers(res, exact), (res.log_evidence, exact,
                                                               res.stderr)


def _raw_run(data: lcb.Dataset, k: int, optima: list[Optimum], seed: int = 0,
             particles: int = 256) -> float:
    structure = lcb.latent_class(data, k)
    data = fit_data(structure, data)
    tempered = tempered_data(data)
    prior = symmetric_prior(structure, "dirichlet", k, np.asarray(tempered.categories))
    device = TemperedData(*(jnp.asarray(a) for a in tempered[:3]),
                          jax.tree.map(jnp.asarray, tempered.rows))
    reference = product_reference(tempered, prior, optima, k)
    values = [run_tempered(jax.random.PRNGKey(seed + r), device, prior, reference, k,
                           particles=particles, ess_target=0.9, sweeps=3, max_steps=1000)
              for r in range(6)]
    return values


def test_a_component_given_twice_or_relabelled_is_counted_once():
    # the final correction w = omega_m Q_m / sum_sigma Q(sigma x): the same optimum twice, or
    # once as it is and once with its classes swapped, must give what it gives once
    data = _small(40, seed=2)
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data).log_evidence
    best = reference_optima(structure, fit_data(structure, data), restarts=5, seed=0,
                            prior="dirichlet")[0]
    swapped = Optimum(best.loglik, best.weights[::-1], tuple(t[::-1] for t in best.tables))
    for optima in ([best], [best, best], [best, swapped]):
        ends = _raw_run(data, 2, optima)
        values = np.array([float(e.log_evidence) for e in ends])
        pooled = float(logsumexp(values) - math.log(values.size))
        assert pooled == pytest.approx(exact, abs=0.15), optima
        if len(optima) == 2:   # the copy is found and halved: w about 1/2
            assert np.mean([float(e.correction) for e in ends]) < -0.4


def test_coinciding_classes_are_not_counted_twice():
    # an over-fitted K on data from one class: the classes' relabelled copies overlap, which a
    # plain + ln K! would overcount; the correction takes it back
    data = _small(24, seed=5, k=1)
    structure = lcb.latent_class(data, 3)
    exact = lcb.exact_evidence(structure, data, max_terms=1e9).log_evidence
    res = lcb.smc(structure, data, seed=3, particles=128)
    assert _covers(res, exact, slack=0.1), (res.log_evidence, exact, res.stderr)
    assert np.mean(res.run_correction) < -0.3


def test_distinct_optima_are_distinct_up_to_relabelling():
    weights = np.array([[[0.7, 0.3]]])
    table = np.array([[[0.9, 0.1], [0.2, 0.8]]])
    runs = EMRuns(tables=(np.concatenate([weights, weights[:, :, ::-1], weights * 0 + 0.5]),
                          np.concatenate([table, table[:, ::-1], table])),
                  history=np.zeros((3, 1)), n_iter=np.ones(3), converged=np.ones(3, bool),
                  loglik=np.array([-10.0, -10.0, -12.0]), objective=np.zeros(3))
    optima = distinct_optima(runs, rows=1000)
    assert [o.loglik for o in optima] == [-10.0, -12.0]           # the swap is the same mode
    assert [padded_count(n) for n in (1, 2, 3, 5)] == [1, 2, 4, 8]


def test_every_vb_optimum_near_the_best_bound_is_kept():
    # a mode's bound is its log mass less a KL gap that differs between modes, so the reference
    # keeps every distinct VB optimum within VB_WINDOW of the best, best bound first
    weights = np.array([[[0.7, 0.3]]])
    table = np.array([[[0.9, 0.1], [0.2, 0.8]]])
    other = np.array([[[0.4, 0.6], [0.6, 0.4]]])
    alphas = (np.concatenate([weights, weights[:, :, ::-1], weights, weights]) * 100,
              np.concatenate([table, table[:, ::-1], other, other[:, ::-1]]) * 100)
    elbo = np.array([-10.0, -10.0, -10.0 - VB_WINDOW / 2, -10.0 - 2 * VB_WINDOW])
    runs = VBRuns(alphas, np.zeros((4, 1)), np.ones(4), np.ones(4, bool), elbo)
    optima = variational_optima(runs, rows=1000)
    assert [o.loglik for o in optima] == [-10.0, -10.0 - VB_WINDOW / 2]
    np.testing.assert_allclose(optima[1].tables[0], other[0])


def test_vb_restarts_are_vbem_s_restarts():
    # the reference's VB optima come from the starts vbem itself uses: its best is vbem's fit
    data = _small(60, seed=1)
    structure = lcb.latent_class(data, 2)
    runs = vbem_restarts(structure, fit_data(structure, data), restarts=6, seed=3)
    fit = lcb.vbem(structure, data, restarts=6, seed=3)
    assert float(np.nanmax(runs.elbo)) == pytest.approx(fit.elbo, abs=1e-8)
    np.testing.assert_allclose(runs.elbo, fit.restart_elbos, atol=1e-8)


def test_points_of_one_basin_are_one_mode():
    # optima a fraction of the posterior's spread apart (a VB mean beside EM's maximum) are
    # one reference component; the same gap on far more rows is a different mode
    a = Optimum(-10.0, np.array([0.6, 0.4]), (np.array([[0.9, 0.1], [0.2, 0.8]]),))
    near = Optimum(-10.1, np.array([0.63, 0.37]), (np.array([[0.85, 0.15], [0.25, 0.75]]),))
    assert matched_gap(a, near, rows=100) < SAME_MODE_SDS < matched_gap(a, near, rows=10_000)
    swapped = Optimum(-10.1, near.weights[::-1], (near.tables[0][::-1],))
    assert matched_gap(a, swapped, rows=100) == pytest.approx(matched_gap(a, near, rows=100))
    # a boundary probability three spreads off in one item of many is still the same basin
    tables = tuple(np.array([[0.5, 0.5], [0.3, 0.7]]) for _ in range(12))
    base = Optimum(-5.0, np.array([0.5, 0.5]), tables)
    spike = Optimum(-5.0, np.array([0.5, 0.5]),
                    (np.array([[0.5, 0.5], [0.3 + 3 * math.sqrt(0.21 / 51), 0.7
                                            - 3 * math.sqrt(0.21 / 51)]]), *tables[1:]))
    assert matched_gap(base, spike, rows=100) < SAME_MODE_SDS


def test_run_statistics_grade_instead_of_refusing():
    estimate, se, reason = run_statistics(np.array([-10.0, -14.0, -10.5]))
    assert np.isfinite(estimate) and se > 1.0 and reason == ""    # wide, still an estimate
    estimate, se, reason = run_statistics(np.array([-10.0, np.nan]))
    assert estimate == -10.0 and math.isnan(se) and "standard error" in reason
    assert math.isnan(run_statistics(np.array([np.nan]))[0])


def test_an_unsettled_reference_widens_the_error_bar():
    fields = dict(run_steps=np.ones(3, np.int64), run_seconds=np.ones(3),
                  run_components=np.ones(3, np.int64), run_correction=np.zeros(3),
                  n_classes=2, particles=8, sweeps=1, ess_target=0.9, method="reference",
                  seed=0, seconds=1.0)
    settled = SMCResult.from_runs([-10.0, -10.1, -9.9], moved=0.8, reference_stable=True,
                                  **fields)
    moving = SMCResult.from_runs([-10.0, -10.1, -9.9], moved=0.8, reference_stable=False,
                                 **fields)
    assert moving.stderr == pytest.approx(math.hypot(settled.stderr, 0.8))


def test_same_seed_same_numbers_and_json_round_trip():
    data = _small(40)
    structure = lcb.latent_class(data, 2)
    a = lcb.smc(structure, data, seed=7, particles=32, target_stderr=None)
    b = lcb.smc(structure, data, seed=7, particles=32, target_stderr=None)
    assert np.array_equal(a.run_log_evidence, b.run_log_evidence)
    back = SMCResult.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back.log_evidence == a.log_evidence and np.array_equal(back.run_steps, a.run_steps)
    assert "ln p(y | m)" in a.summary() and len(a.to_frame()) == a.runs


def test_an_hlc_tree_runs_the_particle_filter_over_the_rows():
    data = _small(30)
    tree = lcb.hlc(data, {"H": ["H1", data.columns[2], data.columns[3]],
                          "H1": [data.columns[0], data.columns[1]]}, {"H": 2, "H1": 2})
    res = lcb.smc(tree, data, seed=0, particles=32, target_stderr=None)
    assert res.method == "rows" and np.isfinite(res.log_evidence) and res.n_classes is None


def test_a_time_limit_stops_the_runs():
    data = _small(40)
    res = lcb.smc(lcb.latent_class(data, 2), data, seed=0, particles=32, time_limit=1e-3)
    assert res.runs == 2 and res.settings["stopped"] == "time_limit"


def test_bad_arguments_are_refused():
    data = _small(20)
    structure = lcb.latent_class(data, 2)
    with pytest.raises(lcb.ArgumentError, match="ess_target"):
        lcb.smc(structure, data, ess_target=1.0)
    with pytest.raises(lcb.ArgumentError, match="particles"):
        lcb.smc(structure, data, particles=2)
    with pytest.raises(lcb.ArgumentError, match="same prior for every class"):
        lcb.smc(structure, data, prior={"X1": [[1.0, 2.0], [3.0, 1.0]]})


def test_only_the_last_round_is_topped_up_to_the_target():
    # a round that another may follow makes exactly `runs` runs; the round that is kept then
    # runs on towards the (here unreachable) target, up to max_runs
    data = _small(100, seed=3)        # three distinct optima: more than the first round's two
    res = lcb.smc(lcb.latent_class(data, 3), data, seed=0, particles=16, runs=2, max_runs=5,
                  target_stderr=1e-9, max_components=4)
    assert res.settings["rounds"], "the first round should not have had every optimum"
    assert [r["runs"] for r in res.settings["rounds"]] == [2]
    assert res.runs == 5 and res.settings["stopped"] == "max_runs"
    assert max(res.run_components) <= 4
