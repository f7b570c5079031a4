"""Requests that cannot fit in memory are refused before anything is compiled, naming what to
lower (``fit --restarts 10000000`` grew to 21.7 GB and was killed); a model that is not
identified gets a warning, not standard errors that look meaningful."""

from __future__ import annotations

import time

import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.errors import ArgumentError
from lcbayes.memory import physical_memory, restart_bytes

from .conftest import data_csv


def test_too_many_restarts_are_refused_at_once(carcinoma, capsys):
    structure = lcb.latent_class(carcinoma, 3)
    assert physical_memory() is not None
    huge = int(physical_memory() / restart_bytes(45, 2000))      # twice the allowed share
    for engine in (lcb.em, lcb.vbem):
        start = time.perf_counter()
        with pytest.raises(ArgumentError, match=rf"restarts={huge} would hold about .* "
                                                r"GiB, more than half .*use fewer restarts"):
            engine(structure, carcinoma, restarts=huge)
        assert time.perf_counter() - start < 5      # nothing drawn or compiled
    # the references of lcb.smc and lcb.bridge_sampling fit their restarts the same way
    for engine in (lcb.smc, lcb.bridge_sampling):
        with pytest.raises(ArgumentError, match=rf"restarts={huge} would hold"):
            engine(structure, carcinoma, restarts=huge)
    assert main(["fit", str(data_csv("carcinoma.csv")), "--n-classes", "3",
                 "--restarts", "10000000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "use fewer restarts" in err[0]


def test_the_estimate_is_of_the_measured_size():
    # 16 KB a restart measured for carcinoma's 3-class model (45 table entries), max_iter 2000
    assert 16_000 <= restart_bytes(45, 2000) <= 20_000


def test_a_model_that_is_not_identified_gets_no_standard_errors(tmp_path, capsys):
    # LC(2) on one binary item: 3 free parameters, 1 degree of freedom
    path = tmp_path / "one.csv"
    path.write_text("A\n1\n2\n1\n2\n2\n1\n1\n")
    data = lcb.Dataset.from_csv(path)
    with pytest.warns(lcb.StandardErrorWarning, match="3 free parameters .* 1 degrees of "
                                                      "freedom: it is not identified"):
        fit = lcb.em(lcb.latent_class(data, 2), data, standard_errors="empirical")
    assert fit.standard_errors is None
    assert main(["fit", str(path), "--n-classes", "2"]) == 0
    out = capsys.readouterr().out
    assert "standard errors" not in out and "Estimated class population shares\n" in out
