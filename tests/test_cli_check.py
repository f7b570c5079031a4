"""``lcbayes check``: PSIS-LOO and posterior predictive checks of one model, printed, as JSON
and as a report; ``compare --methods ...,loo``; bad input in one line with exit status 2."""

from __future__ import annotations

import json

import pytest

from lcbayes.cli import main

from .conftest import data_csv

SMALL = ("--draws", "300", "--chains", "2", "--warmup", "200", "--replicates", "200")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LCBAYES_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jax-cache"))


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_check_prints_loo_and_the_checks(capsys):
    status, out, _ = _run(capsys, "check", str(data_csv("carcinoma.csv")), "--n-classes", "3",
                          *SMALL)
    assert status == 0
    assert "PSIS-LOO of LC(3)" in out and "elpd_loo" in out and "Pareto k" in out
    assert "Posterior predictive check of LC(3)" in out and "G^2" in out


def test_check_json_holds_both_results(capsys):
    status, out, _ = _run(capsys, "check", str(data_csv("carcinoma.csv")), "--n-classes", "1",
                          *SMALL, "--json")
    assert status == 0
    record = json.loads(out)
    assert record["model"] == "LC(1)"
    assert record["ppc"]["g2_ppp"] < 0.001                 # one class does not fit
    assert record["loo"]["n_rows"] == 118 and record["loo"]["elpd_loo"] < -500


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_check_writes_a_report(capsys, tmp_path, suffix):
    report = tmp_path / f"check{suffix}"
    status, _, _ = _run(capsys, "check", str(data_csv("carcinoma.csv")), "--n-classes", "2",
                          *SMALL, "--report", str(report))
    assert status == 0 and report.is_file()
    text = report.read_text(encoding="utf-8")
    assert "Does LC(2) fit?" in text and "Leave-one-out" in text
    if suffix == ".md":
        assert (tmp_path / "check-pairs.png").is_file()
        assert (tmp_path / "check-patterns.png").is_file()
    else:
        assert text.count("data:image/png;base64,") == 2


@pytest.mark.parametrize(("extra", "message"), [
    ((), "give exactly one of --n-classes"),
    (("--n-classes", "2", "--draws", "20", "--chains", "2"), "at least 100 posterior draws"),
    (("--n-classes", "2", "--report", "out.txt"), "give a .html or .md file"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, extra, message):
    status, _, err = _run(capsys, "check", str(data_csv("carcinoma.csv")), *extra)
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_compare_with_loo_and_covariates_is_refused(capsys, tmp_path):
    path = tmp_path / "with_x.csv"
    rows = data_csv("carcinoma.csv").read_text().splitlines()
    path.write_text("\n".join([rows[0] + ",x"] + [r + f",{i % 3}" for i, r in
                                                  enumerate(rows[1:])]) + "\n")
    status, _, err = _run(capsys, "compare", str(path), "--n-classes", "2", "--methods",
                          "bic,loo", "--covariates", "x")
    assert status == 2 and "'loo' cannot be given with covariates" in err


def test_compare_methods_loo_adds_the_columns(capsys):
    status, out, _ = _run(capsys, "compare", str(data_csv("carcinoma.csv")), "--n-classes",
                          "1-3", "--methods", "bic,loo", "--engine-option", "loo.draws=300",
                          "--engine-option", "loo.chains=2", "--json")
    assert status == 0
    rows = json.loads(out)["rows"]
    assert {"elpd_loo", "loo_weight", "loo_diff"} <= set(rows[0])
    assert max(rows, key=lambda r: r["elpd_loo"])["name"] == "LC(3)"


def test_a_structure_the_sampler_cannot_draw_is_refused_in_one_line(capsys, tmp_path):
    hidden = {f"h{i}": 2 for i in range(1, 14)}                  # 2^13 joint hidden states
    names = list(hidden)
    parents = {c: names[2 * j:2 * j + 2] for j, c in enumerate("ABCDEFG")}
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"kind": "dag", "parents": parents, "hidden": hidden}))
    status, _, err = _run(capsys, "check", str(data_csv("carcinoma.csv")), "--structure",
                          str(path), *SMALL)
    assert status == 2 and "joint states (limit 4096)" in err
    assert len(err.strip().splitlines()) == 1
