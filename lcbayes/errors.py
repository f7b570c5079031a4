"""Exception types of lcbayes.

Every error raised for bad user input is a subclass of :class:`LcbayesError` (itself a
``ValueError``) whose message names the offending column or argument and says how to fix it.
An argument of the wrong *type* raises :class:`ArgumentTypeError`, which is also a
``TypeError``. The command line turns every :class:`LcbayesError` into a one-line message and
exit status 2.
"""

from __future__ import annotations

__all__ = ["ArgumentError", "ArgumentTypeError", "ConvergenceWarning", "DataError", "LcbayesError",
           "StructureError", "TooLargeError", "shown"]


class LcbayesError(ValueError):
    """Base class of lcbayes' input errors."""


class ArgumentError(LcbayesError):
    """An argument has a value outside what the function accepts (names the argument)."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument has the wrong type (names the argument); also a ``TypeError``."""


class DataError(LcbayesError):
    """The data cannot be used as categorical data (names the column and the fix)."""


class StructureError(LcbayesError):
    """A model structure is malformed or does not fit the data."""


class TooLargeError(LcbayesError):
    """An exact computation would need more terms than the stated limit."""


class ConvergenceWarning(UserWarning):
    """An iterative fit (EM, VBEM) stopped at its iteration cap before its convergence test
    held: its estimates may still move (raise ``max_iter`` or loosen ``tol``)."""


def shown(value: object) -> str:
    """``value`` as an error message shows it: its ``repr``, a NumPy scalar's as the Python
    value it holds (``1.5``, not ``np.float64(1.5)``)."""
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == () and item:
        value = item()
    return repr(value)
