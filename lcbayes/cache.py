"""JAX's persistent compilation cache, so a second run of the same model shapes skips compiling.

It is on by default (:mod:`lcbayes.jax_setup` calls :func:`enable_default_cache` when lcbayes
first uses JAX) for library, notebook and command-line users alike. The folder is, in order:
the ``path`` argument of :func:`enable_compilation_cache`, the ``LCBAYES_CACHE_DIR``
environment variable, or ``~/.cache/lcbayes/jax``; ``LCBAYES_CACHE_DIR=off`` turns the default
off, and :func:`disable_compilation_cache` turns it off in a running process.

JAX leaves ``--xla_force_host_platform_device_count`` out of its cache keys, yet a program
compiled for several host devices crashes a one-device process that loads it. A process with
that flag in ``XLA_FLAGS`` (``N > 1``) therefore uses the subfolder ``host-devices-N``.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from pathlib import Path

import jax
from jax.experimental.compilation_cache import compilation_cache

__all__ = ["OFF", "disable_compilation_cache", "enable_compilation_cache",
           "enable_default_cache"]

#: The value of ``LCBAYES_CACHE_DIR`` that turns the default cache off.
OFF = "off"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Store compiled programs on disk under ``path`` and reuse them; returns the directory."""
    if path is None:
        path = os.environ.get("LCBAYES_CACHE_DIR") or Path.home() / ".cache" / "lcbayes" / "jax"
        if str(path).lower() == OFF:
            path = Path.home() / ".cache" / "lcbayes" / "jax"
    directory = Path(path).expanduser()
    devices = re.search(r"--xla_force_host_platform_device_count=(\d+)",
                        os.environ.get("XLA_FLAGS", ""))
    if devices is not None and int(devices.group(1)) > 1:  # module docstring
        directory = directory / f"host-devices-{int(devices.group(1))}"
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    compilation_cache.reset_cache()  # JAX decides once whether, and where, to use the cache
    return directory


def disable_compilation_cache() -> None:
    """Stop storing and reusing compiled programs on disk in this process."""
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()


def enable_default_cache() -> Path | None:
    """The cache of the module docstring, unless ``LCBAYES_CACHE_DIR`` is ``off`` or the folder
    cannot be made or written (then compiling simply is not cached, with one warning for a
    folder that cannot be written); returns the folder or ``None``."""
    if os.environ.get("LCBAYES_CACHE_DIR", "").lower() == OFF:
        return None
    try:
        directory = enable_compilation_cache()
    except OSError:
        return None
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        disable_compilation_cache()
        warnings.warn(f"the compilation cache folder {str(directory)!r} cannot be written "
                      f"({exc.strerror or exc}): compiled programs are not kept for the next "
                      "run; set LCBAYES_CACHE_DIR to a folder you can write (or to off)",
                      stacklevel=2)
        return None
    return directory
