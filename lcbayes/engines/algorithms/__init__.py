"""Whiley (1999) chapter 2's family of parameter-estimation algorithms, for :func:`lcbayes.em`
(``algorithm=``).

* ``"squarem"`` (default) and ``"em"``: SQUAREM-accelerated and plain EM
  (:mod:`lcbayes.engines.squarem`, §2.2);
* ``"iem"``: incremental EM over blocks of data patterns (:mod:`.incremental`, §2.3);
* ``"cg"``, ``"gcg"``: conjugate gradients and generalised conjugate gradients, started with EM,
  golden-section line search (:mod:`.conjugate`, §2.4-2.5, App A.5);
* ``"em_eta"``, ``"eg"``, ``"gp"``: Helmbold et al.'s updates (:mod:`.helmbold`, §2.6);
* ``"acg_phi"``, ``"acg_theta"``, ``"acg_theta_chi"``: approximate conjugate gradients
  (:mod:`.approximate`, §2.7);
* ``"daem"``: deterministic annealing EM (:mod:`.annealed`, §2.11).

Every algorithm but EM/SQUAREM is a :class:`~.state.Kernel` (``init``, ``step``) over the one
:class:`~.state.State`, run in one ``lax.while_loop`` by :func:`~.runner.run_algorithm`,
vmapped or mapped over restarts; :mod:`.problem` holds the objective, E and M steps, gradients
(``jax.grad`` of the inference core) and bases, :mod:`.flops` the thesis's operation counts
(§2.9, Tables 2.3-2.4).

Example::

    fit = lcb.em(lcb.latent_class(data, 2), data, algorithm="gcg", seed=0)
    fit.algorithm, fit.n_iter, fit.history
"""

from .flops import flops
from .runner import ALGORITHMS, DEFAULT_ETA, HELD_ALGORITHMS, MAP_ALGORITHMS, run_algorithm

__all__ = ["ALGORITHMS", "DEFAULT_ETA", "HELD_ALGORITHMS", "MAP_ALGORITHMS", "flops",
           "run_algorithm"]
