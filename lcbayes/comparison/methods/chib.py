"""Chib's candidate estimator of ``ln p(y | m)`` (Whiley 1999 §4.2, :func:`lcbayes.chib`):
Rao-Blackwellised over Gibbs allocations, symmetrised over the ``K!`` labellings, with its
batch-means standard error ``chib_stderr``; latent class candidates of at most 12 classes. An
estimate of the log evidence after the exact value and AIS, unless flagged ``chib_unreliable``
(the chains disagree or a few draws carry the ordinate: :attr:`lcbayes.ChibResult.reliable`)."""

from __future__ import annotations

from ..flags import CHIB_UNRELIABLE
from ..policy import ROLES
from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    run = fits.chib
    nan = float("nan")
    return {"chib": nan if run is None else run.log_evidence,
            "chib_stderr": nan if run is None else run.stderr}


METHOD = Method(
    name="chib", description="Chib's candidate estimator of ln p(y | m), with its error",
    needs=("chib",),
    columns=(Column("chib", "Chib"), Column("chib_stderr", "Chib s.e.", in_report=False)),
    values=_values, ranked="chib", flags=(CHIB_UNRELIABLE,),
    evidence=ROLES["chib"],
    plot=("Chib", "tab:purple", "*"), default=False)
