"""lcbayes: Bayesian model comparison for discrete Bayesian networks with hidden variables.

This module is the one place the public API is listed. Importing lcbayes switches JAX to
64-bit floats (``jax_enable_x64``): log evidences need float64.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from .cache import enable_compilation_cache  # noqa: E402
from .data import Dataset  # noqa: E402
from .em import EMResult, em  # noqa: E402
from .errors import DataError, LcbayesError, StructureError, TooLargeError  # noqa: E402
from .inference import (  # noqa: E402
    expected_counts,
    family_posteriors,
    hidden_posteriors,
    log_likelihood,
)
from .models import numpyro_model  # noqa: E402
from .params import dirichlet_prior, log_prior, random_params, simulate  # noqa: E402
from .scores import to_deviance_scale  # noqa: E402
from .structure import Structure, dag, hlc, latent_class  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "DataError",
    "Dataset",
    "EMResult",
    "LcbayesError",
    "Structure",
    "StructureError",
    "TooLargeError",
    "__version__",
    "dag",
    "dirichlet_prior",
    "em",
    "enable_compilation_cache",
    "expected_counts",
    "family_posteriors",
    "hidden_posteriors",
    "hlc",
    "latent_class",
    "log_likelihood",
    "log_prior",
    "numpyro_model",
    "random_params",
    "simulate",
    "to_deviance_scale",
]
