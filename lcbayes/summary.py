"""Plain-text printouts of fitted models, in the spirit of poLCA's output.

A latent class fit prints the class shares, a table of item-response probabilities per class for
every item, and the fit statistics; other structures print every CPT with its parent
configurations.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .em import EMResult

__all__ = ["em_summary"]


def _table(row_names: list[str], col_names: list[str], values: np.ndarray) -> list[str]:
    width = max(6, *(len(c) for c in col_names))
    lead = max(len(r) for r in row_names)
    lines = [" " * lead + "  " + "  ".join(c.rjust(width) for c in col_names)]
    for name, row in zip(row_names, values, strict=True):
        lines.append(name.ljust(lead) + "  " + "  ".join(f"{v:{width}.4f}" for v in row))
    return lines


def _config_names(structure, i: int) -> list[str]:
    pa = structure.parents[i]
    if not pa:
        return ["(all)"]
    if structure.kind == "latent_class":
        return [f"class {k + 1}" for k in range(structure.cardinalities[pa[0]])]
    ranges = [range(structure.cardinalities[p]) for p in pa]
    names = [structure.nodes[p] for p in pa]
    return [
        ", ".join(f"{n}={structure.labels[p][v]}" for n, p, v in zip(names, pa, combo, strict=True))
        for combo in itertools.product(*ranges)
    ]


def em_summary(fit: EMResult) -> str:
    """Text summary of an :class:`~lcbayes.em.EMResult`."""
    s = fit.structure
    estimator = "maximum likelihood" if fit.estimator == "ml" else f"MAP ({fit.map_basis} basis)"
    if s.kind == "latent_class":
        head = f"Latent class model: {s.n_classes} classes, {len(s.observed_nodes)} items"
    else:
        head = (
            f"{s.kind.upper()} model: {len(s.hidden_nodes)} hidden, "
            f"{len(s.observed_nodes)} observed nodes"
        )
    lines = [head + f", {estimator} by EM", ""]
    if s.kind == "latent_class":
        shares = fit.class_weights
        lines.append("Estimated class population shares")
        lines.append("  " + "  ".join(f"{w:.4f}" for w in shares))
        lines.append("")
        lines.append("Conditional item response probabilities, by class")
    else:
        lines.append("Conditional probability tables")
    order = s.topological_order if s.kind != "latent_class" else s.observed_nodes
    for i in order:
        table = fit.params[s.nodes[i]].reshape(-1, s.cardinalities[i])
        lines.append(f"${s.nodes[i]}")
        lines.extend(_table(_config_names(s, i), [str(lab) for lab in s.labels[i]], table))
        lines.append("")
    status = "converged" if fit.converged else "NOT converged (raise max_iter)"
    gap = np.abs(fit.restart_objectives - fit.objective)
    best_count = int(np.sum(gap < 1e-6 * max(1.0, abs(fit.objective))))
    n_missing_rows = fit.n_rows - fit.n_observed_rows
    lines += [
        "=========================================================",
        f"number of rows: {fit.n_rows} ({fit.n_patterns} distinct patterns"
        + (f", {n_missing_rows} fully missing" if n_missing_rows else "")
        + ")",
        f"number of estimated parameters: {fit.n_parameters}",
        f"log-likelihood: {fit.loglik:.4f}",
        f"BIC  (loglik - d/2 ln N): {fit.bic:.4f}   [poLCA scale: {-2 * fit.bic:.4f}]",
        f"AIC  (loglik - d):        {fit.aic:.4f}   [poLCA scale: {-2 * fit.aic:.4f}]",
        f"ICL  (BIC - entropy):     {fit.icl:.4f}",
        f"EM: {status} after {fit.n_iter} iterations; best found by {best_count} of "
        f"{fit.restarts} restarts; {fit.seconds:.2f} s",
    ]
    return "\n".join(lines)
