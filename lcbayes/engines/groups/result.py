"""The result of a multiple-group latent class model (:func:`lcbayes.em` with ``group=``).

It holds the fit of the expanded latent class regression (:mod:`.fit`; its coefficients are
the group's indicators and any covariates) and reads the multiple-group quantities off it:
class prevalences by group with standard errors (delta method on the coefficients'
covariance), item probabilities by group, the items whose profiles differ most between groups,
glca's goodness of fit (``G^2`` against the saturated table per stratum and its ``df``,
:mod:`.saturated`), the penalised scores, class posteriors of new rows and simulation.

Example::

    items = lcb.Dataset.from_pandas(frame[["DEFECT", "HLTH", "RAPE", "POOR", "SINGLE", "NOMORE"]])
    fit = lcb.em(lcb.latent_class(items, 3), frame, group="DEGREE", invariance="none",
                 restarts=200, seed=0, standard_errors="empirical")
    print(fit.summary())
    fit.prevalences()            # P(class | group) with standard errors
    fit.profile_differences()    # the items whose profiles differ most between groups
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...data import Dataset
from ...errors import DataError
from ...render import json_value, plural, record_from_dict
from ..em_result import best_count
from ..regression.cells import softmax
from ..regression.result import RegressionResult
from .layout import GroupLayout

__all__ = ["GroupResult"]


@dataclass(frozen=True, repr=False)
class GroupResult:
    """A multiple-group latent class fit (module docstring).

    Attributes:
        layout: the group, its levels, the items and which of them are free (group-specific).
        fit: the fit of the expanded model (:class:`~lcbayes.RegressionResult`): its item
            tables are those of the invariant items and of each free item per group
            (``"item[group]"``), its coefficients those of the group's indicators (and of any
            covariates).
        row_groups: ``(n_used_rows,)`` the group code of every row used.
        saturated_loglik: ``ln L`` of the saturated table per stratum (``None`` for a table
            too large to fit); n_strata: the strata, distinct (group, covariate) patterns.
        n_rows: rows given (before rows without a group or with every item missing were left
            out).
        aligned_to: the group whose classes every group's were matched to (no invariant item
            and no covariate: :mod:`.fit`), or ``None``.
    """

    layout: GroupLayout
    fit: RegressionResult
    row_groups: np.ndarray
    saturated_loglik: float | None
    n_strata: int
    n_rows: int
    aligned_to: object = None

    # ------------------------------------------------------------------ sizes and scores
    @property
    def loglik(self) -> float:
        """``sum_i ln p(y_i | g_i, x_i)`` of the rows used (conditional on the groups)."""
        return self.fit.loglik

    @property
    def n_parameters(self) -> int:
        """Item probabilities (``K (r_j - 1)`` per invariant item, ``G`` times that per free
        item) plus ``(K - 1)`` prevalence logits per group and per covariate slope: glca's
        ``npar``."""
        return self.fit.n_parameters

    @property
    def n_observed_rows(self) -> int:
        """The rows used (each has an observed item): the ``N`` of BIC."""
        return self.fit.n_observed_rows

    @property
    def entropy(self) -> float:
        return self.fit.entropy

    @property
    def bic(self) -> float:
        """``loglik - d/2 ln N`` (glca's BIC is ``-2 * bic``); the fit's, whose ``loglik``,
        ``d`` and ``N`` these are."""
        return self.fit.bic

    @property
    def aic(self) -> float:
        """``loglik - d`` (glca's AIC is ``-2 * aic``)."""
        return self.fit.aic

    @property
    def abic(self) -> float:
        """``loglik - d/2 ln((N + 2) / 24)``, the sample-size-adjusted BIC."""
        return self.fit.abic

    @property
    def caic(self) -> float:
        """``loglik - d/2 (ln N + 1)``, the consistent AIC."""
        return self.fit.caic

    @property
    def icl(self) -> float:
        """``bic - entropy`` of the class posteriors."""
        return self.fit.icl

    @property
    def n_classes(self) -> int:
        return int(self.fit.structure.n_classes or 1)

    @property
    def df(self) -> int:
        """glca's residual degrees of freedom ``min(N - 1, H prod_j r_j - 1) - npar``."""
        cells = math.prod(len(lab) for lab in self.layout.item_labels)
        return min(self.n_observed_rows - 1, cells * self.n_strata - 1) - self.n_parameters

    @property
    def gsq(self) -> float:
        """``G^2 = 2 (ln L_sat - ln L)`` (NaN where the saturated table was too large)."""
        if self.saturated_loglik is None:
            return math.nan
        return 2.0 * (self.saturated_loglik - self.loglik)

    # ------------------------------------------------------------------ tables
    def _design_rows(self) -> np.ndarray:
        cov = self.fit.covariates
        return cov.matrix[cov.kept]

    def _group_jacobians(self) -> tuple[np.ndarray, np.ndarray]:
        """``(G, K)`` mean ``P(class | group, x)`` over each group's rows and ``(G, K, F)``
        their derivatives in the free coefficients (row-major ``(P, K - 1)``)."""
        x = self._design_rows()
        p = softmax(x @ self.fit.coef)                                  # (n, K)
        k = p.shape[1]
        eye = np.eye(k)[:, 1:]                                          # d beta_l, l >= 2
        # d p_k / d beta_{q l} = x_q p_k (delta_kl - p_l)
        local = p[:, :, None] * (eye[None] - p[:, None, 1:])            # (n, K, K-1)
        jac = x[:, None, :, None] * local[:, :, None, :]                # (n, K, P, K-1)
        g = len(self.layout.levels)
        means = np.stack([p[self.row_groups == i].mean(axis=0) for i in range(g)])
        jacs = np.stack([jac[self.row_groups == i].mean(axis=0).reshape(k, -1)
                         for i in range(g)])
        return means, jacs

    def prevalences(self) -> pd.DataFrame:
        """Class prevalences by group: one row per group and class with ``prevalence``
        (the mean of ``P(class | group, x)`` over the group's rows; with no covariates simply
        ``P(class | group)``), ``se`` (delta method; NaN without standard errors) and the
        group's ``n``."""
        means, jacs = self._group_jacobians()
        cov = self.fit.coef_cov
        se = (np.full(means.shape, np.nan) if cov is None else
              np.sqrt(np.maximum(np.einsum("gkf,fe,gke->gk", jacs, cov, jacs), 0.0)))
        counts = np.bincount(self.row_groups, minlength=len(self.layout.levels))
        rows = [{"group": level, "class": r + 1, "prevalence": means[g, r], "se": se[g, r],
                 "n": int(counts[g])}
                for g, level in enumerate(self.layout.levels) for r in range(means.shape[1])]
        return pd.DataFrame(rows)

    def item_probabilities(self, level=None) -> dict[str, np.ndarray]:
        """``{item: (K, r) P(item | class)}`` in group ``level`` (an invariant item's table is
        the same in every group; ``None``: the first group)."""
        level = self.layout.levels[0] if level is None else level
        if level not in self.layout.levels:
            raise DataError(f"{level!r} is not a group of {self.layout.group!r}; the groups "
                            f"are {list(self.layout.levels)}")
        return {item: np.asarray(self.fit.params[self.layout.column(item, level)
                                                 if item in self.layout.free else item])
                for item in self.layout.items}

    def profile_differences(self) -> pd.DataFrame:
        """Each item's largest difference between groups of one class's probability of one
        category (``max_{r, c} (max_g - min_g) P(c | r, g)``), largest first; 0 for invariant
        items. ``class`` and ``category`` say where it is largest."""
        rows = []
        for j, item in enumerate(self.layout.items):
            by_group = np.stack([self.item_probabilities(level)[item]
                                 for level in self.layout.levels])        # (G, K, r)
            spread = by_group.max(axis=0) - by_group.min(axis=0)
            r, c = np.unravel_index(int(np.argmax(spread)), spread.shape)
            rows.append({"item": item, "free": item in self.layout.free,
                         "difference": float(spread[r, c]), "class": int(r) + 1,
                         "category": self.layout.item_labels[j][c]})
        return (pd.DataFrame(rows).sort_values("difference", ascending=False, kind="stable")
                .reset_index(drop=True))

    # ------------------------------------------------------------------ new rows
    def _expanded(self, data) -> tuple[Dataset, pd.DataFrame, np.ndarray]:
        """The expanded items of new rows, their membership design frame and group codes."""
        layout = self.layout
        if not isinstance(data, pd.DataFrame) or layout.group not in data.columns:
            raise DataError(f"data must be a DataFrame with the items and the group column "
                            f"{layout.group!r}")
        items = Dataset.from_pandas(data, columns=list(layout.items), categories=dict(
            zip(layout.items, layout.item_labels, strict=True)))
        labels = data[layout.group].reset_index(drop=True)
        unknown = sorted({str(v) for v in labels if v not in layout.levels})
        if unknown:
            raise DataError(f"{layout.group} has level(s) {unknown} that the fit has not seen; "
                            f"its groups are {list(layout.levels)}")
        group = np.asarray([layout.levels.index(v) for v in labels], dtype=np.int64)
        frame = data.reset_index(drop=True).copy()
        frame[layout.group] = pd.Categorical(labels, categories=list(layout.levels))
        return layout.expand(items, group), frame, group

    def predict_proba(self, data) -> np.ndarray:
        """``(n, K)`` class posteriors ``P(class | y, group, x)`` of new rows: a DataFrame with
        the items (missing ones marginalised), the group column and any covariates."""
        expanded, frame, _ = self._expanded(data)
        return self.fit.predict_proba(expanded, covariates=frame)

    def simulate(self, data: pd.DataFrame, *, seed=0) -> pd.DataFrame:
        """Rows drawn from the fitted model for the groups (and covariates) of the rows of
        ``data``: the class (numbered from 1), the group and the items (labels as in the
        data)."""
        if not isinstance(data, pd.DataFrame) or self.layout.group not in data.columns:
            raise DataError(f"data must be a DataFrame with the group column "
                            f"{self.layout.group!r} (and any covariates)")
        frame = data.reset_index(drop=True).copy()
        frame[self.layout.group] = pd.Categorical(frame[self.layout.group],
                                                  categories=list(self.layout.levels))
        drawn = self.fit.simulate(frame, seed=seed)
        out = {self.fit.structure.nodes[0]: drawn.iloc[:, 0].to_numpy(),
               self.layout.group: frame[self.layout.group].astype(object).to_numpy()}
        group = frame[self.layout.group].cat.codes.to_numpy()
        for item in self.layout.items:
            if item in self.layout.free:
                values = np.empty(len(frame), dtype=object)
                for g, level in enumerate(self.layout.levels):
                    column = drawn[self.layout.column(item, level)].to_numpy()
                    values[group == g] = column[group == g]
                out[item] = values
            else:
                out[item] = drawn[item].to_numpy()
        return pd.DataFrame(out)

    def to_frame(self) -> pd.DataFrame:
        """The prevalences by group and the item probabilities (by group for the free items)
        as one long table: ``group``, ``node`` (``class`` or an item), ``class``,
        ``category``, ``probability``."""
        rows = [{"group": r["group"], "node": "class", "class": r["class"], "category": None,
                 "probability": r["prevalence"]} for r in self.prevalences().to_dict("records")]
        for level in self.layout.levels:
            for j, (item, table) in enumerate(self.item_probabilities(level).items()):
                for r, c in np.ndindex(*table.shape):
                    rows.append({"group": level, "node": item, "class": r + 1,
                                 "category": self.layout.item_labels[j][c],
                                 "probability": float(table[r, c])})
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ text
    def summary(self) -> str:
        """The invariance structure, prevalences by group, item probabilities (by group for
        the free items) and glca's fit statistics."""
        layout, k = self.layout, self.n_classes
        lines = [f"Multiple-group latent class model: {plural(k, 'class', 'classes')}, group "
                 f"{layout.group!r} ({len(layout.levels)} groups), {layout.invariance} "
                 "measurement invariance"]
        covs = [c for c in self.fit.covariates.columns if c != layout.group]
        if covs:
            lines.append(f"membership ~ {layout.group} + {' + '.join(covs)} (group-specific "
                         "intercepts, common slopes)")
        if covs:
            table = self.fit.coefficients()
            group_terms = {"(Intercept)", *(f"{layout.group}{v}" for v in layout.levels)}
            table = table[~table["term"].isin(group_terms)]
            lines += ["", "Covariate coefficients (log odds against class 1, every group)",
                      table.to_string(index=False, float_format="{:.5g}".format)]
        if self.aligned_to is not None:
            lines.append(f"No item is invariant, so the classes are not tied across groups: "
                         f"each group's classes were matched to those of {self.aligned_to!r} "
                         "by their item profiles")
        lines += ["", "Class prevalences by group"]
        table = self.prevalences().pivot(index="group", columns="class", values="prevalence")
        lines += [table.reindex(list(layout.levels)).to_string(float_format="{:.4f}".format),
                  ""]
        for level in (layout.levels if layout.free else layout.levels[:1]):
            head = f"Item probabilities in group {level!r}" if layout.free else \
                "Item probabilities (every group)"
            lines.append(head)
            for item, table in self.item_probabilities(level).items():
                if layout.free and level != layout.levels[0] and item not in layout.free:
                    continue
                labels = layout.item_labels[layout.items.index(item)]
                frame = pd.DataFrame(table, columns=[str(v) for v in labels],
                                     index=[f"class {r + 1}" for r in range(k)])
                lines += [f"  {item}", frame.to_string(float_format="{:.4f}".format), ""]
        dropped = self.n_rows - self.fit.n_used_rows
        lines += [f"number of observations: {self.fit.n_used_rows}"
                  + (f" ({dropped} left out)" if dropped else ""),
                  f"number of estimated parameters: {self.n_parameters}",
                  f"residual degrees of freedom: {self.df}",
                  f"maximum log-likelihood: {self.loglik:.6f}",
                  f"G^2: {self.gsq:.6f} (against the saturated table in {self.n_strata} strata)",
                  f"AIC(glca scale): {-2 * self.aic:.6f}",
                  f"BIC(glca scale): {-2 * self.bic:.6f}",
                  f"aBIC: {-2 * self.abic:.6f}, CAIC: {-2 * self.caic:.6f} (deviance scale)",
                  self._restart_line()]
        return "\n".join(lines)

    def _restart_line(self) -> str:
        """How many starts reached the best log-likelihood, the separate-groups start among
        them (:mod:`lcbayes.engines.groups.fit`)."""
        logliks = self.fit.restart_logliks
        separate = len(logliks) > self.fit.restarts
        reached = best_count(logliks, self.loglik)
        return (f"restarts: {self.fit.restarts}"
                + (" and a start from the separate fits of each group" if separate else "")
                + f"; best reached by {reached} of {len(logliks)} starts"
                + ((" (the separate start " + ("among them" if best_count(
                    logliks[-1:], self.loglik) else "not among them") + ")")
                   if separate else ""))

    def __repr__(self) -> str:
        return (f"GroupResult(n_classes={self.n_classes}, group={self.layout.group!r}, "
                f"invariance={self.layout.invariance!r}, loglik={self.loglik:.4f})")

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Everything as JSON-ready values; :meth:`from_dict` reads it back."""
        return json_value({
            "method": "em", "model": "multiple_group_latent_class",
            "layout": self.layout.to_dict(), "invariance": self.layout.invariance,
            "fit": self.fit.to_dict(), "row_groups": self.row_groups,
            "saturated_loglik": self.saturated_loglik, "n_strata": self.n_strata,
            "n_rows": self.n_rows, "aligned_to": self.aligned_to, "loglik": self.loglik,
            "n_parameters": self.n_parameters, "df": self.df, "gsq": self.gsq,
            "aic": self.aic, "bic": self.bic, "abic": self.abic, "caic": self.caic,
            "prevalences": self.prevalences().to_dict(orient="records")})

    @classmethod
    def from_dict(cls, spec: dict) -> GroupResult:
        """The result of :meth:`to_dict`."""
        return record_from_dict(cls, spec)
