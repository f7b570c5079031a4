"""Synthetic latent class posteriors with known labels, in the InferenceData layout of
lcb.gibbs / lcb.rjmcmc, for the relabelling and diagnostics tests.

Three well-separated classes (weights 0.5, 0.3, 0.2) on four binary and two ternary items.
"Posterior draws" are independent Dirichlet draws about the truth (concentrations from the
expected class counts of ``N`` rows), so their exact mean is known; each draw's classes are then
shuffled by a known permutation ``sigma``: ``stored[..., j] = true[..., sigma[j]]``.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import arviz as az
import numpy as np
import xarray as xr
from scipy.special import logsumexp

WEIGHTS = np.array([0.5, 0.3, 0.2])
LABELS = {"A": ["no", "yes"], "B": ["no", "yes"], "C": ["no", "yes"], "D": ["no", "yes"],
          "E": ["low", "mid", "high"], "F": ["low", "mid", "high"]}
THETAS = {
    "A": [[0.1, 0.9], [0.9, 0.1], [0.9, 0.1]],
    "B": [[0.1, 0.9], [0.1, 0.9], [0.9, 0.1]],
    "C": [[0.1, 0.9], [0.9, 0.1], [0.1, 0.9]],
    "D": [[0.9, 0.1], [0.1, 0.9], [0.1, 0.9]],
    "E": [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]],
    "F": [[0.1, 0.1, 0.8], [0.8, 0.1, 0.1], [0.1, 0.8, 0.1]],
}
ITEMS = list(LABELS)
N_ROWS = 500

#: Per chain, the labellings a "stuck" sampler uses in the first and second half of its draws.
STUCK = [((0, 1, 2), (1, 0, 2)), ((1, 2, 0), (1, 2, 0)), ((2, 0, 1), (2, 0, 1)),
         ((0, 2, 1), (2, 1, 0))]


class Switched(NamedTuple):
    idata: az.InferenceData
    sigma: np.ndarray          # (chain, draw, 3); -1 where k != 3
    mean_weights: np.ndarray   # exact posterior mean, true labels
    mean_thetas: dict          # item -> (3, L)
    sd_weights: np.ndarray     # posterior sd per class
    sd_thetas: dict            # item -> (3, L)


def simulate(rng: np.random.Generator, n: int = N_ROWS, missing: float = 0.05) -> np.ndarray:
    """``(n, items)`` integer codes from the true model, a fraction ``missing`` set to -1."""
    z = rng.choice(3, size=n, p=WEIGHTS)
    cols = []
    for item in ITEMS:
        theta = np.asarray(THETAS[item])[z]
        u = rng.random(n)[:, None]
        cols.append((u > np.cumsum(theta, axis=1)).sum(axis=1))
    y = np.stack(cols, axis=1)
    y[rng.random(y.shape) < missing] = -1
    return y


def _alphas() -> tuple[np.ndarray, dict]:
    counts = N_ROWS * WEIGHTS
    return counts + 1.0, {c: counts[:, None] * np.asarray(THETAS[c]) + 1.0 for c in ITEMS}


def _dirichlet_moments(alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = alpha.sum(axis=-1, keepdims=True)
    mean = alpha / total
    return mean, np.sqrt(mean * (1 - mean) / (total + 1))


def _draw(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, dict]:
    """Parameter draws with the true labels: weights ``shape + (3,)``, thetas
    ``shape + (3, L)``."""
    a_w, a_t = _alphas()
    weights = rng.dirichlet(a_w, size=shape)
    thetas = {c: np.stack([rng.dirichlet(a_t[c][j], size=shape) for j in range(3)], axis=-2)
              for c in ITEMS}
    return weights, thetas


def log_likelihood(y: np.ndarray, weights: np.ndarray, thetas: dict) -> np.ndarray:
    """``ln p(y | params)`` per draw (weights ``(..., K)``, thetas ``(..., K, L)``)."""
    log_q = np.log(weights)[..., None]                                   # (..., K, 1)
    for m, c in enumerate(ITEMS):
        codes = y[:, m]
        term = np.log(thetas[c])[..., np.maximum(codes, 0)]              # (..., K, N)
        log_q = log_q + np.where(codes >= 0, term, 0.0)
    return logsumexp(log_q, axis=-2).sum(axis=-1)


def _shuffle(values: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``out[..., j, ...] = values[..., sigma[j], ...]``, the class axis at ``sigma.ndim - 1``."""
    index = sigma.reshape(sigma.shape + (1,) * (values.ndim - sigma.ndim))
    return np.take_along_axis(values, index, axis=sigma.ndim - 1)


def to_idata(y: np.ndarray, weights: np.ndarray, thetas: dict, log_lik: np.ndarray,
             k: np.ndarray | None = None) -> az.InferenceData:
    """An InferenceData in the samplers' layout (``k``: reversible jump output)."""
    chains, draws, slots = weights.shape
    coords = {"chain": np.arange(chains), "draw": np.arange(draws), "class": np.arange(slots)}
    post = {"class_weights": (("chain", "draw", "class"), weights)}
    for c in ITEMS:
        post[f"theta_{c}"] = (("chain", "draw", "class", f"{c}_category"), thetas[c])
        coords[f"{c}_category"] = LABELS[c]
    attrs = {"engine": "gibbs" if k is None else "rjmcmc", "seed": 0, "draws": draws,
             "warmup": 0, "chains": chains, "seconds": 0.0, "labels_json": json.dumps(LABELS)}
    if k is not None:
        post["k"] = (("chain", "draw"), k)
        values, counts = np.unique(k, return_counts=True)
        attrs |= {"max_classes": slots, "acceptance_json": json.dumps({"split": 0.1}),
                  "posterior_k_json": json.dumps({int(v): n / k.size
                                                  for v, n in zip(values, counts, strict=True)})}
    stats = {"log_likelihood": (("chain", "draw"), log_lik),
             "log_joint": (("chain", "draw"), log_lik)}
    observed = xr.Dataset({"y": (("row", "item"), y)},
                          coords={"row": np.arange(len(y)), "item": ITEMS})
    return az.InferenceData(
        posterior=xr.Dataset(post, coords=coords, attrs=attrs),
        sample_stats=xr.Dataset(stats, coords={"chain": coords["chain"],
                                               "draw": coords["draw"]}),
        observed_data=observed)


def _moments() -> tuple[np.ndarray, dict, np.ndarray, dict]:
    a_w, a_t = _alphas()
    mean_w, sd_w = _dirichlet_moments(a_w)
    thetas = {c: _dirichlet_moments(a_t[c]) for c in ITEMS}
    return (mean_w, {c: m for c, (m, _) in thetas.items()}, sd_w,
            {c: s for c, (_, s) in thetas.items()})


def switched(seed: int, chains: int = 4, draws: int = 250, mode: str = "random") -> Switched:
    """Fixed-K draws; ``mode="random"``: an independent random labelling per draw;
    ``"stuck"``: each chain in its own labelling, switching once (:data:`STUCK`)."""
    rng = np.random.default_rng(seed)
    y = simulate(rng)
    weights, thetas = _draw(rng, (chains, draws))
    if mode == "random":
        sigma = rng.permuted(np.broadcast_to(np.arange(3), (chains, draws, 3)), axis=2)
    else:
        half = np.arange(draws) >= draws // 2
        sigma = np.stack([np.where(half[:, None], second, first)
                          for first, second in STUCK[:chains]])
    log_lik = log_likelihood(y, weights, thetas)
    idata = to_idata(y, _shuffle(weights, sigma),
                     {c: _shuffle(t, sigma) for c, t in thetas.items()}, log_lik)
    return Switched(idata, sigma, *_moments())


def rjmcmc_like(seed: int, chains: int = 4, draws: int = 300, max_classes: int = 5
                ) -> Switched:
    """Padded reversible-jump-like draws: ``k`` in {2, 3, 4} (probabilities 0.2, 0.6, 0.2),
    draws with ``k = 3`` about the truth and randomly labelled within the first three slots,
    the others from a flat Dirichlet; inactive slots NaN."""
    rng = np.random.default_rng(seed)
    y = simulate(rng)
    k = rng.choice([2, 3, 4], size=(chains, draws), p=[0.2, 0.6, 0.2])
    near_w, near_t = _draw(rng, (chains, draws))
    sigma = rng.permuted(np.broadcast_to(np.arange(3), (chains, draws, 3)), axis=2)
    weights = np.full((chains, draws, max_classes), np.nan)
    thetas = {c: np.full((chains, draws, max_classes, len(LABELS[c])), np.nan) for c in ITEMS}
    for c, d in zip(*np.nonzero(k == 3), strict=True):
        weights[c, d, :3] = near_w[c, d, sigma[c, d]]
        for item in ITEMS:
            thetas[item][c, d, :3] = near_t[item][c, d, sigma[c, d]]
    for c, d in zip(*np.nonzero(k != 3), strict=True):
        weights[c, d, :k[c, d]] = rng.dirichlet(np.ones(k[c, d]))
        for item in ITEMS:
            thetas[item][c, d, :k[c, d]] = rng.dirichlet(np.ones(len(LABELS[item])),
                                                         size=k[c, d])
    with np.errstate(divide="ignore"):  # an inactive slot: weight 0, every theta 1
        log_lik = log_likelihood(y, np.nan_to_num(weights, nan=0.0),
                                 {i: np.nan_to_num(t, nan=1.0) for i, t in thetas.items()})
    sigma = np.where((k == 3)[..., None], sigma, -1)
    return Switched(to_idata(y, weights, thetas, log_lik, k=k), sigma, *_moments())
