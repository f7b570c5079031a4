"""The bias-adjusted three-step approach (``lcb.three_step``, issue 32) on simulated data from
known coefficients, beside the one-step fit and StepMix. Writes ``reports/three-step.md``.

Usage::

    python benchmarks/bench_three_step.py                   # 50 simulations per setting
    python benchmarks/bench_three_step.py --reps 100        # more (about 2x the time)
    python benchmarks/bench_three_step.py --reps 3 --out /tmp/t.md   # smoke test

Part 1, repeated simulations (``--reps`` per setting, data set ``r`` drawn with
``numpy.random.default_rng([setting, r])``): N = 5000 rows, 3 classes, 6 binary items and one
standard normal covariate ``X``, membership ``softmax(b0 + b1 X)`` with class 1 the reference,
``b0 = (-0.7, -1.4)``, ``b1 = (1.0, -1.0)`` for classes 2 and 3 (mean shares about 0.49, 0.32,
0.19); class 1 answers 1 to every item with probability ``q``, class 2 to items 1-3 with ``q``
and 4-6 with ``1 - q``, class 3 to every item with ``1 - q``; ``q = 0.9`` (high separation) and
``q = 0.75`` (low). Every data set is fitted by ``lcb.three_step`` with modal assignment and
no correction, BCH and ML (standard errors with and without step 1's variance), with
proportional assignment and BCH and ML, and by the one-step ``lcb.em(..., covariates=)``
(empirical standard errors). Estimated classes are matched to the true ones by their item
profiles, and coefficients and covariances re-referenced when the order differs. Per method
and coefficient: mean estimate, bias, its Monte Carlo standard error ``SD / sqrt(R)`` and
``t = bias / MC s.e.``, the empirical SD, the mean standard error and the coverage of the 95%
Wald interval. Acceptance (issue 32): BCH and ML biases within 2 Monte Carlo standard errors
of zero, the uncorrected slopes biased toward zero.

Part 2, StepMix (``pip install stepmix``; skipped when absent) on the first simulated data
set of each setting and on the cheating data (``LIEEXAM LIEPAPER FRAUD COPYEXAM``, covariate
``GPA``, the 315 rows that have it, K = 2): ``StepMix(n_steps=3, correction="BCH" | "ML",
assignment="modal", measurement="binary", structural="covariate", n_init=10)`` with its
defaults (the covariate model takes one Newton step per M step, and BCH's step 3 is one M
step), with ``structural_params={"max_iter": 1000, "tol": 1e-10}``, and with that and a tight
step 1 (``abs_tol=1e-15``); lcbayes with ``tol=1e-8`` (its default) and ``1e-12``. Every
estimate is judged by the objective of its own step 3 computed here from its own posteriors
(the BCH weighted log-likelihood, the ML log-likelihood with its ``D``; for lcbayes the same
number as its ``objective``), and StepMix's step 3 is re-maximised here from its posteriors
by BFGS with the exact gradient (an implementation of neither package). StepMix's soft
assignment ML is another estimator than lcbayes' proportional ML (module docstring of
``lcbayes.engines.regression.three_step``), so only modal assignment is compared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import lcbayes as lcb
from lcbayes.render import md_table, versions, write_text

ROOT = Path(__file__).resolve().parents[1]
BETA = np.array([[0.0, -0.7, -1.4], [0.0, 1.0, -1.0]])
TERMS = ["b0 (class 2)", "b0 (class 3)", "b1 (class 2)", "b1 (class 3)"]  # row-major (P, K-1)
SETTINGS = {"high separation, q = 0.9": 0.9, "low separation, q = 0.75": 0.75}
ITEMS = [f"Y{j + 1}" for j in range(6)]
N = 5000
#: (label, three_step options or None for the one-step fit)
METHODS = [("none (modal)", {"correction": "none"}),
           ("BCH (modal)", {"correction": "bch"}),
           ("ML (modal)", {"correction": "ml"}),
           ("BCH (proportional)", {"correction": "bch", "assignment": "proportional"}),
           ("ML (proportional)", {"correction": "ml", "assignment": "proportional"}),
           ("one-step", None)]
STEP3_ONLY = ("none (modal)", "BCH (modal)", "ML (modal)")  # also fitted with step-3 SEs


def profiles(q: float) -> np.ndarray:
    return np.array([[q] * 6, [q] * 3 + [1 - q] * 3, [1 - q] * 6])


def simulate(q: float, seed) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=N)
    eta = np.c_[np.ones(N), x] @ BETA
    prob = np.exp(eta - eta.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    classes = (rng.random((N, 1)) > prob.cumsum(axis=1)).sum(axis=1)
    frame = pd.DataFrame((rng.random((N, 6)) < profiles(q)[classes]).astype(int), columns=ITEMS)
    frame["X"] = x
    return frame


def match(yes: np.ndarray, q: float) -> tuple[int, ...]:
    """``perm[t]``: the estimated class of true class ``t`` (by the item profiles ``(K, J)``)."""
    return min(itertools.permutations(range(3)),
               key=lambda p: np.abs(yes[list(p)] - profiles(q)).sum())


def rereference(coef: np.ndarray, cov: np.ndarray, perm) -> tuple[np.ndarray, np.ndarray]:
    """The free coefficients (row-major ``(P, K - 1)``) and their covariance with the classes
    in the true order, class 1 the reference."""
    p, k = coef.shape
    lin = np.zeros((p * (k - 1), p * (k - 1)))
    for row in range(p):
        for t in range(1, k):
            for c, sign in ((perm[t], 1.0), (perm[0], -1.0)):
                if c > 0:
                    lin[row * (k - 1) + t - 1, row * (k - 1) + c - 1] += sign
    free = lin @ coef[:, 1:].ravel()
    return free, lin @ cov[:p * (k - 1), :p * (k - 1)] @ lin.T


def one_replication(q: float, seed) -> dict[str, tuple]:
    """``{method: (estimate, se, se_step3 or None, seconds)}`` of one simulated data set."""
    frame = simulate(q, seed)
    structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[ITEMS]), 3)
    out = {}
    for label, options in METHODS:
        started = time.perf_counter()
        if options is None:
            fit = lcb.em(structure, frame, covariates=frame[["X"]], restarts=5, seed=0,
                         standard_errors="empirical")
            params, cov = fit.params, fit.coef_cov
        else:
            fit = lcb.three_step(structure, frame, covariates=["X"], **options)
            params, cov = fit.measurement.params, fit.covariance
        seconds = time.perf_counter() - started
        perm = match(np.stack([params[i][:, 1] for i in ITEMS], axis=1), q)
        est, cov = rereference(fit.coef, cov, perm)
        se3 = None
        if label in STEP3_ONLY:
            step3 = lcb.three_step(structure, frame, covariates=["X"], standard_errors="step3",
                                   **options)
            se3 = np.sqrt(np.diag(rereference(step3.coef, step3.covariance, perm)[1]))
        out[label] = (est, np.sqrt(np.diag(cov)), se3, seconds, perm != (0, 1, 2))
    return out


def summarise(runs: list[dict]) -> list[list[str]]:
    truth = BETA[:, 1:].ravel()
    rows = []
    for label, _ in METHODS:
        est = np.array([r[label][0] for r in runs])
        se = np.array([r[label][1] for r in runs])
        reps = len(runs)
        sd = est.std(axis=0, ddof=1) if reps > 1 else np.full(4, math.nan)
        cover = (np.abs(est - truth) <= 1.96 * se).mean(axis=0)
        se3 = ([np.array([r[label][2] for r in runs])] if label in STEP3_ONLY else [None])[0]
        for j, term in enumerate(TERMS):
            bias = est[:, j].mean() - truth[j]
            mc = sd[j] / math.sqrt(reps)
            rows.append([label, term, f"{truth[j]:.2f}", f"{est[:, j].mean():.4f}",
                         f"{bias:+.4f}", f"{mc:.4f}", f"{bias / mc:+.2f}", f"{sd[j]:.4f}",
                         f"{se[:, j].mean():.4f}", f"{cover[j]:.2f}",
                         "" if se3 is None else f"{se3[:, j].mean():.4f}",
                         "" if se3 is None else
                         f"{(np.abs(est[:, j] - truth[j]) <= 1.96 * se3[:, j]).mean():.2f}"])
    return rows


def acceptance(rows: list[list[str]]) -> list[str]:
    lines = []
    for label in ("BCH (modal)", "ML (modal)", "BCH (proportional)", "ML (proportional)"):
        t = [abs(float(r[6])) for r in rows if r[0] == label]
        lines.append(f"- {label}: largest |bias| / MC s.e. {max(t):.2f} "
                     f"({'within' if max(t) < 2 else 'NOT within'} 2)")
    for label in ("BCH (modal)", "ML (modal)"):
        cover = [float(r[9]) for r in rows if r[0] == label]
        step3 = [float(r[11]) for r in rows if r[0] == label]
        lines.append(f"- {label}: coverage of the 95% intervals {min(cover):.2f}-{max(cover):.2f}"
                     f" with step 1's variance, {min(step3):.2f}-{max(step3):.2f} without")
    slopes = [r for r in rows if r[0] == "none (modal)" and r[1].startswith("b1")]
    toward = all(abs(float(r[3])) < abs(float(r[2])) and abs(float(r[6])) > 2 for r in slopes)
    lines.append("- none (modal): slopes " + ", ".join(f"{r[3]} (truth {r[2]})" for r in slopes)
                 + (": biased toward zero" if toward else ": NOT clearly biased toward zero"))
    return lines


# ---------------------------------------------------------------------- StepMix
def _log_softmax(eta: np.ndarray) -> np.ndarray:
    top = eta.max(axis=1, keepdims=True)
    return eta - top - np.log(np.exp(eta - top).sum(axis=1, keepdims=True))


def _step3_terms(correction: str, post: np.ndarray, design: np.ndarray, coef: np.ndarray):
    """Step 3's objective (modal assignment) and its gradient in the full ``(P, K)``
    coefficients, from posteriors ``(n, K)`` and the design: BCH's weighted log-likelihood
    ``sum_i sum_t a_it ln p_it`` (gradient ``Z'(A - P)``) or the ML correction's
    ``sum_i ln sum_t p_it D_t,w_i`` (gradient ``Z'(R - P)``, ``R`` the classes' posteriors
    given the assignment); lcb.three_step's module docstring has the equations."""
    modal = np.eye(post.shape[1])[post.argmax(axis=1)]
    d = post.T @ modal / post.sum(axis=0)[:, None]
    log_prev = _log_softmax(design @ coef)
    prev = np.exp(log_prev)
    if correction == "bch":
        weights = modal @ np.linalg.inv(d)
        return float((weights * log_prev).sum()), design.T @ (weights - prev)
    joint = prev * (modal @ d.T)  # p_it D_t,w_i
    q = joint.sum(axis=1, keepdims=True)
    return float(np.log(q).sum()), design.T @ (joint / q - prev)


def step3_objective(correction: str, post: np.ndarray, design: np.ndarray,
                    coef: np.ndarray) -> float:
    """Step 3's objective (:func:`_step3_terms`)."""
    return _step3_terms(correction, post, design, coef)[0]


def step3_maximum(correction: str, post: np.ndarray, design: np.ndarray,
                  coef: np.ndarray) -> np.ndarray:
    """The full coefficients (class 1 of ``post`` the reference) maximising step 3's
    objective from ``coef``, by BFGS with the exact gradient, to a gradient of 1e-9 per row:
    an implementation independent of lcbayes' and StepMix's."""
    from scipy.optimize import minimize

    p, k = coef.shape
    n = len(post)

    def full(free):
        return np.concatenate([np.zeros((p, 1)), free.reshape(p, k - 1)], axis=1)

    def negative(free):
        value, grad = _step3_terms(correction, post, design, full(free))
        return -value / n, -grad[:, 1:].ravel() / n

    start = (coef - coef[:, :1])[:, 1:].ravel()
    done = minimize(negative, start, jac=True, method="BFGS", options={"gtol": 1e-9})
    return full(done.x)


def stepmix_fit(x: np.ndarray, z: np.ndarray, k: int, correction: str, settings,
                abs_tol: float):
    from stepmix.stepmix import StepMix

    model = StepMix(n_components=k, n_steps=3, measurement="binary", structural="covariate",
                    correction=correction.upper(), assignment="modal", n_init=10,
                    random_state=0, max_iter=100000, abs_tol=abs_tol,
                    structural_params=settings, progress_bar=0, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, z)
    params = model.get_parameters()
    beta = params["structural"]["beta"].T  # (P, K) full softmax coefficients
    return (beta, params["measurement"]["pis"], model.predict_proba_class(x),
            float(model.score(x)) * len(x))


#: StepMix's covariate model run to convergence (its default: one Newton step per M step).
STRUCTURAL = {"max_iter": 1000, "tol": 1e-10}


def _ordered(coef: np.ndarray, order) -> np.ndarray:
    """Full ``(P, K)`` coefficients with class ``order[t]`` as class ``t``, class 1 the
    reference."""
    return coef[:, list(order)] - coef[:, [order[0]]]


def compare_stepmix(name: str, frame: pd.DataFrame, items: list[str], k: int,
                    q: float | None) -> tuple[list[list[str]], list[str]]:
    """Table rows: per correction lcbayes' estimates (``tol`` 1e-8, the default, and 1e-12)
    and StepMix's under three settings, each with its step-1 log-likelihood, its coefficients
    (classes in the true order, or by decreasing share), the objective on its own
    posteriors, StepMix's objective at lcbayes' (tol=1e-12) estimate and the largest
    difference from it; then StepMix's step 3 re-maximised here from its last posteriors.
    Also a sentence per correction on which StepMix setting converged, judged by the
    objective, and how far its estimates are from lcbayes'."""
    used = frame.dropna(subset=["X"])
    x = used[items].to_numpy() - used[items].to_numpy().min()
    design = np.c_[np.ones(len(used)), used["X"].to_numpy()]
    structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[items]), k)
    rows, notes = [], []

    def order_of(yes: np.ndarray, post: np.ndarray):
        return match(yes, q) if q is not None else tuple(np.argsort(-post.mean(axis=0),
                                                                    kind="stable"))

    def cells(coef: np.ndarray) -> str:
        return " ".join(f"{v:.5f}" for v in coef[:, 1:].ravel())

    for correction in ("bch", "ml"):
        for tol in (1e-8, 1e-12):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours = lcb.three_step(structure, frame, covariates=["X"], correction=correction,
                                      standard_errors=None, tol=tol)
            post = ours.measurement.class_posteriors
            check = step3_objective(correction, post, design, ours.coef)
            assert abs(check - ours.objective) < 1e-6 * max(1.0, abs(check)), (check, ours)
            yes = np.stack([ours.measurement.params[i][:, -1] for i in items], axis=1)
            ours_coef = _ordered(ours.coef, order_of(yes, post))
            rows.append([name, correction.upper(), f"lcbayes, tol={tol:g}",
                         f"{ours.measurement.loglik:.8f}", cells(ours_coef),
                         f"{ours.objective:.6f}", "", f"gradient {ours.max_gradient:.1e}"])
        fits = {}
        for label, settings, abs_tol in (
                ("default", None, 1e-10),
                ("structural max_iter=1000, tol=1e-10", STRUCTURAL, 1e-10),
                ("the same and abs_tol=1e-15", STRUCTURAL, 1e-15)):
            beta, pis, sm_post, loglik = stepmix_fit(x, used[["X"]].to_numpy(), k, correction,
                                                     settings, abs_tol)
            order = order_of(pis, sm_post)
            coef = _ordered(beta, order)
            back = np.zeros_like(beta)  # lcbayes' estimate in StepMix's class order
            back[:, list(order)] = ours_coef
            own = step3_objective(correction, sm_post, design, beta)
            fits[label] = (coef, own, loglik, np.abs(coef - ours_coef).max())
            rows.append([name, correction.upper(), f"StepMix, {label}", f"{loglik:.8f}",
                         cells(coef), f"{own:.6f}",
                         f"{step3_objective(correction, sm_post, design, back):.6f}",
                         f"max diff {np.abs(coef - ours_coef).max():.1e}"])
        best = step3_maximum(correction, sm_post, design, beta)
        rows.append([name, correction.upper(), "StepMix's last posteriors, re-maximised here",
                     "", cells(_ordered(best, order)),
                     f"{step3_objective(correction, sm_post, design, best):.6f}", "",
                     f"max diff {np.abs(_ordered(best, order) - coef).max():.1e} from "
                     "StepMix's"])
        default, converged = fits["default"], fits["structural max_iter=1000, tol=1e-10"]
        tight = fits["the same and abs_tol=1e-15"]
        if abs(converged[1] - default[1]) < 1e-5:
            verdict = "both settings reach the same estimate"
        else:
            better = "converged" if converged[1] > default[1] else "default"
            verdict = f"the {better} setting has the higher objective, so it is the maximum"
        notes.append(
            f"- {name}, {correction.upper()}: StepMix's default gives {cells(default[0])} "
            f"(objective {default[1]:.6f}), run to convergence {cells(converged[0])} "
            f"(objective {converged[1]:.6f}): {verdict}. That estimate is "
            f"{converged[3]:.1e} from lcbayes' (tol=1e-12), its step 1 (abs_tol=1e-10) "
            f"stopping {ours.measurement.loglik - converged[2]:.1e} below lcbayes' step-1 "
            f"log-likelihood; with StepMix's step 1 run to abs_tol=1e-15 (log-likelihoods "
            f"{abs(ours.measurement.loglik - tight[2]):.1e} apart) the two differ by "
            f"{tight[3]:.1e}.")
    return rows, notes


def stepmix_section() -> list[str]:
    try:
        from importlib.metadata import version

        import stepmix  # noqa: F401
    except ImportError:
        return ["StepMix is not installed (`pip install stepmix`): skipped.", ""]
    cheat = lcb.datasets.frame("cheating").rename(columns={"GPA": "X"})
    cases = [("cheating, K = 2", cheat, ["LIEEXAM", "LIEPAPER", "FRAUD", "COPYEXAM"], 2, None)]
    for index, (setting, q) in enumerate(SETTINGS.items()):
        cases.append((f"simulated ({setting.split(',')[0]}), first data set",
                      simulate(q, [index, 0]), ITEMS, 3, q))
    rows, notes = [], []
    for case in cases:
        more_rows, more_notes = compare_stepmix(*case)
        rows, notes = rows + more_rows, notes + more_notes
    return [f"StepMix {version('stepmix')}, modal assignment; coefficients of classes 2.. "
            "against class 1 (intercepts, then slopes).", "",
            *md_table(["data", "correction", "fit", "step-1 log-likelihood", "coefficients",
                       "objective (own posteriors)", "StepMix's objective at lcbayes' estimate",
                       "convergence / difference"], rows), "", *notes, ""]


# ---------------------------------------------------------------------- the report
def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50, help="simulations per setting")
    parser.add_argument("--out", default=str(ROOT / "reports" / "three-step.md"))
    args = parser.parse_args(argv)
    started, load = time.perf_counter(), os.getloadavg()[0]
    lines = ["# Bias-adjusted three-step estimation", "",
             f"`python benchmarks/bench_three_step.py --reps {args.reps}` "
             f"({dt.date.today().isoformat()}); see the script's docstring for the design.", ""]
    for index, (setting, q) in enumerate(SETTINGS.items()):
        runs, seconds = [], {label: [] for label, _ in METHODS}
        warned = 0
        for r in range(args.reps):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                runs.append(one_replication(q, [index, r]))
            warned += sum(issubclass(w.category, lcb.errors.ConvergenceWarning)
                          for w in caught)
            for label, _ in METHODS:
                seconds[label].append(runs[-1][label][3])
            print(f"{setting}: {r + 1}/{args.reps}", flush=True)
        rows = summarise(runs)
        error = lcb.three_step(lcb.latent_class(lcb.Dataset.from_pandas(
            simulate(q, [index, 0])[ITEMS]), 3), simulate(q, [index, 0]),
            covariates=["X"], standard_errors=None).classification_error
        reordered = sum(any(run[label][4] for label, _ in METHODS) for run in runs)
        lines += [f"## {setting}", "",
                  f"{args.reps} data sets of N = {N}; classification error of the first "
                  f"(modal assignment) {error:.3f}; estimated classes in another order than "
                  f"the true ones (re-referenced) in {reordered}; convergence warnings "
                  f"{warned}; median seconds per fit: " + ", ".join(
                      f"{label} {np.median(seconds[label]):.2f}" for label, _ in METHODS), "",
                  *md_table(["method", "coefficient", "truth", "mean", "bias", "MC s.e.",
                             "bias / MC s.e.", "SD", "mean SE", "coverage",
                             "mean SE (step 3 only)", "coverage (step 3 only)"], rows), "",
                  "Acceptance:", "", *acceptance(rows), ""]
        print("\n".join(lines[-len(rows) - 12:]), flush=True)
    lines += ["## Against StepMix", "", *stepmix_section()]
    lines += [f"Total {time.perf_counter() - started:.0f} s; load average "
              f"{load:.1f} before, {os.getloadavg()[0]:.1f} after.", "", "## Versions", "",
              *[f"- {k}: {v}" for k, v in versions().items()], ""]
    write_text(args.out, "\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
