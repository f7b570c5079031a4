"""Specification tests for data bigger than memory: the pattern-form :class:`lcbayes.Dataset`
(:meth:`~lcbayes.Dataset.from_patterns`) and :func:`lcbayes.scan_file`, which reads a CSV or
Parquet file in chunks into :class:`lcbayes.PatternBlocks`.

The truth throughout is the in-memory route: :meth:`lcbayes.Dataset.from_csv` of the same file
gives the labels, patterns and counts a scan must give, whatever the chunk and block sizes.
"""

from __future__ import annotations

import gc
import pickle
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes import ArgumentError, DataError, Dataset, PatternBlocks, scan_file
from lcbayes.encoding import key_groups, key_patterns, pattern_keys, unique_rows

from .conftest import data_csv

# A warning nobody asked for (e.g. a spurious "constant column") fails the test.
pytestmark = pytest.mark.filterwarnings("error::UserWarning")


def summed(blocks: PatternBlocks) -> dict[tuple[int, ...], float]:
    """The blocks' counts added up per pattern."""
    total: dict[tuple[int, ...], float] = {}
    for patterns, counts in blocks:
        for row, count in zip(map(tuple, patterns.tolist()), counts.tolist(), strict=True):
            total[row] = total.get(row, 0.0) + count
    return total


def assert_same_data(blocks: PatternBlocks, data: Dataset) -> None:
    """``blocks`` hold exactly the labels, patterns and counts of ``data``."""
    assert blocks.columns == data.columns
    assert blocks.labels == data.labels
    assert (blocks.n_rows, blocks.n_observed_rows) == (data.n_rows, data.n_observed_rows)
    expected = dict(zip(map(tuple, data.patterns.tolist()), data.counts.tolist(), strict=True))
    assert summed(blocks) == expected
    merged = blocks.to_dataset()
    assert merged.labels == data.labels
    np.testing.assert_array_equal(merged.patterns, data.patterns)
    np.testing.assert_array_equal(merged.counts, data.counts)


@pytest.fixture(scope="module")
def carcinoma() -> Dataset:
    return Dataset.from_csv(data_csv("carcinoma.csv"))


# ====================================================================== pattern form
class TestFromPatterns:
    def test_counts_and_summary_equal_the_rows_form_without_making_rows(self, carcinoma):
        data = Dataset.from_patterns(carcinoma.patterns, carcinoma.counts, carcinoma.columns,
                                     carcinoma.labels)
        for name in ("n_rows", "n_columns", "n_patterns", "n_missing", "n_fully_missing",
                     "n_observed_rows", "cardinalities"):
            assert getattr(data, name) == getattr(carcinoma, name), name
        assert data.summary() == carcinoma.summary()
        assert repr(data) == repr(carcinoma)
        picked = data.select(["C", "A"])
        recoded = data.with_categories({"A": (2, 1, 3)})
        assert picked.n_rows == 118 and picked.summary() == carcinoma.select(["C", "A"]).summary()
        assert recoded.labels[0] == (2, 1, 3) and recoded.n_rows == 118
        assert data._codes is None and data._pattern_index is None
        assert picked._codes is None and recoded._codes is None

    def test_rows_are_made_on_first_access_in_pattern_order(self, carcinoma):
        data = Dataset.from_patterns(carcinoma.patterns, carcinoma.counts, carcinoma.columns,
                                     carcinoma.labels)
        codes = data.codes
        assert data.codes is codes  # cached
        np.testing.assert_array_equal(data.patterns[data.pattern_index], codes)
        assert np.all(np.diff(data.pattern_index) >= 0)
        order = np.lexsort(carcinoma.codes.T[::-1])
        np.testing.assert_array_equal(codes, carcinoma.codes[order])
        assert data.to_pandas().shape == (118, 7)
        with pytest.raises(ValueError):
            codes[0, 0] = 0  # read-only as in the rows form

    def test_duplicates_add_up_and_zero_counts_drop(self):
        data = Dataset.from_patterns([[1, 0], [0, 1], [1, 0], [1, 1]], [2, 3, 1.0, 0])
        np.testing.assert_array_equal(data.patterns, [[0, 1], [1, 0]])
        np.testing.assert_array_equal(data.counts, [3, 3])
        assert data.n_rows == 6 and data.labels == ((0, 1), (0, 1))

    def test_missing_values_and_fully_missing_rows_counted_from_patterns(self):
        with pytest.warns(UserWarning, match="4 of 9 rows have no observed value"):
            data = Dataset.from_patterns([[0, -1], [-1, -1], [1, 0], [0, 1]], [2, 4, 1, 2])
        assert data.n_missing == {"X1": 4, "X2": 6}
        assert (data.n_fully_missing, data.n_observed_rows) == (4, 5)

    def test_constant_column_warns(self):
        with pytest.warns(UserWarning, match="column 'X2' is constant"):
            Dataset.from_patterns([[0, 1], [1, 1]], [5, 5], cardinalities=[2, 2])

    @pytest.mark.parametrize(
        ("patterns", "counts", "match"),
        [
            ([[0, 1], [1, 0]], [1.5, 2], "counts must be non-negative whole numbers"),
            ([[0, 1], [1, 0]], [-1, 2], "counts must be non-negative whole numbers"),
            ([[0, 1], [1, 0]], [np.nan, 2], "counts must be non-negative whole numbers"),
            ([[0, 1], [1, 0]], ["1", "2"], "counts must be non-negative whole numbers"),
            ([[0, 1], [1, 0]], [1, 2, 3], "counts must be one number per pattern"),
            ([[0, 1], [1, 0]], [[1, 2]], "counts must be one number per pattern"),
            ([[0, 1], [1, 0]], [0, 0], "the data has no rows"),
            ([[0.0, 1.0], [1.0, 0.0]], [1, 1], "patterns must be integers"),
            ([0, 1], [1, 1], "patterns must be a 2-d array"),
            ([[0, -2], [1, 0]], [1, 1], "'X2' has codes below -1"),
            ([[0, -1], [1, -1], [1, 1]], [1, 1, 0], "'X2' has no observed value"),
        ],
    )
    def test_bad_input_is_refused_naming_the_argument(self, patterns, counts, match):
        with pytest.raises(DataError, match=match):
            Dataset.from_patterns(patterns, counts)

    def test_engines_fit_the_pattern_form_exactly_as_the_rows_form(self, carcinoma):
        data = Dataset.from_patterns(carcinoma.patterns, carcinoma.counts, carcinoma.columns,
                                     carcinoma.labels)
        structure = lcb.latent_class(carcinoma, 2)
        rows, patterns = (lcb.em(structure, d, seed=3, restarts=3) for d in (carcinoma, data))
        assert patterns.loglik == rows.loglik
        for a, b in zip(patterns.params, rows.params, strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert (patterns.n_rows, patterns.n_observed_rows) == (rows.n_rows, rows.n_observed_rows)
        vb_rows, vb_patterns = (lcb.vbem(structure, d, seed=3) for d in (carcinoma, data))
        assert vb_patterns.elbo == vb_rows.elbo
        tables = [lcb.compare(d, n_classes=[1, 2], methods=["bic", "aic"], seed=0, exact=False)
                  .to_frame()[["name", "loglik", "bic", "aic"]] for d in (carcinoma, data)]
        pd.testing.assert_frame_equal(tables[1], tables[0])
        assert data._codes is None  # the engines used the patterns, never the rows


# ====================================================================== mixed-radix keys
def test_pattern_keys_sort_as_rows_and_round_trip():
    rng = np.random.default_rng(0)
    codes = rng.integers(-1, 3, size=(500, 4)).astype(np.int32)
    keys = pattern_keys(codes, [3, 3, 3, 3])
    np.testing.assert_array_equal(key_patterns(keys, [3, 3, 3, 3]), codes)
    np.testing.assert_array_equal(np.argsort(keys, kind="stable"),
                                  np.lexsort(codes.T[::-1]))
    assert pattern_keys(codes, [3] * 40) is None  # 4^40 > 2^62: too wide for one int64


@pytest.mark.parametrize(("n_columns", "high"), [(5, 4), (45, 2), (70, 3)])
def test_unique_rows_is_numpy_unique_also_for_rows_too_wide_for_one_key(n_columns, high):
    rng = np.random.default_rng(n_columns)
    codes = rng.integers(-1, high, size=(3000, n_columns)).astype(np.int32)
    codes[::2] = codes[1::2]  # repeated rows
    assert (len(key_groups([high] * n_columns)) > 1) == (n_columns > 5)
    ours = unique_rows(codes)
    numpy = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(ours[0], numpy[0])
    np.testing.assert_array_equal(np.ravel(ours[1]), np.ravel(numpy[1]))
    np.testing.assert_array_equal(ours[2], numpy[2])


# ====================================================================== scan_file
def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name", ["carcinoma", "values"])
def test_scan_of_a_csv_file_gives_the_patterns_of_from_csv(tmp_path, name):
    source = data_csv(f"{name}.csv")
    path = write_csv(tmp_path / f"{name}.csv", pd.read_csv(source))
    expected = Dataset.from_csv(path)
    blocks = scan_file(path, chunk_rows=7, block_patterns=3)
    assert blocks.n_blocks > 3 and all(isinstance(b, Path) for b in blocks.blocks[:-1])
    assert all(len(c) <= 3 for _, c in blocks)
    assert_same_data(blocks, expected)
    assert_same_data(scan_file(path), expected)  # one chunk, one block in memory


def test_scan_of_a_parquet_file_gives_the_patterns_of_from_csv(tmp_path):
    pytest.importorskip("pyarrow")
    frame = pd.read_csv(data_csv("values.csv"))
    frame.loc[::5, frame.columns[0]] = None  # missing values, an integer column with NaN
    csv = write_csv(tmp_path / "values.csv", frame)
    parquet = tmp_path / "values.parquet"
    pd.read_csv(csv).to_parquet(parquet, row_group_size=50)
    blocks = scan_file(parquet, chunk_rows=11, block_patterns=4)
    assert blocks.n_blocks > 2
    assert_same_data(blocks, Dataset.from_csv(csv))


def test_parquet_categorical_columns_keep_their_category_order(tmp_path):
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({
        "c": pd.Categorical(["b", "a", None, "b"] * 30, categories=["b", "a", "z"]),
        "n": [1, 2, None, 4] * 30,
        "f": [True, False, None, True] * 30,
    })
    path = tmp_path / "cat.pq"
    frame.to_parquet(path, row_group_size=7)
    with pytest.warns(UserWarning, match="30 of 120 rows have no observed value"):
        blocks = scan_file(path, chunk_rows=5, block_patterns=3)
    with pytest.warns(UserWarning, match="30 of 120 rows have no observed value"):
        expected = Dataset.from_pandas(pd.read_parquet(path))
    assert blocks.labels[0] == ("b", "a", "z")  # unused categories kept, in their order
    assert_same_data(blocks, expected)


def awkward_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Strings with spaces, empty fields and NA strings, integral floats, a constant column,
    booleans with gaps, a column of numbers up to row 60 and text after, fully missing rows."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "colour": rng.choice([" red", "red", "blue ", "green", "", "NA"], n),
        "score": rng.choice(["1.0", "2", "3.0", ""], n),
        "same": "x",
        "flag": rng.choice(["True", "False", ""], n),
        "late_text": np.where(np.arange(n) < 60, rng.choice(["1", "2"], n),
                              rng.choice(["1", "2", "b"], n)),
    })
    frame.loc[[3, 17], ["colour", "score", "flag"]] = ""
    frame.loc[[3, 17], "same"] = ""
    frame.loc[[3, 17], "late_text"] = ""
    return frame


def test_scan_reads_missing_values_strings_and_types_as_from_csv(tmp_path):
    path = write_csv(tmp_path / "awkward.csv", awkward_frame(200))
    with pytest.warns(UserWarning) as seen_csv:
        expected = Dataset.from_csv(path)
    with pytest.warns(UserWarning) as seen_scan:
        blocks = scan_file(path, chunk_rows=20, block_patterns=10)
    assert expected.labels[0] == ("blue", "green", "red")
    assert expected.labels[1] == (1, 2, 3) and expected.labels[3] == (False, True)
    assert expected.labels[4] == ("1", "2", "b")  # text over the whole file
    assert_same_data(blocks, expected)
    messages = sorted(str(w.message) for w in seen_scan)
    assert messages == sorted(str(w.message) for w in seen_csv)
    assert any("'same' is constant" in m for m in messages)
    assert any("2 of 200 rows have no observed value" in m for m in messages)


def test_scan_of_rows_too_wide_for_one_key_gives_the_patterns_of_from_csv(tmp_path):
    """45 binary columns with gaps: 3^45 > 2^62, so patterns are keyed by two groups of
    columns."""
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 2, size=(300, 45)).astype(float)
    codes[rng.random(codes.shape) < 0.05] = np.nan
    codes[::3] = codes[1::3]  # repeated patterns
    path = write_csv(tmp_path / "wide.csv", pd.DataFrame(codes).add_prefix("Q"))
    blocks = scan_file(path, chunk_rows=40, block_patterns=30)
    assert blocks.n_blocks > 3
    assert_same_data(blocks, Dataset.from_csv(path))


def test_semicolons_and_cp1252_are_found_as_from_csv_finds_them(tmp_path):
    path = tmp_path / "accents.csv"
    path.write_bytes("région;sexe\nÎle;F\nNord;M\nÎle;M\n".encode("cp1252"))
    with pytest.warns(UserWarning, match="not UTF-8; it was read as cp1252"):
        expected = Dataset.from_csv(path)
    with pytest.warns(UserWarning, match="not UTF-8; it was read as cp1252"):
        blocks = scan_file(path, chunk_rows=1)
    assert blocks.columns == ("région", "sexe")
    assert_same_data(blocks, expected)


def test_categories_skip_the_first_pass_and_code_against_given_labels(tmp_path):
    path = write_csv(tmp_path / "ab.csv", pd.DataFrame({"a": [1, 2, 2, 1], "b": ["x"] * 4}))
    blocks = scan_file(path, categories={"a": (3, 2, 1), "b": ("y", "x")}, chunk_rows=3)
    assert blocks.labels == ((3, 2, 1), ("y", "x"))
    assert summed(blocks) == {(1, 1): 2.0, (2, 1): 2.0}
    with pytest.raises(DataError, match=r"'b' has value\(s\) \['x'\]"):
        scan_file(path, categories={"a": (1, 2), "b": ("y",)})
    with pytest.warns(UserWarning, match="'b' is constant"):  # b's labels found, a's given
        some = scan_file(path, columns=["a", "b"], categories={"a": (3, 2, 1)}, chunk_rows=3)
    assert some.labels == ((3, 2, 1), ("x",))
    assert summed(some) == {(1, 0): 2.0, (2, 0): 2.0}


def test_columns_choose_and_order(tmp_path, carcinoma):
    path = write_csv(tmp_path / "c.csv", pd.read_csv(data_csv("carcinoma.csv")))
    assert_same_data(scan_file(path, columns=["G", "B"], chunk_rows=13),
                     carcinoma.select(["G", "B"]))


class TestSpillFiles:
    def test_files_live_as_long_as_the_blocks(self, tmp_path):
        path = write_csv(tmp_path / "v.csv", pd.read_csv(data_csv("values.csv")))
        blocks = scan_file(path, chunk_rows=10, block_patterns=2, spill_dir=tmp_path)
        folder = blocks.spill.path
        assert folder.parent == tmp_path and len(list(folder.glob("*.npz"))) > 2
        copy = pickle.loads(pickle.dumps(blocks))  # e.g. sent to a worker: it borrows
        assert summed(copy) == summed(blocks)
        del copy
        gc.collect()
        assert folder.is_dir()
        del blocks
        gc.collect()
        assert not folder.exists()

    def test_no_folder_when_everything_fits_one_block(self, tmp_path):
        path = write_csv(tmp_path / "v.csv", pd.read_csv(data_csv("values.csv")))
        blocks = scan_file(path, chunk_rows=10)
        assert blocks.spill is None and blocks.n_blocks == 1


class TestBadInput:
    def test_missing_file_and_folder(self, tmp_path):
        with pytest.raises(DataError, match="no such file"):
            scan_file(tmp_path / "absent.csv")
        with pytest.raises(DataError, match="is a folder"):
            scan_file(tmp_path)

    def test_unknown_column(self, tmp_path):
        path = write_csv(tmp_path / "a.csv", pd.DataFrame({"a": [1, 2]}))
        with pytest.raises(DataError, match=r"unknown column\(s\) \['z'\]; the data has "
                                            r"columns \['a'\]"):
            scan_file(path, columns=["a", "z"])

    def test_too_many_categories_stops_at_the_first_chunk_that_shows_it(self, tmp_path):
        path = write_csv(tmp_path / "ids.csv", pd.DataFrame({"id": np.arange(10_000)}))
        with pytest.raises(DataError, match=r"'id' has more than 50 distinct values "
                                            r"\(max_categories=50\).*bin it"):
            scan_file(path, chunk_rows=100)
        with pytest.raises(DataError, match=r"'id' has 10000 distinct values"):
            Dataset.from_csv(path)  # the same message with the whole count

    def test_parquet_without_pyarrow_names_the_extra(self, tmp_path, monkeypatch):
        path = tmp_path / "x.parquet"
        path.write_bytes(b"PAR1")
        monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails
        with pytest.raises(DataError, match=r"needs pyarrow: pip install 'lcbayes\[parquet\]'"):
            scan_file(path)

    def test_unreadable_parquet(self, tmp_path):
        pytest.importorskip("pyarrow")
        path = tmp_path / "x.parquet"
        path.write_bytes(b"not a parquet file at all")
        with pytest.raises(DataError, match="is not a readable Parquet file"):
            scan_file(path)

    def test_empty_file_and_header_only(self, tmp_path):
        (tmp_path / "empty.csv").write_text("")
        with pytest.raises(DataError, match="is empty"):
            scan_file(tmp_path / "empty.csv")
        (tmp_path / "header.csv").write_text("a,b\n")
        with pytest.raises(DataError, match="the data has no rows"):
            scan_file(tmp_path / "header.csv")

    @pytest.mark.parametrize(("kwargs", "error", "match"), [
        ({"chunk_rows": 0}, ArgumentError, "chunk_rows must be an integer >= 1"),
        ({"block_patterns": 0}, ArgumentError, "block_patterns must be an integer >= 1"),
        ({"chunk_rows": 1.5}, TypeError, "chunk_rows must be an integer"),
        ({"spill_dir": "/no/such/folder"}, ArgumentError, "spill_dir must be an existing"),
    ])
    def test_bad_arguments_name_themselves(self, tmp_path, kwargs, error, match):
        path = write_csv(tmp_path / "a.csv", pd.DataFrame({"a": [1, 2]}))
        with pytest.raises(error, match=match):
            scan_file(path, **kwargs)

    def test_path_must_be_a_path(self):
        with pytest.raises(TypeError, match="path must be a file path"):
            scan_file(42)


def test_scan_memory_is_one_chunk_not_the_rows(tmp_path):
    """tracemalloc's peak (NumPy and pandas arrays are traced) while scanning 2*10^5 rows in
    chunks of 2*10^4 stays far below what the rows take as pandas holds them; scanning the file
    in one chunk, or reading it whole with pandas, does not, so the measure sees rows where
    they are held."""
    n, j = 200_000, 10
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 2, size=(n, j)) + rng.integers(0, 2, size=(n, 1))
    path = tmp_path / "big.csv"
    pd.DataFrame(codes, columns=[f"Q{i}" for i in range(j)]).to_csv(path, index=False)
    rows_bytes = n * j * 8  # the rows as a DataFrame of int64: 16 MB

    def peak(read) -> tuple[int, object]:
        gc.collect()
        tracemalloc.start()
        try:
            result = read()
            return tracemalloc.get_traced_memory()[1], result
        finally:
            tracemalloc.stop()

    scanned, blocks = peak(lambda: scan_file(path, chunk_rows=20_000))
    one_chunk, _ = peak(lambda: scan_file(path, chunk_rows=n))
    whole, _ = peak(lambda: pd.read_csv(path))
    assert scanned < rows_bytes / 4, (scanned, rows_bytes)
    assert one_chunk > 4 * scanned, (one_chunk, scanned)
    assert whole > 0.9 * rows_bytes, (whole, rows_bytes)  # pandas holds the rows
    assert_same_data(blocks, Dataset.from_csv(path))


@pytest.mark.slow
def test_scan_of_a_million_rows_in_spilled_blocks_equals_from_csv(tmp_path):
    """10^6 rows of 20 binary items (5 classes, 2 % missing): chunks of 10^5 rows, blocks of at
    most 5*10^4 patterns (written to files), summed per pattern, equal Dataset.from_csv."""
    rng = np.random.default_rng(7)
    n, j = 1_000_000, 20
    z = rng.integers(0, 5, n)
    codes = (rng.random((n, j)) < rng.uniform(0.1, 0.9, (5, j))[z]).astype(float)
    codes[rng.random(codes.shape) < 0.02] = np.nan
    path = write_csv(tmp_path / "million.csv", pd.DataFrame(codes).add_prefix("Y"))
    blocks = scan_file(path, chunk_rows=100_000, block_patterns=50_000)
    assert blocks.n_blocks > 2 and blocks.spill is not None
    assert_same_data(blocks, Dataset.from_csv(path))
