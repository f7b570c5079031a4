"""The built-in methods of :func:`lcbayes.compare`, one module each; importing this package
registers them (in this order, which is the order of the table's columns)::

    bic, bic_e, aic, icl, cs, bicp    scores of one ML EM fit
    abic, caic, entropy, lmr, blrt    what applied LCA papers print (not run by default)
    vbem                              the variational lower bound F (+ ln S)
    smc                               SMC over the rows + bridge sampling of ln p(y | m)
    ais                               annealed importance sampling of ln p(y | m)
    laplace, laplace_block, laplace_diag, draper, mled, chib
                                      Whiley 1999 ch. 4 (not run by default)
    exact                             the exact evidence, where the sum is small enough
    loo                               PSIS leave-one-out cross-validation (not run by default)

To add a method, write a module like these (a :class:`~lcbayes.comparison.Method` called
``METHOD``) and add it to :data:`BUILT_IN` below, or call :func:`lcbayes.comparison.register`
from your own code.
"""

from __future__ import annotations

from .. import needs  # noqa: F401  (registers the engine runs the methods need)
from ..registry import register
from . import (
    abic,
    aic,
    ais,
    bic,
    bic_e,
    bicp,
    blrt,
    caic,
    chib,
    cs,
    draper,
    entropy,
    exact,
    icl,
    laplace,
    laplace_block,
    laplace_diag,
    lmr,
    loo,
    mled,
    smc,
    vbem,
)

__all__ = ["BUILT_IN"]

#: The built-in methods, registered in this order (the order of the table's columns).
BUILT_IN = tuple(register(m.METHOD) for m in (bic, bic_e, aic, icl, cs, bicp, abic, caic,
                                               entropy, lmr, blrt, vbem, smc, ais, laplace,
                                               laplace_block, laplace_diag, draper, mled,
                                               chib, exact, loo))
