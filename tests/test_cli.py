"""The ``lcbayes`` command: JSON contract, plain output, errors, reproducibility."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from lcbayes.cli import main

from .conftest import data_csv

REQUIRED_KEYS = {
    "method", "n_rows", "n_patterns", "n_classes", "loglik", "n_parameters", "bic", "aic", "icl",
    "converged", "n_iter", "seconds", "class_weights", "conditional_probabilities",
}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LCBAYES_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jax-cache"))


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_fit_json_has_the_documented_fields(capsys):
    path = data_csv("carcinoma.csv")
    status, out, _ = _run(capsys, "fit", str(path), "--n-classes", "3", "--restarts", "20",
                          "--seed", "0", "--json")
    assert status == 0
    result = json.loads(out)
    assert REQUIRED_KEYS <= set(result)
    assert result["method"] == "em" and result["n_classes"] == 3
    assert result["n_rows"] == 118 and result["n_patterns"] == 20
    assert result["loglik"] == pytest.approx(-293.7050, abs=1e-3)
    assert result["n_parameters"] == 23
    assert len(result["class_weights"]) == 3
    probs = result["conditional_probabilities"]
    assert set(probs) == set("ABCDEFG") and len(probs["A"]) == 3
    assert all(sum(row.values()) == pytest.approx(1.0) for row in probs["A"])
    # Evidence I scores: alias ln 3!, and under Dirichlet(1) priors the density at any point is
    # Gamma(3) = 2 for the class row and Gamma(2) = 1 for every binary item row
    assert result["log_alias"] == pytest.approx(math.log(6))
    assert result["cs_corrected"] == pytest.approx(result["cs"] + math.log(6))
    assert result["bicp"] == pytest.approx(result["bic"] + math.log(2))
    assert result["effective_dimension"] <= result["n_parameters"]
    assert result["bic_e"] >= result["bic"]


def test_a_file_read_in_chunks_or_as_parquet_gives_the_same_fit(capsys, tmp_path):
    """--chunk-rows reads the CSV in chunks into its distinct patterns (lcb.scan_file), a
    Parquet file is always read so: the same fit as the CSV read whole."""
    path = str(data_csv("carcinoma.csv"))
    args = ("--n-classes", "2", "--restarts", "3", "--seed", "1", "--json")
    whole = json.loads(_run(capsys, "fit", path, *args)[1])
    chunked = json.loads(_run(capsys, "fit", path, "--chunk-rows", "10", *args)[1])
    pytest.importorskip("pyarrow")
    import pandas as pd
    parquet = tmp_path / "carcinoma.parquet"
    pd.read_csv(path).to_parquet(parquet)
    from_parquet = json.loads(_run(capsys, "fit", str(parquet), *args)[1])
    for fit in (chunked, from_parquet):
        assert fit["n_rows"] == whole["n_rows"] and fit["n_patterns"] == whole["n_patterns"]
        assert fit["loglik"] == pytest.approx(whole["loglik"], abs=1e-9)
        assert fit["conditional_probabilities"] == whole["conditional_probabilities"]
    status, _, err = _run(capsys, "fit", path, "--chunk-rows", "0", "--n-classes", "2")
    assert status == 2 and "chunk_rows" in err and "Traceback" not in err


def test_same_seed_same_output(capsys):
    path = str(data_csv("carcinoma.csv"))
    args = ("fit", path, "--n-classes", "2", "--restarts", "5", "--seed", "3", "--json")
    first = json.loads(_run(capsys, *args)[1])
    second = json.loads(_run(capsys, *args)[1])
    first.pop("seconds")
    second.pop("seconds")
    assert first == second


def test_plain_output_reads_like_polca(capsys):
    path = str(data_csv("carcinoma.csv"))
    status, out, _ = _run(capsys, "fit", path, "--n-classes", "2", "--columns", "A,B,C,D")
    assert status == 0
    assert "Estimated class population shares" in out
    assert "$D" in out and "$E" not in out
    assert "log-likelihood:" in out and "BIC" in out


def test_missing_values_are_used_not_dropped(capsys, tmp_path):
    csv = tmp_path / "gaps.csv"
    csv.write_text("a,b,c\n" + "x,1,yes\n,2,no\n" * 10 + "y,,\n" * 5 + ",,\n")
    status, out, err = _run(capsys, "fit", str(csv), "--n-classes", "2", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["n_rows"] == 26 and result["n_observed_rows"] == 25
    assert "no observed value" in err  # the fully missing row is reported


def test_structure_file_fits_an_hlc_model(capsys, tmp_path):
    spec = tmp_path / "tree.json"
    spec.write_text(json.dumps({"kind": "hlc", "tree": {"H": ["H1", "A", "B"],
                                                         "H1": ["C", "D", "E"]},
                                "cardinalities": {"H": 2, "H1": 2}}))
    path = str(data_csv("carcinoma.csv"))
    status, out, _ = _run(capsys, "fit", path, "--structure", str(spec), "--json")
    assert status == 0
    result = json.loads(out)
    assert result["kind"] == "hlc" and result["n_classes"] is None
    assert result["n_parameters"] == 1 + 2 * 1 + 2 * 2 + 3 * 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n-classes", "0"], "n_classes"),
        (["--n-classes", "2", "--columns", "A,Z"], "unknown column"),
        (["--n-classes", "2", "--restarts", "0"], "restarts"),
        ([], "--n-classes"),
    ],
)
def test_bad_input_is_one_line_and_status_two(capsys, argv, message):
    path = str(data_csv("carcinoma.csv"))
    status, out, err = _run(capsys, "fit", path, *argv)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_high_cardinality_column_is_refused(capsys, tmp_path):
    csv = tmp_path / "ages.csv"
    csv.write_text("age,x\n" + "".join(f"{20 + i},{i % 2}\n" for i in range(80)))
    status, _, err = _run(capsys, "fit", str(csv), "--n-classes", "2")
    assert status == 2 and "'age'" in err and "bin" in err


def test_console_script_reports_errors_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "lcbayes.cli", "fit", str(tmp_path / "absent.csv"),
         "--n-classes", "2"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("lcbayes: error: no such file")
    assert "Traceback" not in proc.stderr


def _carcinoma_as(tmp_path, sep=",", encoding="utf-8"):
    lines = data_csv("carcinoma.csv").read_text().splitlines()
    csv = tmp_path / "carcinoma-copy.csv"
    lines[0] = lines[0].replace("A", "Â")
    csv.write_bytes("\n".join(line.replace(",", sep) for line in lines).encode(encoding))
    return csv


def test_semicolon_and_latin1_files_fit_like_the_original(capsys, tmp_path):
    argv = ("--n-classes", "2", "--json", "--restarts", "4")
    _, original, _ = _run(capsys, "fit", str(data_csv("carcinoma.csv")), *argv)
    status, out, err = _run(capsys, "fit", str(_carcinoma_as(tmp_path, ";", "latin-1")), *argv)
    assert status == 0 and "not UTF-8; it was read as cp1252" in err
    assert json.loads(out)["loglik"] == json.loads(original)["loglik"]


@pytest.mark.parametrize(
    ("encoding", "extra", "message"),
    [
        ("latin-1", ["--encoding", "utf-8"], "not utf-8 text: byte 0xc2"),
        ("utf-8", ["--encoding", "nonsense"], "unknown encoding 'nonsense'"),
        ("utf-8", ["--seed", "99999999999999999999"],
         "seed must be a non-negative integer below 2**63"),
        ("utf-8", ["--seed", "-1"], "seed must be a non-negative integer"),
        ("utf-8", ["--restarts", "2", "--keep", "5"], "keep must be an integer between 1 and 2"),
    ],
)
def test_bad_file_options_are_one_line_and_status_two(capsys, tmp_path, encoding, extra,
                                                       message):
    csv = _carcinoma_as(tmp_path, encoding=encoding)
    status, out, err = _run(capsys, "fit", str(csv), "--n-classes", "2", *extra)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_folder_is_one_line_and_status_two(capsys, tmp_path):
    status, out, err = _run(capsys, "compare", str(tmp_path), "--n-classes", "1-2")
    assert status == 2 and out == ""
    assert err.strip() == f"lcbayes: error: {str(tmp_path)!r} is a folder, not a CSV file; " \
                          "give the file's path"


def test_more_classes_than_patterns_warns_once_per_size(capsys, tmp_path):
    csv = tmp_path / "two.csv"
    csv.write_text("a,b\n" + "0,0\n1,1\n" * 10)
    status, _, err = _run(capsys, "compare", str(csv), "--n-classes", "1-3", "--methods",
                          "bic,vbem")
    assert status == 0
    warnings = [line for line in err.splitlines() if "distinct observed pattern" in line]
    assert warnings == ["lcbayes: warning: hidden node 'class' has 3 states but data has only "
                        "2 distinct observed pattern(s); fewer classes will fit as well"]


def _small_csv(tmp_path):
    csv = tmp_path / "small.csv"
    rows = ["1,0,1", "1,1,1", "0,0,0", "0,0,1", "1,1,0", "0,,0", "1,1,1", "0,0,0"]
    csv.write_text("a,b,c\n" + "\n".join(rows) + "\n")
    return csv


def test_vbem_json_has_the_bound_and_its_correction(capsys, tmp_path):
    import lcbayes as lcb

    csv = _small_csv(tmp_path)
    status, out, _ = _run(capsys, "fit", str(csv), "--n-classes", "2", "--method", "vbem",
                          "--seed", "1", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["method"] == "vbem"
    assert result["log_alias"] == pytest.approx(math.log(2))
    assert result["elbo_corrected"] == pytest.approx(result["elbo"] + math.log(2))
    data = lcb.Dataset.from_csv(csv)
    exact = lcb.exact_evidence(lcb.latent_class(data, 2), data).log_evidence
    assert result["elbo"] <= exact
    assert result["effective_dimension"] <= result["n_parameters"] == 7


def test_exact_json_has_the_log_evidence(capsys, tmp_path):
    import lcbayes as lcb

    csv = _small_csv(tmp_path)
    status, out, _ = _run(capsys, "fit", str(csv), "--n-classes", "2", "--method", "exact",
                          "--json")
    assert status == 0
    result = json.loads(out)
    data = lcb.Dataset.from_csv(csv)
    assert result["method"] == "exact"
    assert result["log_evidence"] == pytest.approx(
        lcb.exact_evidence(lcb.latent_class(data, 2), data).log_evidence, abs=1e-12)
    status, out, _ = _run(capsys, "fit", str(csv), "--n-classes", "2", "--method", "exact")
    assert status == 0 and "Exact log evidence" in out


def test_too_large_exact_problem_exits_two_with_the_estimate(capsys):
    path = str(data_csv("carcinoma.csv"))
    status, out, err = _run(capsys, "fit", path, "--n-classes", "3", "--method", "exact")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "max_terms" in err and "lcb.vbem" in err


# ---------------------------------------------------------------------- compare
def _pattern_csv(tmp_path):
    """Every pattern of four binary items once (the shape tests/test_compare.py uses)."""
    import itertools

    csv = tmp_path / "patterns.csv"
    rows = [",".join(map(str, p)) for p in itertools.product(range(2), repeat=4)]
    csv.write_text("X1,X2,X3,X4\n" + "\n".join(rows) + "\n")
    return csv


def test_compare_json_and_reports(capsys, tmp_path):
    csv = _pattern_csv(tmp_path)
    report, md = tmp_path / "out" / "cmp.html", tmp_path / "cmp.md"
    status, out, err = _run(capsys, "compare", str(csv), "--n-classes", "1-2", "--methods",
                            "bic,cs,vbem", "--restarts", "3", "--exact", "no", "--json",
                            "--report", str(report), "--markdown", str(md))
    assert status == 0 and err == ""  # no progress bars with --json
    result = json.loads(out)
    assert set(result) == {"rows", "metadata"}
    rows = result["rows"]
    assert [r["name"] for r in rows] == ["LC(1)", "LC(2)"]
    assert {"bic", "cs", "cs_corrected", "elbo", "elbo_corrected", "log_evidence",
            "posterior_prob", "rank_bic", "flags"} <= set(rows[0])
    # the VB bound is a bound, never a candidate's evidence: with no evidence method the
    # table ranks by BIC and gives no posterior probabilities
    assert all(r["evidence_method"] == "none" and r["log_evidence"] is None
               and r["posterior_prob"] is None for r in rows)
    assert rows[1]["elbo"] is not None and rows[1]["elbo"] < rows[1]["elbo_corrected"]
    assert result["metadata"]["settings"]["exact"] is False
    assert "data:image/png;base64," in report.read_text()
    assert "| LC(2) |" in md.read_text() and (tmp_path / "cmp-scores.png").is_file()


def test_compare_prints_a_readable_table(capsys, tmp_path):
    csv = _pattern_csv(tmp_path)
    status, out, _ = _run(capsys, "compare", str(csv), "--n-classes", "1,2", "--methods",
                          "bic,vbem", "--restarts", "3")
    assert status == 0
    assert "LC(1)" in out and "LC(2)" in out and "BIC" in out and "p(m|y)" in out
    assert "Highest log evidence" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n-classes", "5-1"], "runs backwards"),
        (["--n-classes", "a-3"], "bad --n-classes"),
        (["--n-classes", "0-2"], ">= 1"),
        (["--n-classes", "1-3", "--methods", "bic,laplacian"], "valid methods are"),
        (["--n-classes", "1-3", "--columns", "X1,Q"], "unknown column"),
        ([], "--n-classes"),
    ],
)
def test_compare_bad_input_is_one_line_and_status_two(capsys, tmp_path, argv, message):
    csv = _pattern_csv(tmp_path)
    status, out, err = _run(capsys, "compare", str(csv), *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_compare_missing_file_exits_two(capsys, tmp_path):
    status, out, err = _run(capsys, "compare", str(tmp_path / "absent.csv"), "--n-classes", "1-2")
    assert status == 2 and out == "" and "no such file" in err and err.count("\n") == 1


def test_demo_data_is_the_documented_model():
    from lcbayes.cli.demo import DEMO_PROFILES, DEMO_ROWS, demo_data

    data = demo_data(0)
    assert data.n_rows == DEMO_ROWS and data.columns == tuple(f"Q{j}" for j in range(1, 7))
    assert data.labels[0] == ("no", "yes")
    share_yes = (data.codes == 1).mean(axis=0)
    expected = np.asarray([0.5, 0.3, 0.2]) @ np.asarray(DEMO_PROFILES)
    assert np.allclose(share_yes, expected, atol=0.08)  # 3.5 binomial standard errors
    assert np.array_equal(demo_data(0).codes, data.codes)


# ---------------------------------------------------------------------- readable output
def test_compare_table_fits_100_columns_and_wide_prints_every_column(capsys):
    path = str(data_csv("carcinoma.csv"))
    argv = ("compare", path, "--n-classes", "1-5", "--methods", "bic,vbem,ais", "--restarts",
            "1", "--engine-option", "ais.chains=4", "--engine-option", "ais.temperatures=20")
    status, out, _ = _run(capsys, *argv)
    assert status == 0
    assert max(len(line) for line in out.splitlines()) <= 100  # was 141-198
    assert "ln p(y|m)" in out and "s.e." in out and "BIC" in out and "VB F*" not in out
    status, wide, _ = _run(capsys, *argv, "--wide")
    assert status == 0 and "VB F*" in wide and "AIS" in wide and "d_e" in wide
    assert max(len(line) for line in wide.splitlines()) > 100


def test_fit_ais_prints_the_evidence_its_error_ess_and_settings(capsys, tmp_path):
    import lcbayes as lcb

    csv = _small_csv(tmp_path)
    argv = ("fit", str(csv), "--n-classes", "2", "--method", "ais", "--chains", "4",
            "--temperatures", "30", "--seed", "2")
    status, out, _ = _run(capsys, *argv, "--json")
    assert status == 0
    result = json.loads(out)
    data = lcb.Dataset.from_csv(csv)
    run = lcb.ais(lcb.latent_class(data, 2), data, chains=4, temperatures=30, seed=2)
    assert result["method"] == "ais" and result["log_evidence"] == run.log_evidence
    assert result["stderr"] == run.stderr and result["ess"] == run.ess
    assert result["chains"] == 4 and result["temperatures"] == 30 and result["seed"] == 2
    assert result["n_parameters"] == 7 and result["settings"]["prior"] == "dirichlet"
    status, text, _ = _run(capsys, *argv)
    assert status == 0
    assert f"{run.log_evidence:.4f} +/- {run.stderr:.4f}" in text and f"ESS {run.ess:.1f}" in text
    assert "4 chains x 30 temperatures" in text and "settings: seed = 2; prior = dirichlet" in text


def test_fit_ais_defaults_come_from_the_engine(capsys):
    import inspect

    from lcbayes.engines.ais import ais

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    defaults = inspect.signature(ais).parameters
    assert f"ais: chains (default {defaults['chains'].default})" in help_text
    assert f"ais: annealing steps (default {defaults['temperatures'].default})" in help_text
    assert f"ais: transition kernel (default {defaults['kernel'].default})" in help_text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--method", "ais", "--restarts", "3"], "--restarts applies to --method em or vbem"),
        (["--method", "em", "--chains", "4"], "--chains applies to --method ais, not em"),
        (["--method", "vbem", "--keep", "2"], "--keep applies to --method em, not vbem"),
    ],
)
def test_fit_refuses_an_option_of_another_method(capsys, tmp_path, argv, message):
    status, out, err = _run(capsys, "fit", str(_small_csv(tmp_path)), "--n-classes", "2", *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize(("options", "recorded"), [
    (("ais.target_stderr=0.5", "ais.max_chains=12"), {"target_stderr": 0.5, "max_chains": 12}),
    (("ais.target_stderr=null",), {"target_stderr": None}),
])
def test_compare_engine_options_reach_the_engine_and_the_record(capsys, tmp_path, options,
                                                                recorded):
    csv = _small_csv(tmp_path)
    given = [x for o in ("ais.chains=4", "ais.temperatures=8", *options)
             for x in ("--engine-option", o)]
    status, out, _ = _run(capsys, "compare", str(csv), "--n-classes", "2", "--methods", "ais",
                          *given, "--json")
    assert status == 0
    result = json.loads(out)
    assert result["metadata"]["settings"]["engine_options"]["ais"] == {
        "chains": 4, "temperatures": 8, **recorded}
    import lcbayes as lcb

    data = lcb.Dataset.from_csv(csv)
    direct = lcb.ais(lcb.latent_class(data, 2), data, chains=4, temperatures=8, seed=0,
                     **recorded)
    assert result["rows"][0]["ais"] == pytest.approx(direct.log_evidence, abs=1e-12)


@pytest.mark.parametrize(("option", "message"), [
    ("ais.chain=4", "engine_options['ais'] has unknown options ['chain']"),
    ("aiss.chains=4", "engine_options has unknown engines ['aiss']"),
    ("ais.seed=4", "compare sets for every engine"),
    ("chains=4", "bad --engine-option 'chains=4': write ENGINE.NAME=VALUE"),
])
def test_compare_bad_engine_option_is_one_line(capsys, tmp_path, option, message):
    status, out, err = _run(capsys, "compare", str(_small_csv(tmp_path)), "--n-classes", "2",
                            "--engine-option", option)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err
