"""The engine runs behind the comparison's methods (registry :class:`~.registry.Need`), run once
per candidate in this order: the exact evidence (where small enough), the effective dimension,
one maximum-likelihood EM fit, VBEM, AIS.

* ``exact``: :func:`lcbayes.exact_evidence` with ``max_terms``; a problem too large for it gives
  no result and a note (or stops the comparison when ``exact=True``).
* ``effective_dimension``: :func:`lcbayes.effective_dimension` (seed 0), for ``d_e``.
* ``em``: :func:`lcbayes.em`, ``restarts`` starts with ``seed``; provides ``loglik``.
* ``classification``: :func:`lcbayes.indices.classification_quality` of the EM fit (latent
  class models; ``None`` otherwise).
* ``smaller_em``: the EM fit of the latent class model with one class fewer (the same seed and
  restarts), the null model of ``lmr`` (:func:`lcbayes.lmr`) and ``blrt`` (:func:`lcbayes.blrt`
  with ``blrt_replicates``; both reuse the two fits).
* ``vbem``: :func:`lcbayes.vbem`, the best of ``restarts`` prior-draw starts and, when the EM
  fit exists, one more started from it (so ``elbo >= cs``, Beal & Ghahramani Corollary 6.2),
  all in one call.
* ``ais``: :func:`lcbayes.ais` with ``ais_chains``, ``ais_temperatures``, ``ais_kernel``,
  ``ais_target_stderr`` and ``ais_max_chains``.
* ``smc``: :func:`lcbayes.smc` (SMC over the rows; for latent class candidates checked by
  bridge sampling), with ``smc_particles``, ``smc_runs`` and the candidate's share of
  ``time_budget``; ``None`` for a structure with more than ``MAX_ENUMERATED_STATES`` joint
  hidden states.
* ``laplace``: :func:`lcbayes.laplace` (Whiley §4.3: the MAP fit in the softmax basis with
  ``restarts`` and ``seed``, Dirichlet(1) prior), every variant from one Hessian.
* ``chib``: :func:`lcbayes.chib` (Whiley §4.2) with its default draws, for latent class
  candidates of at most 7 classes (``None`` otherwise).

EM, VBEM, SMC (up to :data:`SMC_PADDING_ROWS` rows) and AIS (``"rw"`` kernel) run latent class
candidates with ``pad_classes`` (the largest number of classes among them,
:mod:`lcbayes.engines.padding`), so each compiles once for all of them.

:class:`CandidateFits` hands a candidate's results to the methods' ``values``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..constructors import latent_class
from ..dimension import effective_dimension
from ..engines.ais import ais
from ..engines.chib import MAX_CLASSES, chib
from ..engines.em import em
from ..engines.exact import exact_evidence
from ..engines.laplace import laplace
from ..engines.vbem import vbem
from ..indices import classification_quality
from ..lrt import blrt, lmr
from ..samplers.smc_evidence import smc
from ..structure import MAX_ENUMERATED_STATES, Structure
from .registry import Column, Need, register_need

__all__ = ["SMC_PADDING_ROWS", "CandidateFits"]


@dataclass(frozen=True)
class CandidateFits:
    """One candidate's engine results: ``fits.em``, ``fits.vbem``, ``fits.ais``,
    ``fits.exact`` (``None`` where the need did not run or had no result) and
    ``fits.effective_dimension``; ``fits.get(name)`` for any registered need."""

    structure: Structure
    results: Mapping[str, Any]

    def get(self, name: str) -> Any:
        return self.results.get(name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return object.__getattribute__(self, "results").get(name)


def _exact(structure, data, settings, fits):
    return exact_evidence(structure, data, max_terms=settings["max_terms"])


def _effective_dimension(structure, data, settings, fits):
    return effective_dimension(structure)


def _padding(structure, settings) -> dict:
    """``pad_classes`` for the engines when the comparison pads latent class models."""
    pad = settings.get("pad_classes")
    return {} if pad is None or structure.kind != "latent_class" else {"pad_classes": pad}


def _em(structure, data, settings, fits):
    return em(structure, data, restarts=settings["restarts"], seed=settings["seed"],
              **settings["iter_args"], **_padding(structure, settings))


def _vbem(structure, data, settings, fits):
    # with an EM fit, one more start from it (Corollary 6.2: F >= CS)
    return vbem(structure, data, restarts=settings["restarts"], seed=settings["seed"],
                init=fits.get("em"), **settings["iter_args"], **_padding(structure, settings))


def _classification(structure, data, settings, fits):
    fit = fits.get("em")
    if fit is None or structure.kind != "latent_class":
        return None
    return classification_quality(structure, fit.params, data)


def _smaller_fit(structure, data, settings, fits):
    """The ML EM fit of the latent class model with one class fewer (the null model of the
    likelihood-ratio tests), or ``None``."""
    if fits.get("em") is None or structure.kind != "latent_class" or structure.n_classes < 2:
        return None
    smaller = latent_class(data, structure.n_classes - 1, structure.nodes[structure.root])
    return em(smaller, data, restarts=settings["restarts"], seed=settings["seed"],
              **settings["iter_args"], **_padding(smaller, settings))


def _lmr(structure, data, settings, fits):
    null = fits.get("smaller_em")
    return None if null is None else lmr(null, fits.get("em"), data)


def _blrt(structure, data, settings, fits):
    null = fits.get("smaller_em")
    if null is None:
        return None
    return blrt(data, structure.n_classes, replicates=settings["blrt_replicates"],
                seed=settings["seed"], fits=(null, fits.get("em")))


def _ais(structure, data, settings, fits):
    return ais(structure, data, chains=settings["ais_chains"],
               temperatures=settings["ais_temperatures"], seed=settings["seed"],
               kernel=settings["ais_kernel"], target_stderr=settings["ais_target_stderr"],
               max_chains=settings["ais_max_chains"], progress=settings["progress"],
               **(_padding(structure, settings) if settings["ais_kernel"] == "rw" else {}))


#: ``smc`` runs latent class candidates inside the largest (one compiled program) up to this
#: many rows; beyond, its cost grows with the class slots faster than compiling once per K costs.
SMC_PADDING_ROWS = 1000


def _smc(structure, data, settings, fits):
    if structure.n_enumerated_states > MAX_ENUMERATED_STATES:
        return None
    padding = (_padding(structure, settings)
               if structure.kind == "latent_class" and data.n_rows <= SMC_PADDING_ROWS else {})
    return smc(structure, data, particles=settings["smc_particles"], runs=settings["smc_runs"],
               time_budget=settings["smc_time_budget"], seed=settings["seed"], **padding)


def _laplace(structure, data, settings, fits):
    return laplace(structure, data, restarts=settings["restarts"], seed=settings["seed"],
                   **settings["iter_args"])


def _chib(structure, data, settings, fits):
    if structure.kind != "latent_class" or structure.n_classes > MAX_CLASSES:
        return None
    return chib(structure, data, restarts=settings["restarts"], seed=settings["seed"])


register_need(Need("exact", "exact", _exact, too_large=True, after=()))
register_need(Need("effective_dimension", "effective dimension", _effective_dimension,
                   after=()))
register_need(Need("em", "EM", _em, columns=(Column("loglik", "loglik"),),
                   values=lambda fit: {"loglik": fit.loglik}, after=()))
register_need(Need("vbem", "VBEM", _vbem, after=("em",)))
register_need(Need("classification", "classification", _classification, after=("em",)))
register_need(Need("smaller_em", "EM with one class fewer", _smaller_fit, after=("em",)))
register_need(Need("lmr", "LMR", _lmr, side_by_side=False))
register_need(Need("blrt", "BLRT", _blrt, side_by_side=False))
register_need(Need("ais", "AIS", _ais, after=()))
register_need(Need("smc", "SMC", _smc, after=()))
register_need(Need("laplace", "Laplace", _laplace, after=()))
register_need(Need("chib", "Chib", _chib, after=()))
