"""Checking a fitted posterior: does the model reproduce the data, and which model predicts a
new row best. Above the samplers (it reads their draws), below the comparison.

* :mod:`.loo` — PSIS-LOO and WAIC on the data's patterns, with exact refits where the Pareto
  ``k`` is too high (:func:`lcbayes.loo`);
* :mod:`.ppc` — posterior predictive checks: replicated data sets and the realised-discrepancy
  p-values of margins, item pairs, G^2 / X^2 and frequent patterns
  (:func:`lcbayes.posterior_predictive_check`).
"""

from .. import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)
