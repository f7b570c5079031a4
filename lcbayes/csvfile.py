"""Reading a CSV file of categorical data into a DataFrame (:meth:`lcbayes.Dataset.from_csv`).

* **Encoding**: the one given, else UTF-8 (with or without a byte-order mark), else
  Windows-1252, else Latin-1; a file that is not UTF-8 is read with a warning that says which
  encoding was used. A file that does not decode in a given encoding is an error naming the
  byte and suggesting another encoding.
* **Delimiter**: the one given, else sniffed among comma, semicolon, tab and bar from the first
  lines (a semicolon-separated file, as spreadsheets write in many locales, is read as such);
  a comma when the sniffing finds no delimiter that splits the header and the lines alike.
* A missing file, a folder, an empty file and an unparsable one each get one clear
  :class:`~lcbayes.DataError`.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path

import pandas as pd

from .errors import DataError

__all__ = ["DELIMITERS", "FALLBACK_ENCODINGS", "read_table"]

#: Encodings tried, in order, when none is given (Latin-1 decodes any bytes).
FALLBACK_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
#: Delimiters the sniffing chooses from.
DELIMITERS = ",;\t|"
#: Lines the delimiter is sniffed from.
_SNIFF_LINES = 50


def _decode(raw: bytes, name: str, encoding: str | None) -> str:
    if encoding is not None:
        try:
            return raw.decode(encoding)
        except LookupError:
            raise DataError(f"unknown encoding {encoding!r} for {name}; give e.g. utf-8, "
                            "cp1252 or latin-1") from None
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{name} is not {encoding} text: byte 0x{raw[exc.start]:02x} at position "
                f"{exc.start} does not decode; give its encoding (e.g. --encoding latin-1 or "
                "cp1252)") from None
    for candidate in FALLBACK_ENCODINGS:
        try:
            text = raw.decode(candidate)
        except UnicodeDecodeError:
            continue
        if candidate != FALLBACK_ENCODINGS[0]:
            warnings.warn(f"{name} is not UTF-8; it was read as {candidate} (give the encoding "
                          "to choose another, e.g. --encoding)", stacklevel=4)
        return text
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def _sniff(text: str) -> str:
    """The delimiter of the first lines (module docstring)."""
    lines = [line for line in text.splitlines()[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return ","
    try:
        sep = csv.Sniffer().sniff("\n".join(lines), delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","
    fields = [len(row) for row in csv.reader(lines, delimiter=sep)]
    consistent = fields[0] >= 2 and sum(f == fields[0] for f in fields) >= 0.9 * len(fields)
    return sep if consistent else ","


def read_table(path: str | Path, *, encoding: str | None = None, sep: str | None = None,
               **read_csv_kwargs) -> pd.DataFrame:
    """The CSV file at ``path`` as a DataFrame (module docstring); other keyword arguments go
    to :func:`pandas.read_csv`."""
    path = Path(path)
    name = repr(str(path))
    if path.is_dir():
        raise DataError(f"{name} is a folder, not a CSV file; give the file's path")
    if not path.is_file():
        raise DataError(f"no such file: {name}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {name}: {exc.strerror}") from None
    text = _decode(raw, name, encoding)
    try:
        return pd.read_csv(io.StringIO(text), sep=_sniff(text) if sep is None else sep,
                           **read_csv_kwargs)
    except pd.errors.EmptyDataError:
        raise DataError(f"{name} is empty: it needs a header row and data rows") from None
    except pd.errors.ParserError as exc:
        raise DataError(f"{name} is not a readable CSV file: {exc}") from None
