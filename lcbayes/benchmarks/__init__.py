"""Reusable set-ups of published benchmark studies.

* :mod:`lcbayes.benchmarks.beal_ghahramani` — Beal & Ghahramani (2006): scoring the 136
  bipartite structures with two binary hidden parents and four five-valued observed children.
* :mod:`lcbayes.benchmarks.beal_study` — the same study run: every structure scored by MAP,
  BIC, BICp, Cheeseman-Stutz and VB in one batched computation per method.
"""

from __future__ import annotations

from . import beal_ghahramani, beal_study

__all__ = ["beal_ghahramani", "beal_study"]
