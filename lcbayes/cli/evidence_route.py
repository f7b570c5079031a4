"""The evidence route of ``lcbayes rjmcmc``: the posterior of the number of classes from the
evidence of each ``K``, for when the sampler's own cannot be believed.

The sampler reads ``p(K | y)`` off its draws of ``k``, so it is only as good as their mixing
between numbers of classes; on large data sets (thousands of rows) split and merge are almost
never accepted and the chains stay where they started
(:class:`~lcbayes.samplers.results.KMixingResult`). The evidence ``p(y | K)`` of each ``K``
needs no such mixing: :func:`lcbayes.compare` over ``K = 1 .. upper`` with the methods that need
no long sampling (:data:`METHODS`: BIC, VBEM and SMC with bridge sampling, plus the exact
evidence where it is small enough) gives ``ln p(y | K)`` with standard errors, and

    p(K | y) = p(K) p(y | K) / sum_{K' <= upper} p(K') p(y | K'),

with the sampler's prior of ``K`` (``--prior-k``), and a 95% interval from the evidences' errors
(:func:`lcbayes.comparison.posterior_probabilities`). ``upper`` (:func:`upper_classes`) is the
largest ``K`` holding at least :data:`MIN_SHARE` of the sampler's draws, plus one, at most
``--max-classes``: beyond it the sampler saw (next to) nothing.

``--evidence auto`` (default) runs the route when the sampler's posterior is not
:attr:`~lcbayes.samplers.results.KMixingResult.reliable` (R-hat of ``k`` too high, bulk ESS too
low, or the draws piled at ``--max-classes``), ``yes`` always, ``no`` never; ``--time-limit``
(the seconds of the SMC runs, shared by the ``K`` compared) and ``--engine-option`` are passed on
to ``lcbayes compare``. The budget is not a hard limit: every ``K`` gets two SMC runs at least,
each in as many class slots as the largest ``K`` (the candidates share one compiled program), so
a run over many ``K`` on survey data takes many times the budget.
Where neither SMC nor bridge sampling gives an estimate, that ``K`` has no evidence (VBEM's
bound is a bound, never the evidence) and no posterior probability; the output names it.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..comparison import compare, posterior_probabilities
from ..comparison.engine_options import resolve as resolve_options
from ..constructors import latent_class
from ..render import json_value, text_table, wrap
from .common import UsageError, add_engine_option_argument, parse_engine_options

if TYPE_CHECKING:
    from ..comparison.table import ComparisonResult
    from ..data import Dataset
    from ..samplers.results import KMixingResult

__all__ = ["EVIDENCE_CHOICES", "METHODS", "MIN_SHARE", "EvidenceRoute", "add_arguments",
           "check_arguments", "evidence_route", "upper_classes", "wanted"]

#: The choices of ``--evidence``.
EVIDENCE_CHOICES = ("auto", "yes", "no")
#: The methods of the evidence route: none needs long sampling.
METHODS = ("bic", "vbem", "smc")
#: A number of classes holding at least this share of the sampler's draws is compared, and so is
#: one more.
MIN_SHARE = 0.01


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--evidence``, ``--time-limit`` and ``--engine-option``."""
    parser.add_argument("--evidence", default="auto", choices=EVIDENCE_CHOICES,
                        help="the posterior of K from the evidence of each K (lcbayes compare "
                             f"by {', '.join(METHODS)}), which needs no mixing: when the "
                             "sampler's cannot be believed (auto, default), always (yes) or "
                             "never (no: only the warning)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="seconds for the SMC evidence runs of all K together; each K "
                             "still gets two runs (default: no limit)")
    add_engine_option_argument(parser)


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, before the sampler starts, a ``--time-limit`` that is not a positive number,
    an ``--engine-option`` that :func:`lcbayes.compare` would refuse (an unknown engine or
    option), and either of them with ``--evidence no``, which would leave it unused."""
    budget = args.time_limit
    if budget is not None and not (np.isfinite(budget) and budget > 0):
        raise UsageError(f"--time-limit must be a positive number of seconds, got {budget}")
    resolve_options(parse_engine_options(args.engine_option), [])
    given = [o for o, v in (("--time-limit", budget), ("--engine-option", args.engine_option))
             if v]
    if given and args.evidence == "no":
        raise UsageError(f"{given[0]} is for the evidence route, which --evidence no turns "
                         f"off; leave one of them out")


def wanted(mode: str, mixing: KMixingResult) -> bool:
    """Whether ``--evidence mode`` runs the route after a sampler whose mixing is ``mixing``."""
    return mode == "yes" or (mode == "auto" and not mixing.reliable)


def upper_classes(posterior_k: dict[int, float], max_classes: int) -> int:
    """The largest ``K`` the route compares: one more than the largest holding at least
    :data:`MIN_SHARE` of the sampler's draws, at least 2 and at most ``max_classes``."""
    seen = max((k for k, p in posterior_k.items() if p >= MIN_SHARE), default=1)
    return min(max(seen + 1, 2), max_classes)


@dataclass(frozen=True)
class EvidenceRoute:
    """The posterior of ``K`` from the evidences, beside the sampler's.

    Attributes:
        comparison: :func:`lcbayes.compare` of ``K = 1 .. upper``.
        prior_k: the sampler's prior of ``K`` (``{K: p}`` over ``1 .. max_classes``).
        sampler_k: the sampler's ``p(K | y)`` (``{K: share of draws}``).
        mixing: how the sampler mixed in ``K``.
        asked: ``--evidence yes`` (else the route ran because the sampler's posterior is not
            reliable).
        n_rows: rows of the data (the size at which the route holds).
        data_name: the data file, for the advice.
        seconds: wall time of the comparison.
        sampler_prior: the sampler's Dirichlet pseudo-count (``--prior``) when it is not the
            comparison's 1, else ``None``.
    """

    comparison: ComparisonResult
    prior_k: dict[int, float]
    sampler_k: dict[int, float]
    mixing: KMixingResult
    asked: bool
    n_rows: int
    data_name: str
    seconds: float
    sampler_prior: float | None = None

    @property
    def classes(self) -> list[int]:
        return [int(s.n_classes) for s in self.comparison.structures
                if s.n_classes is not None]  # all of them: latent class models

    @cached_property
    def posterior(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(p, low, high)`` per ``K`` of :attr:`classes`: the evidences under the sampler's
        prior of ``K``, renormalised over the ``K`` compared, with 95% intervals."""
        frame = self.comparison.to_frame()
        log_prior = np.log([self.prior_k[k] for k in self.classes])
        return posterior_probabilities(frame["log_evidence"].to_numpy() + log_prior,
                                       frame["log_evidence_stderr"].to_numpy(),
                                       seed=self.comparison.seeds["posterior"])

    @property
    def believe(self) -> str:
        """``"evidence"`` when the sampler's ``p(K | y)`` is not reliable, else ``"both"``."""
        return "both" if self.mixing.reliable else "evidence"

    def verdict(self) -> str:
        """Which posterior of ``K`` to believe, and why, with the most probable ``K``."""
        p, low, high = self.posterior
        best = int(np.nanargmax(p))
        top = (f"Most probable from the evidences: K = {self.classes[best]} (p = {p[best]:.3f}"
               f" [{low[best]:.3f}, {high[best]:.3f}]).")
        m = self.mixing
        if m.reliable:
            return (f"The sampler mixed between numbers of classes (k: R-hat {m.r_hat:.3f}, "
                    f"bulk ESS {m.ess_bulk:.0f}), so both routes hold and should agree within "
                    f"the intervals; where they do not, believe the evidences, whose error is "
                    f"measured. {top}")
        why = []
        if not m.mixed:
            why.append(f"its chains did not mix between numbers of classes (k: R-hat "
                       f"{m.r_hat:.3f}, bulk ESS {m.ess_bulk:.0f})")
        if m.at_ceiling:
            why.append(f"{m.ceiling_share:.0%} of its draws are piled at the largest K "
                       f"allowed, {m.max_classes}")
        return (f"Believe the evidences, not the sampler: {' and '.join(why)}, so its p(K | y) "
                f"is not reliable. At {self.n_rows} rows the evidence of each K, which needs "
                f"no mixing, is the route that holds. {top}")

    def edge_note(self) -> str | None:
        """Advice when the largest ``K`` compared is the most probable (more may fit better)."""
        p, _, _ = self.posterior
        upper = self.classes[-1]
        if self.classes[int(np.nanargmax(p))] != upper:
            return None
        wider = (f"rerun with --max-classes {2 * upper}" if upper == self.mixing.max_classes
                 else f"compare more: lcbayes compare {self.data_name} --n-classes "
                      f"1-{upper + 3}")
        return (f"K = {upper}, the largest compared, is the most probable: more classes may fit "
                f"better; {wider}")

    def rows(self) -> list[dict]:
        """One JSON-ready row per ``K``: the log evidence, its standard error and method, the
        posterior with its interval, the sampler's posterior and the flags."""
        frame = self.comparison.to_frame()
        p, low, high = self.posterior
        return [json_value({
            "K": k, "log_evidence": row.log_evidence,
            "log_evidence_stderr": row.log_evidence_stderr,
            "evidence_method": row.evidence_method, "posterior": p[i],
            "posterior_low": low[i], "posterior_high": high[i],
            "sampler_posterior": self.sampler_k.get(k, 0.0),
            "flags": [f for f in row.flags.split(",") if f]})
            for i, (k, row) in enumerate(zip(self.classes, frame.itertuples(), strict=True))]

    def to_dict(self) -> dict:
        """The ``evidence`` object of ``lcbayes rjmcmc --json``: why it ran (``reason``),
        ``n_classes``, ``methods``, ``believe`` and ``verdict``, ``rows`` (:meth:`rows`),
        ``unmeasured_note``, ``edge_note``, ``prior_note``, ``seconds`` and the whole
        comparison (``comparison``: :meth:`lcbayes.ComparisonResult.summary_dict`, rows and
        metadata)."""
        return json_value({
            "reason": "asked (--evidence yes)" if self.asked
            else "the sampler's posterior of K is not reliable",
            "n_classes": self.classes, "methods": list(self.comparison.methods),
            "believe": self.believe, "verdict": self.verdict(), "rows": self.rows(),
            "unmeasured_note": self.unmeasured_note(), "edge_note": self.edge_note(),
            "prior_note": self.prior_note(),
            "seconds": self.seconds,
            "comparison": self.comparison.summary_dict()})

    def text(self) -> str:
        """The plain output's section: the table, the verdict, notes on flags and the edge."""
        rows = self.rows()
        head = ["K", "ln p(y|K)", "s.e.", "from", "p(K | y) [95%]", "sampler", "flags"]
        cells = [[str(r["K"]), _num(r["log_evidence"], 2), _num(r["log_evidence_stderr"], 2),
                  r["evidence_method"], f"{_num(r['posterior'], 3)} "
                  f"[{_num(r['posterior_low'], 3)}, {_num(r['posterior_high'], 3)}]",
                  f"{r['sampler_posterior']:.3f}", ",".join(r["flags"])] for r in rows]
        lines = [f"Posterior of K from the evidences (K = 1..{self.classes[-1]}; "
                 f"{', '.join(self.comparison.methods)}; {self.seconds:.1f} s), beside the "
                 "sampler's:"]
        lines += ["  " + line.rstrip() for line in text_table(head, cells)]
        lines += ["", *wrap(self.verdict())]
        frame = self.comparison.to_frame()
        for k, notes in zip(self.classes, frame["flag_notes"], strict=True):
            if notes:
                lines += wrap(f"K = {k}: {notes}", indent="  ", hanging="    ")
        for note in (self.unmeasured_note(), self.edge_note(), self.prior_note()):
            if note:
                lines += wrap(note)
        return "\n".join(lines)

    def unmeasured_note(self) -> str | None:
        """The ``K`` with no evidence (neither SMC nor bridge sampling gave an estimate: the
        flags say why) or none with a measured error: the posterior leaves them out."""
        ks = [r["K"] for r in self.rows()
              if r["log_evidence_stderr"] is None and r["evidence_method"] != "exact"]
        if not ks:
            return None
        return (f"For K = {', '.join(map(str, ks))} there is no evidence with a measured error "
                f"(see the flags; VBEM's bound is a bound, not an evidence), so the posterior "
                f"of K leaves them out. More particles (--engine-option smc.particles=512) or "
                f"a larger --time-limit give estimates there.")

    def prior_note(self) -> str | None:
        """Why the two posteriors may differ apart from mixing: the sampler's ``--prior``."""
        if self.sampler_prior is None:
            return None
        return (f"The evidences are under Dirichlet(1) priors, the sampler's draws under "
                f"Dirichlet({self.sampler_prior:g}) (--prior): the two posteriors differ by "
                f"that too.")


def _num(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def evidence_route(data: Dataset, args: argparse.Namespace, mixing: KMixingResult,
                   posterior_k: dict[int, float], prior_k: dict[int, float]) -> EvidenceRoute:
    """Compare ``K = 1 ..`` :func:`upper_classes` by :data:`METHODS` on ``data`` with the
    command line's seed, ``--time-limit`` and ``--engine-option`` (no progress bars with
    ``--json``). One line on stderr says what runs first: on thousands of rows it takes
    minutes."""
    start = time.perf_counter()
    upper = upper_classes(posterior_k, mixing.max_classes)
    why = "asked for" if args.evidence == "yes" else "the sampler's p(K | y) is not reliable"
    print(f"lcbayes: {why}; running the evidence route: compare K = 1..{upper} by "
          f"{', '.join(METHODS)} (minutes on thousands of rows; --evidence no skips it)",
          file=sys.stderr, flush=True)
    comp = compare(data, {f"LC({k})": latent_class(data, k) for k in range(1, upper + 1)},
                   methods=list(METHODS), seed=args.seed, progress=not args.json,
                   time_limit=args.time_limit,
                   engine_options=parse_engine_options(args.engine_option))
    return EvidenceRoute(comparison=comp, prior_k=prior_k, sampler_k=posterior_k,
                         mixing=mixing, asked=args.evidence == "yes", n_rows=data.n_rows,
                         data_name=args.data, seconds=time.perf_counter() - start,
                         sampler_prior=None if args.prior in (None, 1.0) else args.prior)
