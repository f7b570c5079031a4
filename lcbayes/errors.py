"""Exception types of lcbayes.

Every error raised for bad user input is a subclass of :class:`LcbayesError` (itself a
``ValueError``) whose message names the offending column or argument and says how to fix it.
The command line turns these into a one-line message and exit status 2.
"""

from __future__ import annotations

__all__ = ["DataError", "LcbayesError", "StructureError", "TooLargeError"]


class LcbayesError(ValueError):
    """Base class of lcbayes' input errors."""


class DataError(LcbayesError):
    """The data cannot be used as categorical data (names the column and the fix)."""


class StructureError(LcbayesError):
    """A model structure is malformed or does not fit the data."""


class TooLargeError(LcbayesError):
    """An exact computation would need more terms than the stated limit."""
