"""A bottom-up HLC build for many items, in the spirit of HLTA (Liu, Zhang & Chen 2014; Chen,
Zhang, Liu, Poon & Chen 2017, "Latent tree models for hierarchical topic detection"; the
``kmpoon/hlta`` package's defaults: UD threshold 3, at most 10 items an island, at most 15 nodes
at the top).

Level by level, over the current variables (the items, then the hidden variables of the level
below):

1. **islands** (:func:`islands`): start from the two variables of highest mutual information
   and the one closest to them; add the variable closest to the island (largest mutual
   information with a member) while the island stays *unidimensional*: the **UD test** compares
   a latent class model over the island with the variable added against the best two-latent
   model in which the new variable and its closest member hang from a second hidden node, and
   stops the island when BIC prefers the two latents by more than the threshold (or at the size
   limit); on a failed test the closest member leaves the island too (when three others
   stay), as in HLTA, where the island is the first latent's part. Every fit is a local EM of
   :mod:`.tree_local` on the full data's patterns (binary hidden variables, 8 random starts as
   lanes of one program; the two-latent model by node introduction and rounds of local EM on
   each hidden node).
2. each island becomes a latent class model with a binary hidden variable; each row is
   assigned its most probable state, which gives the data of the next level. Variables left
   out of every island (fewer than three left) go up as they are.
3. levels are built until at most ``max_top`` variables remain (default 1: the whole
   hierarchy, up to one root; HLTA's own default of 15 top nodes stops earlier), or no island
   forms (two variables left). The hidden ones on top are then linked by a Chow-Liu tree
   (maximum spanning tree of the mutual information of their assigned states) and any item
   still on top hangs from the hidden variable it shares most information with.

The tables come from the island fits (the links: frequencies of the assigned states, plus one)
and a global multiple-restart EM of the whole tree finishes the build. Past the search's
deadline no new island starts (past the first): the variables left go to the top as they are.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .. import scores
from ..constructors import hlc
from ..data import Dataset
from .moves import Context, Scored
from .tree_local import local_em
from .tree_moves import fit_trees, tree_scored, walk
from .tree_operators import Candidate, add_node
from .trees import TreeModel, random_tree

__all__ = ["MAX_ISLAND", "MAX_TOP", "UD_THRESHOLD", "build_tree", "islands",
           "mutual_information"]

#: HLTA's UD threshold and island size; the number of top nodes at which the build stops (HLTA:
#: 15; here the whole hierarchy is built).
UD_THRESHOLD, MAX_ISLAND, MAX_TOP = 3.0, 10, 1
#: Rounds of local EM over the two hidden nodes of the UD test's two-latent model.
UD_ROUNDS = 2


def mutual_information(data: Dataset) -> np.ndarray:
    """``(J, J)`` empirical mutual information (nats) of every pair of columns, each pair on
    the rows where both are observed."""
    cards = data.cardinalities
    starts = np.cumsum([0, *cards])
    one_hot = np.zeros((data.n_patterns, starts[-1]))
    for j in range(len(cards)):
        codes = data.patterns[:, j]
        seen = codes >= 0
        one_hot[np.flatnonzero(seen), starts[j] + codes[seen]] = 1.0
    joint = one_hot.T @ (data.counts[:, None] * one_hot)
    out = np.zeros((data.n_columns, data.n_columns))
    for a, b in combinations(range(data.n_columns), 2):
        p = joint[starts[a]:starts[a + 1], starts[b]:starts[b + 1]]
        total = p.sum()
        if total <= 0:
            continue
        p = p / total
        outer = np.outer(p.sum(axis=1), p.sum(axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[a, b] = out[b, a] = float(np.nansum(np.where(p > 0, p * np.log(p / outer), 0)))
    return out


class _Fitter:
    """Latent class and two-latent models of subsets of the columns of one data set."""

    def __init__(self, ctx: Context, data: Dataset, names: list[str]):
        self.ctx, self.data, self.names = ctx, data, names
        self.n_rows = max(data.n_observed_rows, 1)

    def bic(self, fit) -> float:
        return scores.bic(fit.loglik, fit.model.structure.n_parameters, self.n_rows)

    def latent_class(self, items: list[str], warm: TreeModel | None = None):
        """The best binary latent class model over ``items`` from 8 starts (``warm``: a model
        over all but the last item, extended by the last item's uniform table)."""
        name = self._name(items)
        structure = hlc(self.data, {name: items}, {name: 2})
        starts = [random_tree(structure, self.ctx.rng) for _ in range(8)]
        if warm is not None:
            tables = {warm.structure.nodes[i]: t for i, t in enumerate(warm.tables)}
            tables[name] = tables.pop(warm.structure.nodes[warm.structure.root])
            last = items[-1]
            tables[last] = np.full((2, self.data.cardinalities[self.data.columns.index(last)]),
                                   1.0 / self.data.cardinalities[self.data.columns.index(last)])
            starts[0] = TreeModel(structure, tuple(tables[n] for n in structure.nodes))
        leaves = tuple((c, frozenset[str]()) for c in structure.observed_names)
        fits = local_em(starts[0], self.data, [Candidate("start", "", s, leaves)
                                               for s in starts], self.ctx.em.tol)
        return max(fits, key=lambda f: f.loglik)

    def two_latent(self, model: TreeModel, pair: tuple[str, str]):
        """``pair`` moved under a second hidden node (node introduction), then rounds of local
        EM on each hidden node."""
        root = model.structure.nodes[model.structure.root]
        fit = None
        current = add_node(model, self.data, root, pair, self._name(model.structure.nodes),
                           0.1)
        for _ in range(UD_ROUNDS):
            for h in (current.model.structure.nodes[current.model.structure.root], root):
                rooted = walk(current.model if fit is None else fit.model,
                              (current.model if fit is None else fit.model).structure.index(h))
                s = rooted.structure
                items = tuple((s.nodes[c], frozenset({h})) for c in s.children[s.root])
                fit = local_em(rooted, self.data, [Candidate("refit", h, rooted, items)],
                               self.ctx.em.tol)[0]
        return fit

    def _name(self, items) -> str:
        return next(f"_U{i}" for i in range(len(self.names) + 2)
                    if f"_U{i}" not in self.names and f"_U{i}" not in items)


def islands(ctx: Context, data: Dataset, threshold: float = UD_THRESHOLD,
            max_island: int = MAX_ISLAND) -> tuple[list[tuple[list[str], TreeModel]], list[str]]:
    """The islands of ``data``'s columns (module docstring), each with its fitted latent class
    model, and the columns left over."""
    mi = mutual_information(data)
    names = list(data.columns)
    fitter = _Fitter(ctx, data, names)
    left = list(range(len(names)))
    found: list[tuple[list[str], TreeModel]] = []
    while len(left) >= 3 and not (found and ctx.expired()):
        a, b = max(combinations(left, 2), key=lambda p: mi[p[0], p[1]])
        members = [a, b]
        fit = None
        while len(members) < min(len(left), max_island):
            z = max((j for j in left if j not in members),
                    key=lambda j: mi[j, members].max())
            grown = fitter.latent_class([names[j] for j in [*members, z]],
                                        None if fit is None else fit.model)
            if len(members) >= 3:
                w = members[int(np.argmax(mi[z, members]))]
                split = fitter.two_latent(grown.model, (names[z], names[w]))
                if fitter.bic(split) - fitter.bic(grown) > threshold:
                    if len(members) > 3:      # W goes back to the pool with Z (HLTA)
                        members.remove(w)
                        fit = fitter.latent_class([names[j] for j in members])
                    break
            members.append(z)
            fit = grown
        assert fit is not None  # max_island > 2 members: the loop above ran
        found.append(([names[j] for j in members], fit.model))
        left = [j for j in left if j not in members]
    return found, [names[j] for j in left]


def _assign(model: TreeModel, data: Dataset) -> np.ndarray:
    """Each row's most probable state of a latent class model over some of ``data``'s
    columns."""
    s = model.structure
    log = np.log(model.tables[s.root][0])[None, :].repeat(data.n_patterns, axis=0)
    for c in s.children[s.root]:
        codes = data.patterns[:, data.columns.index(s.nodes[c])]
        with np.errstate(divide="ignore"):
            rows = np.log(model.tables[c]).T[np.maximum(codes, 0)]
        log = log + np.where(codes[:, None] >= 0, rows, 0.0)
    return np.argmax(log, axis=1)[data.pattern_index]


def _conditional(parent: np.ndarray, child: np.ndarray, r_parent: int, r_child: int):
    """``P(child | parent)`` from paired codes (plus one in every cell; missing rows out)."""
    seen = (parent >= 0) & (child >= 0)
    counts = np.ones((r_parent, r_child))
    np.add.at(counts, (parent[seen], child[seen]), 1.0)
    return counts / counts.sum(axis=1, keepdims=True)


def _chow_liu(mi: np.ndarray, nodes: list[int]) -> list[tuple[int, int]]:
    """Edges ``(parent, child)`` of the maximum spanning tree of ``mi`` over ``nodes`` (Prim),
    directed away from ``nodes[0]``."""
    inside, edges = [nodes[0]], []
    while len(inside) < len(nodes):
        a, b = max(((a, b) for a in inside for b in nodes if b not in inside),
                   key=lambda e: mi[e[0], e[1]])
        edges.append((a, b))
        inside.append(b)
    return edges


def build_tree(ctx: Context, threshold: float = UD_THRESHOLD, max_island: int = MAX_ISLAND,
               max_top: int = MAX_TOP, note=None) -> Scored:
    """The bottom-up build (module docstring) of an HLC model of ``ctx.data``, after a global
    EM. ``note(text)`` hears of every level."""
    data = ctx.data
    codes = {c: data.codes[:, j] for j, c in enumerate(data.columns)}
    card = dict(zip(data.columns, data.cardinalities, strict=True))
    children: dict[str, list[str]] = {}
    tables: dict[str, np.ndarray] = {}
    prior: dict[str, np.ndarray] = {}
    level, top = data, list(data.columns)
    while True:
        found, left = islands(ctx, level, threshold, max_island)
        if not found:
            break
        for members, model in found:
            name = next(f"H{i}" for i in range(len(children) + len(card) + 1)
                        if f"H{i}" not in children and f"H{i}" not in card)
            s = model.structure
            children[name], card[name] = members, 2
            tables.update({s.nodes[c]: model.tables[c] for c in s.children[s.root]})
            prior[name] = model.tables[s.root][0]
            codes[name] = _assign(model, level)
        grouped = {c for kids in children.values() for c in kids}
        top = [n for n in children if n not in grouped] + [v for v in left if v not in children]
        if note is not None:
            note(f"level: {len(found)} islands, {len(top)} variables on top")
        if len(top) <= max_top or ctx.expired():
            break
        level = Dataset.from_codes(np.column_stack([codes[v] for v in top]), columns=top,
                                   cardinalities=[card[v] for v in top])
    on_top = Dataset.from_codes(np.column_stack([codes[v] for v in top]), columns=top,
                                cardinalities=[card[v] for v in top])
    mi = mutual_information(on_top)
    hidden = [j for j, v in enumerate(top) if v in children]
    hidden.sort(key=lambda j: -mi[j, hidden].sum())
    root = top[hidden[0]]
    for a, b in _chow_liu(mi, hidden):
        children[top[a]].append(top[b])
        tables[top[b]] = _conditional(codes[top[a]], codes[top[b]], 2, 2)
    for j, v in enumerate(top):
        if v not in children:
            h = top[max(hidden, key=lambda i: mi[i, j])]
            children[h].append(v)
            tables[v] = _conditional(codes[h], codes[v], 2, card[v])
    tables[root] = prior[root][None, :]
    structure = hlc(data, children, {h: 2 for h in children})
    model = TreeModel(structure, tuple(tables[n] for n in structure.nodes))
    return tree_scored(ctx, *fit_trees(ctx, [model], 1)[0])
