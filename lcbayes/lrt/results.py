"""The results of the likelihood-ratio tests (:class:`BLRTResult`, :class:`LMRResult`) and the
checks of the EM fits the tests take (:func:`check_fit`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..engines.em import EMResult
from ..errors import ArgumentError, ArgumentTypeError
from ..render import json_value

__all__ = ["BLRTResult", "LMRResult", "check_fit"]


@dataclass(frozen=True)
class _Result:
    def to_dict(self) -> dict:
        """Every field as JSON-ready values (non-finite numbers become ``None``)."""
        return json_value({"method": self.method, **{f.name: getattr(self, f.name)
                                                     for f in fields(self)}})


@dataclass(frozen=True)
class BLRTResult(_Result):
    """Outcome of :func:`blrt` (module docstring); ``*_null`` is the K-1 model, ``*_alt`` K."""

    k: int
    loglik_null: float
    loglik_alt: float
    lr: float
    p_value: float
    p_value_stderr: float
    p_value_interval: tuple[float, float]  # Clopper-Pearson 99% of the exceedance probability
    alpha: float
    replicates: int
    replicates_used: int
    stopped_early: bool
    n_exceed: int
    n_failed: int  # replicates whose best refit (either model) hit max_iter unconverged
    replicate_lr: np.ndarray
    replicate_loglik_null: np.ndarray
    replicate_loglik_alt: np.ndarray
    restarts: int
    n_parameters_null: int
    n_parameters_alt: int
    n_rows: int
    seconds: float
    seed: int | tuple[int, ...]
    method = "blrt"

    @property
    def reject(self) -> bool:
        """Whether K classes are preferred to K-1 at level ``alpha``."""
        return self.p_value < self.alpha

    def summary(self) -> str:
        stop = " (stopped early)" if self.stopped_early else ""
        return "\n".join([
            f"Bootstrap likelihood-ratio test: {self.k - 1} vs {self.k} classes",
            f"  log-likelihoods {self.loglik_null:.4f} ({self.n_parameters_null} parameters), "
            f"{self.loglik_alt:.4f} ({self.n_parameters_alt} parameters)",
            f"  LR = 2 (L_K - L_K-1) = {self.lr:.4f}",
            f"  replicates {self.replicates_used} of {self.replicates}{stop}, {self.restarts} "
            f"restarts each; {self.n_exceed} with LR_b >= LR; {self.n_failed} not converged",
            f"  p = {self.p_value:.4f} (MC s.e. {self.p_value_stderr:.4f}); "
            f"{'reject' if self.reject else 'keep'} {self.k - 1} classes at alpha = "
            f"{self.alpha:g}; {self.seconds:.1f} s"])


@dataclass(frozen=True)
class LMRResult(_Result):
    """Outcome of :func:`lmr` (module docstring): ``weights`` are the eigenvalues ``lambda``."""

    k: int
    loglik_null: float
    loglik_alt: float
    lr: float
    lr_adjusted: float
    df: int
    n: int
    p_value: float
    p_value_unadjusted: float
    p_value_chi2: float
    weights: np.ndarray
    n_parameters_null: int
    n_parameters_alt: int
    method = "lmr"

    def summary(self) -> str:
        return "\n".join([
            f"Lo-Mendell-Rubin test: {self.k - 1} vs {self.k} classes (n = {self.n})",
            f"  VLMR: LR = {self.lr:.4f}, p = {self.p_value_unadjusted:.4f}",
            f"  adjusted LMR: LR* = {self.lr_adjusted:.4f}, p = {self.p_value:.4f} "
            f"(chi-square({self.df}) reference: p = {self.p_value_chi2:.4f})"])


def check_fit(fit, name: str, data=None) -> EMResult:
    """``fit`` if it is a converged maximum-likelihood EM fit of a latent class model (of
    ``data``'s rows, when given); else a clear error naming ``name``."""
    if not isinstance(fit, EMResult):
        raise ArgumentTypeError(f"{name} must be an EM fit (lcb.em), got {type(fit).__name__}")
    if fit.structure.kind != "latent_class":
        raise ArgumentError(f"{name} must be a latent class model, got a {fit.structure.kind} "
                            "structure")
    if fit.estimator != "ml":
        raise ArgumentError(f"{name} is a MAP fit; likelihood-ratio tests need maximum "
                            "likelihood fits (prior=None)")
    if not fit.converged:
        raise ArgumentError(f"{name}: EM did not converge (after {fit.n_iter} iterations); "
                            "refit with a larger max_iter or more restarts")
    if data is not None and data.n_rows != fit.n_rows:
        raise ArgumentError(f"{name} was fitted to {fit.n_rows} rows but data has "
                            f"{data.n_rows}")
    return fit
