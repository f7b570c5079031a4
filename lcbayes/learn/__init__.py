"""Structure learning: search for the hidden structure that the data support.

Karčiauskas (2005), *Learning with hidden variables: a parameter reusing approach for
tree-structured Bayesian networks*. The number of latent classes is found by growing and
shrinking models with parameter reuse (component split, merge and adjustment, Chs. 4-6)
instead of restarting EM from scratch; random-restart baselines run in the same loop.

Modules: :mod:`.mixture` (a latent class model on the host and its capacity layout),
:mod:`.operations` (split, merge), :mod:`.restarts` (multiple-restart EM with pruning, every
start a lane of one compiled program), :mod:`.scoring` (the scores searched on),
:mod:`.moves` (the up / down / sideways moves), :mod:`.search` (the searches and
:func:`learn_classes`), :mod:`.result` (:class:`LearnResult`). The hidden tree itself is
learned by :func:`learn_tree` (:mod:`.tree_search`: EAST's operators in
:mod:`.tree_operators`, local EM in :mod:`.tree_local`, drawings in :mod:`.tree_drawing`).
"""

from .result import LearnResult, Move
from .scoring import SCORES
from .search import METHODS, learn_classes, learn_hlc
from .tree_search import learn_tree

__all__ = ["METHODS", "SCORES", "LearnResult", "Move", "learn_classes", "learn_hlc",
           "learn_tree"]
