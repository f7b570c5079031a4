"""Parameter-reusing operations on latent class models (Karčiauskas 2005, Defs 4.2, 5.2).

* **Component split** (Def 4.2, construction of §4.4.2 / Procedure 6.2 and its footnotes):
  component ``h_s`` becomes two children with half its weight each and item tables
  ``P(D_i | h_s) + r_i`` and ``P(D_i | h_s) - r_i``. Every ``r_i`` has entries in
  ``[-p, p]``, at least one of them ``+-p``, and sums to zero: ``u ~ U[-1, 1]^{r_i}``,
  ``u <- u - mean(u)``, ``r_i = p u / max|u|``. If an entry of ``P(D_i | h_s) +- r_i`` would
  leave ``[EDGE, 1 - EDGE]``, ``r_i`` is scaled down until none does; if ``P(D_i | h_s)``
  itself is outside, ``r_i = 0``.
* **Substitution** (Procedure 6.2): after the partial EM of the two children on the soft
  sub-data of ``h_s``, they replace ``h_s`` with weights ``P(h_s) pi_1`` and ``P(h_s) pi_2``.
  The first child takes ``h_s``'s place, the second is appended as class ``m``.
* **Component merge** (Def 5.2): ``P*(h) = P(h_a) + P(h_b)`` and ``P*(D_i | h) =
  [P(h_a) P(D_i | h_a) + P(h_b) P(D_i | h_b)] / P*(h)``; the merged class takes the place of
  the first of the two, the other is removed. Merging the two halves of a split with ``r = 0``
  gives back the model exactly.
"""

from __future__ import annotations

import numpy as np

from .mixture import ClassModel

__all__ = ["EDGE", "merge", "split_perturbation", "split_starts", "substitute"]

#: Probabilities of a split child are kept in ``[EDGE, 1 - EDGE]`` (Procedure 6.2, footnote 4).
EDGE = 1e-6


def split_perturbation(probs: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """``r`` for one item row ``probs`` (module docstring): sums to zero, ``max|r| <= p``
    (``= p`` unless scaled down to keep ``probs +- r`` inside ``[EDGE, 1 - EDGE]``)."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.min() < EDGE or probs.max() > 1.0 - EDGE:
        return np.zeros_like(probs)
    u = rng.uniform(-1.0, 1.0, size=probs.shape)
    u = u - u.mean()
    peak = np.abs(u).max()
    if peak == 0.0 or p == 0.0:
        return np.zeros_like(probs)
    r = p * u / peak
    room = np.minimum(probs - EDGE, 1.0 - EDGE - probs)
    moving = np.abs(r) > 0
    scale = min(1.0, float(np.min(room[moving] / np.abs(r[moving]))))
    return r * scale


def split_starts(model: ClassModel, s: int, n_starts: int, p: float,
                 rng: np.random.Generator) -> list[ClassModel]:
    """``n_starts`` independent random splits of component ``s``, each as the two-class model
    (weights ``1/2, 1/2``) that the partial EM fits on ``s``'s soft sub-data."""
    starts = []
    for _ in range(n_starts):
        items = []
        for table in model.items:
            r = split_perturbation(table[s], p, rng)
            items.append(np.stack([table[s] + r, table[s] - r]))
        starts.append(ClassModel(np.full(2, 0.5), tuple(items)))
    return starts


def substitute(model: ClassModel, s: int, children: ClassModel) -> ClassModel:
    """``model`` with component ``s`` replaced by the two ``children`` (weights
    ``P(h_s) pi``): the first child in place of ``s``, the second appended."""
    w = model.weights[s] * children.weights / children.weights.sum()
    weights = np.append(model.weights, w[1])
    weights[s] = w[0]
    items = []
    for table, kids in zip(model.items, children.items, strict=True):
        table = np.vstack([table, kids[1]])
        table[s] = kids[0]
        items.append(table)
    return ClassModel(weights, tuple(items))


def merge(model: ClassModel, a: int, b: int) -> ClassModel:
    """Components ``a`` and ``b`` merged into one (Def 5.2) at ``min(a, b)``."""
    a, b = sorted((int(a), int(b)))
    if a == b:
        raise ValueError("merge needs two different components")
    wa, wb = model.weights[a], model.weights[b]
    total = wa + wb
    keep = np.arange(model.n_classes) != b
    weights = model.weights.copy()
    weights[a] = total
    items = []
    for table in model.items:
        table = table.copy()
        table[a] = (wa * table[a] + wb * table[b]) / total if total > 0 else 0.5 * (
            table[a] + table[b])
        items.append(table[keep])
    return ClassModel(weights[keep], tuple(items))
