"""benchmarks/bench_evidence.py: the quick path on a tiny configuration runs every part, saves
each as JSON and writes the report with its sections and targets; the report rebuilt from the
saved parts alone is the same."""

from __future__ import annotations

import dataclasses
import json

import bench_evidence as bench
import pytest

from .conftest import data_csv

#: Two binary items and 60 rows: every data set has the same 4 patterns, so the LC(2) programs
#: of the coverage, simulated and timing parts (and the reference runs) compile once.
TINY = dataclasses.replace(
    bench.QUICK, particles=8, runs=2, exact_sizes=(60,), exact_seeds=1, coverage_seeds=2,
    coverage_items=2, coverage_rows=60, sim_items=2, sim_rows=60, classes=(1, 2),
    vb_restarts=1, ref_classes=(2,), ref_particles=8, ref_runs=2, election_rows=60,
    timing_data=((60, 2),))


@pytest.mark.slow  # the whole quick benchmark (every part compiles its programs): 1-1.5 min
def test_quick_path_writes_every_section_from_saved_parts(tmp_path):
    results, out = tmp_path / "results", tmp_path / "report.md"
    bench.run(TINY, bench.PARTS, seed=0, data_dir=data_csv("election.csv").parent,
              results=results, out=out)
    for name in bench.PARTS:
        saved = json.loads((results / f"{name}.json").read_text())
        assert saved["mode"] == "quick" and saved["settings"]["particles"] == 8
    exact = json.loads((results / "exact.json").read_text())["cases"][0]
    assert abs(exact["result"]["smc_log_evidence"] - exact["exact"]) < 1e-6  # exact at K = 1
    text = out.read_text()
    for title, _ in bench.SECTIONS.values():
        assert f"## {title}" in text
    assert "## Targets" in text and "## Versions" in text and "**Quick mode**" in text
    assert "**Machine**" in text and "Not run yet" not in text
    rebuilt = tmp_path / "again.md"
    bench.main(["--report-only", "--results", str(results), "--out", str(rebuilt)])
    assert rebuilt.read_text() == text


def test_report_names_the_parts_not_run(tmp_path):
    bench.main(["--report-only", "--results", str(tmp_path), "--out", str(tmp_path / "r.md")])
    text = (tmp_path / "r.md").read_text()
    assert text.count("Not run yet") == len(bench.PARTS)
    assert "--parts timing" in text
