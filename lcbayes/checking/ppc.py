"""Posterior predictive checks: does the model reproduce the data?

**Realised discrepancies** (Gelman, Meng & Stern 1996, "Posterior predictive assessment of model
fitness via realized discrepancies", §2.3). For a discrepancy ``T(y, theta)`` and draws
``theta^(s)`` of the posterior, each with a replicated data set ``y_rep^(s)``
(:mod:`.replicates`: the observed rows' missing entries kept), the posterior predictive
p-value is

    ppp = P(T(y_rep, theta) >= T(y, theta) | y)
        ~ mean_s 1[T(y_rep^(s), theta^(s)) >= T(y, theta^(s))].

A ppp near 0 says the data are more extreme than the model's replicates: the model misfits in
what ``T`` measures. Unlike a maximum-likelihood test it carries the parameters' uncertainty.

The discrepancies, of Pearson's form ``sum (O - E)^2 / E`` with ``E`` the counts the draw
expects over the same rows unless said otherwise:

* **item margins**: per item, the table of its values over the rows that observe it;
* **item pairs** (the local-dependence check; Latent GOLD's bivariate residual, Mplus' TECH10):
  per pair, the association of its two-way table over the rows that observe both,
  ``A = sum_ab (O_ab - O_a. O_.b / n)^2 / (O_a. O_.b / n)`` (Pearson's statistic of
  independence, a test quantity free of ``theta``: Sinharay, Johnson & Stern 2006 found such
  pairwise association measures the most powerful check of local independence). ``ppp`` is
  ``P(A(y_rep) >= A(y))``: near 0 the items are more associated than the classes explain
  (local dependence), near 1 less. ``bvr`` is the realised bivariate residual, the posterior
  mean of ``sum (O - E)^2 / E`` against the draw's expected pair table, over
  ``df = (r_i - 1)(r_j - 1)``;
* **G^2 and X^2 of the pattern table**: ``G^2 = 2 sum_p O_p ln(O_p / E_p)`` over the observed
  patterns and ``X^2 = sum_p O_p^2 / E_p - N`` (Pearson's sum over every possible pattern, the
  unobserved ones included), ``E_p = m_p p(y_p | theta)``, ``m_p`` the rows with the same
  missing items as ``p``;
* **the most frequent patterns**: each one's count, with the replicates' 95% interval and the
  two-sided ``2 min(P(rep >= obs), P(rep <= obs))``.

A ppp from the data used to fit is conservative (Bayarri & Berger 2000): it is near 0.5 more
often than a uniform p-value, so a small one is real evidence of misfit, a moderate one is not
proof of fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..encoding import pattern_keys
from ..errors import ArgumentError
from ..render import JSONRecord, fmt, plural, text_table
from ..samplers.idata import arviz, xarray
from ..samplers.pointwise import draw_tables, draws_log_likelihood
from ..samplers.results import GibbsResult, RJMCMCResult
from ..validation import Seed, check_int, check_seed, numpy_rng
from .draws import fixed_draws
from .replicates import item_pairs, margin_probes, pair_probes, replicate, row_log_likelihood

if TYPE_CHECKING:
    import arviz as az
    from matplotlib.figure import Figure

__all__ = ["MISFIT_LEVEL", "PPCResult", "posterior_predictive_check"]

#: ``ppp`` below this names a misfitting pair, item or statistic in the summary and figures.
MISFIT_LEVEL = 0.05
#: Draws whose replicates are made and scored at once.
CHUNK = 64


@dataclass(frozen=True, repr=False, eq=False)
class PPCResult(JSONRecord):
    """A posterior predictive check (module docstring).

    Attributes:
        columns: the items.
        n_rows: rows of the data; n_replicates: replicated data sets (one per draw used).
        margin_ppp: ``(J,)`` ppp of each item's margin; margin_x2: its posterior mean
            ``T(y, theta)``.
        pairs: ``(n_pairs, 2)`` the item pairs (column indices); pair_ppp: the ppp of their
            association; pair_bvr: the realised bivariate residual over its df.
        g2, x2: posterior means of ``T(y, theta)`` for the pattern table; g2_ppp, x2_ppp:
            their ppp.
        patterns: ``(T, J)`` the most frequent observed patterns (codes, ``-1`` missing);
            pattern_observed: their counts; pattern_replicated: ``(S, T)`` their counts in
            every replicate.
        seed: the replicates' seed.
        n_classes: the number of classes (latent class models; ``None`` otherwise).
    """

    columns: tuple[str, ...]
    n_rows: int
    n_replicates: int
    margin_ppp: np.ndarray
    margin_x2: np.ndarray
    pairs: np.ndarray
    pair_ppp: np.ndarray
    pair_bvr: np.ndarray
    g2: float
    g2_ppp: float
    x2: float
    x2_ppp: float
    patterns: np.ndarray
    pattern_observed: np.ndarray
    pattern_replicated: np.ndarray
    seed: int | tuple[int, ...]
    n_classes: int | None = None

    def pair_table(self) -> pd.DataFrame:
        """One row per item pair: the items, ``bvr`` and ``ppp``, the worst first."""
        frame = pd.DataFrame({"item_1": [self.columns[i] for i in self.pairs[:, 0]],
                              "item_2": [self.columns[j] for j in self.pairs[:, 1]],
                              "bvr": self.pair_bvr, "ppp": self.pair_ppp})
        return frame.sort_values(["ppp", "bvr"], ascending=[True, False],
                                 kind="stable").reset_index(drop=True)

    def pattern_table(self) -> pd.DataFrame:
        """The most frequent patterns: observed count, the replicates' mean and 95% interval,
        the two-sided ppp."""
        rep = self.pattern_replicated
        frame = pd.DataFrame(self.patterns, columns=list(self.columns))
        frame["observed"] = self.pattern_observed
        frame["replicated"] = rep.mean(axis=0)
        frame["low"] = np.quantile(rep, 0.025, axis=0)
        frame["high"] = np.quantile(rep, 0.975, axis=0)
        upper = (rep >= self.pattern_observed).mean(axis=0)
        lower = (rep <= self.pattern_observed).mean(axis=0)
        frame["ppp"] = np.minimum(1.0, 2 * np.minimum(upper, lower))
        return frame

    def misfitting_pairs(self, level: float = MISFIT_LEVEL) -> list[tuple[str, str]]:
        """The item pairs whose ppp is below ``level``, the worst first."""
        table = self.pair_table()
        table = table[table["ppp"] < level]
        return list(zip(table["item_1"], table["item_2"], strict=True))

    def to_frame(self) -> pd.DataFrame:
        """One row per statistic: its kind, what it is of, the realised discrepancy and ppp."""
        rows = [("patterns", "G^2", self.g2, self.g2_ppp),
                ("patterns", "X^2", self.x2, self.x2_ppp)]
        rows += [("margin", c, x, p) for c, x, p in
                 zip(self.columns, self.margin_x2, self.margin_ppp, strict=True)]
        rows += [("pair", f"{self.columns[i]} x {self.columns[j]}", b, p) for (i, j), b, p in
                 zip(self.pairs, self.pair_bvr, self.pair_ppp, strict=True)]
        return pd.DataFrame(rows, columns=["statistic", "of", "value", "ppp"])

    def to_inference_data(self) -> az.InferenceData:
        """``posterior_predictive`` and ``observed_data`` with ``pattern_count`` (the counts of
        the most frequent patterns), so that ``az.plot_ppc(res.to_inference_data())`` works."""
        xr = xarray()
        pattern = [" ".join("." if c < 0 else str(c) for c in row) for row in self.patterns]
        return arviz().InferenceData(
            posterior_predictive=xr.Dataset(
                {"pattern_count": (("chain", "draw", "pattern"),
                                   self.pattern_replicated[None].astype(float))},
                coords={"chain": [0], "draw": np.arange(self.n_replicates),
                        "pattern": pattern}),
            observed_data=xr.Dataset(
                {"pattern_count": (("pattern",), self.pattern_observed.astype(float))},
                coords={"pattern": pattern}))

    def pairs_figure(self, level: float = MISFIT_LEVEL) -> Figure:
        """A heat map of the item pairs' ppp on a log scale (dark: misfit), each cell labelled
        with its ppp where the items are few, the misfitting pairs named in the title."""
        from matplotlib.figure import Figure
        n = len(self.columns)
        grid = np.full((n, n), np.nan)
        floor = 1.0 / (self.n_replicates + 1)
        for (i, j), p in zip(self.pairs, self.pair_ppp, strict=True):
            grid[j, i] = -np.log10(max(p, floor))
        fig = Figure(figsize=(1.6 + 0.5 * n, 1.2 + 0.45 * n), layout="constrained")
        ax = fig.add_subplot()
        image = ax.imshow(grid, cmap="Reds", vmin=0.0, vmax=3.0)
        if n <= 12:
            for (i, j), p in zip(self.pairs, self.pair_ppp, strict=True):
                ax.text(i, j, f"{p:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if grid[j, i] > 1.5 else "black")
        ax.set_xticks(range(n), self.columns, rotation=90)
        ax.set_yticks(range(n), self.columns)
        fig.colorbar(image, ax=ax, label="-log10 ppp of the pair's association")
        bad = self.misfitting_pairs(level)
        named = ", ".join(f"{a} x {b}" for a, b in bad[:6]) + (" ..." if len(bad) > 6 else "")
        ax.set_title(f"Local dependence: {plural(len(bad), 'pair')} with ppp < {level:g}"
                     + (f" ({named})" if bad else ""), fontsize=9, wrap=True)
        return fig

    def summary(self) -> str:
        """The pattern table's ppp, the misfitting items and pairs, the frequent patterns."""
        model = f"LC({self.n_classes})" if self.n_classes else "the model"
        lines = [f"Posterior predictive check of {model}: {plural(self.n_rows, 'row')}, "
                 f"{plural(self.n_replicates, 'replicated data set')}",
                 *text_table(["statistic", "realised", "ppp"],
                             [["G^2", fmt(self.g2), fmt(self.g2_ppp)],
                              ["X^2", fmt(self.x2), fmt(self.x2_ppp)]])]
        items = [c for c, p in zip(self.columns, self.margin_ppp, strict=True)
                 if p < MISFIT_LEVEL]
        lines.append(f"item margins with ppp < {MISFIT_LEVEL:g}: {', '.join(items) or 'none'}")
        bad = self.pair_table().head(5)
        lines += ["", "item pairs, the worst first (bvr: T / df):",
                  *text_table(["pair", "bvr", "ppp"],
                              [[f"{a} x {b}", fmt(v), fmt(p)] for a, b, v, p in
                               bad.itertuples(index=False)])]
        misfit = self.misfitting_pairs()
        lines.append(f"{plural(len(misfit), 'pair')} with ppp < {MISFIT_LEVEL:g}"
                     + (": local dependence the classes do not explain" if misfit else ""))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"PPCResult(g2_ppp={self.g2_ppp:.3f}, misfitting_pairs="
                f"{len(self.misfitting_pairs())}, replicates={self.n_replicates})")


def _keys(codes: np.ndarray, cards: tuple[int, ...]) -> np.ndarray:
    """One sortable key per row (int64 where it fits, else the row's bytes)."""
    keys = pattern_keys(codes, cards)
    if keys is not None:
        return keys
    rows = np.ascontiguousarray(codes.astype(np.int16))
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def _pearson(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``sum (O - E)^2 / E`` over the last axis, cells with ``E = 0`` left out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(expected > 0, (observed - expected) ** 2 / expected, 0.0)
    return terms.sum(axis=-1)


class _Tables:
    """Margin and pair tables of code arrays ``(..., N, J)`` (missing entries count nowhere)."""

    def __init__(self, cards: tuple[int, ...]):
        self.cards = cards
        self.width = max(cards)
        self.pairs = item_pairs(len(cards))

    def one_hot(self, codes: np.ndarray) -> np.ndarray:
        return (codes[..., None] == np.arange(self.width)).astype(np.float64)

    def margins(self, hot: np.ndarray) -> np.ndarray:
        return hot.sum(axis=-3)                                         # (..., J, R)

    def pair_tables(self, hot: np.ndarray) -> np.ndarray:
        i, j = (np.array(x) for x in zip(*self.pairs, strict=True))
        return np.einsum("...nia,...nib->...iab", hot[..., :, i, :], hot[..., :, j, :])


def _association(tables: np.ndarray) -> np.ndarray:
    """Pearson's statistic of independence of each two-way table (``(..., a, b)`` counts)."""
    n = tables.sum(axis=(-2, -1), keepdims=True)
    independent = (tables.sum(axis=-1, keepdims=True) * tables.sum(axis=-2, keepdims=True)
                   / np.where(n > 0, n, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(independent > 0, (tables - independent) ** 2 / independent, 0.0)
    return terms.sum(axis=(-2, -1))


def posterior_predictive_check(result: GibbsResult | RJMCMCResult, data, *,
                               n_classes: int | None = None, draws: int = 500,
                               top_patterns: int = 10, seed: Seed = 0) -> PPCResult:
    """Posterior predictive checks of posterior draws (module docstring).

    Args:
        result: posterior draws at a fixed structure (:func:`lcbayes.gibbs` of a latent class
            model, an HLC tree or a DAG), or reversible jump / allocation-sampler draws
            conditioned on ``n_classes`` (:mod:`.draws`).
        data: the data the draws were made on.
        n_classes: with reversible jump draws, the number of classes (default: the most
            probable).
        draws: replicated data sets, one per draw, the draws spread evenly over the chains
            (all of them where there are fewer).
        top_patterns: the most frequent patterns whose counts are checked.
        seed: the replicates' seed.

    Returns:
        A :class:`PPCResult`; ``to_inference_data()`` has ``posterior_predictive`` and
        ``observed_data`` for ArviZ's plots, ``pairs_figure()`` the local-dependence map.
    """
    draws = check_int(draws, "draws", 1)
    top_patterns = check_int(top_patterns, "top_patterns", 1)
    seed = check_seed(seed)
    fixed = fixed_draws(result, data, n_classes, "posterior_predictive_check")
    structure, data, posterior = fixed.structure, fixed.data, fixed.posterior
    all_tables = draw_tables(structure, posterior)
    total = all_tables[0].shape[0] * all_tables[0].shape[1]
    if total < 2:
        raise ArgumentError("a posterior predictive check needs at least 2 posterior draws")
    chosen = np.unique(np.linspace(0, total - 1, min(draws, total)).round().astype(int))
    tables = [t.reshape(total, *t.shape[2:])[chosen] for t in all_tables]
    cards = data.cardinalities
    codes = np.asarray(data.codes)
    seen = (codes >= 0).any(axis=1)
    codes = codes[seen]                        # rows with no observed item check nothing
    counting = _Tables(cards)

    # what each draw expects: margins and pairs (probes), the observed patterns
    m_patterns, m_keys = margin_probes(cards)
    p_patterns, p_keys = pair_probes(cards)
    observed_mask = codes >= 0
    n_item = observed_mask.sum(axis=0).astype(float)                          # (J,)
    n_pair = np.array([(observed_mask[:, i] & observed_mask[:, j]).sum()
                       for i, j in counting.pairs], dtype=float)
    margin_p = np.zeros((len(chosen), len(cards), counting.width))
    for (j, a), column in zip(m_keys, np.exp(draws_log_likelihood(structure, tables,
                                                                  m_patterns)).T, strict=True):
        margin_p[:, j, a] = column
    pair_p = np.zeros((len(chosen), len(counting.pairs), counting.width, counting.width))
    index = {pair: n for n, pair in enumerate(counting.pairs)}
    for (i, j, a, b), column in zip(p_keys, np.exp(draws_log_likelihood(structure, tables,
                                                                        p_patterns)).T,
                                    strict=True):
        pair_p[:, index[(i, j)], a, b] = column
    margin_e = n_item[None, :, None] * margin_p
    pair_e = n_pair[None, :, None, None] * pair_p
    hot = counting.one_hot(codes)
    margin_obs = _pearson(counting.margins(hot)[None], margin_e)              # (S, J)
    observed_pairs = counting.pair_tables(hot)                                # (pairs, R, R)
    pair_obs = _pearson(observed_pairs[None].reshape(1, len(counting.pairs), -1),
                        pair_e.reshape(len(chosen), len(counting.pairs), -1))  # (S, pairs)
    association_obs = _association(observed_pairs)                            # (pairs,)

    mask_keys = _keys(observed_mask.astype(np.int32), (1,) * len(cards))
    _, mask_of_row, mask_counts = np.unique(mask_keys, return_inverse=True, return_counts=True)
    rows_with_mask = mask_counts[mask_of_row].astype(float)                   # (N,)
    obs_keys = _keys(codes, cards)
    uniq, first, obs_counts = np.unique(obs_keys, return_index=True, return_counts=True)
    obs_ll = draws_log_likelihood(structure, tables, codes[first])            # (S, P)
    expected = rows_with_mask[first][None] * np.exp(obs_ll)
    n_obs = float(len(codes))
    g2_obs = 2 * (obs_counts * (np.log(obs_counts)[None] - np.log(expected))).sum(axis=1)
    x2_obs = (obs_counts ** 2 / expected).sum(axis=1) - n_obs

    order = np.argsort(-obs_counts, kind="stable")[:top_patterns]
    top_keys, top_rows, top_counts = uniq[order], codes[first[order]], obs_counts[order]

    rng = numpy_rng(seed)
    margin_rep = np.empty_like(margin_obs)
    association_rep = np.empty_like(pair_obs)
    g2_rep = np.empty(len(chosen))
    x2_rep = np.empty(len(chosen))
    top_rep = np.empty((len(chosen), len(order)))
    for start in range(0, len(chosen), CHUNK):
        part = slice(start, start + CHUNK)
        sub = [t[part] for t in tables]
        rep = replicate(structure, sub, codes, rng)                           # (s, N, J)
        rep_hot = counting.one_hot(rep)
        margin_rep[part] = _pearson(counting.margins(rep_hot), margin_e[part])
        association_rep[part] = _association(counting.pair_tables(rep_hot))
        rows_ll = row_log_likelihood(structure, sub, rep)                     # (s, N)
        for s in range(rep.shape[0]):
            keys = _keys(rep[s], cards)
            _, where, counts = np.unique(keys, return_index=True, return_counts=True)
            e = rows_with_mask[where] * np.exp(rows_ll[s, where])
            g2_rep[start + s] = 2 * (counts * (np.log(counts) - np.log(e))).sum()
            x2_rep[start + s] = (counts ** 2 / e).sum() - n_obs
            top_rep[start + s] = (keys[:, None] == top_keys[None]).sum(axis=0)

    df = np.array([(cards[i] - 1) * (cards[j] - 1) for i, j in counting.pairs], dtype=float)
    return PPCResult(
        columns=tuple(data.columns), n_rows=int(n_obs), n_replicates=len(chosen),
        margin_ppp=(margin_rep >= margin_obs).mean(axis=0), margin_x2=margin_obs.mean(axis=0),
        pairs=np.array(counting.pairs, dtype=np.int64).reshape(-1, 2),
        pair_ppp=(association_rep >= association_obs).mean(axis=0),
        pair_bvr=(pair_obs / np.maximum(df, 1.0)).mean(axis=0),
        g2=float(g2_obs.mean()), g2_ppp=float((g2_rep >= g2_obs).mean()),
        x2=float(x2_obs.mean()), x2_ppp=float((x2_rep >= x2_obs).mean()),
        patterns=top_rows.astype(np.int64), pattern_observed=top_counts.astype(float),
        pattern_replicated=top_rep, seed=seed if isinstance(seed, int) else tuple(
            int(v) for v in np.asarray(seed)),
        n_classes=(structure.cardinalities[structure.root]
                   if structure.kind == "latent_class" else None))

