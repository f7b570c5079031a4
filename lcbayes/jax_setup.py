"""How lcbayes sets JAX up on first use: 64-bit floats (``jax_enable_x64``; log evidences need
them) and the persistent compilation cache (:mod:`lcbayes.cache`), so that a program compiled
once, in any process, is not compiled again.

Every lcbayes module that computes with JAX imports this module, directly or through the
modules it imports (``tests/test_architecture.py`` checks this); ``import lcbayes`` alone
imports no JAX, since the public names load on first use. The cache is on unless the
environment variable ``LCBAYES_CACHE_DIR`` is ``off``; it also names the folder (default
``~/.cache/lcbayes/jax``), and :func:`lcbayes.enable_compilation_cache` /
:func:`lcbayes.disable_compilation_cache` move or stop it.
"""

from __future__ import annotations

import jax

from .cache import enable_default_cache

jax.config.update("jax_enable_x64", True)
enable_default_cache()

__all__: list[str] = []
