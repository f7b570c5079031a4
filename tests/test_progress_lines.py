"""What a log shows: progress as plain lines where stderr is not a terminal (one per finished
candidate, task or move; loops at most one per ``log_every`` seconds), never a carriage return;
an unwritable output refused before any work; boundary estimates as one warning line."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import numpy as np

from lcbayes.progress import LineProgress, new_bar

from .conftest import data_csv


def test_compare_into_a_log_prints_a_line_per_candidate_and_no_carriage_return(tmp_path):
    log = tmp_path / "err.log"
    with log.open("w") as err:
        done = subprocess.run(
            [sys.executable, "-m", "lcbayes", "compare", str(data_csv("carcinoma.csv")),
             "--n-classes", "1-5", "--methods", "bic", "--report", str(tmp_path / "r.html")],
            stdout=subprocess.PIPE, stderr=err, check=False)
    text = log.read_text()
    assert done.returncode == 0, text
    assert "\r" not in text
    for k in range(1, 6):
        assert f"compare: {k}/5 models done" in text


def test_a_log_bar_throttles_loops_but_always_shows_the_last_step():
    out = io.StringIO()
    bar = new_bar(total=1000, desc="AIS", unit="step", file=out, log_every=3600)
    assert isinstance(bar, LineProgress)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[0]]
    assert out.getvalue().startswith("AIS: 1000/1000 steps done")
    every = io.StringIO()
    with new_bar(desc="learn", unit="move", file=every, log_every=0) as moves:
        for step in range(3):
            moves.set_postfix_str(f"split -> {step + 2}")
            moves.update(1)
    lines = every.getvalue().splitlines()
    assert len(lines) == 3 and lines[-1].startswith("learn: 3 moves done")
    assert lines[-1].endswith("(split -> 4)")


def test_an_unwritable_report_is_refused_before_any_work(tmp_path, capsys):
    from lcbayes.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for report in (blocker / "r.html", "/proc/lcbayes-test/r.html"):
        assert main(["compare", str(data_csv("carcinoma.csv")), "--n-classes", "1-2",
                     "--report", str(report)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--report" in err[0] and "cannot be written" in err[0]


def test_boundary_estimates_are_one_warning_line_with_a_count(capsys):
    from lcbayes.cli import main

    assert main(["fit", str(data_csv("carcinoma.csv")), "--n-classes", "3"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "boundary" in line]
    assert len(err) == 1 and len(err[0]) < 200
    assert "10 estimated probabilities are on the boundary" in err[0]
    assert "and 9 more; lcb.boundary_entries lists them" in err[0]


def test_fit_with_many_restarts_shows_their_progress_in_a_log(tmp_path):
    log = tmp_path / "err.log"
    with log.open("w") as err:
        done = subprocess.run(
            [sys.executable, "-m", "lcbayes", "fit", str(data_csv("carcinoma.csv")),
             "--n-classes", "2", "--restarts", "120", "--se", "none"],
            stdout=subprocess.PIPE, stderr=err, check=False)
    text = log.read_text()
    assert done.returncode == 0, text
    assert "EM restarts: 120/120 starts done" in text and "\r" not in text


def test_em_in_parts_for_progress_gives_the_same_fit(carcinoma):
    import lcbayes as lcb

    structure = lcb.latent_class(carcinoma, 3)
    whole = lcb.em(structure, carcinoma, restarts=23, seed=4)
    with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
        parted = lcb.em(structure, carcinoma, restarts=23, seed=4, progress=True)
        staged = lcb.em(structure, carcinoma, restarts=23, keep=5, seed=4, progress=True)
    np.testing.assert_array_equal(parted.restart_logliks, whole.restart_logliks)
    assert parted.loglik == whole.loglik
    assert staged.loglik == lcb.em(structure, carcinoma, restarts=23, keep=5, seed=4).loglik
