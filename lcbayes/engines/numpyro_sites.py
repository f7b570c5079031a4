"""What AIS needs from a NumPyro model (:func:`lcbayes.ais_numpyro`): its latent and observed
sample sites (continuous latents only, no subsampling), exact prior draws in unconstrained
space, and the log prior (with the Jacobian of the transform) and log likelihood at a point,
each by running the model under NumPyro's effect handlers."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.infer.util import _unconstrain_reparam, compute_log_probs, unconstrain_fn

from ..errors import LcbayesError

__all__ = ["log_parts", "prior_sampler", "site_names"]


def site_names(model_trace) -> tuple[list[str], list[str]]:
    """Names of the latent and observed sample sites of a trace; refuses discrete or scaled
    (subsampled) latent sites, and models without latent sites."""
    latent, observed = [], []
    for name, site in model_trace.items():
        if site["type"] == "plate":
            size, subsample = site["args"][:2]
            if subsample is not None and subsample < size:
                raise LcbayesError(
                    f"plate {name!r} subsamples {subsample} of {size} rows; AIS needs the "
                    "exact log density: drop subsample_size")
        if site["type"] != "sample":
            continue
        if site["is_observed"]:
            observed.append(name)
            continue
        if site["fn"].support.is_discrete:
            raise LcbayesError(
                f"latent site {name!r} is discrete ({type(site['fn']).__name__}); AIS with "
                "gradient-based transitions needs continuous latents: sum the discrete "
                "variable out of the model first (e.g. a numpyro.factor of the log-sum-exp "
                "over its values, as lcbayes.numpyro_model does, or numpyro's enumeration)")
        scale = site["scale"]
        try:
            unscaled = scale is None or bool(np.all(np.asarray(scale) == 1))
        except jax.errors.TracerArrayConversionError:
            unscaled = False
        if not unscaled:
            raise LcbayesError(
                f"latent site {name!r} has a log-density scale (from a subsampled plate or "
                "handlers.scale); the prior must be an exact, normalised density: remove the "
                "subsampling or scale from latent sites")
        latent.append(name)
    if not latent:
        raise LcbayesError("the model has no latent sample sites: its evidence is its "
                           "likelihood, there is nothing to integrate")
    return latent, observed


def prior_sampler(model: Callable, args: tuple, kwargs: dict
                   ) -> tuple[Callable, list[str], list[str], Any]:
    """``draw(key)``: an exact prior draw of the latent sites in unconstrained space, by
    ancestral sampling with the observed sites conditioned (the model run forward under
    ``handlers.seed``), mapped through :func:`numpyro.infer.util.unconstrain_fn`. Also the
    latent and observed site names and the draw's shapes, found by tracing the model
    abstractly (:func:`jax.eval_shape`: nothing is compiled or run)."""
    fixed = handlers.seed(model, rng_seed=0)  # for prng_key() calls outside the latent sites
    names: dict[str, list[str]] = {}

    def draw(key):
        model_trace = handlers.trace(handlers.seed(model, key)).get_trace(*args, **kwargs)
        if not names:
            names["latent"], names["observed"] = site_names(model_trace)
        constrained = {name: model_trace[name]["value"] for name in names["latent"]}
        return unconstrain_fn(fixed, args, kwargs, constrained)

    try:
        shapes = jax.eval_shape(draw, jax.ShapeDtypeStruct((2,), jnp.uint32))
    except LcbayesError:
        raise
    except Exception as exc:  # the user's model failed: say so, keep the cause
        raise LcbayesError(f"running the model with the given arguments failed "
                           f"({type(exc).__name__}: {exc}); check the model's *args and "
                           "**kwargs passed to ais_numpyro") from exc
    return draw, names["latent"], names["observed"], shapes


def log_parts(model: Callable, args: tuple, kwargs: dict, observed: frozenset, u: dict
               ) -> jax.Array:
    """``[log prior(u) + log|J|(u), loglik(u)]`` in one model run, under the reparameterisation
    of :func:`numpyro.infer.util.potential_energy` (its sum is minus the potential energy).

    ``_unconstrain_reparam`` is private to NumPyro; it substitutes ``biject_to(support)(u)``
    at every latent site and adds each log Jacobian as a factor site of its own, which lands
    in the prior part here (the tests check the sum against the public ``potential_energy``)."""
    reparam = handlers.substitute(model, substitute_fn=partial(_unconstrain_reparam, u))
    log_probs, _ = compute_log_probs(reparam, args, kwargs, {})
    log_lik = sum((v for k, v in log_probs.items() if k in observed), start=jnp.zeros(()))
    log_prior = sum((v for k, v in log_probs.items() if k not in observed),
                    start=jnp.zeros(()))
    return jnp.stack([log_prior, log_lik])
