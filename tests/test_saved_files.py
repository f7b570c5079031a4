"""Files as people save them and arguments as people mistype them (issue 45's battery): a
workbook of several sheets, a wrong delimiter, survey missing-value codes, a trailing delimiter
on every line; output that cannot be written, a cache folder that cannot be written,
impossible and misspelt options. Each is read correctly or refused in one line with exit 2."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes import cache, missing_codes
from lcbayes.cli import _collapsed, main
from lcbayes.errors import DataError

ROWS = 120


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.integers(1, 3, ROWS) for c in "ABCD"})


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exc:       # argparse's usage errors
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def _one_error(status: int, err: str) -> str:
    errors = [line for line in err.splitlines() if "error:" in line]
    assert status == 2 and len(errors) == 1 and "Traceback" not in err, (status, err)
    assert "usage:" not in err, err
    return errors[0]


# ------------------------------------------------------------------ 1: workbooks
@pytest.fixture
def workbook(tmp_path):
    pytest.importorskip("openpyxl")
    path = tmp_path / "two.xlsx"
    with pd.ExcelWriter(path) as book:
        pd.DataFrame({"notes": ["made 2026", "by hand", "see sheet 2"]}).to_excel(
            book, sheet_name="notes", index=False)
        _frame().to_excel(book, sheet_name="data", index=False)
    return path


def test_a_workbook_with_data_on_two_sheets_is_refused_naming_them(workbook):
    with pytest.raises(DataError, match=r"2 sheets with data \('notes', 'data'\).*--sheet"):
        lcb.Dataset.from_csv(workbook)


def test_the_sheet_is_chosen_by_name_or_number(workbook):
    by_name = lcb.Dataset.from_csv(workbook, sheet="data")
    assert by_name.columns == tuple("ABCD") and by_name.n_rows == ROWS
    assert lcb.Dataset.from_csv(workbook, sheet=1).columns == tuple("ABCD")
    with pytest.raises(DataError, match="no sheet 'dat'; its sheets are 'notes', 'data'"):
        lcb.Dataset.from_csv(workbook, sheet="dat")
    with pytest.raises(DataError, match=r"sheet 5 is not one of 0\.\.1"):
        lcb.Dataset.from_csv(workbook, sheet=5)


def test_the_sheet_on_the_command_line(workbook, capsys):
    status, _, err = _run(capsys, ["fit", str(workbook), "--n-classes", "1"])
    assert "--sheet" in _one_error(status, err)
    status, out, err = _run(capsys, ["fit", str(workbook), "--n-classes", "1", "--sheet",
                                     "data"])
    assert status == 0 and "4 items" in out, err


def test_a_workbook_with_one_filled_sheet_reads_it(tmp_path):
    pytest.importorskip("openpyxl")
    path = tmp_path / "one.xlsx"
    with pd.ExcelWriter(path) as book:
        pd.DataFrame().to_excel(book, sheet_name="empty", index=False)
        _frame().to_excel(book, sheet_name="data", index=False)
    assert lcb.Dataset.from_csv(path).columns == tuple("ABCD")


def test_a_sheet_of_a_csv_file_is_refused(tmp_path):
    path = tmp_path / "a.csv"
    _frame().to_csv(path, index=False)
    with pytest.raises(DataError, match=r"sheet= .* Excel workbook"):
        lcb.Dataset.from_csv(path, sheet="data")


# ------------------------------------------------------------------ 2, 4: delimiters
def test_a_wrong_delimiter_is_refused_naming_the_right_one(tmp_path, capsys):
    path = tmp_path / "comma.csv"
    _frame().to_csv(path, index=False)
    with pytest.raises(DataError, match=r"one column.*',' splits its header and rows into 4"):
        lcb.Dataset.from_csv(path, sep=";")
    with pytest.raises(DataError, match="one column"):
        lcb.scan_file(path, sep=";")
    status, _, err = _run(capsys, ["fit", str(path), "--n-classes", "1", "--sep", ";"])
    assert "--sep ','" in _one_error(status, err)


@pytest.mark.parametrize("sep", ["xx", ";;", '"', ""])
def test_a_delimiter_that_is_not_one_character_is_one_line(tmp_path, capsys, sep):
    path = tmp_path / "comma.csv"
    _frame().to_csv(path, index=False)
    status, _, err = _run(capsys, ["fit", str(path), "--n-classes", "1", f"--sep={sep}"])
    assert "one character" in _one_error(status, err)


@pytest.mark.parametrize("sep", ["tab", "\\t", "\t"])
def test_a_tab_is_given_by_name(tmp_path, sep):
    path = tmp_path / "tabs.tsv"
    _frame().to_csv(path, index=False, sep="\t")
    assert lcb.Dataset.from_csv(path, sep=sep).columns == tuple("ABCD")


# ------------------------------------------------------------------ 3: missing-value codes
@pytest.fixture
def coded(tmp_path):
    frame = _frame().astype(object)
    frame.loc[:4, "A"] = -99
    frame.loc[:2, "C"] = "."
    path = tmp_path / "coded.csv"
    frame.to_csv(path, index=False)
    return frame, path


@pytest.mark.parametrize("reader", ["csv", "scan"])
def test_a_rare_code_like_level_is_warned_about_naming_its_column(coded, reader):
    _, path = coded
    with pytest.warns(UserWarning, match=r"column 'A' level '-99' \(5 of 120 rows\); column "
                                         r"'C' level '\.' \(3 of 120 rows\).*na_values"):
        data = (lcb.Dataset.from_csv(path) if reader == "csv"
                else lcb.scan_file(path, chunk_rows=50).to_dataset())
    assert -99 in data.labels[0] and "." in data.labels[2]   # read as categories, as told


@pytest.mark.parametrize("reader", ["csv", "pandas", "scan", "cli"])
def test_declared_codes_are_missing_on_every_reader(coded, reader, capsys):
    frame, path = coded
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # nothing left that looks like a code
        if reader == "csv":
            data = lcb.Dataset.from_csv(path, na_values=[-99, "."])
        elif reader == "pandas":
            data = lcb.Dataset.from_pandas(frame, na_values="-99,.")
        elif reader == "scan":
            data = lcb.scan_file(path, na_values=["-99", "."], chunk_rows=50).to_dataset()
        else:
            status, _, err = _run(capsys, ["fit", str(path), "--n-classes", "1",
                                           "--na-values=-99,."])
            assert status == 0 and "code" not in err, err
            return
    assert data.n_missing == {"A": 5, "B": 0, "C": 3, "D": 0}
    assert data.labels[0] == (1, 2) and data.labels[2] in ((1, 2), ("1", "2"))


def test_codes_in_a_workbook(tmp_path):
    pytest.importorskip("openpyxl")
    frame = _frame().astype(object)
    frame.loc[:3, "B"] = "N/A "
    path = tmp_path / "codes.xlsx"
    frame.to_excel(path, index=False)
    assert lcb.Dataset.from_csv(path, na_values=["N/A"]).n_missing["B"] == 4


@pytest.mark.parametrize("label, others, expected", [
    (-99, [1, 2, 3], True), (-9, [0, 1], True), ("-888", ["1", "2"], True),
    (999, [1, 2, 3], True), (99, [1, 2, 5], True), (".", ["a", "b"], True),
    ("N/A", ["yes", "no"], True), (" ? ", ["yes"], True),
    (-1, [1, 2], False), (-99, [-1, 1], False), (99, [50, 60], False), (9, [1, 2], False),
    (3, [1, 2], False), ("no", ["yes"], False), (1.5, [1, 2], False), (True, [False], False),
])
def test_what_looks_like_a_code(label, others, expected):
    assert missing_codes.code_like(label, others) is expected


def test_a_common_code_like_level_is_not_warned_about():
    frame = _frame()
    frame.loc[: ROWS // 2, "A"] = -9     # half the rows: a real category, not a code
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lcb.Dataset.from_pandas(frame)


def test_na_values_must_be_text_or_numbers():
    with pytest.raises(DataError, match="na_values must be strings or numbers"):
        lcb.Dataset.from_pandas(_frame(), na_values=[object()])


# ------------------------------------------------------------------ 9: trailing delimiters
@pytest.mark.parametrize("header_too", [True, False])
def test_a_trailing_delimiter_on_every_line_is_read(tmp_path, capsys, header_too):
    text = _frame().to_csv(index=False)
    lines = [line + "," if (i > 0 or header_too) else line
             for i, line in enumerate(text.splitlines())]
    path = tmp_path / "trailing.csv"
    path.write_text("\n".join(lines) + "\n")
    reference = lcb.Dataset.from_pandas(_frame())
    for data in (lcb.Dataset.from_csv(path), lcb.scan_file(path, chunk_rows=50).to_dataset()):
        assert data.columns == reference.columns and data.n_rows == ROWS
        assert data.labels == reference.labels and data.n_missing == reference.n_missing
    status, out, err = _run(capsys, ["fit", str(path), "--n-classes", "1"])
    assert status == 0 and "Unnamed" not in out + err, err


def test_a_trailing_delimiter_on_some_lines_is_refused(tmp_path):
    path = tmp_path / "some.csv"
    path.write_text("A,B\n1,2,\n2,1\n1,1\n")
    with pytest.raises(DataError, match=r"1 rows do not have the header's 2 fields \(lines 2\)"):
        lcb.Dataset.from_csv(path)


def test_a_trailing_column_with_values_is_kept(tmp_path):
    path = tmp_path / "named.csv"
    path.write_text("A,B,\n1,2,x\n2,1,\n1,1,y\n")
    assert lcb.Dataset.from_csv(path).n_columns == 3


# ------------------------------------------------------------------ 5, 6: output and cache
def test_output_that_cannot_be_written_is_one_line(tmp_path):
    path = tmp_path / "a.csv"
    _frame().to_csv(path, index=False)
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "lcbayes", "fit", str(path), "--n-classes",
                              "1"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "cannot write the output: No space left on device" in run.stderr


def test_a_cache_folder_that_cannot_be_written_is_one_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("LCBAYES_CACHE_DIR", str(tmp_path / "cache"))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache.tempfile, "TemporaryFile", refuse)
    try:
        with pytest.warns(UserWarning, match="cannot be written .*LCBAYES_CACHE_DIR"):
            assert cache.enable_default_cache() is None
    finally:
        monkeypatch.undo()
        cache.disable_compilation_cache()


def test_the_cache_warnings_of_many_programs_are_one_line():
    messages = [f"Error writing persistent compilation cache entry for 'jit_f{i}': "
                "PermissionError: denied" for i in range(48)] + ["another"]
    shown = list(_collapsed(messages))
    assert len(shown) == 2 and "LCBAYES_CACHE_DIR" in shown[0] and shown[1] == "another"


# ------------------------------------------------------------------ 7: options
@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.csv"
    _frame().head(10).to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("argv, expected", [
    (["fit", "DATA", "--n-classes", "1000"], "more than the data's 10 rows"),
    (["compare", "DATA", "--n-classes", "1-11", "--methods", "bic"], "more than the data's"),
    (["fit", "DATA", "--n-classes", "1.5"], "invalid int value: '1.5'"),
    (["fit", "DATA", "--n-clases", "3"], "did you mean --n-classes?"),
    (["compare", "DATA", "--n-classes", "1-2", "--reprot", "r.html"], "did you mean --report?"),
    (["fti", "DATA"], "did you mean 'fit'?"),
    (["fit", "DATA", "--n-classes", "2", "--na-values", "-99,."], "--na-values=-99"),
])
def test_impossible_and_misspelt_options_are_one_line(small, capsys, argv, expected):
    status, out, err = _run(capsys, [small if a == "DATA" else a for a in argv])
    assert expected in _one_error(status, err) and out == ""


def test_messages_show_numbers_not_numpy_reprs():
    with pytest.raises(lcb.StructureError) as info:
        lcb.latent_class(lcb.Dataset.from_pandas(_frame()), np.float64(1.5))
    assert "got 1.5" in str(info.value) and "np." not in str(info.value)


# ------------------------------------------------------------------ 10, 11: the Python API
def test_constructors_and_em_take_a_dataframe_or_codes():
    frame = _frame()
    structure = lcb.latent_class(frame, 2)
    assert structure.observed_names == tuple("ABCD")
    fitted = lcb.em(structure, frame, seed=0, restarts=2)
    codes = frame.to_numpy() - 1
    by_codes = lcb.em(lcb.latent_class(codes, 2), codes, seed=0, restarts=2)
    assert by_codes.loglik == pytest.approx(fitted.loglik, abs=1e-8)
    tree = lcb.hlc(frame, {"H": ["A", "B", "H2"], "H2": ["C", "D"]}, {"H": 2, "H2": 2})
    assert tree.kind == "hlc"
    assert lcb.dag(frame, {"A": ["Z"], "B": ["Z"]}, {"Z": 2}).observed_names == ("A", "B")
    with pytest.raises(lcb.ArgumentTypeError, match="Dataset, a pandas DataFrame"):
        lcb.latent_class({"A": [1, 2]}, 2)


@pytest.mark.parametrize("method", ["predict", "predict_proba", "score_samples", "score",
                                    "bic", "aic"])
def test_an_unfitted_estimator_says_so(method):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        getattr(lcb.LatentClassModel(), method)(_frame())


def test_scikit_learns_estimator_checks_pass_but_those_that_do_not_apply():
    from sklearn.utils.estimator_checks import check_estimator

    from lcbayes.estimator import EXPECTED_FAILED_CHECKS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(lcb.LatentClassModel(restarts=2), on_fail=None,
                                  expected_failed_checks=EXPECTED_FAILED_CHECKS)
    failed = {r["check_name"] for r in results if r["status"] not in ("passed", "skipped")}
    assert failed == set(EXPECTED_FAILED_CHECKS)   # and each listed one does fail
    assert sum(r["status"] == "passed" for r in results) >= 40


# ------------------------------------------------------------------ 8: wide data
def test_wide_data_print_no_number_of_more_than_12_significant_digits(tmp_path, capsys):
    rng = np.random.default_rng(3)
    classes = rng.integers(0, 2, 30)
    codes = (rng.random((30, 60)) < np.where(classes[:, None] == 1, 0.8, 0.2)).astype(int)
    path = tmp_path / "wide.csv"
    pd.DataFrame(codes + 1, columns=[f"q{j}" for j in range(60)]).to_csv(path, index=False)
    status, out, err = _run(capsys, ["fit", str(path), "--n-classes", "2"])
    assert status == 0, err
    import re

    digits = [len(n.replace(".", "").lstrip("0")) for n in re.findall(r"\d[\d.]*", out)]
    assert max(digits) <= 12
    assert "1.153e+18 cells" in out          # 2^60, not its 19 digits
    assert "as there are rows (30, fewer than the table's cells)" in " ".join(out.split())


def test_bivariate_residuals_equal_the_pair_by_pair_tables():
    frame = _frame(5).astype(float)
    frame.iloc[::7, 1] = np.nan                 # missing values: n_ab differs by pair
    structure = lcb.latent_class(frame, 2)
    fit = lcb.em(structure, frame, seed=0, restarts=2)
    table = lcb.bivariate_residuals(structure, fit.params, frame)
    pi = np.asarray(fit.params["class"])
    for row in table.itertuples():
        both = frame[[row.item_a, row.item_b]].dropna().astype(int) - 1
        observed = np.zeros((2, 2))
        np.add.at(observed, (both[row.item_a], both[row.item_b]), 1)
        a, b = (np.asarray(fit.params[c]) for c in (row.item_a, row.item_b))
        expected = len(both) * np.einsum("k,ki,kj->ij", pi, a, b)
        assert row.n_rows == len(both)
        assert row.chi2 == pytest.approx(((observed - expected) ** 2 / expected).sum(), rel=1e-9)
