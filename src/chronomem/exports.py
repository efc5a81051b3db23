"""Checking the rows of an export as :meth:`Memory.import_` writes them, and writing an export.

An export's ``tables`` hold the store's rows as plain JSON (see
:meth:`Store.iter_user`).  Imported data is caller input like any other: every
row is checked against the schema (required columns, types, the limits of
:mod:`chronomem.limits`, enum values, well-formed intervals, no duplicate keys)
before the store sees it, so both stores accept exactly the same imports, and a
bad file is refused whole, naming the first bad field
(``data.tables.facts[3].valid_to``): the import's one transaction is rolled back
(:mod:`chronomem.importing`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import IO, Any

import numpy as np

from .errors import ValidationError
from .limits import MAX_ID_CHARS, MAX_LATER_STARTS, MAX_NAME_CHARS, MAX_OTHER_WORDS, MAX_TEXT_CHARS
from .model import Intent, Origin
from .registry import normalize_relation
from .store.sql import TABLE_KEYS, TABLES, TIME_COLS
from .timeutil import to_micros
from .validation import text_problem

__all__ = ["RowChecker", "unknown_table", "write_export"]

# the primary key of each table, after user_id (duplicates inside one import are refused)
KEYS = TABLE_KEYS
# NOT NULL columns besides user_id (which the import sets)
REQUIRED: dict[str, frozenset[str]] = {
    "sessions": frozenset({"id"}),
    "messages": frozenset({"id", "session_id", "seq", "speaker", "text", "ts", "recorded_at", "extracted"}),
    "entities": frozenset({"id", "name", "created_at"}),
    "entity_names": frozenset({"norm", "entity_id", "alias"}),
    "facts": frozenset({"id", "subject_id", "subject", "relation", "object_id", "object", "confidence",
                        "intent", "origin", "recorded_at", "source_ids", "text"}),
    "checkpoints": frozenset({"seq", "session_id", "memory", "created_at"}),
    "vectors": frozenset({"kind", "item_id", "model", "dim", "vec"}),
}
NAME_COLS = frozenset({"speaker", "name", "type", "norm", "alias", "subject", "relation", "object", "model",
                       "kind"})
ID_LIST_COLS = frozenset({"source_ids", "ended_by", "started_by", "text_from", "learned_from"})  # JSON lists of message ids
LATER_DATE_COLS = frozenset({"later_starts", "later_ends"})  # JSON lists of [date, recorded, [message ids]]
LONG_TEXT_COLS = frozenset({"text", "memory", "confirmations"}) | ID_LIST_COLS | LATER_DATE_COLS
# other_words holds up to MAX_OTHER_WORDS statements' words, each as long as a fact's text may be
COL_CHARS = {"other_words": MAX_OTHER_WORDS * (MAX_TEXT_CHARS + 1000)}
INT_COLS = TIME_COLS | {"seq", "extracted", "dim", "utc_offset", "start_guessed"}
INT32_COLS = frozenset({"seq", "dim"})  # the others are bounded tighter below
INTENTS = frozenset(i.value for i in Intent)
ORIGINS = frozenset(o.value for o in Origin)
VECTOR_KINDS = frozenset({"entity", "fact", "message"})
_BIG = 2**63 - 1
_FIRST_US = to_micros(datetime.min.replace(tzinfo=timezone.utc))  # what a stored time can be read back as
_LAST_US = to_micros(datetime.max.replace(tzinfo=timezone.utc))


def _string(where: str, v: Any, col: str) -> str:
    if not isinstance(v, str):
        raise ValidationError(where, v, "must be a string")
    limit = COL_CHARS.get(col) or (MAX_TEXT_CHARS if col in LONG_TEXT_COLS else MAX_NAME_CHARS if col in NAME_COLS
                                   else MAX_ID_CHARS)
    problem = text_problem(v, limit)
    if problem:
        raise ValidationError(where, v[:40], problem)
    if col not in LONG_TEXT_COLS and col not in COL_CHARS and not v.strip():
        raise ValidationError(where, v, "must not be empty")
    return v


def _finite_numbers(v: Sequence[Any]) -> bool:
    """Every item a finite int or float, not a bool.  A vector's items as JSON reads them (plain floats and
    ints) are checked at once by numpy: an import of 30,000 vectors checked 11 million floats one by one."""
    if set(map(type, v)) <= {float, int}:
        try:
            return bool(np.isfinite(np.fromiter(v, dtype=np.float64, count=len(v))).all())
        except OverflowError:  # an int beyond any float
            return False
    return all(not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) for x in v)


def _value(table: str, col: str, v: Any, where: str) -> Any:
    if col in INT_COLS:
        if isinstance(v, bool) or not isinstance(v, int) or not -_BIG <= v <= _BIG:
            raise ValidationError(where, v, "must be an integer" + (" (microseconds since the epoch)"
                                                                   if col in TIME_COLS else ""))
        if col in TIME_COLS and not _FIRST_US <= v <= _LAST_US:
            raise ValidationError(where, v, "out of range: a time must fall between the years 1 and 9999")
        if col in INT32_COLS and not -2**31 <= v < 2**31:  # PostgreSQL's integer columns
            raise ValidationError(where, v, "out of range: must fit in 32 bits (-2147483648 to 2147483647)")
        if col == "start_guessed" and v != 1:
            raise ValidationError(where, v, "must be 1 (the start was inferred) or null")
        if col == "extracted" and v not in (-1, 0, 1):
            raise ValidationError(where, v, "must be -1 (failed), 0 (pending) or 1 (done)")
        if col == "utc_offset" and not -1440 < v < 1440:
            raise ValidationError(where, v, "must be a UTC offset in minutes, between -1439 and 1439")
        if col == "dim" and v < 1:
            raise ValidationError(where, v, "must be at least 1")
        return v
    if col == "confidence":
        if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v) or not 0.0 <= v <= 1.0:
            raise ValidationError(where, v, "must be a number between 0 and 1")
        return float(v)
    if col == "vec":
        if not isinstance(v, Sequence) or isinstance(v, str | bytes) or not v or not _finite_numbers(v):
            raise ValidationError(where, v if not isinstance(v, Sequence) else f"{type(v).__name__}[{len(v)}]",
                                  "must be a non-empty list of finite numbers")
        return list(v)
    s = _string(where, v, col)
    if col == "intent" and s not in INTENTS:
        raise ValidationError(where, s, f"must be one of {sorted(INTENTS)}")
    if col == "origin" and s not in ORIGINS:
        raise ValidationError(where, s, f"must be one of {sorted(ORIGINS)}")
    if col == "relation" and not _relation_name(s):
        raise ValidationError(where, s, "must be a relation name as chronomem writes one: lowercase words "
                              "joined by _, like lives_in")
    if col == "kind" and table == "vectors" and s not in VECTOR_KINDS:
        raise ValidationError(where, s, f"must be one of {sorted(VECTOR_KINDS)}")
    if col in ID_LIST_COLS:
        try:
            ids = json.loads(s)
        except json.JSONDecodeError:
            ids = None
        if not isinstance(ids, list) or not all(isinstance(i, str) and not text_problem(i, MAX_ID_CHARS)
                                                for i in ids):
            raise ValidationError(where, s[:40], "must be a JSON list of message ids")
        if col == "learned_from" and not ids:  # every forget would read it as "all its turns forgotten"
            raise ValidationError(where, s, "must name at least one message id (null: a name given by hand)")
    if col == "confirmations" and not _confirmations(s):
        raise ValidationError(where, s[:40], "must be a JSON list of [confidence, [message ids]] pairs, "
                              "at least two, each confidence between 0 and 1")
    if col in LATER_DATE_COLS and not _later_dates(s):
        raise ValidationError(where, s[:40], f"must be a JSON list of at most {MAX_LATER_STARTS} [date, recorded, "
                              "[message ids]] triples, the times in microseconds since the epoch, in order of date")
    if col == "other_words" and not _other_words(s):
        raise ValidationError(where, s[:40], f"must be a JSON list of at most {MAX_OTHER_WORDS} "
                              "[[message ids], words] pairs, each with words")
    return s


def _relation_name(s: str) -> bool:
    """Is ``s`` a relation's name as the registry normalises one (``"Lives In"`` is not: ``lives_in`` is)?
    Any other spelling is stored as given, where no query by the relation's name would find it."""
    try:
        return normalize_relation(s) == s
    except ValidationError:  # nothing left of it ("!!")
        return False


def _other_words(s: str) -> bool:
    """Is ``s`` a fact's other statements' words as chronomem writes them (chronomem.temporal.keep_words)?"""
    try:
        pairs = json.loads(s)
    except json.JSONDecodeError:
        return False
    return isinstance(pairs, list) and 0 < len(pairs) <= MAX_OTHER_WORDS and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], list) and isinstance(p[1], str)
        and p[1].strip() != "" and not text_problem(p[1], MAX_TEXT_CHARS)
        and all(isinstance(i, str) and not text_problem(i, MAX_ID_CHARS) for i in p[0]) for p in pairs)


def _later_dates(s: str) -> bool:
    """Is ``s`` a fact's later starts or ends as chronomem writes them (chronomem.temporal.keep_later_dates)?"""
    try:
        dates = json.loads(s)
    except json.JSONDecodeError:
        return False

    def instant(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and _FIRST_US <= v <= _LAST_US

    return isinstance(dates, list) and 0 < len(dates) <= MAX_LATER_STARTS and all(
        isinstance(d, list) and len(d) == 3 and instant(d[0]) and instant(d[1]) and isinstance(d[2], list)
        and all(isinstance(i, str) and not text_problem(i, MAX_ID_CHARS) for i in d[2]) for d in dates) and all(
        a[0] < b[0] for a, b in zip(dates, dates[1:]))


def _confirmations(s: str) -> bool:
    """Is ``s`` a fact's confirmations as chronomem writes them (chronomem.temporal.confirm)?"""
    try:
        pairs = json.loads(s)
    except json.JSONDecodeError:
        return False
    return isinstance(pairs, list) and len(pairs) >= 2 and all(
        isinstance(p, list) and len(p) == 2 and not isinstance(p[0], bool) and isinstance(p[0], int | float)
        and 0.0 <= p[0] <= 1.0 and isinstance(p[1], list)
        and all(isinstance(i, str) and not text_problem(i, MAX_ID_CHARS) for i in p[1]) for p in pairs)


def _row(table: str, cols: tuple[str, ...], d: Any, where: str) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise ValidationError(where, type(d).__name__, "each row must be an object")
    unknown = sorted(set(d) - set(cols))
    if unknown:
        raise ValidationError(f"{where}.{unknown[0]}", d[unknown[0]],
                              f"unknown column; {table} has {', '.join(cols)}")
    out: dict[str, Any] = {}
    for col in cols[1:]:  # cols[0] is user_id: the import sets it
        v = d.get(col)
        if v is None:
            if col in REQUIRED[table]:
                raise ValidationError(f"{where}.{col}", None, "is required")
            out[col] = None
        else:
            out[col] = _value(table, col, v, f"{where}.{col}")
    if table == "vectors" and len(out["vec"]) != out["dim"]:
        raise ValidationError(f"{where}.dim", out["dim"], f"does not match the vector's length {len(out['vec'])}")
    if table == "facts":
        _interval(out, where)
        _later_dates_inside(out, where)
    return out


def _later_dates_inside(f: dict[str, Any], where: str) -> None:
    """A fact's later starts lie inside its interval, after its start; its later ends after its stated end."""
    start, end = f["valid_from"], f["valid_to"] or f["stated_to"]
    for d in json.loads(f["later_starts"]) if f["later_starts"] else []:
        if (start is not None and d[0] <= start) or (end is not None and d[0] >= end):
            raise ValidationError(f"{where}.later_starts", d[0], "must lie after valid_from and before valid_to")
    for d in json.loads(f["later_ends"]) if f["later_ends"] else []:
        if f["stated_to"] is None or d[0] <= f["stated_to"]:
            raise ValidationError(f"{where}.later_ends", d[0], "must lie after stated_to (a later end of a stated end)")


def _interval(f: dict[str, Any], where: str) -> None:
    start, end = f["valid_from"], f["valid_to"]
    if start is None or end is None or end > start:
        return
    if end == start and f["closed_by"] is not None:
        # written by chronomem before the tie rule: that fact was superseded (chronomem.temporal)
        f["valid_to"] = None
        return
    raise ValidationError(f"{where}.valid_to", end, f"must be after valid_from ({start})")


def unknown_table(where: str) -> ValidationError:
    return ValidationError(where, None, f"unknown table; an export has {', '.join(TABLES)}")


class RowChecker:
    """Checks an import's rows a batch at a time, in table order, refusing a key seen twice in the import."""

    def __init__(self, where: str = "data.tables") -> None:
        self.where = where
        self._seen: dict[str, set[tuple[Any, ...]]] = {table: set() for table in TABLES}

    def rows(self, table: str, start: int, rows: Any) -> list[dict[str, Any]]:
        """``rows`` of ``table``, the first being its row number ``start``, checked and normalised."""
        if table not in TABLES:
            raise unknown_table(f"{self.where}.{table}")
        where, cols, keys, seen = f"{self.where}.{table}", TABLES[table], KEYS[table], self._seen[table]
        if not isinstance(rows, Sequence) or isinstance(rows, str | bytes):
            raise ValidationError(where, type(rows).__name__, "must be a list of rows")
        checked = []
        for i, d in enumerate(rows, start):
            row = _row(table, cols, d, f"{where}[{i}]")
            key = tuple(row[k] for k in keys)
            if key in seen:
                raise ValidationError(f"{where}[{i}]", dict(zip(keys, key)), "duplicate key in this import")
            seen.add(key)
            checked.append(row)
        return checked


_compact = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def write_export(fp: IO[bytes], head: Mapping[str, Any], rows: Iterable[tuple[str, list[dict[str, Any]]]]
                 ) -> dict[str, int]:
    """Write an export to ``fp`` as compact UTF-8 JSON: ``head``'s fields, then ``tables``, each table's rows
    as ``rows`` yields them (a table's batches one after another, as :meth:`Store.iter_user` does), each row
    encoded and written on its own.  Returns the rows written per table."""
    fp.write(("{" + ",".join(f"{_compact(k)}:{_compact(v)}" for k, v in head.items()) + ',"tables":{').encode())
    counts: dict[str, int] = {}
    current: str | None = None
    for table, batch in rows:
        if table != current:
            if table in counts:
                raise ValueError(f"the rows of table {table!r} came in two runs")
            fp.write(f"{'' if current is None else '],'}{_compact(table)}:[".encode())
            current, counts[table] = table, 0
        for row in batch:
            fp.write((("," if counts[table] else "") + _compact(row)).encode())
            counts[table] += 1
    fp.write(b"]}}" if current is not None else b"}}")
    return counts
