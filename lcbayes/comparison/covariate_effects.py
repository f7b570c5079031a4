"""Does a covariate matter, and does a distal outcome differ by class? The covariate part of
:func:`lcbayes.compare` (``covariates=``, ``distal=``).

For every number of classes ``K`` compared, on the rows that have every covariate:

* the latent class regression (:func:`lcbayes.em` with ``covariates=``, and ``distal=`` when
  given) against the same model with intercept-only membership: the likelihood-ratio statistic
  ``LR = 2 (l_1 - l_0)`` on ``P_x (K - 1)`` degrees of freedom (``P_x`` the design columns
  beyond the intercept; the chi-square reference holds for ``K`` fixed), and both models' BIC;
* with a distal outcome, the same model against one whose outcome does not depend on the class
  (its log-likelihood is the indicators' maximum plus the outcome's own, in closed form:
  ``sum ln(n_c / n)`` for a categorical outcome, ``-n/2 (ln(2 pi s^2) + 1)`` for a continuous
  one): ``LR`` on ``(C - 1)(K - 1)`` or ``2 (K - 1)`` degrees of freedom;
* with ``bayes_factors``, the log Bayes factors with their standard errors
  (:func:`lcbayes.covariate_evidence`: NUTS and bridge sampling, prior scale 2.5 on the
  standardised coefficients; the Bayes factor depends on it, see that function) of the
  covariates (``K >= 2``) and of the outcome differing by class.

The figures are poLCA's: the class membership probabilities ``P(class | x)`` against the first
covariate (the others at their means or reference levels) for the chosen ``K``, and the distal
outcome's class means with 95% intervals (or its class-conditional distribution); their
captions are in :data:`lcbayes.comparison.figures.CAPTIONS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..constructors import latent_class
from ..data import Dataset
from ..engines.em import em
from ..engines.regression.design import Covariates
from ..engines.regression.fit import resolve_covariates
from ..engines.regression.result import RegressionResult
from ..errors import DataError
from ..render import json_value, wrap
from .figures import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["CovariateEffects", "covariate_effects"]

def _outcome_loglik(values: pd.Series) -> float:
    """The maximum log-likelihood of an outcome that does not depend on the class."""
    values = values.dropna()
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        z = values.to_numpy(dtype=np.float64)
        return float(-0.5 * len(z) * (np.log(2 * np.pi * z.var()) + 1))
    counts = values.value_counts().to_numpy(dtype=np.float64)
    return float(counts @ np.log(counts / counts.sum()))


@dataclass(frozen=True)
class CovariateEffects:
    """The covariate part of a comparison (module docstring).

    Attributes:
        covariates: the design (columns, levels, names); distal: the outcome's column or
            ``None``.
        fits: per ``K``, the latent class regression fit.
        rows: per ``K``, the numbers of the table (:meth:`to_frame`).
        n_dropped: rows left out for a missing covariate.
    """

    covariates: Covariates
    distal: str | None
    fits: tuple[RegressionResult, ...]
    rows: tuple[dict, ...]
    n_dropped: int

    def to_frame(self) -> pd.DataFrame:
        """Per ``K``: ``loglik`` (with covariates), ``loglik_without``, ``lr``, ``df``, ``p``,
        ``bic``, ``bic_without`` (natural-log evidence scale), and with a distal outcome
        ``loglik_common`` (the outcome not depending on the class), ``lr_distal``,
        ``df_distal``, ``p_distal``; ``log_bayes_factor`` and ``log_bayes_factor_stderr``
        (and ``..._distal``) when the evidence ran."""
        return pd.DataFrame(list(self.rows))

    def text(self) -> str:
        """The table and how to read it, as plain text."""
        frame = self.to_frame()
        head = (f"Covariates: membership ~ {' + '.join(self.covariates.columns) or '1'}"
                + (f"; distal outcome {self.distal!r}" if self.distal else "")
                + (f" ({self.n_dropped} rows lacking a covariate left out)"
                   if self.n_dropped else ""))
        note = ("lr, p: likelihood ratio of the covariates (chi-square, K fixed); bic, "
                "bic_without: the same model with and without them (higher is better)"
                + ("; lr_distal, p_distal: the outcome differs by class" if self.distal else "")
                + ("; log_bayes_factor: ln p(y | with) - ln p(y | without) +- s.e."
                   if "log_bayes_factor" in frame else ""))
        return "\n".join([head, frame.to_string(index=False, float_format="{:.4g}".format),
                          *wrap(note)])

    def to_dict(self) -> dict:
        """JSON form (the fits included)."""
        return json_value({"covariates": self.covariates.to_dict(rows=True), "distal": self.distal,
                           "fits": [f.to_dict() for f in self.fits], "rows": list(self.rows),
                           "n_dropped": self.n_dropped})

    @classmethod
    def from_dict(cls, spec: dict) -> CovariateEffects:
        """The result of :meth:`to_dict`."""
        return cls(covariates=Covariates.from_description(spec["covariates"]),
                   distal=spec["distal"],
                   fits=tuple(RegressionResult.from_dict(f) for f in spec["fits"]),
                   rows=tuple(spec["rows"]), n_dropped=int(spec["n_dropped"]))

    # ------------------------------------------------------------------ figures
    def figures(self, n_classes: int | None = None) -> dict[str, Figure]:
        """``{"membership": ..., "distal": ...}`` for ``n_classes`` (default: the largest
        ``K`` whose BIC with covariates is best)."""
        fit = self._chosen(n_classes)
        out = {}
        if self.covariates.columns and fit.coef.shape[1] > 1:
            out["membership"] = membership_figure(fit)
        if fit.distal is not None and fit.coef.shape[1] > 1:
            out["distal"] = distal_figure(fit)
        return out

    def _chosen(self, n_classes: int | None) -> RegressionResult:
        ks = [f.coef.shape[1] for f in self.fits]
        if n_classes is None:
            n_classes = ks[int(np.argmax([f.bic for f in self.fits]))]
        return self.fits[ks.index(n_classes)]




def membership_figure(fit: RegressionResult) -> Figure:
    """``P(class | x)`` against the first covariate (module docstring)."""
    cov = fit.covariates
    first = cov.columns[0]
    base = {c: ([cov.levels[c][0]] if c in cov.levels else [0.0]) for c in cov.columns}
    means = {c: float(np.nanmean(cov.matrix[cov.kept][:, cov.names.index(c)]))
             for c in cov.columns if c not in cov.levels and cov.matrix.shape[0]}
    fig = new_figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    k = fit.coef.shape[1]
    if first in cov.levels:
        grid = pd.DataFrame({c: (list(cov.levels[first]) if c == first else
                                 base[c] * len(cov.levels[first])) for c in cov.columns})
        for c, m in means.items():
            grid[c] = m
        prev = fit.prevalence(grid)
        x = np.arange(len(grid))
        width = 0.8 / k
        for r in range(k):
            ax.bar(x + (r - (k - 1) / 2) * width, prev[:, r], width, label=f"class {r + 1}")
        ax.set_xticks(x, [str(v) for v in cov.levels[first]])
    else:
        column = cov.matrix[cov.kept][:, cov.names.index(first)]
        lo, hi = (float(np.min(column)), float(np.max(column))) if column.size else (0.0, 1.0)
        values = np.linspace(lo, hi, 101)
        grid = pd.DataFrame({c: (values if c == first else
                                 [means.get(c, base[c][0])] * len(values))
                             for c in cov.columns})
        prev = fit.prevalence(grid)
        for r in range(k):
            ax.plot(values, prev[:, r], label=f"class {r + 1}")
    ax.set_xlabel(first)
    ax.set_ylabel("P(class | x)")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def distal_figure(fit: RegressionResult) -> Figure:
    """The distal outcome by class (module docstring)."""
    table = fit.distal_table()
    fig = new_figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    d = fit.distal
    assert d is not None  # distal_table refuses a fit without one
    if d["kind"] == "continuous":
        x = np.arange(len(table))
        ax.errorbar(x, table["mean"], yerr=1.96 * table["se"].fillna(0), fmt="o", capsize=4)
        ax.set_xticks(x, list(table["class"]))
        ax.set_ylabel(f"mean of {d['name']} (95% interval)")
    else:
        wide = table.pivot(index="class", columns="category", values="probability")
        bottom = np.zeros(len(wide))
        for category in wide.columns:
            ax.bar(wide.index, wide[category], bottom=bottom, label=str(category))
            bottom += wide[category].to_numpy()
        ax.set_ylabel(f"P({d['name']} | class)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def _bayes_factors(structure, data, covariates, outcome, seed, restarts) -> dict:
    """The log Bayes factors (and standard errors) of the covariates and of the outcome
    differing by class (:func:`lcbayes.covariate_evidence`)."""
    from ..covariate_bayes.evidence import covariate_evidence

    out = {}
    for test, suffix in (("covariates", ""), ("distal", "_distal")):
        if (covariates if test == "covariates" else outcome) is None:
            continue
        result = covariate_evidence(structure, data, covariates=covariates, distal=outcome,
                                    test=test, seed=seed, restarts=restarts)
        out[f"log_bayes_factor{suffix}"] = result.log_bayes_factor
        out[f"log_bayes_factor{suffix}_stderr"] = result.log_bayes_factor_stderr
    return out


def split_columns(data, covariates, distal) -> tuple:
    """``(item data, covariate frame, covariate names, distal)`` from ``compare``'s
    arguments: names of columns of a DataFrame ``data`` are taken out of the items."""
    names = [covariates] if isinstance(covariates, str) else covariates
    if isinstance(names, pd.DataFrame):
        frame = names.reset_index(drop=True)
        names = [str(c) for c in frame.columns]
    elif isinstance(data, pd.DataFrame):
        frame = data.reset_index(drop=True)
    else:
        frame = pd.DataFrame(index=range(data.n_rows))
    names = list(names or [])
    if isinstance(distal, pd.Series):
        frame = frame.assign(**{str(distal.name): distal.reset_index(drop=True)})
        distal = str(distal.name)
    taken = names + ([] if distal is None else [distal])
    absent = [c for c in taken if c not in frame.columns]
    if absent:
        raise DataError(f"{absent} are not columns of the data; give covariates as a "
                        "DataFrame (and distal as a Series) with one row per data row")
    if isinstance(data, pd.DataFrame):
        data = data.drop(columns=[c for c in taken if c in data.columns])
    return data, frame, names, distal


def covariate_effects(data: Dataset, frame: pd.DataFrame | None, covariates: Sequence[str],
                      n_classes: Sequence[int], *, distal: str | pd.Series | None = None,
                      seed=0, restarts: int = 10, bayes_factors: bool = False
                      ) -> CovariateEffects:
    """:class:`CovariateEffects` of ``covariates`` (columns of ``frame``, one row per row of
    ``data``) and ``distal`` for every ``K`` in ``n_classes`` (module docstring)."""
    from scipy import stats  # on use: building the command line needs no SciPy

    probe = latent_class(data, 1)
    source = frame if frame is not None else pd.DataFrame(index=range(data.n_rows))
    design = (resolve_covariates(probe, source, list(covariates), data.n_rows, stacklevel=3)
              if covariates else Covariates.intercept_only(data.n_rows))
    kept = design.kept
    rows_data = Dataset.from_codes(data.codes[kept], columns=data.columns,
                                   labels=data.labels) if not kept.all() else data
    outcome = None
    if distal is not None:
        outcome = (source[distal] if isinstance(distal, str) else distal)[kept]
        outcome = outcome.reset_index(drop=True)
    x = None if not covariates else source.loc[kept, list(covariates)].reset_index(drop=True)
    fits, rows = [], []
    n_design = design.n_design - 1
    for k in n_classes:
        structure = latent_class(rows_data, k)
        fit = em(structure, rows_data, covariates=x, distal=outcome, seed=seed,
                 restarts=restarts, standard_errors="empirical")
        assert isinstance(fit, RegressionResult)  # covariates or distal are given
        without = (em(structure, rows_data, distal=outcome, seed=seed, restarts=restarts)
                   if outcome is not None else em(structure, rows_data, seed=seed,
                                                  restarts=restarts))
        row = {"n_classes": k, "loglik": fit.loglik, "loglik_without": without.loglik}
        lr = max(2 * (fit.loglik - without.loglik), 0.0)
        df = n_design * (k - 1)
        row.update(lr=lr, df=df, p=float(stats.chi2.sf(lr, df)) if df else float("nan"),
                   bic=fit.bic, bic_without=without.bic)
        if outcome is not None:
            plain = em(structure, rows_data, seed=seed, restarts=restarts)
            common = plain.loglik + _outcome_loglik(outcome)
            assert fit.distal is not None  # fitted with distal=outcome
            extra = 2 if fit.distal["kind"] == "continuous" else len(fit.distal["labels"]) - 1
            lr_d = max(2 * (without.loglik - common), 0.0)
            df_d = extra * (k - 1)
            row.update(loglik_common=common, lr_distal=lr_d, df_distal=df_d,
                       p_distal=float(stats.chi2.sf(lr_d, df_d)) if df_d else float("nan"))
        if bayes_factors and k > 1:
            row.update(_bayes_factors(structure, rows_data, x, outcome, seed, restarts))
        fits.append(fit)
        rows.append(row)
    return CovariateEffects(covariates=design, distal=None if outcome is None else
                            str(outcome.name), fits=tuple(fits), rows=tuple(rows),
                            n_dropped=int((~kept).sum()))
