"""Bridge sampling of a model's evidence from its NUTS draws, symmetrised over the labels.

**Estimator** (Meng & Wong 1996, eq. 4.1; in the form of Gronau et al. 2017, "A tutorial on
bridge sampling", eq. 10). In the unconstrained space ``u`` the unnormalised posterior is
``p~(u) = exp(-U(u))``, ``U`` the model's potential energy (log prior with the transforms'
Jacobians plus log likelihood), and ``Z = int p~(u) du = p(y)``. With ``n_1`` posterior draws
``u_i``, ``n_2`` draws ``u~_j`` from a proposal ``q``, ``l(u) = ln p~(u) - ln q(u)`` and
``s_i = n_i / (n_1 + n_2)``, the optimal bridge function gives the fixed point::

    r <- mean_j [ e^{l(u~_j)} / (s_1 e^{l(u~_j)} + s_2 r) ]
         / mean_i [ 1 / (s_1 e^{l(u_i)} + s_2 r) ]

iterated from the importance sampling estimate ``mean_j e^{l(u~_j)}``
(:func:`lcbayes.samplers.bridge.bridge_fixed_point`, the one implementation of the iteration).
Following Overstall & Forster (2010) and Gronau et al., ``q`` is fitted to the first half of
every chain and the bridge uses the second halves, so ``q`` is not tuned to the draws it is
bridged with.

**Proposal.** The posterior is invariant under the ``K!`` relabellings ``sigma`` of the classes
(linear maps of ``u`` with determinant +-1, :func:`~.model.relabel`), so ``q`` is the
symmetrised normal of Frühwirth-Schnatter (2004, §3)::

    q(u) = 1/K! sum_sigma N(sigma(u); m, S),

``m``, ``S`` the mean and covariance of the (aligned) fitting draws. ``p~`` and ``q`` are then
both invariant, so the estimate is the same whichever mode the chains sit in, and it needs no
assumption that the ``K!`` modes are separated. Were ``q`` the single normal ``N(m, S)`` of
one mode, the estimate would be ``Z / K!`` when the modes are separated (the draws and ``q``
see one of ``K!`` equal masses): a Bayes factor between two models with the same ``K`` would
be unaffected (``ln K!`` cancels), but not when the modes overlap, where the chains' draws
spread over several modes. ``mode_overlap`` reports how far they do: one minus the mean, over
the posterior draws, of the share of ``q``'s density that comes from the identity labelling
(0: separated modes; ``1 - 1/K!``: the labels are not identified at all).

**Error.** Frühwirth-Schnatter's (2004, eq. 14) relative mean squared error of the
estimate, with the autocorrelation of the NUTS chains in it
(:func:`lcbayes.samplers.bridge.bridge_relative_error`, the one implementation of it); the
standard error of ``ln r`` is its square root (delta method).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.special import logsumexp

from ..errors import LcbayesError
from ..samplers.bridge import BRIDGE_ITERATIONS, bridge_fixed_point, bridge_relative_error

__all__ = ["BridgeEstimate", "bridge_sampling"]


class BridgeEstimate(NamedTuple):
    """``log_evidence`` and its ``stderr``; the fixed-point ``iterations``; ``mode_overlap``
    (module docstring); the posterior and proposal draws used and the effective size of the
    former's ``f_1``."""

    log_evidence: float
    stderr: float
    iterations: int
    mode_overlap: float
    n_posterior: int
    n_proposal: int
    ess: float


def _log_normal(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    z = solve_triangular(chol, (x - mean).T, lower=True)
    return (-0.5 * np.sum(z * z, axis=0) - np.sum(np.log(np.diag(chol)))
            - 0.5 * mean.size * np.log(2 * np.pi))


def bridge_sampling(u: np.ndarray, log_p: np.ndarray, log_p_of: Callable[[np.ndarray], np.ndarray],
                    images: Callable[[np.ndarray], list[np.ndarray]], normals: np.ndarray
                    ) -> BridgeEstimate:
    """The bridge estimate of the module docstring.

    Args:
        u: ``(C, D, d)`` posterior draws (``C`` chains), aligned to one labelling.
        log_p: ``(C, D)`` their ``ln p~``.
        log_p_of: ``ln p~`` of new points ``(n, d)`` (``-inf`` or NaN where not finite).
        images: a batch of points ``(n, d)`` under every relabelling, identity first.
        normals: ``(n_2, d)`` standard normal draws for the proposal.
    """
    chains, n_draws, dim = u.shape
    half = n_draws // 2
    fit = u[:, :half].reshape(-1, dim)
    post = u[:, half:].reshape(-1, dim)
    if fit.shape[0] <= dim:
        raise LcbayesError(f"bridge sampling needs more than {dim} draws in the first halves "
                           f"of the chains to fit its proposal (got {fit.shape[0]}): raise "
                           "draws")
    mean = fit.mean(axis=0)
    cov = np.cov(fit, rowvar=False).reshape(dim, dim)
    chol = cholesky(cov + 1e-10 * np.trace(cov) / dim * np.eye(dim), lower=True)

    def log_q(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``ln q`` and the identity labelling's share of it."""
        parts = np.stack([_log_normal(y, mean, chol) for y in images(x)])
        total = logsumexp(parts, axis=0)
        return total - np.log(parts.shape[0]), np.exp(parts[0] - total)

    proposal = mean + normals @ chol.T
    log_q1, identity_share = log_q(post)
    log_q2, _ = log_q(proposal)
    l1 = log_p[:, half:].reshape(-1) - log_q1
    l2 = np.nan_to_num(log_p_of(proposal), nan=-np.inf) - log_q2
    log_r = float(bridge_fixed_point(l1, l2)[0])
    relative_error, ess = bridge_relative_error(l1, l2, log_r, chains)
    overlap = 1.0 - float(np.mean(identity_share))
    return BridgeEstimate(log_r, relative_error, BRIDGE_ITERATIONS, max(overlap, 0.0),
                          l1.size, l2.size, ess)
