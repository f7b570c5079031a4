"""Latent class models of several sizes in one compiled program (``pad_classes=``).

JAX compiles an engine once per structure *shape*, so ``LC(1)``, ..., ``LC(5)`` cost five
compilations of every engine, and on small data compilation is most of the time. Padding runs
``LC(K)`` as ``LC(K_max)`` with classes ``K .. K_max - 1`` switched off: their weights are
exactly zero (``ln pi_k = -inf``), so they take no posterior mass, no count and no part in any
likelihood; their item rows are never looked at. Every candidate of a comparison then shares one
program per engine.

Nothing else changes. EM and VBEM follow the same iterates as the unpadded run up to
floating-point rounding: the switched-off entries are constant, so they add nothing to SQUAREM's
step lengths, and the random starts are drawn so that a class's start does not depend on how
many classes follow it. VBEM's Dirichlet algebra leaves switched-off entries out of every row
(:mod:`lcbayes.engines.dirichlet`'s ``mask``). AIS (random-walk kernel) keeps them at ``-inf``;
its random numbers are laid out on the padded shape, so a padded AIS run is reproduced by the
same call with the same ``pad_classes``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import overload

import numpy as np

from ..errors import ArgumentError
from ..inference.estep import EStep
from ..structure import Structure
from ..validation import check_int

__all__ = ["ClassPadding", "class_padding"]


@dataclasses.dataclass(frozen=True)
class ClassPadding:
    """``structure`` (``LC(K)``) run inside ``padded`` (``LC(K_max)``).

    Attributes:
        structure: the model fitted.
        padded: the same model with ``K_max`` classes, the structure every engine runs.
    """

    structure: Structure
    padded: Structure

    @property
    def classes(self) -> int:
        return self.structure.cardinalities[self.structure.root]

    def held(self) -> tuple[np.ndarray, np.ndarray]:
        """``(active, values)`` on the padded flat tables (:mod:`lcbayes.inference.flat`):
        ``active`` is False at every entry of a switched-off class (its weight and its item
        rows), where the probabilities are held at ``values`` (weight 0, item rows uniform)."""
        zeros = [np.zeros((q, r)) for q, r in self.structure.table_shapes]
        active = np.concatenate([t.ravel() for t in self.pad([z + 1 for z in zeros], 0.0, 0.0)])
        values = np.concatenate([t.ravel() for t in self.pad(zeros)])
        return active > 0, values

    def class_log_mask(self) -> np.ndarray:
        """``(K_max,)``: 0 for the classes in use, ``-inf`` for the others."""
        in_use = np.arange(self.padded.cardinalities[self.padded.root]) < self.classes
        return np.where(in_use, 0.0, -np.inf)

    def unpad_e_step(self, est: EStep) -> EStep:
        """An E step of the padded model as that of the model (posteriors and counts of the
        classes in use; the others are exactly zero)."""
        return est._replace(counts=self.unpad(est.counts),
                            hidden_marginals=tuple(np.asarray(m)[:, :self.classes]
                                                   for m in est.hidden_marginals))

    def pad(self, tables: Sequence, weight: float = 0.0, row: float | None = None
            ) -> tuple[np.ndarray, ...]:
        """``LC(K)`` tables (without a leading batch axis or with one) to ``LC(K_max)``: the
        class weights of the switched-off classes set to ``weight``, every entry of their item
        rows to ``row`` (``None``: uniform probabilities ``1 / r``)."""
        extra = self.padded.cardinalities[self.padded.root] - self.classes
        out = []
        for i, t in enumerate(tables):
            t = np.asarray(t)
            axis = t.ndim - 1 if i == self.structure.root else t.ndim - 2
            width = [(0, 0)] * t.ndim
            width[axis] = (0, extra)
            fill = weight if i == self.structure.root else 1.0 / t.shape[-1] if row is None else row
            out.append(np.pad(t, width, constant_values=fill))
        return tuple(out)

    def unpad(self, tables: Sequence) -> tuple[np.ndarray, ...]:
        """``LC(K_max)`` tables (optionally batched) back to ``LC(K)``."""
        k = self.classes
        return tuple(np.asarray(t)[..., :k] if i == self.structure.root
                     else np.asarray(t)[..., :k, :] for i, t in enumerate(tables))


@overload
def class_padding(structure: Structure, pad_classes: None) -> None: ...
@overload
def class_padding(structure: Structure, pad_classes: int) -> ClassPadding: ...
@overload
def class_padding(structure: Structure, pad_classes: int | None) -> ClassPadding | None: ...
def class_padding(structure: Structure, pad_classes: int | None) -> ClassPadding | None:
    """The padding of ``structure`` to ``pad_classes`` classes (``None``: no padding); only
    latent class models pad, to at least their own number of classes."""
    if pad_classes is None:
        return None
    pad_classes = check_int(pad_classes, "pad_classes", 1)
    if structure.kind != "latent_class":
        raise ArgumentError(f"pad_classes applies to latent class models, not to a "
                            f"{structure.kind} structure; leave it None")
    k = structure.cardinalities[structure.root]
    if pad_classes < k:
        raise ArgumentError(f"pad_classes={pad_classes} is below the model's {k} classes; "
                            f"give at least {k}")
    root = structure.root
    padded = dataclasses.replace(
        structure,
        cardinalities=tuple(pad_classes if i == root else c
                            for i, c in enumerate(structure.cardinalities)),
        labels=tuple(tuple(range(pad_classes)) if i == root else lab
                     for i, lab in enumerate(structure.labels)))
    return ClassPadding(structure, padded)
