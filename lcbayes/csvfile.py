"""Reading a CSV file of categorical data into a DataFrame (:meth:`lcbayes.Dataset.from_csv`).

* **Source**: a file path, or ``"-"`` for standard input (read once, kept in memory). Gzip,
  bzip2, xz and zip (one file inside) compression is recognised by the file's first bytes,
  whatever its name; an Excel workbook (``.xlsx``, ``.xlsm``, ``.xls``) is read by
  :func:`lcbayes.excelfile.read_workbook` (the sheet chosen, or the only one with data).
* **Encoding**: the one given, else UTF-32 or UTF-16 where the text starts with their byte-order
  mark, else UTF-8 (with or without a byte-order mark), else Windows-1252, else Latin-1; a file
  that is not UTF-8 is read with a warning that says which encoding was used. A file that does
  not decode in a given encoding is an error naming the byte and suggesting another encoding.
* **Text check**: a file that decodes to control characters (NUL and the others below a space,
  but tab, line feed and carriage return) is not a text table in that encoding and is refused
  with the line; so are duplicate column names (pandas would rename them ``A.1``) and rows
  with more or fewer fields than the header, named by their line numbers (``allow_ragged``
  reads the fields missing from short rows as missing values).
* **Delimiter**: the one given, else sniffed among comma, semicolon, tab and bar from the first
  lines (a semicolon-separated file, as spreadsheets write in many locales, is read as such);
  a comma when the sniffing finds no delimiter that splits the header and the lines alike.
* A delimiter that is not one character, or that leaves one column where another splits
  the header and rows alike (a wrong ``--sep``), is refused naming the one that fits.
* A trailing delimiter on every line (as some programs export) is read as the end of the
  row, not as an unnamed empty column.
* A missing file, a folder, an empty file and an unparsable one each get one clear
  :class:`~lcbayes.DataError`.

:func:`read_table` reads the whole file; :func:`table_format` finds the same encoding and
delimiter (and makes the same checks) holding one block of the file at a time, and
:func:`read_chunks` then reads the file in chunks of rows (:func:`lcbayes.scan_file`, for files
bigger than memory).
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import csv
import functools
import gzip
import io
import itertools
import lzma
import re
import sys
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import pandas as pd

from . import missing_codes
from .errors import DataError
from .excelfile import read_workbook

__all__ = ["DELIMITERS", "EXCEL_SUFFIXES", "FALLBACK_ENCODINGS", "STDIN", "checked_path",
           "read_chunks", "read_header", "read_table", "table_format"]

#: Encodings tried, in order, when none is given (Latin-1 decodes any bytes).
FALLBACK_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
#: Delimiters the sniffing chooses from.
DELIMITERS = ",;\t|"
#: Lines the delimiter is sniffed from.
_SNIFF_LINES = 50
_BLOCK_BYTES = 1 << 18  # bytes read at a time where a file is read in blocks
#: The path that reads standard input.
STDIN = "-"
#: Suffixes read as Excel workbooks.
EXCEL_SUFFIXES = (".xlsx", ".xlsm", ".xls")
#: Compressed formats by their first bytes.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"PK\x03\x04", "zip"),
          (b"BZh", "bz2"))
#: Byte-order marks that name an encoding (UTF-32 before UTF-16: FF FE starts both).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
#: Characters no text table holds (all controls but tab, line feed and carriage return).
_CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]")
_LISTED_LINES = 5  # line numbers a ragged-rows error lists


def _encoding(read_blocks: Callable[[], Iterable[bytes]], name: str, encoding: str | None,
              stacklevel: int) -> str:
    """The encoding the bytes ``read_blocks()`` gives decode in (module docstring), decoding
    them one block at a time."""
    first = next(iter(read_blocks()), b"")
    marked = next((enc for bom, enc in _BOMS if first.startswith(bom)), None)
    candidates = (encoding,) if encoding is not None else (marked,) if marked else (
        FALLBACK_ENCODINGS)
    for candidate in candidates:
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
        if candidate not in (FALLBACK_ENCODINGS[0], marked) and encoding is None:
            warnings.warn(f"{name} is not UTF-8; it was read as {candidate} (give the encoding "
                          "to choose another, e.g. --encoding)", stacklevel=stacklevel)
        return candidate
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


class _Source(NamedTuple):
    """A table's bytes: ``name`` for messages, ``open()`` a fresh binary stream of them
    (decompressed), ``path`` the file (``None`` for standard input)."""

    name: str
    open: Callable[[], IO[bytes]]
    path: Path | None


@functools.cache
def _stdin_bytes() -> bytes:
    """Standard input, read once per process."""
    return sys.stdin.buffer.read()


def checked_path(path: str | Path) -> tuple[Path, str]:
    """``path`` as a :class:`~pathlib.Path` of a file, and its name for messages."""
    path = Path(path)
    name = repr(str(path))
    if path.is_dir():
        raise DataError(f"{name} is a folder, not a CSV file; give the file's path")
    if not path.is_file():
        raise DataError(f"no such file: {name}")
    return path, name


def _source(path: str | Path) -> _Source:
    """The bytes of ``path`` (module docstring: standard input, compression)."""
    if str(path) == STDIN:
        data = _stdin_bytes()
        name, raw, file = "standard input", (lambda: io.BytesIO(data)), None
    else:
        file, name = checked_path(path)
        raw = functools.partial(file.open, "rb")  # type: ignore[assignment]  # mypy misses "rb"
    try:
        with raw() as stream:
            head = stream.read(8)
    except OSError as exc:
        raise DataError(f"cannot read {name}: {exc.strerror}") from None
    kind = next((k for magic, k in _MAGIC if head.startswith(magic)), None)
    if kind == "bz2" and not head[3:4].isdigit():   # a text file may start with "BZh"
        kind = None
    if kind is None:
        return _Source(name, raw, file)
    if kind == "zip":
        return _Source(name, functools.partial(_zip_member, raw, name), file)
    openers: dict[str, Callable[[IO[bytes]], Any]] = {
        "gzip": lambda f: gzip.GzipFile(fileobj=f), "bz2": bz2.BZ2File, "xz": lzma.LZMAFile}
    opener = openers[kind]
    return _Source(name, lambda: opener(raw()), file)


def _zip_member(raw: Callable[[], IO[bytes]], name: str) -> IO[bytes]:
    """The one file of a zip archive, open."""
    archive = zipfile.ZipFile(raw())
    members = [m for m in archive.namelist() if not m.endswith("/")]
    if "xl/workbook.xml" in members:
        raise DataError(f"{name} is an Excel workbook: give it a name ending .xlsx, or save "
                        "the sheet as CSV")
    if len(members) != 1:
        raise DataError(f"{name} is a zip archive of {len(members)} files "
                        f"({', '.join(members[:5])}); it must hold exactly one CSV file")
    return archive.open(members[0])


@contextlib.contextmanager
def _read_errors(name: str) -> Iterator[None]:
    """Errors of reading or decompressing ``name`` as :class:`~lcbayes.DataError`."""
    try:
        yield
    except (EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as exc:
        raise DataError(f"cannot decompress {name}: {exc}") from None
    except OSError as exc:
        raise DataError(f"cannot read {name}: {exc.strerror or exc}") from None


def _blocks(source: _Source) -> Iterator[bytes]:
    """The bytes of ``source``, one block at a time."""
    with _read_errors(source.name), source.open() as stream:
        while block := stream.read(_BLOCK_BYTES):
            yield block


def _check_sep(sep: str | None) -> str | None:
    """``sep`` as one delimiter character (``"\\t"`` and ``"tab"`` meaning a tab), or a
    :class:`~lcbayes.DataError` saying what to give."""
    if sep is None:
        return None
    if not isinstance(sep, str):
        raise DataError(f"sep must be one character, got {type(sep).__name__}")
    if sep == "\\t" or sep.lower() == "tab":
        sep = "\t"
    if len(sep) != 1 or sep in "\"\r\n":
        raise DataError(f"the delimiter (--sep, sep=) must be one character other than a quote "
                        f"or a line break, got {sep!r}: give e.g. --sep ';' or --sep tab, or "
                        "leave it out to have it found")
    return sep


def _check_delimiter(text: str, name: str, sep: str) -> None:
    """Refuse a delimiter that leaves the table one column when another of
    :data:`DELIMITERS` splits its header and its first lines alike (a wrong ``--sep``)."""
    lines = [line for line in text.splitlines()[:_SNIFF_LINES] if line.strip()]
    if not lines or len(next(csv.reader(lines[:1], delimiter=sep))) != 1:
        return
    for other in DELIMITERS.replace(sep, ""):
        fields = [len(row) for row in csv.reader(lines, delimiter=other)]
        if fields[0] >= 2 and sum(f == fields[0] for f in fields) >= 0.9 * len(fields):
            shown = "tab" if other == "\t" else repr(other)
            raise DataError(
                f"{name} read with the delimiter {sep!r} is one column, {lines[0][:60]!r}, "
                f"but {shown} splits its header and rows into {fields[0]} columns alike: give "
                f"--sep {shown} (sep={other!r}), or leave it out to have it found")


def _check_text(lines: Iterable[str], name: str, sep: str, allow_ragged: bool) -> bool:
    """The text check of the module docstring over the decoded ``lines``: control
    characters, duplicate column names, rows with more or fewer fields than the header.
    Returns whether every row ends with an empty field the header does not name (a trailing
    delimiter on every line, as some programs export; pandas reads it with
    ``index_col=False``)."""
    def checked() -> Iterator[str]:
        for number, line in enumerate(lines, 1):
            if bad := _CONTROL.search(line):
                raise DataError(
                    f"{name} holds the control character {bad.group()!r} on line {number}: it "
                    "is not a text table in this encoding (a binary or spreadsheet file, or "
                    "UTF-16 without a byte-order mark: give --encoding utf-16-le)")
            yield line

    reader = csv.reader(checked(), delimiter=sep)
    header = next(reader, None)
    if header is None:
        return False
    named = _named(header)
    dupes = sorted({c for c in named if named.count(c) > 1})
    if dupes:
        raise DataError(f"{name} has duplicate column names {dupes}: rename them so each is "
                        "unique")
    long: list[int] = []
    short: list[int] = []
    trailing: list[int] = []    # lines one field longer than the header, that field empty
    rows = 0
    for fields in reader:
        if not fields:
            continue
        rows += 1
        if len(fields) == len(header) + 1 and fields[-1] == "":
            trailing.append(reader.line_num)
        elif len(fields) != len(header):
            (long if len(fields) > len(header) else short).append(reader.line_num)
    if len(trailing) < rows:    # not every line ends so: those lines are too long
        long = sorted(long + trailing)
    if long or (short and not allow_ragged):
        ragged = sorted(long + ([] if allow_ragged else short))
        listed = ", ".join(map(str, ragged[:_LISTED_LINES])) + (
            f" and {len(ragged) - _LISTED_LINES} more" if len(ragged) > _LISTED_LINES else "")
        fix = ("" if long else "; or read the fields missing from short rows as missing "
               "values with --allow-ragged (allow_ragged=True)")
        raise DataError(f"{name}: {len(ragged)} rows do not have the header's {len(header)} "
                        f"fields (lines {listed}): fix those rows{fix}")
    return rows > 0 and len(trailing) == rows


def _named(header: list[str]) -> list[str]:
    """The header without the empty names at its end (a trailing delimiter on every line)."""
    end = len(header)
    while end > 1 and header[end - 1].strip() == "":
        end -= 1
    return header[:end]


def _without_unnamed_empty(frame: pd.DataFrame, header: list[str]) -> pd.DataFrame:
    """``frame`` without the columns of the header's empty trailing names that hold no value
    (what a trailing delimiter on every line makes); a trailing column that holds values is
    kept, and refused later by its name."""
    drop = [frame.columns[i] for i in range(len(_named(header)), min(len(header),
                                                                      frame.shape[1]))
            if frame.iloc[:, i].isna().all()]
    return frame.drop(columns=drop)


def read_table(path: str | Path, *, encoding: str | None = None, sep: str | None = None,
               allow_ragged: bool = False, sheet: str | int | None = None,
               na_values: Iterable[Any] | None = None, **read_csv_kwargs) -> pd.DataFrame:
    """The CSV file (or Excel workbook) at ``path`` as a DataFrame (module docstring);
    ``na_values`` are further values read as missing (missing-value codes such as ``-99`` or
    ``.``, see :mod:`lcbayes.missing_codes`), ``sheet`` the sheet of a workbook (by name or
    number from 0); other keyword arguments go to :func:`pandas.read_csv`."""
    codes = missing_codes.as_strings(na_values)
    if str(path) != STDIN and Path(path).suffix.lower() in EXCEL_SUFFIXES:
        return missing_codes.mark_missing(read_workbook(*checked_path(path), sheet), codes)
    if sheet is not None:
        raise DataError(f"sheet= (--sheet) chooses a sheet of an Excel workbook; {str(path)!r} "
                        "is not one (its name does not end .xlsx, .xlsm or .xls)")
    sep = _check_sep(sep)
    source = _source(path)
    raw = b"".join(_blocks(source))
    text = raw.decode(_encoding(lambda: (raw,), source.name, encoding, stacklevel=4))
    sep = _sniff(text) if sep is None else sep
    _check_delimiter(text, source.name, sep)
    trailing = _check_text(io.StringIO(text, newline=""), source.name, sep, allow_ragged)
    header = next(csv.reader(io.StringIO(text, newline=""), delimiter=sep), [])
    options = {"index_col": False} if trailing else {}
    with _parse_errors(source.name):
        frame = pd.read_csv(io.StringIO(text), sep=sep, na_values=list(codes),
                            **options, **read_csv_kwargs)
    return _without_unnamed_empty(frame, header)


@contextlib.contextmanager
def _parse_errors(name: str) -> Iterator[None]:
    """pandas' errors of reading the file ``name`` as :class:`~lcbayes.DataError`."""
    try:
        yield
    except pd.errors.EmptyDataError:
        raise DataError(f"{name} is empty: it needs a header row and data rows") from None
    except (pd.errors.ParserError, ValueError) as exc:  # ValueError: a dtype not fitting
        raise DataError(f"{name} is not a readable CSV file: {exc}") from None


def _text(source: _Source, encoding: str) -> io.TextIOWrapper:
    """``source`` as text in ``encoding`` (lines as the file has them)."""
    return io.TextIOWrapper(source.open(), encoding=encoding, newline="")


def table_format(path: str | Path, *, encoding: str | None = None,
                 sep: str | None = None, allow_ragged: bool = False) -> tuple[str, str]:
    """The encoding and delimiter :func:`read_table` would use for the file at ``path``
    (the same warning for a file that is not UTF-8, the same checks), reading it one block at
    a time: the encoding and the rows are checked over the whole file, the delimiter sniffed
    from its first lines."""
    if str(path) != STDIN and Path(path).suffix.lower() in EXCEL_SUFFIXES:
        raise DataError(f"{str(path)!r} is an Excel workbook: read it whole (without "
                        "--chunk-rows), or save it as CSV")
    sep = _check_sep(sep)
    source = _source(path)
    chosen = _encoding(lambda: _blocks(source), source.name, encoding, stacklevel=4)
    with _read_errors(source.name), _text(source, chosen) as text:
        first = "".join(itertools.islice(text, _SNIFF_LINES))
    sep = _sniff(first) if sep is None else sep
    _check_delimiter(first, source.name, sep)
    with _read_errors(source.name), _text(source, chosen) as text:
        _check_text(text, source.name, sep, allow_ragged)
    return chosen, sep


def read_header(path: str | Path, *, encoding: str, sep: str) -> list[str]:
    """The column names of the CSV file at ``path`` (``encoding`` and ``sep`` from
    :func:`table_format`)."""
    source = _source(path)
    with _read_errors(source.name), _text(source, encoding) as text:
        header = next(csv.reader(text, delimiter=sep), None)
    if header is None:
        raise DataError(f"{source.name} is empty: it needs a header row and data rows")
    return _named(header)


def read_chunks(path: str | Path, chunk_rows: int, *, encoding: str, sep: str,
                **read_csv_kwargs) -> Iterator[pd.DataFrame]:
    """The CSV file at ``path`` as DataFrames of ``chunk_rows`` rows (the last one shorter),
    parsed as :func:`read_table` parses the whole file (``encoding`` and ``sep`` from
    :func:`table_format`); other keyword arguments go to :func:`pandas.read_csv`. A value
    that does not parse as a given ``dtype`` is a :class:`~lcbayes.DataError`."""
    source = _source(path)
    with _read_errors(source.name), _parse_errors(source.name), _text(
            source, encoding) as text, pd.read_csv(text, sep=sep, chunksize=chunk_rows,
                                                   engine="c", index_col=False,
                                                   **read_csv_kwargs) as reader:
        yield from reader
