"""benchmarks/bench_evidence.py: a part saves its JSON and the report is built from the saved
parts alone, with its targets; parts not run are named with the command that runs them."""

from __future__ import annotations

import json

import bench_evidence as bench


def test_exact_part_is_saved_and_reported(tmp_path):
    """The quick ``exact`` part (LC(1) on 1000 rows, where the engine is exact) in this
    process: its JSON, its section and its target; the report is the same when rebuilt."""
    bench.run_part("exact", quick=True, seed=0, results=tmp_path)
    saved = json.loads((tmp_path / "exact.json").read_text())
    assert saved["quick"] and saved["peak_mb"] > 0
    case = saved["cases"][0]
    assert case["rows"] == 1000 and abs(case["smc"][0] - case["exact"]) < 1e-6
    out = tmp_path / "report.md"
    text = bench.report(tmp_path, out)
    assert "## One class: exact" in text and "| LC(1) exact at 10^3-10^5 rows |" in text
    assert "Not run yet: coverage, carcinoma" in text
    bench.main(["--report-only", "--results", str(tmp_path), "--out", str(tmp_path / "b.md")])
    assert (tmp_path / "b.md").read_text() == text


def test_report_names_the_parts_not_run(tmp_path):
    bench.main(["--report-only", "--results", str(tmp_path), "--out", str(tmp_path / "r.md")])
    text = (tmp_path / "r.md").read_text()
    assert f"Not run yet: {', '.join(bench.PARTS)}" in text
    assert "--parts coverage" in text
