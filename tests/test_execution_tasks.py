"""AIS chain groups and structure-search candidates as tasks of an executor
(lcbayes.execution): the same numbers serially, on a LocalCluster the call starts and on a
running scheduler named by address."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.execution import SerialExecutor
from lcbayes.learn import tree_search
from lcbayes.learn.tree_local import local_em
from lcbayes.learn.tree_search import candidates, local_fits
from lcbayes.learn.trees import TreeModel
from lcbayes.params import to_tables

from .conftest import data_csv
from .test_learn_tree import tree_sample, tree_structure

#: Few temperatures: each worker process compiles its own program.
AIS = {"chains": 4, "temperatures": 32, "seed": 7}


@pytest.fixture(scope="module")
def carcinoma_lc2():
    data = lcb.Dataset.from_csv(data_csv("carcinoma.csv"))
    return lcb.latent_class(data, 2), data


@pytest.fixture(scope="module")
def tree_data() -> lcb.Dataset:
    """600 rows from a 6-leaf binary HLC tree (H -> H1; items 0.85 on one value per state)."""
    return tree_sample(600)


@pytest.fixture(scope="module")
def cluster():
    """A 2-worker LocalCluster on localhost, started by the test itself (its workers without
    Dask's MALLOC_TRIM_THRESHOLD_, which doubles their CPU time for lcbayes's arrays)."""
    distributed = pytest.importorskip("distributed")
    import logging

    import dask
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.ERROR)
    with cluster:
        yield cluster


def _same_ais(a, b) -> None:
    assert a.log_evidence == b.log_evidence and a.chains == b.chains
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    np.testing.assert_array_equal(a.trace, b.trace)
    np.testing.assert_array_equal(a.acceptance, b.acceptance)


@pytest.mark.parametrize("groups", [0, -1, 2.5, "3"])
def test_ais_refuses_bad_groups(carcinoma_lc2, groups):
    structure, data = carcinoma_lc2
    with pytest.raises(lcb.LcbayesError, match="groups"):
        lcb.ais(structure, data, groups=groups, **AIS)


def test_bad_executor_arguments_name_the_argument(carcinoma_lc2, tree_data):
    structure, data = carcinoma_lc2
    with pytest.raises(lcb.ArgumentError, match="executor must be 'serial' or 'dask'"):
        lcb.ais(structure, data, groups=2, executor="spark", **AIS)
    with pytest.raises(lcb.ArgumentError, match="workers"):
        lcb.learn_tree(tree_data, executor="dask", workers=0)
    with pytest.raises(lcb.ArgumentError, match="scheduler must be an address"):
        lcb.learn_tree(tree_data, scheduler=8786)


def test_ais_groups_are_the_groups_of_a_target_stderr_run(carcinoma_lc2):
    """``groups=1`` is the plain run; ``groups=G`` runs exactly the groups (keys
    ``fold_in(key, g)``) that a ``target_stderr`` run makes until ``max_chains``; rounds of
    ``groups`` groups with a target give the same groups, the last round cut to fit."""
    structure, data = carcinoma_lc2
    plain = lcb.ais(structure, data, **AIS)
    _same_ais(lcb.ais(structure, data, groups=1, **AIS), plain)
    three = lcb.ais(structure, data, groups=3, **AIS)
    unreachable = {"target_stderr": 1e-9, "max_chains": 3 * AIS["chains"]}
    _same_ais(lcb.ais(structure, data, **unreachable, **AIS), three)
    np.testing.assert_array_equal(three.log_weights[:AIS["chains"]], plain.log_weights)
    assert three.chains == 12 and three.settings["groups"] == 3
    assert three.settings["chains_per_group"] == AIS["chains"]
    rounds = lcb.ais(structure, data, groups=2, **unreachable, **AIS)   # rounds of 2, then 1
    _same_ais(rounds, three)
    reached = lcb.ais(structure, data, groups=2, target_stderr=10.0, max_chains=12, **AIS)
    assert reached.chains == 8 and reached.settings["groups"] == 2   # met after round one
    np.testing.assert_array_equal(reached.log_weights, three.log_weights[:8])


def test_ais_groups_on_a_cluster_equal_serial(carcinoma_lc2, cluster):
    """Groups as tasks on a running scheduler (a LocalCluster the call starts itself, with
    ``workers=``, is the command-line test below), also in rounds of a ``target_stderr``
    run."""
    structure, data = carcinoma_lc2
    serial = lcb.ais(structure, data, groups=3, **AIS)
    remote = lcb.ais(structure, data, groups=3, scheduler=cluster.scheduler_address, **AIS)
    _same_ais(remote, serial)
    rounds = {"groups": 2, "target_stderr": 1e-9, "max_chains": 12, **AIS}
    _same_ais(lcb.ais(structure, data, scheduler=cluster.scheduler_address, **rounds), serial)


def test_chunked_local_em_gives_the_unchunked_numbers(monkeypatch):
    """A candidate's local EM does not depend on the other lanes of its block, so chunks of
    any size give the numbers of one call (what makes serial and Dask runs identical)."""
    truth = tree_structure({"H": 2, "H1": 3})
    params = lcb.random_params(truth, seed=1)
    model = TreeModel(truth, tuple(np.asarray(t) for t in to_tables(truth, params)))
    data = lcb.simulate(truth, params, 300, seed=2, missing=0.05)
    found = candidates(model, data, "expand", np.random.default_rng(0), 0.05)
    assert len(found) > 10
    whole = local_em(model, data, found, 0.01)
    for chunk in (1, 3, 16):
        monkeypatch.setattr(tree_search, "CHUNK", chunk)
        parts = local_fits(SerialExecutor(), model, data, found, 0.01)
        assert [f.candidate.label for f in parts] == [f.candidate.label for f in whole]
        assert [f.loglik for f in parts] == [f.loglik for f in whole]
        for a, b in zip(parts, whole, strict=True):
            for x, y in zip(a.model.tables, b.model.tables, strict=True):
                np.testing.assert_array_equal(x, y)


def _path(result) -> list[dict]:
    return [{k: v for k, v in m.items() if k != "seconds"} for m in result.to_dict()["path"]]


@pytest.mark.slow  # the tree search's programs compiled on the cluster's workers: 30 s
@pytest.mark.parametrize("lc_bound", [False, True])
def test_learn_tree_on_a_cluster_equals_serial(tree_data, cluster, monkeypatch, lc_bound):
    """Chunks of 4 candidates (several tasks per step): the same path and fit. With the latent
    class bound (slow: it compiles the latent class search here and on a worker), that search
    is a task beside the tree search on the cluster and runs first when serial. (A
    LocalCluster the call starts: the command-line test below.)"""
    monkeypatch.setattr(tree_search, "CHUNK", 4)
    serial = lcb.learn_tree(tree_data, seed=0, lc_bound=lc_bound)
    remote = lcb.learn_tree(tree_data, seed=0, lc_bound=lc_bound,
                            scheduler=cluster.scheduler_address)
    assert len(_path(serial)) > 3
    assert _path(remote) == _path(serial)
    assert remote.fit.loglik == serial.fit.loglik and remote.structure == serial.structure
    for name, table in serial.fit.params.items():
        np.testing.assert_array_equal(remote.fit.params[name], table)
    assert remote.settings["lc_classes"] == serial.settings["lc_classes"]
    assert (serial.settings["lc_classes"] is not None) == lc_bound


@pytest.mark.slow  # the tree search compiled on the cluster's workers: 15-30 s
@pytest.mark.parametrize("local", [False, True])
def test_cli_learn_tree_on_a_cluster_prints_the_serial_best(tree_data, cluster, tmp_path,
                                                            capsys, local):
    """``--scheduler`` (the test's cluster) and, slow (a cluster of its own, whose workers
    compile afresh), ``--executor dask --workers 2``."""
    csv = tmp_path / "tree.csv"
    tree_data.to_pandas().to_csv(csv, index=False)
    argv = ["learn", str(csv), "--tree=east", "--no-lc-bound", "--json"]
    assert main(argv) == 0
    serial = json.loads(capsys.readouterr().out)
    where = (["--executor", "dask", "--workers", "2"] if local
             else ["--scheduler", cluster.scheduler_address])
    assert main([*argv, *where]) == 0
    remote = json.loads(capsys.readouterr().out)
    for spec in (serial, remote):
        spec["best"].pop("seconds")
    assert remote["best"] == serial["best"]
    assert [m["hidden"] for m in remote["path"]] == [m["hidden"] for m in serial["path"]]


@pytest.mark.parametrize(("extra", "message"), [
    (["--tree", "--workers", "0"], "--workers must be at least 1"),
    (["--workers", "2"], "--executor, --scheduler and --workers work with --tree"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--executor, --scheduler and --workers work with"),
    (["--tree", "--executor", "serial", "--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler runs on Dask: leave out --executor serial"),
])
def test_cli_learn_bad_executor_options_are_one_line(tree_data, tmp_path, capsys, extra,
                                                     message):
    csv = tmp_path / "tree.csv"
    tree_data.to_pandas().to_csv(csv, index=False)
    assert main(["learn", str(csv), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err and "Traceback" not in err
