"""``lcb.LatentClassModel``: the scikit-learn estimator over ``lcb.em``."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

import lcbayes as lcb


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return lcb.datasets.frame("carcinoma")


@pytest.fixture(scope="module")
def fitted(frame) -> lcb.LatentClassModel:
    return lcb.LatentClassModel(n_classes=3, restarts=5, seed=2).fit(frame)


def test_the_fit_is_lcb_em_on_the_same_seed(frame, fitted):
    data = lcb.Dataset.from_pandas(frame)
    direct = lcb.em(lcb.latent_class(data, 3), data, restarts=5, seed=2)
    assert fitted.result_.loglik == direct.loglik
    np.testing.assert_allclose(fitted.score_samples(frame).sum(), direct.loglik, rtol=1e-12)
    assert fitted.score(frame) == pytest.approx(direct.loglik / len(frame))
    assert fitted.bic(frame) == pytest.approx(-2 * direct.bic)
    assert fitted.aic(frame) == pytest.approx(-2 * direct.aic)
    np.testing.assert_allclose(fitted.predict_proba(frame), direct.predict_proba(data))
    np.testing.assert_array_equal(fitted.labels_, fitted.predict(frame))
    assert fitted.n_features_in_ == 7 and list(fitted.feature_names_in_) == list("ABCDEFG")


def test_clone_keeps_the_parameters_and_drops_the_fit(fitted):
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert not hasattr(copy, "result_")
    assert clone(fitted.set_params(n_classes=4)).n_classes == 4
    fitted.set_params(n_classes=3)


def test_a_pickled_model_predicts_the_same(frame, fitted):
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict_proba(frame), fitted.predict_proba(frame))


def test_in_a_pipeline_after_an_ordinal_encoder_with_missing_values():
    gss = lcb.datasets.frame("gss82")
    gss.loc[:9, "ACCURACY"] = np.nan                       # missing values are summed out
    pipe = make_pipeline(OrdinalEncoder(encoded_missing_value=np.nan),
                         lcb.LatentClassModel(n_classes=2, restarts=3))
    pipe.fit(gss)
    proba = pipe.predict_proba(gss)
    assert proba.shape == (len(gss), 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert pipe.score(gss) < 0


def test_grid_search_over_the_number_of_classes_by_bic_chooses_three(frame):
    everything = np.arange(len(frame))
    search = GridSearchCV(lcb.LatentClassModel(restarts=5), {"n_classes": [1, 2, 3, 4]},
                          scoring=lcb.LatentClassModel.bic_scorer, cv=[(everything, everything)])
    search.fit(frame)
    assert search.best_params_ == {"n_classes": 3}


def test_new_data_are_read_against_the_fitted_categories(frame, fitted):
    arrays = lcb.LatentClassModel(n_classes=2, restarts=2).fit(frame.to_numpy())
    assert arrays.predict(frame.to_numpy()[:5]).shape == (5,)
    bad = frame.head(3).copy()
    bad.loc[0, "C"] = 7
    with pytest.raises(lcb.DataError, match="'C'"):
        fitted.predict(bad)
    with pytest.raises(lcb.DataError, match="lacks column"):
        fitted.predict(frame.drop(columns="G"))
