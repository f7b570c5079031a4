"""Fit indices and classification quality of a fitted model, as applied latent class papers report
them (Mplus, Latent GOLD, poLCA, tidyLPA), beside the evidence.

* :func:`information_criteria`: sample-size-adjusted BIC and consistent AIC (with BIC and AIC) on
  the natural-log evidence scale of :mod:`lcbayes.scores` (higher is better; the deviance scale
  of Mplus and poLCA is ``-2 x`` these, :func:`lcbayes.to_deviance_scale`).
* :func:`classification_quality`: relative entropy, average posterior probabilities, the
  classification table, smallest class shares (:class:`ClassificationQualityResult`).
* :func:`goodness_of_fit`: G^2 and Pearson X^2 against the saturated multinomial with poLCA's
  conventions (:class:`GoodnessOfFitResult`).
* :func:`bivariate_residuals`: Latent GOLD's BVR for every pair of items.
* :func:`fit_indices`: all of them for an :class:`~lcbayes.EMResult`, JSON-ready.

Missing values: the model is always the fitted one, with missing items summed out exactly.
Only G^2 / X^2 (and their df and cell counts) use the complete rows alone, as poLCA does; each
bivariate residual uses the rows where both of its items are observed; every other index uses
every row with at least one observed value (``N`` of :attr:`lcbayes.Dataset.n_observed_rows`;
a row with nothing observed carries no information about its class and is left out).

Latent class models are computed in closed form with NumPy; HLC trees and DAGs through the exact
inference core (:mod:`lcbayes.inference`).

Example::

    fit = lcb.em(lcb.latent_class(data, 3), data, restarts=10, seed=0)
    gof = goodness_of_fit(fit.structure, fit.params, data)   # gof.g2, gof.chi2, gof.df
    quality = classification_quality(fit.structure, fit.params, data)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaincc, logsumexp, xlogy

from . import scores
from .errors import ArgumentError
from .inference import hidden_posteriors, log_marginal
from .params import to_tables
from .render import JSONRecord, fmt_count, fmt_stat, json_value
from .structure import Structure
from .validation import check_structure, data_for

__all__ = ["MAX_ENUMERATED_CELLS", "ClassificationQualityResult", "GoodnessOfFitResult",
           "bivariate_residuals", "classification_quality", "fit_indices", "goodness_of_fit",
           "information_criteria"]

#: Above this many cells the full table is not enumerated: the share of cells with an expected
#: count below 5 is then a lower bound (:attr:`GoodnessOfFitResult.share_expected_below_5`).
MAX_ENUMERATED_CELLS = 2**18
#: The note on sparse tables appears when more than this share of cells expects fewer than 5.
SPARSE_SHARE = 0.2


def information_criteria(loglik: float, n_parameters: int, n_rows: int) -> dict[str, float]:
    """``{"aic", "bic", "abic", "caic"}`` on the log-evidence scale (higher is better):

    * ``aic = loglik - d`` and ``bic = loglik - d/2 ln N`` (:mod:`lcbayes.scores`);
    * ``abic = loglik - d/2 ln n*`` with ``n* = (N + 2) / 24``, the sample-size-adjusted BIC
      (Sclove 1987, after Rissanen; Mplus' "Sample-Size Adjusted BIC" is ``-2 abic``);
    * ``caic = loglik - d/2 (ln N + 1)``, the consistent AIC (Bozdogan 1987: ``-2 loglik + d
      (ln N + 1)`` is ``-2 caic``).

    ``d`` counts the free parameters and ``N`` the rows with an observed value.
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, int | np.integer) or n_rows < 1:
        raise ArgumentError(f"n_rows must be a positive integer, got {n_rows!r}")
    if isinstance(n_parameters, bool) or not isinstance(n_parameters, int | np.integer) \
            or n_parameters < 0:
        raise ArgumentError(f"n_parameters must be a non-negative integer, got {n_parameters!r}")
    loglik, d, n = float(loglik), int(n_parameters), int(n_rows)
    return {"aic": scores.aic(loglik, d), "bic": scores.bic(loglik, d, n),
            "abic": scores.abic(loglik, d, n), "caic": scores.caic(loglik, d, n)}


@dataclass(frozen=True)
class ClassificationQualityResult(JSONRecord):
    """How well the rows are assigned to the states of one hidden node (the class of a latent
    class model), from their posterior probabilities ``p_ik`` over the ``N`` rows with an
    observed value. Rows are assigned to their modal state (the first on a tie, as poLCA).

    Attributes:
        entropy: ``E = -sum_i sum_k p_ik ln p_ik`` (nats; :attr:`lcbayes.EMResult.entropy`).
        entropy_r2: the relative entropy ``1 - E / (N ln K)`` of Mplus (Ramaswamy et al.
            1993; tidyLPA's "Entropy"): 1 for certain assignments, 0 for posteriors equal to
            ``1/K``; defined as 1 for ``K = 1``.
        class_shares: ``(K,)`` the estimated shares (the class CPT of a latent class model;
            for another node the mean posterior, poLCA's ``P``).
        modal_counts: ``(K,)`` rows assigned to each state.
        modal_shares: ``modal_counts / N`` (poLCA's "predicted class memberships").
        average_posterior: ``(K,)`` mean posterior of state ``k`` over the rows assigned to it
            (NaN where none is); the diagonal of :attr:`classification_table`.
        classification_table: ``(K, K)`` row ``k``: the mean posterior of every state over the
            rows assigned to ``k`` (Mplus' "average latent class probabilities for most likely
            latent class membership (row) by latent class (column)"); rows sum to 1, NaN rows
            where no row is assigned.
        classification_counts: ``(K, K)`` the same as summed posteriors (expected counts):
            row ``k`` sums to ``modal_counts[k]``, column ``l`` to the expected size of ``l``.
        smallest_class_share, smallest_modal_share: ``min`` of :attr:`class_shares` and of
            :attr:`modal_shares`.
        n_rows: ``N``.
    """

    entropy: float
    entropy_r2: float
    class_shares: np.ndarray
    modal_counts: np.ndarray
    modal_shares: np.ndarray
    average_posterior: np.ndarray
    classification_table: np.ndarray
    classification_counts: np.ndarray
    smallest_class_share: float
    smallest_modal_share: float
    n_rows: int

    def to_frame(self) -> pd.DataFrame:
        """One row per ``class`` (from 1): shares, average posterior, table row (``to_1``...)."""
        table = {f"to_{j + 1}": column for j, column in enumerate(self.classification_table.T)}
        return pd.DataFrame({"class": np.arange(1, len(table) + 1), "share": self.class_shares,
                             "modal_count": self.modal_counts, "modal_share": self.modal_shares,
                             "average_posterior": self.average_posterior, **table})

    def summary(self) -> str:
        """Entropy, relative entropy, the smallest shares and the average posteriors."""
        shares = ", ".join(f"{p:.3f}" for p in self.average_posterior)
        return (f"Classification of {self.n_rows} rows: entropy {self.entropy:.4f} nats, entropy "
                f"R^2 {self.entropy_r2:.3f}; smallest class share {self.smallest_class_share:.3f} "
                f"(modal {self.smallest_modal_share:.3f})\n  average posteriors by class: {shares}")


@dataclass(frozen=True)
class GoodnessOfFitResult(JSONRecord):
    """G^2 and Pearson X^2 of the fitted model against the saturated multinomial, exactly as
    poLCA 1.6 computes them (its ``Gsq``, ``Chisq`` and ``resid.df``; Linzer & Lewis 2011):

    * the table is that of the ``N_c`` complete rows (every item observed); rows with a missing
      item are left out of it (poLCA, ``na.rm = FALSE``); its expected counts are
      ``E_y = N_c P(y | theta)`` with the fitted model's marginal probability of pattern ``y``;
    * ``g2 = 2 sum_y O_y ln(O_y / E_y)`` over the observed patterns;
    * ``chi2 = sum_y (O_y - E_y)^2 / E_y`` over the observed patterns ``+ (N_c - sum_y E_y)``,
      the contribution ``E`` of every unobserved cell: Pearson's statistic over the whole table;
    * ``df = min(N, C - 1) - d`` with ``C = prod_j r_j`` cells and ``d`` free parameters.
      ``N`` is the number of rows with an observed value (poLCA's ``N`` counts every row; the
      two differ only where a row has nothing observed, and then only while ``N < C - 1``).
      ``r_j`` are the structure's categories (poLCA's are the largest codes seen).

    Attributes:
        g2, chi2, df: the statistics and residual degrees of freedom (NaN statistics where no
            row is complete).
        p_value_g2, p_value_chi2: upper tails of chi-squared(df) (NaN where ``df <= 0``);
            unreliable when the table is sparse (:attr:`note`).
        n_cells: ``C``; n_observed_cells: distinct complete patterns.
        n_complete_rows: ``N_c``; n_rows: ``N``.
        share_expected_below_5: share of the ``C`` cells with ``E < 5``; exact while ``C <=
            MAX_ENUMERATED_CELLS``, above that the lower bound ``1 - N_c / (5 C)``
            (:attr:`share_is_exact`).
        note: warnings in words (sparse table, incomplete rows left out, ``df <= 0``); empty
            when there is none.
    """

    g2: float
    chi2: float
    df: int
    p_value_g2: float
    p_value_chi2: float
    n_cells: int
    n_observed_cells: int
    n_complete_rows: int
    n_rows: int
    share_expected_below_5: float
    share_is_exact: bool
    note: str

    def summary(self) -> str:
        """The statistics with their p-values, and the note."""
        return (f"G^2 = {fmt_stat(self.g2)} (p {self.p_value_g2:.4f}), X^2 = "
                f"{fmt_stat(self.chi2)} (p {self.p_value_chi2:.4f}), df = {self.df}; "
                f"{self.n_complete_rows} complete rows in {self.n_observed_cells} of "
                f"{fmt_count(self.n_cells)} cells{self.note and '; '}{self.note}")


# ---------------------------------------------------------------------- model probabilities
def _lc_tables(structure: Structure, params: Mapping[str, Any]
               ) -> tuple[np.ndarray, list[np.ndarray]]:
    """``(pi (K,), [theta_j (K, r_j)])`` of a latent class model, as NumPy arrays."""
    to_tables(structure, params)  # checks that every CPT is there with its shape
    k = structure.n_classes
    assert k is not None  # a latent class structure has a number of classes
    weights = np.asarray(params[structure.nodes[structure.root]], dtype=np.float64).reshape(k)
    items = [np.asarray(params[structure.nodes[i]], dtype=np.float64).reshape(k, -1)
             for i in structure.observed_nodes]
    return weights, items


def _lc_log_joint(structure: Structure, params: Mapping[str, Any], patterns: np.ndarray
                  ) -> np.ndarray:
    """``(P, K)`` ``ln pi_k + sum_{j observed} ln theta_j[k, y_j]`` (missing items: factor 1)."""
    weights, items = _lc_tables(structure, params)
    with np.errstate(divide="ignore"):
        out = np.broadcast_to(np.log(weights), (patterns.shape[0], weights.size)).copy()
        for j, theta in enumerate(items):
            seen = patterns[:, j] >= 0
            out[seen] += np.log(theta.T[patterns[seen, j]])
    return out


def _log_marginals(structure: Structure, params: Mapping[str, Any], patterns: np.ndarray
                   ) -> np.ndarray:
    """``(P,)`` exact ``ln p(y)`` of every pattern, missing items (``-1``) summed out."""
    patterns = np.asarray(patterns, dtype=np.int32)
    if structure.kind == "latent_class":
        return logsumexp(_lc_log_joint(structure, params, patterns), axis=1)
    with np.errstate(divide="ignore"):
        log_tables = tuple(np.log(np.asarray(t)) for t in to_tables(structure, params))
    return np.asarray(log_marginal(structure, log_tables, patterns), dtype=np.float64)


def _setup(structure, params, data):
    structure = check_structure(structure)
    if not isinstance(params, Mapping):
        raise ArgumentError(f"params must be a mapping {{node: CPT}}, got {type(params).__name__}")
    return structure, data_for(structure, data)


# ---------------------------------------------------------------------- classification
def classification_quality(structure: Structure, params: Mapping[str, Any], data, *,
                           node: str | None = None) -> ClassificationQualityResult:
    """Classification quality of the states of hidden ``node`` (default: the class of a
    latent class model, the root of an HLC tree, the only hidden node of a DAG) under the
    fitted ``params``, over the rows of ``data`` with an observed value (missing items summed
    out); see :class:`ClassificationQualityResult` for every field and its definition."""
    structure, data = _setup(structure, params, data)
    hidden = [structure.nodes[h] for h in structure.hidden_nodes]
    if node is None:
        if structure.kind in ("latent_class", "hlc"):
            node = structure.nodes[structure.root]
        elif len(hidden) == 1:
            node = hidden[0]
    if node not in hidden:
        raise ArgumentError(f"node must name a hidden node of this structure, one of {hidden}; "
                            f"got {node!r}")
    observed = (data.patterns >= 0).any(axis=1)
    counts = np.where(observed, data.counts, 0.0)
    if structure.kind == "latent_class":
        joint = _lc_log_joint(structure, params, data.patterns)
        post = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        shares = _lc_tables(structure, params)[0]
    else:
        rows = hidden_posteriors(structure, params, data)[node]
        first = np.empty(data.n_patterns, dtype=np.int64)
        first[data.pattern_index] = np.arange(data.n_rows)  # a row of every pattern
        post = rows[first]
        shares = counts @ post / max(counts.sum(), 1.0)
    k = post.shape[1]
    n = float(counts.sum())
    entropy = float(counts @ -xlogy(post, post).sum(axis=1))
    modal = np.argmax(post, axis=1)
    table_counts = np.zeros((k, k))
    np.add.at(table_counts, modal, counts[:, None] * post)
    modal_counts = np.rint(np.bincount(modal, weights=counts, minlength=k)).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        table = table_counts / modal_counts[:, None]
    table[modal_counts == 0] = np.nan
    modal_shares = modal_counts / n if n else np.full(k, np.nan)
    return ClassificationQualityResult(
        entropy=entropy,
        entropy_r2=1.0 if k == 1 or n == 0 else 1.0 - entropy / (n * math.log(k)),
        class_shares=np.asarray(shares, dtype=np.float64), modal_counts=modal_counts,
        modal_shares=modal_shares, average_posterior=np.diagonal(table).copy(),
        classification_table=table, classification_counts=table_counts,
        smallest_class_share=float(np.min(shares)),
        smallest_modal_share=float(np.min(modal_shares)), n_rows=round(n))


# ---------------------------------------------------------------------- goodness of fit
def _chi2_tail(statistic: float, df: int) -> float:
    """``P(chi-squared(df) > statistic)`` (NaN where ``df <= 0`` or the statistic is NaN)."""
    if df <= 0 or math.isnan(statistic):
        return math.nan
    return float(gammaincc(df / 2.0, max(statistic, 0.0) / 2.0))


def _all_cells(cards: tuple[int, ...]) -> np.ndarray:
    return np.indices(cards).reshape(len(cards), -1).T


def goodness_of_fit(structure: Structure, params: Mapping[str, Any],
                    data) -> GoodnessOfFitResult:
    """G^2, Pearson X^2 and residual df of the fitted ``params`` on ``data`` with poLCA's
    conventions (complete rows only for the table; see :class:`GoodnessOfFitResult`)."""
    structure, data = _setup(structure, params, data)
    cards = tuple(structure.cardinalities[i] for i in structure.observed_nodes)
    n_cells = math.prod(cards)
    complete = (data.patterns >= 0).all(axis=1)
    observed, patterns = data.counts[complete], data.patterns[complete]
    n_complete, n_rows = int(observed.sum()), data.n_observed_rows
    df = min(n_rows, n_cells - 1) - structure.n_parameters
    notes = []
    if n_complete == 0:
        g2 = chi2 = share = math.nan
        exact = True
        notes.append("no row has every item observed: G^2 and X^2 are undefined")
    else:
        expected = n_complete * np.exp(_log_marginals(structure, params, patterns))
        with np.errstate(divide="ignore"):
            g2 = float(2.0 * np.sum(observed * np.log(observed / expected)))
            chi2 = float(np.sum((observed - expected) ** 2 / expected)
                         + (n_complete - expected.sum()))
        exact = n_cells <= MAX_ENUMERATED_CELLS
        if exact:
            cells = n_complete * np.exp(_log_marginals(structure, params, _all_cells(cards)))
            share = float(np.mean(cells < 5.0))
        else:
            share = max(0.0, 1.0 - n_complete / (5.0 * n_cells))
        if share > SPARSE_SHARE:
            notes.append(f"{'' if exact else 'at least '}{math.floor(100 * share)}% of the "
                         f"{fmt_count(n_cells)} cells expect fewer than 5 rows "
                         f"({n_complete / n_cells:.3g}"
                         " on average): the chi-squared reference distribution of G^2 and X^2 "
                         "is unreliable; compare models by BIC, the evidence or a bootstrap")
        if n_complete < n_rows:
            notes.append(f"G^2 and X^2 use the {n_complete} complete rows of {n_rows} "
                         "(poLCA's convention)")
    if df <= 0:
        bound = (f"the table has free cells ({fmt_count(n_cells - 1)})" if n_cells - 1 <= n_rows
                 else f"there are rows ({n_rows}, fewer than the table's cells)")
        notes.append(f"df = {df}: the model has at least as many free parameters "
                     f"({structure.n_parameters}) as {bound}, so it is not tested")
    return GoodnessOfFitResult(
        g2=g2, chi2=chi2, df=int(df), p_value_g2=_chi2_tail(g2, df),
        p_value_chi2=_chi2_tail(chi2, df), n_cells=int(n_cells),
        n_observed_cells=int(patterns.shape[0]), n_complete_rows=n_complete, n_rows=n_rows,
        share_expected_below_5=share, share_is_exact=bool(exact), note="; ".join(notes))


# ---------------------------------------------------------------------- bivariate residuals
def bivariate_residuals(structure: Structure, params: Mapping[str, Any], data) -> pd.DataFrame:
    """Latent GOLD's bivariate residual (BVR) for every pair of observed items ``a < b``.

    For the ``n_ab`` rows where both items are observed, the observed two-way table ``O`` is
    compared with ``E = n_ab P(a, b | theta)``, the model's exact pairwise marginal (for a
    latent class model ``sum_k pi_k P(a | k) P(b | k)``; missing items summed out):
    ``chi2 = sum_cells (O - E)^2 / E`` and ``bvr = chi2 / df`` with ``df = (r_a - 1)(r_b - 1)``
    (Vermunt & Magidson 2005, Latent GOLD 4.0 Technical Guide). Values well above 1 (3.84 is
    often used) flag a pair whose association the model does not explain; the BVR is not
    chi-squared distributed (Oberski, van Kollenburg & Vermunt 2013), a screen, not a test.

    Returns:
        One row per pair, in item order: ``item_a``, ``item_b``, ``n_rows`` (``n_ab``),
        ``chi2``, ``df``, ``bvr`` (NaN where no row observes both).
    """
    structure, data = _setup(structure, params, data)
    names = structure.observed_names
    cards = np.array([structure.cardinalities[i] for i in structure.observed_nodes])
    starts = np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)
    item_of_level = np.repeat(np.arange(len(names)), cards)
    observed, n_pair = _pair_tables(data.patterns, data.counts, cards, starts)
    joint = _pair_marginals(structure, params, cards, starts)
    expected = n_pair[np.ix_(item_of_level, item_of_level)] * joint
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (observed - expected) ** 2 / expected,
                         np.where(observed > 0, np.inf, 0.0))
    chi2 = np.add.reduceat(np.add.reduceat(terms, starts, axis=0), starts, axis=1)
    a, b = np.triu_indices(len(names), k=1)
    df = (cards[a] - 1) * (cards[b] - 1)
    n_ab = n_pair[a, b]
    chi2_ab = np.where(n_ab > 0, chi2[a, b], math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        bvr = np.where(df > 0, chi2_ab / np.maximum(df, 1), math.nan)
    return pd.DataFrame({"item_a": [names[i] for i in a], "item_b": [names[j] for j in b],
                         "n_rows": np.round(n_ab).astype(np.int64), "chi2": chi2_ab,
                         "df": df.astype(np.int64), "bvr": bvr},
                        columns=["item_a", "item_b", "n_rows", "chi2", "df", "bvr"])


#: Patterns turned into indicator rows at a time by :func:`_pair_tables` (its memory).
_PAIR_BLOCK = 1 << 16


def _pair_tables(patterns: np.ndarray, counts: np.ndarray, cards: np.ndarray,
                 starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair's observed two-way table as one ``(L, L)`` matrix over the items' ``L``
    levels (``Z' diag(counts) Z`` with ``Z`` the patterns' level indicators, missing values
    indicating nothing), and ``(J, J)`` the rows that observe both items of each pair."""
    n_levels, n_items = int(cards.sum()), len(cards)
    observed = np.zeros((n_levels, n_levels))
    n_pair = np.zeros((n_items, n_items))
    for first in range(0, patterns.shape[0], _PAIR_BLOCK):
        block = patterns[first:first + _PAIR_BLOCK]
        weights = np.asarray(counts[first:first + _PAIR_BLOCK], dtype=np.float64)
        seen = block >= 0
        indicators = np.zeros((block.shape[0], n_levels))
        rows, items = np.nonzero(seen)
        indicators[rows, starts[items] + block[rows, items]] = 1.0
        observed += indicators.T @ (indicators * weights[:, None])
        n_pair += seen.T.astype(np.float64) @ (seen * weights[:, None])
    return observed, n_pair


def _pair_marginals(structure: Structure, params: Mapping[str, Any], cards: np.ndarray,
                    starts: np.ndarray) -> np.ndarray:
    """``(L, L)``: the model's ``P(a = i, b = j)`` for every pair of items' levels (a latent
    class model's ``sum_k pi_k P(a | k) P(b | k)`` in closed form; another structure's by
    exact inference on one pattern per cell, the other items missing). Only the blocks of
    two different items are used."""
    names = structure.observed_names
    n_levels = int(cards.sum())
    if structure.kind == "latent_class":
        weights = np.asarray(params[structure.nodes[structure.root]], dtype=np.float64)
        given = np.concatenate([np.asarray(params[n], dtype=np.float64) for n in names],
                               axis=1)                      # (K, L): P(level | class)
        return (given.T * weights) @ given
    joint = np.zeros((n_levels, n_levels))
    pairs = [(a, b) for a in range(len(names)) for b in range(a + 1, len(names))]
    blocks = []
    for a, b in pairs:  # one pattern per cell of every pair's table, other items missing
        block = np.full((cards[a] * cards[b], len(names)), -1, dtype=np.int32)
        block[:, [a, b]] = _all_cells((int(cards[a]), int(cards[b])))
        blocks.append(block)
    if not blocks:
        return joint
    probs = np.exp(_log_marginals(structure, params, np.concatenate(blocks)))
    start = 0
    for a, b in pairs:
        size = int(cards[a] * cards[b])
        table = probs[start:start + size].reshape(cards[a], cards[b])
        joint[starts[a]:starts[a] + cards[a], starts[b]:starts[b] + cards[b]] = table
        joint[starts[b]:starts[b] + cards[b], starts[a]:starts[a] + cards[a]] = table.T
        start += size
    return joint


# ---------------------------------------------------------------------- all of them
def fit_indices(fit, data) -> dict:
    """Every index of an EM fit (an :class:`~lcbayes.EMResult`, or anything with
    ``structure``, ``params``, ``loglik``, ``n_parameters`` and ``n_observed_rows``) on the
    data it was fitted to, JSON-ready: :func:`information_criteria`, ``"goodness_of_fit"``,
    ``"classification"`` (``None`` for a structure without a default hidden node) and
    ``"bivariate_residuals"`` (a list of records)."""
    out: dict[str, Any] = information_criteria(fit.loglik, fit.n_parameters,
                                               fit.n_observed_rows)
    out["goodness_of_fit"] = goodness_of_fit(fit.structure, fit.params, data).to_dict()
    try:
        out["classification"] = classification_quality(fit.structure, fit.params,
                                                       data).to_dict()
    except ArgumentError:
        out["classification"] = None
    frame = bivariate_residuals(fit.structure, fit.params, data)
    out["bivariate_residuals"] = json_value(frame.to_dict(orient="records"))
    return out
