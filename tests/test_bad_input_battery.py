"""The bad-input battery of a new user's first hour: every file and option either reads
correctly (exit 0) or gives one line and exit 2 (``lcbayes: error: ...``), never a traceback."""

from __future__ import annotations

import gzip

import pytest

from lcbayes.cli import main

GOOD = "A,B,C\n1,x,yes\n2,y,no\n1,x,yes\n2,y,no\n1,y,yes\n2,x,no\n"


def _write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


FILES = {   # name: (file name, content, reads?)
    "empty": ("e.csv", "", False),
    "header only": ("h.csv", "A,B,C\n", False),
    "one column": ("one.csv", "A\n1\n2\n1\n2\n", True),
    "all missing": ("m.csv", "A,B\n,\n,\n", False),
    "constant column": ("c.csv", GOOD.replace("yes", "no"), True),
    "500 levels": ("l.csv", "A,B\n" + "".join(f"{i},{i % 2}\n" for i in range(500)), False),
    "continuous": ("f.csv", "A,B\n" + "".join(f"{i / 7:.5f},{i % 2}\n" for i in range(80)),
                   False),
    "UTF-8 BOM": ("bom.csv", "\ufeff" + GOOD, True),
    "UTF-16": ("u16.csv", GOOD.encode("utf-16"), True),
    "UTF-16 without BOM": ("u16le.csv", GOOD.encode("utf-16-le"), False),
    "CRLF": ("crlf.csv", GOOD.replace("\n", "\r\n").encode(), True),
    "quoted commas": ("q.csv", 'A,B\n"x, y",1\n"z",2\n"x, y",2\n"z",1\n', True),
    "duplicate names": ("d.csv", "A,A\n1,2\n2,1\n", False),
    "gzip": ("g.csv.gz", gzip.compress(GOOD.encode()), True),
    "gzip named .csv": ("g.csv", gzip.compress(GOOD.encode()), True),
    "TSV": ("t.tsv", GOOD.replace(",", "\t"), True),
    "semicolons": ("s.csv", GOOD.replace(",", ";"), True),
    "ragged rows": ("r.csv", "A,B,C\n1,x,yes\n2,y\n", False),
    "binary noise": ("b.csv", bytes(range(256)) * 4, False),
}


@pytest.mark.parametrize("case", sorted(FILES))
def test_a_file_reads_or_gives_one_line_and_exit_2(tmp_path, capsys, case):
    name, content, reads = FILES[case]
    path = _write(tmp_path, name, content)
    status = main(["fit", path, "--n-classes", "1"])
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("lcbayes: error:")]
    assert "Traceback" not in err
    if reads:
        assert status == 0 and not errors, err
    else:
        assert status == 2 and len(errors) == 1 and out == "", (status, err)


ARGS = {   # name: (arguments after the good file, or a replacement path)
    "classes 0": ["--n-classes", "0"],
    "classes text": ["--n-classes", "two"],
    "restarts negative": ["--n-classes", "2", "--restarts", "-1"],
    "seed negative": ["--n-classes", "2", "--seed", "-5"],
    "unknown column": ["--n-classes", "2", "--columns", "A,Z"],
    "structure missing file": ["--structure", "no-such.json"],
    "structure bad kind": ["--structure", "STRUCTURE"],
    "compare unwritable report": None,
    "a folder": None,
    "a missing file": None,
}


@pytest.mark.parametrize("case", sorted(ARGS))
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, capsys, case):
    good = _write(tmp_path, "good.csv", GOOD)
    structure = _write(tmp_path, "s.json", '{"kind": "tree"}')
    argv = {"compare unwritable report": ["compare", good, "--n-classes", "1-2", "--report",
                                          str(tmp_path / "good.csv" / "r.html")],
            "a folder": ["fit", str(tmp_path), "--n-classes", "1"],
            "a missing file": ["fit", str(tmp_path / "none.csv"), "--n-classes", "1"],
            }.get(case) or ["fit", good, *[structure if a == "STRUCTURE" else a
                                          for a in ARGS[case]]]
    try:
        status = main(argv)
    except SystemExit as exc:          # argparse's own usage errors
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err, err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1, err
