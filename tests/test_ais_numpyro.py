"""AIS of the evidence of NumPyro models against closed forms and lcbayes' exact evidence."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer.util import potential_energy
from scipy.special import betaln
from scipy.stats import multivariate_normal

import lcbayes as lcb
from lcbayes.engines.ais_numpyro import ais_numpyro
from lcbayes.engines.annealing import beal_schedule
from lcbayes.engines.numpyro_sites import log_parts

A, B = 2.0, 3.0
PRIOR_SD, NOISE_SD = 2.0, 1.0


def beta_bernoulli(y):
    p = numpyro.sample("p", dist.Beta(A, B))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Bernoulli(p), obs=y)


def normal_normal(x):
    mu = numpyro.sample("mu", dist.Normal(0.0, PRIOR_SD))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("x", dist.Normal(mu, NOISE_SD), obs=x)


@pytest.fixture(scope="module")
def bernoulli_data():
    y = (np.random.default_rng(1).random(30) < 0.3).astype(np.float64)
    k, n = y.sum(), y.size
    return jnp.asarray(y), float(betaln(A + k, B + n - k) - betaln(A, B))


@pytest.fixture(scope="module")
def normal_data():
    x = np.random.default_rng(2).normal(0.7, NOISE_SD, 20)
    cov = NOISE_SD ** 2 * np.eye(x.size) + PRIOR_SD ** 2
    return jnp.asarray(x), float(multivariate_normal(np.zeros(x.size), cov).logpdf(x))


def _check_estimate(result, exact, tolerance, max_stderr):
    error = result.log_evidence - exact
    assert result.stderr < max_stderr, result.summary()
    assert abs(error) < 3 * result.stderr, (error, result.summary())
    assert abs(error) < tolerance, (error, result.summary())


def test_beta_bernoulli_matches_closed_form(bernoulli_data):
    y, exact = bernoulli_data
    result = ais_numpyro(beta_bernoulli, y, chains=128, temperatures=800, seed=3)
    _check_estimate(result, exact, 0.05, 0.05)
    assert result.kernel == "hmc" and result.chains == 128 and result.temperatures == 800
    assert result.trace.shape == (128, 128) and result.trace_temperatures[-1] == 1.0
    np.testing.assert_array_equal(result.trace[:, -1], result.log_weights)
    assert np.all(np.diff(result.trace_temperatures) > 0)
    assert result.acceptance.shape == (4,)
    assert np.all(np.abs(result.acceptance - 0.65) < 0.1), result.acceptance
    assert result.settings["latent_sites"] == ["p"] and result.settings["observed_sites"] == ["y"]


def test_normal_normal_matches_closed_form_with_mala(normal_data):
    x, exact = normal_data
    schedule = beal_schedule(1600, e=0.2)  # passed as an explicit array
    result = ais_numpyro(normal_normal, x, chains=128, schedule=schedule, kernel="mala", seed=1)
    _check_estimate(result, exact, 0.05, 0.05)
    assert result.schedule == "custom" and result.temperatures == 1600
    assert result.settings["n_leapfrog"] == 1
    assert np.all(np.abs(result.acceptance - 0.57) < 0.1), result.acceptance


def test_fixed_step_size_is_reproducible_and_accurate(normal_data):
    x, exact = normal_data
    run = partial(ais_numpyro, normal_normal, x, chains=128, temperatures=1500, step_size=0.4)
    first, second = run(seed=5), run(seed=5)
    np.testing.assert_array_equal(first.log_weights, second.log_weights)
    np.testing.assert_array_equal(first.trace, second.trace)
    assert first.settings["step_size_quarters"] == pytest.approx([0.4] * 4)
    assert not first.settings["adaptive"]
    _check_estimate(first, exact, 0.05, 0.05)


def _latent_class_problem():
    base = lcb.Dataset.from_codes(np.random.default_rng(0).integers(0, 2, (40, 3)))
    truth = lcb.latent_class(base, 2)
    data = lcb.simulate(truth, lcb.random_params(truth, seed=3), n=40, seed=4)
    return lcb.latent_class(data, 2), data


def test_lcbayes_latent_class_model_matches_exact_evidence():
    structure, data = _latent_class_problem()
    exact = lcb.exact_evidence(structure, data).log_evidence
    result = ais_numpyro(lcb.numpyro_model(structure), data, chains=64, temperatures=600,
                         seed=0)
    _check_estimate(result, exact, 0.3, 0.1)
    assert result.settings["observed_sites"] == ["log_likelihood"]
    assert result.settings["dimension"] == 1 + 3 * 2


def dirichlet_factor(counts):
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.array([1.0, 2.0, 3.0])))
    numpyro.factor("loglik", counts @ jnp.log(theta))


@pytest.mark.parametrize("model, args, u, observed", [
    (beta_bernoulli, (jnp.array([1.0, 0.0, 1.0, 1.0]),), {"p": jnp.array(0.7)}, "y"),
    (normal_normal, (jnp.array([0.5, -1.0, 2.0]),), {"mu": jnp.array(0.3)}, "x"),
    (dirichlet_factor, (jnp.array([3.0, 0.0, 5.0]),), {"theta": jnp.array([0.4, -1.1])},
     "loglik"),
])
def test_log_prior_plus_log_likelihood_is_minus_potential_energy(model, args, u, observed):
    @jax.jit
    def check(u):
        log_prior, log_lik = log_parts(model, args, {}, frozenset([observed]), u)
        _, trace = numpyro.infer.util.log_density(
            model, args, {}, numpyro.infer.util.constrain_fn(model, args, {}, u))
        site = trace[observed]
        direct = jnp.sum(site["fn"].log_prob(site["value"]))
        return log_prior, log_lik, -potential_energy(model, args, {}, u), direct

    log_prior, log_lik, minus_energy, direct = check(u)
    assert float(log_prior + log_lik) == pytest.approx(float(minus_energy), rel=1e-12)
    assert float(log_lik) == pytest.approx(float(direct), rel=1e-12)
    assert float(log_prior) != pytest.approx(float(minus_energy))  # the split is not trivial


@pytest.mark.parametrize("bad", [
    {"chains": 1}, {"chains": 2.5}, {"chains": True}, {"temperatures": 0},
    {"n_leapfrog": 0}, {"step_size": 0.0}, {"step_size": -1.0}, {"step_size": float("nan")},
    {"kernel": "nuts"}, {"seed": -1}, {"seed": 2**64}, {"schedule": "cosine"},
    {"schedule": [0.0, 0.5]}, {"temperatures": 2.5},
])
def test_bad_arguments_raise(bernoulli_data, bad):
    with pytest.raises(lcb.LcbayesError):
        ais_numpyro(beta_bernoulli, bernoulli_data[0], **bad)


def test_unsuitable_models_raise(bernoulli_data):
    y = bernoulli_data[0]

    def discrete(y):
        z = numpyro.sample("z", dist.Bernoulli(0.5))
        numpyro.sample("y", dist.Bernoulli(0.2 + 0.6 * z), obs=y)

    def no_latent(y):
        numpyro.sample("y", dist.Bernoulli(0.5), obs=y)

    def subsampled(y):
        with numpyro.plate("rows", y.shape[0], subsample_size=5):
            p = numpyro.sample("p", dist.Beta(1.0, 1.0))
            numpyro.sample("y", dist.Bernoulli(p), obs=y[:5])

    with pytest.raises(lcb.LcbayesError, match="discrete"):
        ais_numpyro(discrete, y)
    with pytest.raises(lcb.LcbayesError, match="no latent"):
        ais_numpyro(no_latent, y)
    def scaled(y):
        with numpyro.handlers.scale(scale=0.5):
            p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        numpyro.sample("y", dist.Bernoulli(p), obs=y)

    with pytest.raises(lcb.LcbayesError, match="subsamples 5 of 30"):
        ais_numpyro(subsampled, y)
    with pytest.raises(lcb.LcbayesError, match="scale"):
        ais_numpyro(scaled, y)
    with pytest.raises(lcb.LcbayesError, match="failed"):
        ais_numpyro(beta_bernoulli, y, unknown_keyword=1)
    with pytest.raises(lcb.LcbayesError, match="model must be"):
        ais_numpyro("not a model", y)
