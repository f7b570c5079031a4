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

:func:`read_table` reads the whole file; :func:`table_format` finds the same encoding and
delimiter holding one block of the file at a time, and :func:`read_chunks` then reads the file in
chunks of rows (:func:`lcbayes.scan_file`, for files bigger than memory).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pandas as pd

from .errors import DataError

__all__ = ["DELIMITERS", "FALLBACK_ENCODINGS", "read_chunks", "read_header", "read_table",
           "table_format"]

#: Encodings tried, in order, when none is given (Latin-1 decodes any bytes).
FALLBACK_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
#: Delimiters the sniffing chooses from.
DELIMITERS = ",;\t|"
#: Lines the delimiter is sniffed from.
_SNIFF_LINES = 50
#: Bytes read at a time where a file is read in blocks.
_BLOCK_BYTES = 1 << 18


def _encoding(read_blocks: Callable[[], Iterable[bytes]], name: str, encoding: str | None,
              stacklevel: int) -> str:
    """The encoding the bytes ``read_blocks()`` gives decode in (module docstring), decoding
    them one block at a time."""
    for candidate in (FALLBACK_ENCODINGS if encoding is None else (encoding,)):
        try:
            decoder = codecs.getincrementaldecoder(candidate)()
        except LookupError:
            raise DataError(f"unknown encoding {encoding!r} for {name}; give e.g. utf-8, "
                            "cp1252 or latin-1") from None
        fed = start = 0  # bytes given to the decoder; file position of what it decodes
        try:
            for block in itertools.chain(read_blocks(), [b""]):  # b"": the end
                start = fed - len(decoder.getstate()[0])  # it holds back a cut character
                decoder.decode(block, final=not block)
                fed += len(block)
        except UnicodeDecodeError as exc:
            if encoding is None:
                continue
            raise DataError(
                f"{name} is not {encoding} text: byte 0x{exc.object[exc.start]:02x} at position "
                f"{start + exc.start} does not decode; give its encoding (e.g. --encoding "
                "latin-1 or cp1252)") from None
        if candidate != FALLBACK_ENCODINGS[0] and encoding is None:
            warnings.warn(f"{name} is not UTF-8; it was read as {candidate} (give the encoding "
                          "to choose another, e.g. --encoding)", stacklevel=stacklevel)
        return candidate
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def _decode(raw: bytes, name: str, encoding: str | None) -> str:
    return raw.decode(_encoding(lambda: (raw,), name, encoding, stacklevel=5))


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


def _checked_path(path: str | Path) -> tuple[Path, str]:
    """``path`` as a :class:`~pathlib.Path` of a file, and its name for messages."""
    path = Path(path)
    name = repr(str(path))
    if path.is_dir():
        raise DataError(f"{name} is a folder, not a CSV file; give the file's path")
    if not path.is_file():
        raise DataError(f"no such file: {name}")
    return path, name


def read_table(path: str | Path, *, encoding: str | None = None, sep: str | None = None,
               **read_csv_kwargs) -> pd.DataFrame:
    """The CSV file at ``path`` as a DataFrame (module docstring); other keyword arguments go
    to :func:`pandas.read_csv`."""
    path, name = _checked_path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {name}: {exc.strerror}") from None
    text = _decode(raw, name, encoding)
    with _parse_errors(name):
        return pd.read_csv(io.StringIO(text), sep=_sniff(text) if sep is None else sep,
                           **read_csv_kwargs)


@contextlib.contextmanager
def _parse_errors(name: str) -> Iterator[None]:
    """pandas' errors of reading the file ``name`` as :class:`~lcbayes.DataError`."""
    try:
        yield
    except pd.errors.EmptyDataError:
        raise DataError(f"{name} is empty: it needs a header row and data rows") from None
    except (pd.errors.ParserError, ValueError) as exc:  # ValueError: a dtype not fitting
        raise DataError(f"{name} is not a readable CSV file: {exc}") from None


def table_format(path: str | Path, *, encoding: str | None = None,
                 sep: str | None = None) -> tuple[str, str]:
    """The encoding and delimiter :func:`read_table` would use for the file at ``path``
    (the same warning for a file that is not UTF-8), reading it one block at a time: the
    encoding is checked over the whole file, the delimiter sniffed from its first lines."""
    path, name = _checked_path(path)

    def read_blocks() -> Iterator[bytes]:
        try:
            with path.open("rb") as stream:
                while block := stream.read(_BLOCK_BYTES):
                    yield block
        except OSError as exc:
            raise DataError(f"cannot read {name}: {exc.strerror}") from None

    chosen = _encoding(read_blocks, name, encoding, stacklevel=4)
    if sep is None:
        head = b""
        for block in read_blocks():
            head += block
            if head.count(b"\n") > _SNIFF_LINES:
                break
        sep = _sniff(head.decode(chosen, errors="ignore"))
    return chosen, sep


def read_header(path: str | Path, *, encoding: str, sep: str) -> list[str]:
    """The column names of the CSV file at ``path`` (``encoding`` and ``sep`` from
    :func:`table_format`)."""
    path, name = _checked_path(path)
    with _parse_errors(name):
        return [str(c) for c in pd.read_csv(path, sep=sep, encoding=encoding, nrows=0).columns]


def read_chunks(path: str | Path, chunk_rows: int, *, encoding: str, sep: str,
                **read_csv_kwargs) -> Iterator[pd.DataFrame]:
    """The CSV file at ``path`` as DataFrames of ``chunk_rows`` rows (the last one shorter),
    parsed as :func:`read_table` parses the whole file (``encoding`` and ``sep`` from
    :func:`table_format`); other keyword arguments go to :func:`pandas.read_csv`. A value
    that does not parse as a given ``dtype`` is a :class:`~lcbayes.DataError`."""
    path, name = _checked_path(path)
    with _parse_errors(name), pd.read_csv(path, sep=sep, encoding=encoding,
                                          chunksize=chunk_rows, engine="c",
                                          **read_csv_kwargs) as reader:
        yield from reader
