"""``jax.random`` draws of any shape from one flat draw: the same numbers, compiled faster.

With JAX's partitionable Threefry (the default of jax 0.10, ``jax_threefry_partitionable``) a
draw of a multi-dimensional shape compiles into a program whose size grows with the number of
axes. Element ``i`` of a draw in row-major order is the same whatever the shape (both
Threefry variants count elements in that order), so drawing ``prod(shape)`` numbers and
reshaping gives the very same array (``tests/test_draws.py``), only the compiled program
is smaller.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from . import jax_setup  # noqa: F401  (64-bit JAX)

__all__ = ["exponential", "normal", "uniform"]


def _flat(draw, key, shape, **options):
    shape = tuple(int(n) for n in shape)
    return draw(key, (math.prod(shape),), **options).reshape(shape)


def uniform(key: jax.Array, shape, dtype=jnp.float64, minval=0.0, maxval=1.0) -> jax.Array:
    """``jax.random.uniform(key, shape, dtype, minval, maxval)``, drawn flat."""
    return _flat(jax.random.uniform, key, shape, dtype=dtype, minval=minval, maxval=maxval)


def normal(key: jax.Array, shape, dtype=jnp.float64) -> jax.Array:
    """``jax.random.normal(key, shape, dtype)``, drawn flat."""
    return _flat(jax.random.normal, key, shape, dtype=dtype)


def exponential(key: jax.Array, shape, dtype=jnp.float64) -> jax.Array:
    """``jax.random.exponential(key, shape, dtype)``, drawn flat."""
    return _flat(jax.random.exponential, key, shape, dtype=dtype)
