"""The values of a score of the ML EM fit that sees one of the ``S`` equivalent labellings,
with its alias-corrected twin ``score + ln S`` (Beal & Ghahramani eq. 24): CS and BICp."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["with_alias_correction"]


def with_alias_correction(score: str) -> Callable[..., dict[str, float]]:
    """``values(fits) -> {score: s, score_corrected: s + ln S}`` of the EM fit's ``score``."""
    def values(fits) -> dict[str, float]:
        value = getattr(fits.em, score)
        return {score: value, f"{score}_corrected": value + fits.em.log_alias}

    return values
