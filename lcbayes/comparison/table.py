"""The outcome of :func:`lcbayes.compare`: every candidate's engine results and the tidy table
built from them (scores -> flags -> choice of evidence -> posterior -> ranks).

The table (:meth:`ComparisonResult.to_frame`) has one row per candidate: ``name``, ``kind``,
``n_classes``, ``n_parameters`` (``d``), ``effective_dimension`` (``d_e``), ``loglik`` (when
the EM fit ran), the columns of every requested method in order (:mod:`.registry`), ``exact``
(unless ``exact=False``), ``log_evidence``, ``evidence_method``, ``log_evidence_stderr``,
``posterior_prob``, ``posterior_low``, ``posterior_high``, ``log_bayes_factor``
(:mod:`.evidence`), ``rank_<method>`` per method plus ``rank_exact`` and ``rank_evidence``,
``flags`` (comma-separated names), ``flag_notes`` (why; :mod:`.flags`) and ``seconds``.

**The criterion.** :attr:`ComparisonResult.best` maximises ``log_evidence`` where every candidate
has one; otherwise the first requested method's ranked score that every candidate has (BIC for
``methods=("bic",)``), and :attr:`ComparisonResult.criterion` names it. An evidence that only some
candidates have (the automatic exact sum of a one-class model, say) ranks nothing, and the
posterior probabilities and Bayes factors are then left empty: over a subset of the candidates
they would mislead.

**The edge of the range.** When the best candidate (by the criterion) is the latent
class model with the most classes of two or more compared on its columns, the best number of
classes may lie beyond the range: :attr:`ComparisonResult.best_is_largest` is true,
:meth:`ComparisonResult.notes` says so and suggests a wider range
(:meth:`ComparisonResult.wider_classes`), and the metadata, the text table and the reports
carry the note.

**Ranks.** ``rank_<method>`` is 1 for the highest value of the method's ranked column (ties
share the lower rank; missing where the method did not score every candidate, e.g. an exact
evidence too large for some). The alias-corrected CS and VB values rank because they, not the
one-mode bounds, estimate ``ln p(y | m)``; BIC, BIC_e, AIC and ICL rank as usually reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..data import Dataset
from ..errors import LcbayesError
from ..render import fmt_setting, plural
from ..structure import Structure
from . import registry
from .evidence import posterior_probabilities
from .needs import CandidateFits
from .policy import choose_evidence
from .table_json import comparison_from_dict, comparison_to_dict, metadata, summary_dict

if TYPE_CHECKING:
    from .covariate_effects import CovariateEffects

__all__ = ["ComparisonResult"]

#: The columns every row starts with.
IDENTITY = ("name", "kind", "n_classes", "n_parameters", "effective_dimension")
#: The evidence columns, after the methods' columns.
EVIDENCE = ("log_evidence", "evidence_method", "log_evidence_stderr", "posterior_prob",
            "posterior_low", "posterior_high", "log_bayes_factor")


@dataclass(frozen=True, repr=False, eq=False)
class ComparisonResult:
    """Outcome of :func:`lcbayes.compare`: every candidate's engine results and the run's record.

    Attributes:
        names: one name per candidate (``"LC(3)"``, or the name given).
        structures: the candidates.
        methods: the methods requested.
        fits: per engine run (``"em"``, ``"vbem"``, ``"ais"``, ``"exact"``,
            ``"effective_dimension"``, ...), one result per candidate (``None`` where it did
            not run or had no result); :attr:`em`, :attr:`vbem`, :attr:`ais` and :attr:`exact`
            are shortcuts.
        exact_notes: per candidate, why there is no exact evidence (``None`` if there is).
        data: the data compared on (restricted to the candidates' columns).
        settings: the arguments of the run.
        seeds: the seed of every random step.
        seconds: wall time per engine run (summed over candidates) and in total.
        versions: package versions, Python, platform and JAX backend.
        covariate_effects: with ``compare(covariates=..., distal=...)``, whether the covariates
            matter and the outcome differs by class, per K
            (:class:`~lcbayes.comparison.covariate_effects.CovariateEffects`).

    :meth:`to_frame` gives the table; :meth:`to_dict` its JSON form; :meth:`to_html` and
    :meth:`to_markdown` write reports (:mod:`lcbayes.comparison.report`).
    """

    names: tuple[str, ...]
    structures: tuple[Structure, ...]
    methods: tuple[str, ...]
    fits: dict[str, tuple]
    exact_notes: tuple[str | None, ...]
    data: Dataset = field(compare=False)
    settings: dict = field(compare=False)
    seeds: dict = field(compare=False)
    seconds: dict = field(compare=False)
    versions: dict = field(compare=False)
    covariate_effects: CovariateEffects | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ engine results
    def _results(self, need: str) -> tuple:
        return self.fits.get(need, (None,) * len(self.names))

    @property
    def em(self) -> tuple:
        """Per candidate, the :class:`~lcbayes.EMResult` (``None`` where EM did not run)."""
        return self._results("em")

    @property
    def vbem(self) -> tuple:
        """Per candidate, the :class:`~lcbayes.VBResult`."""
        return self._results("vbem")

    @property
    def ais(self) -> tuple:
        """Per candidate, the :class:`~lcbayes.AISResult`."""
        return self._results("ais")

    @property
    def exact(self) -> tuple:
        """Per candidate, the :class:`~lcbayes.ExactEvidenceResult` (``None`` where too large)."""
        return self._results("exact")

    @property
    def effective_dimensions(self) -> tuple[int, ...]:
        """Per candidate, :func:`lcbayes.effective_dimension`."""
        return tuple(int(d) for d in self._results("effective_dimension"))

    def with_fits(self, **results) -> ComparisonResult:
        """The same comparison with some engine runs' results replaced (``em=(fit, ...)``, one
        per candidate) and its table rebuilt from them."""
        unknown = [k for k in results if k not in self.fits]
        if unknown:
            raise LcbayesError(f"no engine run {unknown} in this comparison; it has "
                               f"{sorted(self.fits)}")
        return replace(self, fits={**self.fits, **{k: tuple(v) for k, v in results.items()}})

    def candidate_fits(self, i: int) -> CandidateFits:
        """Candidate ``i``'s results, as the methods read them."""
        return CandidateFits(self.structures[i], {k: v[i] for k, v in self.fits.items()})

    # ------------------------------------------------------------------ the methods in use
    @property
    def _exact_on(self) -> bool:
        return self.settings.get("exact") is not False

    @property
    def _all_methods(self) -> tuple[registry.Method, ...]:
        """The requested methods, then those run by their own argument (``exact``)."""
        auto = tuple(m for m in registry.methods() if not m.selectable and self._exact_on)
        return tuple(registry.method(m) for m in self.methods) + auto

    @property
    def score_columns(self) -> list[str]:
        """The score columns of :meth:`to_frame` for the requested methods, in order."""
        return [c.name for m in self._all_methods for c in m.columns]

    @property
    def compared_columns(self) -> list[str]:
        """The score columns where higher is better: those of ranked methods and of evidence
        estimates (not the p-values of tests nor descriptive columns such as entropy)."""
        return [c.name for m in self._all_methods if m.ranked or m.evidence is not None
                for c in m.columns]

    @property
    def rank_methods(self) -> list[str]:
        """The methods with a ``rank_<method>`` column."""
        return [m.name for m in self._all_methods if m.ranked] + ["evidence"]

    @property
    def ranked_columns(self) -> dict[str, str]:
        """``{method: the column rank_<method> ranks}``."""
        out = {m.name: m.ranked for m in self._all_methods if m.ranked}
        return {**out, "evidence": "log_evidence"}

    @property
    def active_flags(self) -> tuple[registry.Flag, ...]:
        """The flags of the methods in use, in registry order."""
        names = {f.name for m in self._all_methods for f in m.flags}
        return tuple(f for f in registry.flags() if f.name in names)

    # ------------------------------------------------------------------ the table
    @cached_property
    def rows(self) -> list[dict]:
        """Per candidate, its identity and score columns (before flags and evidence)."""
        rows = [self._scores(i) for i in range(len(self.names))]
        fits = [self.candidate_fits(i) for i in range(len(self.names))]
        for m in registry.methods():
            if m.across is not None and (m.name in self.methods or not m.selectable):
                for row, extra in zip(rows, m.across(fits), strict=True):
                    row.update(extra)
        return rows

    def _scores(self, i: int) -> dict:
        s = self.structures[i]
        fits = self.candidate_fits(i)
        row = {"name": self.names[i], "kind": s.kind,
               "n_classes": s.n_classes if s.n_classes is not None else pd.NA,
               "n_parameters": s.n_parameters,
               "effective_dimension": self.effective_dimensions[i]}
        for need in registry.needs():
            if need.values is not None and fits.get(need.name) is not None:
                row.update(need.values(fits.get(need.name)))
        nan = float("nan")
        for m in registry.methods():
            if m.name not in self.methods and m.selectable:
                continue
            ready = all(fits.get(n) is not None for n in m.needs
                        if not (registry.need(n).too_large or registry.need(n).optional))
            row.update(m.values(fits) if ready else {c.name: nan for c in m.columns})
        return row

    @cached_property
    def _frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.rows)
        frame["n_classes"] = frame["n_classes"].astype("Int64")
        raised = [[(f.name, why) for f in self.active_flags
                   if (why := f.check(self, i)) is not None] for i in range(len(self.names))]
        frame["flags"] = [",".join(f for f, _ in row) for row in raised]
        frame["flag_notes"] = ["; ".join(f"{f}: {why}" for f, why in row) for row in raised]
        chosen = [choose_evidence(self.rows[i], [f for f, _ in raised[i]])
                  for i in range(len(self.names))]
        lz = np.asarray([c[0] for c in chosen], dtype=np.float64)
        errors = [c[2] for c in chosen]
        every = np.isfinite(lz).all()
        prob, low, high = posterior_probabilities(np.where(every, lz, np.nan), errors,
                                                  seed=self.seeds["posterior"])
        frame["log_evidence"] = lz
        frame["evidence_method"] = [c[1] for c in chosen]
        frame["log_evidence_stderr"] = errors
        frame["posterior_prob"], frame["posterior_low"], frame["posterior_high"] = prob, low, high
        frame["log_bayes_factor"] = lz - lz.max() if every else np.nan
        for m, column in self.ranked_columns.items():
            col = frame[column].astype(float)
            rank = col.rank(ascending=False, method="min").astype("Int64")
            frame[f"rank_{m}"] = rank if np.isfinite(col).all() else pd.NA  # all or none
        frame["seconds"] = [self._candidate_seconds(i) for i in range(len(self.names))]
        loglik = ["loglik"] if "loglik" in frame else []
        order = [*IDENTITY, *loglik, *self.score_columns, *EVIDENCE,
                 *(f"rank_{m}" for m in self.rank_methods), "flags", "flag_notes", "seconds"]
        return frame[order]

    def to_frame(self) -> pd.DataFrame:
        """One row per candidate (a copy; module docstring for the columns)."""
        return self._frame.copy()

    def _candidate_seconds(self, i: int) -> float:
        return float(sum(r.seconds for results in self.fits.values()
                         if (r := results[i]) is not None and hasattr(r, "seconds")))

    # ------------------------------------------------------------------ views
    @property
    def criterion(self) -> str | None:
        """The column :attr:`best` maximises (module docstring): ``"log_evidence"`` where every
        candidate has one, else the first requested method's ranked score that every
        candidate has; ``None`` if no column has a value for every candidate."""
        frame = self._frame
        columns = ["log_evidence", *(m.ranked for m in self._all_methods if m.ranked)]
        return next((c for c in columns if np.isfinite(frame[c].astype(float)).all()), None)

    @property
    def criterion_label(self) -> str:
        """The criterion as the reader knows it: ``"log evidence"``, ``"BIC"``, ...
        (``""`` without one)."""
        criterion = self.criterion
        if criterion is None:
            return ""
        if criterion == "log_evidence":
            return "log evidence"
        return next(c.heading for m in registry.methods() for c in m.columns
                    if c.name == criterion)

    @property
    def best(self) -> str | None:
        """Name of the candidate with the highest value of the :attr:`criterion` (``None`` if
        there is none)."""
        criterion = self.criterion
        if criterion is None or not len(self._frame):
            return None
        return str(self._frame.loc[self._frame[criterion].astype(float).idxmax(), "name"])

    def _largest_k(self, name: str) -> int | None:
        """The most classes among the latent class candidates on the columns of candidate
        ``name`` (``None`` unless it is one of two or more such candidates)."""
        s = self.structures[self.names.index(name)]
        if s.kind != "latent_class":
            return None
        ks = [t.n_classes for t in self.structures if t.n_classes is not None
              and set(t.observed_names) == set(s.observed_names)]
        return max(ks) if len(ks) >= 2 else None

    @property
    def best_is_largest(self) -> bool:
        """Whether :attr:`best` is the latent class candidate with the most classes (module
        docstring): more classes than compared may fit better."""
        best = self.best
        largest = None if best is None else self._largest_k(best)
        return largest is not None and \
            self.structures[self.names.index(best)].n_classes == largest

    def wider_classes(self) -> range | None:
        """A wider range of numbers of classes to compare when :attr:`best_is_largest`: from
        the fewest classes compared to three more than the most (``None`` otherwise)."""
        if not self.best_is_largest:
            return None
        ks = [s.n_classes for s in self.structures if s.n_classes is not None]
        return range(min(ks), max(ks) + 4)

    def notes(self) -> list[str]:
        """Notes for the reader (:func:`.notes.comparison_notes`); empty if none."""
        from .notes import comparison_notes
        return comparison_notes(self)

    def loo_best(self) -> str | None:
        """The candidate of highest ``elpd_loo`` (:func:`.notes.loo_best`)."""
        from .notes import loo_best
        return loo_best(self)

    def settings_block(self, *, data_name: str | None = None) -> dict[str, str]:
        """The settings block at the top of every report: the data (``data_name``, e.g. the
        file name), the candidates, the methods, the seeds and the versions of lcbayes, JAX
        and NumPyro, as text."""
        d, versions, exact = self.data, self.versions, self.settings.get("exact")
        rows = str(d.n_rows) + (f" ({d.n_observed_rows} with an observed value)"
                                if d.n_observed_rows != d.n_rows else "")
        methods = list(self.methods) + ([] if exact is False else [
            "exact" + (" (where small enough)" if exact == "auto" else "")])
        return {
            "data": data_name or "not named (give data_name)",
            "rows": rows,
            "columns": f"{d.n_columns}: {', '.join(d.columns)}",
            "distinct patterns": str(d.n_patterns),
            "candidates": ", ".join(self.names),
            "methods": ", ".join(methods),
            "seeds": ", ".join(f"{k} {fmt_setting(v)}" for k, v in self.seeds.items()),
            "versions": ", ".join(f"{k} {versions[k]}" for k in ("lcbayes", "jax", "numpyro")
                                  if k in versions),
        }

    def metadata(self) -> dict:
        """The run's record: data shape, methods, settings, seeds, seconds, versions, flag
        thresholds and why exact evidences are missing (:func:`.table_json.metadata`)."""
        return metadata(self)

    def summary_dict(self) -> dict:
        """``{"rows": [one JSON-ready object per candidate], "metadata": {...}}``: NaN and
        missing values are ``None``, ``flags`` a list of names (the command line prints it)."""
        return summary_dict(self)

    def to_dict(self) -> dict:
        """:meth:`summary_dict` with every engine result and the data (lossless, JSON-ready;
        :mod:`.table_json`); :meth:`from_dict` reads it back."""
        return comparison_to_dict(self)

    @classmethod
    def from_dict(cls, spec: dict) -> ComparisonResult:
        """The result of :meth:`to_dict`: the same engine results, table and reports."""
        return comparison_from_dict(cls, spec)

    # ------------------------------------------------------------------ reports
    # (imported on use: the reports need matplotlib, which the table itself does not)
    def summary(self, *, wide: bool = False) -> str:
        """A readable plain-text table with the flags explained underneath: the essential
        columns within 100 characters a line, or with ``wide=True`` every column
        (:func:`lcbayes.comparison.report.text_table`)."""
        from .report import text_table

        return text_table(self, wide=wide)

    @cached_property
    def _pngs(self) -> dict[str, bytes]:
        from .figures import figure_pngs

        return figure_pngs(self)

    def figure_pngs(self) -> dict[str, bytes]:
        """The report's figures as PNG bytes (rendered once, :mod:`.figures`)."""
        return dict(self._pngs)

    def to_html(self, path: str | Path, *, title: str | None = None,
                sections: dict | None = None, data_name: str | None = None) -> Path:
        """Write a self-contained HTML report (:func:`lcbayes.comparison.report.write_html`);
        ``data_name`` (e.g. the file name) is shown in its settings block."""
        from .report import write_html

        return write_html(self, path, title=title, sections=sections, data_name=data_name)

    def to_markdown(self, path: str | Path | None = None, *, title: str | None = None,
                    sections: dict | None = None, data_name: str | None = None) -> str:
        """Markdown report (:func:`lcbayes.comparison.report.markdown`); with ``path``, also
        written there with the figures as PNG files beside it."""
        from .report import markdown

        return markdown(self, path, title=title, sections=sections, data_name=data_name)

    def __repr__(self) -> str:
        return (f"ComparisonResult({plural(len(self.names), 'candidate')}: "
                f"{', '.join(self.names)}; methods={list(self.methods)}, best={self.best!r})")
