"""The files people have: compressed CSVs in every reading path, UTF-16/32 by their byte-order
mark, standard input, Excel workbooks; and the files that are not tables (binary noise, UTF-16
without a mark), duplicate column names and ragged rows refused with the line, not reshaped."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.errors import DataError

TEXT = "A,B,C\n1,x,yes\n2,y,no\n1,,yes\n2,x,no\n1,y,\n"


def _rows(data: lcb.Dataset) -> list:
    return sorted((tuple(p), int(c)) for p, c in zip(np.asarray(data.patterns).tolist(),
                                                      np.asarray(data.counts), strict=True))


def _same(data: lcb.Dataset, reference: lcb.Dataset) -> None:
    """The same columns, labels and rows (in any order: a scan keeps only the patterns)."""
    assert data.columns == reference.columns and data.labels == reference.labels
    assert _rows(data) == _rows(reference)


@pytest.fixture
def plain(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text(TEXT)
    return lcb.Dataset.from_csv(path)


def _zipped(raw: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("inner.csv", raw)
    return out.getvalue()


COMPRESSED = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress, "zip": _zipped}


@pytest.mark.parametrize("kind", sorted(COMPRESSED))
@pytest.mark.parametrize("suffix", ["", ".csv"])
def test_compressed_files_read_alike_whole_and_in_chunks(tmp_path, plain, kind, suffix):
    # recognised by their first bytes: a gzipped file named .csv too (it was read as Latin-1)
    path = tmp_path / f"data{suffix or '.csv.' + kind}"
    path.write_bytes(COMPRESSED[kind](TEXT.encode()))
    _same(lcb.Dataset.from_csv(path), plain)
    _same(lcb.scan_file(path, chunk_rows=2).to_dataset(), plain)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_byte_order_mark_names_the_encoding(tmp_path, plain, encoding, recwarn):
    path = tmp_path / "bom.csv"
    raw = TEXT.encode(encoding)
    if encoding == "utf-16-be":
        raw = b"\xfe\xff" + raw
    path.write_bytes(raw)
    _same(lcb.Dataset.from_csv(path), plain)
    _same(lcb.scan_file(path, chunk_rows=2).to_dataset(), plain)
    assert not [w for w in recwarn if "not UTF-8" in str(w.message)]


@pytest.mark.parametrize("raw", [TEXT.encode("utf-16-le"),            # no byte-order mark
                                 gzip.compress(TEXT.encode(), mtime=0)[::-1],  # binary noise
                                 b"A,B\n1,\x002\n"])
def test_what_decodes_to_control_characters_is_refused(tmp_path, raw):
    path = tmp_path / "bad.csv"
    path.write_bytes(raw)
    for read in (lcb.Dataset.from_csv, lambda p: lcb.scan_file(p, chunk_rows=2)):
        with pytest.raises(DataError, match=r"control character .* on line"):
            read(path)


def test_duplicate_column_names_are_refused_not_renamed(tmp_path):
    path = tmp_path / "dupes.csv"
    path.write_text("A,B,A\n1,2,3\n2,1,3\n")
    for read in (lcb.Dataset.from_csv, lambda p: lcb.scan_file(p, chunk_rows=1)):
        with pytest.raises(DataError, match=r"duplicate column names \['A'\]"):
            read(path)


def test_ragged_rows_are_refused_with_their_lines_unless_allowed(tmp_path, plain):
    path = tmp_path / "ragged.csv"
    path.write_text("A,B,C\n1,x,yes\n2,y\n1,,yes\n2\n")
    for read in (lcb.Dataset.from_csv, lambda p, **kw: lcb.scan_file(p, chunk_rows=1, **kw)):
        with pytest.raises(DataError, match=r"2 rows do not have the header's 3 fields "
                                            r"\(lines 3, 5\).*--allow-ragged"):
            read(path)
    data = lcb.Dataset.from_csv(path, allow_ragged=True)
    assert data.n_missing == {"A": 0, "B": 2, "C": 2}
    _same(lcb.scan_file(path, chunk_rows=1, allow_ragged=True).to_dataset(), data)
    path.write_text("A,B\n1,2\n1,2,3\n")       # a long row has no column to go to
    with pytest.raises(DataError, match=r"\(lines 3\): fix those rows$"):
        lcb.Dataset.from_csv(path, allow_ragged=True)


def test_a_quoted_field_with_a_line_break_is_one_row(tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('A,B\n1,"x, and\nmore"\n2,y\n')
    data = lcb.Dataset.from_csv(path)
    assert data.n_rows == 2 and data.labels[1] == ("x, and\nmore", "y")


def test_standard_input_is_read_with_a_dash(plain):
    out = subprocess.run([sys.executable, "-m", "lcbayes", "fit", "-", "--n-classes", "1",
                          "--json"], input=gzip.compress(TEXT.encode()),
                         capture_output=True, check=False)
    assert out.returncode == 0, out.stderr.decode()
    assert b'"n_rows": 5' in out.stdout


def test_an_excel_workbook_is_read_with_openpyxl(tmp_path, plain):
    path = tmp_path / "sheet.xlsx"
    pd.read_csv(io.StringIO(TEXT)).to_excel(path, index=False)
    data = lcb.Dataset.from_csv(path)
    assert data.columns == plain.columns and data.n_missing == plain.n_missing
    assert data.labels[1:] == plain.labels[1:]
    (tmp_path / "renamed.csv").write_bytes(path.read_bytes())
    with pytest.raises(DataError, match=r"is an Excel workbook: give it a name ending \.xlsx"):
        lcb.Dataset.from_csv(tmp_path / "renamed.csv")
    with pytest.raises(DataError, match="read it whole"):
        lcb.scan_file(path)


def test_without_openpyxl_an_excel_workbook_gets_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "sheet.xlsx"
    path.write_bytes(b"not opened")
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    assert main(["fit", str(path), "--n-classes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs openpyxl: pip install openpyxl" in err[0]


def test_data_with_no_observed_value_are_refused_by_every_engine():
    blank = lcb.Dataset.from_codes(np.array([[0, 0, 0], [1, 1, 1]]))
    structure = lcb.latent_class(blank, 2)
    frame = pd.DataFrame({c: [np.nan] * 10 for c in blank.columns})
    engines = (lcb.em, lcb.vbem, lcb.exact_evidence, lcb.ais, lcb.smc, lcb.chib, lcb.laplace)
    for engine in engines:       # em returned log-likelihood 0
        with pytest.raises(DataError, match="every value of data is missing"):
            engine(structure, frame)


def test_a_structure_file_that_leaves_columns_out_says_which(tmp_path, capsys):
    path = tmp_path / "data.csv"
    path.write_text(TEXT)
    spec = tmp_path / "tree.json"
    spec.write_text('{"kind": "hlc", "tree": {"H": ["A", "B"]}, "cardinalities": {"H": 2}}')
    assert main(["fit", str(path), "--structure", str(spec)]) == 0
    err = capsys.readouterr().err
    assert "observes 2 of the data's 3 columns; left out: C" in err


def test_an_excel_workbook_with_duplicate_names_is_refused(tmp_path):
    path = tmp_path / "dupes.xlsx"
    pd.DataFrame([[1, 2, 1], [2, 1, 2]], columns=["A", "B", "A.1"]).to_excel(path, index=False)
    assert lcb.Dataset.from_csv(path).columns == ("A", "B", "A.1")   # a real name "A.1"
    frame = pd.DataFrame([[1, 2], [2, 1]])
    frame.columns = ["A", "A"]
    frame.to_excel(path, index=False)
    with pytest.raises(DataError, match=r"duplicate column names \['A'\]"):
        lcb.Dataset.from_csv(path)
