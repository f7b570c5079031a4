"""Latent class regression: class membership on covariates (one step), fitted by
:func:`lcbayes.em` with ``covariates=``.

* :mod:`.design` — the membership design matrix (:class:`Covariates`, :func:`covariate_design`);
* :mod:`.cells` — rows compressed to (pattern, covariate) cells and their exact likelihood;
* :mod:`.lcr_em` — the jitted EM (Newton-Raphson M step for the coefficients, SQUAREM);
* :mod:`.lcr_information` — standard errors (empirical or observed information);
* :mod:`.result` — :class:`RegressionResult`;
* :mod:`.fit` — the checks and the driver behind ``lcb.em(..., covariates=...)``.

Its posterior and Bayes factors are :mod:`lcbayes.covariate_bayes`.
"""

import warnings

from .design import Covariates, covariate_design
from .result import RegressionResult

__all__ = ["Covariates", "RegressionResult", "covariate_design"]

with warnings.catch_warnings():
    # NumPyro (behind lcbayes.covariate_bayes) imports tqdm.auto, which warns "IProgress not found"
    # in a Jupyter kernel without ipywidgets although no bar is drawn; imported here once,
    # quietly, before any NumPyro import, it does not
    warnings.filterwarnings("ignore", message="IProgress not found")
    import tqdm.auto  # noqa: F401
