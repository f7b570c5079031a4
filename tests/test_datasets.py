"""The shipped data sets (lcbayes.datasets) and ``lcbayes datasets``."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.cli import main

from .conftest import TEST_DATA

#: poLCA's maximum-likelihood log-likelihoods of carcinoma (poLCA 1.6, many restarts): the
#: shipped table must give the same fits.
POLCA_LOGLIK = {2: -317.2568, 3: -293.7050}


@pytest.mark.parametrize("name", lcb.datasets.names())
def test_each_data_set_has_its_documented_size_and_columns(name):
    described = lcb.datasets.info(name)
    frame = lcb.datasets.frame(name)
    assert frame.shape == (described.rows, len(described.columns))
    assert tuple(frame.columns) == described.columns
    data = lcb.datasets.load(name)
    assert data.columns == described.items and data.n_rows == described.rows
    assert described.source and described.licence and described.description


#: Each data set's digest (:func:`_digest`), recorded from the project's source CSV when the
#: set was added (tests/data/README.md), so a clone checks its shipped tables by itself.
DIGESTS = json.loads((TEST_DATA / "dataset_digests.json").read_text(encoding="utf-8"))


def _digest(frame: pd.DataFrame) -> str:
    """SHA-256 over the column names and pandas' (fixed-key) hash of every row."""
    h = hashlib.sha256(json.dumps([str(c) for c in frame.columns]).encode())
    h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("name", lcb.datasets.names())
def test_each_data_set_equals_its_source_table_row_for_row(name):
    assert _digest(lcb.datasets.frame(name)) == DIGESTS[name]


def test_cheating_keeps_gpa_missing_and_leaves_it_out_of_the_items():
    frame = lcb.datasets.frame("cheating")
    assert int(frame["GPA"].isna().sum()) == 4
    assert "GPA" not in lcb.datasets.load("cheating").columns
    with_gpa = lcb.datasets.load("cheating", columns=["FRAUD", "GPA"])
    assert with_gpa.columns == ("FRAUD", "GPA") and with_gpa.n_missing == {"FRAUD": 0, "GPA": 4}


@pytest.mark.slow  # tests/test_em.py's test_em_reproduces_polca_on_carcinoma fits the same
# shipped table (its carcinoma fixture is lcb.datasets.load) to these values, K = 1..4
def test_carcinoma_fits_reach_polca_log_likelihoods():
    data = lcb.datasets.load("carcinoma")
    for k, loglik in POLCA_LOGLIK.items():
        fit = lcb.em(lcb.latent_class(data, k), data, restarts=20, seed=0)
        assert fit.loglik == pytest.approx(loglik, abs=1e-3)


def test_an_unknown_name_lists_the_data_sets():
    with pytest.raises(lcb.ArgumentError, match="carcinoma"):
        lcb.datasets.load("carcinoma2")


def test_the_command_lists_and_writes_the_data_sets(tmp_path, capsys):
    assert main(["datasets"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listing] == list(lcb.datasets.names())
    out = tmp_path / "carcinoma.csv"
    assert main(["datasets", "carcinoma", "--out", str(out)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out), lcb.datasets.frame("carcinoma"))
    assert main(["datasets", "values"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "A,B,C,D"


@pytest.mark.parametrize("argv", [["datasets", "nope"], ["datasets", "--out", "x.csv"]])
def test_the_command_refuses_a_bad_request_in_one_line(argv, capsys):
    assert main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_output_cut_short_by_its_reader_ends_quietly():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-m", "lcbayes", "datasets", "gss82"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()   # the reader leaves before the first line (as `| head` does later)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 1 and err == b""
