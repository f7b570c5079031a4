"""Specification tests for :mod:`lcbayes.data` (categorical data sets) and :mod:`lcbayes.errors`.

Every test states one requirement of the data layer: which column types count as categorical,
how missing values are coded (``-1``, never dropped), how rows compress into patterns with counts,
and which inputs are refused with a :class:`lcbayes.DataError` that names the column and the fix.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lcbayes
from lcbayes import DataError, Dataset, LcbayesError, StructureError, TooLargeError
from lcbayes.data import DEFAULT_MAX_CATEGORIES, MISSING

from .conftest import data_csv

# A warning nobody asked for (e.g. a spurious "constant column") fails the test; expected
# warnings are checked with pytest.warns.
pytestmark = pytest.mark.filterwarnings("error::UserWarning")

ELECTION_RATINGS = [
    "MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG",
    "MORALB", "CARESB", "KNOWB", "LEADB", "DISHONB", "INTELB",
]  # fmt: skip


def column(data: Dataset, name: str) -> list[int]:
    return data.codes[:, data.columns.index(name)].tolist()


def check_patterns(data: Dataset) -> None:
    """The pattern invariants every data set must satisfy."""
    assert data.counts.sum() == data.n_rows
    assert np.all(data.counts >= 1)
    assert data.counts.shape == (data.n_patterns,)
    assert data.patterns.shape == (data.n_patterns, data.n_columns)
    assert data.pattern_index.shape == (data.n_rows,)
    np.testing.assert_array_equal(data.patterns[data.pattern_index], data.codes)
    assert len({tuple(p) for p in data.patterns.tolist()}) == data.n_patterns  # unique
    np.testing.assert_array_equal(
        np.bincount(data.pattern_index, minlength=data.n_patterns), data.counts
    )


# ====================================================================== errors module
class TestErrors:
    def test_hierarchy(self):
        for cls in (DataError, StructureError, TooLargeError):
            assert issubclass(cls, LcbayesError)
        assert issubclass(LcbayesError, ValueError)
        assert not issubclass(DataError, StructureError)
        assert not issubclass(StructureError, DataError)

    def test_exported_from_package(self):
        for name in ("DataError", "StructureError", "TooLargeError", "LcbayesError"):
            assert name in lcbayes.__all__
            assert getattr(lcbayes, name) is getattr(lcbayes.errors, name)

    def test_data_errors_are_value_errors(self):
        with pytest.raises(ValueError, match="no rows"):
            Dataset.from_pandas(pd.DataFrame({"a": []}))


# ====================================================================== column types
class TestColumnTypes:
    def test_strings_sorted_labels(self):
        data = Dataset.from_pandas(pd.DataFrame({"a": ["yes", "no", "maybe", "no"]}))
        assert data.labels == (("maybe", "no", "yes"),)
        assert column(data, "a") == [2, 1, 0, 1]
        assert data.cardinalities == (3,)
        assert data.columns == ("a",)

    def test_strings_are_stripped(self):
        data = Dataset.from_pandas(pd.DataFrame({"a": [" x", "x ", "y", "y"]}))
        assert data.labels == (("x", "y"),)
        assert column(data, "a") == [0, 0, 1, 1]

    def test_pandas_string_dtype_with_na(self):
        frame = pd.DataFrame(
            {"a": pd.array(["x", pd.NA, "y", "x"], dtype="string"), "b": [1, 2, 1, 2]}
        )
        data = Dataset.from_pandas(frame)
        assert data.labels[0] == ("x", "y")
        assert column(data, "a") == [0, MISSING, 1, 0]

    def test_integers_keep_their_values_as_labels(self):
        data = Dataset.from_pandas(pd.DataFrame({"a": [5, -3, 0, 5]}))
        assert data.labels == ((-3, 0, 5),)
        assert column(data, "a") == [2, 0, 1, 2]
        assert all(type(v) is int for v in data.labels[0])

    @pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
    def test_integer_widths(self, dtype):
        data = Dataset.from_pandas(pd.DataFrame({"a": np.array([3, 1, 2, 1], dtype=dtype)}))
        assert data.labels == ((1, 2, 3),)
        assert column(data, "a") == [2, 0, 1, 0]

    def test_nullable_integers(self):
        frame = pd.DataFrame({"a": pd.array([1, 2, None, 1], dtype="Int64"), "b": [1, 1, 2, 2]})
        data = Dataset.from_pandas(frame)
        assert data.labels[0] == (1, 2)
        assert column(data, "a") == [0, 1, MISSING, 0]

    @pytest.mark.parametrize("dtype", [np.float64, np.float32])
    def test_integral_floats_with_nan(self, dtype):
        frame = pd.DataFrame(
            {"a": np.array([1.0, 2.0, np.nan, 2.0], dtype=dtype), "b": ["p", "q", "p", "q"]}
        )
        data = Dataset.from_pandas(frame)
        assert data.labels[0] == (1, 2)
        assert all(type(v) is int for v in data.labels[0])  # 1.0 -> 1: same labels as ints
        assert column(data, "a") == [0, 1, MISSING, 1]
        assert data.n_rows == 4

    def test_integral_floats_match_integer_labels(self):
        with_nan = Dataset.from_pandas(pd.DataFrame({"a": [1.0, np.nan, 2.0]}).assign(b=[1, 2, 1]))
        ints = Dataset.from_pandas(pd.DataFrame({"a": [1, 2], "b": [1, 2]}))
        assert with_nan.labels == ints.labels

    def test_booleans(self):
        data = Dataset.from_pandas(pd.DataFrame({"a": [True, False, True]}))
        assert data.labels == ((False, True),)
        assert column(data, "a") == [1, 0, 1]

    @pytest.mark.parametrize(
        "values",
        [
            pd.array([True, False, None, True], dtype="boolean"),
            np.array([True, False, None, True], dtype=object),
        ],
        ids=["nullable-boolean", "object-with-None"],
    )
    def test_booleans_with_missing(self, values):
        data = Dataset.from_pandas(pd.DataFrame({"a": values, "b": [1, 2, 1, 2]}))
        assert data.labels[0] == (False, True)
        assert column(data, "a") == [1, 0, MISSING, 1]

    def test_categorical_keeps_category_order_and_unused_categories(self):
        values = pd.Categorical(["lo", "hi", "lo", "hi"], categories=["lo", "mid", "hi"])
        data = Dataset.from_pandas(pd.DataFrame({"a": values}))
        assert data.labels == (("lo", "mid", "hi"),)  # not sorted, "mid" unused but kept
        assert data.cardinalities == (3,)
        assert column(data, "a") == [0, 2, 0, 2]

    def test_ordered_categorical_with_missing(self):
        values = pd.Categorical(
            ["c", None, "a", "c"], categories=["c", "b", "a"], ordered=True
        )
        data = Dataset.from_pandas(pd.DataFrame({"a": values, "b": [1, 2, 1, 2]}))
        assert data.labels[0] == ("c", "b", "a")
        assert column(data, "a") == [0, MISSING, 2, 0]

    def test_categorical_of_integers_keeps_order(self):
        values = pd.Categorical([3, 1, 3, 1], categories=[3, 2, 1])
        data = Dataset.from_pandas(pd.DataFrame({"a": values}))
        assert data.labels == ((3, 2, 1),)
        assert column(data, "a") == [0, 2, 0, 2]

    def test_categorical_blank_category_is_missing(self):
        values = pd.Categorical(["x", "", "y", "x"], categories=["x", "", "y"])
        data = Dataset.from_pandas(pd.DataFrame({"a": values, "b": [1, 2, 1, 2]}))
        assert data.labels[0] == ("x", "y")
        assert column(data, "a") == [0, MISSING, 1, 0]

    def test_binned_with_pandas_cut(self):
        """The fix the errors suggest (pandas.cut) gives an accepted, ordered column."""
        binned = pd.cut(pd.Series([0.1, 0.5, 0.9, 0.2, 0.45]), bins=[0, 0.3, 0.6, 1.0])
        data = Dataset.from_pandas(pd.DataFrame({"score": binned}))
        assert data.cardinalities == (3,)
        assert [iv.right for iv in data.labels[0]] == [0.3, 0.6, 1.0]
        assert column(data, "score") == [0, 1, 2, 0, 1]

    def test_mixed_object_column(self):
        frame = pd.DataFrame({"a": np.array(["x", 1, 2.0, "x"], dtype=object)})
        data = Dataset.from_pandas(frame)
        assert set(data.labels[0]) == {"x", 1, 2}
        assert data.cardinalities == (3,)
        codes = column(data, "a")
        assert codes[0] == codes[3] == data.labels[0].index("x")
        assert data.labels[0][codes[2]] == 2

    def test_labels_round_trip_through_codes(self):
        frame = pd.DataFrame(
            {
                "s": ["b", "a", "c", "a"],
                "i": [10, 20, 10, 30],
                "f": [1.0, 2.0, 2.0, 1.0],
                "t": [True, False, False, True],
                "c": pd.Categorical(["z", "y", "z", "z"], categories=["z", "y", "w"]),
            }
        )
        data = Dataset.from_pandas(frame)
        for j, name in enumerate(data.columns):
            decoded = [data.labels[j][k] for k in data.codes[:, j]]
            assert decoded == list(frame[name]), name

    def test_non_string_column_names_become_strings(self):
        data = Dataset.from_pandas(pd.DataFrame({0: [1, 2], 1: ["a", "b"]}))
        assert data.columns == ("0", "1")
        assert data.select(["1"]).labels == (("a", "b"),)

    def test_columns_argument_selects_and_orders(self):
        frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [True, False]})
        data = Dataset.from_pandas(frame, columns=["c", "a"])
        assert data.columns == ("c", "a")
        assert data.labels == ((False, True), (1, 2))
        assert data.codes.tolist() == [[1, 0], [0, 1]]

    def test_columns_argument_skips_unusable_columns(self):
        frame = pd.DataFrame(
            {"a": [1, 2, 1], "when": pd.to_datetime(["2020-01-01"] * 3), "x": [0.5, 1.5, 2.5]}
        )
        data = Dataset.from_pandas(frame, columns=["a"])
        assert data.columns == ("a",)


# ====================================================================== missing values
class TestMissingValues:
    @pytest.mark.parametrize(
        "missing", [np.nan, None, pd.NA, "", "   "], ids=["nan", "None", "pd.NA", "empty", "blank"]
    )
    def test_missing_markers_in_text_column(self, missing):
        frame = pd.DataFrame(
            {"a": np.array(["x", missing, "y", "x"], dtype=object), "b": [1, 2, 1, 2]}
        )
        data = Dataset.from_pandas(frame)
        assert data.labels[0] == ("x", "y")  # the marker is not a category
        assert column(data, "a") == [0, MISSING, 1, 0]
        assert data.n_rows == 4
        assert data.n_missing == {"a": 1, "b": 0}

    @pytest.mark.parametrize("missing", [np.nan, None, pd.NA], ids=["nan", "None", "pd.NA"])
    def test_missing_markers_in_numeric_column(self, missing):
        frame = pd.DataFrame({"a": np.array([1, missing, 2, 1], dtype=object), "b": [1, 2, 1, 2]})
        data = Dataset.from_pandas(frame)
        assert data.labels[0] == (1, 2)
        assert column(data, "a") == [0, MISSING, 1, 0]

    def test_rows_are_never_dropped(self):
        rng = np.random.default_rng(1)
        values = rng.choice(np.array(["a", "b", "c", None], dtype=object), size=(200, 3))
        values[:, 0] = rng.choice(["a", "b"], size=200)  # keep some observed rows
        frame = pd.DataFrame(values, columns=["p", "q", "r"])
        data = Dataset.from_pandas(frame)
        assert data.n_rows == 200
        assert data.codes.shape == (200, 3)
        expected = frame.isna().sum().to_dict()
        assert data.n_missing == expected
        assert sum(expected.values()) > 0
        np.testing.assert_array_equal(data.codes == MISSING, frame.isna().to_numpy())

    def test_fully_missing_row_kept_counted_and_reported(self):
        frame = pd.DataFrame({"a": ["x", None, "y", "x"], "b": [1.0, np.nan, 2.0, np.nan]})
        with pytest.warns(UserWarning, match=r"1 of 4 rows have no observed value"):
            data = Dataset.from_pandas(frame)
        assert data.n_rows == 4
        assert data.n_fully_missing == 1
        assert data.n_observed_rows == 3
        assert data.codes[1].tolist() == [MISSING, MISSING]
        assert [MISSING, MISSING] in data.patterns.tolist()
        assert data.n_missing == {"a": 1, "b": 2}
        check_patterns(data)

    def test_several_fully_missing_rows(self):
        frame = pd.DataFrame({"a": ["x", "", None, "y", np.nan], "b": [1, None, None, 2, pd.NA]})
        with pytest.warns(UserWarning, match=r"3 of 5 rows"):
            data = Dataset.from_pandas(frame)
        assert (data.n_rows, data.n_fully_missing, data.n_observed_rows) == (5, 3, 2)
        all_missing = data.patterns.tolist().index([MISSING, MISSING])
        assert data.counts[all_missing] == 3

    def test_no_fully_missing_warning_for_partial_rows(self):
        frame = pd.DataFrame({"a": ["x", None, "y"], "b": [1, 2, None]})
        data = Dataset.from_pandas(frame)  # a UserWarning here fails (pytestmark)
        assert data.n_fully_missing == 0
        assert data.n_observed_rows == data.n_rows == 3


# ====================================================================== patterns
class TestPatterns:
    def test_small_example(self):
        data = Dataset.from_codes([[0, 1], [1, 0], [0, 1], [-1, 1], [0, 1]])
        assert data.n_patterns == 3
        assert data.counts.sum() == 5
        assert dict(zip(map(tuple, data.patterns.tolist()), data.counts.tolist(), strict=True)) == {
            (0, 1): 3.0,
            (1, 0): 1.0,
            (-1, 1): 1.0,
        }
        check_patterns(data)

    @pytest.mark.parametrize("seed", range(5))
    def test_random_codes(self, seed):
        rng = np.random.default_rng(seed)
        n, j = rng.integers(1, 300), rng.integers(1, 6)
        codes = rng.integers(-1, 3, size=(n, j))
        codes[0] = 0  # every column has an observed value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # constant / fully missing rows
            data = Dataset.from_codes(codes)
        np.testing.assert_array_equal(data.codes, codes)
        check_patterns(data)
        assert data.n_patterns == len({tuple(r) for r in codes.tolist()})

    def test_patterns_sorted_and_dtypes(self):
        data = Dataset.from_codes([[1, 1], [0, 1], [1, 0], [0, 0], [1, 1]])
        rows = [tuple(p) for p in data.patterns.tolist()]
        assert rows == sorted(rows)
        assert data.codes.dtype == np.int32
        assert data.patterns.dtype == np.int32
        assert data.counts.dtype == np.float64
        assert np.issubdtype(data.pattern_index.dtype, np.integer)

    def test_arrays_are_read_only(self):
        data = Dataset.from_codes([[0, 1], [1, 0]])
        for arr in (data.codes, data.patterns, data.counts, data.pattern_index):
            with pytest.raises(ValueError):
                arr[0] = 0

    def test_dataset_is_frozen(self):
        data = Dataset.from_codes([[0, 1], [1, 0]])
        with pytest.raises(AttributeError):
            data.columns = ("p", "q")


# ====================================================================== from_codes
class TestFromCodes:
    def test_defaults(self):
        data = Dataset.from_codes([[0, 2], [1, 0], [-1, 1]])
        assert data.columns == ("X1", "X2")
        assert data.labels == ((0, 1), (0, 1, 2))
        assert data.cardinalities == (2, 3)
        assert (data.n_rows, data.n_columns) == (3, 2)
        assert data.n_missing == {"X1": 1, "X2": 0}

    def test_labels_and_unused_categories(self):
        data = Dataset.from_codes(
            np.array([[0, 1], [1, 0]]), columns=["p", "q"], labels=[["no", "yes"], ["a", "b", "c"]]
        )
        assert data.labels == (("no", "yes"), ("a", "b", "c"))
        assert data.cardinalities == (2, 3)

    def test_cardinalities(self):
        data = Dataset.from_codes([[0, 1], [1, 0]], cardinalities=[2, 4])
        assert data.cardinalities == (2, 4)
        assert data.labels[1] == (0, 1, 2, 3)

    def test_fully_missing_row_warns(self):
        with pytest.warns(UserWarning, match="1 of 3 rows have no observed value"):
            data = Dataset.from_codes([[0, 1], [-1, -1], [1, 0]])
        assert data.n_rows == 3
        assert data.n_fully_missing == 1

    def test_constant_column_warns(self):
        with pytest.warns(UserWarning, match=r"column 'X1' is constant"):
            data = Dataset.from_codes([[0, 1], [0, 0], [-1, 1]])
        assert data.cardinalities == (1, 2)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"codes": [[0.0, 1.0], [1.0, 0.0]]}, "integers"),
            ({"codes": [0, 1, 0]}, "2-d"),
            ({"codes": [[0, -2], [1, 1]]}, r"'X2' has codes below -1"),
            ({"codes": [[0, 3], [1, 1]], "cardinalities": [2, 2]}, r"'X2' has code 3"),
            ({"codes": [[0, 2], [1, 1]], "labels": [["a", "b"], ["c", "d"]]}, r"'X2'"),
            ({"codes": [[0, 1], [1, 0]], "labels": [["a", "b"]]}, "labels has 1 entries"),
            ({"codes": [[0, 1], [1, 0]], "cardinalities": [2]}, "cardinalities has 1"),
            (
                {"codes": [[0, 1], [1, 0]], "labels": [["a", "b"], ["c", "d"]],
                 "cardinalities": [2, 3]},
                r"'X2': cardinality 3 disagrees",
            ),
            ({"codes": [[0, -1], [1, -1]]}, r"'X2' has no observed value"),
            ({"codes": [[0, 1], [1, 0]], "columns": ["a", "a"]}, "duplicate column names"),
            ({"codes": [[0, 1], [1, 0]], "columns": ["a"]}, "1 column names given for 2"),
            ({"codes": np.zeros((0, 2), dtype=int)}, "no rows"),
            ({"codes": np.zeros((3, 0), dtype=int)}, "no columns"),
        ],
    )
    def test_errors(self, kwargs, match):
        with pytest.raises(DataError, match=match):
            Dataset.from_codes(**kwargs)

    def test_direct_construction_checks_shapes(self):
        with pytest.raises(DataError, match="2-d"):
            Dataset(codes=np.array([0, 1]), columns=("a",), labels=((0, 1),))
        with pytest.raises(DataError, match="columns"):
            Dataset(codes=np.array([[0, 1]]), columns=("a",), labels=((0, 1), (0, 1)))


# ====================================================================== from_pandas errors
class TestFromPandasErrors:
    def test_no_rows(self):
        with pytest.raises(DataError, match="no rows"):
            Dataset.from_pandas(pd.DataFrame({"a": [], "b": []}))

    def test_no_columns(self):
        with pytest.raises(DataError, match="no columns"):
            Dataset.from_pandas(pd.DataFrame(index=range(3)))

    def test_not_a_dataframe(self):
        with pytest.raises(DataError, match="DataFrame"):
            Dataset.from_pandas([[1, 2], [2, 1]])

    def test_unknown_column(self):
        frame = pd.DataFrame({"a": [1, 2], "b": [2, 1]})
        with pytest.raises(DataError, match=r"unknown column.*'zz'.*\['a', 'b'\]"):
            Dataset.from_pandas(frame, columns=["a", "zz"])

    def test_empty_columns_argument(self):
        with pytest.raises(DataError, match="columns is empty"):
            Dataset.from_pandas(pd.DataFrame({"a": [1, 2]}), columns=[])

    def test_column_listed_twice(self):
        with pytest.raises(DataError, match=r"\['a'\].*more than once"):
            Dataset.from_pandas(pd.DataFrame({"a": [1, 2], "b": [1, 2]}), columns=["a", "b", "a"])

    def test_duplicate_column_names(self):
        frame = pd.DataFrame([[1, 2, 1], [2, 1, 2]], columns=["a", "b", "a"])
        with pytest.raises(DataError, match=r"duplicate column names \['a'\].*rename"):
            Dataset.from_pandas(frame)

    def test_duplicate_names_after_conversion_to_text(self):
        frame = pd.DataFrame([[1, 2], [2, 1]], columns=[1, "1"])
        with pytest.raises(DataError, match="duplicate column names"):
            Dataset.from_pandas(frame)

    def test_too_many_categories(self):
        frame = pd.DataFrame({"ok": [1, 2] * 30, "age": range(60)})
        with pytest.raises(
            DataError, match=r"column 'age' has 60 distinct values \(max_categories=50\).*bin"
        ):
            Dataset.from_pandas(frame)

    def test_max_categories_boundary(self):
        assert DEFAULT_MAX_CATEGORIES == 50
        data = Dataset.from_pandas(pd.DataFrame({"a": range(50)}))
        assert data.cardinalities == (50,)
        with pytest.raises(DataError, match=r"'a' has 51 distinct values"):
            Dataset.from_pandas(pd.DataFrame({"a": range(51)}))

    def test_max_categories_argument(self):
        frame = pd.DataFrame({"a": [f"v{i}" for i in range(11)]})
        with pytest.raises(DataError, match=r"'a' has 11 distinct values \(max_categories=10\)"):
            Dataset.from_pandas(frame, max_categories=10)
        assert Dataset.from_pandas(frame, max_categories=11).cardinalities == (11,)
        assert Dataset.from_pandas(frame, max_categories=100).cardinalities == (11,)

    def test_missing_values_do_not_count_as_categories(self):
        frame = pd.DataFrame({"a": [1.0, 2.0, np.nan, None], "b": [1, 2, 1, 2]})
        assert Dataset.from_pandas(frame, max_categories=2).cardinalities == (2, 2)

    @pytest.mark.parametrize(
        "values",
        [
            [None, None, None],
            [np.nan, np.nan, np.nan],
            ["", " ", None],
            pd.array([pd.NA] * 3, dtype="Int64"),
            pd.Categorical([None, None, None], categories=["p", "q"]),
        ],
        ids=["None", "nan", "blank", "Int64-NA", "categorical"],
    )
    def test_column_without_observed_value(self, values):
        frame = pd.DataFrame({"a": [1, 2, 1], "empty": values})
        with pytest.raises(DataError, match=r"'empty' has no observed value.*leave it out"):
            Dataset.from_pandas(frame)

    @pytest.mark.parametrize(
        "values",
        [
            [1.0, 2.5, np.nan],
            np.array([1.0, 2.0, 0.25], dtype=np.float32),
            pd.array([1.0, None, 2.5], dtype="Float64"),
            np.array(["x", 2.5, "y"], dtype=object),
            [1.0, np.inf, 2.0],
            np.array(["x", float("-inf"), "y"], dtype=object),
        ],
        ids=["float64", "float32", "Float64", "object", "inf", "object-inf"],
    )
    def test_non_integer_numbers(self, values):
        frame = pd.DataFrame({"a": [1, 2, 1], "score": values})
        with pytest.raises(DataError, match=r"'score' has non-integer number.*bin it"):
            Dataset.from_pandas(frame)

    @pytest.mark.parametrize(
        "values",
        [
            pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-01"]),
            pd.date_range("2020-01-01", periods=3, tz="UTC"),
            pd.to_timedelta([1, 2, 1], unit="D"),
            pd.period_range("2020-01", periods=3, freq="M"),
            np.array([1 + 1j, 2, 1 + 1j]),
        ],
        ids=["datetime", "datetime-tz", "timedelta", "period", "complex"],
    )
    def test_non_categorical_dtype(self, values):
        frame = pd.DataFrame({"a": [1, 2, 1], "when": values})
        with pytest.raises(DataError, match=r"column 'when' has dtype .* not categorical"):
            Dataset.from_pandas(frame)

    def test_unhashable_values(self):
        frame = pd.DataFrame({"a": pd.Series([[1], [2], [1]], dtype=object)})
        with pytest.raises(DataError, match=r"'a' holds unhashable values"):
            Dataset.from_pandas(frame)

    def test_constant_column_is_legal_but_warns(self):
        frame = pd.DataFrame({"a": [1, 2, 1], "same": ["k", "k", None]})
        with pytest.warns(UserWarning, match=r"column 'same' is constant"):
            data = Dataset.from_pandas(frame)
        assert data.cardinalities == (2, 1)
        assert data.labels[1] == ("k",)
        assert column(data, "same") == [0, 0, MISSING]

    def test_constant_categorical_warns_and_keeps_unused_categories(self):
        frame = pd.DataFrame(
            {"a": [1, 2, 1], "c": pd.Categorical(["u", "u", "u"], categories=["u", "v"])}
        )
        with pytest.warns(UserWarning, match=r"column 'c' is constant"):
            data = Dataset.from_pandas(frame)
        assert data.labels[1] == ("u", "v")


# ====================================================================== from_csv
class TestFromCsv:
    def write(self, tmp_path: Path, text: str, name: str = "data.csv") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    def test_text_numbers_and_missing(self, tmp_path):
        path = self.write(
            tmp_path,
            "colour,size,flag\n"
            "red,1,True\n"
            "blue,,False\n"
            ",2,True\n"
            "NA,3,\n"
            "red,2,False\n",
        )
        data = Dataset.from_csv(path)
        assert data.columns == ("colour", "size", "flag")
        assert data.labels == (("blue", "red"), (1, 2, 3), (False, True))
        assert column(data, "colour") == [1, 0, MISSING, MISSING, 1]
        assert column(data, "size") == [0, MISSING, 1, 2, 1]
        assert column(data, "flag") == [1, 0, 1, MISSING, 0]
        assert data.n_rows == 5
        check_patterns(data)

    def test_str_path_and_columns(self, tmp_path):
        path = self.write(tmp_path, "a,b,c\n1,x,5\n2,y,6\n1,y,5\n")
        data = Dataset.from_csv(str(path), columns=["c", "a"])
        assert data.columns == ("c", "a")
        assert data.codes.tolist() == [[0, 0], [1, 1], [0, 0]]

    def test_read_csv_keyword_arguments(self, tmp_path):
        path = self.write(tmp_path, "a;b\n1;x\n2;y\n")
        data = Dataset.from_csv(path, sep=";")
        assert data.columns == ("a", "b")

    def test_fully_missing_row_kept(self, tmp_path):
        path = self.write(tmp_path, "a,b\n1,x\n,\n2,y\nNA,NA\n")
        with pytest.warns(UserWarning, match="2 of 4 rows have no observed value"):
            data = Dataset.from_csv(path)
        assert data.n_rows == 4
        assert data.n_fully_missing == 2
        assert data.n_observed_rows == 2

    def test_missing_file(self, tmp_path):
        with pytest.raises(DataError, match=r"no such file.*nope\.csv"):
            Dataset.from_csv(tmp_path / "nope.csv")

    def test_directory_is_not_a_file(self, tmp_path):
        with pytest.raises(DataError, match="is a folder, not a CSV file"):
            Dataset.from_csv(tmp_path)

    @pytest.mark.parametrize("sep", [";", "\t", "|"])
    def test_delimiter_is_sniffed(self, tmp_path, sep):
        rows = [[str(i % 2), "xy"[i % 4 // 2] if i % 2 else "", str(i % 3)] for i in range(20)]
        path = self.write(tmp_path, "\n".join(sep.join(r) for r in [["a", "b", "c"], *rows]))
        data = Dataset.from_csv(path)
        assert data.columns == ("a", "b", "c") and data.n_rows == 20
        assert data.n_missing == {"a": 0, "b": 10, "c": 0}

    def test_commas_inside_a_semicolon_file_are_not_delimiters(self, tmp_path):
        path = self.write(tmp_path, "a;b\n1,5;x\n2,5;y\n1,5;y\n")
        data = Dataset.from_csv(path)
        assert data.columns == ("a", "b") and data.labels[0] == ("1,5", "2,5")

    def test_one_column_file_is_read_as_one_column(self, tmp_path):
        data = Dataset.from_csv(self.write(tmp_path, "a\n1\n2\n1\n"))
        assert data.columns == ("a",) and data.n_rows == 3

    @pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
    def test_non_utf8_file_is_read_with_a_warning(self, tmp_path, encoding):
        path = tmp_path / "accents.csv"
        path.write_bytes("région,sexe\nÎle,F\nNord,M\nÎle,M\n".encode(encoding))
        with pytest.warns(UserWarning, match=r"accents\.csv.*not UTF-8.*read as cp1252"):
            data = Dataset.from_csv(path)
        assert data.columns == ("région", "sexe")
        assert data.labels[0] == ("Nord", "Île")

    def test_utf8_with_byte_order_mark(self, tmp_path):
        path = tmp_path / "bom.csv"
        path.write_bytes("a,b\n1,é\n2,è\n".encode("utf-8-sig"))
        data = Dataset.from_csv(path)
        assert data.columns == ("a", "b") and data.labels[1] == ("è", "é")

    def test_given_encoding_that_does_not_decode_names_the_byte(self, tmp_path):
        path = tmp_path / "accents.csv"
        path.write_bytes("a,b\n1,é\n2,e\n".encode("latin-1"))
        with pytest.raises(DataError, match=r"not utf-8 text: byte 0xe9 at position 6.*latin-1"):
            Dataset.from_csv(path, encoding="utf-8")
        assert Dataset.from_csv(path, encoding="latin-1").labels[1] == ("e", "é")

    def test_unknown_encoding(self, tmp_path):
        path = self.write(tmp_path, "a\n1\n")
        with pytest.raises(DataError, match="unknown encoding 'klingon'"):
            Dataset.from_csv(path, encoding="klingon")

    def test_empty_file(self, tmp_path):
        path = self.write(tmp_path, "", "empty.csv")
        with pytest.raises(DataError, match=r"empty\.csv.*is empty"):
            Dataset.from_csv(path)

    def test_header_only(self, tmp_path):
        path = self.write(tmp_path, "a,b\n")
        with pytest.raises(DataError, match="no rows"):
            Dataset.from_csv(path)

    def test_unknown_column(self, tmp_path):
        path = self.write(tmp_path, "a,b\n1,2\n2,1\n")
        with pytest.raises(DataError, match=r"unknown column.*'c'"):
            Dataset.from_csv(path, columns=["a", "c"])

    def test_non_integer_column(self, tmp_path):
        path = self.write(tmp_path, "a,w\n1,0.5\n2,1.25\n")
        with pytest.raises(DataError, match=r"'w' has non-integer"):
            Dataset.from_csv(path)

    def test_max_categories(self, tmp_path):
        rows = "\n".join(f"{i % 2},{i}" for i in range(12))
        path = self.write(tmp_path, "a,id\n" + rows + "\n")
        with pytest.raises(DataError, match=r"'id' has 12 distinct values \(max_categories=5\)"):
            Dataset.from_csv(path, max_categories=5)
        assert Dataset.from_csv(path, columns=["a"], max_categories=5).n_rows == 12

    def test_carcinoma(self):
        data = Dataset.from_csv(data_csv("carcinoma.csv"))
        assert data.n_rows == 118
        assert data.columns == tuple("ABCDEFG")
        assert data.labels == ((1, 2),) * 7
        assert data.cardinalities == (2,) * 7
        assert data.n_patterns == 20
        assert data.n_missing == dict.fromkeys("ABCDEFG", 0)
        assert data.n_fully_missing == 0
        assert data.n_observed_rows == 118
        check_patterns(data)

    def test_election_ratings(self):
        data = Dataset.from_csv(data_csv("election.csv"), columns=ELECTION_RATINGS)
        assert data.n_rows == 1785  # no row dropped
        assert data.columns == tuple(ELECTION_RATINGS)
        assert data.cardinalities == (4,) * 12
        for labels in data.labels:
            assert all(isinstance(v, str) for v in labels)
            assert [v[0] for v in labels] == ["1", "2", "3", "4"]
        assert all(n > 0 for n in data.n_missing.values()), data.n_missing
        assert sum(data.n_missing.values()) == int((data.codes == MISSING).sum())
        assert data.n_observed_rows + data.n_fully_missing == 1785
        check_patterns(data)
        frame = pd.read_csv(data_csv("election.csv"))
        assert data.n_missing == frame[ELECTION_RATINGS].isna().sum().to_dict()

    def test_election_all_columns_refuses_continuous_age(self):
        with pytest.raises(DataError, match=r"column 'AGE' has \d+ distinct values.*bin"):
            Dataset.from_csv(data_csv("election.csv"))


# ============================================================ select / to_pandas / summary
class TestMethods:
    @pytest.fixture
    def data(self) -> Dataset:
        frame = pd.DataFrame(
            {
                "a": ["x", "y", "x", None, "y"],
                "b": [1, 1, 2, 2, 1],
                "c": [True, False, True, True, None],
            }
        )
        return Dataset.from_pandas(frame)

    def test_select_reorders_and_recomputes_patterns(self, data):
        sub = data.select(["c", "b"])
        assert sub.columns == ("c", "b")
        assert sub.labels == (data.labels[2], data.labels[1])
        np.testing.assert_array_equal(sub.codes, data.codes[:, [2, 1]])
        assert sub.n_rows == data.n_rows
        check_patterns(sub)
        one = data.select(["b"])
        assert one.n_patterns == 2
        assert one.counts.tolist() == [3.0, 2.0]

    def test_select_same_columns(self, data):
        assert data.select(list(data.columns)) is data

    def test_select_errors(self, data):
        with pytest.raises(DataError, match=r"unknown column.*'z'"):
            data.select(["a", "z"])
        with pytest.raises(DataError, match="duplicate"):
            data.select(["a", "a"])
        with pytest.raises(DataError, match="no columns"):
            data.select([])

    def test_to_pandas(self, data):
        frame = data.to_pandas()
        assert list(frame.columns) == ["a", "b", "c"]
        assert frame["a"].tolist() == ["x", "y", "x", None, "y"]
        assert frame["b"].tolist() == [1, 1, 2, 2, 1]
        assert frame["c"].tolist() == [True, False, True, True, None]

    def test_to_pandas_round_trip(self, data):
        again = Dataset.from_pandas(data.to_pandas())
        assert again.columns == data.columns
        assert again.labels == data.labels
        np.testing.assert_array_equal(again.codes, data.codes)

    def test_to_pandas_keeps_categorical_labels(self):
        frame = pd.DataFrame({"a": pd.Categorical(["hi", "lo"], categories=["lo", "mid", "hi"])})
        assert Dataset.from_pandas(frame).to_pandas()["a"].tolist() == ["hi", "lo"]

    def test_counts_match_pandas_value_counts(self, data):
        expected = sorted(data.to_pandas().value_counts(dropna=False).tolist())
        assert sorted(data.counts.tolist()) == expected

    def test_summary(self):
        frame = pd.DataFrame({"colour": ["red", None, "blue"], "size": [1, None, 2]})
        with pytest.warns(UserWarning, match="no observed value"):
            data = Dataset.from_pandas(frame)
        text = data.summary()
        assert "3 rows x 2 columns" in text
        assert "3 distinct patterns" in text
        assert "colour: 2 categories (blue, red), 1 missing" in text
        assert "size: 2 categories (1, 2), 1 missing" in text
        assert "1 rows have no observed value" in text

    def test_summary_truncates_long_label_lists(self):
        data = Dataset.from_pandas(pd.DataFrame({"a": range(10)}))
        line = data.summary().splitlines()[1]
        assert "a: 10 categories (0, 1, 2, 3, 4, 5, ...)" in line
        assert "missing" not in data.summary()

    def test_repr(self, data):
        text = repr(data)
        assert "n_rows=5" in text
        assert "['a', 'b', 'c']" in text
        assert "cardinalities=[2, 2, 2]" in text

    def test_labels_are_json_ready_python_scalars(self, data):
        json.dumps([list(lab) for lab in data.labels])
