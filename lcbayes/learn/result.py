"""The result of a structure search: the best model, its score and the path of moves.

Example::

    res = lcb.learn_classes(data, score="bic", seed=0)
    res.structure, res.params        # the best model (res.fit: its lcb.em fit)
    res.to_frame()                   # one row per move tried: score, loglik, |H|, time
    lcb.compare(data, candidates=[res.structure, lcb.latent_class(data, 2)])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import pandas as pd

from ..engines.em_result import EMResult
from ..render import json_value, plural, record_from_dict
from ..structure import Structure
from .tree_drawing import tree_text

__all__ = ["LearnResult", "Move"]


class Move(NamedTuple):
    """One move of a search: the candidate it produced and whether it was accepted.

    Attributes:
        step: position in the path (0: the starting model).
        operation: ``"start"``, ``"split"``, ``"merge"``, ``"adjust"`` or ``"restarts"``;
            the tree search's ``"add_node"``, ``"remove_node"``, ``"relocate"``,
            ``"add_state"``, ``"remove_state"`` and ``"latent_class"``
            (:mod:`.tree_search`).
        hidden_states: the candidate's number of classes ``|H|`` (HLC: its total number of
            hidden states).
        hidden: its hidden cardinalities as text (``"3"``; HLC: ``"H:2 H1:3 H2:1"``; the
            tree search: the tree, ``"H0:2(H1:2(A,B,C),D,E)"``).
        loglik: its log-likelihood after the move's multiple-restart EM.
        score: its score.
        accepted: whether it became the current model.
        seconds: time since the search started.
    """

    step: int
    operation: str
    hidden_states: int
    hidden: str
    loglik: float
    score: float
    accepted: bool
    seconds: float


@dataclass(frozen=True, repr=False)
class LearnResult:
    """The best model a search found (:func:`lcbayes.learn_classes`, :func:`lcbayes.learn_hlc`,
    :func:`lcbayes.learn_tree`).

    Attributes:
        fit: the best model's EM fit (:func:`lcbayes.em` from the search's parameters), with
            every score of :class:`~lcbayes.EMResult`.
        score_name: the score searched on (``"bic"``, ...).
        score: the best model's score at ``fit``.
        method: the search (``"splitmerge"``, ...).
        path: every move tried, in order (:class:`Move`).
        stopped: ``"converged"`` (no move improved the score) or ``"time_limit"``.
        seed, seconds: the seed and the search's wall time.
        settings: the search's constants (splits, perturbation, q, starts, delta, EM
            tolerance, ...).
    """

    fit: EMResult
    score_name: str
    score: float
    method: str
    path: tuple[Move, ...]
    stopped: str
    seed: int | tuple[int, ...]
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def structure(self) -> Structure:
        """The best model's structure."""
        return self.fit.structure

    @property
    def params(self) -> dict:
        """The best model's parameters ``{node: CPT}``."""
        return self.fit.params

    @property
    def n_classes(self) -> int:
        """``|H|`` of the best model (HLC: the root's number of states)."""
        return self.fit.structure.cardinalities[self.fit.structure.root]

    @property
    def cardinalities(self) -> dict[str, int]:
        """``{hidden node: states}`` of the best model."""
        s = self.fit.structure
        return {s.nodes[h]: s.cardinalities[h] for h in s.hidden_nodes}

    def to_frame(self) -> pd.DataFrame:
        """The path: one row per move (:class:`Move`'s fields as columns)."""
        return pd.DataFrame([m._asdict() for m in self.path], columns=list(Move._fields))

    def to_dict(self) -> dict:
        """JSON-ready: ``best`` (the fit's :meth:`~lcbayes.EMResult.to_dict`: structure,
        parameters and scores, the form of ``lcbayes fit --json``, plus ``score``), the
        ``path`` of moves and the search's settings."""
        return json_value({
            "method": self.method, "score_name": self.score_name, "score": self.score,
            "n_classes": self.n_classes, "cardinalities": self.cardinalities,
            "stopped": self.stopped, "seed": self.seed,
            "seconds": self.seconds, "settings": self.settings,
            "best": {**self.fit.to_dict(), "score": self.score},
            "path": [m._asdict() for m in self.path],
        })

    @classmethod
    def from_dict(cls, spec: dict) -> LearnResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip): the same fit, path
        and settings."""
        best = {k: v for k, v in spec["best"].items() if k != "score"}
        return record_from_dict(cls, spec, fit=EMResult.from_dict(best))

    def summary(self) -> str:
        """A short printout: the best model, how the search got there."""
        accepted = [m for m in self.path if m.accepted]
        route = " -> ".join(m.hidden for m in accepted)
        if len(route) > 200:  # a tree search's trees: the first and the last
            route = f"{accepted[0].hidden} -> ... -> {accepted[-1].hidden}"
        if self.structure.kind == "latent_class":
            best = plural(self.n_classes, "class", "classes")
        else:
            best = "hidden cardinalities " + ", ".join(f"{h} = {c}" for h, c in
                                                       self.cardinalities.items())
        tree = [] if self.structure.kind != "hlc" else ["", tree_text(self.structure)]
        lines = [
            f"Structure search ({self.method}, score {self.score_name}): best model has "
            f"{best}, {self.score_name} = {self.score:.2f}, log-likelihood "
            f"{self.fit.loglik:.2f}",
            f"  {plural(len(self.path), 'move')} tried, {len(accepted)} accepted "
            f"({route}); {self.seconds:.1f} s, stopped: "
            + ("no move improved the score" if self.stopped == "converged"
               else "time limit reached"),
            *tree,
        ]
        return "\n".join(lines)

    def to_html(self, path, *, data_name: str | None = None):
        """Write the HTML report (:func:`lcbayes.learn.report.write_html`): the path of moves,
        the score against time and the chosen model's class profiles."""
        from .report import write_html

        return write_html(self, path, data_name=data_name)

    def __repr__(self) -> str:
        return (f"LearnResult(method={self.method!r}, score_name={self.score_name!r}, "
                f"n_classes={self.n_classes}, score={self.score:.4f}, "
                f"moves={len(self.path)}, stopped={self.stopped!r})")
