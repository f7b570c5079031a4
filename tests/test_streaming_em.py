"""EM, VBEM and stepwise EM over pattern blocks (lcbayes.streaming): the in-memory engines'
numbers, whatever the blocks, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.streaming.block_em import stream_em, stream_vbem
from lcbayes.streaming.blocks import PatternBlocks
from lcbayes.streaming.result import StreamEMResult, StreamVBResult
from lcbayes.streaming.stepwise import stepwise_em

from .conftest import data_csv


@pytest.fixture(scope="module")
def structure(carcinoma):
    return lcb.latent_class(carcinoma, 3)


@pytest.fixture(scope="module")
def start(structure):
    return lcb.random_params(structure, seed=4)


@pytest.fixture(scope="module")
def em_fit(structure, carcinoma, start):
    """Plain EM in memory from a given start (the reference)."""
    return lcb.em(structure, carcinoma, algorithm="em", restarts=0, init=start)


def _close(fit, ref, tol=1e-8):
    assert fit.loglik == pytest.approx(ref.loglik, rel=tol, abs=0)
    for node, table in ref.params.items():
        np.testing.assert_allclose(fit.params[node], table, rtol=0, atol=tol)


def test_one_block_gives_lcb_em_from_the_same_seed(structure, carcinoma):
    ref = lcb.em(structure, carcinoma, algorithm="em", restarts=3, seed=1)
    fit = stream_em(structure, PatternBlocks.from_dataset(carcinoma, 10**6), restarts=3, seed=1)
    _close(fit, ref)
    assert fit.n_iter == ref.n_iter and fit.converged
    np.testing.assert_allclose(fit.history, ref.history, rtol=1e-10)
    np.testing.assert_allclose(fit.restart_objectives, ref.restart_objectives, rtol=1e-9)


def test_many_small_blocks_give_lcb_em_from_the_same_start(structure, carcinoma, start, em_fit):
    blocks = PatternBlocks.from_dataset(carcinoma, block_patterns=3)
    assert blocks.n_blocks > 5
    fit = stream_em(structure, blocks, restarts=0, init=start)
    _close(fit, em_fit)
    assert fit.n_iter == em_fit.n_iter
    assert fit.n_passes == fit.n_iter + 1  # the iterations and the final evaluation


def test_block_order_and_a_pattern_split_over_two_blocks_change_nothing(
        structure, carcinoma, start, em_fit):
    rng = np.random.default_rng(0)
    order = rng.permutation(carcinoma.n_patterns)
    patterns, counts = carcinoma.patterns[order], carcinoma.counts[order]
    split = int(np.argmax(counts))  # the most frequent pattern, in two blocks
    patterns = np.concatenate([patterns, patterns[split:split + 1]])
    counts = np.concatenate([counts, [counts[split] - 1.0]])
    counts[split] = 1.0
    blocks = PatternBlocks.from_arrays(patterns, counts, carcinoma.columns, carcinoma.labels,
                                       block_patterns=4)
    _close(stream_em(structure, blocks, restarts=0, init=start), em_fit)


def test_blocks_spilled_to_files_by_scan_file_give_lcb_em(structure, start, em_fit, tmp_path):
    blocks = lcb.scan_file(data_csv("carcinoma.csv"), block_patterns=4, spill_dir=tmp_path)
    assert any(not isinstance(b, tuple) for b in blocks.blocks)  # .npz files
    _close(stream_em(structure, blocks, restarts=0, init=start), em_fit)


def test_objectives_never_decrease(structure, carcinoma):
    blocks = PatternBlocks.from_dataset(carcinoma, block_patterns=5)
    em = stream_em(structure, blocks, restarts=2, seed=0)
    vb = stream_vbem(structure, blocks, restarts=2, seed=0)
    for history in (em.history, vb.history):
        assert len(history) > 3
        assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))


def test_map_fit_is_lcb_em_map_from_the_same_start(structure, carcinoma, start):
    ref = lcb.em(structure, carcinoma, algorithm="em", restarts=0, init=start, prior=2.0)
    fit = stream_em(structure, PatternBlocks.from_dataset(carcinoma, 4), restarts=0,
                    init=start, prior=2.0)
    _close(fit, ref)
    assert fit.objective == pytest.approx(ref.objective, rel=1e-8)
    assert fit.estimator == "map"


def test_vbem_over_blocks_is_lcb_vbem_from_the_same_seed(structure, carcinoma):
    ref = lcb.vbem(structure, carcinoma, restarts=2, seed=3, algorithm="vbem")
    fit = stream_vbem(structure, PatternBlocks.from_dataset(carcinoma, 3), restarts=2, seed=3)
    assert fit.elbo == pytest.approx(ref.elbo, rel=1e-8, abs=0)
    assert fit.n_iter == ref.n_iter
    for node, alpha in ref.posterior.items():
        np.testing.assert_allclose(fit.posterior[node], alpha, rtol=1e-7)


def test_vbem_over_blocks_from_an_em_fit_is_lcb_vbem_from_it(structure, carcinoma, em_fit):
    ref = lcb.vbem(structure, carcinoma, restarts=0, init=em_fit, algorithm="vbem")
    fit = stream_vbem(structure, PatternBlocks.from_dataset(carcinoma, 3), restarts=0,
                      init=em_fit)
    assert fit.elbo == pytest.approx(ref.elbo, rel=1e-8, abs=0)
    assert fit.elbo >= em_fit.cs - 1e-6  # Beal & Ghahramani's Corollary 6.2 (same prior)


def test_structures_are_built_from_blocks_as_from_the_data(carcinoma):
    """The constructors read columns, labels and cardinalities, which blocks have too."""
    blocks = PatternBlocks.from_dataset(carcinoma, 5)
    tree = ({"H": ["H1", "H2"], "H1": ["A", "B", "C", "D"], "H2": ["E", "F", "G"]},
            {"H": 2, "H1": 2, "H2": 2})
    parents = ({"A": ["s1"], "B": ["s1", "A"], "C": ["s1", "s2"], "D": ["s2"], "E": ["s2"]},
               {"s1": 2, "s2": 2})
    assert lcb.latent_class(blocks, 3) == lcb.latent_class(carcinoma, 3)
    assert lcb.hlc(blocks, *tree) == lcb.hlc(carcinoma, *tree)
    assert lcb.dag(blocks, *parents) == lcb.dag(carcinoma, *parents)


@pytest.mark.parametrize("kind", ["hlc", "dag"])
def test_hlc_trees_and_dags_over_blocks_are_lcb_em(carcinoma, kind):
    if kind == "hlc":
        model = lcb.hlc(carcinoma, {"H": ["H1", "H2"], "H1": ["A", "B", "C", "D"],
                                    "H2": ["E", "F", "G"]}, {"H": 2, "H1": 2, "H2": 2})
    else:  # an observed parent (A) and two hidden ones
        model = lcb.dag(carcinoma, {"A": ["s1"], "B": ["s1", "A"], "C": ["s1", "s2"],
                                    "D": ["s2"], "E": ["s2"]}, {"s1": 2, "s2": 2})
    start = lcb.random_params(model, seed=1)
    ref = lcb.em(model, carcinoma, algorithm="em", restarts=0, init=start)
    _close(stream_em(model, PatternBlocks.from_dataset(carcinoma, 7), restarts=0, init=start),
           ref)


@pytest.fixture(scope="module")
def simulated():
    """2*10^4 rows of 10 binary items from 3 separated classes, as shuffled blocks."""
    columns = [f"x{j}" for j in range(10)]
    s = lcb.latent_class(lcb.Dataset.from_codes(np.array([[0] * 10, [1] * 10]),
                                                columns=columns), 3)
    p = np.random.default_rng(1).choice([0.1, 0.85], size=(10, 3))
    truth = {"class": np.array([0.5, 0.3, 0.2]),
             **{c: np.stack([p[j], 1 - p[j]], axis=1) for j, c in enumerate(columns)}}
    data = lcb.simulate(s, truth, 20_000, seed=3)
    return s, data, PatternBlocks.from_dataset(data, block_patterns=256)


def test_stepwise_em_reaches_em_and_a_seed_reproduces_it(simulated):
    s, data, blocks = simulated
    ref = lcb.em(s, data, restarts=3, seed=0)
    fit = stepwise_em(s, blocks, seed=0)
    assert fit.settings["batch_rows"] == 100  # N / 1000 is below the floor
    assert abs(fit.loglik - ref.loglik) < 1e-3 * abs(ref.loglik)
    again = stepwise_em(s, blocks, seed=0)
    assert again.loglik == fit.loglik
    assert stepwise_em(s, blocks, seed=1).loglik != fit.loglik
    warm = stream_em(s, blocks, restarts=1, seed=0, warm_start="stepwise")
    assert warm.loglik == pytest.approx(ref.loglik, rel=1e-7)
    assert warm.warm_start == "stepwise"
    assert warm.n_passes == warm.n_iter + 3  # starts, the stepwise pass, the final one


def test_results_round_trip_through_json_and_params_start_lcb_em(structure, carcinoma):
    blocks = PatternBlocks.from_dataset(carcinoma, 10)
    fit = stream_em(structure, blocks, restarts=2, seed=0)
    same = StreamEMResult.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert same.to_dict() == fit.to_dict() and same.bic == fit.bic
    assert "log-likelihood" in fit.summary() and "EM over blocks" in fit.summary()
    again = lcb.em(structure, carcinoma, algorithm="em", restarts=0, init=fit.params)
    assert again.loglik == pytest.approx(fit.loglik, rel=1e-9)
    vb = stream_vbem(structure, blocks, restarts=1, seed=0)
    assert StreamVBResult.from_dict(json.loads(json.dumps(vb.to_dict()))).to_dict() \
        == vb.to_dict()
    assert "lower bound F" in vb.summary()


@pytest.mark.parametrize(("call", "name"), [
    (lambda s, b: stepwise_em(s, b, alpha=0.5), "alpha"),
    (lambda s, b: stepwise_em(s, b, alpha=1.5), "alpha"),
    (lambda s, b: stream_em(s, b, alpha=0.4, warm_start="stepwise"), "alpha"),
    (lambda s, b: stream_em(s, b, restarts=0), "restarts"),
    (lambda s, b: stream_vbem(s, b, restarts=0), "restarts"),
    (lambda s, b: stream_em(s, b, warm_start="online"), "warm_start"),
    (lambda s, b: stepwise_em(s, b, batch_rows=0), "batch_rows"),
    (lambda s, b: stream_em(s, b, tol=-1.0), "tol"),
])
def test_bad_arguments_are_refused_naming_them(structure, carcinoma, call, name):
    with pytest.raises(lcb.ArgumentError, match=name):
        call(structure, PatternBlocks.from_dataset(carcinoma, 10))


def test_blocks_that_do_not_fit_the_structure_are_refused(structure, carcinoma):
    fewer = PatternBlocks.from_arrays(carcinoma.patterns[:, :6], carcinoma.counts,
                                      carcinoma.columns[:6], carcinoma.labels[:6])
    with pytest.raises(lcb.ArgumentError, match=r"data lack column\(s\) \['G'\]"):
        stream_em(structure, fewer)
    other = PatternBlocks.from_arrays(carcinoma.patterns, carcinoma.counts, carcinoma.columns,
                                      [("x", "y"), *carcinoma.labels[1:]])
    with pytest.raises(lcb.ArgumentError, match=r"blocks: column 'A' has categories"):
        stream_vbem(structure, other)
    halves = PatternBlocks.from_arrays(carcinoma.patterns, carcinoma.counts / 2,
                                       carcinoma.columns, carcinoma.labels)
    with pytest.raises(lcb.ArgumentError, match="whole numbers"):
        stepwise_em(structure, halves)


@pytest.mark.slow
def test_a_million_rows_streamed_from_a_csv_give_the_in_memory_loglik(simulated, tmp_path):
    """The acceptance check of issue 20 at 10^6 rows (benchmarks/bench_streaming.py runs it
    on 20 items): scan_file + stream_em against lcb.em on the same rows, 1e-6 relative."""
    s, _, _ = simulated
    truth = lcb.random_params(s, seed=0, prior=0.5)
    data = lcb.simulate(s, truth, 10**6, seed=5)
    path = tmp_path / "rows.csv"
    data.to_pandas().to_csv(path, index=False)
    blocks = lcb.scan_file(path, block_patterns=2**8, spill_dir=tmp_path)
    assert blocks.n_rows == 10**6 and blocks.n_blocks > 1
    streamed = lcb.stream_em(s, blocks, restarts=3, seed=0)
    assert streamed.warm_start == "stepwise" and streamed.converged
    in_memory = lcb.em(s, lcb.Dataset.from_csv(path), restarts=3, seed=0)
    assert streamed.loglik == pytest.approx(in_memory.loglik, rel=1e-6)
