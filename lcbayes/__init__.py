"""lcbayes: Bayesian model comparison for discrete Bayesian networks with hidden variables.

This module is the one place the public API is listed. Importing lcbayes switches JAX to
64-bit floats (``jax_enable_x64``): log evidences need float64.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from .ais import ais  # noqa: E402
from .ais_numpyro import ais_numpyro  # noqa: E402
from .alias import alias_count, log_alias  # noqa: E402
from .annealing import AISResult  # noqa: E402
from .cache import enable_compilation_cache  # noqa: E402
from .compare import Comparison, compare  # noqa: E402
from .data import Dataset  # noqa: E402
from .diagnostics import Diagnostics, RhatWarning, diagnostics  # noqa: E402
from .dimension import DimensionResult, effective_dimension, effective_dimension_details  # noqa: E402
from .em import EMResult, em  # noqa: E402
from .errors import DataError, LcbayesError, StructureError, TooLargeError  # noqa: E402
from .exact import ExactEvidence, exact_evidence  # noqa: E402
from .gibbs import gibbs  # noqa: E402
from .inference import (  # noqa: E402
    expected_counts,
    family_posteriors,
    hidden_posteriors,
    log_likelihood,
)
from .models import numpyro_model  # noqa: E402
from .params import dirichlet_prior, log_prior, random_params, simulate  # noqa: E402
from .relabel import Relabelled, condition_on_k, relabel  # noqa: E402
from .rjmcmc import posterior_k, rjmcmc  # noqa: E402
from .scores import to_deviance_scale  # noqa: E402
from .structure import Structure, dag, hlc, latent_class  # noqa: E402
from .vbem import BoundTerms, VBResult, bound_terms, vbem  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AISResult",
    "BoundTerms",
    "Comparison",
    "DataError",
    "Dataset",
    "Diagnostics",
    "DimensionResult",
    "EMResult",
    "ExactEvidence",
    "LcbayesError",
    "Relabelled",
    "RhatWarning",
    "Structure",
    "StructureError",
    "TooLargeError",
    "VBResult",
    "__version__",
    "ais",
    "ais_numpyro",
    "alias_count",
    "bound_terms",
    "compare",
    "condition_on_k",
    "dag",
    "diagnostics",
    "dirichlet_prior",
    "effective_dimension",
    "effective_dimension_details",
    "em",
    "enable_compilation_cache",
    "exact_evidence",
    "expected_counts",
    "family_posteriors",
    "gibbs",
    "hidden_posteriors",
    "hlc",
    "latent_class",
    "log_alias",
    "log_likelihood",
    "log_prior",
    "numpyro_model",
    "posterior_k",
    "random_params",
    "relabel",
    "rjmcmc",
    "simulate",
    "to_deviance_scale",
    "vbem",
]
