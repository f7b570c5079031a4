"""The constructive theory of component splitting for latent class models (Karčiauskas 2005, Ch. 4).

Theorem 4.2: if a latent class model ``L`` does not reproduce the data distribution
(``P_L != P_D``), then (with probability 1) splitting one component ``h_s`` into two children
with half its weight each and CPTs within ``eps`` of its own (Def 4.2) raises the log-likelihood
``LL = sum_j n_j ln P_L(d_j)`` (eq. 2.5) for small ``eps``. The proof is constructive, and
:func:`improving_split` follows it:

* the soft sub-data of component ``h_l`` weights pattern ``d_j`` by ``n_lj = n_j P_L(h_l | d_j)``
  (eqs 2.9-2.10, :func:`soft_subdata`); by Lemma 4.1 some ``h_s`` has a sub-data distribution
  ``P_{D_s}`` other than ``prod_i P_L(D_i | h_s)``;
* case (b): a one-variable marginal differs; both children move mass ``eps`` from a state
  ``a2`` to a state ``a1`` of that variable, with derivative (4.52);
* case (a): every one-variable marginal agrees, but (Lemmas 4.2-4.3) a pair ``A, B`` does not
  factorise; the children perturb ``a1/a2`` and ``b1/b2`` by ``±sqrt(eps)`` with opposite signs,
  so that their mixture adds ``eps sigma(a, b)`` to ``P_L(a | h_s) P_L(b | h_s)``, with
  derivative (4.45).

In both cases the split model's ``P(d)`` is exactly linear in ``eps``, so the derivatives are
exact at ``eps = 0`` and :meth:`SplitDirection.apply` accepts ``eps < 0`` (the mirror split).

Representation: a model is ``weights`` ``(m,)`` (``P_L(h_l)``) and ``items``, a tuple whose
``items[i]`` has shape ``(m, r_i)`` (row ``l`` is ``P_L(D_i | h_l)``); data are weighted
patterns ``(P, J)`` (negative codes = missing) with real weights ``counts`` ``(P,)``. A missing
value drops its factor from the product (eq. 3.7).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import logsumexp

from ..errors import ArgumentError, LcbayesError

__all__ = [
    "TABLE_4_1",
    "NoImprovingSplitError",
    "SplitDirection",
    "improving_split",
    "is_mutually_independent",
    "is_pairwise_independent",
    "lc_log_likelihood",
    "soft_subdata",
]

#: Table 4.1: ``P(X1, X2, X3)`` indexed ``[x1, x2, x3]``. Every pair is independent, the triple
#: is not (``P(0, 0, 0) = .05 != .3 * .4 * .5``): Lemma 4.2 needs its "with probability 1".
TABLE_4_1 = np.array([[[0.05, 0.07], [0.10, 0.08]],
                      [[0.15, 0.13], [0.20, 0.22]]])
TABLE_4_1.setflags(write=False)

Items = tuple[np.ndarray, ...]


class NoImprovingSplitError(LcbayesError):
    """The constructive proof of Theorem 4.2 finds no split that raises the likelihood."""


# ---------------------------------------------------------------------------- likelihoods
def _log_p_given_h(items: Items, patterns: np.ndarray) -> np.ndarray:
    """``(m, P)`` ``ln P_L(d_j | h_l)``: the product over observed items only (eq. 3.7)."""
    out = np.zeros((items[0].shape[0], patterns.shape[0]))
    for i, theta in enumerate(items):
        col = patterns[:, i]
        out += np.where(col >= 0, np.log(theta)[:, np.maximum(col, 0)], 0.0)
    return out


def lc_log_likelihood(weights: np.ndarray, items: Items, patterns: np.ndarray,
                      counts: np.ndarray) -> float:
    """``LL(D | L) = sum_j n_j ln P_L(d_j)`` (eq. 2.5), ``P_L(d)`` by eq. (3.7)."""
    weights, items, patterns, counts = _checked(weights, items, patterns, counts)
    log_joint = np.log(weights)[:, None] + _log_p_given_h(items, patterns)
    return float(counts @ logsumexp(log_joint, axis=0))


def soft_subdata(weights: np.ndarray, items: Items, patterns: np.ndarray,
                 counts: np.ndarray) -> np.ndarray:
    """``(m, P)`` weights ``n_lj = n_j P_L(h_l | d_j)`` of the soft sub-data ``D_l``.

    Eqs (2.9)-(2.10) with ``P_L(h_l | d) = P_L(h_l) P_L(d | h_l) / P_L(d)`` (3.8), computed in
    log space; missing items are dropped from ``P_L(d | h_l)`` (3.7). Columns sum to ``counts``.
    """
    weights, items, patterns, counts = _checked(weights, items, patterns, counts)
    log_joint = np.log(weights)[:, None] + _log_p_given_h(items, patterns)
    return counts * np.exp(log_joint - logsumexp(log_joint, axis=0))


# ---------------------------------------------------------------------------- independence
def _marginal(joint: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return joint.sum(axis=tuple(k for k in range(joint.ndim) if k not in axes))


def is_mutually_independent(joint: np.ndarray, tol: float = 1e-12) -> bool:
    """Whether ``P(X_1 .. X_k) = prod_i P(X_i)`` to ``tol`` (``joint`` indexed ``[x1, .., xk]``)."""
    joint = np.asarray(joint, dtype=np.float64)
    product = np.ones(())
    for k in range(joint.ndim):
        product = np.multiply.outer(product, _marginal(joint, (k,)))
    return bool(np.allclose(joint, product, rtol=0.0, atol=tol))


def is_pairwise_independent(joint: np.ndarray, tol: float = 1e-12) -> bool:
    """Whether ``P(X_i, X_k) = P(X_i) P(X_k)`` to ``tol`` for every pair ``i < k``."""
    joint = np.asarray(joint, dtype=np.float64)
    return all(is_mutually_independent(_marginal(joint, pair), tol)
               for pair in itertools.combinations(range(joint.ndim), 2))


# ---------------------------------------------------------------------------- the split
@dataclass(frozen=True, eq=False)
class SplitDirection:
    """An improving split of component ``component`` of the model ``(weights, items)``.

    Attributes:
        component: ``s``, the index of the component to split.
        case: ``"b"`` (a one-variable marginal of ``D_s`` differs, eq. 4.52) or ``"a"`` (a pair
            of variables is dependent in ``D_s``, eq. 4.45).
        variables: ``(A,)`` in case (b), ``(A, B)`` in case (a) (item indices).
        states: ``((a1, a2),)`` in case (b), ``((a1, a2), (b1, b2))`` in case (a).
        derivative: ``dLL/d eps`` at ``eps = 0`` along :meth:`apply`, positive.
        weights, items: the model being split.
    """

    component: int
    case: Literal["a", "b"]
    variables: tuple[int, ...]
    states: tuple[tuple[int, int], ...]
    derivative: float
    weights: np.ndarray
    items: Items

    def _unit(self, k: int) -> np.ndarray:
        """``u = e_{x1} - e_{x2}`` on the states of ``variables[k]``."""
        theta = self.items[self.variables[k]]
        u = np.zeros(theta.shape[1])
        u[list(self.states[k])] = (1.0, -1.0)
        return u

    @property
    def max_eps(self) -> float:
        """The largest ``|eps|`` for which :meth:`apply` keeps every probability in [0, 1]."""
        low = min(float(self.items[v][self.component, list(st)].min())
                  for v, st in zip(self.variables, self.states, strict=True))
        return low if self.case == "b" else low**2

    def apply(self, eps: float) -> tuple[np.ndarray, Items]:
        """The split model with ``m + 1`` components (Def 4.2).

        Children ``s`` and ``s + 1`` replace ``h_s`` with weight ``P(h_s) / 2`` each; the other
        components are unchanged. Case (b): both children get ``P(A | h_s) + eps u_A`` with
        ``u_A = e_{a1} - e_{a2}``. Case (a): with ``delta = sqrt(|eps|)``, child 1 gets
        ``P(A | h_s) + delta u_A`` and ``P(B | h_s) + sign(eps) delta u_B``, child 2 the opposite
        signs, so the children's mixture of ``(A, B)`` is
        ``P(a | h_s) P(b | h_s) + eps sigma(a, b)`` with ``sigma = u_A(a) u_B(b)``.
        In both cases ``P_{L*}(d)`` is linear in ``eps``; ``eps < 0`` is the mirror split.
        """
        eps = float(eps)
        if not abs(eps) <= self.max_eps:
            raise ArgumentError(
                f"eps = {eps} leaves the probability simplex: |eps| must be at most "
                f"{self.max_eps} for this split"
            )
        s = self.component
        first = [theta[s].copy() for theta in self.items]
        second = [theta[s].copy() for theta in self.items]
        if self.case == "b":
            (a,) = self.variables
            first[a] += eps * self._unit(0)
            second[a] += eps * self._unit(0)
        else:
            (a, b), delta = self.variables, np.sqrt(abs(eps))
            first[a] += delta * self._unit(0)
            second[a] -= delta * self._unit(0)
            first[b] += np.sign(eps) * delta * self._unit(1)
            second[b] -= np.sign(eps) * delta * self._unit(1)
        half = self.weights[s] / 2.0
        weights = np.concatenate([self.weights[:s], [half, half], self.weights[s + 1:]])
        items = tuple(np.concatenate([theta[:s], [c1, c2], theta[s + 1:]])
                      for theta, c1, c2 in zip(self.items, first, second, strict=True))
        return weights, items


def _one_hot(col: np.ndarray, r: int) -> np.ndarray:
    """``(P, r)`` indicators of the observed codes; a missing row is all zeros."""
    return (col[:, None] == np.arange(r)).astype(np.float64)


def _marginal_shift(soft: np.ndarray, items: Items, patterns: np.ndarray,
                    ) -> tuple[float, int, int, tuple[int, int]]:
    """The best case-(b) direction as ``(derivative, s, A, (a1, a2))``.

    Eq. (4.52): ``dLL/d eps = |D_s^A| (P_{D_s^A}(a1)/P_L(a1|h_s) - P_{D_s^A}(a2)/P_L(a2|h_s))``
    where ``D_s^A`` is the soft sub-data restricted to the rows observing ``A`` (exact, as a
    missing ``A`` drops its factor); ``a1 = argmax`` and ``a2 = argmin`` of the ratio.
    """
    best = (-np.inf, 0, 0, (0, 0))
    for i, theta in enumerate(items):
        ratio = soft @ _one_hot(patterns[:, i], theta.shape[1]) / theta  # |D_s^A| P(a) / P_L
        gain = ratio.max(axis=1) - ratio.min(axis=1)
        s = int(np.argmax(gain))
        if gain[s] > best[0]:
            best = (float(gain[s]), s, i, (int(np.argmax(ratio[s])), int(np.argmin(ratio[s]))))
    return best


def _pair_twist(soft: np.ndarray, items: Items, patterns: np.ndarray,
                ) -> tuple[float, int, tuple[int, int], tuple[tuple[int, int], ...]]:
    """The best case-(a) direction as ``(derivative, s, (A, B), ((a1, a2), (b1, b2)))``.

    Eq. (4.45): ``dLL/d eps = |D_s^AB| sum sigma(a, b) P_{D_s^AB}(a, b) / (P_L(a|h_s) P_L(b|h_s))``
    over ``a in {a1, a2}, b in {b1, b2}``, ``sigma = +1`` on ``(a1, b1), (a2, b2)`` and ``-1``
    otherwise; ``D_s^AB`` keeps the rows observing both ``A`` and ``B`` (exact: the children's
    first-order terms cancel when one of them is missing). Swapping ``a1, a2`` flips the sign,
    so the maximum over all states is the largest ``|derivative|`` and is positive.
    """
    best = (-np.inf, 0, (0, 0), ((0, 0), (0, 0)))
    for i, k in itertools.combinations(range(len(items)), 2):
        theta_a, theta_b = items[i], items[k]
        joint = np.einsum("sp,pa,pb->sab", soft, _one_hot(patterns[:, i], theta_a.shape[1]),
                          _one_hot(patterns[:, k], theta_b.shape[1]))
        ratio = joint / (theta_a[:, :, None] * theta_b[:, None, :])
        # gain[s, a1, a2, b1, b2] = R(a1, b1) + R(a2, b2) - R(a1, b2) - R(a2, b1)
        gain = (ratio[:, :, None, :, None] + ratio[:, None, :, None, :]
                - ratio[:, :, None, None, :] - ratio[:, None, :, :, None])
        s, a1, a2, b1, b2 = (int(x) for x in np.unravel_index(np.argmax(gain), gain.shape))
        if gain[s, a1, a2, b1, b2] > best[0]:
            best = (float(gain[s, a1, a2, b1, b2]), s, (i, k), ((a1, a2), (b1, b2)))
    return best


def _fits_exactly(weights: np.ndarray, items: Items, patterns: np.ndarray, counts: np.ndarray,
                  tol: float) -> bool:
    """Whether complete data have ``P_D(d) = P_L(d)`` (eq. 2.1) for every pattern, to ``tol``."""
    if np.any(patterns < 0):
        return False
    unique, index = np.unique(patterns, axis=0, return_inverse=True)
    p_data = np.bincount(index.reshape(-1), weights=counts) / counts.sum()
    log_joint = np.log(weights)[:, None] + _log_p_given_h(items, unique)
    return bool(np.allclose(np.exp(logsumexp(log_joint, axis=0)), p_data, rtol=0.0, atol=tol))


def improving_split(weights: np.ndarray, items: Items, patterns: np.ndarray,
                    counts: np.ndarray, tol: float = 1e-9) -> SplitDirection:
    """A split that raises ``LL(D | L)`` for small ``eps > 0``: the proof of Theorem 4.2.

    Case (b) first: the component, variable and states ``a1 != a2`` with the largest
    derivative (4.52) over all components and variables; ``P_{D_s^A}(a1) > P_L(a1 | h_s)`` and
    ``P_{D_s^A}(a2) < P_L(a2 | h_s)``. If every such derivative is at most ``tol |D|`` (all
    one-variable marginals of every ``D_s`` match the model, e.g. at an EM fixed point), case (a):
    the component, pair and states with the largest derivative (4.45).

    Missing values: ``P_{D_s}`` of a variable (a pair) is taken over the rows of ``D_s``
    observing it (both), and ``|D_s|`` is that restricted weight. With these definitions
    (4.52) and (4.45) are the exact derivatives with or without missing values; for complete
    data they are the thesis's formulas.

    The theorem is about interior models: near the boundary (some ``P_L(a2 | h_s) ~ 0``, where
    EM limits often lie) a case-(b) derivative can be large while the direction stays feasible
    only for ``eps <= max_eps = min(P_L(a1 | h_s), P_L(a2 | h_s))``; check
    :attr:`SplitDirection.max_eps`.

    Raises:
        NoImprovingSplitError: no derivative exceeds ``tol |D|``: ``P_L = P_D`` (checked to
            ``tol`` for complete data) or the sub-data are pairwise but not mutually independent
            given a component (Lemma 4.2's exception, :data:`TABLE_4_1`).
    """
    weights, items, patterns, counts = _checked(weights, items, patterns, counts)
    soft = soft_subdata(weights, items, patterns, counts)
    floor = tol * counts.sum()
    derivative, s, a, states = _marginal_shift(soft, items, patterns)
    if derivative > floor:
        return SplitDirection(s, "b", (a,), (states,), derivative, weights, items)
    if len(items) > 1:
        derivative, s, pair, pair_states = _pair_twist(soft, items, patterns)
        if derivative > floor:
            return SplitDirection(s, "a", pair, pair_states, derivative, weights, items)
    if _fits_exactly(weights, items, patterns, counts, tol):
        raise NoImprovingSplitError(
            "the model reproduces the data distribution (P_L = P_D): no split raises the "
            "likelihood (Theorem 4.2 needs P_L != P_D)"
        )
    raise NoImprovingSplitError(
        "every component's soft sub-data match the model in all one- and two-variable "
        f"marginals (to tol = {tol}), so the constructive proof of Theorem 4.2 finds no split: "
        "either P_L = P_D where observed, or the sub-data are pairwise but not mutually "
        "independent given a component, the exception of Lemma 4.2 (see TABLE_4_1)"
    )


# ---------------------------------------------------------------------------- checks
def _checked(weights: np.ndarray, items: Items, patterns: np.ndarray, counts: np.ndarray,
             ) -> tuple[np.ndarray, Items, np.ndarray, np.ndarray]:
    """The arguments as float64 / int arrays, or :class:`ArgumentError` naming the fault."""
    weights = np.asarray(weights, dtype=np.float64)
    items = tuple(np.asarray(theta, dtype=np.float64) for theta in items)
    patterns, counts = np.asarray(patterns), np.asarray(counts, dtype=np.float64)
    if weights.ndim != 1 or np.any(weights <= 0) or not np.isclose(weights.sum(), 1.0):
        raise ArgumentError("weights must be a positive (m,) vector summing to one")
    for i, theta in enumerate(items):
        if (theta.ndim != 2 or theta.shape[0] != weights.size or np.any(theta <= 0)
                or not np.allclose(theta.sum(axis=1), 1.0)):
            raise ArgumentError(
                f"items[{i}] must be a positive ({weights.size}, r) array whose rows sum to one"
            )
    if patterns.ndim != 2 or patterns.shape[1] != len(items) or not items:
        raise ArgumentError(f"patterns must be a (P, {len(items)}) array, one column per item")
    if not np.issubdtype(patterns.dtype, np.integer):
        raise ArgumentError(f"patterns must hold integer codes, got dtype {patterns.dtype}")
    too_big = [i for i, theta in enumerate(items) if np.any(patterns[:, i] >= theta.shape[1])]
    if too_big:
        raise ArgumentError(f"patterns have codes beyond the items' states in columns {too_big}")
    if counts.shape != (patterns.shape[0],) or np.any(counts < 0) or counts.sum() <= 0:
        raise ArgumentError("counts must be a non-negative (P,) vector with a positive sum")
    return weights, items, patterns, counts
