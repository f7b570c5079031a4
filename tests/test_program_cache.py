"""The traced-program cache (:mod:`lcbayes.program_cache`): the same numbers as ``jax.jit``, a
later "process" (a fresh wrapper) loads the program instead of tracing it, damaged entries are
traced anew, and calls it cannot export are plain ``jax.jit``."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lcbayes.cache import disable_compilation_cache, enable_compilation_cache
from lcbayes.program_cache import cached_jit, programs_folder
from lcbayes.samplers.tempered_smc import TemperedInfo

TRACES: list[int] = []


def body(key, x, scale, *, steps: int):
    """A small loop with a random draw and a NamedTuple result; counts its traces."""
    TRACES.append(steps)
    draws = jax.random.normal(key, (steps, *x.shape))
    total = jax.lax.fori_loop(0, steps, lambda i, s: s + draws[i] * scale, x)
    return TemperedInfo(total, total.sum(), jnp.asarray(steps), x.mean())


@pytest.fixture
def cache_dir(tmp_path: Path):
    enable_compilation_cache(tmp_path)
    yield tmp_path
    disable_compilation_cache()


def _same(a, b) -> None:
    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_a_new_process_loads_instead_of_tracing(cache_dir):
    key, x = jax.random.PRNGKey(3), jnp.arange(4.0)
    expected = jax.jit(partial(body, steps=5))(key, x, 0.5)
    TRACES.clear()
    first = cached_jit(body, static_argnames="steps")
    _same(first(key, x, 0.5, steps=5), expected)
    assert TRACES                                       # traced and exported once
    entries = list(programs_folder().glob("*.jax"))
    assert len(entries) == 1 and programs_folder().parent == cache_dir
    TRACES.clear()
    later = cached_jit(body, static_argnames="steps")  # what a new process builds
    result = later(key, x, 0.5, steps=5)
    assert TRACES == []                                 # loaded, not traced
    assert isinstance(result, TemperedInfo)
    _same(result, expected)
    _same(later(jax.random.PRNGKey(4), x + 1, 2.0, steps=5),
          jax.jit(partial(body, steps=5))(jax.random.PRNGKey(4), x + 1, 2.0))


def test_new_static_arguments_or_shapes_are_new_programs(cache_dir):
    f = cached_jit(body, static_argnames="steps")
    key = jax.random.PRNGKey(0)
    f(key, jnp.zeros(3), 1.0, steps=2)
    f(key, jnp.zeros(3), 1.0, steps=3)
    f(key, jnp.zeros((2, 3)), 1.0, steps=3)
    f(key, jnp.zeros(3), 2.0, steps=2)                 # same program, another value
    assert len(list(programs_folder().glob("*.jax"))) == 3


def test_a_damaged_entry_is_traced_again_and_rewritten(cache_dir):
    key, x = jax.random.PRNGKey(1), jnp.ones(2)
    expected = cached_jit(body, static_argnames="steps")(key, x, 1.5, steps=4)
    (entry,) = programs_folder().glob("*.jax")
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])          # a write cut short
    TRACES.clear()
    _same(cached_jit(body, static_argnames="steps")(key, x, 1.5, steps=4), expected)
    assert TRACES                                       # traced afresh
    TRACES.clear()                                      # and written whole again:
    _same(cached_jit(body, static_argnames="steps")(key, x, 1.5, steps=4), expected)
    assert TRACES == []
    entry.write_bytes(b"\0" * len(good))                # garbage of the right length
    _same(cached_jit(body, static_argnames="steps")(key, x, 1.5, steps=4), expected)


def test_inside_jit_and_vmap_it_is_plain_jit(cache_dir):
    f = cached_jit(body, static_argnames="steps")
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    xs = jnp.arange(6.0).reshape(3, 2)
    mapped = jax.vmap(lambda k, x: f(k, x, 1.0, steps=2))(keys, xs)
    for i in range(3):
        _same(jax.tree.map(lambda a, i=i: a[i], mapped), f(keys[i], xs[i], 1.0, steps=2))
    nested = jax.jit(lambda k, x: f(k, x, 1.0, steps=2).log_increment)(keys[0], xs[0])
    np.testing.assert_allclose(nested, f(keys[0], xs[0], 1.0, steps=2).log_increment)


def test_with_the_compilation_cache_off_nothing_is_written(tmp_path):
    disable_compilation_cache()
    assert programs_folder() is None
    f = cached_jit(body, static_argnames="steps")
    _same(f(jax.random.PRNGKey(0), jnp.ones(2), 1.0, steps=2),
          jax.jit(partial(body, steps=2))(jax.random.PRNGKey(0), jnp.ones(2), 1.0))
    assert not list(tmp_path.rglob("*.jax"))
