"""The posterior of a latent class regression: :func:`lcbayes.covariate_posterior` and
:class:`CovariatePosteriorResult`; :func:`lcbayes.covariate_model` gives the NumPyro model.

The model, its priors and its standardised design are those of :mod:`.model`; the draws
come from NUTS (:mod:`.nuts`), started at and labelled like the maximum likelihood fit of
:func:`lcbayes.em` with the same covariates, so the classes are numbered as in that
:class:`~lcbayes.RegressionResult` (by decreasing share) and the coefficients ``beta`` (class
1 the reference) compare with its ``coef`` directly.

Example::

    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    post = lcb.covariate_posterior(structure, frame, covariates=["GPA"], seed=0)
    print(post.summary())
    post.coefficients()                 # posterior mean, SD, interval, R-hat, ESS per beta
    az.summary(post.to_inference_data())
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
import pandas as pd

from ..engines.regression.design import Covariates
from ..engines.regression.fit import DistalType
from ..engines.run_record import start_engine
from ..render import json_value, plural, record_from_dict
from ..samplers.diagnostics import RhatWarning
from ..samplers.idata import arviz, inference_data_from_dict, inference_data_to_dict, xarray
from ..structure import Structure
from ..validation import Seed, check_int, check_positive, prng_key, seed_record
from .model import Drop, lcr_model, sum_to_zero_basis, to_raw
from .nuts import Draws, run_nuts
from .problem import (
    CovariateSpec,
    DistalSpec,
    Problem,
    Start,
    build_problem,
    check_drop,
    class_shares,
    fit_start,
)

if TYPE_CHECKING:
    import arviz as az

__all__ = ["DEFAULT_PRIOR_SCALE", "RHAT_THRESHOLD", "CovariatePosteriorResult",
           "covariate_model", "covariate_posterior", "posterior_result", "sample_model"]

#: The default SD of the prior of every membership coefficient (standardised covariates).
DEFAULT_PRIOR_SCALE = 2.5
#: A parameter whose R-hat exceeds this is warned about (Vehtari et al. 2021).
RHAT_THRESHOLD = 1.01


@dataclass(frozen=True, repr=False, eq=False)
class CovariatePosteriorResult:
    """Posterior draws of a Bayesian latent class regression (module docstring).

    Attributes:
        structure: the latent class model.
        covariates: the membership design's description (columns, levels, names; no rows).
        terms: the design columns in the membership model (only ``(Intercept)`` when
            ``drop="covariates"``).
        distal: the distal outcome (``name``, ``kind``, ``labels``, the ``mean`` and ``sd``
            it was standardised by, ``n_observed``) or ``None``.
        drop: ``None``, ``"covariates"`` (intercept-only membership) or ``"distal"`` (the
            outcome independent of class).
        prior_scale: the prior SD of the coefficients (standardised scale).
        idata: the draws: ``posterior`` holds ``beta`` ``(chain, draw, term, beta_class)`` on
            the covariates' own scale (classes 2..K against class 1), ``beta_standardised``,
            ``class_shares`` ``(chain, draw, class)``, ``theta_<item>`` ``(chain, draw, class,
            <item>_category)`` and the outcome's ``distal_probs`` or ``distal_mean`` /
            ``distal_sd`` (own units; no ``class`` dim when independent of class);
            ``sample_stats`` holds ``lp``, ``log_likelihood``, ``diverging``, ``n_steps``.
        centre, scale: the design's standardisation (:mod:`.model`).
        n_rows, n_used_rows: rows given and rows with every covariate.
        relabelled: draws mapped to the ML fit's labelling (:mod:`.nuts`).
        seconds, seed, chains, draws, warmup: the run.
    """

    structure: Structure
    covariates: Covariates
    terms: tuple[str, ...]
    distal: dict | None
    drop: str | None
    prior_scale: float
    idata: Any
    centre: np.ndarray
    scale: np.ndarray
    n_rows: int
    n_used_rows: int
    relabelled: int
    seconds: float
    seed: int | tuple[int, ...]
    chains: int
    draws: int
    warmup: int

    def to_inference_data(self) -> az.InferenceData:
        """The draws as an ArviZ ``InferenceData`` (the attribute ``idata``)."""
        return self.idata

    @property
    def coef_mean(self) -> np.ndarray:
        """``(P, K)`` posterior means of ``beta`` (raw scale; column 1, the reference, 0), in
        the layout of :attr:`RegressionResult.coef`."""
        beta = self.idata.posterior["beta"].values
        return np.pad(beta.mean(axis=(0, 1)), ((0, 0), (1, 0)))

    @property
    def coef_sd(self) -> np.ndarray:
        """``(P, K)`` posterior SDs of ``beta`` (column 1 0)."""
        beta = self.idata.posterior["beta"].values
        return np.pad(beta.std(axis=(0, 1), ddof=1), ((0, 0), (1, 0)))

    def diagnostics(self) -> pd.DataFrame:
        """ArviZ's summary of every parameter: mean, SD, HDI, MCSE, ESS and R-hat."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # R-hat of constant entries
            return arviz().summary(self.idata)

    @property
    def max_rhat(self) -> float:
        """The largest R-hat over the parameters (NaN where undefined is skipped)."""
        return float(np.nanmax(self.diagnostics()["r_hat"].to_numpy(dtype=float)))

    def coefficients(self) -> pd.DataFrame:
        """One row per class ``2..K`` and term: posterior ``mean``, ``sd``, the 2.5% and 97.5%
        quantiles, ``r_hat``, ``ess_bulk`` and the posterior probability that the coefficient
        is positive."""
        beta = self.idata.posterior["beta"]
        az_ = arviz()
        rhat, ess = az_.rhat(self.idata, var_names=["beta"]), az_.ess(self.idata,
                                                                     var_names=["beta"])
        rows = []
        for r in beta.coords["beta_class"].values:
            for term in beta.coords["term"].values:
                x = beta.sel(beta_class=r, term=term).values.reshape(-1)
                rows.append({"class": f"class {r} vs class 1", "term": str(term),
                             "mean": float(x.mean()), "sd": float(x.std(ddof=1)),
                             "q2.5": float(np.quantile(x, 0.025)),
                             "q97.5": float(np.quantile(x, 0.975)),
                             "p_positive": float((x > 0).mean()),
                             "r_hat": float(rhat["beta"].sel(beta_class=r, term=term)),
                             "ess_bulk": float(ess["beta"].sel(beta_class=r, term=term))})
        return pd.DataFrame(rows)

    def to_frame(self) -> pd.DataFrame:
        """:meth:`coefficients`."""
        return self.coefficients()

    def summary(self) -> str:
        """The coefficient table, the class shares, the outcome by class and the chains'
        diagnostics."""
        k = self.structure.n_classes or 2
        membership = (" + ".join(self.covariates.columns) if self.drop != "covariates"
                      and self.covariates.columns else "1")
        lines = [f"Bayesian latent class regression: {plural(k, 'class', 'classes')}, "
                 f"membership ~ {membership}; prior beta ~ N(0, {self.prior_scale:g}^2) per "
                 "standardised covariate", ""]
        lines += [self.coefficients().to_string(index=False, float_format="{:.4g}".format), ""]
        shares = self.idata.posterior["class_shares"].values.reshape(-1, k)
        lines.append("class shares (posterior mean): " + ", ".join(
            f"{v:.4f}" for v in shares.mean(axis=0)))
        if self.distal is not None:
            post = self.idata.posterior
            how = "independent of class" if self.drop == "distal" else "by class"
            names = [v for v in ("distal_mean", "distal_sd", "distal_probs") if v in post]
            lines.append(f"distal outcome {self.distal['name']!r} ({self.distal['kind']}, "
                         f"{how}), posterior means:")
            for name in names:
                mean = post[name].mean(dim=("chain", "draw")).values
                lines.append(f"  {name}: {np.array2string(mean, precision=4)}")
        stats = self.idata.sample_stats
        lines += ["", f"{self.chains} chains x {self.draws} draws after {self.warmup} warm-up; "
                  f"max R-hat {self.max_rhat:.4f}; divergent transitions "
                  f"{int(stats['diverging'].values.sum())}; draws relabelled {self.relabelled}",
                  f"rows used {self.n_used_rows} of {self.n_rows}; {self.seconds:.1f} s"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"CovariatePosteriorResult(n_classes={self.structure.n_classes}, terms="
                f"{list(self.terms)}, drop={self.drop!r}, chains={self.chains}, "
                f"draws={self.draws})")

    def to_dict(self) -> dict:
        """JSON-ready and lossless (the draws in the ``InferenceData`` JSON form of
        :mod:`lcbayes.samplers.idata`); :meth:`from_dict` reads it back."""
        return json_value({
            "method": "covariate_posterior", "structure": self.structure.to_dict(),
            "covariates": self.covariates.to_dict(), "terms": self.terms,
            "distal": self.distal, "drop": self.drop, "prior_scale": self.prior_scale,
            "idata": inference_data_to_dict(self.idata), "centre": self.centre,
            "scale": self.scale, "n_rows": self.n_rows, "n_used_rows": self.n_used_rows,
            "relabelled": self.relabelled, "seconds": self.seconds, "seed": self.seed,
            "chains": self.chains, "draws": self.draws, "warmup": self.warmup})

    @classmethod
    def from_dict(cls, spec: dict) -> CovariatePosteriorResult:
        """The result of :meth:`to_dict`."""
        distal = spec["distal"]
        if distal is not None:
            distal = {**distal, "labels": tuple(distal["labels"])}
        return record_from_dict(cls, spec, distal=distal,
                                covariates=Covariates.from_description(spec["covariates"]),
                                idata=inference_data_from_dict(spec["idata"]))


def _inference_data(problem: Problem, draws: Draws, drop: Drop, prior_scale: float):
    """The ``InferenceData`` of :class:`CovariatePosteriorResult`'s ``idata``."""
    s, spec = problem.structure, problem.spec
    k, values = spec.n_classes, draws.values
    mask = np.ones(spec.n_design) if drop != "covariates" else np.eye(spec.n_design)[0]
    effects = (values["class_effects"] * mask[:, None]) @ sum_to_zero_basis(k).T
    std = effects - effects[..., :1]
    used = slice(None) if drop != "covariates" else slice(0, 1)
    terms = list(problem.covariates.names[used])
    cd = ("chain", "draw")
    posterior = {
        "beta": ((*cd, "term", "beta_class"),
                 to_raw(std, problem.centre, problem.scale)[..., used, 1:]),
        "beta_standardised": ((*cd, "term", "beta_class"), std[..., used, 1:]),
        "class_shares": ((*cd, "class"), class_shares(problem, effects))}
    coords: dict[str, Any] = {"chain": np.arange(draws.u.shape[0]),
                              "draw": np.arange(draws.u.shape[1]),
                              "term": terms, "beta_class": np.arange(2, k + 1),
                              "class": np.arange(1, k + 1)}
    for i in s.observed_nodes:
        name = s.nodes[i]
        coords[f"{name}_category"] = [str(v) for v in s.labels[i]]
        posterior[f"theta_{name}"] = ((*cd, "class", f"{name}_category"),
                                      values[f"theta_{name}"])
    d = problem.distal
    tied = drop == "distal"
    by = () if tied else ("class",)
    pick = (lambda a: a[:, :, 0]) if tied else (lambda a: a)
    if d is not None and d.kind == "categorical":
        coords["distal_category"] = list(d.labels)
        posterior["distal_probs"] = ((*cd, *by, "distal_category"),
                                     pick(values["distal_probs"]))
    elif d is not None:
        posterior["distal_mean"] = ((*cd, *by), pick(values["distal_mean"]) * d.sd + d.mean)
        posterior["distal_sd"] = ((*cd, *by), pick(values["distal_sd"]) * d.sd)
    stats = {"lp": (cd, -draws.potential),
             "log_likelihood": (cd, values["loglik"] + problem.log_jacobian),
             "diverging": (cd, draws.diverging), "n_steps": (cd, draws.n_steps)}
    xr = xarray()
    used_coords = {c: v for c, v in coords.items()
                   if any(c in dims for dims, _ in posterior.values())}
    return arviz().InferenceData(
        posterior=xr.Dataset(posterior, coords=used_coords,
                             attrs={"engine": "covariate_posterior",
                                    "prior_scale": float(prior_scale),
                                    "drop": drop or "none"}),
        sample_stats=xr.Dataset(stats, coords={"chain": coords["chain"],
                                               "draw": coords["draw"]}))


def sample_model(problem: Problem, start: Start, drop: Drop, prior_scale: float, *,
                 chains: int, draws: int, warmup: int, key: jax.Array) -> Draws:
    """NUTS draws of the model with ``drop`` left out at ``prior_scale``."""
    return run_nuts(problem, start, problem.with_options(drop, prior_scale), drop,
                    chains=chains, draws=draws, warmup=warmup, key=key)


def posterior_result(problem: Problem, draws: Draws, drop: Drop, prior_scale: float, *,
                     seconds: float, seed, chains: int, n_draws: int, warmup: int
                     ) -> CovariatePosteriorResult:
    """The :class:`CovariatePosteriorResult` of ``draws``; warns (:class:`RhatWarning`)
    when a parameter's R-hat exceeds :data:`RHAT_THRESHOLD`."""
    d = problem.distal
    result = CovariatePosteriorResult(
        structure=problem.structure,
        covariates=Covariates.from_description(problem.covariates.to_dict()),
        terms=problem.covariates.names if drop != "covariates" else problem.covariates.names[:1],
        distal=None if d is None else {"name": d.name, "kind": d.kind, "labels": d.labels,
                                       "mean": d.mean, "sd": d.sd,
                                       "n_observed": d.n_observed},
        drop=drop, prior_scale=float(prior_scale),
        idata=_inference_data(problem, draws, drop, prior_scale), centre=problem.centre,
        scale=problem.scale, n_rows=problem.n_rows, n_used_rows=problem.n_used_rows,
        relabelled=draws.relabelled, seconds=seconds, seed=seed_record(seed), chains=chains,
        draws=n_draws, warmup=warmup)
    if chains > 1 and result.max_rhat > RHAT_THRESHOLD:
        warnings.warn(RhatWarning(
            f"a parameter's R-hat is {result.max_rhat:.3f} > {RHAT_THRESHOLD} "
            f"({'model without ' + drop if drop else 'full model'}): the chains disagree; "
            "raise draws and warmup"), stacklevel=3)
    return result


def check_sampling(chains, draws, warmup) -> tuple[int, int, int]:
    """``chains >= 1``, ``draws >= 4``, ``warmup >= 1`` as integers."""
    return (check_int(chains, "chains", 1), check_int(draws, "draws", 4),
            check_int(warmup, "warmup", 1))


def covariate_posterior(structure: Structure, data, *, covariates: CovariateSpec = None,
                        distal: DistalSpec = None,
                        distal_type: DistalType = "auto", drop: Drop = None,
                        prior_scale: float = DEFAULT_PRIOR_SCALE, chains: int = 4,
                        draws: int = 1000, warmup: int = 1000, restarts: int = 10,
                        seed: Seed = 0) -> CovariatePosteriorResult:
    """NUTS draws of the Bayesian latent class regression.

    The model and its priors: :mod:`.model`; the sampler: :mod:`.nuts`.

    Args:
        structure: a latent class structure (:func:`lcbayes.latent_class`), 2 to 6 classes.
        data: the items, in row order (a DataFrame, or a ``Dataset`` built from rows).
        covariates: the membership covariates, as :func:`lcbayes.em` takes them (a DataFrame
            of covariate columns, column name(s) of ``data``, or a ``Covariates``); rows
            lacking one are left out with a warning. ``None``: intercept-only membership.
        distal: a distal outcome (a column name of ``data``, a Series or a one-column
            DataFrame), class-dependent; missing values are summed out.
        distal_type: ``"auto"`` (numbers continuous, text/bool/Categorical categorical),
            ``"categorical"`` or ``"continuous"``.
        drop: ``None``, or the nested model: ``"covariates"`` (intercept-only membership on
            the same rows) or ``"distal"`` (the outcome independent of class).
        prior_scale: the prior SD of every coefficient on the standardised design.
        chains, draws, warmup: NUTS chains, kept draws and warm-up iterations per chain.
        restarts: EM restarts of the ML fit the chains start from.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            draws.
    """
    started, seed = start_engine(structure, seed)
    chains, draws, warmup = check_sampling(chains, draws, warmup)
    prior_scale = check_positive(prior_scale, "prior_scale")
    restarts = check_int(restarts, "restarts", 1)
    problem = build_problem(structure, data, covariates=covariates, distal=distal,
                            distal_type=distal_type)
    drop = check_drop(drop, problem)
    start = fit_start(problem, data, distal=distal, distal_type=distal_type,
                      restarts=restarts, seed=seed)
    found = sample_model(problem, start, drop, prior_scale, chains=chains, draws=draws,
                         warmup=warmup, key=prng_key(seed))
    return posterior_result(problem, found, drop, prior_scale,
                            seconds=time.perf_counter() - started, seed=seed, chains=chains,
                            n_draws=draws, warmup=warmup)


def covariate_model(structure: Structure, data, *, covariates: CovariateSpec = None,
                    distal: DistalSpec = None,
                    distal_type: DistalType = "auto", drop: Drop = None,
                    prior_scale: float = DEFAULT_PRIOR_SCALE) -> tuple[Callable[..., None], tuple]:
    """The NumPyro model of the Bayesian latent class regression, with its data.

    Returns ``(model, model_data)``: ``model(model_data)`` is the model of
    :mod:`.model` (arguments as :func:`covariate_posterior`), e.g. for
    ``lcb.ais_numpyro(model, model_data)`` or ``numpyro.infer.MCMC``; ``model_data`` is a
    ``BayesData`` (a NamedTuple of arrays)."""
    check_positive(prior_scale, "prior_scale")
    problem = build_problem(structure, data, covariates=covariates, distal=distal,
                            distal_type=distal_type)
    drop = check_drop(drop, problem)
    return lcr_model(problem.spec), problem.with_options(drop, prior_scale)
