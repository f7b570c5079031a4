"""The candidates of a comparison: structures on the same columns, each with a distinct name,
from a list, a ``{name: structure}`` mapping or ``n_classes`` (numbers of latent classes).

Names are ``"LC(3)"`` for a latent class model, ``"HLC(H=2,H1=3)"`` for a tree and
``"DAG(s1=2,s2=2; 5 edges)"`` for a DAG unless given; a name used twice gets ``#2``, ``#3``.
Every candidate must observe the same columns (evidences of different data are not comparable)
and every column must be in the data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..constructors import latent_class
from ..data import Dataset
from ..errors import LcbayesError, StructureError
from ..structure import Structure
from . import registry

__all__ = ["candidates", "check_methods", "structure_name"]


def structure_name(s: Structure) -> str:
    """The default name of a candidate (module docstring)."""
    if s.kind == "latent_class":
        return f"LC({s.n_classes})"
    hidden = ",".join(f"{s.nodes[h]}={s.cardinalities[h]}" for h in s.hidden_nodes)
    if s.kind == "hlc":
        return f"HLC({hidden})"
    edges = sum(len(p) for p in s.parents)
    return f"DAG({hidden}; {edges} edges)"


def check_methods(methods: Sequence[str] | str | None) -> tuple[str, ...]:
    """The requested method names, validated against the registry (``None``: the defaults)."""
    if methods is None:
        return registry.default_methods()
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = list(methods)
    choices = registry.selectable_methods()
    if not methods:
        raise LcbayesError(f"methods is empty; choose from {', '.join(choices)}")
    unknown = [m for m in methods if m not in choices]
    if unknown:
        hint = (" (the exact evidence is controlled by exact='auto'|True|False)"
                if "exact" in unknown else "")
        raise LcbayesError(f"unknown method(s) {unknown}; valid methods are "
                           f"{', '.join(choices)}{hint}")
    return tuple(dict.fromkeys(methods))


def _from_classes(data: Dataset, classes) -> tuple[list[str], list[Structure]]:
    if isinstance(classes, int | np.integer) and not isinstance(classes, bool):
        classes = [classes]
    if isinstance(classes, str) or not isinstance(classes, Iterable):
        raise LcbayesError(f"n_classes must be integers such as range(1, 6), got {classes!r}")
    ks = list(classes)
    if not ks:
        raise LcbayesError("n_classes is empty; give numbers of classes such as range(1, 6)")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise LcbayesError(f"n_classes must be integers >= 1, got {k!r}")
    if len(set(ks)) != len(ks):
        raise LcbayesError(f"n_classes lists a number twice: {ks}")
    return [f"LC({int(k)})" for k in ks], [latent_class(data, int(k)) for k in ks]


def _distinct_names(given: list[str | None], structures: list[Structure]) -> list[str]:
    """Given names, default names for the others, ``#2``, ``#3`` for repeats."""
    names = [n if n is not None else structure_name(s)
             for n, s in zip(given, structures, strict=True)]
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in seen:
            seen[n] += 1
            names[i] = f"{n}#{seen[n]}"
        else:
            seen[n] = 1
    return names


def candidates(data: Dataset, structures, classes) -> tuple[list[str], list[Structure]]:
    """Names and structures of the candidates (module docstring); give exactly one of
    ``structures`` (a structure, a list or ``{name: structure}``) and ``classes``."""
    if (structures is None) == (classes is None):
        raise LcbayesError("give exactly one of candidates (a list of structures) or "
                           "n_classes (e.g. range(1, 6) for latent class models)")
    if classes is not None:
        return _from_classes(data, classes)
    if isinstance(structures, Structure):
        structures = [structures]
    given: list[str | None]
    if isinstance(structures, Mapping):
        given, structures = [str(n) for n in structures], list(structures.values())
    else:
        structures = list(structures)
        given = [None] * len(structures)
    if not structures:
        raise LcbayesError("candidates is empty; give at least one structure")
    for n, s in zip(given, structures, strict=True):
        if not isinstance(s, Structure):
            label = f"candidate {n!r}" if n is not None else "a candidate"
            raise LcbayesError(f"{label} is a {type(s).__name__}, not a Structure (build one "
                               "with lcb.latent_class, lcb.hlc or lcb.dag)")
    names = _distinct_names(given, structures)
    for i in range(len(structures)):
        for j in range(i):
            if structures[i] == structures[j]:
                raise LcbayesError(f"candidates {names[j]!r} and {names[i]!r} are the same "
                                   "structure; give each structure once")
    for n, s in zip(names, structures, strict=True):
        missing = [c for c in s.observed_names if c not in data.columns]
        if missing:
            raise LcbayesError(f"candidate {n!r} observes column(s) {missing} that the data "
                               f"lack; the data have {list(data.columns)}")
        try:
            s.check_data(data)
        except StructureError as exc:
            raise LcbayesError(f"candidate {n!r}: {exc}") from None
    first = set(structures[0].observed_names)
    for n, s in zip(names, structures, strict=True):
        if set(s.observed_names) != first:
            raise LcbayesError(
                f"candidate {n!r} models columns {sorted(s.observed_names)} but "
                f"{names[0]!r} models {sorted(first)}: evidences of different data are not "
                "comparable; give every candidate the same columns")
    return names, structures
