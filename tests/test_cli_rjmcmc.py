"""The ``lcbayes rjmcmc`` command: JSON contract, plain output, report, warnings (each once),
errors, reproducibility, and the evidence route run when the chains do not mix in K.

Every successful run uses the same data shape, chain count, number of draws and class limit,
so the sampler compiles once for the whole file (seeds and warm-up are traced arguments). The
runs that are not about the evidence route turn it off (``--evidence no``: 2 x 150 draws never
mix in K); those that are use one seed, so the comparison behind it compiles once too.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pytest

from lcbayes.cli import main
from lcbayes.cli.evidence_route import MIN_SHARE, upper_classes, wanted
from lcbayes.samplers.results import KMixingResult

#: The sampler's settings of every successful run (one compiled sampler).
SAMPLER = ("--max-classes", "4", "--draws", "150", "--warmup", "50", "--chains", "2")
#: ... with the evidence route off, for the tests of the sampler's own output.
SETTINGS = (*SAMPLER, "--evidence", "no")
#: Sweeps per chain: the warm-up plus one per kept draw (thin 1).
SWEEPS = 50 + 150
MOVES = ("split", "merge", "birth", "death")


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(tmp_path_factory):
    """Compiled programs go to this session's temporary folder, not the user's cache
    (module scope: set before the module-scoped run below)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LCBAYES_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jax-cache"))
        yield


@pytest.fixture(scope="module")
def two_class_csv(tmp_path_factory):
    """120 rows of four yes/no items from two well-separated classes (0.85 vs 0.15)."""
    rng = np.random.default_rng(7)
    first = rng.random(120) < 0.5
    codes = rng.random((120, 4)) < np.where(first[:, None], 0.85, 0.15)
    path = tmp_path_factory.mktemp("rjmcmc") / "two_classes.csv"
    rows = [",".join("yes" if v else "no" for v in row) for row in codes]
    path.write_text("a,b,c,d\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def noise_csv(tmp_path_factory):
    """120 rows of four independent fair yes/no items: no structure. Under the Poisson prior
    of K the exact posterior (AIS evidences) is about 0.62, 0.26, 0.09, 0.03 for K = 1..4."""
    rng = np.random.default_rng(13)
    codes = rng.random((120, 4)) < 0.5
    path = tmp_path_factory.mktemp("rjmcmc") / "noise.csv"
    rows = [",".join("yes" if v else "no" for v in row) for row in codes]
    path.write_text("a,b,c,d\n" + "\n".join(rows) + "\n")
    return path


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def json_run(two_class_csv):
    """One ``--json`` run (module scope, so stdout is captured by hand): (status, stdout)."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        status = main(["rjmcmc", str(two_class_csv), *SETTINGS, "--seed", "3", "--json"])
    return status, stdout.getvalue()


def test_json_is_one_object_with_the_documented_fields(json_run):
    status, out = json_run
    assert status == 0
    assert out.count("\n") == 1  # one JSON object on one line, nothing else on stdout
    result = json.loads(out)
    assert {"posterior_k", "prior_k", "modal_k", "acceptance", "proposed", "k_diagnostics",
            "k_mixing", "diagnostics", "relabelling", "seconds", "sampler_seconds", "n_rows",
            "n_patterns", "columns", "seed", "draws", "warmup", "chains", "thin",
            "max_classes", "evidence"} <= set(result)
    assert result["evidence"] is None  # --evidence no
    assert (result["n_rows"], result["seed"], result["draws"], result["warmup"],
            result["chains"], result["thin"], result["max_classes"]) == (120, 3, 150, 50, 2, 1, 4)
    assert result["columns"] == ["a", "b", "c", "d"] and result["n_patterns"] <= 16
    assert result["seconds"] >= result["sampler_seconds"] > 0


def test_posterior_of_k_is_a_distribution_whose_mode_is_diagnosed(json_run):
    result = json.loads(json_run[1])
    post = result["posterior_k"]
    assert list(post) == ["1", "2", "3", "4"]  # JSON object keys are strings
    assert sum(post.values()) == pytest.approx(1.0)
    assert all(0.0 <= p <= 1.0 for p in post.values())
    # every share is a count of the 2 x 150 kept draws
    assert all(p * 300 == pytest.approx(round(p * 300)) for p in post.values())
    assert result["prior_k"] == pytest.approx({k: 0.25 for k in post})
    modal = int(max(post, key=post.get))
    assert result["modal_k"] == modal == result["diagnostics"]["conditioned_on"]
    assert result["relabelling"]["conditioned_on"] == modal
    assert len(result["relabelling"]["class_weights"]) == modal
    assert sum(result["relabelling"]["class_weights"]) == pytest.approx(1.0)
    # two well-separated classes: the sampler puts most of its mass on K = 2
    assert post["2"] > 0.5 and post["1"] < 0.05


def test_acceptance_rates_are_accepted_over_proposed_moves(json_run):
    result = json.loads(json_run[1])
    proposed, rates = result["proposed"], result["acceptance"]
    assert set(proposed) == set(rates) == set(MOVES)
    # each sweep proposes one of split/merge and one of birth/death, in every chain
    assert proposed["split"] + proposed["merge"] == 2 * SWEEPS
    assert proposed["birth"] + proposed["death"] == 2 * SWEEPS
    for move in MOVES:
        rate = rates[move]
        assert (rate is None) == (proposed[move] == 0)
        if rate is not None:
            assert 0.0 <= rate <= 1.0
            assert rate * proposed[move] == pytest.approx(round(rate * proposed[move]))


def test_rhat_and_ess_summary_after_relabelling(json_run):
    result = json.loads(json_run[1])
    diag = result["diagnostics"]
    table = diag["summary"]
    modal = result["modal_k"]
    assert "k" in table and f"class_weights[{modal}]" in table  # classes numbered from 1
    assert "theta_a[1, yes]" in table and "class_weights[0]" not in table
    rhats = [row["r_hat"] for name, row in table.items() if row["r_hat"] is not None]
    assert diag["max_rhat"] == pytest.approx(max(rhats))
    assert diag["min_ess_bulk"] == pytest.approx(min(row["ess_bulk"] for row in table.values()
                                                     if row["ess_bulk"] is not None))
    assert set(diag["flagged"]) == {name for name, row in table.items()
                                    if row["r_hat"] is not None
                                    and row["r_hat"] > diag["rhat_threshold"]}
    assert result["k_diagnostics"] == pytest.approx(
        {c: table["k"][c] for c in ("r_hat", "ess_bulk", "ess_tail")})


def test_same_seed_same_output(capsys, two_class_csv, json_run):
    args = ("rjmcmc", str(two_class_csv), *SETTINGS, "--seed", "3", "--json")
    status, out, _ = _run(capsys, *args)
    assert status == 0
    first, second = json.loads(json_run[1]), json.loads(out)
    for result in (first, second):
        for key in ("seconds", "sampler_seconds"):
            result.pop(key)
        result["relabelling"].pop("seconds")
    assert first == second
    other = json.loads(_run(capsys, *args[:-3], "--seed", "4", "--json")[1])
    assert other["proposed"] != second["proposed"] or other["posterior_k"] != second[
        "posterior_k"]


def test_plain_output_and_reports(capsys, two_class_csv, tmp_path):
    report, md = tmp_path / "sub" / "rj.html", tmp_path / "rj.md"
    status, out, _ = _run(capsys, "rjmcmc", str(two_class_csv), *SETTINGS, "--columns",
                          "a,b,c,d", "--relabel-method", "ecr", "--report", str(report),
                          "--markdown", str(md))
    assert status == 0 and not out.lstrip().startswith("{")
    assert "Posterior of the number of classes K:" in out
    for move in MOVES:
        assert f"  {move} " in out
    assert "trace of k: R-hat" in out and "relabelled by ecr" in out
    assert "ess_bulk" in out and "r_hat" in out
    assert f"wrote {report}" in out and f"wrote {md}" in out
    # the HTML report is one self-contained file: figures embedded, nothing linked
    text = report.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert "Posterior of the number of classes" in text and "relabelled by ecr" in text
    assert text.count("data:image/png;base64,") >= 3
    assert "src=\"http" not in text and "<link" not in text
    assert "### Posterior of the number of classes" in md.read_text()


def test_k_mixing_verdict_is_in_the_json_with_the_numbers_of_k(json_run, two_class_csv):
    result = json.loads(json_run[1])
    mixing, k_diag = result["k_mixing"], result["k_diagnostics"]
    assert mixing["r_hat"] == pytest.approx(k_diag["r_hat"])
    assert mixing["ess_bulk"] == pytest.approx(k_diag["ess_bulk"])
    assert (mixing["split"], mixing["merge"]) == (result["acceptance"]["split"],
                                                  result["acceptance"]["merge"])
    assert mixing["mixed"] == (mixing["r_hat"] <= 1.05 and mixing["ess_bulk"] >= 100)
    assert (mixing["warning"] is None) == mixing["mixed"]
    if not mixing["mixed"]:  # 2 x 150 draws: the bulk ESS of k is far below 100
        assert mixing["suggested_draws"] >= 2 * 150
        assert f"--draws {mixing['suggested_draws']}" in mixing["warning"]
        assert f"lcbayes compare {two_class_csv} --n-classes 1-4" in mixing["warning"]


def _numbers(pattern: str, text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.search(pattern, text).groups())


def test_each_warning_is_printed_once_and_names_few_parameters(capsys, two_class_csv):
    status, out, err = _run(capsys, "rjmcmc", str(two_class_csv), *SETTINGS, "--seed", "5")
    assert status == 0
    (max_rhat,) = _numbers(r"max R-hat ([\d.]+)", out)
    rhat_k, ess_k = _numbers(r"trace of k: R-hat ([\d.]+), bulk ESS ([\d.]+)", out)
    rhat_lines = [line for line in err.splitlines() if "R-hat > 1.01 for" in line]
    assert len(rhat_lines) == (max_rhat > 1.01) and "R-hat > 1.01" not in out
    for line in rhat_lines:  # the worst three at most, then a count of the rest
        assert line.startswith("lcbayes: warning: ") and len(re.findall(r"\(\d\.\d{3}\)",
                                                                         line)) <= 3
        flagged = int(re.search(r"for (\d+) parameter", line).group(1))
        assert (f"and {flagged - 3} more" in line) == (flagged > 3)
    mixing_lines = [line for line in err.splitlines() if "did not mix" in line]
    assert len(mixing_lines) == (rhat_k > 1.05 or ess_k < 100) and "did not mix" not in out
    for line in mixing_lines:
        assert f"bulk ESS {ess_k:.0f}, R-hat {rhat_k:.3f}" in line and "split" in line
        assert "--draws " in line and "lcbayes compare " in line


def test_reports_show_the_data_settings_versions_and_classes_from_one(capsys, two_class_csv,
                                                                     tmp_path):
    report, md = tmp_path / "rj.html", tmp_path / "rj.md"
    status, _, _ = _run(capsys, "rjmcmc", str(two_class_csv), *SETTINGS, "--seed", "3",
                        "--report", str(report), "--markdown", str(md))
    assert status == 0
    text = report.read_text()
    for key, value in (("data", "two_classes.csv"), ("draws", "150"), ("warmup", "50"),
                       ("chains", "2"), ("thin", "1"), ("max_classes", "4"),
                       ("prior", "dirichlet"), ("seed", "3")):
        assert f"<tr><th>{key}</th><td>{value}</td></tr>" in text  # integers as integers
    assert "<h3>Versions</h3>" in text and "<tr><th>jax</th>" in text
    assert "class_weights[1]" in text and "class_weights[0]" not in text
    mixing = json.loads(_run(capsys, "rjmcmc", str(two_class_csv), *SETTINGS, "--seed", "3",
                             "--json")[1])["k_mixing"]
    assert (mixing["warning"] is None) == ("did not mix" not in text)
    markdown = md.read_text()
    assert "| data | two_classes.csv |" in markdown and "| max_classes | 4 |" in markdown
    assert "**Versions**: lcbayes = " in markdown


def test_report_of_a_modal_k_of_one_shows_every_k(capsys, noise_csv, tmp_path):
    """A single class's weight is 1 up to rounding; ArviZ's density of it failed with "Too
    many bins for data range" and the report with it."""
    report = tmp_path / "noise.html"
    status, out, err = _run(capsys, "rjmcmc", str(noise_csv), *SETTINGS, "--prior-k",
                            "poisson", "--seed", "0", "--report", str(report))
    assert status == 0, err
    assert "draws with K = 1:" in out  # the modal K is 1: the case of the report's failure
    assert re.findall(r"^ +(\d) +0\.\d{3} +[\d.]+", out, re.MULTILINE) == ["1", "2", "3", "4"]
    text = report.read_text()
    assert text.count("data:image/png;base64,") == 4
    assert all(f"<th>K = {k}</th>" in text for k in range(1, 5))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-classes", "1"], "max_classes"),
        (["--draws", "0"], "draws"),
        (["--chains", "0"], "chains"),
        (["--columns", "a,z"], "unknown column"),
        (["--prior", "-1"], "--prior"),
    ],
)
def test_bad_input_is_one_line_and_status_two(capsys, two_class_csv, argv, message):
    status, out, err = _run(capsys, "rjmcmc", str(two_class_csv), *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_report_path_that_is_a_folder_exits_two_before_sampling(capsys, two_class_csv,
                                                               tmp_path):
    status, out, err = _run(capsys, "rjmcmc", str(two_class_csv), "--report", str(tmp_path))
    assert status == 2 and out == "" and "is a folder" in err and err.count("\n") == 1


def test_missing_file_exits_two(capsys, tmp_path):
    status, out, err = _run(capsys, "rjmcmc", str(tmp_path / "absent.csv"))
    assert status == 2 and out == "" and "no such file" in err and err.count("\n") == 1


# ---------------------------------------------------------------------- the evidence route
#: The settings of every run of the evidence route: one seed, so the same K are compared and
#: the comparison compiles once, and a time budget spent at once, so that every K gets the
#: fewest SMC runs (two) whatever the machine's speed: the same table every time. Short bridge
#: sampling chains (the route passes engine options on as any other).
ROUTE_SEED = ("--seed", "3", "--time-limit", "0.01", "--engine-option", "smc.particles=32",
              "--engine-option", "bridge.draws=200", "--engine-option", "bridge.warmup=50")


@pytest.fixture(scope="module")
def route_json(two_class_csv):
    """One ``--json`` run with the default ``--evidence auto`` (module scope): the result."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(["rjmcmc", str(two_class_csv), *SAMPLER, *ROUTE_SEED, "--json"])
    assert status == 0, stderr.getvalue()
    return json.loads(stdout.getvalue())


def test_a_sampler_that_does_not_mix_runs_the_evidence_route(route_json):
    result = route_json
    assert result["k_mixing"]["reliable"] is False  # 2 x 150 draws: far too few to mix in K
    route = result["evidence"]
    assert route["reason"] == "the sampler's posterior of K is not reliable"
    assert route["methods"] == ["bic", "vbem", "smc"] and route["believe"] == "evidence"
    shares = {int(k): p for k, p in result["posterior_k"].items()}
    upper = upper_classes(shares, 4)
    assert route["n_classes"] == list(range(1, upper + 1))
    assert [row["K"] for row in route["rows"]] == route["n_classes"]
    posterior = [row["posterior"] for row in route["rows"]]
    assert sum(posterior) == pytest.approx(1.0)
    for row in route["rows"]:
        assert row["posterior_low"] <= row["posterior"] <= row["posterior_high"]
        assert row["sampler_posterior"] == pytest.approx(result["posterior_k"][str(row["K"])])
        assert np.isfinite(row["log_evidence"]) and row["evidence_method"] != "none"
    # two well-separated classes: the evidences put K = 1 far below K = 2
    assert posterior[0] < 1e-6 and posterior[1] > 0.2
    # the table is the comparison's, whose uniform prior of K is the sampler's here
    rows = route["comparison"]["rows"]
    assert [r["name"] for r in rows] == [f"LC({k})" for k in route["n_classes"]]
    assert [r["posterior_prob"] for r in rows] == pytest.approx(posterior)
    settings = route["comparison"]["metadata"]["settings"]
    assert settings["time_limit"] == 0.01  # passed on
    assert settings["engine_options"]["smc"] == {"particles": 32}
    assert settings["engine_options"]["bridge"] == {"draws": 200, "warmup": 50}
    assert "Believe the evidences, not the sampler" in route["verdict"]
    assert "believe the posterior of K from the evidences" in result["k_mixing"]["warning"]


def test_the_evidence_route_is_printed_beside_the_sampler_and_says_what_to_believe(
        capsys, two_class_csv, route_json):
    status, out, err = _run(capsys, "rjmcmc", str(two_class_csv), *SAMPLER, *ROUTE_SEED)
    assert status == 0
    upper = route_json["evidence"]["n_classes"][-1]
    assert f"Posterior of K from the evidences (K = 1..{upper}; bic, vbem, smc;" in out
    assert out.index("Posterior of the number of classes K:") < out.index("from the evidences")
    table = re.findall(r"^ +(\d) +-[\d.]+ +\S+ +(\w+) +([\d.]+) \[([\d.]+), ([\d.]+)\] +"
                       r"([\d.]+)", out, re.MULTILINE)
    assert [int(row[0]) for row in table] == list(range(1, upper + 1))
    for (_, method, p, low, high, sampler), row in zip(table, route_json["evidence"]["rows"],
                                                       strict=True):
        assert method == row["evidence_method"]
        assert float(p) == pytest.approx(row["posterior"], abs=6e-4)
        assert float(low) <= float(p) <= float(high)
        assert float(sampler) == pytest.approx(row["sampler_posterior"], abs=6e-4)
    verdict = " ".join(out[out.index("Believe the evidences"):].split())
    assert "did not mix between numbers of classes" in verdict
    assert "At 120 rows the evidence of each K, which needs no mixing, is the route that holds" \
        in verdict
    (line,) = [line for line in err.splitlines() if "did not mix" in line]
    assert f"believe the posterior of K from the evidences of K = 1..{upper}" in line
    assert "lcbayes compare " not in line  # it ran: nothing left to suggest


def test_evidence_no_prints_only_the_warning_as_before(capsys, two_class_csv):
    status, out, err = _run(capsys, "rjmcmc", str(two_class_csv), *SAMPLER, "--seed", "3",
                            "--evidence", "no")
    assert status == 0
    assert "from the evidences" not in out and "Believe" not in out
    (line,) = [line for line in err.splitlines() if "did not mix" in line]
    assert "--draws " in line and f"lcbayes compare {two_class_csv} --n-classes 1-4" in line


def test_evidence_yes_runs_the_route_and_says_it_was_asked_for(capsys, two_class_csv,
                                                               route_json):
    status, out, _ = _run(capsys, "rjmcmc", str(two_class_csv), *SAMPLER, *ROUTE_SEED,
                          "--evidence", "yes", "--json")
    assert status == 0
    route = json.loads(out)["evidence"]
    assert route["reason"] == "asked (--evidence yes)"
    assert route["rows"] == route_json["evidence"]["rows"]  # the same seed, the same table


def _verdict(reliable: bool, ceiling: float = 0.0) -> KMixingResult:
    """A mixing verdict: chains that mixed in K (``reliable``) or did not."""
    return KMixingResult(r_hat=1.0 if reliable else 1.3, ess_bulk=400.0 if reliable else 10.0,
                   split=0.1, merge=0.1, draws=1000, max_classes=6, ceiling_share=ceiling,
                   ceiling_rising=True)


@pytest.mark.parametrize(("mode", "verdict", "runs"), [
    ("auto", _verdict(reliable=True), False), ("auto", _verdict(reliable=False), True),
    ("auto", _verdict(reliable=True, ceiling=0.9), True),  # mixed, but piled at the bound
    ("yes", _verdict(reliable=True), True), ("yes", _verdict(reliable=False), True),
    ("no", _verdict(reliable=False), False), ("no", _verdict(reliable=True, ceiling=0.9), False),
])
def test_when_the_route_runs(mode, verdict, runs):
    assert wanted(mode, verdict) is runs


@pytest.mark.parametrize(("shares", "upper"), [
    ({1: 0.0, 2: 0.9, 3: 0.1, 4: 0.0}, 4),
    ({1: 0.0, 2: 1.0 - MIN_SHARE / 2, 3: MIN_SHARE / 2, 4: 0.0}, 3),  # a stray visit to 3
    ({1: 1.0, 2: 0.0, 3: 0.0, 4: 0.0}, 2),  # at least K = 1 and 2
    ({1: 0.0, 2: 0.0, 3: 0.1, 4: 0.9}, 4),  # piled at the bound: no more than max_classes
])
def test_the_route_compares_one_k_beyond_what_the_sampler_saw(shares, upper):
    assert upper_classes(shares, 4) == upper


def test_the_warning_points_to_the_evidences_when_they_were_computed():
    verdict = _verdict(reliable=False)
    assert "lcbayes compare d.csv --n-classes 1-6" in verdict.warning(data_name="d.csv")
    pointed = verdict.warning(data_name="d.csv", evidence_classes=5)
    assert "believe the posterior of K from the evidences of K = 1..5" in pointed
    assert f"rerun with --draws {verdict.suggested_draws}" in pointed
    assert "compare" not in pointed
    assert _verdict(reliable=True).warning(data_name="d.csv", evidence_classes=5) is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--time-limit", "0"], "--time-limit must be a positive number of seconds"),
        (["--time-limit", "nan"], "--time-limit must be a positive number of seconds"),
        (["--time-limit", "5", "--evidence", "no"], "--evidence no turns off"),
        (["--engine-option", "smc.particle=64"],
         "engine_options['smc'] has unknown options ['particle']"),
        (["--engine-option", "smc.particles=64", "--evidence", "no"],
         "--engine-option is for the evidence"),
    ],
)
def test_bad_route_options_are_one_line_and_status_two_before_sampling(capsys, two_class_csv,
                                                                       argv, message):
    status, out, err = _run(capsys, "rjmcmc", str(two_class_csv), *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["maybe", "YES", ""])
def test_bad_evidence_choice_exits_two_naming_the_choices(capsys, two_class_csv, value):
    with pytest.raises(SystemExit) as stop:
        main(["rjmcmc", str(two_class_csv), "--evidence", value])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --evidence: invalid choice: '{value}'" in err
    assert re.search(r"choose from '?auto'?, '?yes'?, '?no'?", err)  # quoted or not
