"""The evidence engines, one module each: EM (:mod:`.em`), VBEM (:mod:`.vbem`), AIS
(:mod:`.ais`, and :mod:`.ais_numpyro` for any NumPyro model), the exact evidence (:mod:`.exact`),
with their result types (:mod:`.em_result`, :mod:`.vb_result`, :mod:`.annealing`) and shared
machinery (:mod:`.squarem`, :mod:`.dirichlet`, :mod:`.gamma_sampler`, :mod:`.run_record`).

Every public engine takes ``(structure, data, *, seed=..., options...)``, checks its arguments
at the boundary (:mod:`lcbayes.validation`) and returns a frozen result with ``to_dict`` /
``from_dict``, ``to_frame`` and ``summary``. Each also exposes its jitted core (``run_em``,
``run_vbem``, ``anneal``) for callers that batch or tie structures.
"""

from .. import jax_setup  # noqa: F401  (64-bit JAX, the compilation cache)
