"""Data patterns sharded over JAX devices: EM and VBEM on several GPUs (or host devices).

An E step is a sum over the data's unique patterns ``y_p`` with counts ``w_p``: the
log-likelihood ``sum_p w_p ln p(y_p | theta)`` and the expected family counts
``N_ilk = sum_p w_p P(x_i = k, pa_i = l | y_p, theta)`` (Beal & Ghahramani eq. 19; Whiley
1999 §2.2's E step with pattern compression). Each term needs the parameters and its own
pattern only, so the patterns are split over a 1-D :class:`jax.sharding.Mesh` (axis
``"patterns"``) and the parameters replicated: every device computes its patterns' terms and
the sums are all-reduced. The jitted cores (:func:`lcbayes.engines.em_loop.run_em`,
:func:`lcbayes.engines.vbem.run_vbem`) are not changed: given sharded inputs, XLA's SPMD
partitioner (GSPMD) splits the same program over the devices and inserts the all-reduces.
Only the order of floating-point additions changes, so the fit is the one-device fit to
rounding.

Padding. The mesh needs a pattern count divisible by the number of devices, so the patterns
are padded with zero-weight copies of the first pattern. A copy, not an all-missing row: it
keeps every column as complete as it was (the folding of
:func:`lcbayes.inference.complete_columns`) and every leaf's levels (the block codes of
:mod:`lcbayes.inference.coded`); its ``ln p`` is finite, so weight 0 adds exactly 0 to every
sum, and the pattern-indexed outputs (``ln p(y_p)``, hidden posteriors, entropies) are cut
back to the data's patterns by :meth:`PatternShards.unpad_e_step`. Random starts are drawn
from the unpadded patterns (their draws depend on the pattern count) and then replicated.

Nothing here names a platform: ``devices=2`` takes the first two of :func:`jax.devices`,
GPUs where JAX has them, host devices under
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` on a CPU.

Example::

    fit = lcb.em(lcb.latent_class(data, 5), data, devices=2)   # or devices=jax.devices()[:2]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from . import jax_setup  # noqa: F401  (64-bit JAX: the log evidences are float64)
from .errors import ArgumentError, ArgumentTypeError
from .inference import EStep

__all__ = ["AXIS", "PatternShards", "check_devices", "pattern_shards"]

#: The name of the mesh axis the patterns are split over.
AXIS = "patterns"


def check_devices(devices) -> tuple[jax.Device, ...] | None:
    """The boundary check of an engine's ``devices=``: ``None`` (one device, JAX's default),
    a number ``n`` (the first ``n`` of :func:`jax.devices`) or a sequence of distinct
    :class:`jax.Device` objects."""
    if devices is None:
        return None
    available = jax.devices()
    if isinstance(devices, int | np.integer) and not isinstance(devices, bool):
        if not 1 <= devices <= len(available):
            raise ArgumentError(f"devices must be between 1 and the {len(available)} device"
                                f"{'s' * (len(available) != 1)} JAX has here "
                                f"({available[0].platform}), got {devices}")
        return tuple(available[:int(devices)])
    if isinstance(devices, jax.Device):
        devices = (devices,)
    if not isinstance(devices, Sequence | np.ndarray) or isinstance(devices, str):
        raise ArgumentTypeError(f"devices must be None, a number of devices or a sequence of "
                                f"jax.Device, got {type(devices).__name__}")
    devices = tuple(devices)
    wrong = [d for d in devices if not isinstance(d, jax.Device)]
    if wrong:
        raise ArgumentTypeError(f"devices must be a non-empty sequence of jax.Device (e.g. "
                                f"jax.devices()[:2]), got an element {wrong[0]!r}")
    if not devices:
        raise ArgumentError("devices must be a non-empty sequence of jax.Device (e.g. "
                            "jax.devices()[:2]), got an empty one")
    if len(set(devices)) != len(devices):
        raise ArgumentError(f"devices lists a device more than once: {list(devices)}")
    return devices


@dataclass(frozen=True)
class PatternShards:
    """A 1-D mesh over ``devices`` and the data's unpadded pattern count.

    Attributes:
        mesh: the :class:`jax.sharding.Mesh` with the one axis :data:`AXIS`.
        n_patterns: the data's unique patterns (before padding).
    """

    mesh: Mesh
    n_patterns: int

    @property
    def n_padded(self) -> int:
        """The pattern count rounded up to a multiple of the number of devices."""
        n = self.mesh.devices.size
        return -(-self.n_patterns // n) * n

    def place(self, patterns, weights) -> tuple[jax.Array, jax.Array]:
        """``(P, J)`` patterns and ``(P,)`` weights padded (module docstring) and split over
        the mesh by rows."""
        patterns, weights = np.asarray(patterns), np.asarray(weights, dtype=np.float64)
        pad = self.n_padded - self.n_patterns
        patterns = np.concatenate([patterns, np.repeat(patterns[:1], pad, axis=0)])
        weights = np.concatenate([weights, np.zeros(pad)])
        return (jax.device_put(patterns, NamedSharding(self.mesh, PartitionSpec(AXIS, None))),
                jax.device_put(weights, NamedSharding(self.mesh, PartitionSpec(AXIS))))

    def replicate(self, tree):
        """Every array of ``tree`` (parameters, starts, priors; ``None`` stays) on every
        device of the mesh."""
        return jax.device_put(tree, NamedSharding(self.mesh, PartitionSpec()))

    def unpad_e_step(self, est: EStep) -> EStep:
        """An E step over the placed patterns with its pattern-indexed fields cut back to the
        data's patterns (the counts sum over patterns and are kept)."""
        n = self.n_patterns
        return est._replace(log_marginal=est.log_marginal[:n],
                            hidden_marginals=tuple(m[:n] for m in est.hidden_marginals),
                            hidden_entropy=est.hidden_entropy[:n],
                            completion_entropy=est.completion_entropy[:n])


def pattern_shards(devices, n_patterns: int) -> PatternShards | None:
    """The :class:`PatternShards` of an engine's ``devices=`` (checked, :func:`check_devices`)
    for ``n_patterns`` patterns; ``None`` for ``devices=None`` (today's one-device run)."""
    devices = check_devices(devices)
    if devices is None:
        return None
    return PatternShards(Mesh(np.asarray(devices, dtype=object), (AXIS,),
                              axis_types=(AxisType.Auto,)), int(n_patterns))
