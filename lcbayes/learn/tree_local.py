"""Local EM of candidate HLC models: only the pivot's tables move (Zhang & Kočka 2004's local
EM, as EAST uses it; Chen et al. 2012).

Removing a hidden node ``V`` from a tree cuts it into one part per neighbour, so

    p(y) = sum_v P(v) prod_{c in nb(V)} sum_{x_c} P(x_c | v) lambda_c(x_c; y)

where ``lambda_c(x_c; y)`` is the likelihood of the observations on ``c``'s side given
``x_c``: a one-hot indicator for a leaf (all ones when missing) and, for a hidden ``c``, the
product of the messages ``in(n -> c)(x_c) = sum_{x_n} P(x_n | x_c) lambda_n(x_n; y)`` of its
other neighbours (:func:`incoming`: both passes of sum-product on the current model, with
``P(x_n | x_c)`` from the tables or, against an edge, by Bayes' rule as in root walking).

Every operator of :mod:`.tree_operators` changes only the tables of its pivot and of the
pivot's neighbours, and each neighbour's side is a side of the current model (or a union of
them), so with every other table held the candidate's log-likelihood is that of a latent class
model over soft items: the pivot is the class, each neighbour an item whose evidence per
pattern is ``lambda`` (:func:`item_evidence`). :func:`local_em` runs EM on it, every candidate a
lane of one compiled program (vmapped in blocks of :data:`LANES`; the items padded to a power of
two, item states and classes to one power of two, so that one step's candidates share a few
programs). The local log-likelihood is the candidate's exact log-likelihood at those
parameters, so local scores rank candidates honestly.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from .. import jax_setup  # noqa: F401  (64-bit JAX)
from ..data import Dataset
from .mixture import capacity
from .tree_operators import Candidate
from .trees import TreeModel

__all__ = ["LANES", "LOCAL_MAX_ITER", "LocalFit", "incoming", "item_evidence", "local_em"]

#: Iteration limit of one local EM.
LOCAL_MAX_ITER = 100
#: Lanes per call of the compiled program (a group is padded to whole blocks, so each padded
#: shape compiles once).
LANES = 8


class LocalFit(NamedTuple):
    """A candidate after its local EM: the model and its log-likelihood."""

    candidate: Candidate
    model: TreeModel
    loglik: float


def _log_dot(table: np.ndarray, log_side: np.ndarray) -> np.ndarray:
    """``log sum_x table[a, x] exp(log_side[p, x])`` as ``(P, a)``."""
    top = log_side.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return top + np.log(np.exp(log_side - top) @ table.T)


def _leaf_evidence(data: Dataset, column: int, card: int) -> np.ndarray:
    """``(P, r)`` log indicator of a column's value (zeros where it is missing)."""
    codes = data.patterns[:, column]
    out = np.where(codes[:, None] == np.arange(card)[None, :], 0.0, -np.inf)
    out[codes < 0] = 0.0
    return out


def incoming(model: TreeModel, data: Dataset) -> dict[tuple[str, str], np.ndarray]:
    """``log in(n -> v)`` ``(P, |v|)`` for every hidden ``v`` and neighbour ``n`` (module
    docstring), on the patterns of ``data`` (whose columns include ``model``'s leaves: a model
    of some of the columns is fitted on the patterns of all of them)."""
    s, t = model.structure, model.tables
    column = {i: data.columns.index(s.nodes[i]) for i in s.observed_nodes}
    order = [i for i in s.topological_order if s.hidden[i]]
    marginal = {s.root: t[s.root][0]}
    for v in order[1:]:
        marginal[v] = marginal[s.parents[v][0]] @ t[v]
    msg: dict[tuple[int, int], np.ndarray] = {}

    def side(c: int, without: int) -> np.ndarray:
        if not s.hidden[c]:
            return _leaf_evidence(data, column[c], s.cardinalities[c])
        nb = [n for n in (*s.parents[c], *s.children[c]) if n != without]
        return sum((msg[(n, c)] for n in nb), np.zeros((data.n_patterns, s.cardinalities[c])))

    for v in reversed(order):
        for c in s.children[v]:
            msg[(c, v)] = _log_dot(t[c], side(c, v))
    for v in order:
        for c in s.children[v]:
            if s.hidden[c]:
                joint = marginal[v][:, None] * t[c]                 # P(v, c)
                reached = marginal[c] > 0
                back = np.where(reached[:, None], joint.T / np.where(reached, marginal[c],
                                                                     1.0)[:, None],
                                marginal[v][None, :])               # P(v | c)
                msg[(v, c)] = _log_dot(back, side(v, c))
    return {(s.nodes[n], s.nodes[v]): m for (n, v), m in msg.items()}


def item_evidence(model: TreeModel, data: Dataset, messages, node: str,
                  left_out: frozenset[str]) -> np.ndarray:
    """``(P, |node|)`` log evidence of ``node`` from its neighbours other than ``left_out``
    in the current ``model`` (a leaf: its indicator)."""
    s = model.structure
    i = s.index(node)
    if not s.hidden[i]:
        return _leaf_evidence(data, data.columns.index(node), s.cardinalities[i])
    nb = [s.nodes[n] for n in (*s.parents[i], *s.children[i]) if s.nodes[n] not in left_out]
    return sum((messages[(n, node)] for n in nb),
               np.zeros((data.n_patterns, s.cardinalities[i])))


def _renormalise(counts, on, old):
    c = jnp.where(on, counts, 0.0)
    total = c.sum(axis=-1, keepdims=True)
    return jnp.where(on & (total > 0), c / jnp.where(total > 0, total, 1.0), old)


def _e_step(ev, weights, pi, b):
    """``(per-pattern log-likelihood, counts of pi, counts of b)`` of the soft latent class
    model; ``ev`` ``(P, I, R)`` holds the evidence divided by its per-item maximum."""
    e = jnp.exp(ev)
    m = jnp.einsum("pir,ikr->pik", e, b)
    joint = jnp.log(pi)[None, :] + jnp.log(m).sum(axis=1)
    ll = logsumexp(joint, axis=1)
    post = jnp.exp(joint - jnp.where(jnp.isfinite(ll), ll, 0.0)[:, None])
    share = jnp.where(post[:, None, :] > 0,
                      weights[:, None, None] * post[:, None, :] / jnp.where(m > 0, m, 1.0), 0.0)
    return ll, weights @ post, b * jnp.einsum("pik,pir->ikr", share, e)


@partial(jax.jit, static_argnames=("max_iter",))
def _fit_lanes(ev, weights, pi, b, pi_on, b_on, tol, max_iter: int):
    def one(ev, pi, b, pi_on, b_on):
        def step(state):
            it, pi, b, _, ll = state
            ll_now, c_pi, c_b = _e_step(ev, weights, pi, b)
            return (it + 1, _renormalise(c_pi, pi_on, pi), _renormalise(c_b, b_on, b), ll,
                    weights @ ll_now)

        def going(state):
            it, _, _, before, ll = state
            return (it < max_iter) & ((it < 2) | (jnp.abs(ll - before) > tol))

        start = (0, pi, b, -jnp.inf, -jnp.inf)
        _, pi, b, _, _ = jax.lax.while_loop(going, step, start)
        return pi, b, weights @ _e_step(ev, weights, pi, b)[0]

    return jax.vmap(one)(ev, pi, b, pi_on, b_on)


def _layout(model: TreeModel, evidence: list[np.ndarray], n_items: int, states: int,
            classes: int):
    """One lane: normalised evidence, start, active entries and the log offset per pattern."""
    s = model.structure
    kids = s.children[s.root]
    k = s.cardinalities[s.root]
    n = evidence[0].shape[0]
    ev = np.zeros((n, n_items, states))
    b = np.full((n_items, classes, states), 1.0 / states)
    on = np.zeros((n_items, classes, states), dtype=bool)
    offset = np.zeros(n)
    for j, (c, e) in enumerate(zip(kids, evidence, strict=True)):
        r = s.cardinalities[c]
        top = e.max(axis=1)
        top = np.where(np.isfinite(top), top, 0.0)
        offset += top
        ev[:, j, :r] = e - top[:, None]
        ev[:, j, r:] = -np.inf
        b[j] = 0.0
        b[j, :, :r] = 1.0 / r
        b[j, :k, :r] = model.tables[c]
        on[j, :k, :r] = True
    pi = np.zeros(classes)
    pi[:k] = model.tables[s.root][0]
    return ev, pi, b, np.arange(classes) < k, on, offset


def local_em(current: TreeModel, data: Dataset, candidates: list[Candidate], tol: float,
             max_iter: int = LOCAL_MAX_ITER) -> list[LocalFit]:
    """Local EM (module docstring) of every candidate derived from ``current``, from its
    starting parameters; candidates of one padded shape run as lanes of one program."""
    messages = incoming(current, data)
    groups: dict[tuple[int, int, int], list[int]] = {}
    for j, cand in enumerate(candidates):
        s = cand.model.structure
        kids = s.children[s.root]
        states = capacity(max(s.cardinalities[c] for c in (s.root, *kids)))
        groups.setdefault((max(4, capacity(len(kids))), states, states), []).append(j)
    out: list[LocalFit | None] = [None] * len(candidates)
    weights = jnp.asarray(data.counts, dtype=jnp.float64)
    for shape, members in groups.items():
        lanes = [_layout(candidates[j].model,
                         [item_evidence(current, data, messages, *src)
                          for src in candidates[j].items], *shape) for j in members]
        lanes += [lanes[0]] * (-len(lanes) % LANES)              # whole blocks
        ev, pi, b, pi_on, b_on, offset = (np.stack(p) for p in zip(*lanes, strict=True))
        for start in range(0, len(members), LANES):
            part = slice(start, start + LANES)
            fit_pi, fit_b, ll = (np.asarray(a) for a in _fit_lanes(
                jnp.asarray(ev[part]), weights, jnp.asarray(pi[part]), jnp.asarray(b[part]),
                jnp.asarray(pi_on[part]), jnp.asarray(b_on[part]), tol, max_iter))
            for lane, j in enumerate(members[part]):
                model = _unpack(candidates[j].model, fit_pi[lane], fit_b[lane])
                out[j] = LocalFit(candidates[j], model,
                                  float(ll[lane] + data.counts @ offset[start + lane]))
    fits = [fit for fit in out if fit is not None]
    assert len(fits) == len(candidates)  # every candidate is in one group
    return fits


def _unpack(model: TreeModel, pi: np.ndarray, b: np.ndarray) -> TreeModel:
    """``model`` with the pivot's and its children's tables from a lane."""
    s = model.structure
    k = s.cardinalities[s.root]
    tables = list(model.tables)
    tables[s.root] = (pi[:k] / pi[:k].sum())[None, :]
    for j, c in enumerate(s.children[s.root]):
        t = b[j, :k, :s.cardinalities[c]]
        tables[c] = t / t.sum(axis=1, keepdims=True)
    return TreeModel(s, tuple(tables))
