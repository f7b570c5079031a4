"""The algorithms by name, their settings and the jitted core that runs one over many restarts
(the restart scheme they share with EM is :mod:`lcbayes.engines.em_core`).

``"em"`` and ``"squarem"`` run through :func:`lcbayes.engines.em_loop.run_em` (SQUAREM's own loop,
shared with VBEM); every other algorithm is a :class:`.state.Kernel` run by
:func:`run_algorithm`, which returns the same :class:`~lcbayes.engines.em_core.EMRuns`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ArgumentError
from ...inference import flat, log_marginal, prepare
from ...structure import Structure
from ...validation import check_choice, check_int, check_positive
from ..em_core import EMRuns
from ..squarem import map_restarts
from . import annealed, approximate, conjugate, helmbold, incremental
from .problem import Problem
from .state import Kernel, iterate

__all__ = ["ALGORITHMS", "DEFAULT_ETA", "HELD_ALGORITHMS", "IEM_BLOCKS", "MAP_ALGORITHMS",
           "Settings", "algorithm_settings", "kernel", "run_algorithm"]

#: Every algorithm of :func:`lcbayes.em` (``algorithm=``), the default first.
ALGORITHMS = ("squarem", "em", "iem", "cg", "gcg", "em_eta", "eg", "gp", "acg_phi",
              "acg_theta", "acg_theta_chi", "daem")

#: The algorithms defined for a MAP objective (a prior).
MAP_ALGORITHMS = ("squarem", "em", "iem", "daem", "cg", "gcg")

#: The algorithms that hold parts of table rows (class padding, ``pad_classes=``).
HELD_ALGORITHMS = ("squarem", "em", "iem", "daem")

#: Default (starting) learning rates ``eta`` (per-observation scale, §2.6-2.7): EM_eta's 1 is
#: EM on the proportion vector. Whiley tuned his by hand per run (Tables 2.1-2.2); by default
#: the rate adapts from these (:func:`.state.learning_step`), a given ``eta`` stays fixed.
DEFAULT_ETA = {"em_eta": 1.0, "eg": 1.0, "gp": 0.01, "acg_phi": 1.0, "acg_theta": 0.03,
               "acg_theta_chi": 1.0}


#: IEM's default number of blocks (at most one per data pattern).
IEM_BLOCKS = 100


class Settings(NamedTuple):
    """An algorithm and its own settings, checked (:func:`algorithm_settings`)."""

    algorithm: str
    eta: float | None
    betas: np.ndarray | None
    blocks: int
    adaptive: bool = False


def _betas(betas) -> np.ndarray:
    """DAEM's schedule: ``None`` (the default geometric one), a number ``beta_min`` (geometric
    from it to 1) or increasing inverse temperatures in ``(0, 1]`` ending at 1."""
    if betas is None:
        return annealed.schedule()
    if isinstance(betas, int | float) and not isinstance(betas, bool):
        if not 0 < betas <= 1:
            raise ArgumentError(f"betas as a number is the smallest inverse temperature, in "
                                f"(0, 1]; got {betas!r}")
        return annealed.schedule(float(betas))
    values = np.asarray(betas, dtype=np.float64) if isinstance(betas, Sequence | np.ndarray) \
        else np.full(0, np.nan)
    if (values.ndim != 1 or values.size == 0 or not np.all((values > 0) & (values <= 1))
            or np.any(np.diff(values) < 0) or values[-1] != 1.0):
        raise ArgumentError(f"betas must be a number in (0, 1] or increasing inverse "
                            f"temperatures in (0, 1] ending at 1, got {betas!r}")
    return values


def algorithm_settings(algorithm: str, *, prior: bool, padded: bool, eta, betas, blocks,
                       n_patterns: int) -> Settings:
    """The boundary checks of :func:`lcbayes.em`'s ``algorithm`` and its settings: ``eta``,
    ``betas`` and ``blocks`` belong to the algorithms that use them."""
    algorithm = check_choice(algorithm, "algorithm", ALGORITHMS)
    if prior and algorithm not in MAP_ALGORITHMS:
        raise ArgumentError(f"algorithm={algorithm!r} is defined for maximum likelihood only; "
                            f"leave prior=None or choose algorithm from "
                            f"{', '.join(MAP_ALGORITHMS)}")
    if padded and algorithm not in HELD_ALGORITHMS:
        raise ArgumentError(f"algorithm={algorithm!r} needs whole table rows free and cannot "
                            f"run with pad_classes; leave pad_classes=None or choose algorithm "
                            f"from {', '.join(HELD_ALGORITHMS)}")
    for name, value, users in (("eta", eta, tuple(DEFAULT_ETA)), ("betas", betas, ("daem",)),
                               ("blocks", blocks, ("iem",))):
        if value is not None and algorithm not in users:
            raise ArgumentError(f"{name} applies to algorithm {' or '.join(users)}, not "
                                f"{algorithm!r}; leave it None")
    adaptive = algorithm in DEFAULT_ETA and eta is None
    if algorithm in DEFAULT_ETA:
        eta = DEFAULT_ETA[algorithm] if eta is None else check_positive(eta, "eta")
    blocks = (min(n_patterns, IEM_BLOCKS) if blocks is None
              else check_int(blocks, "blocks", 1, n_patterns))
    return Settings(algorithm, eta, _betas(betas) if algorithm == "daem" else None, blocks,
                    adaptive)


def kernel(problem: Problem, algorithm: str, tol_total, max_iter: int, eta=None, betas=None,
           blocks: int = 1, adaptive: bool = False) -> Kernel:
    """The kernel of ``algorithm`` (not ``"em"``/``"squarem"``) on ``problem`` (``adaptive``:
    the gradient methods' learning rate adapts from ``eta``)."""
    if algorithm == "iem":
        return incremental.build(problem, blocks, tol_total, max_iter)
    if algorithm == "daem":
        return annealed.build(problem, betas, tol_total, max_iter)
    if algorithm in ("cg", "gcg"):
        return conjugate.build(problem, algorithm, tol_total, max_iter)
    if algorithm in helmbold.RULES:
        return helmbold.build(problem, algorithm, eta, tol_total, max_iter, adaptive)
    return approximate.build(problem, algorithm, eta, tol_total, max_iter, adaptive)


@partial(jax.jit, static_argnames=("structure", "algorithm", "max_iter", "shift", "batch_size",
                                   "blocks", "complete", "adaptive"))
def run_algorithm(structure: Structure, patterns, weights, alphas, tol_total, starts, limit,
                  max_iter: int, shift: float, batch_size: int, algorithm: str, eta=1.0,
                  betas=None, blocks: int = 1, complete: tuple[int, ...] = (),
                  held=None, adaptive: bool = False) -> EMRuns:
    """The jitted core of every algorithm but EM and SQUAREM: ``algorithm`` from every start in
    ``starts`` (a batch of tables) for at most ``limit`` iterations, ``batch_size`` restarts
    vmapped at a time (the arguments as for :func:`lcbayes.engines.em_loop.run_em`; ``eta``, the
    DAEM ``betas`` and the IEM ``blocks`` as for :func:`lcbayes.em`; ``adaptive``: the
    learning rate adapts from ``eta``)."""
    problem = Problem(structure, patterns, weights, alphas, shift, held, complete,
                      vmapped=batch_size > 1)
    step = kernel(problem, algorithm, tol_total, max_iter, eta,
                  jnp.ones(1) if betas is None else betas, blocks, adaptive)
    shapes = structure.table_shapes
    evidence = prepare(structure, patterns)

    def run(tables):
        end = iterate(step, flat.flatten(tables), limit)
        tables = flat.unflatten(end.x, shapes)
        loglik = weights @ log_marginal(structure, tuple(jnp.log(t) for t in tables), evidence)
        return EMRuns(tables, end.history, end.it, end.done, loglik,
                      loglik + problem.prior_term(end.x))

    return map_restarts(run, starts, batch_size)
