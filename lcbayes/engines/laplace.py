"""The Laplace approximation of the log evidence in MacKay's softmax basis (Whiley 1999 §4.3).

With ``g(phi) = ln p(y | phi) + ln p(phi)``, its maximum ``phi~`` and ``A = -d^2 g(phi~)``
(Whiley eq. 4.5)::

    ln p(y | m) ~ g(phi~) + d/2 ln 2 pi - 1/2 ln |A|  (+ ln S, the aliases)

**Basis** (Whiley §4.3.1 after MacKay 1998; digest §1.3). Every CPT row ``theta_l`` (the class
weights of a latent class model included) is ``softmax(0, phi_l)``: ``phi_lk = ln(theta_lk /
theta_l1)`` for ``k = 2..r``, reference category 1 (the free basis of
:mod:`lcbayes.information`). A ``Dirichlet(alpha_l)`` prior on ``theta_l`` has, in this basis,
the density ``Gamma(sum alpha) / prod Gamma(alpha_k) * prod_k theta_lk^alpha_k`` (exponent
``alpha``, not ``alpha - 1``: the Jacobian of the softmax map is ``prod_k theta_lk``; the
normaliser is ``Gamma(sum alpha) / prod Gamma(alpha)``, not App. C.12's ``Gamma(c(alpha + 1)) /
Gamma(alpha + 1)^c``, a typo). Its maximum is EM's softmax-basis MAP estimate
(``lcb.em(prior=alpha, map_basis="softmax")``, the add-``alpha`` M step); ``alpha = 1`` (the
default) is Whiley's softmax-basis prior, uniform in ``theta``, so the approximation targets the
evidence that :func:`lcbayes.exact_evidence` and :func:`lcbayes.ais` compute.

**Hessian.** ``A`` is the observed information of the likelihood in this basis
(:func:`lcbayes.information.information` with ``method="observed"``: ``jax.hessian`` of the
exact inference core's log-likelihood, any structure kind) plus the prior's, which per CPT row
is ``(sum_k alpha_lk) (diag(theta) - theta theta^T)`` over categories ``2..r`` (the cross term
``+c alpha p_j p_k`` that App. C.18 omits is there).

**Variants** (Whiley §4.8 "Block" and "Diagonal", after Chickering & Heckerman 1997, who ignore
some or all off-diagonal entries of ``A``): ``"full"``; ``"block"``: ``A`` restricted to one
block per *node* (every row of the node's CPT together; entries between nodes dropped), so for a
latent class model the class weights form one block and each item's tables (one row per class)
another; ``"diagonal"``: ``ln |A| ~ sum_i ln A_ii``. With one block per CPT row instead, binary
items would make "block" the same as "diagonal" except for the class weights.

**Aliases** (Whiley §4.8.5, :mod:`lcbayes.alias`): ``alias=True`` adds ``ln S`` (``ln r_z!``
for a latent class model). When a latent class fit has classes with the same item tables (to
``DUPLICATE_TOL``; Whiley's Table 4.1, degenerate duplicates), the ``r_z!`` modes are only
``r_z! / prod m_g!`` distinct ones (``m_g`` the sizes of the groups of identical classes), and
that is what is added.

**Not positive definite.** At a saddle point (EM stuck at duplicated components that hide
structure) or an unconverged fit, ``A`` has an eigenvalue ``<= 0`` and the Gaussian integral
does not exist: :class:`LaplaceWarning` is emitted and ``log_evidence`` is NaN (so a comparison
never picks the model on this score); ``log_det`` then is the log of ``|det A|`` and the
eigenvalue range says how far from definite ``A`` is.

Example::

    res = lcb.laplace(lcb.latent_class(data, 3), data, restarts=20, seed=0)
    res.log_evidence, res.summary()
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..alias import log_alias
from ..errors import ArgumentError
from ..information import information
from ..params import PriorSpec, dirichlet_log_density, prior_tables, to_tables
from ..render import JSONRecord, record_dict
from ..structure import Structure
from ..validation import Seed, check_choice, check_int, observed_data
from .em import em
from .em_result import EMResult
from .run_record import start_engine

__all__ = ["LaplaceResult", "LaplaceWarning", "duplicate_classes", "laplace",
           "softmax_log_prior"]

VARIANTS = ("full", "block", "diagonal")
#: Classes whose item tables differ by at most this (max absolute difference) are duplicates.
DUPLICATE_TOL = 1e-4
#: ``A`` is positive definite when its smallest eigenvalue exceeds this times its largest.
PD_RTOL = 1e-12


class LaplaceWarning(UserWarning):
    """The Hessian ``A`` is not positive definite: the Laplace approximation does not exist at
    this point (a saddle point or an unconverged fit); ``log_evidence`` is NaN."""


@dataclass(frozen=True, repr=False)
class LaplaceResult(JSONRecord):
    """What :func:`laplace` computed (module docstring).

    Attributes:
        log_evidence: ``g + d/2 ln 2 pi - 1/2 ln |A|`` plus ``log_alias`` when ``alias``
            (NaN when ``A``, or a block of it, is not positive definite).
        variant: ``"full"``, ``"block"`` or ``"diagonal"``.
        alias: whether ``log_alias`` is included.
        log_alias: ``ln S`` adjusted for duplicate classes (``ln r_z! - sum ln m_g!``).
        duplicate_groups: the groups (class numbers from 1) of identical classes, sizes > 1.
        loglik: ``ln p(y | theta~)`` at the MAP estimate.
        log_prior: ``ln p(phi~)``, the prior density in the softmax basis.
        log_det: ``ln |A|`` of the variant (``ln |det|`` when not positive definite).
        eigen_range: smallest and largest eigenvalue of the full ``A``.
        positive_definite: whether the variant's ``A`` is positive definite.
        by_variant: the log evidence of every variant (same fit, same ``A``, same aliases),
            NaN where that variant's ``A`` is not positive definite.
        n_parameters: ``d``, the free parameters.
        fit: the MAP fit (:class:`~lcbayes.EMResult`, softmax basis).
        seconds: wall-clock time (fit included).
    """

    log_evidence: float
    variant: str
    alias: bool
    log_alias: float
    duplicate_groups: tuple[tuple[int, ...], ...]
    loglik: float
    log_prior: float
    log_det: float
    eigen_range: tuple[float, float]
    positive_definite: bool
    by_variant: dict[str, float]
    n_parameters: int
    fit: EMResult
    seconds: float

    @property
    def log_joint(self) -> float:
        """``g(phi~) = ln p(y | phi~) + ln p(phi~)``."""
        return self.loglik + self.log_prior

    def to_dict(self) -> dict:
        """JSON-ready and lossless (the fit nested, NaN as ``None``); :meth:`from_dict` reads
        it back."""
        return record_dict(self, method="laplace")

    def to_frame(self) -> pd.DataFrame:
        """One row per variant: ``variant``, ``log_evidence`` (NaN where its ``A`` is not
        positive definite) and ``chosen`` (the variant of :attr:`log_evidence`)."""
        return pd.DataFrame({"variant": list(self.by_variant),
                             "log_evidence": list(self.by_variant.values()),
                             "chosen": [v == self.variant for v in self.by_variant]})

    def summary(self) -> str:
        """A short printout."""
        lines = [f"Laplace ({self.variant}, softmax basis) ln p(y | m) ~ {self.log_evidence:.4f}",
                 f"  ln p(y | theta~) = {self.loglik:.4f}, ln p(phi~) = {self.log_prior:.4f}, "
                 f"d = {self.n_parameters}, ln |A| = {self.log_det:.4f}",
                 f"  eigenvalues of A in [{self.eigen_range[0]:.4g}, {self.eigen_range[1]:.4g}]"
                 + ("" if self.positive_definite else " (not positive definite)"),
                 f"  aliases: {'+' if self.alias else 'not added: '}ln S = {self.log_alias:.4f}"
                 + (f" (duplicate classes {list(self.duplicate_groups)})"
                    if self.duplicate_groups else ""),
                 f"  {self.seconds:.2f} s"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def softmax_log_prior(structure: Structure, params, prior: PriorSpec = "dirichlet") -> float:
    """``ln p(phi)``: the Dirichlet ``prior`` as a density of the softmax-basis parameters,
    ``sum_rows [ln Gamma(sum alpha) - sum ln Gamma(alpha_k) + sum alpha_k ln theta_k]``
    (Whiley §4.3.1; module docstring)."""
    tables = [np.asarray(t, dtype=np.float64) for t in to_tables(structure, params)]
    alphas = prior_tables(structure, prior)
    if alphas is None:
        raise ArgumentError("softmax_log_prior needs a prior (the density in the softmax "
                            "basis), got prior=None")
    jacobian = sum(float(np.log(t).sum()) for t in tables)
    return dirichlet_log_density(tuple(tables), alphas) + jacobian


def _prior_information(structure: Structure, tables, alphas) -> np.ndarray:
    """Minus the Hessian of :func:`softmax_log_prior` in the free basis: per CPT row
    ``(sum alpha) (diag(theta) - theta theta^T)`` over categories ``2..r``."""
    blocks = []
    for t, a in zip(tables, alphas, strict=True):
        for row, alpha in zip(np.asarray(t), np.asarray(a), strict=True):
            p = row[1:]
            blocks.append(alpha.sum() * (np.diag(p) - np.outer(p, p)))
    size = sum(b.shape[0] for b in blocks)
    out = np.zeros((size, size))
    start = 0
    for b in blocks:
        out[start:start + b.shape[0], start:start + b.shape[0]] = b
        start += b.shape[0]
    return out


def _node_of_parameter(structure: Structure) -> np.ndarray:
    """The node of every free parameter (node by node, row by row, categories 2..r)."""
    return np.repeat(np.arange(structure.n_nodes),
                     [q * (r - 1) for q, r in structure.table_shapes])


def _log_det(a: np.ndarray, variant: str, nodes: np.ndarray) -> tuple[float, bool]:
    """``ln |A|`` of the variant and whether that ``A`` is positive definite."""
    if variant == "diagonal":
        diag = np.diag(a)
        return float(np.log(np.abs(diag)).sum()), bool(np.all(diag > 0))
    groups = [np.arange(a.shape[0])] if variant == "full" else \
        [np.flatnonzero(nodes == i) for i in np.unique(nodes)]
    total, definite = 0.0, True
    for g in groups:
        eig = np.linalg.eigvalsh(a[np.ix_(g, g)])
        definite &= bool(eig[0] > PD_RTOL * max(abs(eig[-1]), 1.0))
        total += float(np.log(np.abs(eig)).sum())
    return total, definite


def duplicate_classes(structure: Structure, params, tol: float = DUPLICATE_TOL
                      ) -> tuple[tuple[int, ...], ...]:
    """Groups (classes numbered from 1) of a latent class model's classes whose item tables
    agree to ``tol`` (max absolute difference): Whiley's degenerate duplicates (Table 4.1).
    Empty for other structure kinds."""
    if structure.kind != "latent_class":
        return ()
    tables = to_tables(structure, params)
    items = [i for i in range(structure.n_nodes) if i != structure.root]
    profile = np.concatenate([np.asarray(tables[i]) for i in items], axis=1)
    groups: list[list[int]] = []
    for k in range(profile.shape[0]):
        for g in groups:
            if np.max(np.abs(profile[g[0]] - profile[k])) <= tol:
                g.append(k)
                break
        else:
            groups.append([k])
    return tuple(tuple(k + 1 for k in g) for g in groups if len(g) > 1)


def laplace(structure: Structure, data, *, seed: Seed = 0, prior: PriorSpec = "dirichlet",
            restarts: int = 10, variant: Literal["full", "block", "diagonal"] = "full",
            alias: bool = True, fit: EMResult | None = None, **em_args: Any) -> LaplaceResult:
    """The Laplace approximation of ``ln p(y | m)`` in the softmax basis (Whiley eq. 4.5).

    Args:
        structure: the model (latent class, HLC or DAG).
        data: the data (a Dataset, a DataFrame or an array of codes); missing values are
            summed out.
        seed: seed of EM's random starts.
        prior: the Dirichlet prior (``"dirichlet"`` = 1 everywhere, Whiley's softmax-basis
            choice; a number; or ``{node: pseudo-counts}``); ``None`` is refused.
        restarts: EM restarts of the MAP fit.
        variant: ``"full"``, ``"block"`` (one block per node) or ``"diagonal"``.
        alias: add ``ln S`` (adjusted for duplicate classes).
        fit: the MAP fit to expand around (an EM fit with this ``prior`` in the softmax
            basis), instead of fitting; it is not refitted.
        **em_args: passed to :func:`lcbayes.em` (``tol``, ``max_iter``, ``keep``, ...).

    Returns:
        A :class:`LaplaceResult`; emits :class:`LaplaceWarning` (and gives NaN) when ``A`` is
        not positive definite.
    """
    start, seed = start_engine(structure, seed)
    check_choice(variant, "variant", VARIANTS)
    restarts = check_int(restarts, "restarts", 1)
    alphas = prior_tables(structure, prior)
    if alphas is None:
        raise ArgumentError("laplace needs a prior (the density in the softmax basis), got "
                            "prior=None")
    data = observed_data(structure, data)
    if fit is None:
        fit = em(structure, data, restarts=restarts, seed=seed, prior=prior,
                 map_basis="softmax", **em_args)
    tables = [np.asarray(t, dtype=np.float64) for t in to_tables(structure, fit.params)]
    info, _, _ = information(structure, fit.params, data, method="observed")
    a = info + _prior_information(structure, tables, alphas)
    eig = np.linalg.eigvalsh(a)
    groups = duplicate_classes(structure, fit.params)
    ln_s = log_alias(structure) - sum(math.lgamma(len(g) + 1) for g in groups)
    loglik = float(fit.loglik)
    log_prior = softmax_log_prior(structure, fit.params, prior)
    d = structure.n_parameters
    base = loglik + log_prior + 0.5 * d * math.log(2 * math.pi) + (ln_s if alias else 0.0)
    dets = {v: _log_det(a, v, _node_of_parameter(structure)) for v in VARIANTS}
    by_variant = {v: base - 0.5 * det if ok else float("nan") for v, (det, ok) in dets.items()}
    log_det, definite = dets[variant]
    value = by_variant[variant]
    if not definite:
        warnings.warn(f"the Hessian A of the {variant} Laplace approximation is not positive "
                      f"definite (eigenvalues of A in [{eig[0]:.3g}, {eig[-1]:.3g}]): the "
                      "estimate is not a maximum of the posterior (a saddle point or an "
                      "unconverged fit); log_evidence is NaN", LaplaceWarning, stacklevel=2)
    return LaplaceResult(log_evidence=float(value), variant=variant, alias=bool(alias),
                         log_alias=float(ln_s), duplicate_groups=groups, loglik=loglik,
                         log_prior=float(log_prior), log_det=float(log_det),
                         eigen_range=(float(eig[0]), float(eig[-1])),
                         positive_definite=definite, by_variant=by_variant,
                         n_parameters=d, fit=fit,
                         seconds=time.perf_counter() - start)

