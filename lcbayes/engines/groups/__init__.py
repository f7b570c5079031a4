"""Multiple-group latent class analysis: class prevalences per group and item tables shared by
the groups (full measurement invariance), group-specific (none) or group-specific for named
items (partial); fitted by :func:`lcbayes.em` with ``group=`` (:mod:`.fit`), tested by the
deviance test (:mod:`.deviance`) and compared by evidence in
:func:`lcbayes.compare_invariance`."""
