"""Bayesian model comparison of candidate structures on one data set.

The package is the pipeline of :func:`compare`, one module a stage::

    candidates ─► needs (engine runs) ─► methods (scores) ─► flags ─► choice of evidence
               ─► table (ComparisonResult) ─► report / figures

* :mod:`.candidates`: the structures compared and their names;
* :mod:`.registry`: the **method registry** (methods, the engine runs they need, flags);
* :mod:`.needs`: the engine runs (exact evidence, effective dimension, EM, VBEM, AIS);
* :mod:`.methods`: the built-in methods, one module each (bic, bic_e, aic, icl, cs, bicp,
  vbem, ais, exact);
* :mod:`.flags`: the diagnostic flags and their thresholds;
* :mod:`.evidence`: the choice of each row's log evidence and posterior model probabilities;
* :mod:`.table`: :class:`ComparisonResult`, the tidy table and its JSON form;
* :mod:`.report`, :mod:`.figures`: text, HTML and Markdown reports;
* :mod:`.run`: :func:`compare` itself.

Every number is on the natural-log evidence scale, ``ln p(y | m)``, **higher is better**
(:mod:`lcbayes.scores`).

Example::

    comp = lcb.compare(data, n_classes=range(1, 6), seed=0)
    comp.to_frame()[["name", "bic", "elbo_corrected", "ais", "posterior_prob", "flags"]]
    comp.to_html("reports/survey.html")
"""

from __future__ import annotations

from . import methods as _built_in  # noqa: F401  (registers the built-in methods)
from .engine_options import COMPARE_DEFAULTS
from .evidence import POSTERIOR_DRAWS, POSTERIOR_LEVEL, posterior_probabilities
from .flags import (
    AIS_BELOW_VBEM_SE,
    AIS_MIN_ESS_FRACTION,
    AIS_OFF_EXACT_SE,
    EMPTY_CLASS_Z,
    LOCAL_OPTIMUM_TOL,
    SINGULAR_LEVEL,
    singular_reasons,
)
from .needs import CandidateFits
from .registry import (
    Column,
    EvidenceRole,
    Flag,
    Method,
    Need,
    default_methods,
    register,
    register_flag,
    register_need,
    selectable_methods,
    unregister,
    unregister_need,
)
from .run import compare
from .table import ComparisonResult

__all__ = [
    "AIS_BELOW_VBEM_SE",
    "AIS_MIN_ESS_FRACTION",
    "AIS_OFF_EXACT_SE",
    "COMPARE_DEFAULTS",
    "EMPTY_CLASS_Z",
    "LOCAL_OPTIMUM_TOL",
    "POSTERIOR_DRAWS",
    "POSTERIOR_LEVEL",
    "SINGULAR_LEVEL",
    "CandidateFits",
    "Column",
    "ComparisonResult",
    "EvidenceRole",
    "Flag",
    "Method",
    "Need",
    "compare",
    "default_methods",
    "posterior_probabilities",
    "register",
    "register_flag",
    "register_need",
    "selectable_methods",
    "singular_reasons",
    "unregister",
    "unregister_need",
]
