"""Chib's candidate estimator (Whiley 1999 §4.2, eq. 4.2): exact at one class, within its
Monte Carlo error of the exact evidence on a small model and of AIS on carcinoma, the
symmetrisation over labellings, refusal of other structures and the JSON form."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lcbayes as lcb


def _small(n_rows: int = 40, seed: int = 4) -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0], [1, 1, 1]]))
    model = lcb.latent_class(template, 2)
    return lcb.simulate(model, lcb.random_params(model, seed=seed), n_rows, seed=seed)


def test_one_class_chib_is_the_exact_closed_form():
    # with one class nothing is hidden: p(theta* | z, y) = p(theta* | y) at every draw
    data = _small()
    structure = lcb.latent_class(data, 1)
    result = lcb.chib(structure, data, draws=50, batches=5, restarts=1)
    exact = lcb.exact_evidence(structure, data).log_evidence
    assert result.log_evidence == pytest.approx(exact, abs=1e-8)
    assert result.stderr == pytest.approx(0.0, abs=1e-10)


def test_chib_agrees_with_the_exact_evidence_within_its_error():
    data = _small()
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data).log_evidence
    result = lcb.chib(structure, data, draws=2000, seed=0)
    assert 0 < result.stderr < 0.1
    assert abs(result.log_evidence - exact) < 3 * result.stderr + 0.02
    # the symmetrised ordinate mixes the labellings: between 1/K! and 1 from the identity
    assert 0.5 - 1e-9 <= result.identity_share <= 1.0


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
    with pytest.raises(lcb.ArgumentError, match="K <= 7"):
        lcb.chib(lcb.latent_class(carcinoma, 8), carcinoma)
    with pytest.raises(lcb.ArgumentError, match="batches"):
        lcb.chib(lcb.latent_class(carcinoma, 2), carcinoma, draws=10, batches=11)


def test_json_round_trip_and_summary():
    data = _small()
    result = lcb.chib(lcb.latent_class(data, 2), data, draws=100, batches=5, seed=3)
    back = lcb.ChibResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result
    assert "symmetrised over 2 labellings" in back.summary()
