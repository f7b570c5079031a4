"""Reading one sheet of an Excel workbook (``.xlsx``, ``.xlsm``, ``.xls``) into a DataFrame,
for :func:`lcbayes.csvfile.read_table`.

The sheet is the one given (by name, or by number from 0); else the only sheet that holds
cells. A workbook with data on several sheets is refused, listing them, rather than read from
its first sheet (which often holds notes). Duplicate column names are refused as in a CSV
file (pandas would rename them ``A.1``). Needs ``openpyxl``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd

from .errors import DataError

__all__ = ["read_workbook"]


def read_workbook(file: Path, name: str, sheet: str | int | None = None) -> pd.DataFrame:
    """One sheet of the Excel workbook ``file`` (``name`` in messages), read by pandas with
    ``openpyxl``: ``sheet``, or the only sheet that holds cells (module docstring)."""
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        raise DataError(f"reading the Excel workbook {name} needs openpyxl: pip install "
                        "openpyxl (or 'lcbayes[excel]'), or save the sheet as CSV") from None
    try:
        with pd.ExcelFile(file) as book:
            names = [str(n) for n in book.sheet_names]
            if sheet is None:
                filled = [n for n in names
                          if not pd.read_excel(book, sheet_name=n, header=None, nrows=2).empty]
                if len(filled) > 1:
                    raise DataError(
                        f"{name} has {len(filled)} sheets with data ({_listed(filled)}): choose "
                        f"one with --sheet NAME (sheet=NAME), e.g. --sheet {filled[0]!r}")
                sheet = filled[0] if filled else 0
            elif isinstance(sheet, str) and sheet not in names:
                raise DataError(f"{name} has no sheet {sheet!r}; its sheets are "
                                f"{_listed(names)}")
            elif isinstance(sheet, int) and not 0 <= sheet < len(names):
                raise DataError(f"{name} has {len(names)} sheets ({_listed(names)}); sheet "
                                f"{sheet} is not one of 0..{len(names) - 1}")
            header = [str(c) for c in pd.read_excel(book, sheet_name=sheet, header=None,
                                                    nrows=1).iloc[0]]
            dupes = sorted({c for c in header if header.count(c) > 1})
            if dupes:    # pandas would rename them A.1
                raise DataError(f"{name} has duplicate column names {dupes}: rename them so "
                                "each is unique")
            return pd.read_excel(book, sheet_name=sheet)
    except DataError:
        raise
    except (ValueError, IndexError, zipfile.BadZipFile, OSError) as exc:
        raise DataError(f"cannot read the Excel workbook {name}: {exc}") from None


def _listed(names: list[str]) -> str:
    """``names`` quoted and joined for a message."""
    return ", ".join(repr(n) for n in names)
