"""lcbayes.draws: the same numbers as jax.random's, whatever the shape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lcbayes import draws


@pytest.mark.parametrize("shape", [(7,), (3, 3, 5), (2, 1, 4, 3), (0, 3)])
@pytest.mark.parametrize("partitionable", [True, False])
def test_flat_draws_equal_jax_random(shape, partitionable):
    key = jax.random.PRNGKey(11)
    with jax.threefry_partitionable(partitionable):
        pairs = [(draws.uniform(key, shape, minval=0.5),
                  jax.random.uniform(key, shape, jnp.float64, minval=0.5)),
                 (draws.normal(key, shape), jax.random.normal(key, shape, jnp.float64)),
                 (draws.exponential(key, shape),
                  jax.random.exponential(key, shape, jnp.float64))]
    for ours, theirs in pairs:
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
