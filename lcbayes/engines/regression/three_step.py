"""The bias-adjusted three-step approach: latent classes related to covariates and to a distal
outcome after the measurement model is fitted alone (Bolck, Croon & Hagenaars 2004; Vermunt
2010, "Latent class modeling with covariates: two improved three-step approaches"; Bakk,
Tekle & Vermunt 2013 for distal outcomes; Bakk, Oberski & Vermunt 2014 for the standard
errors).

**Step 1**, the measurement model: the latent class model of the indicators ``y`` is fitted
alone by :func:`lcbayes.em` (``restarts``, ``seed``, ``tol``, ``max_iter``; classes ordered
by decreasing share), on the rows that have every covariate and the outcome; the others are
left out of all three steps, with a warning that says how many. Its posteriors are
``P(X = t | y_i)``; missing items are summed out.

**Step 2**, assignment and classification errors: row ``i`` gets ``w_is = P(W = s | y_i)``:
``"modal"`` puts 1 on its most probable class (the first on a tie), ``"proportional"`` keeps
its posteriors. The classification-error matrix is

    D_ts = P(W = s | X = t) = sum_i P(X = t | y_i) w_is / sum_i P(X = t | y_i)

(Vermunt 2010; Bakk, Tekle & Vermunt 2013), every row summing to 1; the classification error
``1 - (1/N) sum_i sum_t P(X = t | y_i) w_it`` is the expected share of rows assigned to
another class than their own.

**Step 3**: membership is a multinomial logit on the design ``z`` of the covariates,
``P(X = t | z) = softmax_t(z' beta)`` with class 1 the reference (the coefficients of
:func:`lcbayes.em` with ``covariates=``; without covariates ``z`` is the intercept and
``beta`` the class shares' log odds); a distal outcome ``d`` depends on the class alone,
categorical (``P(d = c | X = t) = p_tc``) or continuous (``d | X = t ~ N(mu_t, sigma_t^2)``).
With ``f(d | t)`` its density (1 without an outcome), the corrections are:

* ``"none"``: the assignments taken as the classes, maximising
  ``sum_i sum_t w_it [ln P(X = t | z_i) + ln f(d_i | t)]``; misclassification dilutes every
  association, so the estimates are biased toward none;
* ``"bch"``: the same objective with the weights ``a_it = sum_s w_is (D^-1)_st`` in place of
  ``w_it`` (Vermunt 2010's form of Bolck, Croon & Hagenaars 2004; Bakk, Tekle & Vermunt 2013
  for outcomes), whose expected table over ``(class, z, d)`` is the true one. The rows of
  ``D^-1`` sum to 1, so every row's weights do and ``beta``'s objective stays concave although
  some weights are negative; the outcome's estimates are weighted means, variances and
  proportions, which poorly separated classes can push outside the parameter space (a
  warning says so; the ML correction cannot leave it);
* ``"ml"``: the assignment as one indicator of ``X`` whose error probabilities ``D`` are fixed
  at their step-2 values (Vermunt 2010; Bakk, Tekle & Vermunt 2013), maximising
  ``sum_i sum_s w_is ln sum_t P(X = t | z_i) f(d_i | t) D_ts``: one term per row with modal
  assignment, ``K`` records weighted by ``w_is`` with proportional assignment (StepMix instead
  takes ``prod_s D_ts^w_is`` as a row's likelihood, the same only for modal assignment).
  Covariates and an outcome given together make one joint model here.

The coefficients are maximised by Newton's method in a trust region with exact JAX gradients
and Hessians (SciPy's ``trust-exact``, then plain Newton steps) until the gradient is at most
``tol`` per row (not below 1e-11: rounding) and the Hessian is negative definite
(``converged``; a ``ConvergenceWarning`` otherwise); the
outcome's ``"none"`` and ``"bch"`` estimates have closed forms. The ML correction starts from
the uncorrected and the BCH estimates and keeps the higher likelihood.

**Standard errors** (``standard_errors``), with ``H`` the Hessian of step 3's objective and
``B = sum_i s_i s_i^T`` its rows' score products:

* ``"step3"``: step 3's own, ``D`` and the assignments held fixed: the inverse observed
  information ``(-H)^-1`` of the ML correction (Vermunt 2010) and of the uncorrected analysis
  with modal assignment; the sandwich ``H^-1 B H^-1`` for BCH (its weights are no
  frequencies) and for proportional assignment (a weighted pseudo-likelihood);
* ``"corrected"`` (default): the same plus the variance that step 1's estimation error passes
  on through the posteriors, ``D`` and the weights, ``G V_1 G^T`` (Bakk, Oberski & Vermunt
  2014), with ``G = -H^-1 d^2 Q / d rho d phi`` (the implicit function theorem on step 3's
  score; ``phi`` step 1's parameters) and ``V_1`` the inverse observed information of step 1.
  With modal assignment and no correction the estimate does not depend smoothly on ``phi``
  and nothing is added.

Example::

    frame = lcb.datasets.frame("cheating")
    data = lcb.datasets.load("cheating")
    res = lcb.three_step(lcb.latent_class(data, 2), frame, covariates=["GPA"],
                         correction="bch")        # 4 rows lack GPA: warned
    print(res.summary())
"""

from __future__ import annotations

import time
import warnings
from typing import Literal

import jax.numpy as jnp
import numpy as np

from ...errors import ArgumentError, ConvergenceWarning, DataError
from ...render import json_value
from ...structure import Structure
from ...validation import Seed, check_choice, check_int, check_positive, fit_data, seed_record
from ..em import em
from ..run_record import start_engine
from .cells import TINY, one_hot, softmax, valid_mask
from .design import Covariates
from .fit import Distal, DistalType, resolve_covariates, resolve_distal
from .three_step_estimation import (
    MAX_CONDITION,
    Layout,
    Rows,
    classification,
    covariance,
    distal_estimate,
    estimate_step3,
    log_posteriors,
)
from .three_step_result import ThreeStepResult

__all__ = ["ASSIGNMENTS", "CORRECTIONS", "three_step"]

ASSIGNMENTS = ("modal", "proportional")
CORRECTIONS = ("none", "bch", "ml")


def _outcome(structure: Structure, frame, distal, n_rows: int, distal_type: DistalType,
             covariates: Covariates | None) -> Distal:
    """The distal outcome (:func:`.fit.resolve_distal`: a column name of a DataFrame
    ``frame``, a Series or a one-column DataFrame), not a covariate, with two values at
    least."""
    outcome = resolve_distal(structure, frame, distal, n_rows, distal_type)
    if covariates is not None and outcome.name in covariates.columns:
        raise ArgumentError(f"distal {outcome.name!r} is also a covariate; a column is one or "
                            "the other")
    seen = outcome.values[_seen(outcome)]
    if np.unique(seen).size < 2:
        raise DataError(f"distal {outcome.name!r} has fewer than two distinct values")
    return outcome


def _seen(outcome: Distal) -> np.ndarray:
    """Rows whose outcome is observed."""
    return (~np.isnan(outcome.values) if outcome.kind == "continuous"
            else outcome.values >= 0)


def _step1_parameters(structure: Structure, params) -> tuple[np.ndarray, np.ndarray]:
    """``phi`` (:mod:`.three_step_estimation`) of step 1's tables and the flat ``(J, K, C)``
    positions of its item log-ratios."""
    k = int(structure.n_classes or 0)
    cards = [structure.cardinalities[i] for i in structure.observed_nodes]
    c_max = max(cards)
    log_shares = np.log(np.maximum(np.asarray(params[structure.nodes[structure.root]]), TINY))
    phi, positions = [log_shares[1:] - log_shares[0]], []
    for j, i in enumerate(structure.observed_nodes):
        log_table = np.log(np.maximum(np.asarray(params[structure.nodes[i]]), TINY))
        phi.append((log_table[:, 1:] - log_table[:, :1]).ravel())
        positions += [(j * k + t) * c_max + c for t in range(k) for c in range(1, cards[j])]
    return np.concatenate(phi), np.asarray(positions, dtype=np.int64)


def _padded(values: np.ndarray, n_pad: int) -> jnp.ndarray:
    """``values`` with zero rows appended up to ``n_pad`` rows."""
    pad = [(0, n_pad - values.shape[0])] + [(0, 0)] * (values.ndim - 1)
    return jnp.asarray(np.pad(values, pad))


def _rows(structure: Structure, codes: np.ndarray, positions: np.ndarray, design: np.ndarray,
          outcome: Distal | None, kept: np.ndarray) -> Rows:
    """The rows used (``codes``, ``design`` and the outcome's ``kept`` rows), padded to a
    power of two (at least 64) with rows of weight 0; ``assigned`` is filled in later."""
    n = codes.shape[0]
    n_pad = max(64, 1 << (n - 1).bit_length())
    cards = [structure.cardinalities[i] for i in structure.observed_nodes]
    k = int(structure.n_classes or 0)
    values = np.zeros(n) if outcome is None else outcome.values[kept]
    levels = (one_hot(values[:, None].astype(np.int64), len(outcome.labels))[:, 0, :]
              if outcome is not None and outcome.kind == "categorical" else np.zeros((n, 1)))
    return Rows(onehot=_padded(one_hot(codes, max(cards)), n_pad),
                valid=jnp.asarray(valid_mask(cards)), positions=jnp.asarray(positions),
                mask=_padded(np.ones(n), n_pad), assigned=_padded(np.zeros((n, k)), n_pad),
                design=_padded(design, n_pad),
                outcome=_padded(values if outcome is not None and outcome.kind == "continuous"
                                else np.zeros(n), n_pad),
                levels=_padded(levels, n_pad))


def three_step(
    structure: Structure,
    data,
    *,
    covariates=None,
    distal=None,
    distal_type: DistalType = "auto",
    assignment: Literal["modal", "proportional"] = "modal",
    correction: Literal["none", "bch", "ml"] = "ml",
    standard_errors: Literal["corrected", "step3"] | None = "corrected",
    restarts: int = 10,
    seed: Seed = 0,
    tol: float = 1e-8,
    max_iter: int = 2000,
) -> ThreeStepResult:
    """Relate the latent classes of ``structure`` to covariates and/or a distal outcome by the
    bias-adjusted three-step approach (module docstring: the equations and their sources).

    Args:
        structure: a latent class model (:func:`~lcbayes.latent_class`) of the indicators.
        data: the indicators' rows (a DataFrame, a :class:`~lcbayes.Dataset` with its row
            order, or an array of codes); missing items are summed out.
        covariates: the membership covariates: column name(s) of a DataFrame ``data``, a
            DataFrame of covariate columns (one row per data row) or a
            :class:`~lcbayes.Covariates`; text columns become indicators against a
            reference level, as in :func:`lcbayes.em`.
        distal: a distal outcome: a column name of a DataFrame ``data``, a Series or a
            one-column DataFrame (one value per data row).
        distal_type: ``"auto"`` (numbers continuous, text / bool / ``Categorical``
            categorical), ``"categorical"`` or ``"continuous"``.
        assignment: step 2's ``"modal"`` or ``"proportional"`` assignment.
        correction: step 3's ``"none"``, ``"bch"`` or ``"ml"`` (default; BCH is the more
            robust for a continuous outcome whose within-class distribution is not normal,
            Bakk & Vermunt 2016).
        standard_errors: ``"corrected"`` (default: step 3's with step 1's estimation
            variance added), ``"step3"`` (step 1 taken as known) or ``None``.
        restarts: random starts of step 1's EM.
        seed: step 1's seed (an integer or a ``jax.random`` key).
        tol: step 1's EM tolerance (change of the log-likelihood per row) and step 3's
            (largest gradient entry per row).
        max_iter: iteration limit of step 1's EM and of step 3's Newton iterations.

    Returns:
        A :class:`~lcbayes.ThreeStepResult`.

    Raises:
        ArgumentError: neither covariates nor a distal outcome, an unknown choice, or a
            column that is both covariate and outcome.
        DataError: a covariate or outcome that is not a column or is also an indicator,
            covariate rows that do not match the data, or ``D`` singular (BCH).
    """
    started, seed = start_engine(structure, seed)
    if structure.kind != "latent_class":
        raise ArgumentError("three_step needs a latent class structure (lcb.latent_class); "
                            f"got a {structure.kind} structure")
    if covariates is None and distal is None:
        raise ArgumentError("three_step needs covariates= or distal= (or both): step 3 relates "
                            "the classes to them")
    check_choice(assignment, "assignment", ASSIGNMENTS)
    check_choice(correction, "correction", CORRECTIONS)
    check_choice(distal_type, "distal_type", ("auto", "categorical", "continuous"))
    if standard_errors is not None:
        check_choice(standard_errors, "standard_errors", ("corrected", "step3"))
    restarts = check_int(restarts, "restarts", 1)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", 1)
    frame, data = data, fit_data(structure, data)
    if not data.has_row_order:
        raise DataError("data are patterns with counts (no row order), so covariate and "
                        "outcome rows cannot be matched to them; build the Dataset from rows")
    cov = None
    if covariates is not None:
        with warnings.catch_warnings():  # one warning below counts every row left out
            warnings.filterwarnings("ignore", message=r".* rows lack a covariate")
            cov = resolve_covariates(structure, frame, covariates, data.n_rows)
    outcome = (None if distal is None
               else _outcome(structure, frame, distal, data.n_rows, distal_type, cov))
    kept = np.ones(data.n_rows, dtype=bool) if cov is None else cov.kept.copy()
    if outcome is not None:
        kept &= _seen(outcome)
    n_used = int(kept.sum())
    if n_used < data.n_rows:
        what = " or ".join(([] if cov is None else [f"a covariate among {list(cov.columns)}"])
                           + ([] if outcome is None else [f"the outcome {outcome.name!r}"]))
        warnings.warn(f"{data.n_rows - n_used} of {data.n_rows} rows lack {what} and are "
                      "left out of all three steps", stacklevel=2)
    k = int(structure.n_classes or 0)
    if n_used <= k:
        raise DataError(f"only {n_used} rows have every covariate and the outcome")

    # step 1: the measurement model alone
    codes = np.asarray(data.codes)[kept]
    measurement = em(structure, codes, restarts=restarts, seed=seed, tol=tol,
                     max_iter=max_iter)
    phi, positions = _step1_parameters(structure, measurement.params)
    design = cov.matrix[kept] if cov is not None else np.ones((n_used, 1))
    rows = _rows(structure, codes, positions, design, outcome, kept)
    layout = Layout(k, design.shape[1], "none" if outcome is None else outcome.kind,
                    0 if outcome is None else len(outcome.labels))

    # step 2: assignment and classification errors
    post = np.exp(np.asarray(log_posteriors(jnp.asarray(phi), rows, k=k)))[:n_used]
    assigned = np.eye(k)[post.argmax(axis=1)]
    rows = rows._replace(assigned=rows.assigned.at[:n_used].set(assigned))
    modal = assignment == "modal"
    w, d, _ = (np.asarray(a) for a in classification(jnp.asarray(phi), rows, k=k,
                                                      modal=modal, bch=False))
    error = 1.0 - float((post * w[:n_used]).sum() / n_used)
    condition = np.linalg.cond(d)
    if correction == "bch" and not condition < MAX_CONDITION:
        raise DataError(f"the classification-error matrix D is singular (condition number "
                        f"{condition:.3g}): the classes are not told apart, so BCH weights "
                        "do not exist; use correction='ml'")

    # step 3
    x, rho, best, objective = estimate_step3(rows, layout, w, d, correction, tol, max_iter)
    if not best.converged:
        warnings.warn(ConvergenceWarning(
            f"step 3 ({correction}) stopped with a largest gradient of {best.gradient:.3g} per "
            f"row (tol={tol:g}) or at a point that is no maximum: raise max_iter, or the "
            "estimate does not exist (a coefficient running off to infinity)"), stacklevel=2)
    cov_matrix = None
    if standard_errors is not None:
        cov_matrix = covariance(x, phi, rows, layout, modal=modal, bch=correction == "bch",
                                ml=correction == "ml",
                                sandwich=correction == "bch" or not modal,
                                corrected=standard_errors == "corrected")
    nb = layout.n_beta
    coef = np.concatenate([np.zeros((layout.n_design, 1)), rho[:nb].reshape(-1, k - 1)], axis=1)
    return ThreeStepResult(
        structure=structure, measurement=measurement,
        covariates=None if cov is None else Covariates.from_description(cov.to_dict()),
        terms=tuple(cov.names) if cov is not None else ("(Intercept)",),
        distal=None if outcome is None else outcome.name,
        distal_type=None if outcome is None else outcome.kind,
        distal_labels=None if outcome is None or outcome.kind == "continuous"
        else tuple(json_value(v) for v in outcome.labels),
        assignment=assignment, correction=correction, se_method=standard_errors,
        classification_matrix=d, classification_error=error, coef=coef,
        distal_estimate=distal_estimate(rho[nb:], layout), covariance=cov_matrix,
        class_shares=softmax(design @ coef).mean(axis=0), objective=objective,
        max_gradient=best.gradient, n_iter=best.n_iter, converged=best.converged,
        n_rows=data.n_rows, n_used_rows=n_used, seconds=time.perf_counter() - started,
        seed=seed_record(seed), restarts=restarts, tol=tol, max_iter=max_iter)

