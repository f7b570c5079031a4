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

from collections.abc import Callable
from typing import TypeVar

import jax

from .cache import enable_default_cache

jax.config.update("jax_enable_x64", True)
enable_default_cache()

__all__ = ["QUICK_COMPILE", "QUICK_COMPILE_PATTERNS", "on_device", "sized_programs"]

#: Per-program compiler options (``jax.jit(..., compiler_options=QUICK_COMPILE)``) for long
#: sampling loops on small problems, where compiling costs more than running: XLA's backend
#: optimisation level 1 instead of 3 compiles faster and runs as fast on a few dozen patterns
#: (AIS and bridge sampling up to :data:`QUICK_COMPILE_PATTERNS`; the allocation sampler).
#: Nothing else changes: the same numbers.
QUICK_COMPILE = {"xla_backend_optimization_level": 1}

#: Up to this many data patterns the sampling loops of :func:`sized_programs` take the program
#: compiled with :data:`QUICK_COMPILE`; with more patterns the run costs more than the
#: compilation and level 3 runs faster.
QUICK_COMPILE_PATTERNS = 256

P = TypeVar("P")


def sized_programs(build: Callable[[dict | None], P]) -> Callable[[int], P]:
    """``program(patterns)``: what ``build(compiler_options)`` compiles, with
    :data:`QUICK_COMPILE` for at most :data:`QUICK_COMPILE_PATTERNS` data patterns and with
    XLA's defaults otherwise (both built once, here)."""
    programs = {quick: build(QUICK_COMPILE if quick else None) for quick in (False, True)}
    return lambda patterns: programs[patterns <= QUICK_COMPILE_PATTERNS]


def on_device(x) -> jax.Array:
    """``x`` (a NumPy array or anything ``np.asarray`` takes) as a JAX array, by
    ``jax.device_put``: ``jnp.asarray`` of a host array compiles a small program for every new
    shape (JAX 0.10), which host code calling it at many shapes pays for in every process."""
    if isinstance(x, jax.Array):
        return x
    import numpy as np

    return jax.device_put(np.asarray(x))
