"""Convergence diagnostics of latent class posterior draws (Gibbs or reversible jump), computed
after undoing label switching.

Per-class parameters are only comparable across draws and chains once the labels agree
(:mod:`lcbayes.samplers.relabelling`), so :func:`diagnostics` first relabels (``relabel_method``;
for reversible jump output conditioned on ``k``, by default the most visited number of classes) and
then runs ``az.summary`` on the relabelled draws: posterior mean, sd, 94% HDI, the
rank-normalised split R-hat and the bulk and tail effective sample sizes (Vehtari, Gelman,
Simpson, Carpenter & Bürkner 2021). For reversible jump output the table also has a row for
``k`` itself, from the original chains, and :attr:`DiagnosticsResult.k_mixing` says whether
the chains moved between numbers of classes (:class:`~lcbayes.samplers.results.KMixingResult`);
when they did not, a :class:`~lcbayes.samplers.results.KMixingWarning` says what to do. A
:class:`RhatWarning` counts the parameters whose R-hat exceeds ``rhat_threshold`` (1.01, Vehtari
et al.'s recommendation) and names the worst :data:`FLAG_NAMES` of them.

Figures (matplotlib :class:`~matplotlib.figure.Figure` objects, no pyplot state): ArviZ trace
plots of the class weights and of the items with the highest R-hat, ArviZ rank plots of the
parameters with the highest R-hat, the posterior of ``K`` with every chain's frequencies and
the trace of ``k``, and the class profiles (posterior mean and 90% interval of every
item-response probability per class). :meth:`DiagnosticsResult.to_html` and
:meth:`DiagnosticsResult.to_markdown` give a self-contained report section with the figures
embedded as base64 PNGs (:mod:`lcbayes.render`), after a settings block (the data, the
sampler's settings, the relabelling) and before the versions of lcbayes and its dependencies.
Classes are numbered by their ``class`` coordinate (from 1 in the samplers' output).

Example::

    diag = lcb.diagnostics(idata)                  # Stephens relabelling, then az.summary
    print(diag.summary())
    html = diag.to_html(data_name="survey.csv")    # a <section> for a report
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure

from ..errors import LcbayesError
from ..render import (
    fmt,
    fmt_setting,
    json_value,
    plural,
    png,
)
from .diagnostics_json import diagnostics_from_dict, diagnostics_to_dict
from .diagnostics_report import COLUMNS, diagnostics_html, diagnostics_markdown
from .idata import arviz, as_inference_data, condition_on_k, k_shares, settings_from_json
from .plots import (
    TRACE_ITEMS,
    plot_class_profiles,
    plot_posterior_k,
    plot_rank,
    plot_trace,
    redundant_rows,
    theta_names,
)
from .relabelling import METHODS, RelabelResult, relabel
from .results import KMixingResult, KMixingWarning, k_mixing

if TYPE_CHECKING:
    import arviz as az

    from .results import SamplerResult
else:
    az = arviz()

__all__ = ["DiagnosticsResult", "RhatWarning", "diagnostics", "plot_class_profiles",
           "plot_posterior_k", "plot_rank", "plot_trace"]  # the plots re-exported

#: The R-hat flag (text, warning) names this many parameters, the worst; it counts the rest.
FLAG_NAMES = 3

#: The sampler settings the reports show, in this order (those the run records).
SETTINGS = ("draws", "warmup", "chains", "thin", "max_classes", "n_classes", "prior",
            "prior_k", "seed")

class RhatWarning(UserWarning):
    """Some R-hat exceeds the threshold after relabelling: the chains disagree."""


# ---------------------------------------------------------------------- result
@dataclass(frozen=True, repr=False, eq=False)
class DiagnosticsResult:
    """Diagnostics of posterior draws after relabelling (module docstring).

    Attributes:
        idata: the input draws.
        draws: the draws summarised (relabelled; for reversible jump output only those with
            ``k`` classes).
        relabelled: the relabelling, or ``None`` for ``relabel_method=None``.
        table: ``az.summary`` of ``draws`` (plus a ``k`` row from ``idata`` for reversible jump
            output), indexed by parameter.
        conditioned_on: the number of classes the draws were conditioned on (reversible jump
            output), else ``None``.
        posterior_k: ``{K: probability}`` from the draws of ``k`` for every ``K`` from 1 to
            the number of class slots (0 where never visited), else ``None``.
        flagged: parameters with R-hat above ``rhat_threshold``, highest first.
        rhat_threshold: the R-hat above which a parameter is flagged.
        max_rank_panels: how many parameters the rank plot shows.
        settings: the sampler's :data:`SETTINGS` that the run records.
        k_mixing: reversible jump output: how well the chains mixed between numbers of
            classes; else ``None``.
    """

    idata: az.InferenceData
    draws: az.InferenceData
    relabelled: RelabelResult | None
    table: pd.DataFrame
    conditioned_on: int | None
    posterior_k: dict[int, float] | None
    flagged: tuple[str, ...]
    rhat_threshold: float
    max_rank_panels: int
    settings: dict
    k_mixing: KMixingResult | None

    @property
    def relabel_method(self) -> str | None:
        return self.relabelled.method if self.relabelled is not None else None

    @property
    def max_rhat(self) -> float:
        return float(self.table["r_hat"].max())

    @property
    def min_ess_bulk(self) -> float:
        return float(self.table["ess_bulk"].min())

    def figures(self) -> dict[str, Figure]:
        """``trace``, ``rank``, ``posterior_k`` (reversible jump output) and
        ``class_profiles``, made once: the reports render these objects."""
        return dict(self._figures)

    @cached_property
    def _figures(self) -> dict[str, Figure]:
        rhat = self.table["r_hat"].drop(index=["k"], errors="ignore")
        rhat = rhat.drop(index=list(redundant_rows(self.draws) & set(rhat.index)))
        worst = rhat.sort_values(ascending=False, na_position="last").index
        items = list(dict.fromkeys(p.split("[")[0] for p in worst if p.startswith("theta_")))
        out = {"trace": plot_trace(self.draws, ["class_weights", *items[:TRACE_ITEMS]]),
               "rank": plot_rank(self.draws, list(worst[:self.max_rank_panels]))}
        if self.posterior_k is not None:
            out["posterior_k"] = plot_posterior_k(self.idata)
        out["class_profiles"] = plot_class_profiles(self.draws)
        return out

    @cached_property
    def _pngs(self) -> dict[str, bytes]:
        return {key: png(fig) for key, fig in self._figures.items()}

    def figure_pngs(self) -> dict[str, bytes]:
        """``{name: PNG bytes}`` of :meth:`figures` (drawn once, as the reports embed them)."""
        return dict(self._pngs)

    def _sampler(self) -> dict:
        """The engine, its settings, seconds and acceptance rates, as ``to_dict`` gives them."""
        post = self.idata["posterior"]
        out = {key: post.attrs[key] for key in ("engine", "seconds") if key in post.attrs}
        out.update(self.settings)
        if "acceptance_json" in post.attrs:
            out["acceptance"] = json.loads(post.attrs["acceptance_json"])
        return out

    def summary_dict(self) -> dict:
        """JSON-ready, without the draws (the command line prints it): sampler settings with
        acceptance rates, relabelling, ``conditioned_on``, ``posterior_k``, ``k_mixing``, R-hat
        threshold, flagged parameters and the table as ``{parameter: {column: value}}`` (NaN as
        None)."""
        chains, draws = (self.draws["posterior"].sizes[d] for d in ("chain", "draw"))
        relabelling = self.relabelled.summary_dict() if self.relabelled is not None else None
        return json_value({
            "sampler": self._sampler(), "relabelling": relabelling,
            "conditioned_on": self.conditioned_on, "posterior_k": self.posterior_k,
            "chains": chains, "draws": draws,
            "k_mixing": self.k_mixing.to_dict() if self.k_mixing is not None else None,
            "rhat_threshold": self.rhat_threshold, "max_rhat": self.max_rhat,
            "min_ess_bulk": self.min_ess_bulk, "flagged": list(self.flagged),
            "summary": {name: dict(row) for name, row in self.table[COLUMNS].iterrows()},
        })

    def to_dict(self) -> dict:
        """:meth:`summary_dict`, the draws and the whole table; :meth:`from_dict` reads it."""
        return diagnostics_to_dict(self)

    @classmethod
    def from_dict(cls, spec: dict) -> DiagnosticsResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        return diagnostics_from_dict(cls, spec)

    def to_frame(self) -> pd.DataFrame:
        """The ``az.summary`` table with the parameter as a column (``parameter``)."""
        return self.table.rename_axis("parameter").reset_index()

    def headline(self) -> str:
        """One line: the draws summarised, the relabelling, the largest R-hat and the smallest
        bulk ESS."""
        chains, draws = (self.draws["posterior"].sizes[d] for d in ("chain", "draw"))
        engine = self.idata["posterior"].attrs.get("engine", "posterior")
        how = (f"relabelled by {self.relabel_method}" if self.relabelled is not None
               else "not relabelled")
        given = (f", draws with K = {self.conditioned_on}" if self.conditioned_on is not None
                 else "")
        return (f"{engine} draws{given}: {chains} chains x {draws} draws, {how}; max R-hat "
                f"{fmt(self.max_rhat, 3)}, min bulk ESS {fmt(self.min_ess_bulk, 0)}")

    def flag_text(self) -> str:
        """One line: how many parameters have an R-hat above the threshold and the worst
        :data:`FLAG_NAMES` of them with their R-hat (first categories and first class weights,
        one minus the others, after the rest), or that none has."""
        if not self.flagged:
            return f"Every R-hat is at most {self.rhat_threshold}."
        redundant = redundant_rows(self.draws)
        named = sorted(self.flagged, key=lambda p: p in redundant)[:FLAG_NAMES]  # stable
        more = len(self.flagged) - len(named)
        return (f"R-hat > {self.rhat_threshold} for {plural(len(self.flagged), 'parameter')}: "
                + ", ".join(f"{p} ({self.table.loc[p, 'r_hat']:.3f})" for p in named)
                + (f" and {more} more" if more else ""))

    def table_text(self) -> str:
        """The summary table (:data:`COLUMNS`) as aligned text."""
        return self.table[COLUMNS].to_string(float_format=lambda v: f"{v:.3f}")

    def summary(self) -> str:
        """The headline, the posterior of K, the flags and the summary table as text."""
        lines = [self.headline()]
        if self.posterior_k is not None:
            lines.append("posterior of K: " + ", ".join(f"{k}: {p:.3f}"
                                                        for k, p in self.posterior_k.items()))
        lines += [self.flag_text(), "", self.table_text()]
        return "\n".join(lines)

    def settings_block(self, *, data_name: str | None = None) -> dict[str, str]:
        """The settings block of the reports, as text: the data (``data_name``, e.g. the file
        name) and its shape, the engine and its :attr:`settings` (integers as integers), the
        relabelling."""
        y = self.idata["observed_data"]["y"]
        items = [str(c) for c in y["item"].values]
        block = {"data": data_name or "not named (give data_name)",
                 "rows": str(y.sizes["row"]), "columns": f"{len(items)}: {', '.join(items)}",
                 "engine": str(self.idata["posterior"].attrs.get("engine", "posterior"))}
        for key, value in self.settings.items():
            block[key] = (", ".join(f"{k}: {fmt_setting(v)}" for k, v in value.items())
                          if isinstance(value, dict) else fmt_setting(value))
        given = (f" on the draws with K = {self.conditioned_on}"
                 if self.conditioned_on is not None else "")
        block["relabelling"] = f"{self.relabel_method or 'none'}{given}"
        return block

    def mixing_warning(self, *, data_name: str | None = None) -> str | None:
        """Reversible jump output whose chains did not mix between numbers of classes: the
        warning of :meth:`KMixingResult.warning` (worded for the command line with ``data_name``);
        else ``None``."""
        return self.k_mixing.warning(data_name=data_name) if self.k_mixing is not None else None

    def to_html(self, path: str | Path | None = None, *, data_name: str | None = None) -> str:
        """The diagnostics as a self-contained HTML ``<section>`` (figures as base64 PNGs,
        flagged rows highlighted): the headline, any mixing warning, the R-hat flags, the
        settings block (:meth:`settings_block`), the tables, the figures and the versions.
        With ``path``, also written there as a whole document."""
        return diagnostics_html(self, path, data_name)

    def to_markdown(self, path: str | Path | None = None, *,
                    data_name: str | None = None) -> str:
        """The diagnostics as a Markdown section, with what :meth:`to_html` holds. Without
        ``path`` the figures are embedded as base64 data URIs; with ``path`` the text is
        written there and the figures beside it as ``<stem>-<figure>.png``, linked."""
        return diagnostics_markdown(self, path, data_name)

    def __repr__(self) -> str:
        return (f"DiagnosticsResult(relabel_method={self.relabel_method!r}, "
                f"conditioned_on={self.conditioned_on}, "
                f"max_rhat={self.max_rhat:.3f}, flagged={len(self.flagged)})")


# ---------------------------------------------------------------------- public
def _run_settings(draws, idata: az.InferenceData) -> dict:
    """The :data:`SETTINGS` of the run: a sampler result's ``settings``, else those the
    posterior's attributes record (``prior_k`` from ``prior_k_json``)."""
    known = dict(idata["posterior"].attrs)
    if "prior_k_json" in known:
        known["prior_k"] = json.loads(known["prior_k_json"])
    known.update(getattr(draws, "settings", {}))
    return settings_from_json({key: known[key] for key in SETTINGS if key in known})


def diagnostics(idata: az.InferenceData | SamplerResult, *,
                relabel_method: str | None = "stephens", n_classes: int | None = None,
                rhat_threshold: float = 1.01, max_rank_panels: int = 12) -> DiagnosticsResult:
    """Relabel, summarise with ``az.summary`` and flag R-hat (module docstring).

    Args:
        idata: the result of :func:`lcbayes.gibbs` or :func:`lcbayes.rjmcmc`, or its
            ``InferenceData``.
        relabel_method: a :data:`lcbayes.samplers.relabelling.METHODS` name, or ``None`` to
            summarise the draws as they are.
        n_classes: reversible jump output: the number of classes to condition on (default: the most
            visited). Fixed-``K`` output: leave ``None``.
        rhat_threshold: R-hat above this is flagged and warned about.
        max_rank_panels: the rank plot shows this many parameters, highest R-hat first.

    Warns:
        RhatWarning: counting the parameters with R-hat above ``rhat_threshold`` and naming
            the worst (:meth:`DiagnosticsResult.flag_text`).
        KMixingWarning: reversible jump chains that did not mix between numbers of classes
            (:meth:`DiagnosticsResult.mixing_warning`).
    """
    if relabel_method is not None and relabel_method not in METHODS:
        raise LcbayesError(f"unknown relabel_method {relabel_method!r}; choose from "
                           f"{', '.join(METHODS)} or None")
    source, idata = idata, as_inference_data(idata)
    thetas = theta_names(idata)
    posterior_k = mixing = None
    k = n_classes
    if "k" in idata["posterior"]:
        posterior_k, mixing = k_shares(idata), k_mixing(idata)
        if k is None:
            k = max(posterior_k, key=posterior_k.__getitem__)
    if relabel_method is not None:
        relabelled = relabel(idata, method=relabel_method, n_classes=k)
        draws = relabelled.idata
    else:
        relabelled = None
        draws = condition_on_k(idata, k) if k is not None else idata
    table = az.summary(draws, var_names=["class_weights", *thetas], round_to="none")
    if posterior_k is not None:
        table = pd.concat([table, az.summary(idata, var_names=["k"], round_to="none")])
    rhat = table["r_hat"]
    flagged = tuple(rhat[rhat > rhat_threshold].sort_values(ascending=False).index)
    result = DiagnosticsResult(idata=idata, draws=draws, relabelled=relabelled, table=table,
                               conditioned_on=k,
                         posterior_k=posterior_k, flagged=flagged,
                         rhat_threshold=rhat_threshold, max_rank_panels=max_rank_panels,
                         settings=_run_settings(source, idata), k_mixing=mixing)
    if warning := result.mixing_warning():
        warnings.warn(warning, KMixingWarning, stacklevel=2)
    if flagged:
        warnings.warn(result.flag_text() + "; run longer chains or check the relabelling",
                      RhatWarning, stacklevel=2)
    return result
