"""MLED (Whiley 1999 §4.6.1): the Cooper-Herskovits evidence (eq. 4.1, log-gamma form) of the
ML EM fit's expected counts ``E[N_ijk | theta_hat]`` (the class counts included) with
Dirichlet(1) priors, ``mled``, and ``mled_corrected = mled + ln S`` (ranked)."""

from __future__ import annotations

from ...engines.dirichlet import complete_data_log_evidence
from ...params import to_tables
from ..flags import EM_FLAGS
from ..registry import Column, Method

__all__ = ["METHOD"]


def _values(fits) -> dict[str, float]:
    fit = fits.em
    value = float(complete_data_log_evidence(to_tables(fit.structure, fit.expected_counts),
                                             to_tables(fit.structure, fit.score_prior)))
    return {"mled": value, "mled_corrected": value + fit.log_alias}


METHOD = Method(
    name="mled", description="Cooper-Herskovits evidence of the EM expected counts (+ ln S)",
    needs=("em",), columns=(Column("mled", "MLED*"), Column("mled_corrected", "MLED")),
    values=_values, ranked="mled_corrected", flags=EM_FLAGS, plot=("MLED", "tab:gray", "D"),
    default=False)
