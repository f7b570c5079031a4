"""Reusable set-ups of published benchmark studies.

* :mod:`lcbayes.benchmarks.beal_ghahramani` — Beal & Ghahramani (2006): scoring the 136
  bipartite structures with two binary hidden parents and four five-valued observed children.
"""

from __future__ import annotations

from . import beal_ghahramani

__all__ = ["beal_ghahramani"]
