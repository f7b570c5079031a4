"""SMC with data tempering and bridge sampling (lcb.smc): exact at one class, within the error of
the exact evidence on small enumerable problems (missing values too), the permanent behind the
symmetrised importance density, the run statistics' honest failures, reproducibility, the
JSON form and refused arguments."""

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
from lcbayes.samplers.bridge import log_permanent
from lcbayes.samplers.smc import (
    MIN_PREFIX,
    PREFIX_RATIO,
    included_counts,
    pattern_allocations,
    prefix_classes,
    row_allocations,
    row_class_counts,
    run_smc,
    running_sum,
    smc_data,
)
from lcbayes.samplers.smc_evidence import (
    POSTERIOR_ROWS,
    POSTERIOR_SWEEPS,
    posterior_sweeps,
    smc_prior,
)
from lcbayes.samplers.smc_result import MAX_RUN_SD, SMCResult, run_statistics, stuck_runs
from lcbayes.validation import fit_data


def _small(n_rows: int = 40, seed: int = 4, missing: float = 0.0) -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]))
    model = lcb.latent_class(template, 2)
    return lcb.simulate(model, lcb.random_params(model, seed=seed), n_rows, seed=seed,
                        missing=missing)


def test_log_permanent_equals_the_sum_over_permutations():
    rng = np.random.default_rng(0)
    for k in range(1, 6):
        log_a = rng.normal(scale=5.0, size=(k, k))
        log_a[0, -1] = -np.inf
        brute = logsumexp([sum(log_a[i, p[i]] for i in range(k))
                           for p in itertools.permutations(range(k))])
        assert float(log_permanent(log_a)) == pytest.approx(brute, abs=1e-10)


def test_log_permanent_holds_when_the_matching_is_far_below_the_row_maxima():
    # every row's largest entry is in column 0, the permutations pay 1000-2000 nats: any
    # scaling by the row maxima in linear space underflows (a bridge estimate 960 nats too
    # high at K = 4 on 10^4 rows came from that)
    rng = np.random.default_rng(1)
    for k in range(2, 6):
        log_a = rng.normal(scale=3.0, size=(k, k)) - 1000.0 * rng.uniform(1, 2, size=(k, k))
        log_a[:, 0] = rng.normal(size=k)
        brute = logsumexp([sum(log_a[i, p[i]] for i in range(k))
                           for p in itertools.permutations(range(k))])
        assert float(log_permanent(log_a)) == pytest.approx(brute, abs=1e-9, rel=1e-12)


def test_rows_are_ordered_with_patterns_numbered_by_first_occurrence():
    data = _small(n_rows=1100, missing=0.1)
    ordered = smc_data(data, np.random.default_rng(1))
    rows = ordered.classes[0].rows
    assert rows.size == int((data.patterns[data.pattern_index] >= 0).any(axis=1).sum())
    first = np.array([np.argmax(rows == p) for p in range(ordered.one_hot.shape[0])])
    assert np.all(np.diff(first) > 0)
    sizes = [rows.size]
    while sizes[-1] // PREFIX_RATIO >= MIN_PREFIX:
        sizes.append(-(-sizes[-1] // PREFIX_RATIO))
    assert [c.rows.size for c in ordered.classes] == sizes
    assert len(sizes) > 1 and sizes[-1] // PREFIX_RATIO < MIN_PREFIX
    for prefix in ordered.classes:  # each prefix class: its rows, sorted by pattern
        np.testing.assert_array_equal(prefix.rows, rows[:prefix.rows.size])
        np.testing.assert_array_equal(prefix.sorted_rows, prefix.rows[prefix.position])
        counts = prefix.ends - prefix.starts      # padded to the same shape for any order
        assert counts.size == min(prefix.rows.size, ordered.one_hot.shape[0])
        np.testing.assert_array_equal(counts, np.bincount(prefix.rows, minlength=counts.size))
    np.testing.assert_array_equal(ordered.counts, np.bincount(rows))


@pytest.mark.parametrize("allocate", ["pattern", "row"])
def test_allocations_are_multinomial_per_pattern(allocate):
    # both ways of drawing each pattern's rows into the states, against the multinomial's
    # mean and variance; the inactive last slot gets nothing, every included row a state
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 6, size=600).astype(np.int32)
    rows = np.unique(rows, return_inverse=True)[1].astype(np.int32)
    first = np.unique(rows, return_index=True)[1]
    rows = np.argsort(np.argsort(first))[rows].astype(np.int32)  # numbered by first occurrence
    prefix = jax.tree.map(jnp.asarray, prefix_classes(rows, 6)[0])
    logits = np.log(rng.dirichlet(np.ones(4) * 0.5, size=6))
    logits[0, 1] = -800.0                                  # a state with probability ~0
    logits = jnp.asarray(np.concatenate([logits, np.full((6, 1), -np.inf)], axis=1))
    n = 350
    included = included_counts(prefix, n)
    np.testing.assert_array_equal(included, np.bincount(rows[:n], minlength=6))
    draw = (lambda key: pattern_allocations(key, logits, prefix, included)) if (
        allocate == "pattern") else (lambda key: row_allocations(key, logits, prefix, n))
    counts = np.asarray(jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(0), 20000)))
    np.testing.assert_array_equal(counts.sum(axis=-1), np.broadcast_to(included, (20000, 6)))
    assert counts.min() >= 0 and counts[..., -1].max() == 0 and counts[:, 0, 1].max() == 0
    p = np.asarray(jax.nn.softmax(logits, axis=1))
    mean = np.asarray(included)[:, None] * p
    var = mean * (1 - p)
    se = np.sqrt(var / 20000) + 1e-12
    assert np.all(np.abs(counts.mean(axis=0) - mean) < 5 * se)
    ok = var > 1
    assert np.all(np.abs(counts.var(axis=0)[ok] / var[ok] - 1) < 0.1)


def test_running_sum_is_the_cumulative_sum():
    # the parallel prefix sum behind the allocations: exact on counts, to rounding on floats
    counts = jax.random.randint(jax.random.key(1), (5000, 3), 0, 2).astype(jnp.float32)
    np.testing.assert_array_equal(running_sum(counts), np.cumsum(np.asarray(counts), axis=0))
    spacings = jax.random.exponential(jax.random.key(2), (10_001,))
    np.testing.assert_allclose(running_sum(spacings), np.cumsum(np.asarray(spacings)),
                               rtol=1e-12)


def test_row_class_counts_are_the_expected_counts_of_the_included_rows():
    # every included row in one state drawn from its pattern's softmax: n_k sums to the rows,
    # n_kjr to each item's observed values, and their means are the sums of the probabilities
    rng = np.random.default_rng(5)
    patterns, rows = 40, rng.integers(0, 40, size=300).astype(np.int32)
    prefix = jax.tree.map(jnp.asarray, prefix_classes(rows, patterns)[0])
    one_hot = np.zeros((patterns, 3, 2))
    one_hot[np.arange(patterns), 0, rng.integers(0, 2, patterns)] = 1.0
    one_hot[np.arange(patterns), 1, rng.integers(0, 2, patterns)] = 1.0    # item 2 missing
    logits = np.log(rng.dirichlet(np.ones(3), size=patterns))
    logits = jnp.asarray(np.concatenate([logits, np.full((patterns, 1), -np.inf)], axis=1))
    n = 217
    rows_one_hot = jnp.asarray(one_hot[rows], dtype=jnp.float32)
    n_k, n_kjr = jax.jit(jax.vmap(lambda key: row_class_counts(key, logits, prefix, rows_one_hot,
                                                                n)))(
        jax.random.split(jax.random.key(1), 20000))
    n_k, n_kjr = np.asarray(n_k), np.asarray(n_kjr)
    np.testing.assert_array_equal(n_k.sum(axis=1), n)
    np.testing.assert_array_equal(n_kjr.sum(axis=(1, 3))[:, :2], n)
    assert n_k[:, -1].max() == 0 and n_kjr[:, :, 2].max() == 0
    p = np.asarray(jax.nn.softmax(logits, axis=1))[rows[:n]]             # (n, S)
    expected = np.einsum("ns,njr->sjr", p, one_hot[rows[:n]])
    se = np.sqrt(np.einsum("ns,njr->sjr", p * (1 - p), one_hot[rows[:n]]) / 20000) + 1e-12
    assert np.all(np.abs(n_kjr.mean(axis=0) - expected) < 5 * se)
    np.testing.assert_allclose(n_k.mean(axis=0), p.sum(axis=0), atol=5 * se.max() * 4)


def test_one_class_bridge_is_exact_and_smc_is_within_its_error():
    # one class: the complete-data posterior is the posterior, so q is exact
    data = _small(n_rows=200)
    structure = lcb.latent_class(data, 1)
    exact = lcb.exact_evidence(structure, data).log_evidence
    result = lcb.smc(structure, data, particles=64, runs=4, seed=0)
    assert result.bridge_log_evidence == pytest.approx(exact, abs=1e-8)
    assert abs(result.smc_log_evidence - exact) < 3 * result.smc_stderr + 0.05
    assert result.agree and result.smc_reason == "" and result.bridge_reason == ""


@pytest.mark.parametrize("missing", [0.0, pytest.param(0.15, marks=pytest.mark.slow)])
def test_two_classes_agree_with_the_exact_evidence(missing):
    data = _small(n_rows=30, missing=missing)
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data, max_terms=1e9).log_evidence
    result = lcb.smc(structure, data, particles=128, runs=4, seed=1)
    assert abs(result.bridge_log_evidence - exact) < 3 * result.bridge_stderr + 0.05
    assert abs(result.smc_log_evidence - exact) < 3 * result.smc_stderr + 0.05
    assert 0 < result.bridge_stderr < 0.2
    assert np.all(result.run_steps > 0) and result.runs == 4


def test_tempering_every_row_keeps_the_estimator_unbiased():
    # temper_ess = 0.99 tempers nearly every row (Metropolis-Hastings moves at the
    # intermediate targets); the runs' pooled estimate still lands on the exact evidence
    data = _small(n_rows=30)
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data, max_terms=1e9).log_evidence
    ordered = jax.tree.map(jnp.asarray, smc_data(fit_data(structure, data),
                                                  np.random.default_rng(0)))
    prior = smc_prior(structure, "dirichlet", 2, np.asarray(ordered.categories))
    values, moves = [], []
    for run in range(8):
        log_z, steps, _, _ = run_smc(jax.random.key(run), ordered, prior, 2, 0.9, 0.99,
                                     particles=64, sweeps=1, max_moves=4096, draws=1)
        values.append(float(log_z))
        moves.append(int(steps))
    plain = [int(run_smc(jax.random.key(run), ordered, prior, 2, 0.9, 0.0, particles=64,
                         sweeps=1, max_moves=4096, draws=1)[1]) for run in range(2)]
    assert min(moves) > 2 * max(plain)          # the tempered steps did happen
    estimate, se, reason = run_statistics(np.array(values), pooled=True)
    assert reason == "" and abs(estimate - exact) < 3 * se + 0.05


@pytest.mark.slow  # test_padding.py checks padding; this repeats it on SMC runs
def test_padding_the_classes_keeps_the_estimator():
    data = _small(n_rows=30)
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data, max_terms=1e9).log_evidence
    padded = lcb.smc(structure, data, particles=128, runs=4, seed=2, pad_classes=4)
    assert abs(padded.bridge_log_evidence - exact) < 3 * padded.bridge_stderr + 0.05
    assert padded.settings["pad_classes"] == 4


def test_same_seed_same_numbers_and_json_round_trip():
    # the data and particles of test_two_classes_agree_with_the_exact_evidence: its compiled
    # programs serve (a run's compilation is most of its time)
    data = _small(n_rows=30)
    structure = lcb.latent_class(data, 2)
    first = lcb.smc(structure, data, particles=128, runs=2, seed=5)
    second = lcb.smc(structure, data, particles=128, runs=2, seed=5)
    np.testing.assert_array_equal(first.run_smc, second.run_smc)
    np.testing.assert_array_equal(first.run_bridge, second.run_bridge)
    back = lcb.SMCResult.from_dict(json.loads(json.dumps(first.to_dict())))
    np.testing.assert_array_equal(back.run_smc, first.run_smc)
    assert back.log_evidence == first.log_evidence and back.seed == 5
    assert list(first.to_frame().columns) == ["run", "smc", "bridge", "steps", "seconds"]
    assert "bridge sampling" in first.summary()
    # below POSTERIOR_ROWS rows the final particles make the smaller number of sweeps
    sweeps = first.settings["posterior_sweeps"]
    assert sweeps == posterior_sweeps(30) == POSTERIOR_SWEEPS[0] < POSTERIOR_SWEEPS[1]
    assert first.bridge_draws == sweeps * 128 // 2 and posterior_sweeps(POSTERIOR_ROWS) == 16
    key = jax.random.key(3)
    assert lcb.smc(structure, data, particles=128, runs=2, target_stderr=None,
                   seed=key).run_smc.size == 2


@pytest.mark.slow  # many SMC rounds: 20-35 s
def test_runs_are_added_until_the_error_target_or_the_most_runs():
    data = _small(n_rows=60)
    structure = lcb.latent_class(data, 2)
    easy = lcb.smc(structure, data, particles=16, runs=2, max_runs=6, target_stderr=50.0,
                   seed=1)
    assert easy.runs == 2 and easy.settings["stopped"] == "target_stderr"
    assert easy.stderr <= 50.0
    hard = lcb.smc(structure, data, particles=16, runs=2, max_runs=5, target_stderr=1e-12,
                   max_particles=16, seed=1)
    assert hard.runs == 5 and hard.settings["stopped"] == "max_runs"
    assert hard.settings["rounds"] == []
    np.testing.assert_array_equal(hard.run_smc[:2], easy.run_smc)   # the same first runs
    grown = lcb.smc(structure, data, particles=8, runs=2, max_runs=2, target_stderr=1e-12,
                    max_particles=32, seed=1)
    assert grown.particles == 32 and grown.runs == 2
    assert [r["particles"] for r in grown.settings["rounds"]] == [8, 16]
    assert all(r["stopped"] == "max_runs" for r in grown.settings["rounds"])
    back = lcb.SMCResult.from_dict(json.loads(json.dumps(grown.to_dict())))
    assert back.settings["rounds"][1]["particles"] == 16
    assert "after rounds with 8, 16 particles" in grown.summary()
    fixed = lcb.smc(structure, data, particles=16, runs=3, target_stderr=None, seed=1)
    assert fixed.runs == 3 and fixed.settings["stopped"] == "runs"


def test_run_statistics_refuse_too_few_runs_and_a_wide_spread():
    value, se, reason = run_statistics(np.array([-10.0, -np.inf]), pooled=True)
    assert math.isnan(value) and math.isnan(se) and "1 finished run" in reason
    wide = np.array([-10.0, -10.0 - 2 * MAX_RUN_SD])   # sd = sqrt(2) MAX_RUN_SD
    value, se, reason = run_statistics(wide, pooled=False)
    assert math.isnan(value) and "standard deviation" in reason
    value, se, reason = run_statistics(np.array([-10.0, -10.2, -9.9, -10.1]), pooled=False)
    assert reason == "" and value == pytest.approx(-10.05)
    # the t-scaled standard error: sd / sqrt(R) * t_3(0.975) / 1.96
    assert se == pytest.approx(np.std([-10.0, -10.2, -9.9, -10.1], ddof=1) / 2 * 3.182 / 1.96,
                               rel=1e-3)
    value, _, _ = run_statistics(np.array([-1.0, -1.5]), pooled=True)
    assert value == pytest.approx(math.log((math.exp(-1) + math.exp(-1.5)) / 2))


def test_bridge_runs_stuck_in_a_minor_mode_are_left_out_and_counted():
    runs = np.array([-20989.2, -20989.67, -20989.2, -20988.52, -20987.8, -21028.76])
    np.testing.assert_array_equal(stuck_runs(runs), [False] * 5 + [True])
    assert not stuck_runs(runs[[0, 5]]).any()                    # two runs: no median
    assert not stuck_runs(np.array([-1.0, -30.0, -31.0, -30.5])).any()   # half are low
    assert not stuck_runs(runs[:5]).any()
    smc = runs - 60.0 + np.array([0.0, 3, 5, 1, 2, 4])
    result = SMCResult.from_runs(smc, runs, run_steps=np.ones(6, dtype=np.int64),
                                 run_seconds=np.ones(6), seconds=6.0, n_classes=5,
                                 particles=128, sweeps=1, ess_target=0.9, bridge_draws=256,
                                 seed=0)
    assert result.bridge_stuck == 1 and result.bridge_reason == ""
    assert result.bridge_log_evidence == pytest.approx(runs[:5].mean())
    assert result.log_evidence == result.bridge_log_evidence
    assert "1 of 6 bridge runs left out" in result.summary()
    assert SMCResult.from_dict(json.loads(json.dumps(result.to_dict()))).bridge_stuck == 1


def test_a_time_limit_stops_the_runs():
    # the programs of test_two_classes_agree_with_the_exact_evidence again (compiled once)
    data = _small(n_rows=30)
    structure = lcb.latent_class(data, 2)
    result = lcb.smc(structure, data, particles=128, runs=50, time_limit=1e-3, seed=0)
    assert result.runs == 2 and result.settings["stopped"] == "time_limit"


def test_bad_arguments_are_refused():
    data = _small()
    structure = lcb.latent_class(data, 2)
    with pytest.raises(lcb.ArgumentError, match="runs"):
        lcb.smc(structure, data, runs=1)
    with pytest.raises(lcb.ArgumentError, match="ess_target"):
        lcb.smc(structure, data, ess_target=1.0)
    with pytest.raises(lcb.ArgumentError, match="pad_classes"):
        lcb.smc(structure, data, pad_classes=1)
    with pytest.raises(lcb.ArgumentError, match="same prior for every class"):
        lcb.smc(structure, data, prior={"class": np.array([1.0, 2.0])})
