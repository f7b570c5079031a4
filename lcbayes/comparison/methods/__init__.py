"""The built-in methods of :func:`lcbayes.compare`, one module each (the three Laplace
approximations share theirs); importing this package
registers them (in this order, which is the order of the table's columns)::

    bic, bic_e, aic, icl, cs, bicp    scores of one ML EM fit
    abic, caic, entropy, lmr, blrt    what applied LCA papers print (not run by default)
    vbem                              the variational lower bound F (+ ln S)
    smc                               SMC over the rows + bridge sampling of ln p(y | m)
    ais                               annealed importance sampling of ln p(y | m)
    laplace (full, block, diagonal), draper, mled, chib
                                      Whiley 1999 ch. 4 (not run by default)
    exact                             the exact evidence, where the sum is small enough
    loo                               PSIS leave-one-out cross-validation (not run by default)

To add a method, write a module like these (a :class:`~lcbayes.comparison.Method` called
``METHOD``; variants of one method, ``METHODS``) and add it to :data:`BUILT_IN` below, or call
:func:`lcbayes.comparison.register` from your own code.
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
    lmr,
    loo,
    mled,
    smc,
    vbem,
)

__all__ = ["BUILT_IN"]

#: The built-in methods, registered in this order (the order of the table's columns).
BUILT_IN = tuple(register(m) for m in (
    *(module.METHOD for module in (bic, bic_e, aic, icl, cs, bicp, abic, caic, entropy, lmr,
                                   blrt, vbem, smc, ais)),
    *laplace.METHODS, draper.METHOD, mled.METHOD, chib.METHOD, exact.METHOD, loo.METHOD))
