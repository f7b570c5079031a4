"""Generic local identifiability of a discrete Bayesian network with hidden variables
(Whiley 1999 ch. 3).

A model is locally identifiable at ``theta`` when no other parameter value in a neighbourhood
gives the same distribution of the observed variables (Whiley §3.1; label permutations of a
hidden node are the trivial, discrete non-identifiability and are set aside). By Goodman (1974)
it is locally identifiable where the Jacobian ``d p(y) / d theta`` of the observed distribution
has full column rank, and by Geiger, Heckerman & Meek (1996, their Thm 1; Whiley Thm 3.2) that
rank is the same almost everywhere (the *regular rank*). So the model is **generically locally
identifiable** exactly when the regular rank equals the number of free parameters;
:func:`lcbayes.dimension.effective_dimension_details` computes the regular rank at random
points.

Whiley's results for naive Bayes networks (binary items): a binary root with ``n >= 3`` items
has rank ``2n + 1`` (Thms 3.4-3.7, the conjecture of Geiger et al.), so it is identifiable; with
``n = 2`` the rank is 3 < 5. The necessary condition ``prod r_i - 1 >= r_z sum(r_i - 1) + r_z -
1`` (observed degrees of freedom at least the parameters) is not sufficient: ``n = 4``,
``r_z = 3`` has 14 parameters and 15 observed degrees of freedom but rank 13 (a counterexample to
Whiley's Conjecture 3.8; digest §3).

Example::

    res = lcb.identifiable(lcb.latent_class(data, 3))
    if not res:
        print(res.summary())
"""

from __future__ import annotations

from dataclasses import dataclass

from .dimension import effective_dimension_details
from .render import JSONRecord
from .structure import Structure
from .validation import Seed, check_int, check_seed, check_structure

__all__ = ["IdentifiabilityResult", "identifiable"]


@dataclass(frozen=True)
class IdentifiabilityResult(JSONRecord):
    """Whether a structure is generically locally identifiable (truthy when it is).

    Attributes:
        identifiable: ``rank == n_parameters``.
        rank: the regular rank of the Jacobian of the observed distribution (the effective
            dimension).
        n_parameters: the free parameters ``sum_i q_i (r_i - 1)``.
        observed_dof: ``prod r_j - 1`` over the observed variables.
        necessary_condition: ``observed_dof >= n_parameters`` (Whiley §3.1).
        method: ``"full"`` (every observed configuration) or ``"subset"`` (random rows; the
            rank is then a lower bound, see :func:`lcbayes.effective_dimension`).
    """

    identifiable: bool
    rank: int
    n_parameters: int
    observed_dof: int
    necessary_condition: bool
    method: str

    def __bool__(self) -> bool:
        return self.identifiable

    @property
    def deficiency(self) -> int:
        """``n_parameters - rank``: the directions the data cannot tell apart locally."""
        return self.n_parameters - self.rank

    def summary(self) -> str:
        """A short printout."""
        verdict = ("generically locally identifiable" if self.identifiable else
                   f"NOT identifiable: {self.deficiency} parameter direction"
                   f"{'s' if self.deficiency != 1 else ''} the observed distribution cannot "
                   "tell apart")
        note = "" if self.identifiable or not self.necessary_condition else \
            " (although the necessary condition holds)"
        return (f"{verdict}{note}\n  Jacobian rank {self.rank} of {self.n_parameters} free "
                f"parameters; {self.observed_dof} observed degrees of freedom "
                f"({self.method} Jacobian)")


def identifiable(structure: Structure, *, seed: Seed = 0, n_points: int = 3,
                 max_rows: int = 4096) -> IdentifiabilityResult:
    """Whether ``structure`` is generically locally identifiable (module docstring): the
    regular rank of the Jacobian of the observed distribution, from ``n_points`` random points
    (:func:`lcbayes.dimension.effective_dimension_details`, reproducible from ``seed``), equals
    the number of free parameters.

    Args:
        structure: a latent class, HLC or DAG structure.
        seed: seed of the random points.
        n_points: random points evaluated (the largest rank found is used).
        max_rows: observed configurations up to which the whole Jacobian is used.

    Returns:
        An :class:`IdentifiabilityResult`, truthy when identifiable.
    """
    check_structure(structure)
    seed = check_seed(seed)
    n_points = check_int(n_points, "n_points", 1)
    max_rows = check_int(max_rows, "max_rows", 1)
    details = effective_dimension_details(structure, seed=seed, n_points=n_points,
                                          max_rows=max_rows)
    dof = details.n_configurations - 1
    return IdentifiabilityResult(identifiable=details.dimension == details.n_parameters,
                           rank=details.dimension, n_parameters=details.n_parameters,
                           observed_dof=dof, necessary_condition=dof >= details.n_parameters,
                           method=details.method)
