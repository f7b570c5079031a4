"""What :func:`lcbayes.smc` returns: ``ln p(y | K)`` from independent runs, an error bar that
carries every source of error the engine knows, and how the reference was settled.

Each of ``R`` independent runs gives ``ln Z_r``, an unbiased estimate of ``Z`` (the log evidence
of a run of :mod:`lcbayes.samplers.tempered_smc`, or of the particle filter over the rows for
HLC trees and DAGs). The estimate is ``ln mean_r Z_r`` with the delta method's standard error
``sd(Z_r) / (sqrt(R) mean Z_r)``, scaled by ``t_{R-1}(0.975) / z(0.975)`` so that ``estimate +/-
1.96 s.e.`` is the Student-t interval that ``R`` runs support.

**Graded, not refused.** Every candidate with two finished runs gets an estimate and an error
bar, however wide: a wide bar is information, a refusal is not. One more source of error widens
it: where adding reference components still moved the estimate at the largest reference
(``reference_stable`` false), the last move is added in quadrature (``stderr = hypot(runs' s.e.,
moved)``). Fewer than :data:`MIN_RUNS` finished runs give no standard error, and no runs no
estimate; ``reason`` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import logsumexp, ndtri, stdtrit

from ..render import JSONRecord, fmt

__all__ = ["MIN_RUNS", "ROUNDING", "EvidenceRuns", "SMCResult", "run_statistics"]

#: Fewest finished runs behind a standard error.
MIN_RUNS = 2
#: Differences below this many nats are rounding.
ROUNDING = 1e-6


def _t_factor(runs: int) -> float:
    """``t_{R-1}(0.975) / z(0.975)``: the standard error's scale for ``runs`` runs."""
    return float(stdtrit(runs - 1, 0.975) / ndtri(0.975))


def run_statistics(values: np.ndarray) -> tuple[float, float, str]:
    """``(estimate, standard error, reason)`` of the runs' log estimates ``values`` (module
    docstring): the log of the mean of ``exp(values)`` over the finished (finite) runs. The
    reason is empty where both exist, else it says what is missing (NaN)."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return math.nan, math.nan, "no run finished"
    estimate = float(logsumexp(finite) - math.log(finite.size))
    if finite.size < MIN_RUNS:
        return estimate, math.nan, f"{finite.size} finished run; a standard error needs {MIN_RUNS}"
    scaled = np.exp(finite - finite.max())
    factor = _t_factor(finite.size) / math.sqrt(finite.size)
    return estimate, float(scaled.std(ddof=1) / scaled.mean() * factor), ""


class EvidenceRuns(JSONRecord):
    """What the results of independent evidence runs share (:class:`SMCResult`,
    :class:`lcbayes.BridgeResult`): ``log_evidence``, ``stderr``, ``run_log_evidence``; the
    number of runs, the interval and the lossless JSON form."""

    log_evidence: float
    stderr: float
    run_log_evidence: np.ndarray

    @property
    def runs(self) -> int:
        """Finished and unfinished runs."""
        return int(self.run_log_evidence.size)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Normal-theory interval ``log_evidence -/+ z * stderr``."""
        z = float(ndtri(0.5 + level / 2))
        return self.log_evidence - z * self.stderr, self.log_evidence + z * self.stderr


@dataclass(frozen=True, repr=False)
class SMCResult(EvidenceRuns):
    """Result of :func:`lcbayes.smc`.

    Attributes:
        log_evidence, stderr: the estimate and its standard error (module docstring; the
            interval ``log_evidence +/- 1.96 stderr``).
        runs_stderr: the standard error from the runs' spread alone.
        reason: empty for an estimate with a standard error, else what is missing and why.
        run_log_evidence: ``(R,)`` every run's ``ln Z_r`` of the final round (NaN for a run
            that did not reach the posterior within its steps).
        run_steps, run_seconds: ``(R,)`` temperatures (SMC steps) and seconds of every run.
        run_components: ``(R,)`` reference components of every run (0 for the particle filter).
        run_correction: ``(R,)`` every run's final correction less ``ln K!`` (0 where the
            relabelled copies of the modes are apart; ``-ln 2`` per pair of classes that
            coincide or per reference component that duplicates another; NaN for the particle
            filter).
        moved: how much the estimate moved when the last round doubled the reference
            components (NaN after one round).
        reference_stable: whether the reference was settled: one round had every distinct
            optimum, or the last doubling moved the estimate by less than its error bars.
        n_classes: ``K`` of a latent class model (``None`` for other structures); particles,
            sweeps, ess_target: the settings of the final round.
        method: ``"reference"`` (reference-tempered SMC, latent class models) or ``"rows"`` (the
            particle filter over the rows, HLC trees and DAGs).
        seed, seconds: the seed and the wall-clock time (compilation and the reference fits
            included).
        settings: the rest: what was asked for (``runs``, ``max_runs``, ``target_stderr``,
            ``time_limit``, ``restarts``, ``max_components``, ``pad_classes``), ``stopped``
            (why the last round's runs ended: ``runs``, ``target_stderr``, ``max_runs`` or
            ``time_limit``), ``rounds`` (every earlier round: components, runs, why they
            stopped, estimate, s.e., seconds) and the data's size (``rows``, ``patterns``).
    """

    log_evidence: float
    stderr: float
    runs_stderr: float
    reason: str
    run_log_evidence: np.ndarray
    run_steps: np.ndarray
    run_seconds: np.ndarray
    run_components: np.ndarray
    run_correction: np.ndarray
    moved: float
    reference_stable: bool
    n_classes: int | None
    particles: int
    sweeps: int
    ess_target: float
    method: str
    seed: int | tuple[int, ...]
    seconds: float
    settings: dict = field(default_factory=dict)

    @classmethod
    def from_runs(cls, run_log_evidence, *, moved: float = math.nan,
                  reference_stable: bool = True, **fields) -> SMCResult:
        """The result of the runs' estimates and the other fields (module docstring)."""
        values = np.asarray(run_log_evidence, dtype=np.float64)
        estimate, runs_se, reason = run_statistics(values)
        unresolved = 0.0 if reference_stable or not np.isfinite(moved) else abs(moved)
        return cls(log_evidence=estimate, stderr=float(math.hypot(runs_se, unresolved)),
                   runs_stderr=runs_se, reason=reason, run_log_evidence=values, moved=moved,
                   reference_stable=bool(reference_stable), **fields)

    def to_frame(self) -> pd.DataFrame:
        """One row per run of the final round: ``run``, ``log_evidence``, ``steps``,
        ``components``, ``correction``, ``seconds``."""
        return pd.DataFrame({"run": np.arange(self.runs), "log_evidence": self.run_log_evidence,
                             "steps": self.run_steps, "components": self.run_components,
                             "correction": self.run_correction, "seconds": self.run_seconds})

    def summary(self) -> str:
        """A short printout: the estimate, its error and where it came from."""
        model = (f"{self.n_classes} classes" if self.n_classes is not None
                 else f"a {self.settings.get('kind', 'network')} structure")
        path = ("tempered from a reference built from EM and VB optima" if
                self.method == "reference" else "over the rows")
        value = ("no estimate" if not np.isfinite(self.log_evidence)
                 else f"ln p(y | m) = {fmt(self.log_evidence)}"
                 + (f" (s.e. {fmt(self.stderr)})" if np.isfinite(self.stderr) else ""))
        lines = [f"SMC {path}, {model}: {self.runs} runs of {self.particles} particles, "
                 f"{self.sweeps} Gibbs sweep(s) per step, {fmt(self.seconds)} s",
                 f"  {value}" + (f": {self.reason}" if self.reason else "")]
        if self.method == "reference":
            components = sorted({int(c) for c in self.run_components})
            lines.append(f"  reference: {', '.join(map(str, components))} component(s) per run"
                         + ("" if not np.isfinite(self.moved) else
                            f"; the last doubling moved the estimate by {fmt(self.moved)}")
                         + ("" if self.reference_stable else
                            " (NOT settled: the move is added to the error bar)"))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()
