"""Label symmetry: the number ``S`` of posterior aliases of a structure (Beal & Ghahramani §3.2).

Relabelling the states of a hidden node, or exchanging two a-priori identical hidden nodes,
leaves ``p(y | theta)`` and a symmetric Dirichlet prior unchanged, so the posterior has ``S``
equivalent modes. Methods that look at one mode (BIC, Cheeseman-Stutz, VB) add ``ln S``
(Beal & Ghahramani eq. 24 and §3.5); MAP, exact evidence and AIS never need it.

The rule used here (the "children" rule; the paper states S only for its examples)::

    S = |Aut| * prod_{h relevant} |s_h|!

* a hidden node is *relevant* when it has an observed descendant; an irrelevant one (e.g. a
  childless hidden root) leaves ``p(y | theta)`` untouched and its posterior is its prior, one
  mode, so it contributes nothing;
* ``Aut`` is the group of permutations of the relevant hidden nodes that keep every observed node
  fixed, map nodes to nodes of the same cardinality and map the graph onto itself (parent sets
  are carried along, as sets). Its size is the number of ways a-priori identical hidden nodes can
  be exchanged.

Examples: a latent class model with ``K`` classes has ``S = K!``; Beal & Ghahramani's worked
example (an observed node with hidden parents of cardinalities 3, 3, 4) has
``S = 2! * 3! * 3! * 4! = 1728``; their true structure (two binary hidden parents, not
exchangeable) ``S = 4``; a swap-symmetric graph with both binary parents used ``S = 8``.
The correction is accurate only when the aliased modes are well separated (large samples).
"""

from __future__ import annotations

import math
from itertools import permutations, product

from .structure import Structure

__all__ = ["alias_count", "log_alias"]


def log_alias(structure: Structure) -> float:
    """``ln S`` for ``structure`` (see the module docstring for the rule)."""
    return math.log(alias_count(structure))


def alias_count(structure: Structure) -> int:
    """``S = |Aut| * prod |s_h|!`` over the relevant hidden nodes (module docstring)."""
    relevant = _relevant_hidden(structure)
    labels = math.prod(math.factorial(structure.cardinalities[h]) for h in relevant)
    return labels * _count_automorphisms(structure, relevant)


def _relevant_hidden(structure: Structure) -> tuple[int, ...]:
    """Hidden nodes with at least one observed descendant."""
    relevant: set[int] = set()
    for i in reversed(structure.topological_order):
        if structure.hidden[i] and any(
            not structure.hidden[c] or c in relevant for c in structure.children[i]
        ):
            relevant.add(i)
    return tuple(sorted(relevant))


def _count_automorphisms(structure: Structure, relevant: tuple[int, ...]) -> int:
    """Permutations of ``relevant`` (observed nodes fixed) that preserve cardinalities and
    parent sets. Candidates are only exchanged within classes of equal signature (cardinality,
    observed parents and children, numbers of hidden parents and children), which keeps the
    search small; each candidate is then checked on the whole graph."""
    parent_sets = [frozenset(p) for p in structure.parents]

    def signature(h: int) -> tuple:
        observed_children = frozenset(c for c in structure.children[h] if not structure.hidden[c])
        return (structure.cardinalities[h], observed_children, len(structure.parents[h]),
                len(structure.children[h]))

    groups: dict[tuple, list[int]] = {}
    for h in relevant:
        groups.setdefault(signature(h), []).append(h)
    classes = [g for g in groups.values() if len(g) > 1]
    if not classes:
        return 1
    count = 0
    for choice in product(*(permutations(g) for g in classes)):
        mapping = {i: i for i in range(structure.n_nodes)}
        for group, image in zip(classes, choice, strict=True):
            mapping.update(zip(group, image, strict=True))
        if all(parent_sets[mapping[i]] == frozenset(mapping[p] for p in structure.parents[i])
               for i in range(structure.n_nodes)):
            count += 1
    return count
