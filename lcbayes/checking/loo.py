"""Leave-one-out cross-validation of a posterior: which model predicts a new row best.

**PSIS-LOO** (Vehtari, Gelman & Gabry 2017, "Practical Bayesian model evaluation using
leave-one-out cross-validation and WAIC", §2-3). For row ``i`` the leave-one-out predictive
density ``p(y_i | y_-i) = E_{theta | y_-i} p(y_i | theta)`` is estimated from draws of the
full posterior with importance ratios ``r_s = 1 / p(y_i | theta^(s))``, the largest of them
replaced by quantiles of a fitted generalised Pareto distribution (Pareto smoothed importance
sampling, eq. 10; ArviZ's ``psislw`` with its relative efficiency from the posterior's ESS):

    elpd_loo = sum_i ln( sum_s w_is p(y_i | theta^(s)) / sum_s w_is ),
    se(elpd_loo) = sqrt(n Var_i(elpd_loo,i)),      p_loo = lppd - elpd_loo,

``lppd = sum_i ln mean_s p(y_i | theta^(s))``. The Pareto shape ``k`` of each row says whether
its estimate can be trusted: ``k <= min(1 - 1/log10 S, 0.7)`` (ArviZ's threshold, ``S`` draws)
is good; above it the importance ratios' variance is too large.

**Patterns.** The data are compressed to patterns with counts, and every row of one pattern has
the same likelihood vector over the draws, so the same smoothed weights, Pareto ``k`` and
``elpd_loo,i``: the sums over rows are count-weighted sums over patterns and the variance is the
count-weighted one. This is exactly what ``az.loo`` computes on the rows (tested to 1e-8).

**Exact refits.** Where a pattern's ``k`` is above the threshold, its ``elpd_loo,i`` is computed
exactly instead (``refit="bad"``, §2.1's "direct computation"): the posterior is sampled again
by the same engine and settings on the data with one row of that pattern removed, and
``ln mean_s p(y_i | theta^(s))`` taken over the new draws. One refit per distinct offending
pattern serves all its rows. ``refit="all"`` refits every pattern (exact LOO, the check of the
approximation).

**WAIC** (Watanabe 2010; Vehtari et al. eq. 11-12) beside it:
``elpd_waic = lppd - sum_i Var_s ln p(y_i | theta^(s))``.

The Monte Carlo error of ``elpd_loo`` is the delta method's per pattern, ``sqrt(sum_s w_s^2
(p_s - E)^2 / r_eff) / E`` with normalised weights ``w``, counted ``n_p`` times for a pattern of
``n_p`` rows (their errors are one error); an exact refit's is the same with equal weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..data import Dataset
from ..errors import ArgumentError
from ..render import JSONRecord, fmt, plural, text_table
from ..samplers.idata import arviz, xarray
from ..samplers.pointwise import pattern_log_likelihood
from ..samplers.results import GibbsResult, RJMCMCResult
from ..structure import Structure
from ..validation import Seed, check_choice, check_int
from .draws import FixedDraws, fixed_draws

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["COMPARE_REFITS", "MIN_DRAWS", "REFITS", "LOOResult", "loo", "pareto_threshold",
           "sampled_loo"]

#: Posterior draws (chains x draws) that PSIS needs at least: the Pareto fit uses the largest
#: ``min(S / 5, 3 sqrt(S))`` ratios, which must be enough to fit two parameters.
MIN_DRAWS = 100
#: Which patterns get exact leave-one-out by refitting: ``"bad"`` (Pareto k above the
#: threshold), ``"all"`` or ``"none"``.
REFITS = ("bad", "all", "none")
#: The most patterns of one candidate :func:`sampled_loo` (``compare``'s) refits exactly.
COMPARE_REFITS = 10


def pareto_threshold(n_draws: int) -> float:
    """ArviZ's threshold of a good Pareto ``k``: ``min(1 - 1 / log10 S, 0.7)``."""
    return min(1.0 - 1.0 / math.log10(n_draws), 0.7)


@dataclass(frozen=True, repr=False, eq=False)
class LOOResult(JSONRecord):
    """PSIS-LOO and WAIC of a posterior (module docstring).

    Attributes:
        elpd_loo: the expected log pointwise predictive density, summed over the rows.
        se: its standard error over the rows, ``sqrt(n Var_i elpd_loo,i)``.
        p_loo: the effective number of parameters, ``lppd - elpd_loo``.
        mcse: the Monte Carlo standard error of ``elpd_loo``.
        lppd: ``sum_i ln mean_s p(y_i | theta^(s))``.
        elpd_waic, se_waic, p_waic: WAIC on the same scale.
        n_rows, n_draws: rows and posterior draws (chains x draws).
        good_k: the threshold of a good Pareto ``k``.
        patterns: ``(P, J)`` the data's patterns (codes, ``-1`` missing); ``counts`` their rows.
        columns: the data's columns.
        pattern_elpd: ``(P,)`` ``elpd_loo,i`` of a row of each pattern.
        pattern_mcse: ``(P,)`` its Monte Carlo standard error.
        pareto_k: ``(P,)`` the PSIS Pareto shape of each pattern (before any refit).
        refitted: ``(P,)`` whether the pattern's value is from an exact refit.
        refit: which patterns were refitted (``"bad"``, ``"all"``, ``"none"``).
        n_classes: the number of classes (latent class models; ``None`` otherwise).
    """

    elpd_loo: float
    se: float
    p_loo: float
    mcse: float
    lppd: float
    elpd_waic: float
    se_waic: float
    p_waic: float
    n_rows: int
    n_draws: int
    good_k: float
    patterns: np.ndarray
    counts: np.ndarray
    columns: tuple[str, ...]
    pattern_elpd: np.ndarray
    pattern_mcse: np.ndarray
    pareto_k: np.ndarray
    refitted: np.ndarray
    refit: str
    n_classes: int | None = None

    @property
    def bad_patterns(self) -> np.ndarray:
        """Indices of the patterns whose Pareto ``k`` is above :attr:`good_k`."""
        return np.flatnonzero(self.pareto_k > self.good_k)

    @property
    def n_bad_rows(self) -> int:
        """Rows whose pattern's Pareto ``k`` is above :attr:`good_k`."""
        return int(self.counts[self.bad_patterns].sum())

    @property
    def reliable(self) -> bool:
        """Every pattern's value rests on a good ``k`` or on an exact refit."""
        return bool(np.all((self.pareto_k <= self.good_k) | self.refitted))

    def k_table(self) -> dict[str, int]:
        """Rows by ArviZ's Pareto ``k`` classes: good, bad (up to 1), very bad (above 1)."""
        k, n = self.pareto_k, self.counts
        return {"good": int(n[k <= self.good_k].sum()),
                "bad": int(n[(k > self.good_k) & (k <= 1)].sum()),
                "very bad": int(n[k > 1].sum())}

    def to_frame(self) -> pd.DataFrame:
        """One row per pattern: its values, count, ``elpd_loo,i``, Monte Carlo error, Pareto
        ``k`` and whether it was refitted."""
        frame = pd.DataFrame(self.patterns, columns=list(self.columns))
        frame["count"] = self.counts
        frame["elpd_loo"] = self.pattern_elpd
        frame["mcse"] = self.pattern_mcse
        frame["pareto_k"] = self.pareto_k
        frame["refitted"] = self.refitted
        return frame

    def to_elpd_data(self):
        """The estimate as ArviZ's ``ELPDData`` with the pointwise values per row (``loo_i``,
        ``pareto_k``), which ``az.compare`` takes beside ArviZ's own."""
        az = arviz()
        xr = xarray()
        index = np.repeat(np.arange(len(self.counts)), self.counts.astype(int))
        return az.ELPDData(
            data=[self.elpd_loo, self.se, self.p_loo, self.n_draws, self.n_rows,
                  not self.reliable, "log", self.good_k,
                  xr.DataArray(self.pattern_elpd[index], dims=["row"]),
                  xr.DataArray(self.pareto_k[index], dims=["row"])],
            index=["elpd_loo", "se", "p_loo", "n_samples", "n_data_points", "warning",
                   "scale", "good_k", "loo_i", "pareto_k"])

    def summary(self) -> str:
        """The estimates and the Pareto ``k`` diagnostic, as ArviZ prints them."""
        rows = [["elpd_loo", fmt(self.elpd_loo), fmt(self.se)],
                ["p_loo", fmt(self.p_loo), "-"],
                ["elpd_waic", fmt(self.elpd_waic), fmt(self.se_waic)],
                ["p_waic", fmt(self.p_waic), "-"]]
        ks = self.k_table()
        k_rows = [[f"good (k <= {self.good_k:.2f})", str(ks["good"])],
                  ["bad (k <= 1)", str(ks["bad"])], ["very bad (k > 1)", str(ks["very bad"])]]
        model = f"LC({self.n_classes})" if self.n_classes else "the model"
        lines = [f"PSIS-LOO of {model}: {plural(self.n_rows, 'row')} "
                 f"({plural(len(self.counts), 'pattern')}), {plural(self.n_draws, 'draw')}; "
                 f"Monte Carlo error {fmt(self.mcse)}",
                 *text_table(["", "estimate", "s.e."], rows), "",
                 "Pareto k (rows):", *text_table(["", "rows"], k_rows)]
        refitted = int(self.refitted.sum())
        if refitted:
            lines.append(f"{plural(refitted, 'pattern')} "
                         f"({plural(int(self.counts[self.refitted].sum()), 'row')}) computed "
                         "exactly by refitting without one of its rows")
        bad = self.bad_patterns
        if len(bad):
            shown = ", ".join(
                f"{' '.join('.' if c < 0 else str(c) for c in self.patterns[p])} "
                f"({int(self.counts[p])} rows, k {self.pareto_k[p]:.2f})"
                for p in bad[np.argsort(-self.pareto_k[bad])][:5])
            lines.append(f"patterns with k above {self.good_k:.2f}: {shown}"
                         + (" ..." if len(bad) > 5 else ""))
        if not self.reliable:
            lines.append(f"not reliable: {plural(self.n_bad_rows, 'row')} with k above "
                         f"{self.good_k:.2f} and no refit (loo(..., refit='bad') refits them)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"LOOResult(elpd_loo={self.elpd_loo:.2f}, se={self.se:.2f}, "
                f"p_loo={self.p_loo:.2f}, rows={self.n_rows}, refitted={int(self.refitted.sum())})")


def _relative_efficiency(posterior: xr.Dataset) -> float:
    """ArviZ's ``reff`` of ``az.loo``: the mean ESS (method "mean") of every posterior
    variable over the draws; 1 for one chain."""
    if posterior.sizes["chain"] == 1:
        return 1.0
    ess = arviz().ess(posterior, method="mean")
    values = np.hstack([ess[v].values.ravel() for v in ess.data_vars])
    return float(np.nanmean(values)) / (posterior.sizes["chain"] * posterior.sizes["draw"])


def _likelihood_efficiency(ll: np.ndarray, chains: int) -> np.ndarray:
    """``(P,)`` relative efficiency of each pattern's likelihood ``p(y_p | theta^(s))`` over
    the draws (its ESS of the mean over ``chains`` chains, divided by the draws): the
    likelihood does not depend on the labels, so unlike the parameters' ESS it is not lowered
    by label switching."""
    xr = xarray()
    top = ll.max(axis=1, keepdims=True)
    values = np.exp(ll - top).reshape(len(ll), chains, -1).transpose(1, 2, 0)
    ess = arviz().ess(xr.Dataset({"p": (("chain", "draw", "pattern"), values)}), method="mean")
    return np.clip(np.nan_to_num(np.asarray(ess["p"].values), nan=ll.shape[1]) / ll.shape[1],
                   1e-3, None)


def _weighted_mcse(ll: np.ndarray, log_w: np.ndarray, reff) -> np.ndarray:
    """Delta-method Monte Carlo error of ``ln sum_s w_s p_s`` per pattern (normalised log
    weights ``log_w`` ``(P, S)``)."""
    w = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True))
    top = ll.max(axis=1, keepdims=True)
    p = np.exp(ll - top)
    mean = (w * p).sum(axis=1)
    var = (w ** 2 * (p - mean[:, None]) ** 2).sum(axis=1)
    return np.sqrt(var / reff) / mean


def _summed(values: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """``(sum over rows, sqrt(n Var over rows))`` of per-pattern values repeated by count."""
    n = counts.sum()
    total = float(counts @ values)
    var = float(counts @ (values - total / n) ** 2) / n
    return total, math.sqrt(n * var)


def loo(result: GibbsResult | RJMCMCResult, data, *, n_classes: int | None = None,
        refit: Literal["bad", "all", "none"] = "bad", max_refits: int | None = None,
        seed: Seed = 0) -> LOOResult:
    """PSIS-LOO and WAIC of posterior draws (module docstring).

    Args:
        result: posterior draws at a fixed structure: :func:`lcbayes.gibbs` of a latent class
            model, an HLC tree or a DAG, or :func:`lcbayes.rjmcmc` /
            :func:`lcbayes.allocation_sampler` draws, conditioned on ``n_classes``
            (:mod:`.draws`).
        data: the data the draws were made on.
        n_classes: with reversible jump draws, the number of classes (default: the most
            probable).
        refit: which patterns get exact leave-one-out by sampling the posterior again without
            one of their rows: ``"bad"`` (default; those whose Pareto ``k`` is above the
            threshold), ``"all"`` (exact LOO) or ``"none"``.
        max_refits: with ``refit="bad"``, refit at most this many patterns, those of highest
            ``k`` (``None``: all); the rest keep their PSIS value and the result is not
            :attr:`~LOOResult.reliable`.
        seed: the seed of the refits' draws.

    Returns:
        A :class:`LOOResult`; :meth:`~LOOResult.to_elpd_data` gives ArviZ's ``ELPDData``.
    """
    check_choice(refit, "refit", REFITS)
    draws = fixed_draws(result, data, n_classes, "loo")
    structure, data, posterior = draws.structure, draws.data, draws.posterior
    n_draws = posterior.sizes["chain"] * posterior.sizes["draw"]
    if n_draws < MIN_DRAWS:
        raise ArgumentError(f"PSIS-LOO needs at least {MIN_DRAWS} posterior draws (chains x "
                            f"draws), the result has {n_draws}: sample again with more draws")
    chains = posterior.sizes["chain"]
    ll = pattern_log_likelihood(structure, data.patterns, posterior).reshape(n_draws, -1).T
    counts = np.asarray(data.counts, dtype=float)
    reff = _relative_efficiency(posterior)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_w, k = arviz().psislw(-ll, reff)
    log_w = np.asarray(log_w)
    k = np.asarray(k, dtype=float)
    elpd = logsumexp(log_w + ll, axis=1)
    mcse = _weighted_mcse(ll, log_w, _likelihood_efficiency(ll, chains))
    good_k = pareto_threshold(n_draws)
    chosen = (np.arange(len(counts)) if refit == "all"
              else np.flatnonzero(k > good_k) if refit == "bad" else np.array([], dtype=int))
    if refit == "bad" and max_refits is not None:
        chosen = chosen[np.argsort(-k[chosen], kind="stable")][:check_int(max_refits,
                                                                          "max_refits", 0)]
    refitted = np.zeros(len(counts), dtype=bool)
    if len(chosen) and draws.settings["prior"] == "custom":
        raise ArgumentError("loo cannot refit draws made under a custom prior (the result does "
                            "not keep it): pass refit='none', or sample with a named prior")
    for p in chosen:
        elpd[p], mcse[p] = _exact_pattern(draws, int(p), seed)
        refitted[p] = True
    lppd_p = logsumexp(ll, axis=1) - math.log(n_draws)
    elpd_loo, se = _summed(elpd, counts)
    waic_p = lppd_p - ll.var(axis=1)
    elpd_waic, se_waic = _summed(waic_p, counts)
    lppd = float(counts @ lppd_p)
    return LOOResult(
        elpd_loo=elpd_loo, se=se, p_loo=lppd - elpd_loo,
        mcse=float(math.sqrt(np.sum((counts * mcse) ** 2))), lppd=lppd,
        elpd_waic=elpd_waic, se_waic=se_waic, p_waic=float(counts @ ll.var(axis=1)),
        n_rows=int(counts.sum()), n_draws=n_draws, good_k=good_k,
        patterns=np.asarray(data.patterns), counts=counts, columns=tuple(data.columns),
        pattern_elpd=elpd, pattern_mcse=mcse, pareto_k=k, refitted=refitted, refit=refit,
        n_classes=(structure.cardinalities[structure.root]
                   if structure.kind == "latent_class" else None))


def _exact_pattern(draws: FixedDraws, p: int, seed) -> tuple[float, float]:
    """``(ln p(y_i | y_-i), its Monte Carlo error)`` for a row ``i`` of pattern ``p``: the
    posterior sampled again by :func:`lcbayes.gibbs` with the draws' settings on the data less
    that row."""
    from ..samplers.gibbs import gibbs
    data = draws.data
    counts = np.asarray(data.counts, dtype=float).copy()
    counts[p] -= 1
    rest = Dataset.from_patterns(data.patterns, counts, data.columns, data.labels)
    again = gibbs(draws.structure, rest, seed=seed, **draws.settings)
    ll = pattern_log_likelihood(draws.structure, data.patterns[p:p + 1],
                                again.idata["posterior"]).reshape(1, -1)
    value = float(logsumexp(ll) - math.log(ll.shape[1]))
    efficiency = _likelihood_efficiency(ll, again.idata["posterior"].sizes["chain"])
    return value, float(_weighted_mcse(ll, np.zeros_like(ll), efficiency)[0])


def sampled_loo(structure: Structure, data, *, draws: int = 1000, warmup: int = 500,
                chains: int = 4, thin: int = 1, refit: Literal["bad", "all", "none"] = "bad",
                max_refits: int | None = COMPARE_REFITS, seed: Seed = 0) -> LOOResult:
    """:func:`lcbayes.gibbs` draws of ``structure`` and their :func:`loo`: what
    ``compare(methods=[..., "loo"])`` and ``lcbayes check`` run per model."""
    from ..samplers.gibbs import gibbs
    result = gibbs(structure, data, draws=draws, warmup=warmup, chains=chains, thin=thin,
                   seed=seed)
    return loo(result, data, refit=refit, max_refits=max_refits, seed=seed)
