"""Label switching: relabel posterior draws of a latent class model so that class ``j`` is the
same class in every draw.

The likelihood and a symmetric prior of a ``K``-class model are invariant under the ``K!``
permutations of the class labels, so a sampler that mixes visits every labelling and ergodic
averages of per-class parameters mix the classes (Whiley 1999 §5.3.1; Stephens 2000; Jasra,
Holmes & Stephens 2005). Every method here finds one permutation ``nu_s`` of the class slots per
draw ``s`` and applies it to every posterior variable with a ``class`` dimension::

    relabelled[chain, draw, j, ...] = original[chain, draw, nu_s[j], ...]

i.e. new class ``j`` is the draw's old slot ``nu_s[j]``.

**Allocation probabilities.** The samplers store parameters, not allocations, so they are
recomputed per draw for every distinct observed pattern ``y_i`` (with count ``n_i``; rows with
every value missing are left out, a missing value contributes a factor 1)::

    p_s(i, j) = w_sj prod_m theta_smj(y_im) / sum_l w_sl prod_m theta_sml(y_im)

They are held as one ``patterns x draws x K`` float64 array.

**Pivot.** ``"stephens"``, ``"ecr"`` and ``"pivot"`` refer to one draw: the relabelled draw with
the highest ``sample_stats.log_joint``, an approximate MAP draw that sits inside one labelling
mode; its labels become the labels of the result.

**Methods.**

* ``"stephens"``: Stephens' (2000, JRSS B 62, 795-809) relabelling algorithm, which minimises
  the posterior expected Kullback-Leibler loss of reporting the classification ``Q``. Alternate
  ``Q_ij = mean_s p_s(i, nu_s(j))`` and, per draw,
  ``nu_s = argmin_nu sum_i n_i sum_j p_s(i, nu(j)) ln(p_s(i, nu(j)) / Q_ij)``, a linear
  assignment problem with cost ``C_jl = -sum_i n_i p_s(i, l) ln Q_ij`` (the entropy term does
  not depend on ``nu``). Started from ``Q = p_pivot``; stops when no permutation changes.
* ``"ecr"``: equivalence classes representatives (Papastamoulis & Iliopoulos 2010, JCGS 19,
  313-331): ``nu_s`` maximises the number of rows whose relabelled allocation agrees with the
  pivot allocation, ``sum_i n_i [z_s,i = nu(z*_i)]``. The allocation of a draw is its most
  probable one, ``z_s,i = argmax_j p_s(i, j)`` (the samplers store no sampled allocations), and
  ``z*`` is the pivot draw's.
* ``"pivot"``: Hungarian assignment (``scipy.optimize.linear_sum_assignment``) of the draw's
  classes to the pivot's, with cost the squared distance of the class parameters,
  ``C_jl = (w_sl - w*_j)^2 + sum_m sum_c (theta_sml(c) - theta*_mj(c))^2``.
* ``"constraint"``: the identifiability constraint ``w_1 >= w_2 >= ... >= w_K`` (classes in
  decreasing order of weight; Whiley's "naive" estimate). Fine when the weights are well apart,
  biased when two are close (Whiley §5.3.1; Stephens 2000).

**Reversible jump output.** ``n_classes=K`` keeps the draws with ``posterior.k == K`` and their
first ``K`` class slots (the samplers compact the active classes there). ArviZ needs chains of equal
length, so with ``chains="keep"`` (default) every chain that visits ``K`` keeps its first ``n``
such draws, ``n`` the fewest any of them has: R-hat and ESS then compare the chains. With
``chains="flatten"`` every such draw is kept, in chain order, as one chain: posterior means use
all draws, but ArviZ cannot compute R-hat from one chain. ``RelabelResult.source_chain`` and
``source_draw`` say where each draw came from; ``posterior.k`` is dropped (it is ``K``) and the
posterior attribute ``relabel_k`` records ``K``.

Example::

    res = lcb.relabel(idata, method="stephens")             # fixed-K Gibbs output
    res = lcb.relabel(rj_idata, method="ecr", n_classes=3)  # RJMCMC draws with 3 classes
    az.summary(res.idata, var_names=["class_weights"])
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import LcbayesError
from ..render import json_value, plural, record_from_dict
from ..validation import check_choice, check_int
from .idata import (
    arviz,
    as_inference_data,
    inference_data_from_dict,
    inference_data_to_dict,
    item_columns,
    select_draws,
    with_class_log_likelihood,
)

if TYPE_CHECKING:
    import arviz as az

    from .results import SamplerResult

__all__ = ["METHODS", "RelabelResult", "allocation_probabilities", "relabel"]

#: The relabelling methods (module docstring).
METHODS = ("stephens", "ecr", "pivot", "constraint")



@dataclass(frozen=True, repr=False, eq=False)
class RelabelResult:
    """Relabelled posterior draws.

    Attributes:
        idata: the relabelled ``InferenceData`` (with ``k``: only the draws with ``K`` classes).
        permutations: ``(chain, draw, K)`` ints of ``idata``'s draws; new class ``j`` is old
            slot ``permutations[c, d, j]``.
        method: the method used (:data:`METHODS`).
        conditioned_on: the number of classes the reversible jump draws were conditioned on,
            or ``None`` for fixed-``K`` output.
        pivot: ``(chain, draw)`` of the pivot draw in the input, ``None`` for ``"constraint"``.
        iterations: Stephens' iterations (1 for the one-pass methods).
        source_chain, source_draw: ``(chain, draw)`` ints, the input position of every draw.
        seconds: wall-clock time.
    """

    idata: az.InferenceData
    permutations: np.ndarray
    method: str
    conditioned_on: int | None
    pivot: tuple[int, int] | None
    iterations: int
    source_chain: np.ndarray
    source_draw: np.ndarray
    seconds: float

    @property
    def n_classes(self) -> int:
        return self.permutations.shape[-1]

    @property
    def fraction_permuted(self) -> float:
        """Fraction of draws whose permutation is not the identity."""
        identity = np.arange(self.n_classes)
        return float(np.mean(np.any(self.permutations != identity, axis=-1)))

    def summary_dict(self) -> dict:
        """JSON-ready, without the draws: method, ``conditioned_on``, pivot, iterations, draws,
        fraction permuted, seconds and the relabelled posterior mean class weights (the command
        line prints this)."""
        weights = self.idata["posterior"]["class_weights"].mean(("chain", "draw")).values
        chains, draws = self.permutations.shape[:2]
        return {"method": self.method, "conditioned_on": self.conditioned_on,
                "n_classes": self.n_classes,
                "pivot": list(self.pivot) if self.pivot is not None else None,
                "iterations": self.iterations, "chains": chains, "draws": draws,
                "fraction_permuted": self.fraction_permuted, "seconds": self.seconds,
                "class_weights": [float(w) for w in weights]}

    def to_dict(self) -> dict:
        """:meth:`summary_dict` with the permutations, the source of every draw and the
        relabelled draws (:func:`~lcbayes.samplers.idata.inference_data_to_dict`);
        :meth:`from_dict` reads it back."""
        return {**self.summary_dict(),
                **json_value({"permutations": self.permutations,
                              "source_chain": self.source_chain,
                              "source_draw": self.source_draw}),
                "inference_data": inference_data_to_dict(self.idata)}

    @classmethod
    def from_dict(cls, spec: dict) -> RelabelResult:
        """The result of :meth:`to_dict` (e.g. after a JSON round trip)."""
        idata = inference_data_from_dict(spec["inference_data"])
        if idata["posterior"].attrs.get("log_likelihood") == "rows":  # left out of the JSON
            with_class_log_likelihood(idata)
        return record_from_dict(cls, spec, idata=idata)

    def to_frame(self) -> pd.DataFrame:
        """One row per draw and class: ``chain``, ``draw`` (in :attr:`idata`),
        ``source_chain``, ``source_draw`` (in the input), ``class`` (the new label, from 1) and
        ``slot`` (the draw's old class slot, from 1, that became it)."""
        chains, draws, k = self.permutations.shape
        chain, draw, new = (a.ravel() for a in np.indices((chains, draws, k)))
        return pd.DataFrame({"chain": chain, "draw": draw,
                             "source_chain": self.source_chain[chain, draw],
                             "source_draw": self.source_draw[chain, draw],
                             "class": new + 1, "slot": self.permutations.ravel() + 1})

    def summary(self) -> str:
        d = self.summary_dict()
        where = (f", conditioned on K = {self.conditioned_on}" if self.conditioned_on is not None
                 else "")
        pivot = f"; pivot draw (chain {d['pivot'][0]}, draw {d['pivot'][1]})" \
            if self.pivot is not None else ""
        return "\n".join([
            f"Relabelled by {self.method}{where}: {d['chains']} chains x {d['draws']} draws, "
            f"{plural(self.n_classes, 'class', 'classes')}{pivot}",
            f"draws permuted: {self.fraction_permuted:.1%}; iterations: {self.iterations}; "
            f"{self.seconds:.2f} s",
            "posterior mean class weights: "
            + ", ".join(f"{j}: {w:.3f}" for j, w in enumerate(d["class_weights"], start=1)),
        ])

    def __repr__(self) -> str:
        chains, draws = self.permutations.shape[:2]
        return (f"RelabelResult(method={self.method!r}, conditioned_on={self.conditioned_on}, "
                f"chains={chains}, "
                f"draws={draws}, permuted={self.fraction_permuted:.1%})")


# ---------------------------------------------------------------------- arrays
def _class_arrays(idata: az.InferenceData, items: list[str]
                  ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Class weights ``(S, K)`` and per item ``theta`` ``(S, K, L)``, draws flattened."""
    post = idata["posterior"]

    def flat(name: str) -> np.ndarray:
        values = post[name].transpose("chain", "draw", "class", ...).values
        return values.reshape(-1, *values.shape[2:]).astype(float)

    weights = flat("class_weights")
    thetas = [flat(f"theta_{c}") for c in items]
    bad = ~np.isfinite(weights).all(axis=1)
    for th in thetas:
        bad |= ~np.isfinite(th).all(axis=(1, 2))
    if bad.any():
        raise LcbayesError(f"{int(bad.sum())} draws have non-finite class parameters; for "
                           "reversible jump output pass n_classes=K")
    return weights, thetas


def allocation_probabilities(weights: np.ndarray, thetas: list[np.ndarray],
                             patterns: np.ndarray) -> np.ndarray:
    """``p_s(i, j)`` as a ``(P, S, K)`` array (pattern, draw, class) for coded ``patterns``
    (``(P, J)``, ``-1`` missing) under draws of class ``weights`` ``(S, K)`` and per item
    ``thetas`` ``(S, K, L)`` (module docstring). The log numerators are one product of the
    patterns' one-hot codes (all zero for a missing value, i.e. a factor 1) with the draws' log
    probabilities."""
    onehot = np.concatenate([(patterns[:, [m]] == np.arange(theta.shape[2])).astype(float)
                             for m, theta in enumerate(thetas)], axis=1)   # (P, sum L)
    tiny = np.finfo(float).tiny
    log_theta = np.log(np.maximum(np.concatenate(thetas, axis=2), tiny))   # (S, K, sum L)
    log_q = np.tensordot(onehot, log_theta, axes=(1, 2))                   # (P, S, K)
    log_q += np.log(np.maximum(weights, tiny))
    log_q -= log_q.max(axis=2, keepdims=True)
    probs = np.exp(log_q, out=log_q)
    probs /= probs.sum(axis=2, keepdims=True)
    return probs


def _allocations(weights: np.ndarray, thetas: list[np.ndarray], y: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`allocation_probabilities` of the distinct patterns of ``y`` with at least one
    observed value, and their counts ``(P,)``."""
    patterns, counts = np.unique(y, axis=0, return_counts=True)
    seen = (patterns >= 0).any(axis=1)
    return allocation_probabilities(weights, thetas, patterns[seen]), \
        counts[seen].astype(float)


def _assign(cost: np.ndarray) -> np.ndarray:
    """Per draw, the permutation ``nu`` minimising ``sum_j cost[s, j, nu[j]]``."""
    from scipy.optimize import linear_sum_assignment  # on first use: the CLI starts faster
    return np.stack([linear_sum_assignment(c)[1] for c in cost])


def _per_draw(matrix: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``out[s, j, l] = sum_i matrix[i, j] probs[i, s, l]`` as one matrix product."""
    n_patterns, n_draws, n_classes = probs.shape
    out = matrix.T @ probs.reshape(n_patterns, n_draws * n_classes)
    return out.reshape(n_classes, n_draws, n_classes).transpose(1, 0, 2)


# ---------------------------------------------------------------------- methods
def _stephens(probs: np.ndarray, counts: np.ndarray, pivot: int, max_iter: int
              ) -> tuple[np.ndarray, int]:
    """Stephens' (2000) KL relabelling from ``Q = p_pivot`` (module docstring)."""
    n_patterns, n_draws, n_classes = probs.shape
    tiny = np.finfo(float).tiny
    q = probs[:, pivot]
    perms = None
    for iteration in range(1, max_iter + 1):
        new = _assign(_per_draw(-counts[:, None] * np.log(np.maximum(q, tiny)), probs))
        if perms is not None and np.array_equal(new, perms):
            return perms, iteration
        perms = new
        # Q_ij = mean_s p_s(i, nu_s(j)), with the permutation matrices E_s[nu_s(j), j] = 1
        select = np.zeros((n_draws, n_classes, n_classes))
        select[np.arange(n_draws)[:, None], perms, np.arange(n_classes)] = 1.0
        q = probs.reshape(n_patterns, -1) @ select.reshape(-1, n_classes) / n_draws
    warnings.warn(f"Stephens' relabelling did not converge in max_iter={max_iter} "
                  "iterations; the permutations of the last one are used", stacklevel=3)
    assert perms is not None  # max_iter >= 1, checked by relabel
    return perms, max_iter


def _ecr(probs: np.ndarray, counts: np.ndarray, pivot: int) -> np.ndarray:
    """ECR (Papastamoulis & Iliopoulos 2010) against the pivot's allocation."""
    n_classes = probs.shape[2]
    onehot = np.eye(n_classes)[probs.argmax(axis=2)]                      # (P, S, K)
    reference = onehot[:, pivot] * counts[:, None]                        # n_i [z*_i = j]
    return _assign(-_per_draw(reference, onehot))  # rows with z* = j and z_s = l


def _to_pivot(weights: np.ndarray, thetas: list[np.ndarray], pivot: int) -> np.ndarray:
    """Hungarian assignment to the pivot's class parameters."""
    cost = (weights[:, None, :] - weights[pivot][None, :, None]) ** 2
    for theta in thetas:
        diff = theta[:, None, :, :] - theta[pivot][None, :, None, :]       # (S, j, l, L)
        cost = cost + (diff ** 2).sum(axis=3)
    return _assign(cost)


# ---------------------------------------------------------------------- public
def _permute(idata: az.InferenceData, perms: np.ndarray, method: str) -> az.InferenceData:
    """Apply ``perms`` ``(chain, draw, K)`` to every posterior variable with a class dim."""
    post = idata["posterior"].assign_attrs(relabel_method=method)
    for name, var in post.data_vars.items():
        if "class" not in var.dims:
            continue
        values = var.transpose("chain", "draw", "class", ...).values
        index = perms.reshape(perms.shape + (1,) * (values.ndim - 3))
        moved = np.take_along_axis(values, index, axis=2)
        post[name] = var.transpose("chain", "draw", "class", ...).copy(data=moved) \
            .transpose(*var.dims)
    groups = {g: idata[g] for g in idata.groups()}
    groups["posterior"] = post
    return arviz().InferenceData(**groups)


def relabel(idata: az.InferenceData | SamplerResult, *, method: str = "stephens",
            n_classes: int | None = None, chains: str = "keep", max_iter: int = 100
            ) -> RelabelResult:
    """Undo label switching in latent class posterior draws (module docstring).

    Args:
        idata: the result of :func:`lcbayes.gibbs` or :func:`lcbayes.rjmcmc`, or its
            ``InferenceData``.
        method: ``"stephens"`` (default), ``"ecr"``, ``"pivot"`` or ``"constraint"``.
        n_classes: for reversible jump output, the number of classes to condition on
            (required there); for fixed-``K`` output leave ``None``.
        chains: with ``n_classes``, ``"keep"`` (equal-length chains) or ``"flatten"`` (one
            chain).
        max_iter: the most iterations of Stephens' algorithm.

    Returns:
        :class:`RelabelResult`; its ``idata`` has ``posterior.attrs["relabel_method"]``.
    """
    start = time.perf_counter()
    idata = as_inference_data(idata)
    check_choice(method, "method", METHODS)
    check_int(max_iter, "max_iter", 1)
    items = item_columns(idata)
    if method != "constraint" and ("sample_stats" not in idata.groups()
                                   or "log_joint" not in idata["sample_stats"]):
        raise LcbayesError(f"method {method!r} picks its pivot by sample_stats.log_joint, "
                           "which the InferenceData lacks; use method='constraint'")
    k = n_classes
    selected, src_chain, src_draw = select_draws(idata, k, chains)
    weights, thetas = _class_arrays(selected, items)
    shape = src_chain.shape
    pivot, iterations = None, 1
    if method == "constraint":
        perms = np.argsort(-weights, axis=1, kind="stable")
    else:
        log_joint = selected["sample_stats"]["log_joint"].transpose("chain", "draw").values
        best = int(np.nanargmax(log_joint.ravel()))
        pivot = (int(src_chain.ravel()[best]), int(src_draw.ravel()[best]))
        if method == "pivot":
            perms = _to_pivot(weights, thetas, best)
        else:
            y = selected["observed_data"]["y"].transpose("row", "item").values.astype(int)
            probs, counts = _allocations(weights, thetas, y)
            if method == "ecr":
                perms = _ecr(probs, counts, best)
            else:
                perms, iterations = _stephens(probs, counts, best, max_iter)
    perms = perms.reshape(*shape, -1)
    return RelabelResult(idata=_permute(selected, perms, method), permutations=perms,
                      method=method, conditioned_on=k, pivot=pivot, iterations=iterations,
                      source_chain=src_chain, source_draw=src_draw,
                      seconds=time.perf_counter() - start)
