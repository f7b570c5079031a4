"""Executors (lcbayes.execution): compare and blrt on a Dask cluster give exactly the serial
results, on a LocalCluster the call starts and on a running scheduler named by address."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes import execution
from lcbayes.errors import ArgumentError, ArgumentTypeError
from lcbayes.execution import SCHEDULER_VARIABLE, DaskExecutor, SerialExecutor, executor

from .conftest import data_csv

#: Small settings (each worker process compiles its own programs).
COMPARE = {"n_classes": range(1, 4), "methods": "bic,vbem", "seed": 3, "restarts": 3}
BLRT = {"replicates": 60, "restarts": 2, "seed": 5, "sequential": False}


def _add(task, offset):
    return task + offset


def test_serial_executor_maps_in_order_with_shared_arguments():
    with executor() as runner:
        assert isinstance(runner, SerialExecutor)
        assert runner.map(_add, [3, 1, 2], {"offset": 10}) == [13, 11, 12]


def test_a_custom_executor_is_used_as_it_is():
    class Reversed:
        parallelism = 2

        def map(self, fn, tasks, shared=None, progress=False, desc="tasks"):
            return [fn(t, **(shared or {})) for t in reversed(tasks)][::-1]

    mine = Reversed()
    with executor(mine) as runner:
        assert runner is mine


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"kind": "spark"}, ArgumentError, "executor must be 'serial' or 'dask'"),
    ({"kind": 3}, ArgumentTypeError, "executor must be"),
    ({"kind": "dask", "workers": 0}, ArgumentError, "workers"),
    ({"scheduler": 8786}, ArgumentTypeError, "scheduler must be an address"),
])
def test_bad_executor_arguments_are_clear(kwargs, error, match):
    with pytest.raises(error, match=match), executor(**kwargs):
        pass


def test_the_environment_names_a_scheduler(monkeypatch):
    """``LCBAYES_SCHEDULER`` makes the default executor a Dask client of that address; an
    explicit ``"serial"`` wins over it."""
    joined = []

    class Client:
        def nthreads(self):
            return {"w1": 1, "w2": 1}

        def close(self):
            joined.append("closed")

    def fake_client(scheduler, workers):
        joined.append(scheduler)
        return Client(), None

    monkeypatch.setattr(execution, "_dask_client", fake_client)
    monkeypatch.setenv(SCHEDULER_VARIABLE, "tcp://10.0.0.7:8786")
    with executor() as runner:
        assert isinstance(runner, DaskExecutor) and runner.parallelism == 2
    assert joined == ["tcp://10.0.0.7:8786", "closed"]
    with executor("serial") as runner:
        assert isinstance(runner, SerialExecutor)


@pytest.fixture(scope="module")
def cluster():
    """A 2-worker LocalCluster on localhost, started by the test itself."""
    distributed = pytest.importorskip("distributed")
    import logging
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as c:
        yield c


def _table(comparison):
    frame = comparison.to_frame()
    return frame[[c for c in frame.columns if "second" not in c]]


def test_compare_on_a_running_scheduler_equals_serial(cluster):
    data = lcb.Dataset.from_csv(data_csv("carcinoma.csv"))
    serial = lcb.compare(data, **COMPARE)
    remote = lcb.compare(data, scheduler=cluster.scheduler_address, **COMPARE)
    pd.testing.assert_frame_equal(_table(serial), _table(remote))


@pytest.mark.slow  # two clusters compile the BLRT programs afresh (compare covers Dask)
def test_blrt_on_a_running_scheduler_and_a_local_cluster_equals_serial(cluster):
    data = lcb.Dataset.from_csv(data_csv("carcinoma.csv"))
    serial = lcb.blrt(data, 2, **BLRT)
    remote = lcb.blrt(data, 2, scheduler=cluster.scheduler_address, **BLRT)
    local = lcb.blrt(data, 2, executor="dask", workers=2, **BLRT)
    for other in (remote, local):
        np.testing.assert_array_equal(other.replicate_lr, serial.replicate_lr)
        assert other.p_value == serial.p_value and other.n_failed == serial.n_failed


def test_cli_compare_on_a_scheduler_prints_the_serial_table(cluster, capsys):
    from lcbayes.cli import main
    path = str(data_csv("carcinoma.csv"))
    argv = ["compare", path, "--n-classes", "1-3", "--methods", "bic,vbem", "--seed", "3",
            "--restarts", "3", "--json"]
    assert main(argv) == 0
    serial = json.loads(capsys.readouterr().out)["rows"]
    assert main([*argv, "--scheduler", cluster.scheduler_address]) == 0
    remote = json.loads(capsys.readouterr().out)["rows"]
    for row in (*serial, *remote):
        row.pop("seconds", None)
    assert remote == serial


@pytest.mark.parametrize(("extra", "message"), [
    (["--workers", "0"], "--workers must be at least 1"),
    (["--executor", "serial", "--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler runs on Dask: leave out --executor serial"),
])
def test_cli_bad_executor_options_are_one_line(capsys, extra, message):
    from lcbayes.cli import main
    status = main(["compare", str(data_csv("carcinoma.csv")), "--n-classes", "1-2",
                   "--methods", "bic", *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
