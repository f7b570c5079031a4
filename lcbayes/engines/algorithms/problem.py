"""The estimation problem every algorithm of Whiley (1999) chapter 2 works on.

The parameters are the CPTs laid end to end (:mod:`lcbayes.inference.flat`), ``x``. The
objective is ``L(x) = sum_p w_p ln p(y_p | x)`` plus, for a MAP fit, the prior term
``sum (lambda - 1 + b) ln x`` of :mod:`lcbayes.engines.em`. :class:`Problem` gives what the
algorithms need from it, all on top of the inference core:

* the E step (optionally *tempered*: the log CPTs scaled by ``beta`` before the core's E step,
  so that the responsibilities are ``proportional to p(y, e)^beta``, DAEM's E step, §2.11) and
  the M step (Whiley eq. 2.3; with the prior, the MAP M step);
* the gradient ``dL/dx`` by ``jax.grad`` of the core's log marginals over the flat tables
  (any structure kind; App A.5.1 writes it out for naive networks with binary items);
* the EM step from that gradient (the expected counts are ``x dL/dx``);
* two coordinate systems of the simplex rows: the *traditional basis* with the last state of
  every row eliminated (``x_last = 1 - sum others``, App A.5), where a free gradient is
  ``g_k - g_last``, and the *softmax basis* with reference state 0 (``phi_k = ln x_k / x_0``,
  §1.3, App A.4);
* the largest step that keeps ``x + a d`` in the parameter space, ``min_i`` over the
  coordinates of ``-x_i / d_i`` (``d_i < 0``) and ``(1 - x_i) / d_i`` (``d_i > 0``); App A.5.2
  prints ``max``, a typo.

Entries can be *held* at given values (``held = (active, values)``): the switched-off classes
of class padding (:mod:`lcbayes.engines.padding`, partial rows) or whole tables that stay
fixed (the proportion-vector problem of §2.8.1, App A.1.1: only the class weights are free).
The gradient methods need held entries to fill whole rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from ...inference import flat, flat_e_step, flat_log_marginal, prepare
from ...structure import Structure
from ..em_core import m_step

__all__ = ["BOUNDARY", "GRADIENT_FLOOR", "Problem"]

#: Entries below this are at the boundary of the parameter space (:meth:`Problem.inward`).
BOUNDARY = 1e-12

#: Gradients are evaluated with every entry at least this (:meth:`Problem.value_and_gradient`).
GRADIENT_FLOOR = 1e-200


class Problem:
    """The objective, E and M steps, gradients and bases of one fit (traceable; build it
    inside the jitted function). ``alphas`` are the prior pseudo-count tables (``None``: ML),
    ``shift`` is ``b - 1`` of the EM module docstring, ``complete`` folds the E steps
    (:func:`lcbayes.inference.complete_columns`), ``vmapped``: the caller vmaps."""

    def __init__(self, structure: Structure, patterns, weights, alphas=None, shift: float = 0.0,
                 held=None, complete: tuple[int, ...] = (), vmapped: bool = False):
        self.structure = structure
        self.shapes = structure.table_shapes
        self.patterns = patterns
        self.complete = complete
        self.evidence = prepare(structure, patterns, complete)
        # unfolded: folding writes ln theta_c as ln theta_0 + (ln theta_c - ln theta_0), whose
        # gradient at a tiny theta_0 is a difference of huge numbers
        self.plain = prepare(structure, patterns) if complete else self.evidence
        self.weights = weights
        self.n_obs = jnp.maximum(weights.sum(), 1.0)
        self.vmapped = vmapped
        n = int(flat.offsets(self.shapes)[-1])
        self.rows = flat.entry_rows(self.shapes)
        self.n_rows = int(self.rows[-1]) + 1
        ends = flat.offsets([(1, r) for q, r in self.shapes for _ in range(q)])
        self.last_index = (ends[1:] - 1)[self.rows]
        self.first_index = ends[:-1][self.rows]
        self.width = jnp.asarray(np.diff(ends)[self.rows], dtype=jnp.float64)
        self.held = held
        active = jnp.ones(n, dtype=bool) if held is None else held[0]
        index = np.arange(n)
        self.free_theta = active & jnp.asarray(index != self.last_index)
        self.free_phi = active & jnp.asarray(index != self.first_index)
        self.dim = self.free_theta.sum()  # dim Theta: the free parameters
        prior = None if alphas is None else flat.flatten(alphas) + shift  # lambda - 1 + b
        self.prior = prior if prior is None or held is None else jnp.where(active, prior, 0.0)

    # ------------------------------------------------------------------ objective, E, M
    def hold(self, x):
        """``x`` with the held entries at their values."""
        return x if self.held is None else jnp.where(self.held[0], x, self.held[1])

    def prior_term(self, x):
        return 0.0 if self.prior is None else xlogy(self.prior, x).sum()

    def objective(self, x):
        """``L(x)``: the log-likelihood plus the prior term (MAP)."""
        log_marg = flat_log_marginal(self.structure, jnp.log(x), self.plain)
        return self.weights @ log_marg + self.prior_term(x)

    def e_step(self, x, beta=None):
        """``(ln p(y_p) per pattern, expected counts)``; with ``beta`` the tempered E step (the
        log CPTs scaled by ``beta``; the first value is then the log normaliser of
        ``p(y_p, e)^beta``)."""
        log_x = jnp.log(x) if beta is None else beta * jnp.log(x)
        return flat_e_step(self.structure, log_x, self.evidence, self.weights,
                           vmapped=self.vmapped)

    def m_step(self, counts):
        """The (MAP) M step, held entries kept."""
        return self.hold(m_step(counts, self.prior, self.shapes))

    def em_map(self, x):
        """``(L(x), M(x))``: the objective at ``x`` and one EM step from it."""
        log_marg, counts = self.e_step(x)
        return self.weights @ log_marg + self.prior_term(x), self.m_step(counts)

    # ------------------------------------------------------------------ gradients and bases
    def value_and_gradient(self, x):
        """``(L(x), dL/dx)``, every entry treated as free (``jax.grad``), held entries 0. The
        gradient is taken at ``max(x, GRADIENT_FLOOR)``: at an entry of exactly 0 the log-space
        route gives ``0 * inf``, while the derivative there is finite and may point inwards
        (an additive step must see it, or the entry is trapped at the boundary)."""
        value, g = jax.value_and_grad(self.objective)(jnp.maximum(x, GRADIENT_FLOOR))
        return value, g if self.held is None else jnp.where(self.held[0], g, 0.0)

    def row_sum(self, v):
        """Every entry replaced by the sum of its table row."""
        return jax.ops.segment_sum(v, self.rows, num_segments=self.n_rows)[self.rows]

    def to_free(self, g):
        """A full-entry gradient in the traditional basis with each row's last state
        eliminated: ``g_k - g_last`` on the free entries, 0 elsewhere (App A.5.1)."""
        return jnp.where(self.free_theta, g - g[self.last_index], 0.0)

    def expand(self, d):
        """A step ``d`` of the free coordinates as a step of every entry (the last state of a
        row moves by minus the row's sum)."""
        d = jnp.where(self.free_theta, d, 0.0)
        return d - jnp.asarray(self.last_index == np.arange(d.shape[0])) * self.row_sum(d)

    def inward(self, x, delta):
        """A full-entry step with the entries at the boundary (below :data:`BOUNDARY`) that it
        pushes out held there, the other moving entries of their row sharing the difference
        (an active set; ours: the thesis's parameter space has no boundary optima)."""
        blocked = (x < BOUNDARY) & (delta < 0)
        moving = (~blocked) & (delta != 0)
        excess = self.row_sum(jnp.where(blocked, 0.0, delta))
        share = self.row_sum(moving.astype(delta.dtype))
        return jnp.where(moving, delta - excess / jnp.where(share > 0, share, 1.0), 0.0)

    @staticmethod
    def max_step(x, delta):
        """The largest ``a >= 0`` keeping ``x + a delta`` in ``[0, 1]`` entrywise (the *min*
        over coordinates, App A.5.2 with its typo fixed); ``inf`` for a zero step."""
        bound = jnp.where(delta < 0, -x / jnp.where(delta < 0, delta, -1.0),
                          jnp.where(delta > 0, (1.0 - x) / jnp.where(delta > 0, delta, 1.0),
                                    jnp.inf))
        return jnp.maximum(bound.min(), 0.0)

    def to_phi(self, x):
        """The softmax basis: ``phi_k = ln(x_k / x_0)`` in every row (§1.3)."""
        log_x = jnp.log(x)
        return jnp.where(self.free_phi, log_x - log_x[self.first_index], 0.0)

    def from_phi(self, phi):
        """Back from the softmax basis (held entries at their values)."""
        return self.hold(jnp.exp(flat.log_normalise(phi, self.shapes)))

    def phi_gradient(self, x, g):
        """``dL/dphi`` in the softmax basis from ``g = dL/dx`` by the chain rule,
        ``x_k (g_k - sum_l x_l g_l)`` in every row (App A.4 writes it out for naive networks),
        0 on the reference states and held entries."""
        weighted = self.counts(x, g)
        return jnp.where(self.free_phi, weighted - x * self.row_sum(weighted), 0.0)

    def counts(self, x, g):
        """``x dL/dx`` entrywise (0 where ``x`` is): each CPT entry enters ``p(y)`` as a factor,
        so this is the E step's expected counts plus the prior's ``lambda - 1 + b``."""
        return jnp.where(x > 0, x * g, 0.0)

    def em_step(self, x, g):
        """``M(x)``, the (MAP) EM step, from ``g = dL/dx`` (:meth:`value_and_gradient`) instead
        of a second E step (:meth:`counts`)."""
        prior = 0.0 if self.prior is None else self.prior
        return self.m_step(jnp.maximum(self.counts(x, g) - prior, 0.0))
