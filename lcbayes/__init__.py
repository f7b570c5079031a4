"""lcbayes: Bayesian model comparison for discrete Bayesian networks with hidden variables.

This module is the one place the public API is listed (:data:`API`: each public name and the
module that defines it). Names load on first use (PEP 562), so ``import lcbayes`` is quick and
imports neither JAX nor pandas; the first use of a name that computes with JAX switches JAX to
64-bit floats and turns on the persistent compilation cache (:mod:`lcbayes.jax_setup`).

The layers, bottom up (``ARCHITECTURE.md`` in the repository has one line per module):
data (:mod:`.data`, :mod:`.encoding`), structures (:mod:`.structure`, :mod:`.constructors`),
parameters and priors (:mod:`.params`), the argument boundary (:mod:`.validation`), exact
inference (:mod:`.inference`), engines (:mod:`.engines`: EM, VBEM, AIS, exact evidence),
samplers (:mod:`.samplers`: Gibbs, reversible jump, relabelling, diagnostics), scores
(:mod:`.scores`, :mod:`.dimension`, :mod:`.alias`), comparison (:mod:`.comparison`), and on the
output side :mod:`.render` and the command line (:mod:`.cli`).
"""

from __future__ import annotations

import importlib

from ._version import __version__ as __version__

#: Every public name and the module that defines it.
API: dict[str, str] = {
    # data and structures
    "Dataset": "lcbayes.data",
    "datasets": "lcbayes.datasets",
    "scan_file": "lcbayes.streaming.reader",
    "PatternBlocks": "lcbayes.streaming.blocks",
    "Structure": "lcbayes.structure",
    "latent_class": "lcbayes.constructors",
    "hlc": "lcbayes.constructors",
    "dag": "lcbayes.constructors",
    # parameters, priors, simulation, exact inference
    "dirichlet_prior": "lcbayes.params",
    "log_prior": "lcbayes.params",
    "random_params": "lcbayes.params",
    "simulate": "lcbayes.params",
    "log_likelihood": "lcbayes.inference",
    "hidden_posteriors": "lcbayes.inference",
    "expected_counts": "lcbayes.inference",
    "family_posteriors": "lcbayes.inference",
    "numpyro_model": "lcbayes.models",
    # engines and their results
    "em": "lcbayes.engines.em",
    "EMResult": "lcbayes.engines.em",
    "RegressionResult": "lcbayes.engines.regression",
    "Covariates": "lcbayes.engines.regression",
    "covariate_design": "lcbayes.engines.regression",
    "covariate_model": "lcbayes.covariate_bayes.posterior",
    "covariate_posterior": "lcbayes.covariate_bayes.posterior",
    "CovariatePosteriorResult": "lcbayes.covariate_bayes.posterior",
    "covariate_evidence": "lcbayes.covariate_bayes.evidence",
    "CovariateEvidenceResult": "lcbayes.covariate_bayes.evidence",
    "three_step": "lcbayes.engines.regression.three_step",
    "ThreeStepResult": "lcbayes.engines.regression.three_step_result",
    "GroupResult": "lcbayes.engines.groups.result",
    "invariance_model": "lcbayes.engines.groups.layout",
    "invariance_test": "lcbayes.engines.groups.deviance",
    "InvarianceTestResult": "lcbayes.engines.groups.deviance",
    "compare_invariance": "lcbayes.comparison.invariance",
    "InvarianceComparisonResult": "lcbayes.comparison.invariance",
    "vbem": "lcbayes.engines.vbem",
    "VBResult": "lcbayes.engines.vbem",
    "bound_terms": "lcbayes.engines.vbem",
    "BoundTermsResult": "lcbayes.engines.vbem",
    "ais": "lcbayes.engines.ais",
    "ais_numpyro": "lcbayes.engines.ais_numpyro",
    "AISResult": "lcbayes.engines.annealing",
    "exact_evidence": "lcbayes.engines.exact",
    "ExactEvidenceResult": "lcbayes.engines.exact",
    "laplace": "lcbayes.engines.laplace",
    "LaplaceResult": "lcbayes.engines.laplace",
    "LaplaceWarning": "lcbayes.engines.laplace",
    "chib": "lcbayes.samplers.chib",
    "ChibResult": "lcbayes.samplers.chib",
    "stream_em": "lcbayes.streaming.block_em",
    "stream_vbem": "lcbayes.streaming.block_em",
    "stepwise_em": "lcbayes.streaming.stepwise",
    "StreamEMResult": "lcbayes.streaming.result",
    "StreamVBResult": "lcbayes.streaming.result",
    # samplers
    "gibbs": "lcbayes.samplers.gibbs",
    "GibbsResult": "lcbayes.samplers.results",
    "rjmcmc": "lcbayes.samplers.rjmcmc",
    "RJMCMCResult": "lcbayes.samplers.results",
    "KMixingResult": "lcbayes.samplers.results",
    "KMixingWarning": "lcbayes.samplers.results",
    "posterior_k": "lcbayes.samplers.rjmcmc",
    "smc": "lcbayes.samplers.smc_evidence",
    "SMCResult": "lcbayes.samplers.smc_result",
    "bridge_sampling": "lcbayes.samplers.gibbs_bridge",
    "BridgeResult": "lcbayes.samplers.gibbs_bridge",
    "allocation_sampler": "lcbayes.samplers.allocation",
    "AllocationResult": "lcbayes.samplers.allocation",
    "condition_on_k": "lcbayes.samplers.idata",
    "relabel": "lcbayes.samplers.relabelling",
    "RelabelResult": "lcbayes.samplers.relabelling",
    "diagnostics": "lcbayes.samplers.diagnostics",
    "DiagnosticsResult": "lcbayes.samplers.diagnostics",
    # checking a posterior
    "loo": "lcbayes.checking.loo",
    "LOOResult": "lcbayes.checking.loo",
    "posterior_predictive_check": "lcbayes.checking.ppc",
    "PPCResult": "lcbayes.checking.ppc",
    "RhatWarning": "lcbayes.samplers.diagnostics",
    # scores
    "to_deviance_scale": "lcbayes.scores",
    "effective_dimension": "lcbayes.dimension",
    "effective_dimension_details": "lcbayes.dimension",
    "DimensionResult": "lcbayes.dimension",
    "identifiable": "lcbayes.identifiability",
    "IdentifiabilityResult": "lcbayes.identifiability",
    "alias_count": "lcbayes.alias",
    "fit_indices": "lcbayes.indices",
    "goodness_of_fit": "lcbayes.indices",
    "classification_quality": "lcbayes.indices",
    "ClassificationQualityResult": "lcbayes.indices",
    "GoodnessOfFitResult": "lcbayes.indices",
    "bivariate_residuals": "lcbayes.indices",
    "standard_errors": "lcbayes.information",
    "boundary_entries": "lcbayes.information",
    "blrt": "lcbayes.lrt",
    "lmr": "lcbayes.lrt",
    "BLRTResult": "lcbayes.lrt",
    "LMRResult": "lcbayes.lrt",
    "StandardErrorWarning": "lcbayes.information",
    "log_alias": "lcbayes.alias",
    # structure learning
    "learn_classes": "lcbayes.learn",
    "learn_hlc": "lcbayes.learn",
    "learn_tree": "lcbayes.learn",
    "LearnResult": "lcbayes.learn",
    # scikit-learn
    "LatentClassModel": "lcbayes.estimator",
    # comparison
    "compare": "lcbayes.comparison",
    "ComparisonResult": "lcbayes.comparison",
    # the compilation cache
    "Executor": "lcbayes.execution",
    "enable_compilation_cache": "lcbayes.cache",
    "disable_compilation_cache": "lcbayes.cache",
    # errors
    "LcbayesError": "lcbayes.errors",
    "ArgumentError": "lcbayes.errors",
    "ArgumentTypeError": "lcbayes.errors",
    "DataError": "lcbayes.errors",
    "StructureError": "lcbayes.errors",
    "TooLargeError": "lcbayes.errors",
    "ConvergenceWarning": "lcbayes.errors",
}

__all__ = sorted([*API, "__version__"])


def __getattr__(name: str):
    """Import the module of a public name on its first use (module docstring)."""
    module = API.get(name)
    if module is None:
        raise AttributeError(f"module 'lcbayes' has no attribute {name!r}")
    value = importlib.import_module(module)
    if module != f"{__name__}.{name}":   # a name in a module, else a public module
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *API})
