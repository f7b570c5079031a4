"""Invariance structures of a multiple-group latent class model compared by their evidence:
:func:`compare_invariance`.

Every structure (full invariance, none, partial with named free items) is fitted by EM
(:func:`lcbayes.engines.groups.fit.fit_layout`: glca's fit statistics) and its evidence
estimated by sequential Monte Carlo with bridge sampling (:func:`lcbayes.smc`, with its error
bar). The evidence is that of a latent class model of the expanded items
(:mod:`lcbayes.engines.groups.layout`) *with the group as one more item*: the joint
``P(class, group)`` under a Dirichlet prior is the same for every structure, so
``ln p(y, g | M) = ln p(g) + ln p(y | g, M)`` differs between structures only by
``ln p(y | g, M)``, and the posterior probabilities over the structures (uniform prior) are
those of the conditional model. The SMC product estimate needs no correction for the classes'
symmetry, which with no invariant item includes each group's own permutations.

``invariance="all"`` compares full invariance, none, every single-item partial structure and
then, forward from the best single-item structure, structures freeing more of the items whose
single-item structure beat full invariance, while the evidence grows (a greedy search: two or
more non-invariant items are found without fitting all ``2^J`` structures).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..constructors import latent_class
from ..engines.groups.fit import fit_layout
from ..engines.groups.layout import (
    GroupLayout,
    group_rows,
    invariance_label,
    joint_data,
    resolve_invariance,
)
from ..engines.groups.result import GroupResult
from ..engines.regression.design import covariate_design
from ..errors import ArgumentError
from ..render import json_value
from ..samplers.smc_evidence import smc
from ..samplers.smc_result import SMCResult
from ..structure import Structure
from ..validation import check_int
from .evidence import posterior_probabilities

__all__ = ["InvarianceComparisonResult", "compare_invariance"]


@dataclass(frozen=True, repr=False)
class InvarianceComparisonResult:
    """The invariance structures compared (module docstring).

    Attributes:
        table: one row per structure: ``invariance``, ``free`` (the free items),
            ``n_parameters``, ``loglik``, ``bic`` (glca's scale, ``-2 ln L + d ln N``),
            ``log_evidence`` with ``stderr``, ``posterior_prob`` with its 95% interval
            (``prob_low``, ``prob_high``), ``step`` (``"listed"`` or ``"search"``),
            ``seconds`` (fit and evidence) and ``evidence_seconds`` (the evidence alone).
        fits: ``{invariance: GroupResult}``.
        evidences: ``{invariance: SMCResult}``.
        seconds: wall-clock time of the comparison.
    """

    table: pd.DataFrame
    fits: dict[str, GroupResult]
    evidences: dict[str, SMCResult]
    seconds: float

    @property
    def best(self) -> str:
        """The structure of highest posterior probability."""
        return str(self.table.loc[self.table["posterior_prob"].idxmax(), "invariance"])

    def to_frame(self) -> pd.DataFrame:
        """The table (one row per structure)."""
        return self.table.copy()

    def summary(self) -> str:
        shown = self.table.drop(columns=["free"]).to_string(
            index=False, float_format="{:.4g}".format)
        fit = next(iter(self.fits.values()))
        return "\n".join([
            f"Measurement invariance across {fit.layout.group!r} "
            f"({len(fit.layout.levels)} groups), {fit.n_classes} classes: evidence by SMC with "
            "bridge sampling, posterior probabilities under a uniform prior", shown, "",
            f"Most probable: {self.best} invariance ({self.seconds:.1f} s)"])

    def __repr__(self) -> str:
        return f"InvarianceComparisonResult(best={self.best!r}, structures={len(self.table)})"

    def to_dict(self) -> dict:
        return json_value({"table": self.table.to_dict(orient="records"),
                           "fits": {k: v.to_dict() for k, v in self.fits.items()},
                           "evidences": {k: v.to_dict() for k, v in self.evidences.items()},
                           "seconds": self.seconds, "best": self.best})

    @classmethod
    def from_dict(cls, spec: dict) -> InvarianceComparisonResult:
        table = pd.DataFrame(spec["table"])
        table["free"] = [tuple(f) for f in table["free"]]
        return cls(table=table,
                   fits={k: GroupResult.from_dict(v) for k, v in spec["fits"].items()},
                   evidences={k: SMCResult.from_dict(v) for k, v in spec["evidences"].items()},
                   seconds=float(spec["seconds"]))

    # ------------------------------------------------------------------ figures
    def prevalence_figure(self, *, invariance: str | None = None):
        """Class prevalences by group (bars with 95% intervals) of one structure's fit
        (default: the most probable)."""
        import matplotlib.pyplot as plt

        fit = self.fits[invariance or self.best]
        table = fit.prevalences()
        levels = list(fit.layout.levels)
        k = fit.n_classes
        fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(levels), 3.2))
        width = 0.8 / k
        for r in range(k):
            rows = table[table["class"] == r + 1]
            se = np.nan_to_num(rows["se"].to_numpy())
            ax.bar(np.arange(len(levels)) + (r - (k - 1) / 2) * width, rows["prevalence"],
                   width, yerr=1.96 * se, capsize=2, label=f"class {r + 1}")
        ax.set_xticks(np.arange(len(levels)), [str(v) for v in levels])
        ax.set_ylabel("P(class | group)")
        ax.set_title(f"Class prevalences by {fit.layout.group} ({fit.layout.invariance} "
                     "invariance)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        return fig

    def profile_figure(self, *, items: int = 4):
        """The ``items`` items whose profiles differ most between groups in the
        no-invariance fit: each class's probability of the most differing category, by
        group."""
        import matplotlib.pyplot as plt

        fit = self.fits.get("none") or self.fits[self.best]
        ranked = fit.profile_differences().head(items)
        fig, axes = plt.subplots(1, len(ranked), figsize=(2.6 * len(ranked) + 0.6, 3.0),
                                 squeeze=False)
        levels = list(fit.layout.levels)
        for ax, (_, row) in zip(axes[0], ranked.iterrows(), strict=False):
            j = fit.layout.item_labels[fit.layout.items.index(row["item"])].index(
                row["category"])
            for r in range(fit.n_classes):
                ax.plot(range(len(levels)),
                        [fit.item_probabilities(level)[row["item"]][r, j] for level in levels],
                        marker="o", label=f"class {r + 1}")
            ax.set_xticks(range(len(levels)), [str(v) for v in levels], rotation=30,
                          fontsize=7)
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{row['item']} = {row['category']}", fontsize=9)
        axes[0][0].set_ylabel("P(category | class, group)")
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"Items whose profiles differ most ({fit.layout.invariance} invariance)",
                     fontsize=10)
        fig.tight_layout()
        return fig


def _specs(invariance, items: Sequence[str]) -> list[tuple[str, ...]]:
    """The free-item tuples listed by ``invariance`` (``"all"``: full, none and every single
    item; or a list of specifications as :func:`resolve_invariance` takes them)."""
    if isinstance(invariance, str) and invariance == "all":
        return [(), tuple(items)] + [(item,) for item in items]
    if isinstance(invariance, str) or not isinstance(invariance, Sequence):
        raise ArgumentError("invariance must be 'all' or a list of structures ('full', 'none' "
                            f"or lists of free items), got {invariance!r}")
    specs = [resolve_invariance(spec, items) for spec in invariance]
    return list(dict.fromkeys(specs))


def compare_invariance(structure: Structure, data, group, *, invariance="all",
                       restarts: int = 10, seed=0, search: bool = True,
                       engine_options: dict[str, dict] | None = None,
                       workers: int | None = None) -> InvarianceComparisonResult:
    """Compare invariance structures of a multiple-group latent class model by their
    evidence (module docstring).

    Args:
        structure: the latent class model (:func:`lcbayes.latent_class` of the items).
        data: a DataFrame with the items and the group column (or the items, with ``group``
            one label per row).
        group: the group column's name, or one label per row.
        invariance: ``"all"`` or a list of structures (``"full"``, ``"none"``, item lists).
        restarts: EM restarts of every structure's fit (the no-invariance fit gets twenty
            times as many: its likelihood has many local maxima).
        seed: every fit's and every evidence's seed.
        search: with ``"all"``, the forward search over several free items.
        engine_options: ``{"smc": {...}}``: options of :func:`lcbayes.smc` (particles, runs,
            target_stderr, ...), as :func:`lcbayes.compare` takes them.
        workers: how many structures are fitted and their evidences estimated side by side
            (threads; default: the CPU count). The numbers depend on ``seed`` alone.
    """
    started = time.perf_counter()
    if structure.kind != "latent_class":
        raise ArgumentError("compare_invariance needs a latent class structure (lcb.latent_class)")
    rows = group_rows(structure, data, group, stacklevel=2)
    name = rows.name
    items = tuple(structure.observed_names)
    labels = pd.Categorical(np.asarray(rows.levels, dtype=object)[rows.group],
                            categories=list(rows.levels))
    cov = covariate_design(pd.DataFrame({name: labels}), [name], name="group")
    engine_options = dict(engine_options or {})
    other = sorted(set(engine_options) - {"smc"})
    if other:
        raise ArgumentError(f"engine_options: the evidence is SMC's, so only 'smc' options "
                            f"apply, not {other}")
    options = dict(engine_options.get("smc", {}))
    fits: dict[str, GroupResult] = {}
    evidences: dict[str, SMCResult] = {}
    steps: dict[str, str] = {}
    seconds: dict[str, tuple[float, float]] = {}
    k = int(structure.n_classes or 1)

    workers = check_int(os.cpu_count() or 1 if workers is None else workers, "workers", 1)

    def one(free: tuple[str, ...]) -> tuple[GroupResult, SMCResult, float]:
        clock = time.perf_counter()
        layout = GroupLayout(name, rows.levels, items, rows.items.labels, free)
        fit = fit_layout(layout, rows.items, rows.group, cov, n_rows=len(rows.kept),
                         class_name=structure.nodes[structure.root], n_classes=k,
                         restarts=restarts * (20 if len(free) == len(items) else 1),
                         seed=seed, tol=1e-8, max_iter=2000, batch_size=None,
                         standard_errors="empirical")
        joint = joint_data(layout.expand(rows.items, rows.group), rows.group, name, rows.levels)
        evidence = smc(latent_class(joint, k, name=structure.nodes[structure.root]), joint,
                       seed=seed, **options)
        return fit, evidence, time.perf_counter() - clock

    def evaluate(frees: Sequence[tuple[str, ...]], step: str) -> None:
        """Fit and estimate the structures not done yet, ``workers`` at a time."""
        todo = [f for f in dict.fromkeys(frees) if invariance_label(f, items) not in fits]
        with warnings.catch_warnings(), ThreadPoolExecutor(max_workers=workers) as pool:
            warnings.simplefilter("ignore")     # one structure's warnings are the fit's own
            done = list(pool.map(one, todo))
        for free, (fit, evidence, wall) in zip(todo, done, strict=True):
            label = invariance_label(free, items)
            fits[label], evidences[label], steps[label] = fit, evidence, step
            seconds[label] = (wall, evidence.seconds)

    def run(free: tuple[str, ...], step: str) -> float:
        evaluate([free], step)
        return evidences[invariance_label(free, items)].log_evidence

    evaluate(_specs(invariance, items), "listed")
    if search and isinstance(invariance, str) and len(items) > 2:
        base = run((), "listed")
        promising = [i for i in items if run((i,), "listed") > base]
        singles = [(i,) for i in promising]
        current: tuple[str, ...] | None = max(singles, key=lambda f: run(f, "listed"), default=None)
        while current is not None and len(current) < len(items) - 1:
            trials = [tuple(i for i in items if i in {*current, extra})
                      for extra in promising if extra not in current]
            if not trials:
                break
            evaluate(trials, "search")
            best = max(trials, key=lambda f: run(f, "search"))
            if run(best, "search") <= run(current, "search"):
                break
            current = best
    return InvarianceComparisonResult(_table(fits, evidences, steps, seconds, seed), fits,
                                      evidences, time.perf_counter() - started)


def _table(fits, evidences, steps, seconds, seed) -> pd.DataFrame:
    labels = list(fits)
    lz = np.array([evidences[k].log_evidence for k in labels])
    se = np.array([evidences[k].stderr for k in labels])
    prob, low, high = posterior_probabilities(
        lz, se.tolist(), seed=int(seed) if isinstance(seed, int) else 0)
    return pd.DataFrame({
        "invariance": labels, "free": [fits[k].layout.free for k in labels],
        "n_parameters": [fits[k].n_parameters for k in labels],
        "loglik": [fits[k].loglik for k in labels],
        "bic": [-2 * fits[k].bic for k in labels],
        "log_evidence": lz, "stderr": se, "posterior_prob": prob, "prob_low": low,
        "prob_high": high, "step": [steps[k] for k in labels],
        "seconds": [seconds[k][0] for k in labels],
        "evidence_seconds": [seconds[k][1] for k in labels]})
