"""Sequential Monte Carlo over the rows for any network the enumeration engine sums: HLC trees
and DAGs with hidden variables (latent class models are tempered from a reference instead,
:mod:`lcbayes.samplers.tempered_smc`).

The particle filter is :func:`lcbayes.samplers.particle_filter.filter_rows` (rows added one at
a time, resample-move with exact data-augmentation Gibbs sweeps, tempering within a row whose
weights would collapse). What changes is the particle: the flat counts ``n`` of every
conditional probability table's entries (:mod:`lcbayes.inference.flat`) over the rows added so
far, with their hidden variables completed. For the next row ``y`` and every joint state ``e``
of the enumerated nodes (:mod:`lcbayes.inference.enumeration`),

    p(y, e | n) = prod_i (lambda_i[pa(e), v_i] + n_i[pa(e), v_i]) / (sum_v lambda_i[pa(e), v]
                  + n_i[pa(e), .])

over the nodes ``i`` with a value ``v_i`` (hidden, or observed and not missing): each table
row's Dirichlet-multinomial predictive, which is the joint of ``y`` and ``e`` under the
posterior mean tables, so the enumeration engine's :func:`flat_log_joint` computes it from
``ln E[theta | n]``. No row of a table is used twice by one data row, so the product is
exact. The Gibbs sweep draws every table row from its Dirichlet posterior
``Dir(lambda + n)``, then every added row's joint state from ``p(e | y, theta)`` (the same
engine), and recounts.

Its error bar is the spread of independent runs, each with its own row order.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..data import Dataset
from ..engines.gamma_sampler import log_gamma
from ..errors import StructureError
from ..inference import enumeration, flat
from ..inference.estep import Evidence
from ..params import PriorSpec, proper_prior_tables
from ..structure import MAX_ENUMERATED_STATES, Structure
from .allocations import PrefixClass, holding, ordered_rows, prefix_classes, sorted_allocations
from .particle_filter import RowModel, filter_rows

__all__ = ["NetworkData", "network_data", "network_prior", "run_network_smc"]


class NetworkData(NamedTuple):
    """The rows in their SMC order for a network.

    Attributes:
        rows: ``(N,)`` each row's pattern (numbered by first occurrence in the order).
        evidence: the patterns' evidence for the enumeration engine (sliced per row and per
            prefix class).
        classes: the :class:`~lcbayes.samplers.allocations.PrefixClass` of every size class, largest
            first.
    """

    rows: np.ndarray
    evidence: Evidence
    classes: tuple[PrefixClass, ...]


def network_data(structure: Structure, data: Dataset, rng: np.random.Generator
                 ) -> NetworkData:
    """The rows of ``data`` in a random order from ``rng``, with the evidence of their
    patterns for ``structure``."""
    states = structure.n_enumerated_states
    if states > MAX_ENUMERATED_STATES:
        raise StructureError(f"smc sums over the {states} joint states of the hidden nodes (and "
                             f"observed parents) of this structure, more than "
                             f"{MAX_ENUMERATED_STATES}: use fewer or smaller hidden variables")
    codes, rows = ordered_rows(data, rng)
    evidence = enumeration.prepare(structure, jnp.asarray(codes))
    return NetworkData(rows, evidence, prefix_classes(rows, codes.shape[0]))


def network_prior(structure: Structure, prior: PriorSpec) -> np.ndarray:
    """The flat Dirichlet pseudo-counts of every table entry."""
    return np.concatenate([np.ravel(t) for t in proper_prior_tables(structure, prior, "smc")])


def _rows(evidence: Evidence, index) -> Evidence:
    """The evidence of the patterns ``index`` (an array or a slice)."""
    return jax.tree.map(lambda a: a[index], evidence)


@partial(jax.jit, static_argnames=("structure", "particles", "sweeps", "max_moves"))
def run_network_smc(key, data: NetworkData, lam, ess_target, temper_ess, *,
                    structure: Structure, particles: int, sweeps: int, max_moves: int
                    ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One SMC run (module docstring) from ``key``: ``(ln Z_hat, resample-move steps,
    history)`` as :func:`lcbayes.samplers.particle_filter.filter_rows` gives them."""
    shapes = structure.table_shapes
    entry_rows = flat.entry_rows(shapes)
    n_rows = int(entry_rows[-1]) + 1
    total = data.rows.shape[0]
    prefixes = [_rows(data.evidence, slice(0, c.starts.shape[0])) for c in data.classes]

    def log_mean(counts):
        shape = lam + counts
        row_total = jax.ops.segment_sum(shape, entry_rows, num_segments=n_rows)
        return jnp.log(shape) - jnp.log(row_total)[entry_rows]

    def counts_of(mass, evidence):
        return (enumeration.leaf_counts(structure, mass, evidence)
                + enumeration.state_counts(structure, mass.sum(axis=0)))

    def one_row(i):
        return _rows(data.evidence, data.rows[i][None])

    def log_predictive(counts, i):
        joint = jax.vmap(lambda c: enumeration.flat_log_joint(structure, log_mean(c),
                                                              one_row(i))[0])
        return joint(counts)

    def add(counts, i, z):
        states = jax.nn.one_hot(z, structure.n_enumerated_states)[:, None, :]   # (M, 1, S)
        return counts + jax.vmap(lambda mass: counts_of(mass, one_row(i)))(states)

    def allocate(index, key, n, counts):
        prefix, evidence = data.classes[index], prefixes[index]

        def one(key, counts):
            k_theta, k_rows = jax.random.split(key)
            log_theta = flat.log_normalise(log_gamma(k_theta, lam + counts), shapes)
            logits = enumeration.flat_log_joint(structure, log_theta, evidence)
            return counts_of(sorted_allocations(k_rows, logits, prefix, n), evidence)

        return jax.vmap(one)(jax.random.split(key, counts.shape[0]), counts)

    def sweep(n, counts, key):
        return jax.lax.switch(holding(data.classes, n),
                              [partial(allocate, i) for i in range(len(data.classes))],
                              key, n, counts)

    model = RowModel(jnp.zeros((particles, lam.shape[0])), log_predictive, add, sweep)
    end = filter_rows(key, model, total, ess_target, temper_ess, particles=particles,
                      sweeps=sweeps, max_moves=max_moves)
    return end.log_z, end.moves, end.history
