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

* ``smc``: the log evidence itself, :func:`lcbayes.smc` at its defaults (seed 0): SMC over
  the rows, checked by bridge sampling for latent class models (HLC trees get the SMC
  estimate). The slowest; a model whose runs give no estimate stops the search with the
  reason.

``N`` is the number of rows with at least one observed value. Within one step of a search the
candidates have the same structure, so the search picks among them by log-likelihood and scores
only the winner (:class:`Scorer`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np

from .. import scores
from ..constructors import latent_class
from ..data import Dataset
from ..dimension import effective_dimension
from ..errors import LcbayesError
from ..inference import e_step
from ..params import from_tables
from ..structure import Structure

__all__ = ["SCORES", "Scorer"]

#: Every score a search can use, with a one-line description.
SCORES = {
    "bic": "BIC, LL - d/2 ln N (standard dimension; the thesis's score)",
    "bic_e": "BIC with the effective dimension (Jacobian rank)",
    "aic": "AIC, LL - d",
    "icl": "ICL-BIC, BIC - entropy of the class memberships",
    "vbem": "alias-corrected variational lower bound F + ln S (one VBEM run per score)",
    "smc": "ln p(y | m) by SMC (lcb.smc, seed 0: tempered from a reference for latent "
           "class models; slowest)",
}


class Scorer:
    """The score ``name`` (module docstring) of models of ``data``: any latent class or HLC
    structure with its ``(q, r)`` tables; dimensions and latent class structures cached."""

    def __init__(self, data: Dataset, name: str):
        self.data = data
        self.name = name
        self._structures: dict[int, Structure] = {}
        self._dimensions: dict[Structure, int] = {}
        self._rule: Callable[[Structure, tuple, float], float] = getattr(self, f"_{name}")

    @cached_property
    def n_rows(self) -> int:
        return max(self.data.n_observed_rows, 1)

    def structure(self, n_classes: int) -> Structure:
        """``latent_class(data, n_classes)``."""
        if n_classes not in self._structures:
            self._structures[n_classes] = latent_class(self.data, n_classes)
        return self._structures[n_classes]

    def __call__(self, structure: Structure, tables: tuple, loglik: float) -> float:
        """The score of ``structure`` with ``tables`` whose log-likelihood is ``loglik``."""
        return float(self._rule(structure, tables, loglik))

    def _bic(self, structure: Structure, tables: tuple, loglik: float) -> float:
        return scores.bic(loglik, structure.n_parameters, self.n_rows)

    def _aic(self, structure: Structure, tables: tuple, loglik: float) -> float:
        return scores.aic(loglik, structure.n_parameters)

    def _bic_e(self, structure: Structure, tables: tuple, loglik: float) -> float:
        if structure not in self._dimensions:
            self._dimensions[structure] = effective_dimension(structure)
        return scores.bic(loglik, self._dimensions[structure], self.n_rows)

    def _icl(self, structure: Structure, tables: tuple, loglik: float) -> float:
        seen = (self.data.patterns >= 0).any(axis=1)  # rows with no observed value: no entropy
        with np.errstate(divide="ignore"):
            log_tables = tuple(jnp.log(jnp.asarray(t)) for t in tables)
        est = _e_step(structure, log_tables, jnp.asarray(self.data.patterns),
                      jnp.asarray(self.data.counts))
        entropy = float((self.data.counts * seen) @ np.asarray(est.hidden_entropy))
        return scores.icl(loglik, structure.n_parameters, self.n_rows, entropy)

    def _vbem(self, structure: Structure, tables: tuple, loglik: float) -> float:
        from ..engines.em import em
        from ..engines.vbem import vbem

        fit = em(structure, self.data, restarts=0, init=from_tables(structure, tables),
                 max_iter=1)
        return vbem(structure, self.data, restarts=0, init=fit).elbo_corrected


    def _smc(self, structure: Structure, tables: tuple, loglik: float) -> float:
        from ..samplers.smc_evidence import smc

        result = smc(structure, self.data, seed=0)
        if not np.isfinite(result.log_evidence):
            raise LcbayesError(f"score='smc': lcb.smc gave no estimate for {structure.kind} "
                               f"structure ({result.reason}); use score='vbem' or lcb.smc "
                               "with more particles")
        return result.log_evidence


_e_step = jax.jit(e_step, static_argnums=0)
