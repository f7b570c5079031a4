"""benchmarks/make_reports.py: timings are masked before reports are compared, nothing else."""

from __future__ import annotations

from pathlib import Path

import make_reports

TABLE = """\
| n | EM s | VB s | top |
|---|---|---|---|
| 10 | 1.25 | 3.50 | A |
| 20 | 2.00 | 4.75 | B |

after the table | 9.99 |
"""


def test_mask_columns_blanks_the_named_columns_of_every_row_only():
    masked = make_reports.mask_columns(TABLE, ("EM s", "VB s")).split("\n")
    assert masked[0] == TABLE.split("\n")[0] and masked[1] == TABLE.split("\n")[1]
    assert masked[2] == "| 10 | - | - | A |" and masked[3] == "| 20 | - | - | B |"
    assert masked[5] == "after the table | 9.99 |"  # not in a table: kept


def test_without_timings_hides_seconds_and_keeps_results():
    one = b"# Demo\n**Seconds**: em = 1.5; total = 3.0\nchosen: LC(3)\n"
    two = b"# Demo\n**Seconds**: em = 9.1; total = 12.0\nchosen: LC(3)\n"
    other = b"# Demo\n**Seconds**: em = 1.5; total = 3.0\nchosen: LC(4)\n"
    mask = make_reports.without_timings
    assert mask("demo.md", one) == mask("demo.md", two)
    assert mask("demo.md", one) != mask("demo.md", other)
    assert mask("unknown.md", one) == one


def test_differences_names_the_file_and_the_first_differing_line(tmp_path: Path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    (ours / "demo.md").write_text("a\n**Seconds**: 1\nb\n")
    (theirs / "demo.md").write_text("a\n**Seconds**: 2\nb\n")
    (ours / "demo-x.png").write_bytes(b"\x89PNG1")
    (theirs / "demo-x.png").write_bytes(b"\x89PNG2")
    names = ["demo.md", "demo-x.png", "demo.html"]
    found = make_reports.differences(ours, theirs, names)
    assert found == ["demo-x.png: the bytes differ (5 vs 5 bytes)",
                     f"demo.html: absent from {theirs}"]
    (theirs / "demo.md").write_text("a\n**Seconds**: 2\nc\n")
    assert make_reports.differences(ours, theirs, ["demo.md"]) == ["demo.md: differs from line 3"]
