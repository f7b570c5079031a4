"""The results of the streaming engines: :class:`StreamEMResult` (:func:`lcbayes.stream_em`,
:func:`lcbayes.stepwise_em`) and :class:`StreamVBResult` (:func:`lcbayes.stream_vbem`).

They hold what a fit on data bigger than memory can hold: the estimate, the objective after
every pass, the scores, the counts of passes and rows, but no per-row or per-pattern arrays
(:class:`~lcbayes.EMResult` keeps each pattern's posteriors; here the patterns never sit in
memory together). ``params`` is a ``{node: CPT}`` mapping like ``EMResult.params``, so
``lcb.em(structure, data, init=fit.params)`` continues a streamed fit in memory.

Example::

    fit = lcb.stream_em(structure, blocks, seed=0)
    print(fit.summary())
    same = lcb.StreamEMResult.from_dict(json.loads(json.dumps(fit.to_dict())))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ..engines.em_result import PenalisedScores
from ..engines.run_record import EstimateRecord
from ..engines.vb_result import DirichletPosterior
from ..render import json_value, plural, record_from_dict

__all__ = ["StreamEMResult", "StreamRecord", "StreamVBResult"]


@dataclass(frozen=True, repr=False)
class StreamRecord(EstimateRecord):
    """What every streamed fit records.

    Attributes:
        structure: the model fitted.
        history: the best restart's objective at the start of every iteration (one pass over
            the data each; never decreasing for EM and VBEM).
        n_iter, converged: its iterations and whether the objective changed by less than
            ``tol`` per observed row.
        n_passes: passes over the data in all (every restart runs in the same passes; the
            random starts, a stepwise pass and the final evaluation count one each).
        restart_objectives, restart_n_iter, restart_converged: per restart.
        n_rows, n_observed_rows, n_blocks: rows, rows with an observed value, blocks read per
            pass.
        seconds, seed, restarts, tol, max_iter: wall time and settings (``seed`` is the
            integer given, or the words of the ``jax.random`` key).
    """

    history: np.ndarray
    n_iter: int
    converged: bool
    n_passes: int
    restart_objectives: np.ndarray
    restart_n_iter: np.ndarray
    restart_converged: np.ndarray
    n_rows: int
    n_observed_rows: int
    n_blocks: int
    seconds: float
    seed: int | tuple[int, ...]
    restarts: int
    tol: float
    max_iter: int

    def to_frame(self) -> pd.DataFrame:
        """The estimate as a long table (``node``, ``parents``, ``category``, ``value``)."""
        return self._frame({"value": self.estimate})

    def _record_dict(self) -> dict:
        return {
            "kind": self.structure.kind, "structure": self.structure.to_dict(),
            "n_classes": self.n_classes, "n_parameters": self.n_parameters,
            **{name: getattr(self, name) for name in (
                "history", "n_iter", "converged", "n_passes", "restart_objectives",
                "restart_n_iter", "restart_converged", "n_rows", "n_observed_rows", "n_blocks",
                "seconds", "seed", "restarts", "tol", "max_iter")},
        }

    def _run_lines(self, name: str) -> list[str]:
        status = "converged" if self.converged else "NOT converged (raise max_iter)"
        missing = self.n_rows - self.n_observed_rows
        return [
            "=========================================================",
            f"number of rows: {self.n_rows} in {plural(self.n_blocks, 'block')}"
            + (f" ({missing} fully missing)" if missing else ""),
            f"number of estimated parameters: {self.n_parameters}",
            f"{name}: {status} after {plural(self.n_iter, 'iteration')}, "
            f"{plural(self.n_passes, 'pass', 'passes')} over the data; "
            f"{plural(self.restarts, 'restart')}; {self.seconds:.2f} s",
        ]

    def _head(self) -> str:
        s = self.structure
        if s.kind == "latent_class":
            assert s.n_classes is not None  # a latent class structure has a number of classes
            return (f"Latent class model: {plural(s.n_classes, 'class', 'classes')}, "
                    f"{plural(len(s.observed_nodes), 'item')}")
        return (f"{s.kind.upper()} model: {len(s.hidden_nodes)} hidden, "
                f"{len(s.observed_nodes)} observed nodes")


@dataclass(frozen=True, repr=False)
class StreamEMResult(PenalisedScores, StreamRecord):
    """Outcome of :func:`lcbayes.stream_em` or :func:`lcbayes.stepwise_em`.

    Attributes:
        params: ``{node: CPT}``, the ML or MAP estimate (latent class models: classes by
            decreasing share).
        loglik, objective: ``ln p(y | params)`` and the objective (plus the prior term, MAP).
        estimator, map_basis: ``"ml"`` or ``"map"``; the MAP basis.
        entropy: the summed posterior entropy of the hidden nodes (ICL).
        expected_counts: ``{node: counts}``, the E step's family counts at the estimate.
        method: ``"em"`` (exact passes) or ``"stepwise"``.
        warm_start: ``"stepwise"`` if stepwise passes preceded the exact ones, else ``None``.
        settings: the stepwise settings (``alpha``, ``batch_rows``, ``passes``), if any.
    """

    params: dict[str, np.ndarray]
    loglik: float
    objective: float
    estimator: Literal["ml", "map"]
    map_basis: str | None
    entropy: float
    expected_counts: dict[str, np.ndarray]
    method: str = "em"
    warm_start: str | None = None
    settings: dict | None = None

    @property
    def estimate(self) -> dict[str, np.ndarray]:
        return self.params

    def to_dict(self) -> dict:
        """Everything as JSON-ready values; :meth:`from_dict` reads it back."""
        return json_value({
            "method": self.method, **self._record_dict(), "loglik": self.loglik,
            "objective": self.objective, "estimator": self.estimator,
            "map_basis": self.map_basis, "bic": self.bic, "aic": self.aic, "icl": self.icl,
            "entropy": self.entropy, "params": self.params,
            "expected_counts": self.expected_counts, "warm_start": self.warm_start,
            "settings": self.settings, "class_weights": self.class_weights,
        })

    @classmethod
    def from_dict(cls, spec: dict) -> StreamEMResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        return record_from_dict(cls, spec)

    def summary(self) -> str:
        """A poLCA-style printout: estimate, fit statistics, passes."""
        estimator = ("maximum likelihood" if self.estimator == "ml"
                     else f"MAP ({self.map_basis} basis)")
        name = ("stepwise EM" if self.method == "stepwise"
                else "EM over blocks" + (" after stepwise EM" if self.warm_start else ""))
        return "\n".join([
            f"{self._head()}, {estimator} by {name}", "", *self.estimate_lines(),
            *self._run_lines(name)[:3],
            f"log-likelihood: {self.loglik:.4f}",
            f"BIC (loglik - d/2 ln N): {self.bic:.4f}   [poLCA scale: {-2 * self.bic:.4f}]",
            f"AIC (loglik - d): {self.aic:.4f}   [poLCA scale: {-2 * self.aic:.4f}]",
            f"ICL (BIC - entropy): {self.icl:.4f}",
            self._run_lines(name)[3]])

    def __repr__(self) -> str:
        return (f"StreamEMResult(kind={self.structure.kind!r}, loglik={self.loglik:.4f}, "
                f"bic={self.bic:.4f}, n_passes={self.n_passes}, converged={self.converged})")


@dataclass(frozen=True, repr=False)
class StreamVBResult(DirichletPosterior, StreamRecord):
    """Outcome of :func:`lcbayes.stream_vbem`.

    Attributes:
        elbo: the lower bound ``F`` on ``ln p(y | m)`` (Beal & Ghahramani eq. 52).
        log_alias: ``ln S``, the label-symmetry correction.
        posterior, prior: ``{node: alpha}`` and ``{node: lambda}``, CPT-shaped.
    """

    elbo: float
    log_alias: float
    posterior: dict[str, np.ndarray]
    prior: dict[str, np.ndarray]

    def to_dict(self) -> dict:
        """Everything as JSON-ready values; :meth:`from_dict` reads it back."""
        return json_value({"method": "vbem", **self._record_dict(), "elbo": self.elbo,
                           "log_alias": self.log_alias, "elbo_corrected": self.elbo_corrected,
                           "posterior": self.posterior, "prior": self.prior})

    @classmethod
    def from_dict(cls, spec: dict) -> StreamVBResult:
        """The result of :meth:`to_dict`."""
        return record_from_dict(cls, spec)

    def summary(self) -> str:
        """Posterior means, the bound and the passes."""
        name = "VBEM over blocks"
        return "\n".join([f"{self._head()}, variational Bayes by {name}", "",
                          *self.estimate_lines(" (posterior means)"),
                          *self._run_lines(name)[:3],
                          f"lower bound F: {self.elbo:.4f} (+ ln S = "
                          f"{self.elbo_corrected:.4f})", self._run_lines(name)[3]])

    def __repr__(self) -> str:
        return (f"StreamVBResult(kind={self.structure.kind!r}, elbo={self.elbo:.4f}, "
                f"n_passes={self.n_passes}, converged={self.converged})")
