"""JAX's persistent compilation cache, so a second run of the same model shapes skips compiling.

The command line enables it for every run; library users call :func:`enable_compilation_cache`
once before their first fit. The directory is, in order: the ``path`` argument, the
``LCBAYES_CACHE_DIR`` environment variable, or ``~/.cache/lcbayes/jax``.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

__all__ = ["enable_compilation_cache"]


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Store compiled programs on disk under ``path`` and reuse them; returns the directory."""
    if path is None:
        path = os.environ.get("LCBAYES_CACHE_DIR") or Path.home() / ".cache" / "lcbayes" / "jax"
    directory = Path(path).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return directory
