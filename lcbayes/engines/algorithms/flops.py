"""Floating-point operations per iteration (Whiley §2.9, Tables 2.3-2.4).

The thesis counts every ``+ - * /``, ``log`` and ``exp`` as one operation, for a naive network
(latent class model) with ``c`` classes, ``n`` binary items and ``N`` cases; ``x`` is the
number of function evaluations of a line search beyond the four the table counts. Table 2.3 is
the proportion-vector problem (only the class weights free, ``problem="proportions"``), Table
2.4 the problem with every parameter unknown (``problem="components"``). The totals are the
thesis's total columns (for the ACG family in Table 2.4 that column adds ``12 (nc + c - 1)``,
resp. ``13 (...)``, to the gradient's cost and drops the small constants of the other
columns).

Ours, beyond the thesis:

* items with ``r_i`` states: an item costs what ``r_i - 1`` binary items cost (its one-hot
  coding less the reference state), so ``n`` becomes ``m = sum_i (r_i - 1)``; binary items
  give the thesis's counts exactly;
* ``"squarem"``: three EM steps per cycle plus ``10`` operations per table entry (the two
  differences, their norms and the extrapolation; the step length's few operations left out);
* ``"daem"``: EM plus ``3`` per table entry (``theta^beta = exp(beta ln theta)``).

Example::

    flops("em", n_items=4, n_classes=2, n_rows=100)                  # 2210 (Table 2.4)
    flops("cg", 5, 4, 100, problem="proportions", line_search_evaluations=3)
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import ArgumentError
from ...validation import check_choice, check_int

__all__ = ["FLOP_ALGORITHMS", "flops"]

#: The algorithms :func:`flops` counts.
FLOP_ALGORITHMS = ("em", "iem", "em_eta", "eg", "gp", "acg_phi", "acg_theta", "acg_theta_chi",
                   "cg", "gcg", "squarem", "daem")


def _proportions(name: str, n: float, c: int, N: int, x: float) -> float:
    """Table 2.3 (components known, the proportion vector estimated)."""
    em = N * c * (3 + n) + c
    gradient = N * c * (2 * n + 3)
    line = 4 * (3 * (c - 1) + N * (c * (n + 1) + 1)) + x * (2 + 3 * (c - 1)
                                                              + N * (c * (n + 1) + 1))
    cg_gradient = N * ((n + 1) * (2 * c - 1) + (n + 2) * (c - 1)) + (n + 2) * (c - 1)
    theta = N * (c * (n + 1) + (c - 1) * (2 * n + 3))
    return {
        "em": em,
        "iem": N * c * (6 + n),
        "em_eta": gradient + 5 * c,
        "eg": gradient + 6 * c,
        "gp": gradient + 5 * c + 1,
        "acg_phi": N * (n * c * c + 3 * c * c - 2) + 13 * (c - 1) + 3,
        "acg_theta": theta + 12 * (c - 1) + 3,
        "acg_theta_chi": theta + 13 * (c - 1) + 3,
        "cg": cg_gradient + 6 * (c - 1) + 1 + line + 2 * (c - 1),
        "gcg": cg_gradient + em + 8 * (c - 1) + 1 + line + 2 * (c - 1),
    }[name]


def _components(name: str, n: float, c: int, N: int, x: float) -> float:
    """Table 2.4 (every parameter unknown)."""
    d = n * c + c - 1  # free parameters
    em = N * (2 * n * c + 3 * c) + c * (n + 1)
    gradient = N * c * (n + 1) * (n + 3)
    theta = N * (c * (n + 1) + (2 * c - 2 + n * c) * (n + 2))
    line = 4 * (2 * n * c + 3 * (c - 1) + N * (c * (n + 1) + 1)) + x * (
        2 + 2 * n * c + 3 * (c - 1) + N * (c * (n + 1) + 1))
    return {
        "em": em,
        "iem": N * c * (4 * n + 5),
        "em_eta": gradient + c * (11 * n + 5),
        "eg": gradient + c * (13 * n + 6),
        "gp": gradient + c * (8 * n + 5),
        "acg_phi": N * (c * (n + 1) + (c - 1) * (c + 1) + n * c * (5 + n)) + 12 * d,
        "acg_theta": theta + 12 * d,
        "acg_theta_chi": theta + 13 * d,
        "cg": theta + 6 * d + 1 + line + 2 * d,
        "gcg": theta + em + 8 * d + 1 + line + 2 * d,
    }[name]


def flops(algorithm: str, n_items: int, n_classes: int, n_rows: int, *,
          cardinalities: Sequence[int] | None = None, problem: str = "components",
          line_search_evaluations: float = 0.0) -> float:
    """Operations per iteration of ``algorithm`` on a latent class model with ``n_classes``
    classes and ``n_items`` items (binary unless ``cardinalities`` gives their states) fitted
    to ``n_rows`` cases (Whiley Tables 2.3-2.4; module docstring). ``line_search_evaluations``
    is the thesis's ``x`` for ``"cg"`` and ``"gcg"``."""
    check_choice(algorithm, "algorithm", FLOP_ALGORITHMS)
    check_choice(problem, "problem", ("components", "proportions"))
    n_items = check_int(n_items, "n_items", 1)
    c = check_int(n_classes, "n_classes", 1)
    N = check_int(n_rows, "n_rows", 0)
    if cardinalities is None:
        cardinalities = [2] * n_items
    if len(cardinalities) != n_items or min(cardinalities) < 2:
        raise ArgumentError(f"cardinalities must give {n_items} item state counts >= 2, got "
                            f"{list(cardinalities)!r}")
    m = float(sum(r - 1 for r in cardinalities))
    entries = c + c * sum(cardinalities)
    count = _proportions if problem == "proportions" else _components
    if algorithm == "squarem":
        return 3 * count("em", m, c, N, 0.0) + 10 * entries
    if algorithm == "daem":
        return count("em", m, c, N, 0.0) + 3 * entries
    return float(count(algorithm, m, c, N, float(line_search_evaluations)))
