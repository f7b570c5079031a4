"""Items with different numbers of levels: every item's CPT row is padded to the widest item, and
every evidence estimator must leave the padding out. Each estimator of a latent class model
against the exact evidence on 25 rows of a 3-, a 4- and two 2-level items (the padding of Chib's
ordinate was once counted as pseudo-counts; the other estimators share its Dirichlet normaliser,
:func:`lcbayes.engines.dirichlet.log_normaliser`)."""

from __future__ import annotations

import numpy as np
import pytest

import lcbayes as lcb


@pytest.fixture(scope="module")
def mixed() -> lcb.Dataset:
    rng = np.random.default_rng(1)
    z = rng.integers(0, 2, 25)
    columns = []
    for width in (3, 2, 2, 4):
        p = rng.dirichlet(np.ones(width), size=2)
        columns.append([rng.choice(width, p=p[c]) for c in z])
    return lcb.Dataset.from_codes(np.array(columns).T)


def test_one_class_estimators_equal_the_closed_form(mixed):
    structure = lcb.latent_class(mixed, 1)
    exact = lcb.exact_evidence(structure, mixed).log_evidence
    assert lcb.chib(structure, mixed, draws=50, batches=5, restarts=1).log_evidence == \
        pytest.approx(exact, abs=1e-8)
    assert lcb.vbem(structure, mixed, seed=0).elbo_corrected == pytest.approx(exact, abs=1e-6)


@pytest.mark.slow
def test_two_class_estimators_agree_with_the_exact_evidence(mixed):
    structure = lcb.latent_class(mixed, 2)
    exact = lcb.exact_evidence(structure, mixed, max_terms=5e7).log_evidence
    for name, result in (("smc", lcb.smc(structure, mixed, seed=0)),
                         ("bridge", lcb.bridge_sampling(structure, mixed, seed=0)),
                         ("ais", lcb.ais(structure, mixed, seed=0)),
                         ("chib", lcb.chib(structure, mixed, seed=0))):
        assert abs(result.log_evidence - exact) < 4 * result.stderr + 0.1, (name, result)
    assert lcb.vbem(structure, mixed, seed=0).elbo <= exact   # F is a lower bound
