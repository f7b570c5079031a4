"""Latent class models run inside a larger one (``pad_classes``, lcbayes.engines.padding): the
same fits as unpadded runs (EM and VBEM up to rounding and tolerance; AIS the same estimator,
checked against the exact evidence), one compiled program for every size, and ``compare`` rows
that the engines reproduce."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.engines.padding import class_padding

PAD = 4


@functools.cache
def _data():
    template = lcb.Dataset(codes=np.zeros((1, 5), dtype=np.int64),
                           columns=tuple(f"X{j + 1}" for j in range(5)),
                           labels=((0, 1),) * 4 + ((0, 1, 2),))
    truth = lcb.latent_class(template, 2)
    data = lcb.simulate(truth, lcb.random_params(truth, seed=4), 150, seed=4, missing=0.05)
    return data


@pytest.mark.parametrize("k", [1, 2, 3])
def test_em_padded_is_the_unpadded_fit(k):
    data = _data()
    s = lcb.latent_class(data, k)
    plain, padded = lcb.em(s, data, seed=1), lcb.em(s, data, seed=1, pad_classes=PAD)
    assert padded.structure == s and padded.n_parameters == plain.n_parameters
    assert padded.loglik == pytest.approx(plain.loglik, abs=1e-5)
    np.testing.assert_allclose(padded.restart_logliks, plain.restart_logliks, atol=1e-4)
    for node in s.nodes:
        np.testing.assert_allclose(padded.params[node], plain.params[node], atol=2e-3)
    assert padded.hidden_posteriors["class"].shape == plain.hidden_posteriors["class"].shape
    assert padded.entropy == pytest.approx(plain.entropy, abs=1e-2)


def test_em_padded_map_objective_counts_only_the_classes_in_use():
    data = _data()
    s = lcb.latent_class(data, 2)
    plain = lcb.em(s, data, seed=0, prior="dirichlet")
    padded = lcb.em(s, data, seed=0, prior="dirichlet", pad_classes=PAD)
    assert padded.objective == pytest.approx(plain.objective, abs=1e-5)
    assert padded.log_prior == pytest.approx(plain.log_prior, abs=1e-3)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_vbem_padded_is_the_unpadded_bound(k):
    data = _data()
    s = lcb.latent_class(data, k)
    plain, padded = lcb.vbem(s, data, seed=2), lcb.vbem(s, data, seed=2, pad_classes=PAD)
    assert padded.elbo == pytest.approx(plain.elbo, abs=1e-8)
    np.testing.assert_allclose(padded.restart_elbos, plain.restart_elbos, atol=1e-8)
    for node in s.nodes:
        np.testing.assert_allclose(padded.posterior[node], plain.posterior[node], atol=1e-8)
    fit = lcb.em(s, data, seed=0)
    assert (lcb.vbem(s, data, init=fit, pad_classes=PAD).elbo
            == pytest.approx(lcb.vbem(s, data, init=fit).elbo, abs=1e-8))


@pytest.mark.parametrize("k", [1, 2])
def test_padded_ais_agrees_with_the_exact_evidence(k):
    template = lcb.Dataset(codes=np.zeros((1, 3), dtype=np.int64), columns=("A", "B", "C"),
                           labels=((0, 1),) * 3)
    truth = lcb.latent_class(template, 2)
    data = lcb.simulate(truth, lcb.random_params(truth, seed=8), 20, seed=8)
    s = lcb.latent_class(data, k)
    exact = lcb.exact_evidence(s, data, max_terms=1e9).log_evidence
    res = lcb.ais(s, data, chains=64, temperatures=1024, seed=3, pad_classes=3)
    assert res.settings["pad_classes"] == 3
    assert res.stderr < 0.1
    assert abs(res.log_evidence - exact) < 3 * res.stderr, (res.log_evidence, exact)
    again = lcb.ais(s, data, chains=64, temperatures=1024, seed=3, pad_classes=3)
    np.testing.assert_array_equal(again.log_weights, res.log_weights)


def test_bad_padding_is_refused():
    data = _data()
    with pytest.raises(lcb.LcbayesError, match="below the model's 3 classes"):
        lcb.em(lcb.latent_class(data, 3), data, pad_classes=2)
    hlc = lcb.hlc(data, {"H": ["X1", "X2", "G"], "G": ["X3", "X4", "X5"]}, {"H": 2, "G": 2})
    with pytest.raises(lcb.LcbayesError, match="latent class models"):
        lcb.vbem(hlc, data, pad_classes=3)
    with pytest.raises(lcb.LcbayesError, match="kernel='rw'"):
        lcb.ais(lcb.latent_class(data, 2), data, kernel="mh", pad_classes=3)
    assert class_padding(lcb.latent_class(data, 2), None) is None


def test_compare_rows_are_the_padded_engine_runs_and_do_not_depend_on_workers():
    data = _data()
    kw = dict(n_classes=range(1, 4), methods=["bic", "vbem", "ais"], seed=5,
              engine_options={"ais": {"chains": 8, "temperatures": 256, "target_stderr": None}})
    one = lcb.compare(data, workers=1, **kw)
    two = lcb.compare(data, workers=2, **kw)
    assert one.settings["pad_classes"] == 3
    a, b = one.to_frame(), two.to_frame()
    assert a.drop(columns="seconds", errors="ignore").equals(b.drop(columns="seconds",
                                                                    errors="ignore"))
    s2 = lcb.latent_class(data, 2)
    assert one.fits["em"][1].loglik == lcb.em(s2, data, seed=5, pad_classes=3).loglik
    assert one.fits["em"][1].loglik == pytest.approx(lcb.em(s2, data, seed=5).loglik, abs=1e-5)
    ais = lcb.ais(s2, data, chains=8, temperatures=256, seed=5, pad_classes=3)
    assert one.fits["ais"][1].log_evidence == ais.log_evidence
