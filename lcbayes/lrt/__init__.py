"""Likelihood-ratio tests of K-1 against K latent classes: the parametric bootstrap (BLRT) and
the Lo-Mendell-Rubin tests (LMR), as applied papers report them beside BIC.

:mod:`.bootstrap` (the parametric bootstrap), :mod:`.vuong` (Lo-Mendell-Rubin and Vuong-LMR) and
:mod:`.results` (their result types and the checks of the EM fits they take).
"""

from .bootstrap import BLOCK, blrt
from .results import BLRTResult, LMRResult
from .vuong import lmr, vuong_weights, weighted_chi2_sf

__all__ = ["BLOCK", "BLRTResult", "LMRResult", "blrt", "lmr", "vuong_weights",
           "weighted_chi2_sf"]
