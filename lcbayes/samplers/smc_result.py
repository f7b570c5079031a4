"""What :func:`lcbayes.smc` returns: two estimates of ``ln p(y | K)`` from independent runs, their
error bars, and whether each can be trusted.

Each of ``R`` independent runs gives two estimates: the SMC product of mean weights
``Z_r`` (unbiased for ``Z``; :mod:`lcbayes.samplers.smc`) and the bridge sampling estimate
``B_r`` from the run's final particles (:mod:`lcbayes.samplers.bridge`).

* ``smc_log_evidence = ln mean_r Z_r``, with the delta method's standard error
  ``sd(Z_r) / (sqrt(R) mean Z_r)`` (as for AIS chains).
* ``bridge_log_evidence = mean_r ln B_r``, with standard error ``sd(ln B_r) / sqrt(R)``, over
  the runs not stuck (:func:`stuck_runs`): a run whose particles all sit in a minor mode of the
  posterior bridges only that mode's mass, so its estimate falls far below the others' (40
  nats, one run in six, at election K = 5). Runs more than :data:`STUCK_NATS` below the runs'
  median are left out while they are fewer than half of them, and counted
  (``bridge_stuck``). Bridge sampling fails low this way, never high, so the rule only drops
  runs that missed mass.

Both standard errors are scaled by ``t_{R-1}(0.975) / z(0.975)``, so that the normal interval
``estimate +/- 1.96 s.e.`` is the Student-t interval that ``R`` runs support (with 8 runs the
factor is 1.21; with 4, 1.62).

**Honest failure.** An estimate with fewer than :data:`MIN_RUNS` finished runs, or whose runs'
log estimates have a standard deviation above :data:`MAX_RUN_SD` nats (then the mean of so few
skewed values is not a measured value, and its spread no error bar), is no estimate: its value
is NaN and ``smc_reason`` / ``bridge_reason`` say why. ``agree`` says whether the two estimates
lie within twice their combined standard error of each other. ``log_evidence`` is the more
precise of the two where they agree, the larger where they disagree, else whichever is an
estimate. Both fail low: the SMC product is unbiased for ``Z`` but, where its weights are
heavily skewed, its typical value lies far below the mean (election, 12 items: 6-17 nats below
bridge sampling and Chib's estimator, which agree), and bridge sampling misses the posterior
mass its importance density does not reach.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy.special import logsumexp, ndtri, stdtrit

from ..render import fmt, json_value

__all__ = ["MAX_RUN_SD", "MIN_RUNS", "ROUNDING", "STUCK_NATS", "SMCResult", "run_statistics",
           "stuck_runs"]

#: Fewest finished runs behind a standard error.
MIN_RUNS = 2
#: Differences below this many nats are rounding (both estimators are exact at one class).
ROUNDING = 1e-6
#: Largest standard deviation of the runs' log estimates, in nats, for which their mean is
#: reported as an estimate.
MAX_RUN_SD = 1.0
#: A bridge run this many nats below the runs' median is stuck in a minor mode (module
#: docstring); five standard deviations of the largest spread still reported.
STUCK_NATS = 5.0 * MAX_RUN_SD


def _t_factor(runs: int) -> float:
    """``t_{R-1}(0.975) / z(0.975)``: the standard error's scale for ``runs`` runs."""
    return float(stdtrit(runs - 1, 0.975) / ndtri(0.975))


def stuck_runs(values: np.ndarray) -> np.ndarray:
    """``(R,)`` True for the bridge runs stuck in a minor mode (module docstring): more than
    :data:`STUCK_NATS` below the median of three or more finished runs, while fewer than half
    of them are."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if finite.sum() < 3:
        return np.zeros(values.shape, dtype=bool)
    stuck = finite & (values < np.median(values[finite]) - STUCK_NATS)
    return stuck if 2 * stuck.sum() < finite.sum() else np.zeros(values.shape, dtype=bool)


def run_statistics(values: np.ndarray, pooled: bool) -> tuple[float, float, str]:
    """``(estimate, standard error, reason)`` of the runs' log estimates ``values`` (module
    docstring): ``pooled`` takes the log of the mean of ``exp(values)`` (SMC), else the mean
    of the logs (bridge). The reason is empty for an estimate, else it says why there is none
    (then the estimate and its error are NaN)."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size < MIN_RUNS:
        return (math.nan, math.nan,
                f"{finite.size} finished run(s); a standard error needs {MIN_RUNS}")
    spread = float(finite.std(ddof=1))
    if spread > MAX_RUN_SD:
        return (math.nan, math.nan,
                f"the runs' estimates have a standard deviation of {spread:.2f} nats (> "
                f"{MAX_RUN_SD:g}): too few particles for this model")
    factor = _t_factor(finite.size) / math.sqrt(finite.size)
    if pooled:
        scaled = np.exp(finite - finite.max())
        return (float(logsumexp(finite) - math.log(finite.size)),
                float(scaled.std(ddof=1) / scaled.mean() * factor), "")
    return float(finite.mean()), float(finite.std(ddof=1) * factor), ""


@dataclass(frozen=True, repr=False)
class SMCResult:
    """Result of :func:`lcbayes.smc`.

    Attributes:
        log_evidence, stderr: the chosen estimate and its standard error (module docstring;
            NaN where neither is an estimate).
        smc_log_evidence, smc_stderr, smc_reason: the SMC estimate (module docstring); the
            reason is empty for an estimate, else why there is none.
        bridge_log_evidence, bridge_stderr, bridge_reason: the same for bridge sampling.
        agree: the two estimates lie within twice their combined standard error (False where
            either is missing).
        run_smc, run_bridge: ``(R,)`` every run's ``ln Z_r`` and ``ln B_r``.
        bridge_stuck: bridge runs left out as stuck in a minor mode (module docstring).
        run_steps, run_seconds: ``(R,)`` SMC steps and seconds of every run.
        n_classes: ``K`` of a latent class model (``None`` for other structures); particles,
            sweeps, ess_target, bridge_draws: the settings.
        seed, seconds: the seed and the wall-clock time (compilation included).
        settings: the rest (``runs``, ``max_runs``, ``target_stderr``, ``max_particles``
            and ``time_limit`` asked for; ``stopped``: why the last round's runs ended
            (``runs``, ``target_stderr``, ``max_runs``, ``no_estimate`` or ``time_limit``);
            ``rounds``: the earlier rounds with fewer particles (particles, runs, why they
            stopped, their estimate); ``pad_classes``).
    """

    log_evidence: float
    stderr: float
    smc_log_evidence: float
    smc_stderr: float
    smc_reason: str
    bridge_log_evidence: float
    bridge_stderr: float
    bridge_reason: str
    agree: bool
    run_smc: np.ndarray
    run_bridge: np.ndarray
    run_steps: np.ndarray
    run_seconds: np.ndarray
    n_classes: int | None
    particles: int
    sweeps: int
    ess_target: float
    bridge_draws: int
    seed: int | tuple[int, ...]
    seconds: float
    settings: dict = field(default_factory=dict)
    bridge_stuck: int = 0

    @classmethod
    def from_runs(cls, run_smc, run_bridge, bridge_unavailable: str = "", **fields
                  ) -> SMCResult:
        """The result of the runs' estimates and the other fields; ``bridge_unavailable``
        says why there is no bridge estimate at all (its runs are then NaN)."""
        run_smc = np.asarray(run_smc, dtype=np.float64)
        run_bridge = np.asarray(run_bridge, dtype=np.float64)
        smc, smc_se, smc_reason = run_statistics(run_smc, pooled=True)
        stuck = stuck_runs(run_bridge)
        bridge, bridge_se, bridge_reason = (
            (math.nan, math.nan, bridge_unavailable) if bridge_unavailable
            else run_statistics(run_bridge[~stuck], pooled=False))
        agree = bool(np.isfinite(smc) and np.isfinite(bridge) and abs(smc - bridge)
                     <= 2.0 * math.hypot(smc_se, bridge_se) + ROUNDING)
        estimates = [(v, se) for v, se in ((bridge, bridge_se), (smc, smc_se)) if np.isfinite(v)]
        if agree:
            best, best_se = min(estimates, key=lambda pair: pair[1])
        else:
            best, best_se = max(estimates, default=(math.nan, math.nan))
        return cls(log_evidence=best, stderr=best_se, smc_log_evidence=smc,
                   smc_stderr=smc_se, smc_reason=smc_reason, bridge_log_evidence=bridge,
                   bridge_stderr=bridge_se, bridge_reason=bridge_reason, agree=agree,
                   run_smc=run_smc, run_bridge=run_bridge, bridge_stuck=int(stuck.sum()),
                   **fields)

    @property
    def runs(self) -> int:
        """Finished runs."""
        return int(self.run_smc.size)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Normal-theory interval ``log_evidence -/+ z * stderr``."""
        z = float(ndtri(0.5 + level / 2))
        return self.log_evidence - z * self.stderr, self.log_evidence + z * self.stderr

    def to_frame(self) -> pd.DataFrame:
        """One row per run: ``run``, ``smc``, ``bridge``, ``steps``, ``seconds``."""
        return pd.DataFrame({"run": np.arange(self.runs), "smc": self.run_smc,
                             "bridge": self.run_bridge, "steps": self.run_steps,
                             "seconds": self.run_seconds})

    def to_dict(self) -> dict:
        """JSON-ready dictionary (arrays as lists, NaN as None); :meth:`from_dict` reads it."""
        return json_value({"method": "smc", **asdict(self)})

    @classmethod
    def from_dict(cls, spec: dict) -> SMCResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        spec = {k: v for k, v in spec.items() if k != "method"}
        for name in ("log_evidence", "stderr", "smc_log_evidence", "smc_stderr",
                     "bridge_log_evidence", "bridge_stderr"):
            spec[name] = math.nan if spec[name] is None else float(spec[name])
        for name in ("run_smc", "run_bridge", "run_seconds"):
            spec[name] = np.asarray([math.nan if v is None else v for v in spec[name]],
                                    dtype=np.float64)
        spec["run_steps"] = np.asarray(spec["run_steps"], dtype=np.int64)
        seed = spec["seed"]
        return cls(**{**spec, "seed": seed if isinstance(seed, int) else tuple(seed)})

    def summary(self) -> str:
        """A short printout: both estimates, or why one is missing."""
        def line(name, value, se, reason):
            if reason:
                return f"  {name}: no estimate ({reason})"
            return f"  {name}: ln p(y | m) = {fmt(value)} (s.e. {fmt(se)})"

        verdict = ("agree within their error bars" if self.agree
                   else "DISAGREE beyond their error bars" if
                   np.isfinite(self.smc_log_evidence) and np.isfinite(self.bridge_log_evidence)
                   else "cannot be compared")
        model = (f"{self.n_classes} classes" if self.n_classes is not None
                 else f"a {self.settings.get('kind', 'network')} structure")
        return "\n".join([
            f"SMC over the rows, {model}: {self.runs} runs of "
            f"{self.particles} particles, {self.sweeps} Gibbs sweeps per step, "
            f"{fmt(self.seconds)} s",
            line("SMC", self.smc_log_evidence, self.smc_stderr, self.smc_reason),
            line("bridge sampling", self.bridge_log_evidence, self.bridge_stderr,
                 self.bridge_reason),
            *([f"    ({self.bridge_stuck} of {self.runs} bridge runs left out: more than "
               f"{STUCK_NATS:g} nats below the runs' median, stuck in a minor mode)"]
              if self.bridge_stuck else []),
            f"  the two estimates {verdict}",
            *([f"  after rounds with {', '.join(str(r['particles']) for r in rounds)} "
               "particles that gave no estimate or too large an error"]
              if (rounds := self.settings.get("rounds")) else [])])

    def __repr__(self) -> str:
        return self.summary()
