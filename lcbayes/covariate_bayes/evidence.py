"""Does this covariate matter? Does this outcome differ by class? Bayes factors with error
bars: :func:`lcbayes.covariate_evidence` and :class:`CovariateEvidenceResult`.

**The comparison.** Two models of the same rows with the same ``K`` (:mod:`.model`): the
full one and the nested one that leaves the tested part out, either

* ``test="covariates"``: membership ``softmax(x' beta)`` against intercept-only membership
  (the same intercept prior), or
* ``test="distal"``: the distal outcome's distribution by class against one distribution for
  every class (the same prior for it).

The log Bayes factor is ``ln B = ln p(y | full) - ln p(y | nested)``; > 0 favours the full
model (Kass & Raftery 1995: ``ln B`` above 1, 3, 5 is positive, strong, very strong
evidence), and ``1 / (1 + e^-ln B)`` is the full model's posterior probability at even prior
odds. Each evidence is estimated by bridge sampling from that model's NUTS draws
(:mod:`.bridge`: Meng & Wong 1996, Gronau et al. 2017, a normal proposal in the
unconstrained space symmetrised over the ``K!`` class labellings, Frühwirth-Schnatter's 2004
relative error); the two runs are independent, so ``se(ln B) = sqrt(se_1^2 + se_2^2)``.

**Labels.** NUTS usually sits in one of the ``K!`` relabelled copies of the posterior. Both
models are label-symmetric (exchangeable priors) with the same ``K``, so if each evidence
were computed from one mode with an unsymmetrised proposal it would be ``Z / K!`` for both
(the modes being separated) and ``ln K!`` would cancel in ``ln B``. The symmetrised proposal
makes each evidence right on its own, also where modes overlap; the result reports each
model's ``mode_overlap`` (0: separated) and the draws that had to be relabelled.

**The prior scale matters** (Lindley 1957; Bartlett 1957). A coefficient the nested model
leaves out has the prior ``N(0, s^2)`` (``s = prior_scale``, standardised covariates). By
Laplace's approximation ``ln B ~ (ln L_full - ln L_nested) + sum_t ln(sigma_t / s)`` over the
``n_tested`` coefficients left out (``sigma_t`` their posterior SDs) once ``s`` is well above
the estimates: every doubling of ``s`` lowers ``ln B`` by about ``n_tested ln 2``, so a wide
enough prior favours the nested model whatever the data, and ``s -> 0`` sends ``ln B`` to 0.
A Bayes factor is therefore reported at a stated scale, with its sensitivity:
``sensitivity=(...)`` reruns both models at other scales (:meth:`prior_sensitivity`). The
outcome's priors (:mod:`.model`) are fixed, so ``test="distal"`` moves little with
``prior_scale``.

Example::

    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    res = lcb.covariate_evidence(structure, frame, covariates=["GPA"],
                                 sensitivity=(0.5, 1, 5, 10), seed=0)
    res.log_bayes_factor, res.log_bayes_factor_stderr
    print(res.summary())
    res.prior_sensitivity()
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import jax
import numpy as np
import pandas as pd

from ..engines.regression.fit import DistalType
from ..engines.run_record import start_engine
from ..render import JSONRecord, fmt, record_dict, text_table
from ..structure import Structure
from ..validation import Seed, check_int, check_positive, prng_key, seed_record
from .bridge import BridgeEstimate, bridge_sampling
from .model import Drop, permutations, relabel
from .nuts import Draws, evaluate
from .posterior import (
    DEFAULT_PRIOR_SCALE,
    CovariatePosteriorResult,
    check_sampling,
    posterior_result,
    sample_model,
)
from .problem import CovariateSpec, DistalSpec, Problem, build_problem, check_drop, fit_start

__all__ = ["CovariateEvidenceResult", "covariate_evidence", "model_evidence"]

#: The models of each test: (full, nested).
MODELS = {"covariates": ("with covariates", "without covariates"),
          "distal": ("outcome by class", "outcome independent of class")}


@dataclass(frozen=True, repr=False, eq=False)
class CovariateEvidenceResult(JSONRecord):
    """The evidence of a full and a nested latent class regression (module docstring).

    Attributes:
        structure: the latent class model.
        test: ``"covariates"`` or ``"distal"``.
        models: the two models' names, full first.
        log_evidence, stderr: ``(2,)`` each model's ``ln p(y)`` (natural log; a continuous
            outcome in its own units) and its standard error.
        iterations, mode_overlap, ess: ``(2,)`` per model: the bridge's fixed-point
            iterations, the labellings' overlap (:mod:`.bridge`), the effective size
            of the posterior draws' bridge terms.
        n_tested: parameters the nested model leaves out.
        prior_scale: the coefficients' prior SD (standardised covariates).
        sensitivity_scales, sensitivity_log_bayes_factor, sensitivity_stderr: ``ln B`` and
            its error at the other scales asked for (empty if none).
        posteriors: the two models' draws at ``prior_scale`` (full first).
        seconds, seed, chains, draws, warmup: the run.
    """

    structure: Structure
    test: str
    models: tuple[str, ...]
    log_evidence: np.ndarray
    stderr: np.ndarray
    iterations: np.ndarray
    mode_overlap: np.ndarray
    ess: np.ndarray
    n_tested: int
    prior_scale: float
    sensitivity_scales: np.ndarray
    sensitivity_log_bayes_factor: np.ndarray
    sensitivity_stderr: np.ndarray
    posteriors: tuple[CovariatePosteriorResult, ...]
    seconds: float
    seed: int | tuple[int, ...]
    chains: int
    draws: int
    warmup: int

    @property
    def log_bayes_factor(self) -> float:
        """``ln B = ln p(y | full) - ln p(y | nested)`` (> 0 favours the full model)."""
        return float(self.log_evidence[0] - self.log_evidence[1])

    @property
    def log_bayes_factor_stderr(self) -> float:
        """The standard error of :attr:`log_bayes_factor` (independent runs)."""
        return float(math.hypot(*self.stderr))

    @property
    def posterior_probability(self) -> float:
        """The full model's posterior probability at even prior odds."""
        return float(1.0 / (1.0 + math.exp(-self.log_bayes_factor)))

    def prior_sensitivity(self) -> pd.DataFrame:
        """``ln B`` and its standard error at ``prior_scale`` and every sensitivity scale, in
        increasing scale, with the change of ``ln B`` per unit of ``ln s`` from the previous
        row (about ``-n_tested`` for a wide prior: module docstring)."""
        scales = np.concatenate([[self.prior_scale], self.sensitivity_scales])
        bf = np.concatenate([[self.log_bayes_factor], self.sensitivity_log_bayes_factor])
        se = np.concatenate([[self.log_bayes_factor_stderr], self.sensitivity_stderr])
        order = np.argsort(scales, kind="stable")
        scales, bf, se = scales[order], bf[order], se[order]
        slope = np.concatenate([[np.nan], np.diff(bf) / np.diff(np.log(scales))])
        return pd.DataFrame({"prior_scale": scales, "log_bayes_factor": bf, "stderr": se,
                             "slope_per_log_scale": slope})

    def to_frame(self) -> pd.DataFrame:
        """One row per model: its name, log evidence, standard error and bridge details."""
        return pd.DataFrame({"model": list(self.models), "log_evidence": self.log_evidence,
                             "stderr": self.stderr, "iterations": self.iterations,
                             "mode_overlap": self.mode_overlap, "ess": self.ess})

    def to_dict(self) -> dict:
        """Every field as JSON-ready values (the posteriors with their draws); the log Bayes
        factor and its error beside them; :meth:`from_dict` reads it back."""
        spec = record_dict(replace(self, posteriors=()), method="covariate_evidence",
                           log_bayes_factor=self.log_bayes_factor,
                           log_bayes_factor_stderr=self.log_bayes_factor_stderr)
        return {**spec, "posteriors": [p.to_dict() for p in self.posteriors]}

    def summary(self) -> str:
        """The two evidences, the Bayes factor with its error and the prior sensitivity."""
        k = self.structure.n_classes or 2
        rows = [[m, fmt(v, 3), fmt(e, 3), fmt(o, 3), str(int(i))] for m, v, e, o, i in zip(
            self.models, self.log_evidence, self.stderr, self.mode_overlap, self.iterations,
            strict=True)]
        question = ("do the covariates matter?" if self.test == "covariates"
                    else "does the outcome differ by class?")
        lines = [f"Bayes factor, {k} classes: {question} "
                 f"(prior SD {self.prior_scale:g} per standardised coefficient; "
                 f"{self.n_tested} parameter(s) tested)", ""]
        lines += text_table(["model", "ln p(y)", "s.e.", "mode overlap", "iterations"], rows)
        lines += ["", f"ln B = {self.log_bayes_factor:.3f} +/- "
                      f"{self.log_bayes_factor_stderr:.3f} (> 0 favours "
                      f"{self.models[0]}); P({self.models[0]} | y) = "
                      f"{self.posterior_probability:.4f} at even prior odds"]
        if self.sensitivity_scales.size:
            table = self.prior_sensitivity()
            lines += ["", "prior sensitivity (Lindley-Bartlett: ln B falls by about "
                          f"{self.n_tested} per unit of ln prior_scale once the prior is wide):"]
            lines += text_table(["prior_scale", "ln B", "s.e.", "d ln B / d ln s"],
                                [[fmt(r.prior_scale, 3), fmt(r.log_bayes_factor, 3),
                                  fmt(r.stderr, 3), fmt(r.slope_per_log_scale, 3)]
                                 for r in table.itertuples()])
        lines += ["", f"NUTS: {self.chains} chains x {self.draws} draws after {self.warmup} "
                      f"warm-up per model; {self.seconds:.1f} s"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"CovariateEvidenceResult(test={self.test!r}, log_bayes_factor="
                f"{self.log_bayes_factor:.4f}, log_bayes_factor_stderr="
                f"{self.log_bayes_factor_stderr:.4f})")


def model_evidence(problem: Problem, draws: Draws, drop: Drop, prior_scale: float,
                   key: jax.Array) -> BridgeEstimate:
    """The bridge estimate (:mod:`.bridge`) of the model with ``drop`` left out
    from its draws; a continuous outcome's evidence in its own units."""
    spec, data = problem.spec, problem.with_options(drop, prior_scale)
    perms = permutations(spec.n_classes)
    chains, n_draws, dim = draws.u.shape
    normals = np.asarray(jax.random.normal(key, (chains * (n_draws - n_draws // 2), dim)))
    estimate = bridge_sampling(
        draws.u, -draws.potential, lambda x: -evaluate(spec, x, data)[0],
        lambda x: [relabel(spec, x, perm, drop == "distal") for perm in perms], normals)
    return estimate._replace(log_evidence=estimate.log_evidence + problem.log_jacobian)


def _n_tested(problem: Problem, test: str) -> int:
    spec = problem.spec
    if test == "covariates":
        return (spec.n_design - 1) * (spec.n_classes - 1)
    per_class = 2 if spec.distal_kind == "continuous" else spec.distal_categories - 1
    return per_class * (spec.n_classes - 1)


def covariate_evidence(structure: Structure, data, *, covariates: CovariateSpec = None,
                       distal: DistalSpec = None,
                       distal_type: DistalType = "auto", test: str | None = None,
                       prior_scale: float = DEFAULT_PRIOR_SCALE,
                       sensitivity: Sequence[float] = (), chains: int = 4, draws: int = 1000,
                       warmup: int = 1000, restarts: int = 10, seed: Seed = 0
                       ) -> CovariateEvidenceResult:
    """The log Bayes factor, with its standard error, of covariates or of a distal outcome.

    A latent class regression against the nested model without its covariates, or with its
    outcome independent of class (module docstring).

    Args:
        structure, data, covariates, distal, distal_type, restarts: as
            :func:`lcbayes.covariate_posterior` (the full model).
        test: ``"covariates"`` (does membership depend on the covariates?) or ``"distal"``
            (does the outcome differ by class?); ``None``: ``"covariates"`` when covariates
            are given, else ``"distal"``.
        prior_scale: the prior SD of every coefficient on the standardised design; the
            Bayes factor depends on it (module docstring).
        sensitivity: further prior scales at which both models are run again; their Bayes
            factors are in :meth:`CovariateEvidenceResult.prior_sensitivity`.
        chains, draws, warmup: NUTS per model (the bridge fits its proposal on the first half
            of every chain's draws and bridges with the second).
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            numbers.
    """
    started, seed = start_engine(structure, seed)
    chains, draws, warmup = check_sampling(chains, draws, warmup)
    restarts = check_int(restarts, "restarts", 1)
    scales = [check_positive(prior_scale, "prior_scale")] + [
        check_positive(s, "sensitivity") for s in sensitivity]
    problem = build_problem(structure, data, covariates=covariates, distal=distal,
                            distal_type=distal_type)
    if test is None:
        test = "covariates" if problem.spec.n_design > 1 else "distal"
    nested: Drop = check_drop(test, problem, "test")
    start = fit_start(problem, data, distal=distal, distal_type=distal_type,
                      restarts=restarts, seed=seed)
    keys = jax.random.split(prng_key(seed), 4 * len(scales)).reshape(len(scales), 2, 2, -1)
    estimates: list[list[BridgeEstimate]] = []
    posteriors: list[CovariatePosteriorResult] = []
    for i, scale in enumerate(scales):
        pair = []
        for j, drop in enumerate((None, nested)):
            run_started = time.perf_counter()
            found = sample_model(problem, start, drop, scale, chains=chains, draws=draws,
                                 warmup=warmup, key=keys[i, j, 0])
            pair.append(model_evidence(problem, found, drop, scale, keys[i, j, 1]))
            if i == 0:
                posteriors.append(posterior_result(
                    problem, found, drop, scale, seconds=time.perf_counter() - run_started,
                    seed=seed, chains=chains, n_draws=draws, warmup=warmup))
        estimates.append(pair)
    first = estimates[0]
    extra = estimates[1:]
    return CovariateEvidenceResult(
        structure=structure, test=test, models=MODELS[test],
        log_evidence=np.array([e.log_evidence for e in first]),
        stderr=np.array([e.stderr for e in first]),
        iterations=np.array([e.iterations for e in first], dtype=np.int64),
        mode_overlap=np.array([e.mode_overlap for e in first]),
        ess=np.array([e.ess for e in first]), n_tested=_n_tested(problem, test),
        prior_scale=scales[0], sensitivity_scales=np.array(scales[1:], dtype=np.float64),
        sensitivity_log_bayes_factor=np.array(
            [a.log_evidence - b.log_evidence for a, b in extra], dtype=np.float64),
        sensitivity_stderr=np.array([math.hypot(a.stderr, b.stderr) for a, b in extra],
                                    dtype=np.float64),
        posteriors=tuple(posteriors), seconds=time.perf_counter() - started,
        seed=seed_record(seed),
        chains=chains, draws=draws, warmup=warmup)
