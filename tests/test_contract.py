"""The engine contract: every public engine checks ``seed``, ``data`` and ``structure`` at the
boundary and refuses bad ones with an error naming the argument, before any JAX program is
traced or compiled; keys work as seeds; data may be a Dataset, a DataFrame or codes.

"Before any compilation" is watched with JAX's monitoring events (tracing and compiling a
program record durations). The data here have a shape no other test file uses, so a program
the engine reached would be traced afresh and noticed.
"""

from __future__ import annotations

import contextlib
import inspect

import jax
import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb

CARDS = (2, 3, 2, 4, 3)
COLUMNS = ("A", "B", "C", "D", "E")


@pytest.fixture(scope="module")
def data() -> lcb.Dataset:
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, c, 40) for c in CARDS], axis=1)
    return lcb.Dataset.from_codes(codes, columns=COLUMNS)


@pytest.fixture(scope="module")
def structure(data) -> lcb.Structure:
    return lcb.latent_class(data, 2)


_EVENTS: list[str] = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, *args, **kwargs: _EVENTS.append(name))


@contextlib.contextmanager
def no_jax_program():
    """Fails if JAX traces or compiles a program inside the block."""
    start = len(_EVENTS)
    yield
    seen = [e for e in _EVENTS[start:] if "/jax/core/compile" in e]
    assert not seen, f"JAX traced or compiled before the error: {seen}"


def test_the_watch_sees_a_program():
    with pytest.raises(AssertionError, match="traced or compiled"), no_jax_program():
        jax.jit(lambda x: x * 3 + 1)(np.ones(7))


def _engines(structure, data):
    """``{name: call(**overrides)}`` for every public engine taking a seed."""
    model = lcb.numpyro_model(structure)
    return {
        "em": lambda **kw: lcb.em(structure, data, **kw),
        "vbem": lambda **kw: lcb.vbem(structure, data, **kw),
        "ais": lambda **kw: lcb.ais(structure, data, **kw),
        "gibbs": lambda **kw: lcb.gibbs(structure, data, **kw),
        "rjmcmc": lambda **kw: lcb.rjmcmc(data, **kw),
        "allocation_sampler": lambda **kw: lcb.allocation_sampler(data, **kw),
        "ais_numpyro": lambda **kw: lcb.ais_numpyro(model, data, **kw),
        "effective_dimension": lambda **kw: lcb.effective_dimension(structure, **kw),
        "compare": lambda **kw: lcb.compare(data, [structure], progress=False, **kw),
        "random_params": lambda **kw: lcb.random_params(structure, **kw),
        "simulate": lambda **kw: lcb.simulate(structure, lcb.random_params(structure), 5, **kw),
        "laplace": lambda **kw: lcb.laplace(structure, data, **kw),
        "chib": lambda **kw: lcb.chib(structure, data, **kw),
        "smc": lambda **kw: lcb.smc(structure, data, **kw),
        "identifiable": lambda **kw: lcb.identifiable(structure, **kw),
        "stream_em": lambda **kw: lcb.stream_em(structure, data, **kw),
        "stream_vbem": lambda **kw: lcb.stream_vbem(structure, data, **kw),
        "stepwise_em": lambda **kw: lcb.stepwise_em(structure, data, **kw),
    }


ENGINES = ("em", "vbem", "ais", "gibbs", "rjmcmc", "allocation_sampler", "ais_numpyro",
           "effective_dimension",
           "compare", "random_params", "simulate", "laplace", "chib", "smc", "identifiable",
           "stream_em", "stream_vbem", "stepwise_em")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("seed", "error"), [(-1, ValueError), (1.5, TypeError),
                                             (10**20, ValueError), ("a", TypeError),
                                             (True, TypeError)])
def test_a_bad_seed_is_refused_before_jax_runs(structure, data, engine, seed, error):
    call = _engines(structure, data)[engine]
    with no_jax_program(), pytest.raises(error, match=r"seed must be a non-negative integer"):
        call(seed=seed)


def test_bad_seed_errors_are_lcbayes_errors(structure, data):
    for seed in (-1, 1.5, 2**63, "a"):
        with pytest.raises(lcb.LcbayesError, match="seed"):
            lcb.em(structure, data, seed=seed)
    with pytest.raises(lcb.ArgumentError, match=r"one jax.random key"):
        lcb.em(structure, data, seed=jax.random.split(jax.random.key(0), 3))


ENGINES_ON_A_STRUCTURE = {
    "em": lambda s, d: lcb.em(s, d),
    "vbem": lambda s, d: lcb.vbem(s, d),
    "ais": lambda s, d: lcb.ais(s, d),
    "exact_evidence": lambda s, d: lcb.exact_evidence(s, d),
    "gibbs": lambda s, d: lcb.gibbs(s, d),
    "bound_terms": lambda s, d: lcb.bound_terms(s, d, {}),
    "laplace": lambda s, d: lcb.laplace(s, d),
    "chib": lambda s, d: lcb.chib(s, d),
    "smc": lambda s, d: lcb.smc(s, d),
}


@pytest.mark.parametrize("engine", sorted(ENGINES_ON_A_STRUCTURE))
def test_a_data_frame_without_a_column_is_refused_naming_it(structure, data, engine):
    frame = data.to_pandas().drop(columns=["D"])
    with no_jax_program(), pytest.raises(lcb.DataError, match=r"data lacks column\(s\) \['D'\]"):
        ENGINES_ON_A_STRUCTURE[engine](structure, frame)


def test_compare_names_the_candidate_whose_column_the_data_lack(structure, data):
    frame = data.to_pandas().drop(columns=["D"])
    with no_jax_program(), pytest.raises(lcb.LcbayesError,
                                         match=r"candidate 'LC\(2\)' observes column\(s\) \['D'\]"):
        lcb.compare(frame, [structure], progress=False)


@pytest.mark.parametrize("engine", sorted(ENGINES_ON_A_STRUCTURE))
def test_a_structure_of_other_columns_is_refused_naming_them(data, engine):
    other = lcb.Dataset.from_codes(np.array([[0, 1], [1, 0]]), columns=["A", "Z"])
    with no_jax_program(), pytest.raises(lcb.StructureError, match=r"lack column\(s\) \['Z'\]"):
        ENGINES_ON_A_STRUCTURE[engine](lcb.latent_class(other, 2), data)


@pytest.mark.parametrize("engine", sorted(ENGINES_ON_A_STRUCTURE))
def test_a_structure_that_is_not_one_is_refused(data, engine):
    with no_jax_program(), pytest.raises(TypeError, match=r"structure must be a lcbayes Structure"):
        ENGINES_ON_A_STRUCTURE[engine]({"class": 2}, data)


def test_data_that_is_not_data_is_refused(structure):
    with pytest.raises(TypeError, match=r"data must be a lcbayes Dataset, a pandas DataFrame"):
        lcb.em(structure, "survey.csv")
    with pytest.raises(lcb.DataError, match=r"column 'B' has value\(s\) \['x'\] that the model"):
        lcb.em(structure, pd.DataFrame({c: ["x" if c == "B" else 0] for c in COLUMNS}))
    with pytest.raises(lcb.DataError, match=r"codes run from 0 to 1"):
        lcb.em(structure, np.array([[5, 0, 0, 0, 0]]))


def test_options_are_keyword_only_and_seed_is_one_of_them():
    for engine in (lcb.em, lcb.vbem, lcb.ais, lcb.gibbs, lcb.exact_evidence):
        params = list(inspect.signature(engine).parameters.values())
        assert [p.name for p in params[:2]] == ["structure", "data"]
        assert all(p.kind is p.KEYWORD_ONLY for p in params[2:]), engine.__name__
    for engine in (lcb.em, lcb.vbem, lcb.ais, lcb.gibbs, lcb.rjmcmc, lcb.allocation_sampler,
                   lcb.ais_numpyro):
        seed = inspect.signature(engine).parameters["seed"]
        assert seed.kind is seed.KEYWORD_ONLY and seed.default == 0, engine.__name__


def test_a_jax_key_is_a_seed_and_is_recorded(structure, data):
    by_int = lcb.em(structure, data, restarts=3, seed=3)
    by_key = lcb.em(structure, data, restarts=3, seed=jax.random.key(3))
    by_raw = lcb.em(structure, data, restarts=3, seed=jax.random.PRNGKey(3))
    by_array = lcb.em(structure, data, restarts=3, seed=np.array(3, dtype=np.int64))
    for other in (by_key, by_raw, by_array):
        np.testing.assert_array_equal(by_int.restart_logliks, other.restart_logliks)
    assert by_array.seed == 3
    assert by_int.seed == 3 and by_key.seed == (0, 3)
    other = lcb.em(structure, data, restarts=3, seed=jax.random.key(4))
    assert not np.array_equal(other.restart_logliks, by_int.restart_logliks)
    vb = lcb.vbem(structure, data, seed=jax.random.key(5))
    again = lcb.vbem(structure, data, seed=jax.random.key(5))
    assert vb.elbo == again.elbo and vb.seed == (0, 5)


def test_data_may_be_a_frame_or_codes_and_give_the_same_fit(structure, data):
    by_dataset = lcb.em(structure, data, restarts=2, seed=0)
    by_frame = lcb.em(structure, data.to_pandas(), restarts=2, seed=0)
    by_codes = lcb.em(structure, np.asarray(data.codes), restarts=2, seed=0)
    assert by_frame.loglik == by_dataset.loglik == by_codes.loglik


def test_a_frame_with_a_subset_of_categories_is_coded_with_the_models(structure, data):
    """Rows lacking a category keep the model's coding: a missing category is not a shift."""
    fit = lcb.em(structure, data, restarts=2, seed=0)
    rows = data.to_pandas().iloc[:6]
    rows = rows[rows["D"] != 0]  # category 0 of D absent from these rows
    expected = fit.class_posteriors[rows.index.to_numpy()]
    np.testing.assert_allclose(fit.predict_proba(rows.reset_index(drop=True)), expected,
                               atol=1e-12)
