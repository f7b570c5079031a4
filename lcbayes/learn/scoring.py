"""The scores a structure search maximises (natural-log evidence scale, higher is better).

Karčiauskas (2005) scores with BIC and the standard dimension (§3.1.3, eq. 3.2; Ch. 6-7), the
default here. The others are lcbayes's, beyond the thesis:

* ``bic``: ``LL - d/2 ln N`` (:func:`lcbayes.scores.bic`);
* ``bic_e``: BIC with the effective dimension ``d_e`` (Geiger, Heckerman & Meek 1996;
  :func:`lcbayes.effective_dimension`, computed once per number of classes);
* ``aic``: ``LL - d``;
* ``icl``: ``bic - E``, ``E`` the entropy of the posterior class memberships;
* ``vbem``: the alias-corrected variational lower bound ``F + ln S`` (Beal & Ghahramani
  2006), from one VBEM run started at the model (Corollary 6.2: ``F >= CS``). Slower: each
  score is a VBEM run.

``N`` is the number of rows with at least one observed value. Within one step of a search the
candidates have the same number of classes, so the search picks among them by log-likelihood
and scores only the winner (:class:`Scorer`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import numpy as np

from .. import scores
from ..constructors import latent_class
from ..data import Dataset
from ..dimension import effective_dimension
from ..structure import Structure
from .mixture import ClassModel
from .restarts import class_posteriors

__all__ = ["SCORES", "Scorer"]

#: Every score a search can use, with a one-line description.
SCORES = {
    "bic": "BIC, LL - d/2 ln N (standard dimension; the thesis's score)",
    "bic_e": "BIC with the effective dimension (Jacobian rank)",
    "aic": "AIC, LL - d",
    "icl": "ICL-BIC, BIC - entropy of the class memberships",
    "vbem": "alias-corrected variational lower bound F + ln S (one VBEM run per score)",
}


class Scorer:
    """The score ``name`` of latent class models of ``data`` (module docstring), with every
    structure and dimension it needs cached by number of classes."""

    def __init__(self, data: Dataset, name: str):
        self.data = data
        self.name = name
        self._structures: dict[int, Structure] = {}
        self._dimensions: dict[int, int] = {}
        self._rule: Callable[[ClassModel, float], float] = getattr(self, f"_{name}")

    @cached_property
    def n_rows(self) -> int:
        return max(self.data.n_observed_rows, 1)

    def structure(self, n_classes: int) -> Structure:
        """``latent_class(data, n_classes)``."""
        if n_classes not in self._structures:
            self._structures[n_classes] = latent_class(self.data, n_classes)
        return self._structures[n_classes]

    def dimension(self, n_classes: int) -> int:
        """The standard dimension ``d`` of ``n_classes`` classes."""
        return self.structure(n_classes).n_parameters

    def __call__(self, model: ClassModel, loglik: float) -> float:
        """The score of ``model`` whose log-likelihood on the data is ``loglik``."""
        return float(self._rule(model, loglik))

    def _bic(self, model: ClassModel, loglik: float) -> float:
        return scores.bic(loglik, self.dimension(model.n_classes), self.n_rows)

    def _aic(self, model: ClassModel, loglik: float) -> float:
        return scores.aic(loglik, self.dimension(model.n_classes))

    def _bic_e(self, model: ClassModel, loglik: float) -> float:
        m = model.n_classes
        if m not in self._dimensions:
            self._dimensions[m] = effective_dimension(self.structure(m))
        return scores.bic(loglik, self._dimensions[m], self.n_rows)

    def _icl(self, model: ClassModel, loglik: float) -> float:
        post = class_posteriors(self.data, model)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(post > 0, post * np.log(post), 0.0)
        seen = (self.data.patterns >= 0).any(axis=1)  # rows with no observed value: no entropy
        entropy = -float((self.data.counts * seen) @ terms.sum(axis=0))
        return scores.icl(loglik, self.dimension(model.n_classes), self.n_rows, entropy)

    def _vbem(self, model: ClassModel, loglik: float) -> float:
        from ..engines.em import em
        from ..engines.vbem import vbem

        structure = self.structure(model.n_classes)
        fit = em(structure, self.data, restarts=0, init=model.params(structure), max_iter=1)
        return vbem(structure, self.data, restarts=0, init=fit).elbo_corrected
