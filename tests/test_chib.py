"""Chib's candidate estimator (Whiley 1999 §4.2, eq. 4.2): exact at one class, within its
Monte Carlo error of the exact evidence on a small model and of AIS on carcinoma, the
symmetrisation over labellings, the choice of theta*, honest failure where K exceeds what the
data support (issue 29), refusal of other structures and the JSON form."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.params import from_tables
from lcbayes.samplers.chib import MIN_ORDINATE_ESS, ordinate_reliability


def _small(n_rows: int = 40, seed: int = 4) -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0], [1, 1, 1]]))
    model = lcb.latent_class(template, 2)
    return lcb.simulate(model, lcb.random_params(model, seed=seed), n_rows, seed=seed)


def _three_classes(n_rows: int, seed: int = 0) -> lcb.Dataset:
    """8 binary items from 3 well-separated classes (weights 0.5 / 0.3 / 0.2; items 'yes' with
    probability 0.85 or 0.15: all high, all low, and high on the first four only)."""
    template = lcb.Dataset.from_codes(np.repeat([[0], [1]], 8, axis=1))
    model = lcb.latent_class(template, 3)
    high = np.array([[0.85] * 8, [0.15] * 8, [0.85] * 4 + [0.15] * 4])
    tables = (np.array([[0.5, 0.3, 0.2]]),
              *(np.stack([1 - high[:, j], high[:, j]], axis=1) for j in range(8)))
    return lcb.simulate(model, from_tables(model, tables), n_rows, seed=seed)


def _reference(structure: lcb.Structure, data: lcb.Dataset) -> float:
    """An independent estimate: bridge sampling from Gibbs chains (lcb.bridge_sampling, the
    second evidence estimator of a latent class model; SMC no longer carries one)."""
    return lcb.bridge_sampling(structure, data, seed=1).log_evidence


def test_one_class_chib_is_the_exact_closed_form():
    # with one class nothing is hidden: p(theta* | z, y) = p(theta* | y) at every draw
    data = _small()
    structure = lcb.latent_class(data, 1)
    result = lcb.chib(structure, data, draws=50, batches=5, restarts=1)
    exact = lcb.exact_evidence(structure, data).log_evidence
    assert result.log_evidence == pytest.approx(exact, abs=1e-8)
    assert result.stderr == pytest.approx(0.0, abs=1e-10)


def test_items_with_different_numbers_of_levels_are_normalised_on_their_own_levels():
    # a binary item's table row is padded to the widest item's three entries; the Dirichlet
    # normaliser of the posterior ordinate must leave the padding out (counting it as one
    # more pseudo-count would move the estimate by ln(row total) per padded row)
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, 3, 30), rng.integers(0, 2, 30),
                             rng.integers(0, 2, 30)])
    data = lcb.Dataset.from_codes(codes)
    structure = lcb.latent_class(data, 1)
    result = lcb.chib(structure, data, draws=50, batches=5, restarts=1)
    assert result.log_evidence == pytest.approx(
        lcb.exact_evidence(structure, data).log_evidence, abs=1e-8)


def test_chib_agrees_with_the_exact_evidence_within_its_error():
    data = _small()
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data).log_evidence
    result = lcb.chib(structure, data, draws=2000, seed=0)
    assert 0 < result.stderr < 0.1
    assert abs(result.log_evidence - exact) < 3 * result.stderr + 0.02
    assert result.reliable and result.reason == "" and result.theta_star == "em"
    # chains from random allocations land in either labelling: the identity's share is a
    # share of the symmetrised ordinate, between 0 and 1
    assert 0.0 <= result.identity_share <= 1.0


def test_a_poor_map_is_replaced_by_a_chains_draw():
    # EM stopped after one iteration is far below the mode the chains find: the chains' best
    # warm-up draw becomes theta*, and the identity still gives the exact evidence
    data = _small()
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data).log_evidence
    poor = lcb.em(structure, data, restarts=1, max_iter=1, seed=0, map_basis="softmax")
    result = lcb.chib(structure, data, draws=2000, seed=0, fit=poor)
    assert result.theta_star.startswith("chain ")
    assert result.loglik > poor.loglik
    assert result.reliable
    assert abs(result.log_evidence - exact) < 3 * result.stderr + 0.02


def test_more_classes_than_the_data_support_are_flagged_or_right():
    """Issue 29: with K = 5 on data from 3 classes the Gibbs chains sit in different modes
    and rarely reach the MAP, and the estimate came out tens of nats too high with a standard
    error of about 1, unflagged. It must now agree with an independent estimate or say it is
    not reliable, and why."""
    data = _three_classes(2000)
    structure = lcb.latent_class(data, 5)
    result = lcb.chib(structure, data, draws=1000, warmup=200, seed=0)
    if result.reliable:
        assert abs(result.log_evidence - _reference(structure, data)) < 3.0
    else:
        assert result.reason and f"not reliable: {result.reason}" in result.summary()


@pytest.mark.slow
def test_as_many_classes_as_the_data_support_agree_with_smc_and_are_reliable():
    data = _three_classes(2000)
    structure = lcb.latent_class(data, 3)
    result = lcb.chib(structure, data, seed=0)
    assert result.reliable, result.reason
    assert abs(result.log_evidence - _reference(structure, data)) < 3 * result.stderr + 0.1


def test_reliability_of_known_ordinates():
    # equal ordinates: the chains agree and every draw counts
    flat = np.zeros((4, 50))
    assert ordinate_reliability(flat, 5) == (0.0, 200.0, "")
    # one draw 30 nats above the other 199 carries the ordinate:
    # ESS = (e^30 + 199)^2 / (e^60 + 199) = 1 + 2 * 199 e^-30 + O(e^-60)
    one = flat.copy()
    one[2, 7] = 30.0
    spread, ess, reason = ordinate_reliability(one, 5)
    assert ess == pytest.approx(1 + 398 * math.exp(-30), abs=1e-12) and ess < MIN_ORDINATE_ESS
    assert "1.0 effective draws of 200" in reason
    # chain 3 sits 2 nats above the others with no noise: they disagree, every draw counts
    shifted = flat.copy()
    shifted[3] = 2.0
    spread, ess, reason = ordinate_reliability(shifted, 5)
    assert spread == pytest.approx(2.0)
    # ESS = (150 + 50 e^2)^2 / (150 + 50 e^4)
    assert ess == pytest.approx((150 + 50 * math.e**2) ** 2 / (150 + 50 * math.e**4))
    assert reason.startswith("the 4 chains' estimates of ln p(theta* | y) span 2.00 nats")
    # the same 2 nats between noisy chains are noise: 5 batches of 10 draws with ordinates
    # 1, 1, 1, 1, 41 (mean 9, batch-means s.e. sqrt(320 / 5) = 8, 0.89 of the mean), so
    # 4 x hypot(8/9, 8/9) = 5.0 nats > 2; ESS (1350 + 450 e^2)^2 / (50550 + 16850 e^4) = 22.5
    noisy = np.repeat(np.log([1.0, 1.0, 1.0, 1.0, 41.0]), 10)[None].repeat(4, axis=0)
    noisy[3] += 2.0
    spread, ess, reason = ordinate_reliability(noisy, 5)
    assert spread == pytest.approx(2.0) and reason == ""
    assert ess == pytest.approx((1350 + 450 * math.e**2) ** 2 / (50550 + 16850 * math.e**4))


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_chib_agrees_with_ais_on_carcinoma(carcinoma, k):
    structure = lcb.latent_class(carcinoma, k)
    result = lcb.chib(structure, carcinoma, draws=10000, seed=0)
    truth = lcb.ais(structure, carcinoma, chains=64, seed=1)
    error = math.hypot(result.stderr, truth.stderr)
    assert abs(result.log_evidence - truth.log_evidence) < 3 * error


def test_other_structures_and_too_many_classes_are_refused(carcinoma):
    tree = lcb.hlc(carcinoma, {"Z": ["A", "B", "C", "D", "E", "F", "G"]}, {"Z": 2})
    with pytest.raises(lcb.ArgumentError, match="latent class models"):
        lcb.chib(tree, carcinoma)
    with pytest.raises(lcb.ArgumentError, match="K <= 12"):
        lcb.chib(lcb.latent_class(carcinoma, 13), carcinoma)
    with pytest.raises(lcb.ArgumentError, match="batches"):
        lcb.chib(lcb.latent_class(carcinoma, 2), carcinoma, draws=10, batches=11)


def test_json_round_trip_and_summary():
    # the run of test_chib_agrees_with_the_exact_evidence_within_its_error: its compiled
    # program serves
    data = _small()
    result = lcb.chib(lcb.latent_class(data, 2), data, draws=2000, seed=0)
    back = lcb.ChibResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result
    assert "symmetrised over 2 labellings" in back.summary()
    assert "not reliable" not in back.summary()
    # a result written before the reliability checks reads as reliable
    old = {k: v for k, v in result.to_dict().items()
           if k not in ("reliable", "reason", "theta_star", "chain_spread", "ordinate_ess")}
    older = lcb.ChibResult.from_dict(old)
    assert older.reliable and older.reason == "" and older.log_evidence == result.log_evidence
    flagged = dataclasses.replace(result, reliable=False, reason="the chains disagree")
    assert lcb.ChibResult.from_dict(json.loads(json.dumps(flagged.to_dict()))) == flagged
    assert "not reliable: the chains disagree" in flagged.summary()
