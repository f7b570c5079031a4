"""The engine runs behind the comparison's methods (registry :class:`~.registry.Need`), run once
per candidate in this order: the exact evidence (where small enough), the effective dimension,
one maximum-likelihood EM fit, VBEM, AIS.

Each runs with the comparison's ``seed`` (and ``restarts`` where it has them) and the options
``engine_options[name]`` gives it (:mod:`.engine_options`; the engines' defaults otherwise):

* ``exact``: :func:`lcbayes.exact_evidence`; a problem above ``max_terms`` gives no result and
  a note (or stops the comparison when ``exact=True``).
* ``effective_dimension``: :func:`lcbayes.effective_dimension` (seed 0), for ``d_e``.
* ``em``: :func:`lcbayes.em`; provides ``loglik``.
* ``classification``: :func:`lcbayes.classification_quality` of the EM fit (latent class
  models; ``None`` otherwise).
* ``smaller_em``: the EM fit of the latent class model with one class fewer (EM's options),
  the null model of ``lmr`` (:func:`lcbayes.lmr`) and ``blrt`` (:func:`lcbayes.blrt`; both
  reuse the two fits).
* ``vbem``: :func:`lcbayes.vbem`, the best of ``restarts`` prior-draw starts and, when the EM
  fit exists, one more started from it (so ``elbo >= cs``, Beal & Ghahramani Corollary 6.2),
  all in one call.
* ``ais``: :func:`lcbayes.ais`.
* ``smc``: :func:`lcbayes.smc` (reference-tempered SMC for latent class candidates, the
  particle filter over the rows for HLC trees and DAGs) with the candidate's share of
  ``time_limit``; ``None`` for a structure with more than ``MAX_ENUMERATED_STATES`` joint
  hidden states.
* ``bridge``: :func:`lcbayes.bridge_sampling` (latent class candidates; ``None`` otherwise),
  the second, independent estimate beside ``smc``.
* ``laplace``: :func:`lcbayes.laplace` (Whiley §4.3: the MAP fit in the softmax basis,
  Dirichlet(1) prior), every variant from one Hessian.
* ``chib``: :func:`lcbayes.chib` (Whiley §4.2), for latent class candidates of at most 12
  classes (``None`` otherwise).
* ``loo``: Gibbs draws of the candidate and their PSIS-LOO
  (:func:`lcbayes.checking.loo.sampled_loo`).

EM, VBEM, SMC and bridge sampling (up to :data:`SMC_PADDING_ROWS` rows) and AIS (``"rw"``
kernel) run latent class candidates with ``pad_classes`` (the largest number of classes among them,
:mod:`lcbayes.engines.padding`), so each compiles once for all of them.

:class:`CandidateFits` hands a candidate's results to the methods' ``values``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..checking.loo import sampled_loo
from ..constructors import latent_class
from ..dimension import effective_dimension
from ..engines.ais import ais
from ..engines.em import em
from ..engines.exact import exact_evidence
from ..engines.laplace import laplace
from ..engines.vbem import vbem
from ..indices import classification_quality
from ..lrt import blrt, lmr
from ..samplers.chib import MAX_CLASSES, chib
from ..samplers.gibbs_bridge import bridge_sampling
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


def _no_options() -> None:
    """The engine of a need that takes no options (``smaller_em`` takes EM's)."""


def _options(settings, name: str) -> dict:
    """The options of need ``name`` (``engine_options[name]`` over the comparison's defaults)."""
    return settings["options"].get(name, {})


def _exact(structure, data, settings, fits):
    return exact_evidence(structure, data, **_options(settings, "exact"))


def _effective_dimension(structure, data, settings, fits):
    return effective_dimension(structure, **_options(settings, "effective_dimension"))


def _padding(structure, settings) -> dict:
    """``pad_classes`` for the engines when the comparison pads latent class models."""
    pad = settings.get("pad_classes")
    return {} if pad is None or structure.kind != "latent_class" else {"pad_classes": pad}


def _em(structure, data, settings, fits):
    return em(structure, data, restarts=settings["restarts"], seed=settings["seed"],
              **_options(settings, "em"), **_padding(structure, settings))


def _vbem(structure, data, settings, fits):
    # with an EM fit, one more start from it (Corollary 6.2: F >= CS)
    return vbem(structure, data, restarts=settings["restarts"], seed=settings["seed"],
                init=fits.get("em"), **_options(settings, "vbem"),
                **_padding(structure, settings))


def _classification(structure, data, settings, fits):
    fit = fits.get("em")
    if fit is None or structure.kind != "latent_class":
        return None
    return classification_quality(structure, fit.params, data)


def _smaller_fit(structure, data, settings, fits):
    """The ML EM fit of the latent class model with one class fewer (the null model of the
    likelihood-ratio tests; EM's options), or ``None``."""
    if fits.get("em") is None or structure.kind != "latent_class" or structure.n_classes < 2:
        return None
    smaller = latent_class(data, structure.n_classes - 1, name=structure.nodes[structure.root])
    return em(smaller, data, restarts=settings["restarts"], seed=settings["seed"],
              **_options(settings, "em"), **_padding(smaller, settings))


def _lmr(structure, data, settings, fits):
    null = fits.get("smaller_em")
    return None if null is None else lmr(null, fits.get("em"), data)


def _blrt(structure, data, settings, fits):
    null = fits.get("smaller_em")
    if null is None:
        return None
    return blrt(data, structure.n_classes, seed=settings["seed"], fits=(null, fits.get("em")),
                **_options(settings, "blrt"))


def _ais(structure, data, settings, fits):
    options = _options(settings, "ais")
    padding = _padding(structure, settings) if options.get("kernel", "rw") == "rw" else {}
    return ais(structure, data, seed=settings["seed"], progress=settings["progress"],
               **options, **padding)


#: ``smc`` runs latent class candidates inside the largest (one compiled program) up to this
#: many rows; beyond, its cost grows with the class slots faster than compiling once per K costs.
SMC_PADDING_ROWS = 1000


def _smc(structure, data, settings, fits):
    if structure.n_enumerated_states > MAX_ENUMERATED_STATES:
        return None
    padding = (_padding(structure, settings)
               if structure.kind == "latent_class" and data.n_rows <= SMC_PADDING_ROWS else {})
    return smc(structure, data, time_limit=settings["smc_time_limit"], seed=settings["seed"],
               **_options(settings, "smc"), **padding)


def _bridge(structure, data, settings, fits):
    if structure.kind != "latent_class":
        return None
    padding = _padding(structure, settings) if data.n_rows <= SMC_PADDING_ROWS else {}
    return bridge_sampling(structure, data, seed=settings["seed"],
                           **_options(settings, "bridge"), **padding)


def _laplace(structure, data, settings, fits):
    return laplace(structure, data, restarts=settings["restarts"], seed=settings["seed"],
                   **_options(settings, "laplace"))


def _loo(structure, data, settings, fits):
    return sampled_loo(structure, data, seed=settings["seed"], **_options(settings, "loo"))


def _chib(structure, data, settings, fits):
    if structure.kind != "latent_class" or structure.n_classes > MAX_CLASSES:
        return None
    return chib(structure, data, restarts=settings["restarts"], seed=settings["seed"],
                **_options(settings, "chib"))


register_need(Need("exact", "exact", _exact, too_large=True, after=(),
                   engine=exact_evidence))
register_need(Need("effective_dimension", "effective dimension", _effective_dimension,
                   after=(), engine=effective_dimension))
register_need(Need("em", "EM", _em, columns=(Column("loglik", "loglik"),),
                   values=lambda fit: {"loglik": fit.loglik}, after=(), engine=em))
register_need(Need("vbem", "VBEM", _vbem, after=("em",), engine=vbem))
register_need(Need("classification", "classification", _classification, after=("em",),
                   engine=_no_options))
register_need(Need("smaller_em", "EM with one class fewer", _smaller_fit, after=("em",),
                   engine=_no_options))
register_need(Need("lmr", "LMR", _lmr, side_by_side=False, engine=_no_options))
register_need(Need("blrt", "BLRT", _blrt, side_by_side=False, engine=blrt))
register_need(Need("ais", "AIS", _ais, after=(), engine=ais))
register_need(Need("smc", "SMC", _smc, after=(), engine=smc))
register_need(Need("bridge", "bridge sampling", _bridge, optional=True, after=(),
                   engine=bridge_sampling))
register_need(Need("laplace", "Laplace", _laplace, after=(), engine=laplace))
register_need(Need("chib", "Chib", _chib, after=(), engine=chib))
register_need(Need("loo", "LOO", _loo, after=(), engine=sampled_loo))
