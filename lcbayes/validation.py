"""The boundary: public functions check and convert their arguments here, before any JAX code
runs, so that a bad argument gets one message naming it instead of a trace from inside JAX.

* **Seeds** (:func:`check_seed`): a non-negative integer below ``2**63``, or a ``jax.random``
  key (a typed key, ``jax.random.key(0)``, or a raw ``uint32`` key, ``jax.random.PRNGKey(0)``).
  :func:`prng_key` and :func:`numpy_rng` turn either into the generator an engine needs;
  :func:`seed_record` into what a result stores (an int, or the key's data as a tuple).
* **Data** (:func:`as_dataset`, :func:`data_for`, :func:`fit_data`): a
  :class:`~lcbayes.Dataset`, a pandas ``DataFrame`` or a 2-d integer array of codes (``-1``
  missing). With a structure the data are restricted to its columns and coded with its
  categories; a DataFrame or array then holds new rows for a fitted model. A fit warns where a
  hidden node has more states than the data have distinct patterns.
* **Numbers and choices** (:func:`check_int`, :func:`check_positive`, :func:`check_choice`).

A wrong value raises :class:`~lcbayes.errors.ArgumentError` (a ``ValueError``), a wrong type
:class:`~lcbayes.errors.ArgumentTypeError` (also a ``TypeError``), both naming the argument.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from . import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)
from .data import Dataset
from .errors import ArgumentError, ArgumentTypeError, DataError, StructureError, shown
from .structure import Structure

__all__ = ["MAX_SEED", "Seed", "as_dataset", "check_choice", "check_int", "check_positive",
           "check_seed", "check_structure", "data_for", "fit_data", "numpy_rng", "observed_data",
           "prng_key", "seed_record"]

#: Seeds are integers in ``[0, MAX_SEED)``.
MAX_SEED = 2**63

#: What a ``seed=`` argument accepts.
Seed = int | jax.Array

_SEED_HELP = "a non-negative integer below 2**63 or a jax.random key"


def check_seed(seed, name: str = "seed") -> int | jax.Array:
    """``seed`` as an ``int`` in ``[0, 2**63)`` or a raw ``uint32`` key of shape ``(2,)``."""
    if isinstance(seed, jax.Array | np.ndarray):
        if jax.dtypes.issubdtype(seed.dtype, jax.dtypes.prng_key):
            if seed.shape != ():
                raise ArgumentError(f"{name} must be one jax.random key, got an array of "
                                    f"shape {seed.shape}")
            seed = jax.random.key_data(seed)
        if seed.shape == () and np.issubdtype(seed.dtype, np.integer):
            seed = int(seed)  # an integer scalar array
        elif seed.dtype == np.uint32 and seed.shape == (2,):
            return jax.numpy.asarray(seed)
        else:
            raise ArgumentError(f"{name} must be {_SEED_HELP} (threefry: 2 uint32 words), got "
                                f"an array of dtype {seed.dtype} and shape {seed.shape}")
    if isinstance(seed, bool | np.bool_) or not isinstance(seed, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be {_SEED_HELP}, got {type(seed).__name__} "
                                f"{shown(seed)}")
    value = int(seed)
    if not 0 <= value < MAX_SEED:
        raise ArgumentError(f"{name} must be {_SEED_HELP}, got {value}")
    return value


def prng_key(seed: int | jax.Array) -> jax.Array:
    """The ``jax.random`` key of a checked seed: ``PRNGKey(seed)`` for an integer. With JAX's
    default implementation (threefry) that key is the seed's two 32-bit words ``[seed >> 32,
    seed & 0xFFFFFFFF]``, made here without running (and, in a new process, loading) JAX's
    seeding program."""
    if not isinstance(seed, int):
        return seed
    if jax.config.jax_default_prng_impl != "threefry2x32":  # type: ignore[attr-defined]
        return jax.random.PRNGKey(seed)
    return jnp.asarray(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32))


def numpy_rng(seed: int | jax.Array) -> np.random.Generator:
    """A NumPy generator of a checked seed (``default_rng(seed)`` for an integer)."""
    return np.random.default_rng(seed if isinstance(seed, int)
                                 else [int(w) for w in np.asarray(seed)])


def seed_record(seed: int | jax.Array) -> int | tuple[int, ...]:
    """What a result stores of a checked seed: the integer, or the key's words."""
    return seed if isinstance(seed, int) else tuple(int(w) for w in np.asarray(seed))


def check_int(value, name: str, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an integer >= {minimum}, got "
                                f"{type(value).__name__} {shown(value)}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ArgumentError(f"{name} must be an integer {bound}, got {shown(value)}")
    return int(value)


def check_positive(value, name: str) -> float:
    """``value`` as a finite ``float > 0``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a positive number, got "
                                f"{type(value).__name__} {shown(value)}")
    if not (np.isfinite(value) and value > 0):
        raise ArgumentError(f"{name} must be a positive number, got {shown(value)}")
    return float(value)


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(f"unknown {name} {value!r}; choose from {', '.join(choices)}")
    return value


def check_structure(structure, name: str = "structure",
                    kinds: Sequence[str] | None = None) -> Structure:
    """``structure`` if it is a :class:`~lcbayes.Structure` (of one of ``kinds``)."""
    if not isinstance(structure, Structure):
        raise ArgumentTypeError(
            f"{name} must be a lcbayes Structure (build one with lcb.latent_class, lcb.hlc or "
            f"lcb.dag), got {type(structure).__name__}")
    if kinds is not None and structure.kind not in kinds:
        raise ArgumentError(f"{name} must be a {' or '.join(kinds)} structure, got a "
                            f"{structure.kind} structure")
    return structure


def as_dataset(data, name: str = "data") -> Dataset:
    """A :class:`~lcbayes.Dataset` from a Dataset, a DataFrame or a 2-d integer code array."""
    if isinstance(data, Dataset):
        return data
    try:
        if isinstance(data, pd.DataFrame):
            return Dataset.from_pandas(data)
        if isinstance(data, np.ndarray | jax.Array | list):
            return Dataset.from_codes(np.asarray(data))
    except DataError as exc:
        raise DataError(f"{name}: {exc}") from None
    raise ArgumentTypeError(f"{name} must be a lcbayes Dataset, a pandas DataFrame or a 2-d "
                            f"integer array of codes, got {type(data).__name__}")


def data_for(structure: Structure, data, name: str = "data") -> Dataset:
    """``data`` for ``structure``: restricted to its observed columns, in its order, coded with
    its categories (:meth:`~lcbayes.Structure.check_data`). A DataFrame is read against those
    categories; an integer array holds the codes of the structure's columns in order."""
    columns = structure.observed_names
    try:
        if isinstance(data, pd.DataFrame):
            missing = [c for c in columns if c not in map(str, data.columns)]
            if missing:
                raise DataError(f"{name} lacks column(s) {missing} that the structure "
                                f"observes; it has {[str(c) for c in data.columns]}")
            data = Dataset.from_pandas(data, categories=structure.categories())
        elif isinstance(data, np.ndarray | jax.Array | list):
            codes = np.asarray(data)
            if codes.ndim != 2 or codes.shape[1] != len(columns):
                raise DataError(f"{name} as an array must be (rows, {len(columns)}) codes of "
                                f"the columns {list(columns)}, got shape {codes.shape}")
            labels = list(structure.categories().values())
            if codes.size and not np.issubdtype(codes.dtype, np.integer):
                raise DataError(f"{name} as an array must hold integer codes (-1 for "
                                f"missing), got dtype {codes.dtype}")
            for j, (column, lab) in enumerate(zip(columns, labels, strict=True)):
                bad = codes[:, j][(codes[:, j] < -1) | (codes[:, j] >= len(lab))]
                if bad.size:
                    raise DataError(f"{name}: column {column!r} has code {int(bad[0])}; codes "
                                    f"run from 0 to {len(lab) - 1} (-1 for missing)")
            data = Dataset(codes=codes, columns=columns, labels=tuple(map(tuple, labels)))
        return structure.check_data(as_dataset(data, name))
    except (DataError, StructureError) as exc:
        message = str(exc)
        raise type(exc)(message if message.startswith(name) else f"{name}: {message}") from None


def observed_data(structure: Structure, data, name: str = "data") -> Dataset:
    """:func:`data_for`, refusing data with no observed value at all: there is nothing to fit
    (the log-likelihood would be 0 whatever the model)."""
    data = data_for(structure, data, name)
    if not (data.patterns >= 0).any():
        raise DataError(f"every value of {name} is missing ({data.n_rows} rows of "
                        f"{list(structure.observed_names)}): there is nothing to fit")
    return data


def fit_data(structure: Structure, data, name: str = "data") -> Dataset:
    """:func:`data_for`, for a fit: warns where a hidden node has more states than the data
    have distinct observed patterns (the extra states cannot be told apart by the data; the
    fit is legal but its classes are not identified); data with no observed value are refused
    (:func:`observed_data`)."""
    data = observed_data(structure, data, name)
    distinct = int((data.patterns >= 0).any(axis=1).sum())
    for node in structure.hidden_nodes:
        states = structure.cardinalities[node]
        if states > distinct:
            warnings.warn(f"hidden node {structure.nodes[node]!r} has {states} states but "
                          f"{name} has only {distinct} distinct observed pattern(s); fewer "
                          "classes will fit as well", stacklevel=3)
    return data
