"""How well chains over the number of classes mixed (reversible jump, allocation sampler):
:class:`KMixingResult`, the R-hat and bulk ESS of the trace of ``k`` (Vehtari et al. 2021), whether
the posterior of ``K`` is cut off at ``max_classes``, whether the sampler's ``p(K | y)`` can be
believed at all (:attr:`KMixingResult.reliable`), and :class:`KMixingWarning`, the advice when the
chains did not mix: rerun longer, or compare the numbers of classes by their evidence, which
needs no mixing (``lcbayes rjmcmc`` runs that route itself and says so)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..render import JSONRecord, record_dict
from .idata import arviz, k_shares

if TYPE_CHECKING:
    import arviz as az

__all__ = ["K_CEILING_SHARE", "K_MAX_RHAT", "K_MIN_ESS", "MAX_SUGGESTED_DRAWS", "KMixingResult",
           "KMixingWarning", "k_mixing"]

#: The chains mixed between numbers of classes when the R-hat of ``k`` is at most this ...
K_MAX_RHAT = 1.05
#: ... and its bulk effective sample size at least this.
K_MIN_ESS = 100
#: The most draws per chain that :meth:`KMixingResult.suggested_draws` suggests.
MAX_SUGGESTED_DRAWS = 1_000_000
#: ``p(K = max_classes | y)`` from which a posterior still rising at the bound on ``K`` is cut
#: off there (:attr:`KMixingResult.at_ceiling`).
K_CEILING_SHARE = 0.05

class KMixingWarning(UserWarning):
    """Reversible jump chains did not mix between numbers of classes (:class:`KMixingResult`)."""


def _nice_ceil(x: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, 100, ... that is at least ``x``."""
    power = 10 ** max(0, math.floor(math.log10(max(x, 1.0))))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= x)


@dataclass(frozen=True)
class KMixingResult(JSONRecord):
    """How well reversible jump chains moved between numbers of classes: the rank-normalised
    split R-hat and the bulk effective sample size of the trace of ``k`` (Vehtari, Gelman,
    Simpson, Carpenter & Bürkner 2021) and the acceptance rates of split and merge. ``p(K | y)``
    is read off the draws of ``k``, so it is only as good as their mixing; the evidence of
    each ``K`` (``lcb.compare``) needs none.

    Attributes:
        r_hat, ess_bulk: of ``k`` over all chains (NaN when ``k`` never changes).
        split, merge: acceptance rates (``None`` for a move never proposed) of the moves that
            change ``K``: split and merge, or the allocation sampler's eject and absorb.
        draws: kept draws per chain.
        max_classes: the largest number of classes.
        ceiling_share: share of the draws with ``k = max_classes``.
        ceiling_rising: the data favour ``K = max_classes`` at least as much as the ``K``
            below it: ``p(K | y) / p(K)`` is not smaller at the bound.
    """

    r_hat: float
    ess_bulk: float
    split: float | None
    merge: float | None
    draws: int
    max_classes: int
    ceiling_share: float
    ceiling_rising: bool
    move_names: tuple[str, str] = ("split", "merge")

    @property
    def at_ceiling(self) -> bool:
        """The posterior of ``K`` is cut off by ``max_classes``, which should be raised: at
        least :data:`K_CEILING_SHARE` of the draws have the largest ``K`` allowed and
        :attr:`ceiling_rising` (so larger ``K`` would likely take mass too)."""
        return self.ceiling_share >= K_CEILING_SHARE and self.ceiling_rising

    @property
    def mixed(self) -> bool:
        """R-hat of ``k`` at most :data:`K_MAX_RHAT` and bulk ESS at least :data:`K_MIN_ESS`
        (a ``k`` that never changes, whose R-hat and ESS are NaN, counts as mixed)."""
        return not (self.r_hat > K_MAX_RHAT or self.ess_bulk < K_MIN_ESS)

    @property
    def reliable(self) -> bool:
        """The sampler's ``p(K | y)`` can be believed: :attr:`mixed` and not
        :attr:`at_ceiling`. When it cannot, the evidence of each ``K`` is the route that holds
        (:meth:`warning` with ``evidence_classes``)."""
        return self.mixed and not self.at_ceiling

    @property
    def suggested_draws(self) -> int:
        """Draws per chain for a bulk ESS of ``k`` of about :data:`K_MIN_ESS`: ``draws`` times
        ``K_MIN_ESS / ess_bulk`` (at least twice ``draws``), rounded up to 1, 2 or 5 times a
        power of ten, at most :data:`MAX_SUGGESTED_DRAWS`."""
        factor = K_MIN_ESS / self.ess_bulk if self.ess_bulk > 0 else math.inf
        return min(_nice_ceil(self.draws * max(factor, 2.0)), MAX_SUGGESTED_DRAWS)

    def warning(self, *, data_name: str | None = None,
                evidence_classes: int | None = None) -> str | None:
        """``None`` when :attr:`reliable`, else one line: what went wrong, with the numbers,
        and the ways out. With ``data_name`` (the data file) the advice names the command
        line's options (``--draws``, ``--max-classes``, ``lcbayes compare``), else the Python
        functions'. With ``evidence_classes`` (the evidences of ``K = 1 ..
        evidence_classes`` were computed alongside, as ``lcbayes rjmcmc`` does) the advice
        points to their posterior of ``K`` instead of suggesting that comparison."""
        parts = [self._mixing_advice(data_name, evidence_classes),
                 self._ceiling_advice(data_name)]
        return "; besides, ".join(p for p in parts if p) or None

    def _ceiling_advice(self, data_name: str | None) -> str | None:
        if not self.at_ceiling:
            return None
        wider = 2 * self.max_classes
        raise_it = f"max_classes={wider}" if data_name is None else f"--max-classes {wider}"
        return (f"p(K = {self.max_classes} | y) = {self.ceiling_share:.3f} and still rising: the"
                f" posterior of K is cut off at the largest K allowed; rerun with {raise_it}")

    def _rates(self) -> str:
        """The acceptance rates of the moves that change ``K``, in words."""
        return ", ".join(f"{move} {'never proposed' if rate is None else f'{rate:.3f}'}"
                         for move, rate in zip(self.move_names, (self.split, self.merge),
                                             strict=True))

    def _mixing_advice(self, data_name: str | None,
                       evidence_classes: int | None = None) -> str | None:
        if self.mixed:
            return None
        rates = self._rates()
        rerun = (f"draws={self.suggested_draws}" if data_name is None
                 else f"--draws {self.suggested_draws}")
        problem = (f"the chains did not mix between numbers of classes (k: bulk ESS "
                   f"{self.ess_bulk:.0f}, R-hat {self.r_hat:.3f}; acceptance {rates}), so "
                   f"p(K | y) is not reliable")
        if evidence_classes is not None:
            return (f"{problem}: believe the posterior of K from the evidences of K = "
                    f"1..{evidence_classes}, which needs no mixing (for the sampler's own to "
                    f"hold, rerun with {rerun})")
        if data_name is None:
            compare = f"lcb.compare(data, n_classes=range(1, {self.max_classes + 1}))"
        else:
            compare = f"lcbayes compare {data_name} --n-classes 1-{self.max_classes}"
        return (f"{problem}: rerun with {rerun}, or compare K = 1..{self.max_classes} by their "
                f"evidence, which needs no mixing: {compare}")

    def to_dict(self, *, data_name: str | None = None) -> dict:
        """JSON-ready: every field, ``mixed``, ``suggested_draws`` (``None`` when mixed),
        ``warning`` (:meth:`warning`), ``at_ceiling`` and ``reliable``; :meth:`from_dict` reads
        it back."""
        return record_dict(self, mixed=self.mixed, at_ceiling=self.at_ceiling,
                           reliable=self.reliable,
                           suggested_draws=None if self.mixed else self.suggested_draws,
                           warning=self.warning(data_name=data_name))

    def summary(self) -> str:
        """One line of numbers, then the warning when :attr:`reliable` is false."""
        rates = self._rates()
        line = (f"Mixing over K (max_classes {self.max_classes}, {self.draws} draws per "
                f"chain): k has R-hat {self.r_hat:.3f}, bulk ESS {self.ess_bulk:.0f}; "
                f"acceptance {rates}; p(K = {self.max_classes} | y) = "
                f"{self.ceiling_share:.3f}; " + ("reliable" if self.reliable else "NOT reliable"))
        return line + ("" if self.reliable else f"\n  {self.warning()}")


def k_mixing(idata: az.InferenceData) -> KMixingResult:
    """:class:`KMixingResult` of reversible jump draws (the ``InferenceData`` of
    :func:`lcbayes.rjmcmc`)."""
    az = arviz()
    post = idata["posterior"]
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN when k never changes
        r_hat = float(az.rhat(idata, var_names=["k"])["k"])
        ess = float(az.ess(idata, var_names=["k"], method="bulk")["k"])
    acceptance = json.loads(post.attrs.get("acceptance_json", "{}"))
    top, shares = int(post.sizes["class"]), k_shares(idata)
    prior = {int(k): p for k, p in json.loads(post.attrs.get("prior_k_json", "{}")).items()}
    ratio = [shares[k] / prior.get(k, 1.0 / top) for k in (top - 1, top)]
    names = ("eject", "absorb") if "eject" in acceptance else ("split", "merge")
    return KMixingResult(r_hat=r_hat, ess_bulk=ess, split=acceptance.get(names[0]),
                   merge=acceptance.get(names[1]), move_names=names,
                   draws=int(post.sizes["draw"]),
                   max_classes=top, ceiling_share=shares[top],
                   ceiling_rising=bool(ratio[1] >= ratio[0]))
