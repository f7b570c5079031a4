"""Readable output (issue 15 item 5): counts in the right number, classes numbered from 1 by
every fitted result, settings printed as a reader expects, figures whose labels and error bars
do not cover each other and whose axes a far-off candidate does not squash."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.comparison.figures import posterior_figure, visible_range
from lcbayes.render import TEXT_WIDTH, fmt_setting, plural, wrap


@pytest.fixture(scope="module")
def small() -> lcb.Dataset:
    """Three binary items, two clear groups."""
    rows = [[0, 0, 0]] * 12 + [[1, 1, 1]] * 10 + [[0, 1, 0], [1, 0, 1], [0, 0, 1]]
    return lcb.Dataset.from_codes(np.asarray(rows), columns=["a", "b", "c"])


# ---------------------------------------------------------------------- render helpers
def test_plural_agrees_with_the_count():
    assert plural(1, "class", "classes") == "1 class"
    assert plural(3, "class", "classes") == "3 classes"
    assert plural(0, "row") == "0 rows" and plural(1, "row") == "1 row"


def test_settings_print_integers_as_integers():
    assert fmt_setting(200000.0) == "200000"  # max_terms, printed 200000.000 before
    assert fmt_setting(2e5) == "200000" and fmt_setting(7) == "7"
    assert fmt_setting(0.15) == "0.15" and fmt_setting(1e-8) == "1e-08"
    assert fmt_setting(None) == "none" and fmt_setting([2.0, 0.5]) == "2, 0.5"
    assert fmt_setting("auto") == "auto" and fmt_setting(False) == "False"


def test_wrap_keeps_lines_within_the_width():
    text = "word " * 60 + "a_single_long_token_" * 3
    lines = wrap(text, "  ", "      ")
    assert all(len(line) <= TEXT_WIDTH for line in lines[:-1])
    assert lines[0].startswith("  word") and lines[1].startswith("      word")
    assert " ".join(line.strip() for line in lines) == " ".join(text.split())


# ---------------------------------------------------------------------- results
def test_vb_numbers_classes_from_one_like_em(small):
    structure = lcb.latent_class(small, 2)
    vb = lcb.vbem(structure, small, restarts=1, seed=0)
    fit = lcb.em(structure, small, restarts=2, seed=0)
    for result in (vb, fit):
        frame = result.to_frame()
        shares = frame[frame["node"] == "class"]
        assert list(shares["category"]) == ["class 1", "class 2"]  # was 0, 1
        assert set(frame.loc[frame["node"] == "a", "parents"]) == {"class 1", "class 2"}
        text = result.summary()
        assert "Estimated class population shares" in text
        assert "class 1  class 2" in text and "$class" not in text
        np.testing.assert_allclose(result.class_weights.sum(), 1.0)
    vb_text = vb.summary()
    assert "(posterior means)" in vb_text and "2 classes" in vb_text
    alpha = np.asarray(vb.posterior["class"], dtype=float).ravel()   # Dirichlet posterior
    np.testing.assert_allclose(vb.class_weights, alpha / alpha.sum())
    share_line = next(line for line in vb_text.splitlines() if line.startswith("share"))
    np.testing.assert_allclose([float(v) for v in share_line.split()[1:]], vb.class_weights,
                               atol=5e-5)
    again = lcb.VBResult.from_dict(json.loads(json.dumps(vb.to_dict())))
    assert again.summary() == vb_text  # the JSON form is unchanged and reads back


def test_one_class_reads_in_the_singular(small):
    fit = lcb.em(lcb.latent_class(small, 1), small, restarts=1, seed=0)
    text = fit.summary()
    assert "Latent class model: 1 class, 3 items" in text and "1 classes" not in text
    assert "best found by 1 of 1 restart;" in text
    vb = lcb.vbem(lcb.latent_class(small, 1), small, restarts=1, seed=0)
    assert "1 class;" in vb.summary() and "1 restart:" in vb.summary()


def test_singular_reasons_say_one_class(small):
    from lcbayes.comparison import singular_reasons

    one = lcb.em(lcb.latent_class(small, 1), small, restarts=1, seed=0)
    two = lcb.em(lcb.latent_class(small, 2), small, restarts=2, seed=0)
    poorer = dataclasses.replace(two, loglik=one.loglik)  # no gain at all
    reasons = singular_reasons(poorer, one)
    assert any("no significant gain over 1 class " in r for r in reasons)
    assert not any("1 classes" in r for r in reasons)


# ---------------------------------------------------------------------- figures
def test_a_far_candidate_leaves_the_scale_of_the_others():
    scores = np.array([[-540.1, -541.2], [-353.0, -357.3], [-348.6, -351.2],
                       [-363.2, -353.4], [-379.9, -355.1]])  # carcinoma, LC(1)..LC(5)
    low, high, off = visible_range(scores)
    assert off == [0]
    assert low < -379.9 and high > -348.6 and high - low < 40
    evenly = np.array([[-100.0], [-200.0], [-300.0], [-400.0]])  # nothing squashed
    low, high, off = visible_range(evenly)
    assert off == [] and low < -400 < -100 < high
    assert visible_range(np.array([[-1.0], [-1000.0]]))[2] == []  # at least two stay


def test_posterior_labels_sit_above_their_error_bars():
    frame = pd.DataFrame({"name": ["LC(1)", "LC(2)", "LC(3)"],
                          "posterior_prob": [0.02, 0.10, 0.88],
                          "posterior_low": [0.01, 0.05, 0.80],
                          "posterior_high": [0.03, 0.30, 0.93],
                          "evidence_method": ["exact", "ais", "ais"]})
    ax = posterior_figure(frame).axes[0]
    labels = {t.get_text(): t.get_position()[1] for t in ax.texts}
    for p, high in zip(frame["posterior_prob"], frame["posterior_high"], strict=True):
        assert labels[f"{p:.3f}"] > high  # was p + 0.03: inside LC(2)'s interval
    assert ax.get_ylim()[1] > max(labels.values())  # and inside the axes
    assert ax.get_legend() is None and ax.figure.legends  # the legend is outside the axes
