"""``LatentClassModel``: a latent class model as a scikit-learn estimator (StepMix's convention),
a thin layer over :func:`lcbayes.em` for pipelines and model selection in scikit-learn.

``fit(X)`` reads ``X`` (a DataFrame, or an array whose columns are items) as categorical data,
missing values (NaN, None) summed out as everywhere in lcbayes, and fits ``n_classes`` classes
by :func:`lcbayes.em`; the fit is ``result_`` (an :class:`~lcbayes.EMResult`) and the model
``structure_``. New data are read against the categories seen in ``fit`` (a value never seen is
refused, naming its column). Scores follow scikit-learn's mixtures
(:class:`sklearn.mixture.GaussianMixture`): :meth:`score` is the mean log-likelihood per row,
:meth:`bic` and :meth:`aic` are on the deviance scale (``-2 ln L + d ln N``, lower is better;
``lcb.EMResult.bic`` is ``-bic / 2``, higher is better). Needs scikit-learn
(``pip install 'lcbayes[sklearn]'``).

Example::

    from sklearn.model_selection import GridSearchCV
    search = GridSearchCV(lcb.LatentClassModel(), {"n_classes": [1, 2, 3, 4]},
                          scoring=lcb.LatentClassModel.bic_scorer, cv=[(all_rows, all_rows)])
    search.fit(frame).best_params_          # the number of classes of the lowest BIC
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .constructors import latent_class
from .data import Dataset
from .engines.em import EMResult, em
from .errors import LcbayesError
from .inference import log_likelihood
from .params import PriorSpec
from .validation import Seed, data_for

try:
    from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin
    from sklearn.utils.validation import check_array, check_is_fitted
except ImportError as exc:  # pragma: no cover - the sklearn extra is missing
    raise ImportError("lcbayes.LatentClassModel needs scikit-learn: pip install "
                      "'lcbayes[sklearn]'") from exc

__all__ = ["EXPECTED_FAILED_CHECKS", "LatentClassModel"]

#: scikit-learn's estimator checks that do not apply to a categorical model, with why (pass
#: as ``check_estimator(LatentClassModel(), expected_failed_checks=EXPECTED_FAILED_CHECKS)``).
EXPECTED_FAILED_CHECKS = {
    "check_clustering": "it fits continuous Gaussian blobs, which a categorical model refuses "
                        "(the tags' categorical input is not applied to this check's data)",
    "check_positive_only_tag_during_fit": "it subtracts the mean from the categorical codes, "
                                          "making them non-integer, which is refused",
}


class LatentClassModel(ClusterMixin, DensityMixin, BaseEstimator):
    """A latent class model with ``n_classes`` classes fitted by EM (module docstring).

    Args:
        n_classes: number of latent classes.
        restarts, seed, prior, tol, max_iter, algorithm: as in :func:`lcbayes.em`.

    Attributes (after :meth:`fit`):
        result_: the :class:`~lcbayes.EMResult`; ``structure_`` the model; ``labels_`` the
        training rows' most probable classes; ``n_features_in_`` and (``X`` a DataFrame)
        ``feature_names_in_``; ``n_iter_`` and ``converged_`` of the best restart.
    """

    def __init__(self, n_classes: int = 2, *, restarts: int = 10, seed: Seed = 0,
                 prior: PriorSpec = None, tol: float = 1e-8, max_iter: int = 2000,
                 algorithm: str = "squarem"):
        self.n_classes = n_classes
        self.restarts = restarts
        self.seed = seed
        self.prior = prior
        self.tol = tol
        self.max_iter = max_iter
        self.algorithm = algorithm

    def __sklearn_tags__(self):
        """scikit-learn's tags: categorical input (numbers or text, one column per item),
        NaN read as missing (summed out), no sparse input."""
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags

    # -------------------------------------------------------------- data
    def _frame(self, X) -> pd.DataFrame:
        """``X`` as a DataFrame with the fitted column names (``x0, x1, ...`` for arrays)."""
        if isinstance(X, Dataset):
            return X.to_pandas()
        if isinstance(X, pd.DataFrame):
            return X.set_axis([str(c) for c in X.columns], axis=1)
        # scikit-learn's own checks and messages: 1-d, sparse, complex, empty; NaN is missing
        values = check_array(X, dtype=None, accept_sparse=False,
                             ensure_all_finite="allow-nan")
        if values.dtype.kind == "f" and np.isinf(values).any():
            raise LcbayesError("X holds infinite values, which are not categories: recode "
                               "them (NaN is read as missing)")
        values = values.astype(object)
        names = getattr(self, "feature_names_in_", None)
        if names is None or len(names) != values.shape[1]:
            names = [f"x{j}" for j in range(values.shape[1])]
        return pd.DataFrame(values, columns=list(names)).infer_objects()

    def _data(self, X) -> Dataset:
        check_is_fitted(self, "result_")
        frame = self._frame(X)
        named = isinstance(X, pd.DataFrame | Dataset)   # columns matched by name instead
        if not named and frame.shape[1] != self.n_features_in_:
            raise LcbayesError(f"X has {frame.shape[1]} features, but LatentClassModel is "
                               f"expecting {self.n_features_in_} features as input (the items "
                               "it was fitted on)")
        return data_for(self.structure_, frame, "X")

    # -------------------------------------------------------------- fitting
    def fit(self, X, y=None) -> LatentClassModel:
        """Fit ``n_classes`` classes to the rows of ``X`` by :func:`lcbayes.em`; ``y`` is
        ignored (scikit-learn's convention for unsupervised estimators)."""
        for fitted in ("feature_names_in_", "result_", "structure_"):
            self.__dict__.pop(fitted, None)    # a refit starts afresh
        frame = self._frame(X)
        if isinstance(X, pd.DataFrame):
            self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        data = Dataset.from_pandas(frame)
        self.structure_ = latent_class(data, self.n_classes)
        self.result_: EMResult = em(self.structure_, data, restarts=self.restarts,
                                    seed=self.seed, prior=self.prior, tol=self.tol,
                                    max_iter=self.max_iter, algorithm=self.algorithm)
        self.n_features_in_ = frame.shape[1]
        self.n_iter_ = self.result_.n_iter
        self.converged_ = self.result_.converged
        self.labels_ = self.result_.predict(data)
        return self

    # -------------------------------------------------------------- prediction
    def predict_proba(self, X) -> np.ndarray:
        """``(n_rows, n_classes)`` class membership probabilities (missing values summed
        out)."""
        data = self._data(X)
        return self.result_.predict_proba(data)

    def predict(self, X) -> np.ndarray:
        """``(n_rows,)`` the most probable class of every row (from 0)."""
        return np.argmax(self.predict_proba(X), axis=1)

    def score_samples(self, X) -> np.ndarray:
        """``(n_rows,)`` ``ln p(x_i)`` of every row under the fitted model."""
        return self._row_logliks(self._data(X))

    def _row_logliks(self, data: Dataset) -> np.ndarray:
        return log_likelihood(self.structure_, self.result_.params, data, per_row=True)

    def score(self, X, y=None) -> float:
        """The mean log-likelihood per row of ``X``."""
        return float(np.mean(self.score_samples(X)))

    def bic(self, X) -> float:
        """``-2 ln L(X) + d ln N`` (deviance scale, lower is better; ``N`` the rows of ``X``
        with an observed value, ``d`` the free parameters)."""
        data = self._data(X)
        total = float(np.sum(self._row_logliks(data)))
        return -2.0 * total + self.structure_.n_parameters * math.log(
            max(data.n_observed_rows, 1))

    def aic(self, X) -> float:
        """``-2 ln L(X) + 2 d`` (deviance scale, lower is better)."""
        return -2.0 * float(np.sum(self.score_samples(X))) + 2.0 * self.structure_.n_parameters

    @staticmethod
    def bic_scorer(estimator: LatentClassModel, X, y=None) -> float:
        """A scikit-learn scorer (higher is better): ``-estimator.bic(X)``."""
        return -estimator.bic(X)
