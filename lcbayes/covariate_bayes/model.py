"""The Bayesian latent class regression as a NumPyro model, classes summed out exactly.

**Likelihood.** As in :mod:`.cells` (Linzer & Lewis 2011, eq. 4), per cell ``u`` of rows
sharing their item responses, covariates and outcome (count ``n_u``)::

    ln p(y | x) = sum_u n_u logsumexp_r [ ln softmax(x_u' beta)_r + sum_j ln theta_{j r y_uj}
                                          + ln f_r(z_u) ]

with a missing item (or outcome) contributing a factor of one. ``f_r`` is the distal outcome's
distribution in class ``r`` (absent without one): a categorical outcome is one more
class-dependent item; a continuous one is ``N(z | mu_r, sigma_r^2)``.

**Priors** (every one proper, so every evidence is finite and nested models compare):

* item tables: ``theta_{j r .} ~ Dirichlet(1, ..., 1)``, every row (class ``r``, item ``j``);
* membership: the class effects of design column ``p`` form a sum-to-zero vector
  ``b_p = (b_p1, ..., b_pK)``, ``b_p = Q g_p`` with ``Q`` an orthonormal ``K x (K - 1)`` basis
  of the vectors summing to zero and ``g_p ~ N(0, (s^2 / 2) I)``, ``s = prior_scale``. The
  coefficients printed, ``beta_pr = b_pr - b_p1`` (class 1 the reference, as
  :class:`~lcbayes.RegressionResult`), are then each ``N(0, s^2)``: for ``K = 2`` exactly
  ``beta_2 ~ N(0, s^2)``; for ``K >= 3`` the contrasts are correlated (1/2 pairwise). This
  prior treats the classes exchangeably, as the Dirichlet rows do, so relabelling the classes
  leaves the posterior unchanged (which :mod:`.evidence` uses); independent ``N(0, s^2)`` on
  ``beta_2 .. beta_K`` would not (its contrast ``beta_3 - beta_2`` would have variance
  ``2 s^2``).
* covariates are standardised internally: numeric design columns centred at their mean over
  the rows used and divided by their standard deviation, indicator columns (of text
  covariates) centred only. ``prior_scale`` is therefore the log-odds scale of one standard
  deviation of a numeric covariate, or of a level against the reference level. With ``x =
  m + S z`` (``m`` the centres, ``S`` the diagonal scales), ``x' beta = z' beta~`` maps back
  as ``beta_p = beta~_p / S_p`` for the slopes and ``beta_0 = beta~_0 - sum_p beta~_p m_p /
  S_p`` for the intercept (:func:`to_raw`); posterior draws are reported on the raw scale.
* continuous outcome, standardised (mean 0, SD 1 over the observed values): ``mu_r ~ N(0,``
  :data:`DISTAL_MEAN_SCALE` ``^2)``, ``sigma_r ~ HalfNormal(`` :data:`DISTAL_SD_SCALE` ``)``,
  weakly informative on that scale (class means within about two SDs of the mean, class SDs
  up to the outcome's); the evidence is reported for the outcome in its own units (the
  Jacobian ``-n_z ln SD`` added, ``n_z`` the observed values). Categorical outcome:
  ``Dirichlet(1)`` per class.

**Nested models in the same program.** ``drop="covariates"`` multiplies the slope rows of
``g`` by zero in the likelihood (membership is intercept-only on the same rows);
``drop="distal"`` makes the outcome's parameters of class 1 serve every class. The parameters
cut out of the likelihood keep their proper prior and integrate to one, so the evidence is the
nested model's exactly, and one compiled program serves both models of a comparison
(:class:`BayesData` holds the switches as arrays).

:func:`lcr_model` builds the NumPyro model (``model(data: BayesData)``): sites
``class_effects`` ``(P, K - 1)`` (the ``g`` above), ``theta_<item>`` ``(K, r_item)``,
``distal_probs`` or ``distal_mean``/``distal_sd``, the factor ``log_likelihood`` and the
deterministic ``loglik``. :func:`lcbayes.covariate_model` gives it for a data set, e.g. for
:func:`lcbayes.ais_numpyro`.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Literal, NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

from ..engines.regression.cells import TINY, Cells, joint_log
from ..models import LOGLIK_SITE

__all__ = ["DISTAL_MEAN_SCALE", "DISTAL_SD_SCALE", "MAX_CLASSES", "BayesData", "Drop",
           "ModelSpec", "lcr_model", "permutations", "relabel", "sum_to_zero_basis", "to_raw",
           "unconstrained_layout"]

#: Prior SD of a class mean of the standardised continuous outcome.
DISTAL_MEAN_SCALE = 1.0
#: Half-normal scale of a class SD of the standardised continuous outcome.
DISTAL_SD_SCALE = 1.0
#: Most classes: the evidence symmetrises over all ``K!`` relabellings (720 at ``K = 6``).
MAX_CLASSES = 6

#: The part of the model a nested model leaves out.
Drop = Literal["covariates", "distal"] | None


class ModelSpec(NamedTuple):
    """What fixes the compiled programs: item names and cardinalities, classes, design columns,
    the outcome's kind (``"none"``, ``"categorical"``, ``"continuous"``) and categories, and
    the number of cells (padded to a power of two)."""

    items: tuple[str, ...]
    cardinalities: tuple[int, ...]
    n_classes: int
    n_design: int
    distal_kind: str
    distal_categories: int
    n_cells: int


class BayesData(NamedTuple):
    """The model's data, as arrays (arguments of the compiled programs): the cells' ``onehot``
    ``(U, J', C)`` (a categorical outcome is the last item), standardised ``design`` ``(U, P)``,
    ``counts`` ``(U,)``, a continuous outcome's standardised ``outcome`` and ``seen``
    ``(U,)``; ``slope_mask`` ``(P,)`` (0 cuts a design column out: ``drop="covariates"``),
    ``tie`` (1: the outcome independent of class, ``drop="distal"``) and ``prior_scale``."""

    onehot: jnp.ndarray
    design: jnp.ndarray
    counts: jnp.ndarray
    outcome: jnp.ndarray
    seen: jnp.ndarray
    slope_mask: jnp.ndarray
    tie: jnp.ndarray
    prior_scale: jnp.ndarray


@functools.cache
def sum_to_zero_basis(k: int) -> np.ndarray:
    """``Q`` ``(K, K - 1)``: orthonormal columns, each summing to zero (Helmert's)."""
    q = np.zeros((k, k - 1))
    for c in range(1, k):
        q[:c, c - 1] = 1.0
        q[c, c - 1] = -float(c)
        q[:, c - 1] /= math.sqrt(c * (c + 1))
    return q


@functools.cache
def permutations(k: int) -> np.ndarray:
    """All ``K!`` relabellings, identity first, as ``(K!, K)`` (new class ``r`` is old class
    ``perm[r]``)."""
    return np.asarray(list(itertools.permutations(range(k))), dtype=np.int64)


def _pad_log(theta: jnp.ndarray, width: int) -> jnp.ndarray:
    return jnp.pad(jnp.log(jnp.maximum(theta, TINY)), ((0, 0), (0, width - theta.shape[-1])))


@functools.cache
def lcr_model(spec: ModelSpec):
    """The NumPyro model of ``spec`` (module docstring): ``model(data: BayesData)``. Cached, so
    one specification gives one function (and its programs compile once)."""
    k, p = spec.n_classes, spec.n_design
    basis = jnp.asarray(sum_to_zero_basis(k))
    width = max((*spec.cardinalities, spec.distal_categories))

    def model(data: BayesData) -> None:
        tau = data.prior_scale / math.sqrt(2.0)
        g = numpyro.sample("class_effects", dist.Normal(0.0, tau).expand((p, k - 1)).to_event(2))
        effects = (g * data.slope_mask[:, None]) @ basis.T
        logs = [_pad_log(numpyro.sample(f"theta_{name}",
                                        dist.Dirichlet(jnp.ones((k, r))).to_event(1)), width)
                for name, r in zip(spec.items, spec.cardinalities, strict=True)]
        if spec.distal_kind == "categorical":
            phi = numpyro.sample("distal_probs", dist.Dirichlet(
                jnp.ones((k, spec.distal_categories))).to_event(1))
            logs.append(_pad_log(jnp.where(data.tie > 0, phi[:1], phi), width))
        cells = Cells(**{f: getattr(data, f) for f in Cells._fields})
        joint = joint_log(jnp.stack(logs), effects, cells)
        if spec.distal_kind == "continuous":
            mean = numpyro.sample("distal_mean", dist.Normal(0.0, DISTAL_MEAN_SCALE)
                                  .expand((k,)).to_event(1))
            sd = numpyro.sample("distal_sd", dist.HalfNormal(DISTAL_SD_SCALE)
                                .expand((k,)).to_event(1))
            mean = jnp.where(data.tie > 0, mean[:1], mean)
            sd = jnp.where(data.tie > 0, sd[:1], sd)
            z = (data.outcome[:, None] - mean[None, :]) / sd[None, :]
            joint = joint + data.seen[:, None] * (-0.5 * z * z - jnp.log(sd)[None, :]
                                                  - 0.5 * math.log(2 * math.pi))
        loglik = data.counts @ logsumexp(joint, axis=-1)
        numpyro.deterministic("loglik", loglik)
        numpyro.factor(LOGLIK_SITE, loglik)

    model.__doc__ = (f"NumPyro latent class regression: {k} classes, {p} design columns, items "
                     f"{list(spec.items)}, distal outcome {spec.distal_kind}.")
    return model


@functools.cache
def unconstrained_layout(spec: ModelSpec) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    """``(site, offset, unconstrained shape)`` of every latent site in the flat unconstrained
    vector, in :func:`jax.flatten_util.ravel_pytree`'s order of a dict (sorted names)."""
    k = spec.n_classes
    shapes: dict[str, tuple[int, ...]] = {"class_effects": (spec.n_design, k - 1)}
    for name, r in zip(spec.items, spec.cardinalities, strict=True):
        shapes[f"theta_{name}"] = (k, r - 1)
    if spec.distal_kind == "categorical":
        shapes["distal_probs"] = (k, spec.distal_categories - 1)
    elif spec.distal_kind == "continuous":
        shapes["distal_mean"] = (k,)
        shapes["distal_sd"] = (k,)
    out, offset = [], 0
    for name in sorted(shapes):
        out.append((name, offset, shapes[name]))
        offset += math.prod(shapes[name])
    return tuple(out)


def relabel(spec: ModelSpec, u: np.ndarray, perm: np.ndarray, tied: bool) -> np.ndarray:
    """Flat unconstrained points ``u`` ``(n, d)`` with the classes relabelled by ``perm``
    (new class ``r`` = old class ``perm[r]``): rows of every class-indexed site permuted, the
    sum-to-zero effects ``g`` mapped by the orthogonal ``Q' P Q``; the outcome's parameters
    stay when ``tied`` (they belong to no class). A linear map with determinant +-1 that
    leaves the posterior density unchanged (module docstring)."""
    k = spec.n_classes
    q = sum_to_zero_basis(k)
    out = np.array(u, dtype=np.float64, copy=True)
    n = u.shape[0]
    for name, offset, shape in unconstrained_layout(spec):
        size = math.prod(shape)
        block = u[:, offset:offset + size].reshape(n, *shape)
        if name == "class_effects":
            block = block @ (q.T[:, perm] @ q)
        elif not (tied and name.startswith("distal")):
            block = block[:, perm]
        out[:, offset:offset + size] = block.reshape(n, size)
    return out


def to_raw(std: np.ndarray, centre: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Coefficients ``(..., P, K)`` of the standardised design back on the covariates' own
    scale (module docstring); row 0 is the intercept (centre 0, scale 1)."""
    slopes = std[..., 1:, :] / scale[1:, None]
    intercept = std[..., :1, :] - np.sum(slopes * centre[1:, None], axis=-2, keepdims=True)
    return np.concatenate([intercept, slopes], axis=-2)
