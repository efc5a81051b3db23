"""Reading an export file a batch of rows at a time, for :meth:`Memory.import_from`.

An export is one JSON object: its head fields (``format``, ``version``, ``user_id``, ...) and ``tables``,
each table a list of rows (:func:`chronomem.exports.write_export`).  A large user's export is tens of
megabytes, most of it vectors; :func:`json.load` would hold the whole of it as Python objects, several
times its size.  :class:`ExportReader` walks the object's structure itself and hands each value (a head
field, a row) to :meth:`json.JSONDecoder.raw_decode`, so the memory it takes is a batch of rows.

It reads exactly JSON, with the order an export is written in: the head before ``tables`` and the
tables in the order of :data:`chronomem.store.sql.TABLES` (rows refer to rows of earlier tables); a file
in another order (the same JSON with sorted keys) is read by :func:`any_order`, in a few passes.
Malformed input is a :class:`ValidationError` naming where (``data.tables.facts[12]``) and the byte.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from .errors import ValidationError
from .exports import unknown_table
from .limits import MAX_OTHER_WORDS, MAX_TEXT_CHARS
from .store.sql import TABLES

__all__ = ["ExportReader", "MAX_VALUE_CHARS", "OutOfOrder", "any_order"]

#: the longest single value (a row) read: a row at every column's limit, each character escaped as \\uXXXX
MAX_VALUE_CHARS = 6 * (MAX_OTHER_WORDS + 8) * (MAX_TEXT_CHARS + 1000)
READ_BYTES = 1 << 20
_WHITESPACE = " \t\n\r"
_decoder = json.JSONDecoder()


class OutOfOrder(ValidationError):
    """An export's tables, or its head, not in the order an export is written in: read from a file that can
    be read again, :func:`any_order` takes it."""


class ExportReader:
    """The head and then the rows of an export read from the binary file ``fp``.

    Call :meth:`head` first (it reads up to ``tables``), then iterate :meth:`batches` to the end:
    it reads the rows and then checks that nothing but whitespace follows the object.
    """

    def __init__(self, fp: IO[bytes], *, read_bytes: int = READ_BYTES) -> None:
        self._fp = fp
        self._read_bytes = read_bytes
        self._utf8 = codecs.getincrementaldecoder("utf-8-sig")("strict")  # a byte-order mark is skipped
        self._text = ""  # decoded and not yet consumed past self._pos
        self._pos = 0
        self._dropped_bytes = 0  # the UTF-8 length of the text consumed and dropped from the front
        self._eof = False
        self._keys: set[tuple[str, str]] = set()
        self._names: list[str] = []  # the tables read so far, in the file's order
        self._tail: dict[str, Any] = {}  # the object's fields after its tables
        self.has_tables = False

    # -- the object ----------------------------------------------------------------------------------
    def head(self) -> dict[str, Any]:
        """The object's fields before ``tables`` (all of them when it has none)."""
        self._skip()
        if self._pos >= len(self._text):
            raise ValidationError("data", None, "is empty: not a chronomem export")
        if self._peek("data") != "{":
            raise ValidationError("data", None, "not a chronomem export (one JSON object, as an export is written)")
        self._pos += 1
        head: dict[str, Any] = {}
        if self._peek("data") == "}":
            self._pos += 1
            return head
        while True:
            key = self._key("data")
            if key == "tables":
                self.has_tables = True
                return head
            head[key] = self._value(f"data.{key}")
            if not self._next_member("data"):
                return head

    def batches(self, size: int = 1000, *, only: str | None = None) -> Iterator[tuple[str, int, list[Any]]]:
        """``(table, index of its first row, rows)``, at most ``size`` rows each, in the file's order; the rows
        are JSON values as read (:mod:`chronomem.exports` checks them).  A table with no rows yields none.
        ``only``: that table's rows, the others read and passed over in any order (:func:`any_order`)."""
        if self.has_tables:
            yield from self._tables(size, only)
            while self._next_member("data"):  # fields after the tables: kept for layout(), small
                key = self._key("data")
                self._tail[key] = self._value(f"data.{key}")
        self._skip()
        if self._pos < len(self._text):
            raise self._error("data", "has more after the export's object")

    def layout(self) -> tuple[dict[str, Any], list[str]]:
        """Every field of the object but ``tables``, wherever it stands, and the names of the tables in the
        file's order: the whole file read and checked as JSON, its rows passed over one at a time."""
        head = self.head()
        for _ in self.batches(only=""):  # no table is called "": no row is kept
            pass
        return {**head, **self._tail}, list(self._names)

    def _tables(self, size: int, only: str | None = None) -> Iterator[tuple[str, int, list[Any]]]:
        if self._peek("data.tables") != "{":
            raise ValidationError("data.tables", type(self._value("data.tables")).__name__, "must be an object")
        self._pos += 1
        order = list(TABLES)
        last = -1  # the place in TABLES of the table read last
        if self._peek("data.tables") == "}":
            self._pos += 1
            return
        while True:
            table = self._key("data.tables")
            where = f"data.tables.{table}"
            if table not in TABLES:
                raise unknown_table(where)
            self._names.append(table)
            if only is not None:  # that table's rows; the others passed over, a row at a time
                for batch in self._rows(table, where, size if table == only else 1):
                    if table == only:
                        yield batch
            else:
                place = order.index(table)
                if place <= last:
                    raise OutOfOrder(where, None, f"comes after {order[last]}: an export lists its tables in the "
                                                  f"order {', '.join(TABLES)} (as chronomem export writes)")
                last = place
                yield from self._rows(table, where, size)
            if not self._next_member("data.tables"):
                return

    def _rows(self, table: str, where: str, size: int) -> Iterator[tuple[str, int, list[Any]]]:
        if self._peek(where) != "[":
            raise ValidationError(where, type(self._value(where)).__name__, "must be a list of rows")
        self._pos += 1
        count, batch = 0, []
        if self._peek(where) == "]":
            self._pos += 1
            return
        while True:
            batch.append(self._value(f"{where}[{count}]"))
            count += 1
            if len(batch) == size:
                yield table, count - size, batch
                batch = []
            c = self._peek(where)
            self._pos += 1
            if c == "]":
                break
            if c != ",":
                raise self._error(where, f"expected ',' or ']' after row {count - 1}, found {c!r}", back=1)
        if batch:
            yield table, count - len(batch), batch

    def _key(self, where: str) -> str:
        if self._peek(where) != '"':
            raise self._error(where, "expected a field name in double quotes")
        key: str = self._value(where)
        if (where, key) in self._keys:
            raise ValidationError(f"{where}.{key}", None, "appears twice")
        self._keys.add((where, key))
        self._expect(":", f"{where}.{key}", "expected ':' after the field name")
        return key

    def _next_member(self, where: str) -> bool:
        """Past the ',' before another member (True) or the '}' closing the object (False)."""
        c = self._peek(where)
        self._pos += 1
        if c == ",":
            return True
        if c == "}":
            return False
        raise self._error(where, f"expected ',' or '}}', found {c!r}", back=1)

    # -- values ----------------------------------------------------------------------------------------
    def _value(self, where: str) -> Any:
        """The JSON value at the next non-blank character, read whole: more of the file is read until it
        parses (a value never ends the input: its object's '}' follows)."""
        self._skip()
        while True:
            try:
                value, end = _decoder.raw_decode(self._text, self._pos)
            except json.JSONDecodeError as e:
                if self._eof:
                    raise ValidationError(where, None, f"is not valid JSON ({e.msg} at byte "
                                                       f"{self._byte(e.pos)})") from None
                self._grow(where)
                continue
            except RecursionError:
                raise ValidationError(where, None, "is nested too deeply") from None
            if end < len(self._text) or self._eof:
                self._pos = end
                return value
            self._grow(where)

    def _expect(self, char: str, where: str, problem: str) -> None:
        if self._peek(where) != char:
            raise self._error(where, problem)
        self._pos += 1

    def _peek(self, where: str) -> str:
        self._skip()
        if self._pos >= len(self._text):
            raise ValidationError(where, None, "is not valid JSON: the file ends inside the export")
        return self._text[self._pos]

    def _skip(self) -> None:
        text = self._text
        while True:
            pos = self._pos
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(text) or not self._read():
                return
            text = self._text

    # -- the file --------------------------------------------------------------------------------------
    def _read(self) -> bool:
        """Append more of the file to the text; False at its end."""
        if self._pos > len(self._text) // 2:  # drop what was consumed
            self._dropped_bytes += len(self._text[:self._pos].encode("utf-8"))
            self._text = self._text[self._pos:]
            self._pos = 0
        while not self._eof:
            chunk = self._fp.read(self._read_bytes)
            self._eof = not chunk
            try:
                text = self._utf8.decode(chunk, final=self._eof)
            except UnicodeDecodeError as e:
                raise ValidationError("data", None, f"is not UTF-8 text ({e.reason} near byte "
                                                    f"{self._byte(len(self._text)) + e.start})") from None
            if text:
                self._text += text
                return True
        return False

    def _grow(self, where: str) -> None:
        if len(self._text) - self._pos > MAX_VALUE_CHARS:  # broken JSON, or a value no export holds
            try:
                _decoder.raw_decode(self._text, self._pos)
                problem = "is not valid JSON"
            except json.JSONDecodeError as e:
                problem = f"is not valid JSON ({e.msg} at byte {self._byte(e.pos)})"
            raise ValidationError(where, None, f"{problem}, or longer than {MAX_VALUE_CHARS} characters, "
                                               "which no row of an export is")
        before = len(self._text) - self._pos
        while len(self._text) - self._pos == before:
            if not self._read():
                return

    def _byte(self, pos: int) -> int:
        """The file offset of the character at ``pos`` in the text."""
        return self._dropped_bytes + len(self._text[:pos].encode("utf-8"))

    def _error(self, where: str, problem: str, back: int = 0) -> ValidationError:
        return ValidationError(where, None, f"is not valid JSON: {problem} at byte {self._byte(self._pos - back)}")


def any_order(fp: IO[bytes], size: int = 1000) -> tuple[dict[str, Any], Iterator[tuple[str, int, list[Any]]]]:
    """The head and the batches of rows of an export whose head follows its tables, or whose tables are in
    another order: the same JSON with its keys sorted (``jq -S``, Go's encoding/json, a JSON column) is
    the same export.  ``fp`` must be seekable: one pass reads the layout, then one pass per table reads
    that table's rows, in the order rows refer to rows of earlier tables (:data:`TABLES`); the memory
    taken is still a batch's.  Checks what :class:`ExportReader` checks (duplicates, unknown tables,
    valid JSON), in the first pass."""
    start = fp.tell()
    whole = ExportReader(fp)
    head, names = whole.layout()
    if not whole.has_tables:
        raise ValidationError("data.tables", None, "missing or not a mapping")

    def batches() -> Iterator[tuple[str, int, list[Any]]]:
        for table in (t for t in TABLES if t in names):
            fp.seek(start)
            reader = ExportReader(fp)
            reader.head()
            yield from reader.batches(size, only=table)

    return head, batches()
