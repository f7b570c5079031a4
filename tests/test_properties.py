"""Property tests (hypothesis) of the data layer and the inference core: any categorical table
with missing values round-trips through ``Dataset``; the log-likelihood of a latent class model
equals the sum over classes done by hand, row by row, with missing items summed out."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

import lcbayes as lcb

#: Few examples: every new pattern count compiles the E step once.
FEW = settings(max_examples=20, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def tables(draw, items: int = 3, max_rows: int = 25):
    """A DataFrame of ``items`` columns of text labels (2-3 per column), some missing."""
    rows = draw(st.integers(1, max_rows))
    labels = [[f"{name}{v}" for v in range(draw(st.integers(2, 3)))] for name in "abc"[:items]]
    columns = {}
    for name, levels in zip("abc"[:items], labels, strict=True):
        values = draw(st.lists(st.sampled_from([*levels, None]), min_size=rows, max_size=rows))
        columns[name] = values
    return pd.DataFrame(columns)


@FEW
@given(tables())
def test_a_table_round_trips_through_its_patterns(frame):
    observed = frame.notna().any(axis=1)
    if not observed.any():      # all-missing data is refused (tested elsewhere)
        return
    for column in frame:        # a column must have a value somewhere (else it is refused)
        if frame[column].isna().all():
            return
    data = lcb.Dataset.from_pandas(frame)
    assert data.n_rows == len(frame) and int(np.sum(data.counts)) == len(frame)
    assert data.n_observed_rows == int(observed.sum())
    back = data.to_pandas()
    pd.testing.assert_frame_equal(back.astype(object).where(back.notna(), None),
                                  frame.astype(object).where(frame.notna(), None),
                                  check_dtype=False)
    patterns = np.asarray(data.patterns)[np.asarray(data.pattern_index)]
    np.testing.assert_array_equal(patterns, np.asarray(data.codes))


@FEW
@given(tables(), st.integers(1, 3), st.integers(0, 2 ** 31 - 1))
def test_the_log_likelihood_is_the_sum_over_classes_row_by_row(frame, classes, seed):
    if frame.isna().all(axis=0).any():
        return
    data = lcb.Dataset.from_pandas(frame)
    structure = lcb.latent_class(data, classes)
    params = lcb.random_params(structure, seed=seed)
    weights = np.asarray(params[structure.nodes[structure.root]]).ravel()
    codes = np.asarray(data.codes)
    by_hand = np.zeros(len(frame))
    for i, row in enumerate(codes):
        terms = np.log(weights).copy()
        for j, name in enumerate(data.columns):
            if row[j] >= 0:
                terms += np.log(np.asarray(params[name])[:, row[j]])
        by_hand[i] = logsumexp(terms) if (row >= 0).any() else 0.0
    per_row = lcb.log_likelihood(structure, params, data, per_row=True)
    np.testing.assert_allclose(per_row, by_hand, rtol=1e-10, atol=1e-12)
    assert np.isclose(lcb.log_likelihood(structure, params, data), by_hand.sum(), rtol=1e-12)
    posteriors = lcb.hidden_posteriors(structure, params, data)[structure.nodes[structure.root]]
    np.testing.assert_allclose(posteriors.sum(axis=1), 1.0)
