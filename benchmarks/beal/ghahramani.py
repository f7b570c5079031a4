"""Beal & Ghahramani (2006), *Variational Bayesian learning of directed graphical models with
hidden variables*, §4: scoring the 136 bipartite structures.

The model class (Beal & Ghahramani §4): two binary hidden roots ``s1``, ``s2`` and four five-valued
observed nodes ``y1 .. y4``; each observed node has one of four hidden parent sets, coded
* ``0``: none, ``1``: ``{s1}``, ``2``: ``{s2}``, ``3``: ``{s1, s2}``.

A labelled graph is a 4-tuple of codes (``y1 .. y4``); there are ``4**4 = 256`` of them. The hidden
variables are exchangeable, so a graph and its *swap* (codes 1 and 2 exchanged) are the same
structure: there are ``(256 + 16) / 2 = 136`` distinct structures, each represented by its
canonical form ``min(t, swap(t))`` (:func:`parent_codes`, sorted). Both hidden nodes are always in
the model, even when childless: each adds one parameter to ``d`` (Beal & Ghahramani §4).

CPTs follow lcbayes' format ``{node: array of shape (*parent cardinalities, r)}``. A two-parent
CPT has its parents in the order ``(s1, s2)``, so its flattened row is ``l = 2 s1 + s2`` (``s2``
fastest), the paper's row order ``[1 1], [1 2], [2 1], [2 2]`` shifted to 0-based states.

**Categories.** Hidden states and observed categories are 0-based: the paper's category ``k``
(``1 .. 5``) of ``y_j`` is code and label ``k - 1`` here (labels ``0 .. 4``), and the paper's
hidden state ``[2 2]`` is ``(s1, s2) = (1, 1)``.

**Batched scoring.** Every structure is the *host* (fully connected, :func:`full_structure`,
``d = 66``) with some links removed, i.e. with some rows of the host CPTs tied together.
:func:`pooling_matrices` gives, per host node, the 0/1 matrix ``P`` of that tying; pooled
(expected) counts of a sub-structure, spread back onto host rows, are ``P @ N_host``, and a host
CPT with ``theta_host[l] = theta_sub[config_sub(l)]`` (:func:`host_params`) defines the same
distribution as the sub-structure. So one host-shaped engine, ``vmap``-ed over
:func:`batched_pooling`, can score all 136 structures with static shapes.

Example::

    from beal import ghahramani as bg              # benchmarks/ on sys.path

    datasets = bg.nested_datasets(seed=0)           # {n: Dataset}, nested prefixes
    structures = [bg.structure_from_codes(c) for c in bg.parent_codes()]
    d = [bg.n_parameters(c) for c in bg.parent_codes()]
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

import numpy as np

from lcbayes import alias
from lcbayes.constructors import dag
from lcbayes.data import Dataset
from lcbayes.errors import StructureError
from lcbayes.params import simulate
from lcbayes.structure import Structure

__all__ = [
    "ALTERNATIVE_TRUE_CODES",
    "CONFIG_MAPS",
    "D_HISTOGRAM",
    "HIDDEN",
    "N_CATEGORIES",
    "OBSERVED",
    "PAPER_TABLE2",
    "PAPER_TABLE2_COLUMNS",
    "PARENT_SETS",
    "SIZES",
    "TRUE_CODES",
    "TRUE_PARAMS",
    "TRUE_PARAMS_RAW",
    "batched_pooling",
    "canonical",
    "d_histogram",
    "full_structure",
    "host_params",
    "is_substructure",
    "is_symmetric",
    "links",
    "log_alias",
    "n_parameters",
    "nested_datasets",
    "parent_codes",
    "pooling_matrices",
    "rank_of",
    "structure_from_codes",
    "structure_index",
    "swap",
    "template_dataset",
    "true_params",
]

Codes = tuple[int, int, int, int]

#: Hidden nodes and their cardinalities (both binary, no parents).
HIDDEN: dict[str, int] = {"s1": 2, "s2": 2}
#: Observed nodes, in data-column order.
OBSERVED: tuple[str, ...] = ("y1", "y2", "y3", "y4")
#: Number of categories of every observed node (labels ``0 .. 4``).
N_CATEGORIES = 5
#: Hidden parent set of each code; two-parent sets are ordered ``(s1, s2)``.
PARENT_SETS: tuple[tuple[str, ...], ...] = ((), ("s1",), ("s2",), ("s1", "s2"))
#: Per code, the sub-structure's parent configuration of every host configuration
#: ``l = 2 s1 + s2``: ``config_sub(l) = CONFIG_MAPS[code][l]``.
CONFIG_MAPS: tuple[tuple[int, int, int, int], ...] = (
    (0, 0, 0, 0),  # no parent: one configuration
    (0, 0, 1, 1),  # {s1}: l // 2
    (0, 1, 0, 1),  # {s2}: l % 2
    (0, 1, 2, 3),  # {s1, s2}: l itself
)

#: The true generating structure (Beal & Ghahramani §4.1): ``s1 -> y1``, ``s2 -> y4`` and both
#: hidden variables -> ``y2``, ``y3`` (6 of 8 links, ``d = 50``). [UNSURE] Which hidden variable
#: is the single parent of ``y1`` and which of ``y4`` is visible only in the paper's Fig. 1; this
#: is the most likely (mirror-symmetric) reading. Every function taking ``codes`` accepts the
#: alternative.
TRUE_CODES: Codes = (1, 3, 3, 2)
#: The other reading of Fig. 1: ``y1`` and ``y4`` share the single parent ``s1`` (also ``d = 50``;
#: a different structure of the 136). ``TRUE_PARAMS`` fits it unchanged (same CPT shapes).
ALTERNATIVE_TRUE_CODES: Codes = (1, 3, 3, 1)

#: The paper's true parameters (Beal & Ghahramani §4.1), as printed (rows sum to 1 only up to
#: rounding).
#: Two-parent rows are ``(s1, s2) = [1 1], [1 2], [2 1], [2 2]``, i.e. axes ``(s1, s2)``.
TRUE_PARAMS_RAW: dict[str, np.ndarray] = {
    "s1": np.array([0.12, 0.88]),
    "s2": np.array([0.08, 0.92]),
    "y1": np.array([
        [0.03, 0.03, 0.64, 0.02, 0.27],
        [0.18, 0.15, 0.22, 0.19, 0.27],
    ]),
    "y2": np.array([
        [0.10, 0.54, 0.07, 0.14, 0.15],
        [0.04, 0.15, 0.59, 0.05, 0.16],
        [0.20, 0.08, 0.36, 0.17, 0.18],
        [0.19, 0.45, 0.10, 0.09, 0.17],
    ]).reshape(2, 2, 5),
    "y3": np.array([
        [0.11, 0.47, 0.12, 0.30, 0.01],
        [0.27, 0.07, 0.16, 0.25, 0.25],
        [0.52, 0.14, 0.15, 0.02, 0.17],
        [0.04, 0.00, 0.37, 0.33, 0.25],
    ]).reshape(2, 2, 5),
    "y4": np.array([
        [0.10, 0.08, 0.43, 0.03, 0.36],
        [0.30, 0.14, 0.07, 0.04, 0.45],
    ]),
}


def _renormalised(params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    out = {}
    for name, cpt in params.items():
        cpt = np.asarray(cpt, dtype=np.float64)
        cpt = cpt / cpt.sum(axis=-1, keepdims=True)
        cpt.setflags(write=False)
        out[name] = cpt
    return out


#: ``TRUE_PARAMS_RAW`` with every row renormalised to sum to one (read-only arrays), in lcbayes'
#: params format for :func:`structure_from_codes` ``(TRUE_CODES)`` (or the alternative reading).
TRUE_PARAMS: dict[str, np.ndarray] = _renormalised(TRUE_PARAMS_RAW)
for _cpt in TRUE_PARAMS_RAW.values():
    _cpt.setflags(write=False)

#: The 20 data sizes of the study (Beal & Ghahramani §4.1); the data sets are nested prefixes.
SIZES: tuple[int, ...] = (
    10, 20, 40, 80, 110, 160, 230, 320, 400, 430, 480, 560, 640, 800, 960, 1120, 1280, 2560,
    5120, 10240,
)

#: Number of structures with each dimension ``d`` (Beal & Ghahramani §4).
D_HISTOGRAM: dict[int, int] = {
    18: 1, 22: 4, 26: 12, 30: 20, 34: 20, 38: 24, 42: 22, 46: 12, 50: 12, 54: 4, 58: 4, 66: 1,
}

#: Columns of :data:`PAPER_TABLE2`; ``*`` marks scores without the alias correction.
PAPER_TABLE2_COLUMNS: tuple[str, ...] = (
    "MAP", "BIC*", "BICp*", "CS*", "VB*", "BIC", "BICp", "CS", "VB", "AIS(26)",
)
_TABLE2_ROWS = (
    (10, 21, 127, 55, 129, 122, 127, 50, 129, 115, 20),
    (20, 12, 118, 64, 111, 124, 118, 64, 111, 124, 92),
    (40, 28, 127, 124, 107, 113, 127, 124, 107, 113, 17),
    (80, 8, 114, 99, 78, 116, 114, 99, 78, 116, 28),
    (110, 8, 109, 103, 98, 114, 109, 103, 98, 113, 6),
    (160, 13, 119, 111, 114, 83, 119, 111, 114, 81, 49),
    (230, 8, 105, 93, 88, 54, 105, 93, 88, 54, 85),
    (320, 8, 111, 101, 90, 44, 111, 101, 90, 33, 32),
    (400, 6, 101, 72, 77, 15, 101, 72, 77, 15, 22),
    (430, 7, 104, 78, 68, 15, 104, 78, 68, 14, 14),
    (480, 7, 102, 92, 80, 55, 102, 92, 80, 44, 12),
    (560, 9, 108, 98, 96, 34, 108, 98, 96, 31, 5),
    (640, 7, 104, 97, 105, 19, 104, 97, 105, 17, 28),
    (800, 9, 107, 102, 108, 35, 107, 102, 108, 26, 49),
    (960, 13, 112, 107, 76, 16, 112, 107, 76, 13, 1),
    (1120, 8, 105, 96, 103, 12, 105, 96, 103, 12, 1),
    (1280, 7, 90, 59, 8, 3, 90, 59, 6, 3, 11),
    (2560, 6, 25, 17, 11, 11, 25, 15, 11, 11, 1),
    (5120, 5, 6, 5, 1, 1, 6, 5, 1, 1, 1),
    (10240, 3, 2, 1, 1, 1, 2, 1, 1, 1, 1),
)
#: The paper's Table 2: rank (1 = best) of the true structure among the 136, per data size and
#: method, ``PAPER_TABLE2[n][column]``. The AIS cell at ``n = 1280`` is garbled as "1 1" in the
#: text; it is stored as 11, which fits the text's remark that AIS does not retain rank 1 reliably
#: until ``n = 2560`` (it may be 1). The ranks refer to the paper's unpublished data set and seed.
PAPER_TABLE2: dict[int, dict[str, int]] = {
    row[0]: dict(zip(PAPER_TABLE2_COLUMNS, row[1:], strict=True)) for row in _TABLE2_ROWS
}


# ---------------------------------------------------------------------- structures as codes
def _check_codes(codes: Sequence[int]) -> Codes:
    try:
        t = tuple(int(c) for c in codes)
    except (TypeError, ValueError):
        raise StructureError(f"codes must be 4 integers in 0..3, got {codes!r}") from None
    if len(t) != len(OBSERVED) or any(c not in (0, 1, 2, 3) for c in t):
        raise StructureError(
            f"codes must be 4 parent-set codes in 0..3 (0 none, 1 s1, 2 s2, 3 both) for "
            f"y1..y4, got {codes!r}"
        )
    return t  # type: ignore[return-value]


def swap(codes: Sequence[int]) -> Codes:
    """The same graph with ``s1`` and ``s2`` exchanged (codes 1 and 2 swapped)."""
    return tuple((0, 2, 1, 3)[c] for c in _check_codes(codes))  # type: ignore[return-value]


def canonical(codes: Sequence[int]) -> Codes:
    """Canonical representative ``min(t, swap(t))`` of a structure."""
    t = _check_codes(codes)
    return min(t, swap(t))


def is_symmetric(codes: Sequence[int]) -> bool:
    """Whether swapping ``s1`` and ``s2`` maps the graph to itself (all codes 0 or 3)."""
    t = _check_codes(codes)
    return swap(t) == t


def parent_codes() -> tuple[Codes, ...]:
    """The 136 distinct structures as sorted canonical 4-tuples of parent-set codes."""
    return tuple(sorted({canonical(t) for t in product(range(4), repeat=len(OBSERVED))}))


def structure_index(codes: Sequence[int]) -> int:
    """Position of the structure ``codes`` (any labelling) in :func:`parent_codes`."""
    return parent_codes().index(canonical(codes))


def links(codes: Sequence[int]) -> frozenset[tuple[str, str]]:
    """The graph's links as ``(hidden, observed)`` pairs."""
    t = _check_codes(codes)
    return frozenset((h, y) for y, c in zip(OBSERVED, t, strict=True) for h in PARENT_SETS[c])


def is_substructure(sub: Sequence[int], sup: Sequence[int], strict: bool = False) -> bool:
    """Whether structure ``sub`` is ``sup`` with links removed, for some labelling of the hidden
    variables (``strict``: at least one link removed)."""
    target = links(sup)
    for t in {_check_codes(sub), swap(sub)}:
        own = links(t)
        if own <= target and not (strict and own == target):
            return True
    return False


def n_parameters(codes: Sequence[int]) -> int:
    """Dimension ``d = sum_i q_i (r_i - 1)`` (Beal & Ghahramani §4): 2 for the hidden nodes plus
    4, 8, 8, 16 for an observed node with parent code 0, 1, 2, 3."""
    t = _check_codes(codes)
    hidden = sum(r - 1 for r in HIDDEN.values())
    return hidden + sum((N_CATEGORIES - 1) * len(set(CONFIG_MAPS[c])) for c in t)


def log_alias(codes: Sequence[int], rule: str = "children") -> float:
    """``ln S``, the number of posterior aliases of the structure (Beal & Ghahramani §3.2;
    :mod:`lcbayes.alias`).

    Args:
        codes: the structure.
        rule: ``"children"`` (default): ``S = |Aut_swap| * prod_h |s_h|!`` over the hidden nodes
            with at least one child, where ``|Aut_swap| = 2`` if both hidden nodes have children
            and swapping them maps the graph to itself, else 1. It gives ``ln 4`` for the true
            structure, ``ln 8`` for symmetric graphs where both hidden nodes have children,
            ``ln 2`` when exactly one has children and ``ln 1 = 0`` for the empty graph.
            [UNSURE] the paper never states ``S`` per structure; this rule is consistent with
            Table 2; it is :func:`lcbayes.alias.log_alias`, the general rule, applied to this
            class. ``"naive"``: ``S = 2! * 2! * 2! = 8`` for every structure.
    """
    t = _check_codes(codes)
    if rule == "naive":
        return math.log(math.factorial(len(HIDDEN)) * math.prod(
            math.factorial(r) for r in HIDDEN.values()
        ))
    if rule != "children":
        raise ValueError(f"rule must be 'children' or 'naive', got {rule!r}")
    return alias.log_alias(structure_from_codes(t))


# ---------------------------------------------------------------------- lcbayes structures
def template_dataset() -> Dataset:
    """A 5-row data set with columns ``y1 .. y4``, each holding every category ``0 .. 4``: the
    default ``data`` for building structures (its labels fix the observed cardinalities)."""
    codes = np.tile(np.arange(N_CATEGORIES)[:, None], (1, len(OBSERVED)))
    return Dataset.from_codes(codes, columns=OBSERVED, labels=[range(N_CATEGORIES)] * len(OBSERVED))


def structure_from_codes(codes: Sequence[int], data: Dataset | None = None) -> Structure:
    """The lcbayes structure (kind ``"dag"``) of the labelled graph ``codes``.

    The codes are used as given, not canonicalised (``(2, 3, 3, 1)`` is the swap of the true
    graph: the same structure with ``s1`` and ``s2`` renamed). Both hidden nodes are present even
    when childless; two-parent CPTs have axes ``(s1, s2)``.

    Args:
        codes: parent-set codes of ``y1 .. y4``.
        data: a data set with columns ``y1 .. y4`` (default :func:`template_dataset`, labels
            ``0 .. 4``); the structure takes its labels, so build it from the data you score.
    """
    t = _check_codes(codes)
    data = template_dataset() if data is None else data
    parents = {y: list(PARENT_SETS[c]) for y, c in zip(OBSERVED, t, strict=True)}
    return dag(data, parents=parents, hidden=HIDDEN)


def full_structure(data: Dataset | None = None) -> Structure:
    """The fully connected host structure (all 8 links, ``d = 66``); every other structure is it
    with links removed (rows of its observed CPTs tied, :func:`pooling_matrices`)."""
    return structure_from_codes((3, 3, 3, 3), data)


def true_params(codes: Sequence[int] = TRUE_CODES) -> dict[str, np.ndarray]:
    """A writable copy of :data:`TRUE_PARAMS`, checked against the CPT shapes of ``codes``."""
    structure = structure_from_codes(codes)
    params = {name: np.array(cpt) for name, cpt in TRUE_PARAMS.items()}
    for i, name in enumerate(structure.nodes):
        if params[name].shape != structure.cpt_shape(i):
            raise StructureError(
                f"the true CPT of {name!r} has shape {params[name].shape} but the structure "
                f"{tuple(codes)} needs {structure.cpt_shape(i)}"
            )
    return params


def nested_datasets(
    seed: int = 0,
    sizes: Iterable[int] = SIZES,
    params: Mapping[str, Any] = TRUE_PARAMS,
    codes: Sequence[int] = TRUE_CODES,
) -> dict[int, Dataset]:
    """Nested data sets ``{n: Dataset}`` simulated from the true structure.

    ``max(sizes)`` cases are drawn once with :func:`lcbayes.simulate` (``seed``; CPT rows are
    renormalised) from :func:`structure_from_codes` ``(codes)``; the data set of size ``n`` is
    their first ``n`` rows. Every data set has columns ``y1 .. y4`` with labels ``0 .. 4`` (all 5
    categories, even those unobserved at small ``n``), so every structure built from one fits all.
    The "column is constant" warning of small prefixes is silenced.
    """
    sizes = sorted({int(n) for n in sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"sizes must be positive integers, got {sizes!r}")
    structure = structure_from_codes(codes)
    full = simulate(structure, params, n=sizes[-1], seed=seed)
    labels = [tuple(range(N_CATEGORIES))] * len(OBSERVED)
    out = {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is constant.*")
        for n in sizes:
            out[n] = Dataset.from_codes(full.codes[:n], columns=OBSERVED, labels=labels)
    return out


# ---------------------------------------------------------------------- ranks
def rank_of(scores: Any, index: int, ties: str = "pessimistic") -> Any:
    """Rank (1 = highest score) of structure ``index`` among ``scores`` (last axis).

    Args:
        scores: ``(..., n_structures)`` scores, higher is better; leading axes are batched (e.g.
            ``(n_sizes, 136)``).
        index: the structure whose rank is wanted (e.g. ``structure_index(TRUE_CODES)``).
        ties: ``"pessimistic"`` (default): every other structure scoring at least as high ranks
            above it, ``1 + #{j != index: s_j >= s_index}`` (an int); ``"average"``: tied
            structures share the mean of their ranks, ``1 + #{s_j > s_index} + #{j != index:
            s_j == s_index} / 2`` (a float).

    NaN scores of other structures rank below everything (a failed fit never beats the target);
    a NaN score of the target itself raises ``ValueError``.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 0 or not -s.shape[-1] <= index < s.shape[-1]:
        raise ValueError(f"index {index} is out of range for scores of shape {s.shape}")
    target = s[..., index]
    if np.any(np.isnan(target)):
        raise ValueError("the score of the structure to rank is NaN")
    others = np.delete(s, index, axis=-1)
    others = np.where(np.isnan(others), -np.inf, others)
    greater = (others > target[..., None]).sum(axis=-1)
    equal = (others == target[..., None]).sum(axis=-1)
    if ties == "pessimistic":
        rank = 1 + greater + equal
        return int(rank) if rank.ndim == 0 else rank
    if ties == "average":
        rank = 1.0 + greater + equal / 2.0
        return float(rank) if rank.ndim == 0 else rank
    raise ValueError(f"ties must be 'pessimistic' or 'average', got {ties!r}")


# ---------------------------------------------------------------------- tying / pooling
def pooling_matrices(codes: Sequence[int]) -> dict[str, np.ndarray]:
    """Per node of the host (:func:`full_structure`), the 0/1 tying matrix of structure ``codes``.

    ``P[l, l'] = 1`` iff host parent configurations ``l`` and ``l'`` (``l = 2 s1 + s2``) are the
    same parent configuration of the sub-structure: the identity for hidden nodes (``1 x 1``)
    and for observed nodes with both parents, all ones (``4 x 4``) for no parent, ties when ``s1``
    is equal for parent ``{s1}`` and when ``s2`` is equal for ``{s2}``.

    ``P @ N_host`` (``N_host`` a node's ``(4, 5)`` host-shaped counts) gives every host row the
    pooled counts of its sub-structure configuration.
    """
    t = _check_codes(codes)
    out = {h: np.ones((1, 1)) for h in HIDDEN}
    for y, c in zip(OBSERVED, t, strict=True):
        cfg = np.asarray(CONFIG_MAPS[c])
        out[y] = (cfg[:, None] == cfg[None, :]).astype(np.float64)
    return out


def batched_pooling(codes_list: Iterable[Sequence[int]]) -> dict[str, np.ndarray]:
    """:func:`pooling_matrices` of many structures stacked: ``{node: (n_structures, q, q)}``
    (``q = 1`` for hidden nodes, 4 for observed ones), in the order of ``codes_list`` (e.g.
    :func:`parent_codes`)."""
    mats = [pooling_matrices(c) for c in codes_list]
    if not mats:
        raise ValueError("codes_list is empty")
    return {node: np.stack([m[node] for m in mats]) for node in (*HIDDEN, *OBSERVED)}


def host_params(codes: Sequence[int], params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Host-shaped CPTs equivalent to the sub-structure ``codes`` with CPTs ``params``:
    ``theta_host[l] = theta_sub[config_sub(l)]``, so its rows are tied as in
    :func:`pooling_matrices` and it defines the same distribution."""
    t = _check_codes(codes)
    out = {h: np.array(params[h], dtype=np.float64) for h in HIDDEN}
    for y, c in zip(OBSERVED, t, strict=True):
        table = np.asarray(params[y], dtype=np.float64).reshape(-1, N_CATEGORIES)
        if table.shape[0] != len(set(CONFIG_MAPS[c])):
            raise StructureError(
                f"CPT of {y!r} has {table.shape[0]} rows; parent code {c} needs "
                f"{len(set(CONFIG_MAPS[c]))}"
            )
        out[y] = table[list(CONFIG_MAPS[c])].reshape(2, 2, N_CATEGORIES)
    return out


def d_histogram() -> dict[int, int]:
    """Number of structures per dimension ``d``, computed from :func:`parent_codes` (it equals
    :data:`D_HISTOGRAM`)."""
    return dict(sorted(Counter(n_parameters(c) for c in parent_codes()).items()))
