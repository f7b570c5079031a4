"""NumPyro models of lcbayes structures, hidden variables summed out exactly.

``numpyro_model(structure, prior)`` returns a model function ``model(data=None)`` with one
sample site per node, ``theta_i ~ Dirichlet(lambda_i)`` of shape ``(*parent_cardinalities, r_i)``
(every CPT row an independent Dirichlet, Beal & Ghahramani eq. 3), and, when data are given, the
factor ``sum_p w_p ln p(y_p | theta)`` computed by the exact inference core
(:func:`lcbayes.inference.log_marginal`). The log joint is therefore
``ln p(theta) + ln p(y | theta)`` with the discrete hidden variables marginalised, so
``numpyro.infer.util.log_density``, NUTS and every other NumPyro inference apply.

Example::

    model = lcb.numpyro_model(lcb.latent_class(data, 2))
    mcmc = numpyro.infer.MCMC(numpyro.infer.NUTS(model), num_warmup=500, num_samples=500)
    mcmc.run(jax.random.PRNGKey(0), data)
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from .data import Dataset
from .errors import StructureError
from .inference import log_marginal
from .params import PriorSpec, prior_tables
from .structure import Structure

__all__ = ["LOGLIK_SITE", "numpyro_model"]

#: Name of the factor site holding ``ln p(y | theta)``.
LOGLIK_SITE = "log_likelihood"


def numpyro_model(structure: Structure, *, prior: PriorSpec = "dirichlet") -> Callable:
    """A NumPyro model function ``model(data: Dataset | None = None)`` for ``structure``.

    Args:
        structure: the model.
        prior: Dirichlet pseudo-counts: ``"dirichlet"`` (1 everywhere, the default), a number,
            or ``{node: number or array}`` (unnamed nodes get 1).
    """
    alphas = prior_tables(structure, "dirichlet" if prior is None else prior)
    if LOGLIK_SITE in structure.nodes:
        raise StructureError(
            f"a node may not be called {LOGLIK_SITE!r} (a NumPyro site name): rename it"
        )
    concentrations = [
        jnp.asarray(a.reshape(structure.cpt_shape(i))) for i, a in enumerate(alphas)
    ]

    def model(data: Dataset | None = None) -> None:
        log_tables = []
        for i, name in enumerate(structure.nodes):
            n_parent_axes = len(structure.parents[i])
            theta = numpyro.sample(name, dist.Dirichlet(concentrations[i]).to_event(n_parent_axes))
            log_tables.append(
                jnp.log(theta).reshape(structure.n_configs(i), structure.cardinalities[i])
            )
        if data is not None:
            data = structure.check_data(data)
            log_marg = log_marginal(structure, tuple(log_tables), jnp.asarray(data.patterns))
            numpyro.factor(LOGLIK_SITE, jnp.asarray(data.counts) @ log_marg)

    model.__doc__ = f"NumPyro model of a {structure.kind} structure with nodes {structure.nodes}."
    return model
