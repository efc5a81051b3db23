"""Reading an export file a batch of rows at a time (chronomem.export_reader), and Memory.import_from's
rules for a file: its head before its tables and the tables in export order (or a file it can read again),
nothing but the object."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronomem import Memory, ValidationError
from chronomem import export_reader
from chronomem.export_reader import ExportReader

HEAD = {"format": "chronomem.export", "version": 1, "user_id": "u", "exported_at": "2026-12-07T00:00:00Z"}
TABLES = {"sessions": [{"id": "s"}],
          "messages": [{"id": f"m{i}", "text": "ünïcödé 😀 " * (i % 7), "seq": i} for i in range(23)],
          "facts": [{"id": f"f{i}", "confidence": 0.5 + i / 1000, "source_ids": json.dumps([f"m{i}"])}
                    for i in range(10)]}


def read(raw: bytes, *, read_bytes: int = 1 << 20, size: int = 1000) -> tuple[dict[str, Any], dict[str, list[Any]],
                                                                             list[tuple[str, int, int]]]:
    reader = ExportReader(io.BytesIO(raw), read_bytes=read_bytes)
    head = reader.head()
    tables: dict[str, list[Any]] = {}
    shape = []
    for table, start, rows in reader.batches(size):
        assert start == len(tables.setdefault(table, []))  # each batch says where in its table it starts
        tables[table] += rows
        shape.append((table, start, len(rows)))
    return head, tables, shape


@pytest.mark.parametrize("indent", [None, 1, "\t"])
@pytest.mark.parametrize("read_bytes", [1, 3, 64, 1 << 20])
def test_an_export_is_read_whole_whatever_its_layout_and_however_the_file_is_read(indent: Any,
                                                                                  read_bytes: int) -> None:
    raw = json.dumps({**HEAD, "tables": TABLES, "trailing": {"ignored": [1, 2]}}, indent=indent,
                     ensure_ascii=read_bytes == 3).encode()  # characters split across reads, or escaped
    head, tables, shape = read(raw, read_bytes=read_bytes, size=10)
    assert head == HEAD and tables == TABLES
    assert shape == [("sessions", 0, 1), ("messages", 0, 10), ("messages", 10, 10), ("messages", 20, 3),
                     ("facts", 0, 10)]


def test_a_number_cut_by_a_read_is_read_whole() -> None:
    for read_bytes in range(1, 12):
        head, _, _ = read(b'{"version":1234567,"user_id":true,"tables":{}}', read_bytes=read_bytes)
        assert head == {"version": 1234567, "user_id": True}


def test_an_object_without_tables_is_its_head() -> None:
    reader = ExportReader(io.BytesIO(b'\xef\xbb\xbf {"format": "x"} \n'))  # after a byte-order mark
    assert reader.head() == {"format": "x"} and not reader.has_tables
    assert list(reader.batches()) == []


@pytest.mark.parametrize("raw, field, words", [
    (b"", "data", "is empty"),
    (b" \n", "data", "is empty"),
    (b"[]", "data", "not a chronomem export"),
    (b'{"format": "x"', "data", "ends inside"),
    (b'{"format": "x"} {}', "data", "more after the export"),
    (b'{"format": "x",}', "data", "field name in double quotes"),
    (b'{"format" "x"}', "data.format", "expected ':'"),
    (b'{"format": "x", "format": "y"}', "data.format", "appears twice"),
    (b'{"format": nope}', "data.format", "not valid JSON"),
    (b'{"tables": []}', "data.tables", "must be an object"),
    (b'{"tables": {"notes": []}}', "data.tables.notes", "unknown table"),
    (b'{"tables": {"facts": [], "sessions": []}}', "data.tables.sessions", "comes after facts"),
    (b'{"tables": {"facts": [], "facts": []}}', "data.tables.facts", "appears twice"),
    (b'{"tables": {"facts": {"id": 1}}}', "data.tables.facts", "must be a list of rows"),
    (b'{"tables": {"facts": [{"id": 1},]}}', "data.tables.facts[1]", "not valid JSON"),
    (b'{"tables": {"facts": [{"id": 1} {"id": 2}]}}', "data.tables.facts", "expected ',' or ']' after row 0"),
    (b'{"tables": {"facts": [{"id": 1}, {"id": "\xff"}]}}', "data", "not UTF-8"),
    (b'{"tables": {"facts": [{"id": 1}, {"id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}}",
     "data.tables.facts[1]", "nested too deeply"),
])
def test_a_broken_file_is_refused_naming_where(raw: bytes, field: str, words: str) -> None:
    for read_bytes in (1, 1 << 20):
        with pytest.raises(ValidationError) as e:
            read(raw, read_bytes=read_bytes)
        assert (e.value.field, words in str(e.value)) == (field, True), str(e.value)


def test_the_byte_of_a_syntax_error_is_counted_in_the_file() -> None:
    bad = b' {"id": 1}'  # no comma before it
    raw = b'{"tables": {"messages": [' + b",".join([b'{"text": "\xc3\xa9"}'] * 5000) + bad + b"]}}"
    with pytest.raises(ValidationError) as e:
        read(raw, read_bytes=1000)
    assert f"at byte {raw.index(bad) + 1}" in str(e.value)


def test_a_value_longer_than_any_row_is_refused_without_reading_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_reader, "MAX_VALUE_CHARS", 100)
    raw = b'{"tables": {"facts": [{"text": "' + b"x" * 10_000  # never closed
    with pytest.raises(ValidationError, match="longer than 100 characters") as e:
        read(raw, read_bytes=16)
    assert e.value.field == "data.tables.facts[0]"
    broken = b'{"tables": {"facts": [{"id": 1 "x": 2}, ' + b'{"id": 3}, ' * 10_000  # a syntax error, then more
    with pytest.raises(ValidationError, match="Expecting ',' delimiter at byte 31") as e:
        read(broken, read_bytes=16)
    assert e.value.field == "data.tables.facts[0]"


def rows_of(mem: Memory, user: str) -> dict[str, list[dict[str, Any]]]:
    return {t: [{k: v for k, v in r.items() if k != "user_id"} for r in rows]
            for t, rows in mem.export(user_id=user)["tables"].items()}


class Pipe(io.RawIOBase):
    """A binary stream that cannot seek (a pipe, a socket, a request body read as it comes)."""

    def __init__(self, raw: bytes) -> None:
        self._inner = io.BytesIO(raw)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._inner.read(len(b))
        b[:len(data)] = data
        return len(data)


def test_import_from_reads_an_export_in_any_order_where_it_can_read_it_again(tmp_path: Any) -> None:
    """The same JSON with its keys sorted (``jq -S``, Go's encoding/json) puts ``tables`` before ``user_id``
    and ``version``, and checkpoints before sessions: it was refused as "unsupported export version"."""
    with Memory(tmp_path / "m.db", embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"},
                       {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2021-01-01"}],
                      user_id="u")
        mem.store.ensure_session("u", "s1")
        out = io.BytesIO()
        mem.export_to(out, user_id="u")
        data = json.loads(out.getvalue())
        data["tables"]["checkpoints"] = [{"seq": 1, "session_id": "s1", "memory": "M", "created_at": 0,
                                          "session_time": None}]  # refers to a session: read after sessions
        mem.import_(data, user_id="w")
        sorted_keys = json.dumps(data, sort_keys=True).encode()
        assert sorted_keys.index(b'"tables"') < sorted_keys.index(b'"version"')
        with pytest.raises(ValidationError, match="before its tables") as e:
            mem.import_from(Pipe(sorted_keys), user_id="v")  # a stream read once cannot be read in passes
        assert e.value.field == "data.format" and mem.export(user_id="v")["tables"]["facts"] == []
        assert mem.import_from(io.BytesIO(sorted_keys))["already_present"] > 0  # the export's own user
        assert mem.import_from(io.BytesIO(sorted_keys), user_id="v")["facts"] == 2
        assert rows_of(mem, "v") == rows_of(mem, "w") and rows_of(mem, "v")["checkpoints"]
        late = b'{"tables": {}, "format": "chronomem.export", "version": 2, "user_id": "u"}'
        with pytest.raises(ValidationError, match="unsupported export version") as e:
            mem.import_from(io.BytesIO(late))
        twice = b'{"tables": {"facts": []}, "format": "chronomem.export", "version": 1, "tables": {}}'
        with pytest.raises(ValidationError, match="appears twice"):
            mem.import_from(io.BytesIO(twice), user_id="x")
        out = io.BytesIO()
        mem.export_to(out, user_id="u")
        assert mem.import_from(Pipe(out.getvalue()), user_id="y")["facts"] == 2  # export order: one pass


def test_an_in_memory_store_dumps_through_its_one_connection() -> None:
    """A ``:memory:`` database has no second connection for a snapshot: its dump holds the store's own."""
    with Memory(":memory:", embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u")
        out = io.BytesIO()
        assert mem.export_to(out, user_id="u")["facts"] == 1
        assert mem.import_from(io.BytesIO(out.getvalue()), user_id="v")["facts"] == 1
        assert mem.export(user_id="v")["tables"]["facts"][0]["object"] == "Porto"


_EXPORT = json.dumps({**HEAD, "version": 1, "tables": {
    "sessions": [{"id": "s", "started_at": 0}],
    "messages": [{"id": "m1", "session_id": "s", "seq": 0, "speaker": "Maya", "text": "hi", "ts": 0,
                  "recorded_at": 0, "extracted": 1}],
    "entities": [{"id": "e1", "name": "Maya", "created_at": 0}, {"id": "e2", "name": "Porto", "created_at": 0}],
    "facts": [{"id": "f1", "subject_id": "e1", "subject": "Maya", "relation": "lives_in", "object_id": "e2",
               "object": "Porto", "confidence": 0.9, "intent": "FACT", "origin": "imported", "recorded_at": 0,
               "source_ids": "[\"m1\"]", "text": "Maya lives in Porto"}],
    "vectors": [{"kind": "entity", "item_id": "e1", "model": "m", "dim": 2, "vec": [0.5, -1.0]}]}}).encode()


@pytest.fixture(scope="module")
def fuzz_mem(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with Memory(tmp_path_factory.mktemp("fuzz") / "m.db", embedder=False) as mem:
        yield mem


def test_the_fuzz_seed_is_a_good_export(fuzz_mem: Memory) -> None:
    assert fuzz_mem.import_from(io.BytesIO(_EXPORT), user_id="seed")["facts"] == 1


@given(st.integers(0, len(_EXPORT)), st.integers(0, 40), st.binary(max_size=40))
def test_a_damaged_export_is_refused_by_name_or_imported_whole(fuzz_mem: Memory, at: int, cut: int,
                                                               junk: bytes) -> None:
    """Any damage to a file is a ValidationError (never another exception), and a refused import leaves the
    user without a row; what is still a valid export imports."""
    raw = _EXPORT[:at] + junk + _EXPORT[at + cut:]
    user = f"u{abs(hash((at, cut, junk)))}"
    try:
        fuzz_mem.import_from(io.BytesIO(raw), user_id=user)
    except ValidationError:
        assert not any(fuzz_mem.store.dump_user(user).values())
