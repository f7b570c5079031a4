"""Bayesian latent class regression: the posterior and the evidence of class membership on
covariates (and of a distal outcome by class), above the samplers in the layer diagram.

* :mod:`.model` — the NumPyro model, classes summed out over (pattern, covariate) cells;
* :mod:`.problem` — its data (covariates standardised, cells padded) and the chains' start;
* :mod:`.nuts` — NUTS chains in one compiled program, draws aligned to the ML fit's labels;
* :mod:`.posterior` — :func:`lcbayes.covariate_posterior` and its result (ArviZ draws);
* :mod:`.bridge` — bridge sampling from the NUTS draws, symmetrised over the labels;
* :mod:`.evidence` — :func:`lcbayes.covariate_evidence`, the log Bayes factor of covariates.

The maximum-likelihood regression these start from is :mod:`lcbayes.engines.regression`.
"""

from .. import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)
