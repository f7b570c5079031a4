"""The result of :func:`lcbayes.vbem`: the lower bound ``F``, its alias correction, the Dirichlet
posteriors, and a lossless JSON form.

Example::

    vb = lcb.vbem(lcb.latent_class(data, 3), data, seed=0)
    vb.elbo, vb.elbo_corrected, vb.to_frame()
    same = lcb.VBResult.from_dict(json.loads(json.dumps(vb.to_dict())))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..render import json_value, plural, record_from_dict
from .run_record import RunRecord

__all__ = ["DirichletPosterior", "VBResult"]


class DirichletPosterior:
    """What a VB fit reads from its bound and its Dirichlet posterior (``elbo``,
    ``log_alias`` and ``posterior``, ``{node: alpha}``), in memory or streamed."""

    elbo: float
    log_alias: float
    posterior: dict[str, np.ndarray]

    @property
    def elbo_corrected(self) -> float:
        """``elbo + log_alias`` (Beal & Ghahramani's "VB" score; ``elbo`` is their "VB*")."""
        return self.elbo + self.log_alias

    @property
    def posterior_mean(self) -> dict[str, np.ndarray]:
        """``E[theta] = alpha / alpha_0`` per node."""
        return {k: a / a.sum(axis=-1, keepdims=True) for k, a in self.posterior.items()}

    @property
    def estimate(self) -> dict[str, np.ndarray]:
        """The point estimate shown by ``summary()``: :attr:`posterior_mean`."""
        return self.posterior_mean


@dataclass(frozen=True, repr=False)
class VBResult(DirichletPosterior, RunRecord):
    """Outcome of :func:`lcbayes.vbem`: the best restart's bound and Dirichlet posteriors.

    Attributes:
        elbo: the variational lower bound ``F`` on ``ln p(y | m)`` (natural log).
        log_alias: ``ln S``, the label-symmetry correction (:mod:`lcbayes.alias`).
        posterior: ``{node: alpha}``, the Dirichlet posterior parameters (CPT-shaped).
        prior: ``{node: lambda}``, the prior pseudo-counts.
        restart_elbos: the bound reached by every restart.

    ``hidden_posteriors`` are the VBE posteriors per pattern and ``history`` the bound after
    every VBE step of the best restart (:class:`~lcbayes.engines.run_record.RunRecord`);
    :meth:`predict_proba` classifies new rows the same way, with the sub-normalised tables
    ``exp E[ln theta]`` (Beal & Ghahramani eq. 60).
    """

    elbo: float
    log_alias: float
    posterior: dict[str, np.ndarray]
    prior: dict[str, np.ndarray]
    restart_elbos: np.ndarray

    def _log_tables(self) -> tuple[np.ndarray, ...]:
        """``E[ln theta] = psi(alpha) - psi(alpha_0)`` per node, ``(q_i, r_i)``."""
        from scipy.special import digamma  # loaded on use, not when a command starts

        s = self.structure
        out = []
        for i, name in enumerate(s.nodes):
            alpha = np.asarray(self.posterior[name]).reshape(s.n_configs(i), -1)
            out.append(digamma(alpha) - digamma(alpha.sum(axis=-1, keepdims=True)))
        return tuple(out)

    def to_frame(self) -> pd.DataFrame:
        """The Dirichlet posteriors as a long table: ``node``, ``parents``, ``category``,
        ``mean`` (``alpha / alpha_0``), ``sd`` (of the Dirichlet marginal), ``alpha`` and
        ``prior`` (``lambda``), one row per CPT entry."""
        sd = {}
        for name, alpha in self.posterior.items():
            total = alpha.sum(axis=-1, keepdims=True)
            mean = alpha / total
            sd[name] = np.sqrt(mean * (1.0 - mean) / (total + 1.0))
        return self._frame({"mean": self.posterior_mean, "sd": sd, "alpha": self.posterior,
                            "prior": self.prior})

    def to_dict(self) -> dict:
        """Everything as JSON-ready values (the command line prints this with ``--json``);
        :meth:`from_dict` reads it back. Non-finite numbers are ``None``."""
        return json_value({
            "method": "vbem",
            **self._run_dict(),
            "elbo": self.elbo,
            "log_alias": self.log_alias,
            "elbo_corrected": self.elbo_corrected,
            "restart_elbos": self.restart_elbos,
            "posterior": self.posterior,
            "posterior_mean": self.posterior_mean,
            "prior": self.prior,
        })

    @classmethod
    def from_dict(cls, spec: dict) -> VBResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        return record_from_dict(cls, spec)

    def summary(self) -> str:
        """A short printout: the bound, its correction and the posterior means (classes
        numbered from 1, as :meth:`lcbayes.EMResult.summary` numbers them)."""
        s = self.structure
        model = (f"latent class model, {plural(s.n_classes, 'class', 'classes')}"
                 if s.n_classes is not None else s.kind)  # None unless a latent class model
        lines = [
            f"VBEM ({model}; {self.n_parameters} parameters, "
            f"{plural(self.n_observed_rows, 'observed row')}, "
            f"{plural(self.n_patterns, 'pattern')})",
            f"  lower bound F      {self.elbo:14.4f}",
            f"  ln S (aliases)     {self.log_alias:14.4f}",
            f"  F + ln S           {self.elbo_corrected:14.4f}",
            f"  {plural(self.n_iter, 'iteration')}, converged {self.converged}, "
            f"{plural(self.restarts, 'restart')}: "
            + ", ".join(f"{v:.4f}" for v in self.restart_elbos),
            "",
            *self.estimate_lines(" (posterior means)"),
        ]
        return "\n".join(lines).rstrip("\n")

    def __repr__(self) -> str:
        return (f"VBResult(kind={self.structure.kind!r}, elbo={self.elbo:.4f}, "
                f"log_alias={self.log_alias:.4f}, n_iter={self.n_iter}, "
                f"converged={self.converged}, restarts={self.restarts})")
