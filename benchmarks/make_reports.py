"""Regenerate everything in ``reports/`` with one command.

Usage::

    python benchmarks/make_reports.py                  # demo + the Beal & Ghahramani study
    python benchmarks/make_reports.py --quick          # the demo only (skips the long study)
    python benchmarks/make_reports.py --quick --out /tmp/a
    python benchmarks/make_reports.py --quick --out /tmp/b --compare-with /tmp/a

The parts, each run as its own process with the same ``--seed`` (default 0):

* ``demo``: ``lcbayes demo --out OUT --seed SEED`` (:mod:`lcbayes.cli.demo`) writes
  ``demo.html``, ``demo.md`` and the ``demo-*.png`` figures;
* ``beal``: ``python benchmarks/beal_136.py --out OUT --seed SEED`` writes
  ``beal-ghahramani-table2.md``, ``-fig2.png`` and ``-scores.csv`` (the long one: all 136
  structures at 20 data sizes; ``--quick`` skips it);
* ``learn``: ``python benchmarks/learn.py --out OUT --seed SEED`` writes
  ``karciauskas-learning.md`` (SplitMerge, Standard3 and StandardFixed beside Karčiauskas
  2005, Tables 6.1-6.3 and 6.13, and their speed; minutes, ``--quick`` skips it);
* ``whiley-estimation``: ``python benchmarks/whiley_estimation.py --out OUT --seed SEED``
  writes ``whiley-estimation.md`` (Whiley 1999 §2.8-2.9: every estimation algorithm against
  EM, beside his Tables 2.1-2.4; minutes, ``--quick`` skips it; its "Wall time" line is
  masked).
* ``model-checks``: ``python benchmarks/bench_checks.py --out OUT --seed SEED`` writes
  ``model-checks.md`` (PSIS-LOO against exact leave-one-out, the checks' answers on carcinoma,
  the speed of ``lcbayes check`` and of ``compare --methods bic,loo``; minutes, ``--quick``
  skips it; its "Speed" section and refit times are masked).
* ``whiley-model-choice``: ``python benchmarks/whiley_model_choice.py --out OUT --seed SEED``
  writes ``whiley-model-choice.md`` (Whiley 1999 §4.8 and §4.10: how often each model-choice
  score picks the true structure, beside his Tables 4.2-4.4, and the ICU data; about half an
  hour on two shared cores, ``--quick`` skips it; its "Wall time" line and "Run log" section
  are masked).

The same seed in the same environment gives the same bytes, apart from the timings the reports
state (:data:`TIMINGS`): the demo's "Seconds" block (``demo.md``: the line ``**Seconds**: ...``;
``demo.html``: the table under ``<h3>Seconds</h3>``, both written by the comparison report's
Run section) and, in ``beal-ghahramani-table2.md``, the ``EM s`` / ``VB s`` columns of the
"Per size" table and the "Timing" section; in ``karciauskas-learning.md`` the "Wall time"
line, every time column, every StandardFixed line and the columns comparing it with SplitMerge
(``Fixed - SM``, ``Fixed vs SM``: its search is cut by a time limit, so its result depends on
the machine's speed) and the "Speed" section. The demo report and the
learning report also state the versions of Python and the libraries and the platform string,
kernel build included (their "Versions" block), so another machine or environment gives other
bytes there, and other library versions may give other numbers and PNG bytes.
``--compare-with DIR`` checks the files just written against those of ``DIR`` with the timings
masked, prints what differs and exits with status 1 if anything does.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The parts: name -> (command after the Python interpreter, the files it writes as globs).
PARTS = {
    "demo": (["-m", "lcbayes.cli", "demo"], ("demo.html", "demo.md", "demo-*.png")),
    "beal": ([str(REPO / "benchmarks" / "beal_136.py")], ("beal-ghahramani-*",)),
    "learn": ([str(REPO / "benchmarks" / "learn.py")], ("karciauskas-learning.md",)),
    "whiley-estimation": ([str(REPO / "benchmarks" / "whiley_estimation.py")],
                          ("whiley-estimation.md",)),
    "whiley-model-choice": ([str(REPO / "benchmarks" / "whiley_model_choice.py")],
                            ("whiley-model-choice.md",)),
    "whiley-prior-sensitivity": ([str(REPO / "benchmarks" / "whiley_prior_sensitivity.py")],
                                 ("whiley-prior-sensitivity.md",
                                  "whiley-prior-sensitivity-fig.png")),
    "model-checks": ([str(REPO / "benchmarks" / "bench_checks.py")], ("model-checks.md",)),
}
#: The parts ``--quick`` leaves out (minutes each).
LONG_PARTS = ("beal", "learn", "whiley-estimation", "whiley-model-choice",
              "whiley-prior-sensitivity", "model-checks")
#: Timings in the reports, per file: (pattern, replacement) applied before comparing.
TIMINGS = {
    "whiley-prior-sensitivity.md": ((re.compile(r"^\*\*Wall time\*\*:.*$", re.M),
                                     "**Wall time**: (masked)"),),
    "whiley-estimation.md": ((re.compile(r"^\*\*Wall time\*\*:.*$", re.M),
                              "**Wall time**: (masked)"),),
    "whiley-model-choice.md": (
        (re.compile(r"^\*\*Wall time\*\*:.*$", re.M), "**Wall time**: (masked)"),
        (re.compile(r"^## Run log\n.*", re.S | re.M), "## Run log\n(masked)\n"),
    ),
    "demo.md": ((re.compile(r"^\*\*Seconds\*\*:.*$", re.M), "**Seconds**: (masked)"),),
    "model-checks.md": ((re.compile(r"^## Speed.*", re.S | re.M), "## Speed\n(masked)\n"),),
    "demo.html": ((re.compile(r"<h3>Seconds</h3><table>.*?</table>", re.S),
                   "<h3>Seconds</h3>(masked)"),),
    "beal-ghahramani-table2.md": ((re.compile(r"^## Timing\n.*?(?=^Figure:)", re.S | re.M),
                                   "## Timing\n(masked)\n\n"),),
    "karciauskas-learning.md": (
        (re.compile(r"^\*\*Wall time\*\*:.*$", re.M), "**Wall time**: (masked)"),
        (re.compile(r"^## 3\. Speed\n.*?(?=^## )", re.S | re.M), "## 3. Speed\n(masked)\n\n"),
        (re.compile(r"^\|.*StandardFixed.*$", re.M), "| (a StandardFixed row, masked) |"),
        (re.compile(r"^[^|\n].*StandardFixed.*$", re.M), "(a StandardFixed line, masked)"),
    ),
}
#: Table columns holding seconds or results of time-limited searches, per file (masked in
#: every row of a table that has them).
TIMING_COLUMNS = {"beal-ghahramani-table2.md": ("EM s", "VB s"),
                  "model-checks.md": ("refits (s)",),
                  "karciauskas-learning.md": ("t (s)", "first t (s)", "Fixed - SM",
                                              "Fixed vs SM")}


def commands(out: Path, seed: int, quick: bool) -> dict[str, list[str]]:
    """The command line of each part to run, in order."""
    return {name: [sys.executable, *args, "--out", str(out), "--seed", str(seed)]
            for name, (args, _) in PARTS.items() if not (quick and name in LONG_PARTS)}


def mask_columns(text: str, columns: tuple[str, ...]) -> str:
    """``text`` with the cells of the named columns of every Markdown table replaced by ``-``."""
    lines = text.split("\n")
    masked: set[int] = set()
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            masked = set()
            continue
        cells = line.split("|")
        names = [c.strip() for c in cells]
        if any(c in names for c in columns):  # a header row
            masked = {j for j, name in enumerate(names) if name in columns}
        elif masked and not set(line) <= set("|-: "):
            lines[i] = "|".join(" - " if j in masked else c for j, c in enumerate(cells))
    return "\n".join(lines)


def without_timings(name: str, content: bytes) -> bytes:
    """The bytes of report file ``name`` with its timings (:data:`TIMINGS`) masked."""
    if name not in TIMINGS and name not in TIMING_COLUMNS:
        return content
    text = content.decode("utf-8")
    for pattern, replacement in TIMINGS.get(name, ()):
        text = pattern.sub(replacement, text)
    return mask_columns(text, TIMING_COLUMNS.get(name, ())).encode("utf-8")


def report_files(folder: Path, part: str) -> list[str]:
    """The names of the files of ``part`` (:data:`PARTS`) in ``folder``."""
    return sorted({p.name for pattern in PARTS[part][1] for p in folder.glob(pattern)})


def differences(written: Path, reference: Path, names: list[str]) -> list[str]:
    """The files among ``names`` whose bytes in ``written`` and ``reference`` differ once the
    timings are masked, each with the first differing line of a text file."""
    found = []
    for name in names:
        ours, theirs = written / name, reference / name
        if not theirs.is_file():
            found.append(f"{name}: absent from {reference}")
            continue
        a = without_timings(name, ours.read_bytes())
        b = without_timings(name, theirs.read_bytes())
        if a == b:
            continue
        if name.endswith((".md", ".html", ".csv")):
            pairs = zip(a.decode().split("\n"), b.decode().split("\n"), strict=False)
            line = next((j for j, (x, y) in enumerate(pairs, 1) if x != y), None)
            found.append(f"{name}: differs from line {line}" if line else
                         f"{name}: one file is longer")
        else:
            found.append(f"{name}: the bytes differ ({len(a)} vs {len(b)} bytes)")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "reports",
                        help="folder to write the reports to (default reports/)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every part (default 0)")
    parser.add_argument("--quick", action="store_true",
                        help=f"leave out the long parts ({', '.join(LONG_PARTS)})")
    parser.add_argument("--compare-with", type=Path, default=None, metavar="DIR",
                        help="compare the files written with DIR's, timings masked; exit 1 "
                             "if any differ")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for name, command in commands(args.out, args.seed, args.quick).items():
        print(f"[{name}] {' '.join(command)}", flush=True)
        start = time.time()
        subprocess.run(command, check=True, cwd=REPO)
        print(f"[{name}] done in {time.time() - start:.1f} s", flush=True)
        new = [n for n in report_files(args.out, name) if (args.out / n).stat().st_mtime >= start]
        if not new:
            print(f"[{name}] wrote no file to {args.out}", file=sys.stderr)
            return 1
        written += new
    if args.compare_with is None:
        return 0
    parts = [name for name in PARTS if not (args.quick and name in LONG_PARTS)]
    extra = {n for part in parts for n in report_files(args.compare_with, part)} - set(written)
    differing = differences(args.out, args.compare_with, written)
    for line in [*differing, *(f"{name}: in {args.compare_with} only" for name in sorted(extra))]:
        print(line)
    print(f"{len(written) - len(differing)} of {len(written)} files written are identical to "
          f"{args.compare_with}'s apart from timings")
    return 1 if differing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
