"""Results of the samplers: posterior draws of a latent class model, with the same contract as
every other engine's result (frozen; ``to_dict``/``from_dict``, ``to_frame``, ``summary``,
``predict_proba``) plus ``to_inference_data`` for ArviZ.

* :class:`GibbsResult` (:func:`lcbayes.gibbs`): draws at a fixed number of classes.
* :class:`RJMCMCResult` (:func:`lcbayes.rjmcmc`): draws over the number of classes ``K`` too,
  with :attr:`~RJMCMCResult.posterior_k`, the acceptance rates of the moves and
  :attr:`~RJMCMCResult.k_mixing`, whether the chains mixed between numbers of classes
  (:class:`KMixingResult`; :meth:`~RJMCMCResult.mixing_warning` words the advice when they did not).

The draws are stored as an ArviZ ``InferenceData`` (the contract of
:mod:`lcbayes.samplers.idata`). Class labels switch between chains and draws, so per-class
quantities are only meaningful after relabelling (:func:`lcbayes.relabel`);
:meth:`SamplerResult.predict_proba` relabels first and then averages the class membership
probabilities of new rows over the draws (Whiley §5.3; Stephens 2000).

Example::

    res = lcb.rjmcmc(data, max_classes=6, seed=0)
    res.posterior_k, res.acceptance
    res.mixing_warning()                              # None, or what to do about poor mixing
    az.summary(res.to_inference_data(), var_names=["k"])
    res.predict_proba(new_rows)                       # draws with the most visited K
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd

from ..data import Dataset
from ..errors import ArgumentError, LcbayesError
from ..render import json_value
from ..structure import Structure
from ..validation import check_choice, data_for
from .idata import (
    inference_data_from_dict,
    inference_data_to_dict,
    item_columns,
    k_shares,
    settings_from_json,
)
from .kmixing import MAX_SUGGESTED_DRAWS, KMixingResult, KMixingWarning, k_mixing
from .pointwise import with_log_likelihood
from .relabelling import METHODS, allocation_probabilities, relabel

if TYPE_CHECKING:
    import arviz as az

__all__ = [
    "MAX_SUGGESTED_DRAWS",
    "GibbsResult",
    "KMixingResult",
    "KMixingWarning",
    "RJMCMCResult",
    "SamplerResult",
    "finish_k_run",
    "k_mixing",
]

#: Draws whose membership probabilities are computed at once in :meth:`predict_proba`.
_DRAW_CHUNK = 2048

_Run = TypeVar("_Run", bound="RJMCMCResult")



@dataclass(frozen=True, repr=False, eq=False)
class SamplerResult:
    """Posterior draws of a latent class model (base of :class:`GibbsResult` and
    :class:`RJMCMCResult`).

    Attributes:
        idata: the draws (:mod:`lcbayes.samplers.idata`); ``to_inference_data()`` returns it.
        structure: the latent class structure of the data's columns with the largest number of
            classes the draws hold (``K`` for Gibbs, ``max_classes`` for RJMCMC).
        settings: the run's arguments (draws, warmup, chains, thin, seed, ...).
        seconds: wall time of the run, compiling included.
    """

    idata: az.InferenceData
    structure: Structure
    settings: dict
    seconds: float

    engine = "sampler"

    def to_inference_data(self) -> az.InferenceData:
        """The draws as an ArviZ ``InferenceData`` (posterior, sample_stats, observed_data)."""
        return self.idata

    @property
    def posterior(self):
        """The ``posterior`` group of the draws (an ``xarray.Dataset``)."""
        return self.idata.posterior

    @property
    def n_chains(self) -> int:
        return int(self.idata["posterior"].sizes["chain"])

    @property
    def n_draws(self) -> int:
        return int(self.idata["posterior"].sizes["draw"])

    # ------------------------------------------------------------------ new rows
    def _draws_for(self, k: int | None, relabel_method: str):
        """Relabelled ``(weights (S, K), thetas per item (S, K, L))`` of the draws used to
        classify rows."""
        check_choice(relabel_method, "relabel_method", METHODS)
        relabelled = relabel(self.idata, method=relabel_method, n_classes=k,
                             chains="flatten" if k is not None else "keep").idata
        post = relabelled["posterior"]

        def flat(name: str) -> np.ndarray:
            values = post[name].transpose("chain", "draw", "class", ...).values
            return values.reshape(-1, *values.shape[2:]).astype(float)

        return flat("class_weights"), [flat(f"theta_{c}") for c in item_columns(relabelled)]

    def _default_k(self, k: int | None) -> int | None:
        return k

    def predict_proba(self, data, *, n_classes: int | None = None,
                      relabel_method: str = "stephens") -> np.ndarray:
        """``(n_rows, K)`` posterior probabilities of each row's class for the rows of
        ``data`` (a Dataset, a DataFrame with the model's columns, or an array of their codes),
        averaged over the draws after relabelling them (``relabel_method``, a
        :data:`lcbayes.samplers.relabelling.METHODS` name). Missing values are summed out.
        Reversible jump draws: those with ``n_classes`` classes (default: the most visited)."""
        if self.structure.kind != "latent_class":
            raise LcbayesError(f"predict_proba relabels latent class draws; this is a "
                               f"{self.structure.kind} model: average its hidden posteriors "
                               "over the draws (lcbayes.inference.hidden_posteriors)")
        k = self._default_k(n_classes)
        data = data_for(self.structure, data)
        weights, thetas = self._draws_for(k, relabel_method)
        patterns = np.asarray(data.patterns)
        total = np.zeros((patterns.shape[0], weights.shape[1]))
        for start in range(0, weights.shape[0], _DRAW_CHUNK):
            part = slice(start, start + _DRAW_CHUNK)
            total += allocation_probabilities(weights[part], [t[part] for t in thetas],
                                              patterns).sum(axis=1)
        return (total / weights.shape[0])[data.pattern_index]

    def predict(self, data, *, n_classes: int | None = None,
                relabel_method: str = "stephens") -> np.ndarray:
        """``(n_rows,)`` the most probable class (index into :meth:`predict_proba`'s columns;
        classes are numbered from 0 here, so class ``c`` of the draws is ``c - 1``) of every
        row of ``data``."""
        return np.argmax(self.predict_proba(data, n_classes=n_classes,
                                            relabel_method=relabel_method), axis=1)

    # ------------------------------------------------------------------ tables and JSON
    def to_frame(self) -> pd.DataFrame:
        """One row per draw: ``chain``, ``draw``, the sample statistics (``log_likelihood``,
        ``log_joint``, ...), ``k`` (reversible jump) and every scalar parameter, named as
        ``az.summary`` names them, classes numbered from 1 (``class_weights[1]``,
        ``theta_A[2, yes]``); NaN in the class slots a draw does not use."""
        post, stats = self.idata["posterior"], self.idata["sample_stats"]
        chains, draws = np.indices((self.n_chains, self.n_draws))
        columns = {"chain": chains.ravel(), "draw": draws.ravel()}
        for stat in ("log_likelihood", "log_joint"):
            columns[stat] = stats[stat].transpose("chain", "draw").values.ravel()
        for name, var in post.data_vars.items():
            var = var.transpose("chain", "draw", ...)
            labels = [var[d].values for d in var.dims[2:]]
            values = var.values.reshape(self.n_chains * self.n_draws, -1)
            for j, index in enumerate(np.ndindex(*var.shape[2:])):
                inner = ", ".join(str(c[i]) for c, i in zip(labels, index, strict=True))
                columns[f"{name}[{inner}]" if inner else str(name)] = values[:, j]
        return pd.DataFrame(columns)

    def to_dict(self) -> dict:
        """Everything as JSON-ready values (every draw included); :meth:`from_dict` reads it
        back."""
        return json_value({"engine": self.engine, "structure": self.structure.to_dict(),
                           "settings": self.settings, "seconds": self.seconds,
                           "inference_data": inference_data_to_dict(self.idata)})

    @classmethod
    def from_dict(cls, spec: dict) -> SamplerResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        if spec.get("engine") != cls.engine:
            raise ArgumentError(f"{cls.__name__}.from_dict needs the to_dict() of a "
                                f"{cls.engine} result, got engine {spec.get('engine')!r}")
        idata = inference_data_from_dict(spec["inference_data"])
        structure = Structure.from_dict(spec["structure"])
        if idata["posterior"].attrs.get("log_likelihood") == "rows":  # left out of the JSON
            observed = list(structure.observed_nodes)
            data = Dataset.from_codes(np.asarray(idata["observed_data"]["y"].values),
                                      columns=[structure.nodes[i] for i in observed],
                                      labels=[structure.labels[i] for i in observed])
            with_log_likelihood(idata, structure, data)
        return cls(idata=idata, structure=structure,
                   settings=settings_from_json(spec["settings"]),
                   seconds=float(spec["seconds"]))

    def _headline(self) -> str:
        data = self.idata["observed_data"]["y"]
        model = ("a latent class model" if self.structure.kind == "latent_class"
                 else f"an {self.structure.kind.upper()} model" if self.structure.kind == "hlc"
                 else "a DAG model")
        return (f"{self.engine} draws of {model}: {data.sizes['row']} rows x "
                f"{data.sizes['item']} items; {self.n_chains} chains x {self.n_draws} draws "
                f"after {self.settings['warmup']} warm-up sweeps (thin {self.settings['thin']}),"
                f" seed {self.settings['seed']}; {self.seconds:.1f} s")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(chains={self.n_chains}, draws={self.n_draws}, "
                f"structure={self.structure.kind}:{self.structure.n_classes})")


@dataclass(frozen=True, repr=False, eq=False)
class GibbsResult(SamplerResult):
    """Draws of :func:`lcbayes.gibbs` at a fixed number of classes (:class:`SamplerResult`)."""

    engine = "gibbs"

    @property
    def n_classes(self) -> int | None:
        """The number of classes of a latent class model (``None`` for other kinds)."""
        n = self.structure.n_classes
        return None if n is None else int(n)

    def summary(self) -> str:
        """The run, the log-likelihood over the draws and where the per-class summaries are."""
        loglik = self.idata["sample_stats"]["log_likelihood"].values
        spread = (f"log-likelihood over the draws: mean {np.mean(loglik):.3f}, "
                  f"sd {np.std(loglik):.3f}")
        if self.n_classes is None:
            hidden = ", ".join(f"{self.structure.nodes[h]} ({self.structure.cardinalities[h]})"
                               for h in self.structure.hidden_nodes)
            return "\n".join([self._headline(), f"hidden nodes {hidden}; {spread}",
                              "Hidden states may switch labels between chains: compare "
                              "label-free quantities (log_likelihood) across chains."])
        return "\n".join([
            self._headline(),
            f"{self.n_classes} classes; {spread}",
            "Class labels may switch between chains: lcb.diagnostics(result) relabels and "
            "summarises every parameter (R-hat, ESS).",
        ])


@dataclass(frozen=True, repr=False, eq=False)
class RJMCMCResult(SamplerResult):
    """Draws of :func:`lcbayes.rjmcmc` over the number of classes (:class:`SamplerResult`);
    ``k`` in the posterior counts the active classes, which fill the first ``k`` slots."""

    engine = "rjmcmc"

    @property
    def max_classes(self) -> int:
        n_classes = self.structure.n_classes
        assert n_classes is not None  # reversible jump runs on a latent class structure
        return int(n_classes)

    @property
    def posterior_k(self) -> dict[int, float]:
        """``{K: share of draws with K classes}`` for ``K = 1 .. max_classes``."""
        return k_shares(self.idata)

    @property
    def prior_k(self) -> dict[int, float]:
        """``{K: p(K)}``, the prior of the number of classes."""
        return {int(k): float(p) for k, p in json.loads(
            self.idata["posterior"].attrs["prior_k_json"]).items()}

    @property
    def modal_k(self) -> int:
        """The most visited number of classes."""
        post = self.posterior_k
        return max(post, key=post.__getitem__)

    @property
    def acceptance(self) -> dict[str, float | None]:
        """Acceptance rate per move type (``None`` for a move never proposed)."""
        return json.loads(self.idata["posterior"].attrs["acceptance_json"])

    @property
    def k_mixing(self) -> KMixingResult:
        """How well the chains mixed between numbers of classes (:func:`k_mixing`)."""
        return k_mixing(self.idata)

    def mixing_warning(self, *, data_name: str | None = None) -> str | None:
        """``None`` when the chains mixed between numbers of classes, else one line saying
        they did not, with the R-hat and ESS of ``k``, the split/merge acceptance rates, a
        number of draws to rerun with and the alternative of comparing every ``K`` by its
        evidence (:meth:`KMixingResult.warning`; ``data_name`` words it for the command line)."""
        return self.k_mixing.warning(data_name=data_name)

    def _default_k(self, k: int | None) -> int:
        return self.modal_k if k is None else k

    def summary(self) -> str:
        """The run, the posterior of ``K`` and the acceptance rates."""
        lines = [self._headline(), "posterior of the number of classes K:"]
        prior = self.prior_k
        for k, p in self.posterior_k.items():
            lines.append(f"  K = {k:>2}  prior {prior[k]:.3f}  posterior {p:.4f}")
        lines.append("acceptance: " + ", ".join(
            f"{m} {'never proposed' if a is None else f'{a:.4f}'}"
            for m, a in self.acceptance.items()))
        return "\n".join(lines)


def finish_k_run(result: _Run) -> _Run:
    """``result`` (of :func:`lcbayes.rjmcmc` or :func:`lcbayes.allocation_sampler`) with
    ``p(K | y)`` and the seconds recorded in its draws' attributes, after one
    :class:`KMixingWarning` if ``k`` did not mix (raised at the sampler's caller)."""
    result.idata["posterior"].attrs["posterior_k_json"] = json.dumps(result.posterior_k)
    result.idata["posterior"].attrs["seconds"] = result.seconds
    if warning := result.mixing_warning():
        warnings.warn(warning, KMixingWarning, stacklevel=3)
    return result
