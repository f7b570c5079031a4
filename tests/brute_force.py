"""Brute-force exact inference in plain NumPy, independent of :mod:`lcbayes.inference`.

Every joint configuration of ALL nodes (hidden and observed) is enumerated; the joint
probability of a configuration is the product of one CPT entry per node, read from the CPT of
shape ``(*parent_cardinalities, r_i)`` with the parents in ``structure.parents[i]`` order. For a
data pattern ``y`` (codes, ``-1`` = missing) ``p(y)`` is the sum over the configurations that agree
with the observed entries; posteriors follow by summing the normalised joint.

Only the plain attributes of a :class:`~lcbayes.Structure` are used (``nodes``, ``cardinalities``,
``hidden``, ``parents``); none of the library's derived index machinery.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Posterior:
    """Brute-force answer for one data pattern."""

    prob: float                      # p(y)
    hidden: dict[str, np.ndarray]    # hidden node -> (r_h,) posterior marginal
    family: dict[str, np.ndarray]    # node -> CPT-shaped P(x_i = k, pa_i = l | y)
    hidden_entropy: float            # entropy of the joint posterior of the hidden nodes
    completion_entropy: float        # ... of the hidden nodes and the missing observed parents


class BruteForce:
    """The full joint distribution of a structure under fixed parameters."""

    def __init__(self, structure, params):
        self.structure = structure
        cards = [int(c) for c in structure.cardinalities]
        self.configs = np.array(list(itertools.product(*(range(c) for c in cards))),
                                dtype=np.int64).reshape(-1, len(cards))
        joint = np.ones(self.configs.shape[0])
        for i, name in enumerate(structure.nodes):
            cpt = np.asarray(params[name], dtype=np.float64)
            pa = structure.parents[i]
            expected = (*(cards[p] for p in pa), cards[i])
            assert cpt.shape == expected, (name, cpt.shape, expected)
            index = (*(self.configs[:, p] for p in pa), self.configs[:, i])
            joint = joint * cpt[index]
        self.joint = joint
        self.observed = [i for i, h in enumerate(structure.hidden) if not h]
        self.hidden = [i for i, h in enumerate(structure.hidden) if h]
        has_child = {p for pa in structure.parents for p in pa}
        self.childless = [i not in has_child for i in range(structure.n_nodes)]

    def consistent(self, pattern) -> np.ndarray:
        """Boolean mask of the configurations that agree with ``pattern``."""
        mask = np.ones(self.configs.shape[0], dtype=bool)
        for j, i in enumerate(self.observed):
            if pattern[j] >= 0:
                mask &= self.configs[:, i] == pattern[j]
        return mask

    def prob(self, pattern) -> float:
        return float(self.joint[self.consistent(pattern)].sum())

    def posterior(self, pattern) -> Posterior:
        mask = self.consistent(pattern)
        weights = np.where(mask, self.joint, 0.0)
        prob = float(weights.sum())
        post = weights / prob
        s = self.structure
        hidden = {
            s.nodes[h]: np.bincount(self.configs[:, h], weights=post,
                                    minlength=s.cardinalities[h])
            for h in self.hidden
        }
        family = {}
        for i, name in enumerate(s.nodes):
            pa = s.parents[i]
            shape = (*(s.cardinalities[p] for p in pa), s.cardinalities[i])
            fam = np.zeros(shape)
            j = self.observed.index(i) if i in self.observed else None
            if not (j is not None and self.childless[i] and pattern[j] < 0):
                index = (*(self.configs[:, p] for p in pa), self.configs[:, i])
                np.add.at(fam, index, post)
            family[name] = fam
        parents = [i for i in self.observed if not self.childless[i]]
        return Posterior(prob, hidden, family, self._entropy(post, self.hidden),
                         self._entropy(post, self.hidden + parents))

    def _entropy(self, post, nodes) -> float:
        """Entropy of the posterior marginal of the joint values of ``nodes``."""
        if not nodes:
            return 0.0
        _, group = np.unique(self.configs[:, nodes], axis=0, return_inverse=True)
        q = np.bincount(group.reshape(-1), weights=post)
        q = q[q > 0]
        return float(-(q * np.log(q)).sum())

    def all_patterns(self) -> np.ndarray:
        """Every complete configuration of the observed nodes, in data-column order."""
        cards = [self.structure.cardinalities[i] for i in self.observed]
        return np.array(list(itertools.product(*(range(c) for c in cards))), dtype=np.int32)
