"""lcbayes: Bayesian model comparison for discrete Bayesian networks with hidden variables.

This module is the one place the public API is listed. Importing lcbayes switches JAX to
64-bit floats (``jax_enable_x64``): log evidences need float64.

The layers, bottom up (``ARCHITECTURE.md`` in the repository has one line per module):
data (:mod:`.data`, :mod:`.encoding`), structures (:mod:`.structure`), parameters and priors
(:mod:`.params`), the argument boundary (:mod:`.validation`), exact inference
(:mod:`.inference`), engines (:mod:`.engines`: EM, VBEM, AIS, exact evidence), samplers
(:mod:`.samplers`: Gibbs, reversible jump, relabelling, diagnostics), scores (:mod:`.scores`,
:mod:`.dimension`, :mod:`.alias`), comparison (:mod:`.comparison`), and on the output side
:mod:`.render` and the command line (:mod:`.cli`).
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from ._version import __version__  # noqa: E402
from .alias import alias_count, log_alias  # noqa: E402
from .cache import enable_compilation_cache  # noqa: E402
from .comparison import Comparison, compare  # noqa: E402
from .constructors import dag, hlc, latent_class  # noqa: E402
from .data import Dataset  # noqa: E402
from .dimension import DimensionResult, effective_dimension, effective_dimension_details  # noqa: E402
from .engines.ais import ais  # noqa: E402
from .engines.ais_numpyro import ais_numpyro  # noqa: E402
from .engines.annealing import AISResult  # noqa: E402
from .engines.em import EMResult, em  # noqa: E402
from .engines.exact import ExactEvidence, exact_evidence  # noqa: E402
from .engines.vbem import BoundTerms, VBResult, bound_terms, vbem  # noqa: E402
from .errors import (  # noqa: E402
    ArgumentError,
    ArgumentTypeError,
    DataError,
    LcbayesError,
    StructureError,
    TooLargeError,
)
from .inference import (  # noqa: E402
    expected_counts,
    family_posteriors,
    hidden_posteriors,
    log_likelihood,
)
from .models import numpyro_model  # noqa: E402
from .params import dirichlet_prior, log_prior, random_params, simulate  # noqa: E402
from .samplers.diagnostics import Diagnostics, RhatWarning, diagnostics  # noqa: E402
from .samplers.gibbs import gibbs  # noqa: E402
from .samplers.idata import condition_on_k  # noqa: E402
from .samplers.relabelling import Relabelled, relabel  # noqa: E402
from .samplers.results import GibbsResult, RJMCMCResult  # noqa: E402
from .samplers.rjmcmc import posterior_k, rjmcmc  # noqa: E402
from .scores import to_deviance_scale  # noqa: E402
from .structure import Structure  # noqa: E402

__all__ = [
    "AISResult",
    "ArgumentError",
    "ArgumentTypeError",
    "BoundTerms",
    "Comparison",
    "DataError",
    "Dataset",
    "Diagnostics",
    "DimensionResult",
    "EMResult",
    "ExactEvidence",
    "GibbsResult",
    "LcbayesError",
    "RJMCMCResult",
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
