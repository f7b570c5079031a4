"""Expectation-maximisation for maximum-likelihood and MAP estimates: :func:`em`, the public
entry, dispatching to the fit its arguments ask for:

* a structure without covariates or groups (:mod:`lcbayes.engines.em_fit`, EM's jitted loop in
  :mod:`lcbayes.engines.em_loop`, the starts and the M step in :mod:`lcbayes.engines.em_core`,
  the alternative algorithms of Whiley 1999 ch. 2 in :mod:`lcbayes.engines.algorithms`);
* ``covariates=`` or ``distal=``: a latent class regression (:mod:`lcbayes.engines.regression`);
* ``group=``: a multiple-group model (:mod:`lcbayes.engines.groups`).

One name for the three, as poLCA's ``poLCA(formula, ...)`` and glca's ``glca(formula, group=)``
fit them; each route checks the options it takes and refuses the others.

Example::

    data = lcb.Dataset.from_csv("carcinoma.csv")
    fit = lcb.em(lcb.latent_class(data, 3), data, restarts=20, seed=0)
    print(fit.summary())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import jax

from ..errors import ArgumentError
from ..params import PriorSpec
from ..structure import Structure
from ..validation import Seed
from .em_core import EMRuns
from .em_fit import fit_structure
from .em_result import EMResult

if TYPE_CHECKING:
    from .groups.layout import Invariance
    from .groups.result import GroupResult
    from .regression.fit import DistalType
    from .regression.result import RegressionResult

__all__ = ["EMResult", "EMRuns", "em"]


@overload
def em(structure: Structure, data, *, restarts: int = ..., seed: Seed = ...,
       prior: PriorSpec = ..., tol: float = ..., max_iter: int = ...,
       map_basis: Literal["softmax", "simplex"] = ..., batch_size: int | None = ...,
       keep: int | None = ..., burn_in: int = ..., algorithm: str = ..., eta: float | None = ...,
       betas: float | Sequence[float] | None = ..., blocks: int | None = ...,
       pad_classes: int | None = ..., init: Mapping[str, Any] | EMResult | None = ...,
       standard_errors: Literal["empirical", "observed"] | None = ...,
       devices: int | Sequence[jax.Device] | None = ..., progress: bool = ...,
       covariates: None = ..., distal: None = ...) -> EMResult: ...
@overload
def em(structure: Structure, data, *, restarts: int = ..., seed: Seed = ..., tol: float = ...,
       max_iter: int = ..., batch_size: int | None = ..., init: RegressionResult | None = ...,
       standard_errors: Literal["empirical", "observed"] | None = ..., covariates: Any = ...,
       distal: Any = ..., distal_type: DistalType = ...) -> RegressionResult: ...
@overload
def em(structure: Structure, data, *, restarts: int = ..., seed: Seed = ..., tol: float = ...,
       max_iter: int = ..., batch_size: int | None = ...,
       standard_errors: Literal["empirical", "observed"] | None = ..., covariates: Any = ...,
       group: Any, invariance: Invariance = ...) -> GroupResult: ...


def em(
    structure: Structure,
    data,
    *,
    restarts: int = 10,
    seed: Seed = 0,
    prior: PriorSpec = None,
    tol: float = 1e-8,
    max_iter: int = 2000,
    map_basis: Literal["softmax", "simplex"] = "softmax",
    batch_size: int | None = None,
    keep: int | None = None,
    burn_in: int = 10,
    algorithm: str = "squarem",
    eta: float | None = None,
    betas: float | Sequence[float] | None = None,
    blocks: int | None = None,
    pad_classes: int | None = None,
    init: Mapping[str, Any] | EMResult | RegressionResult | None = None,
    standard_errors: Literal["empirical", "observed"] | None = None,
    devices: int | Sequence[jax.Device] | None = None,
    progress: bool = False,
    covariates=None,
    distal=None,
    distal_type: DistalType = "auto",
    group=None,
    invariance: Invariance = "full",
) -> EMResult | RegressionResult | GroupResult:
    """Fit ``structure`` to ``data`` by EM (or another algorithm of Whiley 1999 ch. 2) from
    ``restarts`` random starts; keep the best.

    Args:
        structure: the model (:func:`~lcbayes.latent_class`, :func:`~lcbayes.hlc`,
            :func:`~lcbayes.dag`).
        data: the data (a :class:`~lcbayes.Dataset`, a DataFrame or an array of codes);
            missing values are marginalised.
        restarts: number of random starting points.
        seed: a non-negative integer or a ``jax.random`` key; the same seed gives the same
            result.
        prior: ``None`` for maximum likelihood; otherwise a Dirichlet prior (``"dirichlet"`` for
            pseudo-count 1, a number, or ``{node: pseudo-counts}``) for a MAP estimate.
        tol: convergence threshold on the change of the objective per observed row.
        max_iter: iteration limit per restart.
        map_basis: ``"softmax"`` (add-lambda estimate) or ``"simplex"`` (posterior mode, needs
            pseudo-counts >= 1); ignored for maximum likelihood.
        batch_size: restarts run side by side (``vmap``); the rest run one batch after another,
            each restart stopping on its own. Default: all of them on a GPU/TPU, one at a time
            on a CPU, where batching gains little, every restart would run as long as the
            slowest, and (many patterns) the E step's rarely needed log-space fallback
            (:mod:`lcbayes.inference.coded`) would be computed at every step. Results do not
            depend on it.
        keep: if given, a two-stage run: all ``restarts`` starts run ``burn_in`` iterations,
            then only the ``keep`` best continue to convergence (like Mplus'
            ``STARTS = restarts keep``). Much faster when some starts stall near saddle points;
            ``None`` (default) runs every restart to convergence.
        burn_in: iterations of the first stage when ``keep`` is given.
        algorithm: ``"squarem"`` (default): every iteration is one SQUAREM cycle (two EM
            steps, a squared extrapolation and one EM step from it, with a monotone
            safeguard; up to three E steps), which cuts the iterations of slowly converging
            starts many-fold; ``"em"``: plain EM, one E step per iteration (both stop on the
            same plain-EM-step criterion and reach the same fixed points); or one of Whiley's
            chapter 2 (:mod:`lcbayes.engines.algorithms`): ``"iem"`` (incremental EM),
            ``"cg"``, ``"gcg"`` (conjugate gradients, generalised CG), ``"em_eta"``, ``"eg"``,
            ``"gp"`` (Helmbold et al.), ``"acg_phi"``, ``"acg_theta"``, ``"acg_theta_chi"``
            (approximate CG), ``"daem"`` (deterministic annealing EM). Each stops when the
            objective changes by less than ``tol`` per row over an iteration. A prior needs
            em, squarem, iem, daem, cg or gcg; ``pad_classes`` em, squarem, iem or daem.
        eta: the learning rate of em_eta, eg, gp and the acg family (per-observation scale),
            fixed as in the thesis; ``None`` (default): adaptive, from
            :data:`lcbayes.engines.algorithms.DEFAULT_ETA`, and safeguarded (ours): each
            proposal is compared with the EM step from the same point and the better one taken
            (so the method is monotone and gains at least EM's step per iteration, at one more
            gradient evaluation); the rate grows by 1.2 after a proposal that gained and halves
            after one that lost.
        betas: DAEM's inverse temperatures: increasing values in ``(0, 1]`` ending at 1, or a
            number ``beta_min`` for a geometric schedule of 10 from it to 1 (``None``: from 0.5).
        blocks: IEM's number of blocks of data patterns (``None``: at most 100; the number of
            patterns visits one pattern at a time).
        pad_classes: run a latent class model inside the compiled program of the model with
            ``pad_classes`` classes, the extra classes switched off
            (:mod:`lcbayes.engines.padding`): fits of several sizes then compile once. The
            same fit up to rounding and the convergence tolerance (what
            :func:`lcbayes.compare` does).
        init: one more start, given: parameters ``{node: CPT}`` of ``structure`` (e.g. a
            model found by :func:`lcbayes.learn_classes`, or published estimates) or an EM
            fit of it. It runs after the random starts, in the same compiled program;
            ``restarts=0`` runs it alone (then the fit is EM from ``init``, with every score
            of :class:`EMResult`).
        standard_errors: also compute the standard errors of the estimates from the
            ``"empirical"`` information (poLCA's) or the ``"observed"`` information
            (:mod:`lcbayes.information`); ``None`` (default): not (they cost one more
            compiled program per structure).
        devices: ``None`` (default): one device, JAX's default; a number ``n``: the first
            ``n`` of ``jax.devices()``; or a sequence of ``jax.Device``. The data patterns are
            split over them and the sums all-reduced (:mod:`lcbayes.sharding`): the same fit
            to rounding, on several GPUs (not with ``algorithm="iem"``).
        progress: show a progress bar over the restarts (a plain line now and then where
            the output is a log): the restarts then run in
            :data:`~lcbayes.engines.em_core.PROGRESS_PARTS` parts of one compiled
            size, one after another; the same fit.
        covariates: a latent class regression (:mod:`lcbayes.engines.regression`): class membership
            ``softmax(x' beta)`` on these covariates, fitted jointly with the item tables
            (one step, poLCA's model), returning a
            :class:`~lcbayes.RegressionResult`. A DataFrame of the covariate columns
            (one row per data row, in order), column name(s) of ``data`` when it is a
            DataFrame, or :func:`lcbayes.covariate_design`'s ``Covariates``. Text columns
            are categorical (indicators against the first level), numbers enter as they are;
            rows with a missing covariate are left out with a warning. Takes ``restarts``,
            ``seed``, ``tol``, ``max_iter``, ``batch_size``, ``standard_errors`` and ``init``
            (a ``RegressionResult``); the other options are refused.
        distal: a distal outcome fitted in the same step (a latent class regression, with or
            without covariates): one column (a column name of a DataFrame ``data``, a Series or
            a one-column DataFrame), class-dependent and reported apart from the indicators
            (``RegressionResult.distal_table``); missing values are marginalised.
        distal_type: ``"auto"`` (numbers continuous: a normal distribution per class; text,
            booleans, ``Categorical`` categorical), ``"categorical"`` or ``"continuous"``.
        group: a multiple-group latent class model (:mod:`lcbayes.engines.groups`): class
            prevalences per group of this column (a column name of a DataFrame ``data``, or
            one label per row), returning a :class:`~lcbayes.GroupResult`. Rows without a
            group or with every item missing are left out with a warning. Takes
            ``invariance``, ``covariates`` (common slopes on top of the group's
            prevalences), ``restarts``, ``seed``, ``tol``, ``max_iter``, ``batch_size`` and
            ``standard_errors``.
        invariance: with ``group``: ``"full"`` (item tables shared by the groups),
            ``"none"`` (every item's table group-specific; the classes are then aligned
            across groups by their item profiles) or the names of the group-specific items
            (partial invariance).
    """
    if group is not None or covariates is not None or distal is not None:
        from .regression.fit import check_route_options
        check_route_options(
            group=group, distal=distal, init=init,
            unsupported={"prior": prior is not None, "keep": keep is not None,
                         "algorithm": algorithm != "squarem",
                         "pad_classes": pad_classes is not None, "devices": devices is not None,
                         "progress": bool(progress), "blocks": blocks is not None,
                         "eta": eta is not None, "betas": betas is not None})
        if group is not None:
            from .groups.fit import fit_groups
            return fit_groups(structure, data, group, invariance=invariance,
                              covariates=covariates, restarts=restarts, seed=seed, tol=tol,
                              max_iter=max_iter, batch_size=batch_size,
                              standard_errors=standard_errors)
        from .regression.fit import fit_regression
        return fit_regression(structure, data, covariates, distal=distal,
                              distal_type=distal_type, init=cast("RegressionResult | None", init),
                              restarts=restarts, seed=seed,
                              tol=tol, max_iter=max_iter, batch_size=batch_size,
                              standard_errors=standard_errors)
    if invariance != "full":
        raise ArgumentError("invariance= needs group=: name the column whose groups the item "
                            "profiles may differ between")
    return fit_structure(structure, data, restarts=restarts, seed=seed, prior=prior, tol=tol,
                         max_iter=max_iter, map_basis=map_basis, batch_size=batch_size,
                         keep=keep, burn_in=burn_in, algorithm=algorithm, eta=eta, betas=betas,
                         blocks=blocks, pad_classes=pad_classes,
                         init=cast("Mapping[str, Any] | EMResult | None", init),
                         standard_errors=standard_errors, devices=devices, progress=progress)
