"""AIS of every Beal & Ghahramani structure with one compiled program: each structure is the
fully connected host with CPT rows tied (:mod:`lcbayes.inference.tying`), annealed by the AIS
core :func:`lcbayes.engines.ais.anneal`."""

from __future__ import annotations

import jax.numpy as jnp

from lcbayes.engines.ais import anneal, make_problem
from lcbayes.inference import flat
from lcbayes.inference.tying import row_tying
from lcbayes.structure import Structure

__all__ = ["tied_runner"]


def tied_runner(structure: Structure, patterns, weights, priors, tau, strength, *,
                kernel: str = "mh", blocks: str = "node", chains: int = 1):
    """A function ``run(groups, key) -> (log weights, acceptances)`` (each ``(K, chains)``)
    that anneals the structure obtained by tying CPT rows of the host ``structure``: per node a
    ``(q, q)`` 0/1 same-group matrix ``groups``; each tied group is one CPT row (prior and
    proposal counted once).

    The data, prior (``priors``, host-shaped pseudo-counts), schedule ``tau`` and MH
    ``strength = (c0, c1 n)`` are fixed; ``run`` is pure JAX, so it can be vmapped or
    ``lax.map``-ped over many tyings of one host."""
    base = make_problem(structure, jnp.asarray(patterns),
                        jnp.asarray(weights, dtype=jnp.float64),
                        flat.flatten([jnp.asarray(a) for a in priors]), kernel,
                        tuple(jnp.asarray(x) for x in strength))
    tau = jnp.asarray(tau)

    def run(groups, key):
        problem = base._replace(tying=row_tying(groups, structure.table_shapes))
        return anneal(structure, kernel, blocks, chains, False, problem, tau, key)

    return run
