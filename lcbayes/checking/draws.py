"""The posterior draws a check reads: draws at a fixed structure, whichever sampler made them.

A :class:`~lcbayes.GibbsResult` is used as it is. Reversible jump and allocation-sampler draws
(:class:`~lcbayes.RJMCMCResult`) are conditioned on one number of classes ``K`` (by default the
most probable): their draws with ``k = K`` are draws of ``p(theta | y, K)``, the same target a
Gibbs run at ``K`` samples, which is also what an exact leave-one-out refit runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..constructors import latent_class
from ..data import Dataset
from ..errors import ArgumentError, ArgumentTypeError
from ..samplers.idata import condition_on_k
from ..samplers.results import GibbsResult, RJMCMCResult
from ..structure import Structure
from ..validation import check_int, fit_data

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["FixedDraws", "fixed_draws"]


@dataclass(frozen=True)
class FixedDraws:
    """Draws at one structure: the structure, the data fitted to it, the ``posterior`` group,
    and the sampler settings (draws, warmup, chains, thin, prior) a refit by
    :func:`lcbayes.gibbs` takes."""

    structure: Structure
    data: Dataset
    posterior: xr.Dataset
    settings: dict


def fixed_draws(result, data, n_classes: int | None, what: str) -> FixedDraws:
    """The draws of ``result`` at one structure (module docstring); ``what`` names the
    caller in errors."""
    if isinstance(result, RJMCMCResult):
        k = result.modal_k if n_classes is None else check_int(n_classes, "n_classes", 1)
        idata = condition_on_k(result, k)
        structure = latent_class(data, k)
    elif isinstance(result, GibbsResult):
        structure = result.structure
        own = structure.cardinalities[structure.root] if structure.kind == "latent_class" \
            else None
        if n_classes is not None and n_classes != own:
            model = f"LC({own})" if own else "a fixed structure"
            raise ArgumentError(f"n_classes={n_classes} was given but these are draws of "
                                f"{model}; leave n_classes out")
        idata = result.idata
    else:
        raise ArgumentTypeError(
            f"{what} needs posterior draws: lcb.gibbs(...) at a fixed structure, or "
            f"lcb.rjmcmc(...) / lcb.allocation_sampler(...) with n_classes=K; got "
            f"{type(result).__name__}")
    settings = {name: result.settings[name] for name in ("draws", "warmup", "chains", "thin")}
    settings["prior"] = result.settings.get("prior", "dirichlet")
    return FixedDraws(structure, fit_data(structure, data), idata["posterior"], settings)
