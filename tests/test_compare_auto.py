"""compare(n_classes="auto"): classes added until the criterion has fallen twice beyond its
error bars (or the cap), the batches merged into one table, and the command line's
--n-classes auto / --max-classes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import lcbayes as lcb
from lcbayes.comparison.auto import peaked

from .conftest import data_csv


def test_auto_stops_two_past_the_peak_of_bic():
    data = lcb.datasets.load("carcinoma")
    comp = lcb.compare(data, n_classes="auto", methods=["bic"], exact=False, restarts=3,
                       progress=False, workers=2)
    ks = [st.n_classes for st in comp.structures]
    assert ks == list(range(1, len(ks) + 1)) and comp.best == "LC(3)"
    assert peaked(comp) and max(ks) in (5, 6)    # two K past the peak, in batches of two
    assert comp.settings["n_classes"] == "auto" and comp.settings["batches"][0] == [1, 2, 3]


def test_every_batch_releases_its_compiled_programs(monkeypatch):
    # a batch's programs are padded to its own largest K, so a long search that kept them
    # all grew without bound (election to 16 classes ran out of 24 GB)
    import jax

    released = []
    monkeypatch.setattr(jax, "clear_caches", lambda: released.append(True))
    data = lcb.datasets.load("carcinoma")
    comp = lcb.compare(data, n_classes="auto", max_classes=5, methods=["bic"], exact=False,
                       restarts=2, progress=False, workers=2)
    assert len(released) == len(comp.settings["batches"]) >= 2


def test_on_batch_sees_every_batch_as_it_ends():
    data = lcb.datasets.load("carcinoma")
    seen = []
    comp = lcb.compare(data, n_classes="auto", max_classes=5, methods=["bic"], exact=False,
                       restarts=2, progress=False, workers=2,
                       on_batch=lambda so_far: seen.append(
                           ([st.n_classes for st in so_far.structures],
                            so_far.settings["peaked"])))
    batches = comp.settings["batches"]
    assert [ks for ks, _ in seen] == [[k for b in batches[:i + 1] for k in b]
                                      for i in range(len(batches))]
    assert seen[-1][1] == comp.settings["peaked"]
    with pytest.raises(lcb.LcbayesError, match="on_batch"):
        lcb.compare(data, n_classes=[1, 2], methods=["bic"], on_batch=print)


def test_auto_stops_at_the_cap_and_says_so():
    data = lcb.datasets.load("carcinoma")
    comp = lcb.compare(data, n_classes="auto", max_classes=2, methods=["bic"], exact=False,
                       restarts=3, progress=False)
    assert [st.n_classes for st in comp.structures] == [1, 2]
    assert comp.settings["peaked"] is False and comp.best_is_largest


def test_auto_is_refused_with_candidates_and_other_words():
    data = lcb.datasets.load("carcinoma")
    with pytest.raises(lcb.LcbayesError, match="auto"):
        lcb.compare(data, n_classes="many")
    with pytest.raises(lcb.LcbayesError, match="exactly one"):
        lcb.compare(data, [lcb.latent_class(data, 2)], n_classes="auto")


def test_the_command_line_takes_auto_and_refuses_a_lone_cap():
    path = data_csv("carcinoma.csv")
    ok = subprocess.run([sys.executable, "-m", "lcbayes", "compare", str(path), "--n-classes",
                         "auto", "--max-classes", "3", "--methods", "bic", "--exact", "no",
                         "--restarts", "2", "--json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    rows = json.loads(ok.stdout)["rows"]
    assert [r["n_classes"] for r in rows] == [1, 2, 3]
    bad = subprocess.run([sys.executable, "-m", "lcbayes", "compare", str(path), "--n-classes",
                          "1-3", "--max-classes", "3"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--max-classes goes with --n-classes auto" in bad.stderr
