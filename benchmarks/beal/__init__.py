"""Beal & Ghahramani (2006), §4: the 136 bipartite structures (two binary hidden parents, four
five-valued observed children), their data and the batched scoring study.

* :mod:`.ghahramani`: structures, true parameters, nested data sets, tying matrices;
* :mod:`.study`: every structure scored by MAP, BIC, BICp, CS and VB in one compiled program
  per method (EM and VBEM cores with tied CPT rows, :mod:`lcbayes.inference.tying`);
* :mod:`.tied_ais`: AIS of every structure with one compiled program.

Research code for ``benchmarks/beal_136.py`` and ``benchmarks/bench_ais.py``, outside the
installed package; ``benchmarks/`` must be on ``sys.path`` (the scripts and the tests set it).
"""
