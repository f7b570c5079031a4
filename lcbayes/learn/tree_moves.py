"""The moves of the HLC cardinality searches on a fixed skeleton (Karčiauskas 2005, Ch. 7).

Every operation acts at the root (Defs 7.1-7.3): to change hidden node ``H_i``, the model is
first re-rooted at ``H_i`` (:func:`.root_walk.walk_root`, which leaves the joint unchanged),
then the latent class operation of :mod:`.operations` is applied to the root and its
children's tables (:func:`.trees.lc_part`); every deeper table is kept.

:class:`TreeReuseMoves` (HLCSplitMerge, Procedures 7.1-7.4):

* ``up`` (HLCSplit): for every hidden node, the latent class Split at the root: for every root
  state ``s``, ``n_splits`` random splits fitted as two-state-root models on the soft sub-data
  ``n_j P(H_i = s | d_j)`` (partial EM: only the root and its children's tables move, the deeper
  ones are held), substituted back; the substitution with the highest log-likelihood gets a
  full EM of every table. The best node's candidate (by score) is the move's.
* ``down`` (HLCMerge): for every hidden node with two states or more, all pairwise merges of
  the root's states as the starts of one multiple-restart EM (``q = 10``); the best node's.
* ``sideways`` (HLCAdjust): node by node, Split of the Merge result, then the merges of each
  split's new states with the old ones (as in :class:`.moves.ReuseMoves`); the first node whose
  candidate gains more than ``delta`` wins.

:class:`TreeRandomMoves` (HLCStandard3, Procedures 7.5-7.8): HLCIncrement / HLCDecrement change
one node's cardinality by one and fit ``starts`` random models (``q = 2``), the best node's
candidate is the move's; HLCNewParams refits the same cardinalities from random starts.

The search allows hidden cardinality 1 and irregular intermediate models, as the thesis does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ..params import to_tables
from .moves import Context, Scored
from .operations import merge, split_starts, substitute
from .restarts import prune_em, root_posteriors, run_lanes
from .root_walk import walk_root
from .trees import (
    TreeModel,
    lc_part,
    padded_structure,
    random_tree,
    with_cardinalities,
    with_lc_part,
)

__all__ = ["TreeRandomMoves", "TreeReuseMoves", "fit_trees", "tree_scored", "walk"]


def walk(model: TreeModel, node: int) -> TreeModel:
    """``model`` re-rooted at hidden node ``node``."""
    structure, params = walk_root(model.structure, model.params, model.structure.nodes[node])
    return TreeModel(structure, tuple(np.asarray(t) for t in to_tables(structure, params)))


def fit_trees(ctx: Context, starts: list[TreeModel], q: int, free=None, weights=None,
              groups=None) -> list[tuple[TreeModel, float]]:
    """Multiple-restart EM of HLC starting models with one structure: per group, the best
    model and its log-likelihood (``free``: the nodes whose tables move, default all)."""
    padded = padded_structure(starts[0].structure)
    packed = [s.pack(padded, free) for s in starts]
    flats, active, values = (np.stack(parts) for parts in zip(*packed, strict=True))
    return [(starts[0].unpack(x, padded), ll) for x, ll, _ in
            prune_em(padded, ctx.data, flats, active, values, q, ctx.em, weights, groups,
                     ctx.deadline)]


def tree_scored(ctx: Context, model: TreeModel, loglik: float) -> Scored:
    """``model`` with its log-likelihood and score."""
    return Scored(model, loglik, ctx.scorer(model.structure, model.tables, loglik))


def _best(candidates: Sequence[Scored | None]) -> Scored | None:
    found = [c for c in candidates if c is not None]
    return max(found, key=lambda c: c.score) if found else None


@dataclass
class TreeReuseMoves:
    """HLCSplitMerge's moves (module docstring); remembers each node's last split and merge
    for HLCAdjust."""

    ctx: Context
    _walks: dict = field(default_factory=dict, repr=False)
    _splits: dict = field(default_factory=dict, repr=False)
    _merges: dict = field(default_factory=dict, repr=False)

    def _hidden(self, model: TreeModel) -> tuple[int, ...]:
        return model.structure.hidden_nodes

    def candidates(self, rooted: TreeModel) -> list[TreeModel]:
        """``L_s`` for every state ``s`` of the root of ``rooted``: its split after the
        partial EM on the soft sub-data."""
        key = (id(rooted.tables), rooted.structure)
        if key in self._splits:
            return self._splits[key][1]
        ctx, s = self.ctx, rooted.structure
        c = s.cardinalities[s.root]
        padded = padded_structure(s)
        post = root_posteriors(padded, rooted.pack(padded)[0], ctx.data)[:c]
        part = lc_part(rooted)
        starts = [with_lc_part(rooted, start) for state in range(c)
                  for start in split_starts(part, state, ctx.n_splits, ctx.perturbation,
                                            ctx.rng)]
        fitted = fit_trees(ctx, starts, ctx.q_split, frozenset({s.root, *s.children[s.root]}),
                           ctx.data.counts[None, :] * post, np.repeat(np.arange(c), ctx.n_splits))
        found = [with_lc_part(rooted, substitute(part, state, lc_part(f)))
                 for state, (f, _) in enumerate(fitted)]
        self._splits[key] = (rooted, found)  # keeps ``rooted`` alive, so its id stays unique
        return found

    def _split(self, rooted: TreeModel) -> Scored:
        found = self.candidates(rooted)
        padded = padded_structure(found[0].structure)
        packed = [f.pack(padded) for f in found]
        flats, active, values = (np.stack(parts) for parts in zip(*packed, strict=True))
        weights = np.broadcast_to(self.ctx.data.counts, (len(found), self.ctx.data.n_patterns))
        logliks = run_lanes(padded, self.ctx.data, weights, flats, active, values, 0,
                            self.ctx.em)[1]
        model, loglik = fit_trees(self.ctx, [found[int(np.argmax(logliks))]], 1)[0]
        return tree_scored(self.ctx, model, loglik)

    def _merge(self, rooted: TreeModel) -> Scored | None:
        key = (id(rooted.tables), rooted.structure)
        if key not in self._merges:
            s = rooted.structure
            c, part = s.cardinalities[s.root], lc_part(rooted)
            result = None
            if c >= 2:
                starts = [with_lc_part(rooted, merge(part, a, b))
                          for a, b in combinations(range(c), 2)]
                result = tree_scored(self.ctx, *fit_trees(self.ctx, starts, self.ctx.q_merge)[0])
            self._merges[key] = (rooted, result)
        return self._merges[key][1]

    def _rooted(self, current: Scored, node: int) -> TreeModel:
        """``current`` re-rooted at ``node``, the same object every time (so the split and
        merge of a node are computed once per model)."""
        key = (id(current.model.tables), node)
        if key not in self._walks:
            self._walks[key] = (current.model, walk(current.model, node))
        return self._walks[key][1]

    def up(self, current: Scored) -> Scored | None:
        cards = current.model.structure.cardinalities
        return _best([self._split(self._rooted(current, h))
                      for h in self._hidden(current.model) if not self.ctx.expired()
                      and (self.ctx.max_classes is None or cards[h] < self.ctx.max_classes)])

    def down(self, current: Scored) -> Scored | None:
        return _best([self._merge(self._rooted(current, h))
                      for h in self._hidden(current.model) if not self.ctx.expired()])

    def sideways(self, current: Scored) -> Scored | None:
        """HLCAdjust: the first node's candidate that gains more than ``delta``, else the
        best candidate found (which the search then rejects)."""
        ctx, tried = self.ctx, []
        for h in self._hidden(current.model):
            if ctx.expired():
                break
            rooted = self._rooted(current, h)
            own = self.candidates(rooted)
            merged = self._merge(rooted)
            if merged is not None:
                tried.append(self._split(merged.model))
                if tried[-1].score > current.score + ctx.delta:
                    return tried[-1]
            c = rooted.structure.cardinalities[rooted.structure.root]
            starts = [with_lc_part(found, merge(lc_part(found), a, b))
                      for s, found in enumerate(own)
                      for a in (s, c) for b in range(c + 1) if b not in (s, c)]
            if starts:
                tried.append(tree_scored(ctx, *fit_trees(ctx, starts, ctx.q_merge)[0]))
                if tried[-1].score > current.score + ctx.delta:
                    return tried[-1]
        return _best(tried)


@dataclass
class TreeRandomMoves:
    """HLCStandard3's moves (module docstring)."""

    ctx: Context

    def _random(self, model: TreeModel, node: int, change: int) -> Scored | None:
        s = model.structure
        cards = s.cardinalities[node] + change
        limit = self.ctx.max_classes
        if cards < 1 or (change > 0 and limit is not None and cards > limit):
            return None
        structure = with_cardinalities(s, {node: cards})
        starts = [random_tree(structure, self.ctx.rng) for _ in range(self.ctx.starts)]
        return tree_scored(self.ctx, *fit_trees(self.ctx, starts, self.ctx.q_split)[0])

    def _each(self, current: Scored, change: int) -> Scored | None:
        return _best([self._random(current.model, h, change)
                      for h in current.model.structure.hidden_nodes if not self.ctx.expired()])

    def up(self, current: Scored) -> Scored | None:
        return self._each(current, +1)

    def down(self, current: Scored) -> Scored | None:
        return self._each(current, -1)

    def sideways(self, current: Scored) -> Scored | None:
        return self._random(current.model, current.model.structure.root, 0)
