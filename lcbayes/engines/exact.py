"""Exact marginal likelihood ``ln p(y | m)`` of a small discrete DAG with hidden variables.

Under independent Dirichlet priors on every CPT row (Beal & Ghahramani eq. 3) the evidence is a
sum over every completion ``z = (s, y)`` of the rows (eq. 9) of the closed-form complete-data
evidence (eq. 5), which depends on ``z`` only through its counts ``N_jlk`` (eq. 6)::

    p(y | m) = sum_N  #{z : counts(z) = N}  prod_{j,l} B(lambda_jl + N_jl) / B(lambda_jl)

:func:`exact_evidence` sums over the *distinct count tables* ``N`` instead of over the
``prod_rows S_row`` completions:

* **Per pattern, not per row.** The ``c`` identical rows of a data pattern matter only through
  how many of them take each of the pattern's ``S`` joint free states, so a pattern contributes
  the ``C(c + S - 1, S - 1)`` compositions ``(n_1 .. n_S)`` of ``c``, each standing for
  ``c! / prod_s n_s!`` completions (the rows are an *ordered* sequence).
* **Dynamic programme over sufficient statistics.** Patterns are added one at a time (fewest
  compositions first) to a table ``{count table: log number of completions}``; completions that
  reach the same counts are merged at once (log-sum-exp). This collapses the exponential sum to
  the number of distinct count tables, ``n_terms``. The tables lie on the lattice
  ``base + span{v_ps - v_p0}`` of the per-pattern count increments ``v_ps``, so only a basis of its
  coordinates is kept, packed exactly (mixed radix, no hashing) into int64 keys that add like the
  counts they encode.
* **Final sum.** Eq. 5 is evaluated for every distinct table one CPT row at a time: with
  ``ln B`` (:func:`lcbayes.engines.exact_dp.log_beta`) on the grid of that
  row's possible counts and a gather (or on its distinct count vectors when the grid is large),
  then ``logsumexp(log #completions + ln p(z | m))``.

The *free* variables of a pattern: every node that is an ancestor of an observed value of the
pattern (itself included) is *active* and adds one count to its CPT row in every completion;
active hidden nodes and active observed nodes whose value is missing (observed parents of a DAG)
are enumerated. Every other node — an observed leaf with a missing value, a hidden node with no
observed descendant in that row — sums out to a factor of one exactly (the Dirichlet-multinomial
is consistent under marginalisation), so it adds no count: missing values are marginalised, never
dropped or imputed. A row with no observed value contributes a factor of one. A structure with no
hidden node, or whose hidden nodes all have one state, is a single count table (closed form).
Label symmetry needs no correction: every labelling of the hidden states is a completion summed.

Cost: before summing, ``n_terms`` is bounded by
``min(prod_p C(c_p + S_p - 1, S_p - 1), prod_d (range_d + 1))`` over the basis coordinates ``d``
(a rigorous upper bound, loose with missing values) and
:class:`~lcbayes.errors.TooLargeError` is raised when it exceeds ``max_terms``. The work is
about ``n_terms`` times the compositions of the last patterns, plus sorting; missing values
multiply the count (each item's table gains one free dimension per class).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import pandas as pd

from ..errors import StructureError
from ..params import PriorSpec, prior_tables
from ..structure import Structure
from ..validation import check_positive, check_structure, observed_data

__all__ = ["ExactEvidenceResult", "exact_evidence"]


@dataclass(frozen=True)
class ExactEvidenceResult:
    """Result of :func:`exact_evidence`.

    Attributes:
        log_evidence: ``ln p(y | m)`` (natural log) of the rows as an ordered sequence.
        n_terms: number of distinct complete-data count tables summed (Dirichlet integrals).
        seconds: wall-clock time.
        method: ``"closed form"`` (a single count table: nothing hidden to sum over) or
            ``"sufficient-statistics DP"``.
        log10_completions: log10 of the number of completions (joint values of the hidden and
            missing variables of every row) that the sum covers.
        estimated_terms: the upper bound on ``n_terms`` compared with ``max_terms``.
    """

    log_evidence: float
    n_terms: int
    seconds: float
    method: str
    log10_completions: float
    estimated_terms: float

    def to_dict(self) -> dict:
        """JSON-ready dictionary (``method`` is ``"exact"``; the algorithm is ``algorithm``);
        :meth:`from_dict` reads it back."""
        out = asdict(self)
        out["algorithm"] = out.pop("method")
        if not math.isfinite(out["estimated_terms"]):
            out["estimated_terms"] = None
        return {"method": "exact", **out}

    @classmethod
    def from_dict(cls, spec: dict) -> ExactEvidenceResult:
        """The result of :meth:`to_dict`."""
        terms = spec["estimated_terms"]
        return cls(log_evidence=float(spec["log_evidence"]), n_terms=int(spec["n_terms"]),
                   seconds=float(spec["seconds"]), method=str(spec["algorithm"]),
                   log10_completions=float(spec["log10_completions"]),
                   estimated_terms=math.inf if terms is None else float(terms))

    def to_frame(self) -> pd.DataFrame:
        """One row: ``log_evidence``, ``n_terms``, ``algorithm``, ``log10_completions``,
        ``estimated_terms``, ``seconds``."""
        out = self.to_dict()
        out.pop("method")
        return pd.DataFrame([out])

    def summary(self) -> str:
        """A short printout."""
        return (f"Exact log evidence ln p(y | m) = {self.log_evidence:.6f}\n"
                f"  {self.method}: {self.n_terms} distinct count tables covering "
                f"10^{self.log10_completions:.1f} completions, {self.seconds:.2f} s")


def exact_evidence(
    structure: Structure,
    data,
    *,
    prior: PriorSpec = "dirichlet",
    max_terms: float = 1e7,
) -> ExactEvidenceResult:
    """Exact ``ln p(y | m) = ln ∫ p(θ) p(y | θ) dθ`` under independent Dirichlet priors.

    Args:
        structure: a latent class, HLC or DAG structure (no hidden node is fine: closed form).
            Missing values of observed parents in a DAG are summed over like hidden values.
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes);
            missing values are marginalised exactly; rows with no observed value contribute a
            factor of one.
        prior: Dirichlet pseudo-counts as everywhere in lcbayes (``"dirichlet"`` = 1 for every
            CPT entry, a number, or ``{node: number or array}``); ``None`` is refused.
        max_terms: refuse (:class:`~lcbayes.errors.TooLargeError`) when the upper bound on the
            number of distinct complete-data count tables to sum exceeds this.

    Returns:
        An :class:`ExactEvidenceResult`. The evidence is that of the rows as an ordered sequence,
        ``∫ p(θ) prod_rows p(y_row | θ) dθ``, the quantity that VB bounds and AIS estimates.
    """
    from scipy.special import logsumexp  # loaded on use, not when a command starts

    from .exact_dp import CountTablePlan, pattern_increments, too_large_error

    start = time.perf_counter()
    check_structure(structure)
    max_terms = check_positive(max_terms, "max_terms")
    data = observed_data(structure, data)
    alphas = prior_tables(structure, prior)
    if alphas is None:
        raise StructureError(
            "exact_evidence needs a proper Dirichlet prior: pass prior='dirichlet', a number or "
            "{node: pseudo-counts}, not None"
        )
    patterns, offsets = pattern_increments(structure, data, max_terms)
    plan = CountTablePlan(structure, patterns, offsets)
    log10_bound = plan.log10_bound()
    # a count of terms: round away the last-bit error of 10**log10 (keeps it an upper bound)
    bound = float(round(10.0**log10_bound)) if log10_bound < 300 else math.inf
    if log10_bound > math.log10(max_terms):
        raise too_large_error(structure, data, bound, max_terms)
    keys, log_w = plan.run()
    log_p = plan.log_complete_evidence(keys, alphas)
    return ExactEvidenceResult(
        log_evidence=float(logsumexp(log_w + log_p)),
        n_terms=int(keys.shape[0]),
        seconds=time.perf_counter() - start,
        method="closed form" if plan.closed_form else "sufficient-statistics DP",
        log10_completions=plan.log_completions / math.log(10),
        estimated_terms=bound,
    )
