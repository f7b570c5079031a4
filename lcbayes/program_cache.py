"""Traced programs kept on disk, so that a new process skips tracing and lowering them.

JAX's persistent compilation cache (:mod:`lcbayes.cache`) keeps what XLA compiled, but every
new process still traces each program from Python and lowers it to StableHLO before it can ask
the cache; for the large vmapped samplers (SMC, bridge sampling, VBEM and EM restarts) that
costs more than loading the compiled program. :func:`cached_jit` is ``jax.jit`` plus a second
cache: the first call with new argument shapes exports the traced program (``jax.export``, the
serialised StableHLO) to the compilation cache's folder, and a later process calls the
exported program instead of tracing the function again. The program is the same, so are the
numbers.

**The key** of an exported program is everything that could change it: the lcbayes source (a
hash of every ``.py`` file of the package), the JAX and jaxlib versions, the platform, 64-bit
mode, ``XLA_FLAGS``, the function, its static arguments (their ``repr``) and the tree, shapes
and dtypes of the others. A call whose static arguments have no stable ``repr`` (one showing a
memory address), one made while tracing (inside another ``jit`` or ``vmap``), one with typed
PRNG keys, or one while the compilation cache is off is plain ``jax.jit``.

**Damaged or concurrent entries** are harmless: an entry is written to a temporary file and
renamed into place, its SHA-256 is checked before it is read, and an entry that does not check
or load is traced afresh and written again.

Example::

    @partial(cached_jit, static_argnames=("particles",))
    def run(key, data, *, particles): ...
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pickle
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from . import jax_setup  # noqa: F401  (64-bit floats and the compilation cache first)

__all__ = ["PROGRAMS_FOLDER", "cached_jit", "programs_folder", "source_digest"]

#: Subfolder of the compilation cache's folder that holds the exported programs.
PROGRAMS_FOLDER = "programs"
_DIGEST = hashlib.sha256().digest_size


@functools.cache
def source_digest() -> str:
    """SHA-256 of every ``.py`` file of the lcbayes package (paths and contents), once per
    process: any change to the source retires every exported program."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _flag(name: str):
    """The current value of a jax configuration flag (read by name: jax's ``Config`` does
    not declare its flags to a type checker)."""
    return getattr(jax.config, name)


def programs_folder() -> Path | None:
    """The folder of exported programs, or ``None`` while the compilation cache is off."""
    if not _flag("jax_enable_compilation_cache"):
        return None
    folder = _flag("jax_compilation_cache_dir")
    return None if not folder else Path(folder) / PROGRAMS_FOLDER


def _environment() -> str:
    import jaxlib

    return "|".join((source_digest(), jax.__version__, jaxlib.__version__,
                     jax.default_backend(), str(_flag("jax_enable_x64")),
                     os.environ.get("XLA_FLAGS", "")))


def _aval(leaf) -> tuple | None:
    """``(shape, dtype, weak)`` of an argument leaf, or ``None`` for one that cannot be
    exported (a tracer or a typed PRNG key)."""
    if isinstance(leaf, jax.core.Tracer):
        return None
    dtype = getattr(leaf, "dtype", None)
    if dtype is None:                              # a Python scalar: weakly typed
        leaf = np.asarray(leaf)
        return (leaf.shape, str(jax.dtypes.canonicalize_dtype(leaf.dtype)), True)
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return None
    return (tuple(np.shape(leaf)), str(dtype), bool(getattr(leaf, "weak_type", False)))


def _read(path: Path):
    """``(exported, out_tree)`` of a checked entry, or ``None``."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    payload = raw[_DIGEST:]
    if len(raw) <= _DIGEST or hashlib.sha256(payload).digest() != raw[:_DIGEST]:
        return None
    try:
        blob, out_tree = pickle.loads(payload)
        return jax.export.deserialize(bytearray(blob)), out_tree
    except Exception:                               # an entry of another version: trace anew
        return None


def _write(path: Path, blob: bytes, out_tree) -> None:
    payload = pickle.dumps((blob, out_tree))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except OSError:                                 # a read-only cache: nothing kept
        return


def cached_jit(fun: Callable | None = None, *, static_argnames: tuple[str, ...] | str = (),
               compiler_options: dict[str, Any] | None = None) -> Callable:
    """``jax.jit(fun, static_argnames=...)`` whose traced programs are kept on disk (module
    docstring). Static arguments are named, as keywords or positionally; the result is the
    same as ``jax.jit``'s."""
    if fun is None:
        return functools.partial(cached_jit, static_argnames=static_argnames,
                                 compiler_options=compiler_options)
    statics = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    jitted = jax.jit(fun, static_argnames=statics, compiler_options=compiler_options)
    signature = inspect.signature(fun)
    name = f"{fun.__module__}.{fun.__qualname__}"
    loaded: dict[str, Callable] = {}
    lock = threading.Lock()

    @functools.wraps(fun)
    def call(*args, **kwargs):
        folder = programs_folder()
        if folder is None:
            return jitted(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        static = {n: bound.arguments[n] for n in statics}
        names = [n for n in bound.arguments if n not in statics]
        leaves, tree = jax.tree.flatten([bound.arguments[n] for n in names])
        avals = [_aval(leaf) for leaf in leaves]
        shown = repr(sorted(static.items()))
        if any(a is None for a in avals) or " at 0x" in shown:
            return jitted(*args, **kwargs)
        key = hashlib.sha256("|".join((_environment(), name, shown, str(tree), repr(avals)))
                             .encode()).hexdigest()
        program = loaded.get(key)
        if program is None:
            with lock:
                program = loaded.get(key) or _program(folder / f"{key}.jax", tree, names,
                                                      static, leaves)
                loaded[key] = program
        return program(*leaves)

    def _program(path: Path, tree, names: list[str], static: dict, leaves: list) -> Callable:
        entry = _read(path)
        if entry is None:
            out_tree: list = []

            def flat(*values):
                arguments = dict(zip(names, jax.tree.unflatten(tree, values), strict=True))
                out, structure = jax.tree.flatten(fun(**arguments, **static))
                out_tree[:] = [structure]
                return out

            try:
                exported = jax.export.export(jax.jit(flat))(*leaves)
                _write(path, exported.serialize(), out_tree[0])
            except Exception:   # not exportable (a host callback, say): plain jit from now on
                return lambda *values: jitted(**dict(zip(
                    names, jax.tree.unflatten(tree, values), strict=True)), **static)
            entry = (exported, out_tree[0])
        exported, out = entry
        def loaded_program(*values):
            return exported.call(*values)

        loaded_program.__name__ = loaded_program.__qualname__ = fun.__name__  # in JAX's logs
        run = jax.jit(loaded_program, compiler_options=compiler_options)
        return lambda *values: jax.tree.unflatten(out, run(*values))

    call.jitted = jitted  # type: ignore[attr-defined]
    return call
