"""A data set is encoded once, at the boundary: ``compare`` on a DataFrame codes each column
once and compresses the rows to patterns once; every engine it runs then takes that Dataset as
it is (``Structure.check_data`` hands back the same object, nothing is recoded)."""

from __future__ import annotations

from collections import Counter

import lcbayes as lcb
from lcbayes import data as data_module
from lcbayes.data import Dataset


def _counting(counts: Counter, name: str, function):
    def wrapped(*args, **kwargs):
        counts[name] += 1
        return function(*args, **kwargs)
    return wrapped


def test_compare_encodes_a_frame_once(monkeypatch):
    frame = lcb.datasets.frame("carcinoma")
    counts: Counter = Counter()
    for name in ("encode_column", "unique_rows"):
        monkeypatch.setattr(data_module, name, _counting(counts, name, getattr(data_module, name)))
    monkeypatch.setattr(Dataset, "_recoded", _counting(counts, "_recoded", Dataset._recoded))
    comp = lcb.compare(frame, n_classes=[1, 2], methods=["bic", "vbem"], seed=0)
    assert comp.best == "LC(2)"
    assert counts == Counter({"encode_column": frame.shape[1], "unique_rows": 1})


def test_the_count_sees_a_recoding():
    """The check above can fail: selecting columns recodes the data, and is counted."""
    data = lcb.datasets.load("carcinoma")
    counts: Counter = Counter()
    original = Dataset._recoded
    try:
        Dataset._recoded = _counting(counts, "_recoded", original)
        data.select(list(data.columns[:3]))
    finally:
        Dataset._recoded = original
    assert counts["_recoded"] == 1
