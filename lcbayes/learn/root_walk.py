"""Root walking: re-rooting a hierarchical latent class model at another hidden node.

In an HLC model the root ``X`` and a hidden child ``Y`` can swap roles: reversing the edge
``X -> Y`` gives a model rooted at ``Y`` that defines the same joint distribution over all
variables, hence the same distribution of the observed ones and the same standard dimension
(Zhang 2004, "Hierarchical latent class models for cluster analysis", JMLR 5, model
equivalence; Karčiauskas 2005, §3.4.2, root walking). The new parameters follow from Bayes'
rule,

    P'(y)     = sum_x P(x) P(y | x),                                   (1)
    P'(x | y) = P(x) P(y | x) / P'(y)   where P'(y) > 0,               (2)

and, where ``P'(y) = 0``, ``P'(x | y) = P(x)`` (any distribution would do: the row is never
reached). Every other CPT is unchanged: ``X``'s other children keep ``X`` as their parent and
``Y``'s children keep ``Y``. Re-rooting at a deeper hidden node reverses the edges of the path
from the root to it one at a time, each step rooting the model one edge further down.

The node order of the structure is kept (only ``parents`` changes), so data columns and
parameter tables line up with the input; the inference routes follow ``Structure.parents``
through the topological order, not the node order. The work is host-side NumPy in float64.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ..errors import StructureError
from ..structure import Structure

__all__ = ["walk_root"]


def walk_root(
    structure: Structure, params: Mapping[str, np.ndarray], node: str
) -> tuple[Structure, Mapping[str, np.ndarray]]:
    """Re-root an HLC model at the hidden node ``node`` (Karčiauskas 2005, §3.4.2).

    Each edge on the path from the current root to ``node`` is reversed in turn, the new root
    ``Y`` and the old root ``X`` getting ``P'(Y) = sum_x P(x) P(Y | x)`` and
    ``P'(X | Y) = P(X) P(Y | X) / P'(Y)`` (``P(X)`` where ``P'(y) = 0``); see the module
    docstring. The distribution of the observed variables, ``ln p(y)`` of every data pattern
    and ``Structure.n_parameters`` are unchanged.

    Args:
        structure: an HLC structure (kind ``"hlc"``).
        params: its CPTs ``{node: array of shape Structure.cpt_shape(i)}``.
        node: the name of the hidden node to become the root.

    Returns:
        The re-rooted structure (same nodes in the same order, cardinalities and labels; the
        parents along the path reversed) and its CPTs as float64 arrays. If ``node`` is
        already the root, ``(structure, params)`` themselves.

    Raises:
        StructureError: ``structure`` is not an HLC model, ``node`` is not one of its nodes or
            is observed, or ``params`` lack a CPT or have one of the wrong shape.
    """
    target = _hidden_target(structure, node)
    if target == structure.root:
        return structure, params
    tables = _checked_tables(structure, params)
    for child in _path_from_root(structure, target):
        structure, tables = _reverse_root_edge(structure, tables, child)
    return structure, tables


def _hidden_target(structure: Structure, node: str) -> int:
    """Index of ``node``, checked to be a hidden node of an HLC structure."""
    if structure.kind != "hlc":
        hint = (" (a latent class model has one hidden node, so there is nowhere to walk)"
                if structure.kind == "latent_class" else "")
        raise StructureError(
            f"root walking needs an HLC structure (kind 'hlc'), got kind {structure.kind!r}{hint}"
        )
    target = structure.index(node)
    if not structure.hidden[target]:
        hidden = [structure.nodes[h] for h in structure.hidden_nodes]
        raise StructureError(
            f"{node!r} is an observed node; only a hidden node can be the root of an HLC "
            f"model: one of {hidden}"
        )
    return target


def _checked_tables(structure: Structure, params: Mapping[str, np.ndarray]
                    ) -> dict[str, np.ndarray]:
    """``params`` as float64 arrays, each checked to have its node's CPT shape."""
    tables = {}
    for i, name in enumerate(structure.nodes):
        if name not in params:
            raise StructureError(f"params lack the CPT of node {name!r}")
        table = np.asarray(params[name], dtype=np.float64)
        if table.shape != structure.cpt_shape(i):
            raise StructureError(
                f"CPT of {name!r} has shape {table.shape}, expected {structure.cpt_shape(i)} "
                "(parent cardinalities..., own cardinality)"
            )
        tables[name] = table
    return tables


def _path_from_root(structure: Structure, target: int) -> list[int]:
    """The nodes after the root on the path from the root down to ``target``, in order."""
    path = [target]
    while structure.parents[path[-1]][0] != structure.root:
        path.append(structure.parents[path[-1]][0])
    return path[::-1]


def _reverse_root_edge(
    structure: Structure, tables: dict[str, np.ndarray], child: int
) -> tuple[Structure, dict[str, np.ndarray]]:
    """Reverse the edge from the root ``X`` to its hidden child ``Y = child``: ``Y`` becomes
    the root with ``P'(Y)`` (eq. 1) and ``X`` its child with ``P'(X | Y)`` (eq. 2)."""
    root = structure.root
    x, y = structure.nodes[root], structure.nodes[child]
    p_x = tables[x]                                   # (r_x,)
    joint = p_x[:, None] * tables[y]                  # (r_x, r_y): P(x) P(y | x)
    p_y = joint.sum(axis=0)                           # eq. 1
    reached = p_y[:, None] > 0
    p_x_given_y = np.where(                           # eq. 2, P(X) on unreachable rows
        reached, joint.T / np.where(reached, p_y[:, None], 1.0), p_x[None, :]
    )
    parents = list(structure.parents)
    parents[root], parents[child] = (child,), ()
    new_structure = dataclasses.replace(structure, parents=tuple(parents))
    return new_structure, {**tables, y: p_y, x: p_x_given_y}
