"""The results of the likelihood-ratio tests (:class:`BLRTResult`, :class:`LMRResult`) and the
checks of the EM fits the tests take (:func:`check_fit`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ..engines.em import EMResult
from ..errors import ArgumentError, ArgumentTypeError
from ..render import JSONRecord, record_dict

__all__ = ["BLRTResult", "LMRResult", "check_fit"]


@dataclass(frozen=True)
class _Result(JSONRecord):
    method: ClassVar[str]  # the test, set by each result class

    def to_dict(self) -> dict:
        """Every field as JSON-ready values (non-finite numbers become ``None``), after
        ``method``; :meth:`from_dict` reads it back."""
        return record_dict(self, method=self.method)


@dataclass(frozen=True)
class BLRTResult(_Result):
    """Outcome of :func:`blrt` (module docstring); ``*_null`` is the K-1 model, ``*_alt`` K."""

    n_classes: int
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

    def to_frame(self) -> pd.DataFrame:
        """One row per bootstrap replicate used: ``replicate``, ``lr``, ``loglik_null``,
        ``loglik_alt`` and ``exceeds`` (``lr >= LR``, counted in the p-value)."""
        return pd.DataFrame({"replicate": np.arange(len(self.replicate_lr)),
                             "lr": self.replicate_lr, "loglik_null": self.replicate_loglik_null,
                             "loglik_alt": self.replicate_loglik_alt,
                             "exceeds": self.replicate_lr >= self.lr})

    def summary(self) -> str:
        stop = " (stopped early)" if self.stopped_early else ""
        return "\n".join([
            f"Bootstrap likelihood-ratio test: {self.n_classes - 1} vs {self.n_classes} classes",
            f"  log-likelihoods {self.loglik_null:.4f} ({self.n_parameters_null} parameters), "
            f"{self.loglik_alt:.4f} ({self.n_parameters_alt} parameters)",
            f"  LR = 2 (L_K - L_K-1) = {self.lr:.4f}",
            f"  replicates {self.replicates_used} of {self.replicates}{stop}, {self.restarts} "
            f"restarts each; {self.n_exceed} with LR_b >= LR; {self.n_failed} not converged",
            f"  p = {self.p_value:.4f} (MC s.e. {self.p_value_stderr:.4f}); "
            f"{'reject' if self.reject else 'keep'} {self.n_classes - 1} classes at alpha = "
            f"{self.alpha:g}; {self.seconds:.1f} s"])


@dataclass(frozen=True)
class LMRResult(_Result):
    """Outcome of :func:`lmr` (module docstring): ``weights`` are the eigenvalues ``lambda``."""

    n_classes: int
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
            f"Lo-Mendell-Rubin test: {self.n_classes - 1} vs {self.n_classes} classes "
            f"(n = {self.n})",
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
