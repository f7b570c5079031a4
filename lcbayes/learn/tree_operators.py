"""The search operators on HLC models, each with starting parameters that reuse the current
model's (Zhang 2004; Zhang & Kočka 2004; Chen et al. 2012, EAST; Karčiauskas 2005 §3.4.2).

An HLC model is an unrooted tree in effect (root walking, :mod:`.root_walk`, changes neither
the distribution nor the dimension), so every operator first re-roots the model at its *pivot*:
the one hidden node whose table and whose neighbours' tables the operator changes. Everything
beyond the pivot's neighbours keeps its tables, which is what lets :mod:`.tree_local` fit the
candidate by a local EM on the pivot alone.

* :func:`add_node` (node introduction): a new hidden node ``N`` between hidden ``H`` and two of
  its neighbours ``X1, X2``, with ``|N| = |H|`` and ``P(N | H)`` the identity (``N`` copies
  ``H``), ``P(Xi | N) = P(Xi | H)``: the distribution is unchanged. Where ``|H|`` would make the
  model irregular, ``|N|`` is the regular bound and ``H``'s states are folded onto ``N``'s
  (``s -> s mod |N|``, the item tables merged as in Def 5.2). Pivot: ``N``.
* :func:`remove_node` (node deletion): hidden ``G`` next to hidden ``H`` goes, its other
  neighbours ``C`` join ``H`` with ``P(C | H) = sum_g P(g | H) P(C | g)``. Pivot: ``H``.
* :func:`relocate` (node relocation): neighbour ``Z`` of ``H`` moves to ``H``'s hidden
  neighbour ``G`` with ``P(Z | G) = sum_h P(h | G) P(Z | h)``. Pivot: ``G``.
* :func:`add_state` / :func:`remove_state`: structure learning I's component split and merge
  (:mod:`.operations`) at the root after walking it to ``H``. A split with perturbation 0
  leaves the distribution unchanged, and so does merging two identical states.

Every candidate must be a *regular* HLC model (Zhang 2004, JMLR 5, Def. 3): each hidden node
``H`` with neighbours ``X_1..X_l`` (``l >= 2``) has ``|H| <= prod |X_i| / max |X_i|``, strictly
when ``l = 2`` (:func:`regularity_problems`); an operator that would break this, or leave a
hidden node with fewer than two neighbours, raises :class:`~lcbayes.errors.StructureError`.

A :class:`Candidate` holds the new model rooted at its pivot and, for each of the pivot's
children, where its evidence comes from in the current model (:mod:`.tree_local`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..constructors import hlc
from ..data import Dataset
from ..errors import StructureError
from .operations import merge, split_starts, substitute
from .tree_moves import walk
from .trees import TreeModel, lc_part, with_lc_part

__all__ = ["Candidate", "Spec", "add_node", "add_state", "model_of", "neighbours",
           "regularity_problems", "relocate", "remove_node", "remove_state", "spec_of"]


class Spec(NamedTuple):
    """An HLC model by names: its ``root``, ``children`` of every hidden node, hidden
    ``cards`` and every node's ``(q, r)`` table."""

    root: str
    children: dict[str, list[str]]
    cards: dict[str, int]
    tables: dict[str, np.ndarray]


class Candidate(NamedTuple):
    """A candidate model and how to fit it locally.

    Attributes:
        operation: ``"add_node"``, ``"remove_node"``, ``"relocate"``, ``"add_state"`` or
            ``"remove_state"``.
        label: what changed, e.g. ``"H3 over A, B"``.
        model: the candidate with its starting parameters, rooted at the pivot.
        items: for each child of the pivot (``model.structure.children[root]`` order), the
            evidence it carries: ``(node of the current model, its neighbours left out)``.
    """

    operation: str
    label: str
    model: TreeModel
    items: tuple[tuple[str, frozenset[str]], ...]


def neighbours(model: TreeModel, name: str) -> list[str]:
    """The names of the neighbours of node ``name``."""
    s = model.structure
    i = s.index(name)
    return [s.nodes[j] for j in (*s.parents[i], *s.children[i])]


def regularity_problems(structure) -> list[str]:
    """Why an HLC structure is not regular (module docstring); empty if it is."""
    problems = []
    for h in structure.hidden_nodes:
        nb = [*structure.parents[h], *structure.children[h]]
        name, card = structure.nodes[h], structure.cardinalities[h]
        if len(nb) < 2:
            problems.append(f"hidden node {name!r} would have {len(nb)} neighbour(s); it needs "
                            "at least two")
            continue
        cards = [structure.cardinalities[j] for j in nb]
        bound = math.prod(cards) // max(cards)
        if card > bound or (len(nb) == 2 and card >= bound):
            rule = "<" if len(nb) == 2 else "<="
            problems.append(f"hidden node {name!r} has {card} states; regularity needs "
                            f"{rule} {bound} (product of its neighbours' over their largest)")
    return problems


def spec_of(model: TreeModel, root: str) -> Spec:
    """``model`` re-rooted at hidden node ``root``, by names (tables copied)."""
    rooted = walk(model, model.structure.index(root))
    s = rooted.structure
    return Spec(root, {s.nodes[h]: [s.nodes[c] for c in s.children[h]] for h in s.hidden_nodes},
                {s.nodes[h]: s.cardinalities[h] for h in s.hidden_nodes},
                {s.nodes[i]: np.array(t) for i, t in enumerate(rooted.tables)})


def model_of(data: Dataset, spec: Spec) -> TreeModel:
    """The :class:`TreeModel` of ``spec`` (a regular HLC structure over every column of
    ``data``), or a :class:`StructureError` saying why it is not one."""
    for h, kids in spec.children.items():
        degree = len(kids) + (h != spec.root)
        if degree < 2:
            raise StructureError(f"hidden node {h!r} would have {degree} neighbour(s); it "
                                 "needs at least two")
    structure = hlc(data, spec.children, spec.cards)
    problems = regularity_problems(structure)
    if problems:
        raise StructureError("; ".join(problems))
    return TreeModel(structure, tuple(np.atleast_2d(spec.tables[n]) for n in structure.nodes))


def _hidden(model: TreeModel, name: str, what: str) -> None:
    s = model.structure
    if name not in s.nodes or not s.hidden[s.index(name)]:
        hidden = [s.nodes[h] for h in s.hidden_nodes]
        raise StructureError(f"{what} {name!r} is not a hidden node; hidden nodes: {hidden}")


def _adjacent(model: TreeModel, a: str, b: str) -> None:
    if b not in neighbours(model, a):
        raise StructureError(f"{b!r} is not a neighbour of {a!r}; its neighbours are "
                             f"{neighbours(model, a)}")


def _root_items(model: TreeModel, pivot: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Every child of the root keeps its evidence from the pivot's side (SI / SD)."""
    s = model.structure
    return tuple((s.nodes[c], frozenset({pivot})) for c in s.children[s.root])


def _candidate(data: Dataset, operation: str, label: str, spec: Spec,
               sources: dict[str, tuple[str, frozenset[str]]]) -> Candidate:
    model = model_of(data, spec)
    s = model.structure
    return Candidate(operation, label, model,
                     tuple(sources[s.nodes[c]] for c in s.children[s.root]))


def add_node(model: TreeModel, data: Dataset, h: str, pair: tuple[str, str], name: str,
             smoothing: float = 0.0) -> Candidate:
    """Node introduction: hidden node ``name`` between ``h`` and its neighbours ``pair``.

    ``smoothing`` mixes ``P(H | N)`` with ``P(H)`` in that proportion (the items' tables stay
    as they are): EM never moves an entry away from zero, so a local EM from the exact copy
    (``smoothing=0``, which keeps the distribution) would stay there."""
    _hidden(model, h, "node introduction at")
    x1, x2 = pair
    if x1 == x2:
        raise StructureError(f"node introduction needs two different neighbours, got {x1!r} twice")
    _adjacent(model, h, x1)
    _adjacent(model, h, x2)
    if name in model.structure.nodes:
        raise StructureError(f"the new hidden node's name {name!r} is already taken")
    spec = spec_of(model, h)
    k = spec.cards[h]
    card = min(k, _bound([k, _card(spec, x1), _card(spec, x2)]))
    fold = np.zeros((k, card))
    fold[np.arange(k), np.arange(k) % card] = 1.0
    p_h = spec.tables[h][0]
    p_new = p_h @ fold
    joint = p_h[:, None] * fold                                   # (k, card): P(h, n)
    given = np.where(p_new > 0, joint / np.where(p_new > 0, p_new, 1.0), p_h[:, None]).T
    children = {**spec.children, h: [c for c in spec.children[h] if c not in pair],
                name: [h, x1, x2]}
    tables = {**spec.tables, name: p_new[None, :],
              h: (1.0 - smoothing) * given + smoothing * p_h[None, :]}
    for x in pair:
        tables[x] = given @ spec.tables[x]                        # P(x | n), merged on a fold
    new = Spec(name, children, {**spec.cards, name: card}, tables)
    sources = {h: (h, frozenset(pair)), x1: (x1, frozenset({h})), x2: (x2, frozenset({h}))}
    return _candidate(data, "add_node", f"{name} over {x1}, {x2} (from {h})", new, sources)


def remove_node(model: TreeModel, data: Dataset, h: str, g: str) -> Candidate:
    """Node deletion: hidden ``g`` (a neighbour of hidden ``h``) removed, its other neighbours
    joined to ``h``."""
    _hidden(model, h, "node deletion into")
    _hidden(model, g, "node deletion of")
    _adjacent(model, h, g)
    spec = spec_of(model, h)
    moved = spec.children[g]
    children = {v: list(k) for v, k in spec.children.items() if v != g}
    children[h] = [c for c in spec.children[h] if c != g] + moved
    tables = {v: t for v, t in spec.tables.items() if v != g}
    for c in moved:
        tables[c] = spec.tables[g] @ spec.tables[c]
    cards = {v: c for v, c in spec.cards.items() if v != g}
    sources = {c: (c, frozenset({h})) for c in spec.children[h] if c != g}
    sources.update({c: (c, frozenset({g})) for c in moved})
    return _candidate(data, "remove_node", f"{g} into {h}", Spec(h, children, cards, tables),
                      sources)


def relocate(model: TreeModel, data: Dataset, z: str, h: str, g: str) -> Candidate:
    """Node relocation: ``z``, a neighbour of hidden ``h``, moved to ``h``'s hidden neighbour
    ``g``."""
    _hidden(model, h, "relocation from")
    _hidden(model, g, "relocation to")
    _adjacent(model, h, g)
    _adjacent(model, h, z)
    if z == g:
        raise StructureError(f"cannot relocate {g!r} to itself")
    spec = spec_of(model, g)
    children = {**spec.children, h: [c for c in spec.children[h] if c != z],
                g: [*spec.children[g], z]}
    tables = {**spec.tables, z: spec.tables[h] @ spec.tables[z]}
    sources = {c: (c, frozenset({g})) for c in spec.children[g]}
    sources[h] = (h, frozenset({g, z}))
    sources[z] = (z, frozenset({h}))
    return _candidate(data, "relocate", f"{z} from {h} to {g}",
                      Spec(g, children, spec.cards, tables), sources)


def add_state(model: TreeModel, data: Dataset, h: str, state: int, perturbation: float,
              rng: np.random.Generator) -> Candidate:
    """State introduction: state ``state`` of ``h`` split in two (Def 4.2; perturbation 0
    keeps the distribution)."""
    _hidden(model, h, "state introduction at")
    rooted = walk(model, model.structure.index(h))
    part = lc_part(rooted)
    if not 0 <= state < part.n_classes:
        raise StructureError(f"{h!r} has no state {state}")
    start = split_starts(part, state, 1, perturbation, rng)[0]
    new = with_lc_part(rooted, substitute(part, state, start))
    problems = regularity_problems(new.structure)
    if problems:
        raise StructureError("; ".join(problems))
    return Candidate("add_state", f"{h}: {part.n_classes} -> {part.n_classes + 1} "
                     f"(split {state})", new, _root_items(new, h))


def remove_state(model: TreeModel, data: Dataset, h: str, a: int, b: int) -> Candidate:
    """State deletion: states ``a`` and ``b`` of ``h`` merged (Def 5.2)."""
    _hidden(model, h, "state deletion at")
    rooted = walk(model, model.structure.index(h))
    part = lc_part(rooted)
    if part.n_classes < 2:
        raise StructureError(f"{h!r} has one state; there is none to delete")
    if a == b or not (0 <= a < part.n_classes and 0 <= b < part.n_classes):
        raise StructureError(f"states {a} and {b} of {h!r} cannot be merged")
    new = with_lc_part(rooted, merge(part, a, b))
    problems = regularity_problems(new.structure)
    if problems:
        raise StructureError("; ".join(problems))
    return Candidate("remove_state", f"{h}: {part.n_classes} -> {part.n_classes - 1} "
                     f"(merge {a}, {b})", new, _root_items(new, h))


def _card(spec: Spec, name: str) -> int:
    return spec.cards.get(name, int(spec.tables[name].shape[1]))


def _bound(cards: list[int]) -> int:
    return math.prod(cards) // max(cards)
