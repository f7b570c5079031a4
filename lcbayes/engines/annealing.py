"""What every annealed importance sampler shares: schedules, the estimator and its error, the
result type.

AIS (Neal 2001; Beal & Ghahramani 2006 §3.6, eqs 62-68) moves ``C`` independent chains through
intermediate targets ``f_k(theta) = p(theta) p(y | theta)^tau_k`` for a schedule
``0 = tau_0 < ... < tau_K = 1``. Each chain accumulates the log weight
``ln w_c = sum_k (tau_k - tau_{k-1}) ln p(y | theta_c^(k))``, with ``theta_c^(k)`` the state
after a transition that leaves ``f_{k-1}`` invariant. Every ``w_c`` is an unbiased estimate of
``Z = p(y | m)``, so the estimate is their mean (Beal's ``AIS^(G)``)::

    ln Z_hat = logsumexp_c ln w_c - ln C

**Standard error.** ``stderr`` is the delta-method error of ``ln Z_hat``: with
``W_c = w_c / max w``, ``se = sd(W) / (sqrt(C) mean(W))``, the relative error of the mean of
``C`` i.i.d. weights (``sd`` with ``C - 1`` degrees of freedom). ``stderr_bootstrap`` checks it:
the standard deviation of ``ln Z_hat`` over resamples of the chains (seeded). Both need a few
chains (``C >= 2``) and understate the error when the weights are so skewed that no chain has
visited the bulk of the posterior mass; a low ``ess`` (``(sum w)^2 / sum w^2``, Kong 1992)
warns of that, and so does an AIS estimate below a VBEM lower bound (Beal Table 3). ``ln Z_hat``
is biased downwards (Jensen), by about ``se^2 / 2`` when ``se`` is small.

**No estimate.** With ``ess < NO_ESTIMATE_ESS`` (2) about one chain carries the whole mean:
``ln Z_hat`` is then that chain's weight less ``ln C``, and ``sd(W)`` the spread of weights
that carry nothing, so neither measures ``Z``. :attr:`AISResult.no_estimate` says so and
:attr:`AISResult.reason` says why; ``compare`` then falls back to the next estimate
(flag ``ais_no_estimate``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TypedDict

import numpy as np
import pandas as pd

from ..errors import LcbayesError, shown
from ..render import json_value, plural, record_from_dict

__all__ = [
    "LOW_ESS_FRACTION",
    "NO_ESTIMATE_ESS",
    "AISResult",
    "beal_schedule",
    "geometric_schedule",
    "make_schedule",
    "quarter_means",
    "weight_statistics",
]

#: Bootstrap resamples behind ``stderr_bootstrap``.
BOOTSTRAP_RESAMPLES = 1000

#: An AIS run whose effective number of chains is below this fraction of its chains is flagged
#: (:attr:`AISResult.low_ess`; ``compare``'s ``ais_low_ess``).
LOW_ESS_FRACTION = 0.25

#: An AIS run whose effective number of chains is below this is no estimate
#: (:attr:`AISResult.no_estimate`; ``compare``'s ``ais_no_estimate``): about one chain carries it.
NO_ESTIMATE_ESS = 2.0


def beal_schedule(temperatures: int, e: float = 0.2) -> np.ndarray:
    """Beal & Ghahramani's rational schedule (eq. 69): ``tau(k) = e x / (1 - x + e)`` with
    ``x = k / K``, ``k = 0..K``. Small ``e`` lingers near the prior; the paper uses ``e = 0.2``."""
    if not e > 0:
        raise LcbayesError(f"the schedule parameter e must be > 0, got {e!r}")
    x = np.arange(int(temperatures) + 1) / int(temperatures)
    tau = e * x / (1.0 - x + e)
    tau[-1] = 1.0
    return tau


def geometric_schedule(temperatures: int, start: float = 1e-6) -> np.ndarray:
    """``tau_0 = 0`` then ``K`` temperatures spaced evenly in ``ln tau`` from ``start`` to 1."""
    if not 0 < start < 1:
        raise LcbayesError(f"a geometric schedule needs 0 < start < 1, got {start!r}")
    return np.concatenate([[0.0], np.geomspace(start, 1.0, int(temperatures))])


def make_schedule(schedule: str | np.ndarray, temperatures: int) -> np.ndarray:
    """Resolve a ``schedule=`` argument: ``"beal"`` (eq. 69, ``e = 0.2``), ``"geometric"``,
    ``"linear"`` or an explicit increasing array from 0 to 1 (then ``temperatures`` is
    ignored)."""
    if isinstance(schedule, str):
        if isinstance(temperatures, bool) or not isinstance(temperatures, int | np.integer) \
                or temperatures < 1:
            raise LcbayesError(f"temperatures must be an integer >= 1, got {shown(temperatures)}")
        makers = {"beal": beal_schedule, "geometric": geometric_schedule,
                  "linear": lambda k: np.linspace(0.0, 1.0, int(k) + 1)}
        if schedule not in makers:
            raise LcbayesError(f"schedule must be one of {sorted(makers)} or an array of "
                               f"temperatures, got {schedule!r}")
        return makers[schedule](int(temperatures))
    tau = np.asarray(schedule, dtype=np.float64)
    if (tau.ndim != 1 or tau.size < 2 or tau[0] != 0.0 or tau[-1] != 1.0
            or np.any(np.diff(tau) <= 0)):
        raise LcbayesError("an explicit schedule must be a 1-d array rising strictly from 0 "
                           "to 1")
    return tau


def quarter_means(values) -> np.ndarray:
    """``(4,)`` the mean of ``values`` over each quarter of its first axis (the schedule's
    steps), NaN for a quarter without steps (fewer than four)."""
    return np.array([part.mean() if part.size else np.nan
                     for part in np.array_split(np.asarray(values), 4)])


class WeightStatistics(TypedDict):
    """What :func:`weight_statistics` returns (fields of :class:`AISResult`)."""

    log_evidence: float
    stderr: float
    stderr_bootstrap: float
    ess: float


def weight_statistics(log_weights: np.ndarray, seed: int = 0) -> WeightStatistics:
    """``log_evidence``, ``stderr`` (delta method), ``stderr_bootstrap`` and ``ess`` of the
    chains' log weights (module docstring)."""
    from scipy.special import logsumexp  # loaded on use, not when a command starts
    lw = np.asarray(log_weights, dtype=np.float64)
    n = lw.size
    if not np.all(np.isfinite(lw)):
        bad = int(np.sum(~np.isfinite(lw)))
        raise LcbayesError(f"{bad} of {n} AIS chains have a non-finite log weight; the "
                           "data may be impossible under the prior support")
    log_z = float(logsumexp(lw) - np.log(n))
    w = np.exp(lw - lw.max())
    ess = float(w.sum() ** 2 / (w ** 2).sum())
    if n < 2:
        return {"log_evidence": log_z, "stderr": float("nan"),
                "stderr_bootstrap": float("nan"), "ess": ess}
    stderr = float(w.std(ddof=1) / (np.sqrt(n) * w.mean()))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    boot = logsumexp(lw[picks], axis=1) - np.log(n)
    return {"log_evidence": log_z, "stderr": stderr,
            "stderr_bootstrap": float(boot.std(ddof=1)), "ess": ess}


@dataclass(frozen=True, repr=False)
class AISResult:
    """Result of an annealed importance sampling run (:func:`lcbayes.ais`,
    :func:`lcbayes.ais_numpyro`).

    Attributes:
        log_evidence: ``ln Z_hat``, the log of the mean chain weight (not alias-corrected: AIS
            sees every mode of the posterior).
        stderr: delta-method standard error of ``log_evidence`` (module docstring).
        stderr_bootstrap: bootstrap standard error over the chains, a check on ``stderr``.
        ess: effective number of chains ``(sum w)^2 / sum w^2``, between 1 and ``chains``.
        log_weights: ``(chains,)`` every chain's ``ln w_c``.
        trace: ``(chains, n_checkpoints)`` running log weights at ``trace_temperatures``.
        trace_temperatures: the temperatures ``tau`` at the trace checkpoints.
        acceptance: mean acceptance rate of the transitions in each quarter of the schedule
            (by step index, Beal Fig. 6c; :func:`quarter_means`).
        chains, temperatures, schedule, kernel, seed, seconds: the run's settings and time.
        settings: kernel-specific settings (proposal concentrations, step sizes, ...).
    """

    log_evidence: float
    stderr: float
    stderr_bootstrap: float
    ess: float
    log_weights: np.ndarray
    trace: np.ndarray
    trace_temperatures: np.ndarray
    acceptance: np.ndarray
    chains: int
    temperatures: int
    schedule: str
    kernel: str
    seed: int | tuple[int, ...]
    seconds: float
    settings: dict = field(default_factory=dict)

    @classmethod
    def from_weights(cls, log_weights, **fields) -> AISResult:
        """Build a result from the chains' log weights and the other fields."""
        lw = np.asarray(log_weights, dtype=np.float64)
        return cls(log_weights=lw, **weight_statistics(lw, fields.get("seed", 0)), **fields)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Normal-theory interval ``log_evidence -/+ z * stderr``."""
        from scipy.stats import norm

        z = float(norm.ppf(0.5 + level / 2))
        return self.log_evidence - z * self.stderr, self.log_evidence + z * self.stderr

    @property
    def low_ess(self) -> bool:
        """The effective number of chains is below :data:`LOW_ESS_FRACTION` of the chains: a
        few chains carry the estimate and its standard error is unreliable."""
        return bool(self.ess < LOW_ESS_FRACTION * self.chains)

    @property
    def no_estimate(self) -> bool:
        """The effective number of chains is below :data:`NO_ESTIMATE_ESS`: about one chain
        carries ``log_evidence``, which is then no estimate, and ``stderr`` no error
        (module docstring)."""
        return bool(self.ess < NO_ESTIMATE_ESS)

    @property
    def reason(self) -> str:
        """Why ``log_evidence`` is no estimate (:attr:`no_estimate`), with the advice; empty
        when it is one."""
        if not self.no_estimate:
            return ""
        return (f"ESS {self.ess:.2f} of {plural(self.chains, 'chain')} (below "
                f"{NO_ESTIMATE_ESS:g}): about one chain carries the estimate, so it is no "
                "estimate and its standard error means nothing; anneal more slowly (more "
                "temperatures) or use lcb.smc, whose data tempering mixes at any N")

    def to_dict(self) -> dict:
        """JSON-ready dictionary (arrays as lists); :meth:`from_dict` reads it back."""
        return json_value({"method": "ais", **asdict(self)})

    @classmethod
    def from_dict(cls, spec: dict) -> AISResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        return record_from_dict(cls, spec)

    def to_frame(self) -> pd.DataFrame:
        """One row per chain: ``chain``, ``log_weight`` (``ln w_c``) and ``weight``, its share
        of the total weight (the chains whose weights carry the estimate stand out)."""
        w = np.exp(self.log_weights - self.log_weights.max())
        return pd.DataFrame({"chain": np.arange(self.chains), "log_weight": self.log_weights,
                             "weight": w / w.sum()})

    def summary(self) -> str:
        """A short printout."""
        quarters = ", ".join(f"{a:.2f}" for a in self.acceptance)
        if self.no_estimate:
            error, note = " (no estimate)", f"\n  no estimate: {self.reason}"
        else:
            error = f" +/- {self.stderr:.4f} (bootstrap {self.stderr_bootstrap:.4f})"
            note = (f"\n  warning: ESS {self.ess:.1f} of {plural(self.chains, 'chain')} is "
                    f"below {LOW_ESS_FRACTION:.0%}: a few chains carry the estimate and its "
                    "standard error is unreliable; run more chains (target_stderr) or "
                    "temperatures" if self.low_ess else "")
        return (f"AIS log evidence ln p(y | m) = {self.log_evidence:.4f}{error}\n"
                f"  {plural(self.chains, 'chain')} x {plural(self.temperatures, 'temperature')} "
                f"({self.schedule} schedule, {self.kernel} kernel), ESS {self.ess:.1f}\n"
                f"  acceptance by quarter [{quarters}], {self.seconds:.2f} s{note}")

    def __repr__(self) -> str:
        return (f"AISResult(log_evidence={self.log_evidence:.4f}, stderr={self.stderr:.4f}, "
                f"ess={self.ess:.1f}, chains={self.chains}, "
                f"temperatures={self.temperatures}, kernel={self.kernel!r})")
