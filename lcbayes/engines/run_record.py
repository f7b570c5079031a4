"""What every multi-restart fit records, shared by :class:`~lcbayes.EMResult` and
:class:`~lcbayes.VBResult`: the run's fields, their lossless JSON form, posterior membership of
new rows (``predict_proba``), the estimate printed and tabulated with classes numbered from 1,
and the boundary checks the two engines share."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd

from ..data import Dataset
from ..errors import ArgumentError, ConvergenceWarning
from ..inference import hidden_marginals
from ..params import config_labels, params_frame
from ..render import matrix_lines
from ..structure import Structure
from ..validation import check_int, check_seed, check_structure, data_for, seed_record

__all__ = ["EstimateRecord", "RunRecord", "arrays_from_json", "check_batching", "record_fields",
           "start_engine", "warn_unconverged"]


def start_engine(structure, seed) -> tuple[float, int | jax.Array]:
    """The clock reading at an engine's start and its checked ``structure`` and ``seed``."""
    check_structure(structure)
    return time.perf_counter(), check_seed(seed)


def check_batching(batch_size, restarts: int) -> int:
    """Restarts run side by side: ``batch_size`` (at most ``restarts``), by default all of them
    on a GPU/TPU and one at a time on a CPU."""
    if batch_size is None:
        batch_size = 1 if jax.default_backend() == "cpu" else restarts
    return min(check_int(batch_size, "batch_size", 1), restarts)


def arrays_from_json(spec: dict, dtype=np.float64) -> dict[str, np.ndarray]:
    """``{name: nested lists}`` back to arrays (``None`` becomes NaN)."""
    return {k: np.asarray(v, dtype=dtype) for k, v in spec.items()}


@dataclass(frozen=True, repr=False)
class EstimateRecord:
    """A fit's point estimate and what is read from it alone: the dimension, the class
    shares, the estimate printed (poLCA's layout) and tabulated with classes numbered from 1.
    Shared by the in-memory fits (:class:`RunRecord`) and the streamed ones
    (:class:`lcbayes.streaming.result.StreamRecord`).

    Attributes:
        structure: the model fitted.
    """

    structure: Structure

    @property
    def n_parameters(self) -> int:
        """Standard dimension ``sum_i q_i (r_i - 1)``."""
        return self.structure.n_parameters

    @property
    def n_classes(self) -> int | None:
        """Number of classes of a latent class model (``None`` for other kinds)."""
        return self.structure.n_classes

    @property
    def estimate(self) -> dict[str, np.ndarray]:
        """``{node: CPT}``, the point estimate that :meth:`estimate_lines`, :meth:`to_frame`
        and :attr:`class_weights` show (EM: the ML or MAP estimate; VB: the posterior mean)."""
        raise NotImplementedError

    @property
    def class_weights(self) -> np.ndarray | None:
        """Class shares of a latent class model (in :attr:`estimate`; EM orders classes by
        decreasing share), ``None`` for other kinds."""
        if self.structure.kind != "latent_class":
            return None
        return np.asarray(self.estimate[self.structure.nodes[self.structure.root]])

    def estimate_lines(self, qualifier: str = "", errors: dict | None = None) -> list[str]:
        """:attr:`estimate` as text, poLCA's layout: for a latent class model the class shares
        then every item's response probabilities by class (``class 1``, ``class 2``, ...), for
        other kinds every CPT; ``qualifier`` follows the headings (e.g. ``" (posterior
        means)"``); ``errors`` (``{node: CPT-shaped}``) are printed in brackets after every
        entry (standard errors)."""
        s = self.structure

        def err(i: int, rows: int):
            return None if errors is None else np.asarray(errors[s.nodes[i]]).reshape(rows, -1)

        lines = []
        if s.kind == "latent_class":
            assert s.n_classes is not None  # a latent class structure has a number of classes
            classes = [f"class {k + 1}" for k in range(s.n_classes)]
            lines += [f"Estimated class population shares{qualifier}",
                      *matrix_lines(["share"], classes, [self.class_weights],
                                    errors=err(s.root, 1)), "",
                      f"Conditional item response probabilities{qualifier}, by class"]
            order = s.observed_nodes
        else:
            lines.append(f"Conditional probability tables{qualifier}")
            order = s.topological_order
        for i in order:
            table = np.asarray(self.estimate[s.nodes[i]]).reshape(-1, s.cardinalities[i])
            lines.append(f"${s.nodes[i]}")
            lines += matrix_lines(config_labels(s, i), [str(lab) for lab in s.labels[i]],
                                  table, errors=err(i, table.shape[0]))
            lines.append("")
        return lines

    def _frame(self, values: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
        """CPT-shaped ``values`` as a long table (:func:`lcbayes.params.params_frame`); the
        class node of a latent class model has categories ``class 1``, ``class 2``, ..., the
        names its items' ``parents`` column uses."""
        frame = params_frame(self.structure, values)
        s = self.structure
        if s.kind == "latent_class":
            rows = frame["node"] == s.nodes[s.root]
            frame["category"] = frame["category"].astype(object)
            frame.loc[rows, "category"] = [f"class {k + 1}" for k in range(int(rows.sum()))]
        return frame


@dataclass(frozen=True, repr=False)
class RunRecord(EstimateRecord):
    """The fields common to :class:`~lcbayes.EMResult` and :class:`~lcbayes.VBResult`.

    Attributes:
        structure: the model fitted.
        n_iter, converged, history: the best restart's iterations, whether it met ``tol`` and
            its objective after every iteration (never decreasing).
        restart_n_iter, restart_converged: the same per restart.
        n_rows, n_observed_rows, n_patterns: rows, rows with an observed value, unique patterns.
        hidden_posteriors: ``{hidden node: (n_patterns, r_h)}`` posteriors per data pattern;
            ``pattern_index`` maps rows to patterns.
        seconds, seed, restarts, tol, max_iter: the run's settings and wall time (``seed`` is
            the integer given, or the words of the ``jax.random`` key).
    """

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
    seed: int | tuple[int, ...]
    restarts: int
    tol: float
    max_iter: int

    @property
    def class_posteriors(self) -> np.ndarray | None:
        """``(n_rows, K)`` posterior class membership of every row (latent class models)."""
        if self.structure.kind != "latent_class":
            return None
        return self.hidden_posteriors[self.structure.nodes[self.structure.root]][
            self.pattern_index]

    # ------------------------------------------------------------------ new rows
    def _log_tables(self) -> tuple[np.ndarray, ...]:
        """Per node, the ``(q_i, r_i)`` log tables that classify rows."""
        raise NotImplementedError

    def _hidden_node(self, node: str | None) -> str:
        s = self.structure
        hidden = [s.nodes[h] for h in s.hidden_nodes]
        if node is None:
            if s.kind in ("latent_class", "hlc"):
                return s.nodes[s.root]
            if len(hidden) == 1:
                return hidden[0]
            raise ArgumentError(f"node must name a hidden node of this structure: one of "
                                f"{hidden}")
        if node not in hidden:
            raise ArgumentError(f"node must name a hidden node of this structure: one of "
                                f"{hidden}, got {node!r}")
        return node

    def predict_proba(self, data, *, node: str | None = None) -> np.ndarray:
        """``(n_rows, r)`` posterior probabilities of the states of hidden ``node`` (default:
        the class of a latent class model, the root of an HLC tree, the only hidden node of a
        DAG) for every row of ``data`` (a Dataset, a DataFrame with the model's columns, or an
        array of their codes). Missing values are summed out; a row with nothing observed gets
        the prior shares."""
        name = self._hidden_node(node)
        data = data_for(self.structure, data)
        return hidden_marginals(self.structure, self._log_tables(), data)[name]

    def predict(self, data, *, node: str | None = None) -> np.ndarray:
        """``(n_rows,)`` the most probable state (index into :meth:`predict_proba`'s columns;
        classes are numbered from 0 here) of hidden ``node`` for every row of ``data``."""
        return np.argmax(self.predict_proba(data, node=node), axis=1)

    # ------------------------------------------------------------------ JSON
    def _run_dict(self) -> dict:
        """The JSON fields every result shares (read back by its field annotations,
        :func:`lcbayes.render.record_from_dict`)."""
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
            "history": self.history,
            "restart_n_iter": self.restart_n_iter,
            "restart_converged": self.restart_converged,
            "hidden_posteriors": self.hidden_posteriors,
            "pattern_index": self.pattern_index,
        }

def warn_unconverged(result: RunRecord, engine: str) -> None:
    """A :class:`~lcbayes.ConvergenceWarning` when the best restart of ``result`` stopped at
    ``max_iter`` before its convergence test held."""
    if not result.converged:
        warnings.warn(ConvergenceWarning(
            f"{engine} stopped at max_iter={result.max_iter} before converging (the best of "
            f"{result.restarts} restarts; tol={result.tol:g} per row): its estimates may still "
            "move; raise max_iter or loosen tol"), stacklevel=3)


def record_fields(structure: Structure, data: Dataset, runs, best: int, hidden_marginals,
                  started: float, seed, restarts: int, tol: float, max_iter: int) -> dict:
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
        "seed": seed_record(seed),
        "restarts": int(restarts),
        "tol": float(tol),
        "max_iter": int(max_iter),
    }
