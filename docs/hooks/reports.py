"""mkdocs hook: the measurement reports that ``benchmarks/`` writes to ``reports/`` (Markdown and
their figures) become site pages under ``reports/``, so that the guide links its measurements
instead of quoting them; ``docs/measurements.md`` lists them."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

REPORTS = Path(__file__).resolve().parents[2] / "reports"
#: The report files the site takes (the HTML demo report and data files stay out).
SUFFIXES = (".md", ".png")


def on_files(files: Files, config) -> Files:
    for path in sorted(REPORTS.iterdir()):
        if path.suffix in SUFFIXES:
            files.append(File.generated(config, f"reports/{path.name}", abs_src_path=str(path)))
    return files
