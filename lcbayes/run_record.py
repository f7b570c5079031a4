"""What every multi-restart engine run records, shared by the EM and VBEM result types."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .data import Dataset
from .errors import LcbayesError
from .structure import Structure

__all__ = ["RunRecord", "check_run_arguments", "record_fields"]


@dataclass(frozen=True, repr=False)
class RunRecord:
    """The fields common to :class:`~lcbayes.EMResult` and :class:`~lcbayes.VBResult`.

    Attributes:
        structure: the model fitted.
        n_iter, converged, history: the best restart's iterations, whether it met ``tol`` and
            its objective after every iteration (never decreasing).
        restart_n_iter, restart_converged: the same per restart.
        n_rows, n_observed_rows, n_patterns: rows, rows with an observed value, unique patterns.
        hidden_posteriors: ``{hidden node: (n_patterns, r_h)}`` posteriors per data pattern;
            ``pattern_index`` maps rows to patterns.
        seconds, seed, restarts, tol, max_iter: the run's settings and wall time.
    """

    structure: Structure
    n_iter: int
    converged: bool
    history: np.ndarray
    restart_n_iter: np.ndarray
    restart_converged: np.ndarray
    n_rows: int
    n_observed_rows: int
    n_patterns: int
    hidden_posteriors: dict[str, np.ndarray]
    pattern_index: np.ndarray
    seconds: float
    seed: int
    restarts: int
    tol: float
    max_iter: int

    @property
    def n_parameters(self) -> int:
        """Standard dimension ``sum_i q_i (r_i - 1)``."""
        return self.structure.n_parameters

    @property
    def n_classes(self) -> int | None:
        """Number of classes of a latent class model (``None`` for other kinds)."""
        return self.structure.n_classes

    @property
    def class_posteriors(self) -> np.ndarray | None:
        """``(n_rows, K)`` posterior class membership of every row (latent class models)."""
        if self.structure.kind != "latent_class":
            return None
        return self.hidden_posteriors[self.structure.nodes[self.structure.root]][
            self.pattern_index]

    def _run_dict(self) -> dict:
        """The JSON fields every result shares."""
        return {
            "kind": self.structure.kind,
            "n_rows": self.n_rows,
            "n_observed_rows": self.n_observed_rows,
            "n_patterns": self.n_patterns,
            "n_classes": self.n_classes,
            "n_parameters": self.n_parameters,
            "converged": self.converged,
            "n_iter": self.n_iter,
            "restarts": self.restarts,
            "seed": self.seed,
            "tol": self.tol,
            "max_iter": self.max_iter,
            "seconds": self.seconds,
            "structure": self.structure.to_dict(),
        }


def record_fields(structure: Structure, data: Dataset, runs, best: int, hidden_marginals,
                  started: float, seed: int, restarts: int, tol: float, max_iter: int) -> dict:
    """The :class:`RunRecord` fields of restart ``best`` of ``runs`` (NumPy arrays with
    ``n_iter``, ``converged`` and ``history`` per restart), with the wall time since
    ``started`` (a ``time.perf_counter()`` reading)."""
    n_iter = int(runs.n_iter[best])
    return {
        "structure": structure,
        "n_iter": n_iter,
        "converged": bool(runs.converged[best]),
        "history": runs.history[best][:n_iter],
        "restart_n_iter": runs.n_iter,
        "restart_converged": runs.converged,
        "n_rows": data.n_rows,
        "n_observed_rows": data.n_observed_rows,
        "n_patterns": data.n_patterns,
        "hidden_posteriors": {structure.nodes[h]: np.asarray(m) for h, m in
                              zip(structure.hidden_nodes, hidden_marginals, strict=True)},
        "pattern_index": data.pattern_index,
        "seconds": time.perf_counter() - started,
        "seed": int(seed),
        "restarts": int(restarts),
        "tol": float(tol),
        "max_iter": int(max_iter),
    }


def check_run_arguments(tol: float, acceleration: str, **counts: int | None) -> None:
    """Refuse a non-positive ``tol``, an unknown ``acceleration`` and any of ``counts``
    (``restarts=..., max_iter=...``; ``None`` means "not given") that is not an integer >= 1."""
    for name, value in counts.items():
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, int | np.integer) or value < 1):
            raise LcbayesError(f"{name} must be an integer >= 1, got {value!r}")
    if not (isinstance(tol, int | float) and not isinstance(tol, bool) and tol > 0):
        raise LcbayesError(f"tol must be a positive number, got {tol!r}")
    if acceleration not in ("squarem", "none"):
        raise LcbayesError(f"acceleration must be 'squarem' or 'none', got {acceleration!r}")
