"""The deviance test between nested invariance structures (glca's ``gofglca``).

A structure is nested in another when its free items are a subset of the other's (same data,
group, classes and covariates): full invariance in partial, partial in none. The statistic is
``D = 2 (ln L_general - ln L_restricted)`` on ``df = npar_general - npar_restricted``:

* chi-square: ``p = P(chi^2_df >= D)``, the asymptotic reference (Wilks);
* parametric bootstrap (Langeheine, Pannekoek & van de Pol 1996): ``B`` data sets drawn from
  the restricted fit (the same groups, covariates and rows; every item observed), both
  structures refitted to each, ``p = (1 + #{D_b >= D}) / (B + 1)``. It does not lean on the
  chi-square approximation, which a sparse table or a parameter on its boundary undermines.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ...data import Dataset
from ...errors import ArgumentError
from ...render import JSONRecord
from ...validation import check_int, seed_record
from ..regression.design import Covariates
from .fit import fit_layout
from .result import GroupResult

__all__ = ["InvarianceTestResult", "invariance_test"]


@dataclass(frozen=True)
class InvarianceTestResult(JSONRecord):
    """The deviance test of a restricted invariance structure against a general one.

    Attributes:
        restricted, general: the structures (``"full"``, ``"partial: A, B"``, ``"none"``).
        statistic: ``D = 2 (ln L_general - ln L_restricted)``; df: the parameters' difference.
        p_chisq: the chi-square p-value.
        p_bootstrap: the parametric bootstrap p-value (NaN without bootstrap draws);
        bootstrap: the draws' statistics.
        seed: the bootstrap's seed.
    """

    restricted: str
    general: str
    statistic: float
    df: int
    p_chisq: float
    p_bootstrap: float = math.nan
    bootstrap: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seed: int | tuple[int, ...] = 0

    def summary(self) -> str:
        lines = [f"Deviance test of {self.restricted} against {self.general} invariance",
                 f"  deviance {self.statistic:.4f} on {self.df} df, chi-square p = "
                 f"{self.p_chisq:.4g}"]
        if len(self.bootstrap):
            lines.append(f"  parametric bootstrap p = {self.p_bootstrap:.4g} "
                         f"({len(self.bootstrap)} draws from the {self.restricted} fit)")
        return "\n".join(lines)


def _check_nested(restricted: GroupResult, general: GroupResult) -> None:
    a, b = restricted.layout, general.layout
    same = (a.group == b.group and a.levels == b.levels and a.items == b.items
            and restricted.n_classes == general.n_classes
            and restricted.fit.covariates.names == general.fit.covariates.names
            and restricted.fit.n_used_rows == general.fit.n_used_rows)
    if not same:
        raise ArgumentError("the two fits are not of the same data, group, classes and "
                            "covariates, so neither is nested in the other")
    if not set(a.free) <= set(b.free) or a.free == b.free:
        raise ArgumentError(f"{a.invariance} invariance is not nested in {b.invariance}: the "
                            "restricted fit's free items must be a proper subset of the "
                            "general fit's (pass the restricted fit first)")


def invariance_test(restricted: GroupResult, general: GroupResult, *, bootstrap: int = 0,
                    restarts: int | None = None, seed=0) -> InvarianceTestResult:
    """The deviance test of ``restricted`` against ``general`` (module docstring).

    Args:
        restricted, general: two multiple-group fits of the same data, the first nested in
            the second.
        bootstrap: parametric bootstrap draws (0: the chi-square test alone).
        restarts: EM restarts of every refit (default: each fit's own).
        seed: the bootstrap's draws and refits.
    """
    from scipy import stats

    _check_nested(restricted, general)
    bootstrap = check_int(bootstrap, "bootstrap", 0)
    statistic = 2.0 * (general.loglik - restricted.loglik)
    df = general.n_parameters - restricted.n_parameters
    p = float(stats.chi2.sf(max(statistic, 0.0), df))
    draws = np.zeros(0)
    p_boot = math.nan
    if bootstrap:
        draws = _bootstrap(restricted, general, bootstrap, restarts, seed)
        p_boot = float((1 + np.sum(draws >= statistic - 1e-9)) / (bootstrap + 1))
    return InvarianceTestResult(restricted.layout.invariance, general.layout.invariance,
                          float(statistic), int(df), p, p_boot, draws, seed_record(seed))


def _bootstrap(restricted: GroupResult, general: GroupResult, draws: int,
               restarts: int | None, seed) -> np.ndarray:
    """The deviances of ``draws`` data sets simulated from ``restricted``."""
    base = restricted.fit.covariates
    cov = Covariates(base.columns, base.levels, base.names, base.matrix[base.kept],
                     np.ones(int(base.kept.sum()), dtype=bool))
    layout = restricted.layout
    group = restricted.row_groups
    rng = np.random.default_rng(np.random.SeedSequence(_entropy(seed)))
    out = np.empty(draws)
    for b in range(draws):
        sim = restricted.fit.simulate(cov.matrix, seed=int(rng.integers(2**31)))
        codes = np.stack([_codes_of(sim, layout, item, group) for item in layout.items], axis=1)
        items = Dataset(codes, layout.items, layout.item_labels)
        fits = []
        for fit in (restricted, general):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits.append(fit_layout(
                    fit.layout, items, group, cov, n_rows=len(group),
                    class_name=fit.fit.structure.nodes[0], n_classes=fit.n_classes,
                    restarts=restarts or fit.fit.restarts, seed=int(rng.integers(2**31)),
                    tol=fit.fit.tol, max_iter=fit.fit.max_iter, batch_size=None,
                    standard_errors=None))
        out[b] = 2.0 * (fits[1].loglik - fits[0].loglik)
    return out


def _codes_of(sim, layout, item: str, group: np.ndarray) -> np.ndarray:
    """The simulated codes of ``item`` in every row's own group."""
    labels = layout.item_labels[layout.items.index(item)]
    index = {v: i for i, v in enumerate(labels)}
    if item not in layout.free:
        values = sim[item].to_numpy()
    else:
        values = np.empty(len(group), dtype=object)
        for g, level in enumerate(layout.levels):
            column = sim[layout.column(item, level)].to_numpy()
            values[group == g] = column[group == g]
    return np.asarray([index[v] for v in values], dtype=np.int32)


def _entropy(seed) -> int:
    """An integer seed's entropy (a ``jax.random`` key's words joined)."""
    record = seed_record(seed)
    return record if isinstance(record, int) else int(sum(int(w) << (32 * i)
                                                          for i, w in enumerate(record)))
