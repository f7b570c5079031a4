"""The data-informed reference of :mod:`lcbayes.samplers.tempered_smc`: product references
built from the optima of variational Bayes and maximum-likelihood EM.

**Distinct optima.** EM from random starts (:func:`lcbayes.engines.em_loop.em_restarts`) stops at
the posterior's modes, each in one of ``K!`` labellings, and often at several points of one
basin a fraction of the posterior's spread apart (and VB's posterior means sit beside EM's
maximum). Two optima are the same mode when they are less than :data:`SAME_MODE_SDS`
posterior standard deviations apart (:func:`matched_gap`): every difference of a class weight
or item probability is scaled by its spread on ``N`` rows at the pair's mean,

    sd(w)^2 = (w (1 - w) + 1 / N) / N,    sd(theta)^2 = (theta (1 - theta) + 1 / n) / n,
    n = N w + 1

(a proportion's binomial spread; a nearly empty class's tables are as loose as its prior's);
the root mean square of a class's scaled differences (its weight and every item probability)
is its distance; the classes of one optimum are matched to the other's (the Hungarian method,
Kuhn 1955, on the squared distances), and the largest matched distance is the optima's. A
class's mean rather than its largest difference: among the hundreds of probabilities of a
survey model one near the boundary can differ by three standard deviations within one basin,
while a different mode moves a whole class. :func:`distinct_optima` keeps the best of each
mode, highest log-likelihood first. Points of one basin must be one component: the final
correction of :mod:`lcbayes.samplers.tempered_smc` divides a particle's share between the
components that cover it, and between two near copies of one mode that share is a noisy ratio
of two densities over every row, which makes the estimate low and the path longer
(``reports/evidence-at-scale.md``).

**Which optima.** At an over-fitted ``K`` EM's maximum-likelihood optima fill every class (a
class split in two), while the posterior puts its mass where the superfluous classes are nearly
empty; variational Bayes with the Dirichlet prior empties them (Beal & Ghahramani 2006 §6). So
:func:`reference_optima` puts the VB optima (their posterior means) first, then the distinct
EM optima. Every distinct VB optimum whose bound is within :data:`VB_WINDOW` nats of the best
is kept, not the best alone: a mode's bound ``F`` is its log mass less the KL divergence of its
variational posterior from the posterior there, and that divergence differs from mode to mode
by several nats once ``K`` is large, so the mode with the best bound need not be the one with
the most mass. A reference without the heaviest mode comes out low by the difference, with a
spread that does not show it among runs that all miss it.

**How many restarts.** The posterior's modes multiply with ``K`` and each restart lands in
one of them, so a fixed number of restarts misses a heavy mode more often as ``K`` grows, and a
run that misses it comes out low by its share. :func:`default_restarts` scales the restarts
with ``K`` (:data:`RESTARTS_PER_CLASS` per class); each restart is one lane of one jitted
call, so they cost little beside the tempering.

**One component per optimum** (``shared/notes/evidence-reference-tempering.md``): with ``r_p``
the class probabilities of pattern ``p`` at the optimum and ``N_k``, ``N_kjr`` the expected
counts there,

    q_p(k) = (1 - eps) r_p(k) + eps / K,                          (tails for every row)
    g(theta) = Dir(pi | delta + t N_k) prod_jk Dir(theta_jk | lambda_jk + t N_kjr),

``eps`` = :func:`smoothing_for` ``N`` (:data:`SMOOTHING`, but no more than
:data:`SMOOTHED_ROWS` rows' worth in all: at ``beta = 0`` about ``eps N`` rows sit in a random
class, a mismatch the path must anneal away and which grows with ``N``) and ``t`` =
:func:`tail_for` ``N``: ``g`` is the complete-data posterior at the expected counts widened by
``1 / t`` (``t = 1``: the optimum's variational posterior, whose tails are too light for small
data). ``t`` is :data:`TAIL`, and smaller below :data:`TAIL_ROWS` rows (``TAIL N /
TAIL_ROWS``): there a class holds a few rows, its posterior is far from a Dirichlet at its
expected counts, and a reference with lighter tails than the posterior leaves part of it where
the particles hardly reach (the estimate comes out low with an error bar too small to show
it; ``reports/evidence-at-scale.md``, coverage). Both parts are normalised, so each
component's normaliser is one. Components are weighted equally.

Example::

    optima = reference_optima(structure, data, restarts=10, seed=0, prior="dirichlet")
    reference = product_reference(tempered, prior, optima[:4], k)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..data import Dataset
from ..engines.em_core import EMRuns
from ..engines.em_loop import em_restarts
from ..engines.vbem import VBRuns, vbem_restarts
from ..jax_setup import on_device
from ..params import PriorSpec
from ..structure import Structure
from .gibbs import LCPrior, class_log_lik
from .reference_density import Reference
from .tempered_smc import TemperedData

__all__ = [
    "MIN_RESTARTS",
    "RESTARTS_PER_CLASS",
    "SAME_MODE_SDS",
    "SMOOTHED_ROWS",
    "SMOOTHING",
    "TAIL",
    "TAIL_ROWS",
    "VB_WINDOW",
    "Optimum",
    "default_restarts",
    "distinct_optima",
    "log_responsibilities",
    "matched_gap",
    "padded_count",
    "product_reference",
    "reference_optima",
    "smoothing_for",
    "tail_for",
    "variational_optima",
]

#: Largest difference of any matched weight or probability, in posterior standard deviations,
#: for two optima to be one mode (module docstring).
SAME_MODE_SDS = 2.5
#: VB optima whose bound ``F`` lies more than this many nats below the best are left out of the
#: reference (module docstring).
VB_WINDOW = 10.0
#: VB and EM restarts of a reference's fits per class (:func:`default_restarts`) ...
RESTARTS_PER_CLASS = 5
#: ... and at least this many.
MIN_RESTARTS = 10
#: ``eps`` of the module docstring, at most: every row keeps this much probability spread over
#: the classes.
SMOOTHING = 0.01
#: ... and at most this many rows' worth in all (:func:`smoothing_for`).
SMOOTHED_ROWS = 20.0
#: ``t`` of the module docstring (``g``'s counts scaled by it).
TAIL = 0.5
#: ... from this many rows on; fewer rows get a proportionally smaller ``t`` (:func:`tail_for`).
TAIL_ROWS = 100


class Optimum(NamedTuple):
    """One EM optimum: its log-likelihood, class weights ``(K,)`` and item tables ``(K, r_j)``."""

    loglik: float
    weights: np.ndarray
    tables: tuple[np.ndarray, ...]


def default_restarts(k: int) -> int:
    """VB and EM restarts of one reference's fits at ``k`` classes: :data:`RESTARTS_PER_CLASS`
    per class, at least :data:`MIN_RESTARTS` (module docstring, "How many restarts")."""
    return max(MIN_RESTARTS, RESTARTS_PER_CLASS * int(k))


def matched_gap(a: Optimum, b: Optimum, rows: int) -> float:
    """How far ``a`` and ``b`` are apart in posterior standard deviations on ``rows`` rows
    (module docstring): after ``b``'s classes are matched to ``a``'s, the largest over matched
    classes of the root mean square of their scaled differences."""
    from scipy.optimize import linear_sum_assignment  # loaded here: the CLI loads no optimiser
    n_rows = float(max(rows, 1))
    w = (a.weights[:, None] + b.weights[None, :]) / 2
    squares = (a.weights[:, None] - b.weights[None, :]) ** 2 / (
        (w * (1 - w) + 1 / n_rows) / n_rows)
    terms = 1
    n = (n_rows * w + 1)[..., None]
    for ta, tb in zip(a.tables, b.tables, strict=True):
        theta = (ta[:, None, :] + tb[None, :, :]) / 2
        squares = squares + ((ta[:, None, :] - tb[None, :, :]) ** 2 / (
            (theta * (1 - theta) + 1 / n) / n)).sum(-1)
        terms += ta.shape[1]
    mean_squares = squares / terms
    matched_rows, cols = linear_sum_assignment(mean_squares)
    return float(np.sqrt(mean_squares[matched_rows, cols].max()))


def distinct_optima(runs: EMRuns, rows: int) -> list[Optimum]:
    """The distinct optima among EM restarts on ``rows`` rows (module docstring), highest
    log-likelihood first; restarts that did not finish (NaN) are left out."""
    return _distinct([Optimum(float(runs.loglik[r]), np.asarray(runs.tables[0][r][0]),
                              tuple(np.asarray(t[r]) for t in runs.tables[1:]))
                      for r in range(len(runs.loglik))], rows)


def variational_optima(runs: VBRuns, rows: int, window: float = VB_WINDOW) -> list[Optimum]:
    """The distinct optima among VB restarts on ``rows`` rows as :class:`Optimum` (their
    posterior means; ``loglik`` holds the bound ``F``), highest ``F`` first, those more than
    ``window`` nats below the best left out (module docstring)."""
    means = [np.asarray(a) / np.asarray(a).sum(-1, keepdims=True) for a in runs.alphas]
    found = _distinct([Optimum(float(runs.elbo[r]), means[0][r].ravel(),
                               tuple(m[r] for m in means[1:]))
                       for r in range(len(runs.elbo))], rows)
    return [o for o in found if o.loglik >= found[0].loglik - window]


def _distinct(candidates: list[Optimum], rows: int) -> list[Optimum]:
    """The best of each mode among ``candidates`` (:func:`matched_gap`), highest ``loglik``
    first; those whose ``loglik`` is not finite are left out."""
    order = np.argsort(-np.nan_to_num(np.array([c.loglik for c in candidates]),
                                      nan=-np.inf), kind="stable")
    kept: list[Optimum] = []
    for r in order:
        candidate = candidates[r]
        if not np.isfinite(candidate.loglik):
            continue
        if all(matched_gap(o, candidate, rows) > SAME_MODE_SDS for o in kept):
            kept.append(candidate)
    return kept


def log_responsibilities(one_hot, categories, optimum: Optimum, k: int, slots: int
                         ) -> np.ndarray:
    """``(P, S)`` ``ln r_p(k)``: the class probabilities of every pattern of one-hot codes
    ``one_hot (P, J, R)`` at ``optimum`` on ``slots`` class slots, the first ``k`` active
    (``-inf`` on the others)."""
    categories = np.asarray(categories)
    log_theta = np.zeros((slots, *categories.shape))
    for j, table in enumerate(optimum.tables):
        log_theta[:k, j, :table.shape[1]] = np.log(np.maximum(table, 1e-300))
    log_w = np.full(slots, -np.inf)
    log_w[:k] = np.log(np.maximum(optimum.weights, 1e-300))
    logits = log_w[None, :] + np.asarray(class_log_lik(on_device(one_hot),
                                                       on_device(categories),
                                                       on_device(log_theta)))
    return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)


def _component(data: TemperedData, prior: LCPrior, optimum: Optimum, k: int, smoothing: float,
               tail: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ln q (P, S), weight shapes (S,), table shapes (S, J, R))`` of one optimum."""
    slots = prior.delta.shape[0]
    categories = np.asarray(data.categories)
    r = np.exp(log_responsibilities(data.one_hot, categories, optimum, k, slots))
    active = np.arange(slots) < k
    q = np.where(active, (1.0 - smoothing) * r + smoothing / k, 0.0)
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    weighted = r * np.asarray(data.counts)[:, None]
    n_k = weighted.sum(0)
    n_kjr = np.einsum("pk,pjr->kjr", weighted, np.asarray(data.one_hot))
    weight_shapes = np.where(active, np.asarray(prior.delta) + tail * n_k, 1.0)
    table_shapes = np.where(categories[None] & active[:, None, None],
                            np.asarray(prior.lam) + tail * n_kjr, 1.0)
    return log_q, weight_shapes, table_shapes


def smoothing_for(rows: int) -> float:
    """``eps`` for ``rows`` rows: :data:`SMOOTHING`, or :data:`SMOOTHED_ROWS` ``/ rows`` if
    smaller (module docstring)."""
    return min(SMOOTHING, SMOOTHED_ROWS / max(rows, 1))


def tail_for(rows: int) -> float:
    """``t`` for ``rows`` rows: :data:`TAIL`, scaled by ``rows /`` :data:`TAIL_ROWS` below
    that many rows (module docstring)."""
    return TAIL * min(1.0, max(rows, 1) / TAIL_ROWS)


def padded_count(n: int) -> int:
    """``n`` components or modes rounded up to a power of two (a few shapes, so a few
    compiled programs)."""
    return 1 << max(n - 1, 0).bit_length()


def product_reference(data: TemperedData, prior: LCPrior, optima: list[Optimum], k: int, *,
                      smoothing: float = SMOOTHING, tail: float = TAIL,
                      size: int | None = None) -> Reference:
    """The equally weighted mixture of the product references of ``optima`` (module docstring)
    on the prior's class slots, the first ``k`` active, padded with copies of weight zero to
    ``size`` components (default :func:`padded_count`)."""
    parts = [_component(data, prior, o, k, smoothing, tail) for o in optima]
    m = len(optima)
    parts += [parts[0]] * (max(size or padded_count(m), m) - m)
    log_q, weight_shapes, table_shapes = (np.stack(p) for p in zip(*parts, strict=True))
    log_omega = np.full(len(parts), -np.inf)
    log_omega[:m] = -np.log(m)
    return Reference(on_device(log_q), on_device(weight_shapes), on_device(table_shapes),
                     on_device(log_omega))



def reference_optima(structure: Structure, data: Dataset, *, restarts: int, seed, prior: PriorSpec
                     ) -> list[Optimum]:
    """The optima of one run's reference (module docstring): the distinct optima of
    ``restarts`` VB fits (``prior``) within :data:`VB_WINDOW` of the best bound, highest bound
    first, then the distinct optima of ``restarts`` EM restarts that duplicate none of them,
    highest log-likelihood first."""
    rows = data.n_observed_rows
    variational = variational_optima(
        vbem_restarts(structure, data, restarts=restarts, seed=seed, prior=prior), rows)
    others = distinct_optima(em_restarts(structure, data, restarts=restarts, seed=seed), rows)
    return [*variational, *(o for o in others
                            if all(matched_gap(v, o, rows) > SAME_MODE_SDS
                                   for v in variational))]
