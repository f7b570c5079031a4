"""Ctrl-C stops a running ``lcbayes compare`` at once: one line, exit status 130, no report
(it used to wait for the running tasks, over 120 s on election, and a second Ctrl-C printed a
38-line double traceback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np

import lcbayes as lcb
from lcbayes.cli.interrupt import EXIT_STATUS, GRACE, MESSAGE
from lcbayes.render import write_text


def _slow_data(path) -> None:
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 10)))
    model = lcb.latent_class(blank, 3)
    data = lcb.simulate(model, lcb.random_params(model, seed=0), 4000, seed=0)
    data.to_pandas().to_csv(path, index=False)


def test_first_ctrl_c_stops_compare_at_once_with_one_line(tmp_path):
    csv = tmp_path / "slow.csv"
    _slow_data(csv)
    report = tmp_path / "r.html"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lcbayes", "compare", str(csv), "--n-classes", "1-6",
         "--methods", "bic,vbem,smc", "--engine-option", "smc.particles=1024", "--report",
         str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    time.sleep(12)                      # imports, reading, compiling: work under way
    assert proc.poll() is None, proc.communicate()
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    waited = time.perf_counter() - sent
    assert proc.returncode == EXIT_STATUS, err.decode()
    assert waited < GRACE + 5
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert lines[-1] == MESSAGE and not [line for line in lines if "Traceback" in line]
    assert not report.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_files_are_written_whole(tmp_path, monkeypatch):
    target = tmp_path / "sub" / "report.html"
    write_text(target, "old")

    def broken(self, data):             # an interrupt in the middle of writing
        raise KeyboardInterrupt

    monkeypatch.setattr(type(target), "write_bytes", broken)
    try:
        write_text(target, "new")
    except KeyboardInterrupt:
        pass
    monkeypatch.undo()
    assert target.read_text() == "old" and sorted(os.listdir(target.parent)) == ["report.html"]
