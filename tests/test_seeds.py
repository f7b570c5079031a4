"""Seeds (lcbayes.validation): an integer seed gives exactly JAX's ``PRNGKey(seed)``, however
it is made, so the same seed gives the same numbers."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from lcbayes import jax_setup  # noqa: F401  (64-bit JAX, as every engine runs)
from lcbayes.validation import MAX_SEED, check_seed, prng_key


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 - 1, 2**32 - 1, 2**32, 2**40 + 7,
                                  MAX_SEED - 1])
def test_an_integer_seed_is_jaxs_key(seed):
    key = prng_key(check_seed(seed))
    assert key.dtype == np.uint32 and key.shape == (2,)
    np.testing.assert_array_equal(np.asarray(key), np.asarray(jax.random.PRNGKey(seed)))
    # and it draws what JAX's key draws
    np.testing.assert_array_equal(np.asarray(jax.random.uniform(key, (3,))),
                                  np.asarray(jax.random.uniform(jax.random.PRNGKey(seed), (3,))))


def test_a_key_is_passed_through():
    key = jax.random.PRNGKey(7)
    assert prng_key(key) is key
