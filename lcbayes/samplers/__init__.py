"""Posterior sampling of latent class models and what follows it: Gibbs sampling at a fixed
number of classes (:mod:`.gibbs`), reversible jump over the number of classes (:mod:`.rjmcmc`),
their results (:mod:`.results`) stored as ArviZ ``InferenceData`` (:mod:`.idata`), label
switching (:mod:`.relabelling`), convergence diagnostics with reports (:mod:`.diagnostics`),
and the evidence estimators that read posterior draws: reference-tempered SMC
(:mod:`.smc_evidence`), bridge sampling from Gibbs chains (:mod:`.gibbs_bridge`) and Chib's
estimator (:mod:`.chib`).
"""

from .. import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)
