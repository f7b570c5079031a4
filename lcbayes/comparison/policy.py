"""Which estimate of ``ln p(y | m)`` :func:`lcbayes.compare` trusts, in one place: every
estimator's priority, the flags that veto it, the thresholds behind those flags, the rule that
combines the two independent estimates of a latent class model, and the table the
documentation prints (:func:`trust_table`, checked against ``docs/guide/evidence.md``).

**The rule.** A candidate's ``log_evidence`` is the finite, unvetoed estimate of lowest
priority (:data:`ROLES`): the exact sum where it is small enough; else ``smc_evidence``, the
combination of reference-tempered SMC and bridge sampling (:func:`combine`); else AIS, Chib,
Laplace. Every estimate comes with its error bar; none is refused for being wide. A lower
bound is never an estimate: the VB bound ``F`` has no role, it only vetoes an estimate that
falls below it by more than :data:`BELOW_BOUND_SE` of its standard errors (``F <= ln p``, so
such an estimate is known to be wrong).

**Two estimates of one number** (:func:`combine`). Where SMC and bridge sampling agree within
:data:`DISAGREE_SE` combined standard errors, ``smc_evidence`` is their inverse-variance
weighted mean (they share no draw, so their errors are independent); where they disagree, at
least one error bar is too small, the row is flagged ``evidence_disagree`` and the estimate is
the middle of the union of their 95% intervals, with the half-width of that union as its 95%
half-width: the wider interval, not a choice between them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import ndtri

from ..engines.annealing import LOW_ESS_FRACTION, NO_ESTIMATE_ESS
from ..samplers.chib import CHAIN_SPREAD_SE, MAX_CHAIN_SPREAD, MAX_CLASSES, MIN_ORDINATE_ESS
from ..samplers.smc_result import ROUNDING
from . import registry
from .registry import EvidenceRole

__all__ = ["AIS_BELOW_VBEM_SE", "AIS_MIN_ESS_FRACTION", "AIS_NO_ESTIMATE_ESS",
           "AIS_OFF_EXACT_SE", "BELOW_BOUND_SE", "DISAGREE_SE", "ROLES", "TRUST",
           "choose_evidence", "combine", "trust_table"]

#: Two estimates of one evidence disagree beyond this many combined standard errors.
DISAGREE_SE = 2.0
#: An SMC/bridge estimate below the uncorrected VB bound by more than this many of its
#: standard errors is wrong (``F <= ln p(y | m)``) and is not used.
BELOW_BOUND_SE = 2.0
#: ``ais_below_vbem``: AIS below the uncorrected VB bound by more than this many AIS s.e.
AIS_BELOW_VBEM_SE = 3.0
#: ``ais_low_ess``: the AIS effective number of chains below this fraction of the chains.
AIS_MIN_ESS_FRACTION = LOW_ESS_FRACTION
#: ``ais_no_estimate``: the AIS effective number of chains below this.
AIS_NO_ESTIMATE_ESS = NO_ESTIMATE_ESS
#: ``ais_off_exact``: AIS misses the exact evidence by more than this many standard errors.
AIS_OFF_EXACT_SE = 3.0

#: Every estimator of ``ln p(y | m)`` that can be a candidate's ``log_evidence``, by method.
ROLES: dict[str, EvidenceRole] = {
    "exact": EvidenceRole(priority=0, value="exact", stderr=0.0),
    "smc": EvidenceRole(priority=0.5, value="smc_evidence", stderr="smc_evidence_stderr",
                        vetoed_by=("smc_below_vbem",)),
    "ais": EvidenceRole(priority=1, value="ais", stderr="ais_stderr",
                        vetoed_by=("ais_below_vbem", "ais_no_estimate")),
    "chib": EvidenceRole(priority=1.5, value="chib", stderr="chib_stderr",
                         vetoed_by=("chib_unreliable",)),
    "laplace": EvidenceRole(priority=2.5, value="laplace"),
    "laplace_block": EvidenceRole(priority=2.6, value="laplace_block"),
    "laplace_diag": EvidenceRole(priority=2.7, value="laplace_diag"),
}

#: For the documentation's table: per method, what it is, when to use it and when not to
#: trust it (the vetoes are the table's own column).
TRUST: dict[str, tuple[str, str, str]] = {
    "exact": ("the sum over every complete-data count table", "small problems (one class at "
              "any size)", "always exact; too large past max_terms"),
    "smc": ("reference-tempered SMC and bridge sampling from Gibbs chains, combined",
            "latent class models at any size, the default", "flagged evidence_disagree (the "
            "interval is then the union of both) or smc_reference_moving"),
    "ais": ("annealed importance sampling from the prior", "small data",
            f"ais_low_ess (effective chains below {AIS_MIN_ESS_FRACTION:.0%}); at survey "
            "sizes its path crosses a phase transition and comes out tens of nats low"),
    "chib": ("Chib's candidate estimator, symmetrised over K! labellings",
             f"K <= {MAX_CLASSES} where the chains agree",
             f"chains spread more than {MAX_CHAIN_SPREAD:g} nats and {CHAIN_SPREAD_SE:g} "
             f"s.e., or fewer than {MIN_ORDINATE_ESS:g} effective draws (over-fitted K)"),
    "laplace": ("the Laplace approximation at the MAP fit (softmax basis) + ln S",
                "a quick large-sample approximation", "no error bar; off by O(1) nats"),
    "laplace_block": ("Laplace with a block-diagonal Hessian", "comparison with Whiley 1999",
                      "no error bar"),
    "laplace_diag": ("Laplace with a diagonal Hessian", "comparison with Whiley 1999",
                     "no error bar"),
}


def combine(first: tuple[float, float], second: tuple[float, float]
            ) -> tuple[float, float, bool]:
    """``(estimate, standard error, agree)`` of two independent estimates ``(value, s.e.)`` of
    one log evidence (module docstring); one missing (NaN): the other, agreeing."""
    (a, sa), (b, sb) = first, second
    if not np.isfinite(a) or not np.isfinite(b):
        value, se = (a, sa) if np.isfinite(a) else (b, sb)
        return float(value), float(se), True
    sa, sb = (float(s) if np.isfinite(s) else math.inf for s in (sa, sb))
    combined = math.hypot(sa, sb) if np.isfinite(sa) and np.isfinite(sb) else math.inf
    if abs(a - b) <= DISAGREE_SE * combined + ROUNDING:
        if np.isinf(sa) or np.isinf(sb):
            # the one with a standard error (SMC's where neither has one)
            return ((float(a), sa if np.isfinite(sa) else math.nan, True) if np.isinf(sb)
                    else (float(b), sb, True))
        wa, wb = (1.0 / max(sa, 1e-12) ** 2, 1.0 / max(sb, 1e-12) ** 2)
        return float((wa * a + wb * b) / (wa + wb)), float(math.sqrt(1.0 / (wa + wb))), True
    z = float(ndtri(0.975))
    low = min(a - z * np.nan_to_num(sa, posinf=0.0), b - z * np.nan_to_num(sb, posinf=0.0))
    high = max(a + z * np.nan_to_num(sa, posinf=0.0), b + z * np.nan_to_num(sb, posinf=0.0))
    return float((low + high) / 2), float((high - low) / (2 * z)), False


def choose_evidence(row: dict, flags: Sequence[str]) -> tuple[float, str, float]:
    """``(log_evidence, evidence_method, stderr)`` of one row of scores with the names of its
    flags (module docstring): among the registered methods with a role (the built-in ones'
    are :data:`ROLES`; a method registered elsewhere brings its own), the finite, unvetoed one
    of lowest priority; ``"none"`` if there is none."""
    roles = sorted(((m.name, m.evidence) for m in registry.methods() if m.evidence is not None),
                   key=lambda pair: pair[1].priority)
    for name, role in roles:
        value = row.get(role.value, np.nan)
        if not np.isfinite(value) or any(f in flags for f in role.vetoed_by):
            continue
        if isinstance(role.stderr, str):
            se = row.get(role.stderr, np.nan)
            se = float(se) if np.isfinite(se) else np.nan
        else:
            se = float(role.stderr)
        return float(value), name, se
    return np.nan, "none", np.nan


def trust_table() -> str:
    """The documentation's Markdown table: which estimate ``compare`` uses, in order."""
    lines = ["| priority | method | what it is | use it for | do not trust it when | vetoed by |",
             "|---:|---|---|---|---|---|"]
    for name, role in sorted(ROLES.items(), key=lambda pair: pair[1].priority):
        what, when, distrust = TRUST[name]
        vetoes = ", ".join(f"`{v}`" for v in role.vetoed_by) or "-"
        lines.append(f"| {role.priority:g} | `{name}` | {what} | {when} | {distrust} | "
                     f"{vetoes} |")
    lines.append("| - | `vbem` | the VB lower bound F (+ ln S) | a bound: never a candidate's "
                 "evidence | - | - |")
    return "\n".join(lines)
