"""The public API: inputs, errors, isolation, forgetting, export/import, corrupt files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from chronomem import (ChronomemError, CorruptDatabaseError, Memory, NotFoundError, ValidationError)

U = "u1"
MAYA = {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"}


def test_readme_example(tmp_path: Path) -> None:
    with Memory(tmp_path / "memory.db") as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto",
                        "valid_from": "2018-01-01", "confidence": 0.9}], user_id="u1")
        mem.add_facts([{"subject": "Maya", "relation": "moved_to".replace("moved_to", "lives_in"),
                        "object": "Lisbon", "valid_from": "2021-03-01"}], user_id="u1")
        assert [f.object for f in mem.facts(user_id="u1", subject="Maya", relation="lives_in")] == ["Lisbon"]
        assert [f.object for f in mem.facts(user_id="u1", subject="Maya", as_of="2020-01-01")] == ["Porto"]
        assert [f.object for f in mem.history(user_id="u1", subject="Maya", relation="lives_in")] == \
            ["Porto", "Lisbon"]


def test_persistence_across_reopen(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        mem.add_facts([MAYA], user_id=U)
    with Memory(tmp_path / "m.db") as mem:
        assert [f.object for f in mem.facts(user_id=U)] == ["Porto"]


@pytest.mark.parametrize("bad, field", [
    ({"relation": "lives_in", "object": "Porto"}, "facts[0].subject"),
    ({"subject": "", "relation": "lives_in", "object": "Porto"}, "facts[0].subject"),
    ({"subject": "Maya", "relation": "  ", "object": "Porto"}, "facts[0].relation"),
    ({"subject": "Maya", "relation": "lives_in", "object": None}, "facts[0].object"),
    ({**MAYA, "valid_from": "last tuesday"}, "facts[0].valid_from"),
    ({**MAYA, "valid_to": "2017-01-01"}, "facts[0].valid_to"),
    ({**MAYA, "valid_to": "2018-01-01"}, "facts[0].valid_to"),
    ({**MAYA, "confidence": 1.5}, "facts[0].confidence"),
    ({**MAYA, "confidence": "high"}, "facts[0].confidence"),
    ({**MAYA, "intent": "GOSSIP"}, "facts[0].intent"),
    ({**MAYA, "origin": "derived"}, "facts[0].origin"),
    ({**MAYA, "colour": "blue"}, "facts[0].colour"),
    ({**MAYA, "source_ids": "m1"}, "facts[0].source_ids"),
    ({**MAYA, "object": "Por\x00to"}, "facts[0].object"),
])
def test_bad_fact_input_names_the_field_and_writes_nothing(mem: Memory, bad: dict, field: str) -> None:
    good = {"subject": "Rui", "relation": "likes", "object": "jazz"}
    with pytest.raises(ValidationError) as e:
        mem.add_facts([good, bad], user_id=U)
    assert e.value.field.replace("facts[1]", "facts[0]") == field
    assert field.split(".")[-1] in str(e.value)
    assert mem.history(user_id=U) == [] and mem.entities(user_id=U) == []


@pytest.mark.parametrize("user", [None, "", "   ", 42])
def test_user_id_is_required(mem: Memory, user) -> None:
    with pytest.raises(ValidationError, match="user_id"):
        mem.add_facts([MAYA], user_id=user)
    with pytest.raises(ValidationError, match="user_id"):
        mem.facts(user_id=user)


def test_facts_must_be_a_list(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="facts"):
        mem.add_facts(MAYA, user_id=U)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="list of fact dicts"):
        mem.add_facts("Maya lives in Porto", user_id=U)  # type: ignore[arg-type]


def test_bad_as_of(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="as_of"):
        mem.facts(user_id=U, as_of="yesterday-ish")


def test_failure_mid_batch_rolls_back(mem: Memory, monkeypatch) -> None:
    mem.add_facts([MAYA], user_id=U)

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(mem.store, "update_facts", boom)
    with pytest.raises(RuntimeError):
        mem.add_facts([{**MAYA, "object": "Lisbon", "valid_from": "2021-01-01"}], user_id=U)
    monkeypatch.undo()
    hist = mem.history(user_id=U)
    assert [(f.object, f.valid_to) for f in hist] == [("Porto", None)]
    assert {e.name for e in mem.entities(user_id=U)} == {"Maya", "Porto"}


def test_dates_accept_datetime_date_and_iso(mem: Memory) -> None:
    from datetime import date, datetime, timezone

    mem.add_facts([{**MAYA, "valid_from": date(2018, 1, 1)},
                   {"subject": "Maya", "relation": "lives_in", "object": "Lisbon",
                    "valid_from": datetime(2021, 3, 1, 12, tzinfo=timezone.utc)},
                   {"subject": "Maya", "relation": "lives_in", "object": "Braga",
                    "valid_from": "2023-01-01T10:00:00+02:00"}], user_id=U)
    h = mem.history(user_id=U)
    assert [f.valid_from.isoformat() for f in h] == [
        "2018-01-01T00:00:00+00:00", "2021-03-01T12:00:00+00:00", "2023-01-01T08:00:00+00:00"]


def test_tenant_isolation(mem: Memory) -> None:
    mem.add_facts([MAYA], user_id="alice")
    mem.add_facts([{**MAYA, "object": "Lisbon"}], user_id="bob")
    assert [f.object for f in mem.facts(user_id="alice")] == ["Porto"]
    assert [f.object for f in mem.facts(user_id="bob")] == ["Lisbon"]
    # entities are per user: bob's Maya is a different node, and closing is per user
    assert {e.id for e in mem.entities(user_id="alice")}.isdisjoint(e.id for e in mem.entities(user_id="bob"))
    fid = mem.facts(user_id="alice")[0].id
    with pytest.raises(NotFoundError):
        mem.forget(user_id="bob", fact_id=fid)
    assert mem.store.facts("bob", ids=[fid]) == []
    assert mem.store.search_facts_text("bob", "Porto") == []
    mem.forget(user_id="bob", everything=True)
    assert [f.object for f in mem.facts(user_id="alice")] == ["Porto"]


def test_adjacent_turns_stay_within_the_tenant(mem: Memory) -> None:
    """Two tenants with the same user id and session id: each sees only its own neighbouring turns."""
    from datetime import datetime, timezone

    from chronomem.model import Message
    other = mem.for_tenant("t2")
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for m, tag in ((mem, "a"), (other, "b")):
        m.store.ensure_session(U, "s1", started_at=when)
        m.store.add_messages(U, [Message(id=f"{tag}{i}", user_id=U, session_id="s1", speaker="Rui",
                                         text=f"{tag} {i}?", timestamp=when, recorded_at=when, seq=i)
                                 for i in range(2)])
    assert {k: v.id for k, v in mem.store.previous_messages(U, ["a1", "b1"]).items()} == {"a1": "a0"}
    assert {k: v.id for k, v in other.store.next_messages(U, ["a0", "b0"]).items()} == {"b0": "b1"}
    assert other.store.previous_messages(U, ["b1"])["b1"].user_id == U


def test_entity_resolution_case_and_alias(mem: Memory) -> None:
    mem.add_facts([{"subject": "New York City", "relation": "located_in", "object": "USA"}], user_id=U)
    mem.alias("New York City", "NYC", user_id=U)
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "nyc"}], user_id=U)
    [f] = mem.facts(user_id=U, subject="Maya")
    assert f.object == "New York City"  # canonical name = first spelling
    assert [x.object for x in mem.facts(user_id=U, subject="NYC")] == ["USA"]
    with pytest.raises(ValidationError, match="alias"):
        mem.alias("Maya", "nyc", user_id=U)


def test_forget_fact_reopens_what_it_closed(mem: Memory) -> None:
    mem.add_facts([MAYA], user_id=U)
    rep = mem.add_facts([{**MAYA, "object": "Lisbon", "valid_from": "2021-01-01"}], user_id=U)
    res = mem.forget(user_id=U, fact_id=rep.added[0].id)
    assert res.facts_deleted == 1 and res.reopened == 1
    [f] = mem.history(user_id=U)
    assert f.object == "Porto" and f.valid_to is None
    assert "Lisbon" not in {e.name for e in mem.entities(user_id=U)}
    assert mem.store.search_facts_text(U, "Lisbon") == []


def test_forget_drops_the_memoised_names_and_terms(mem: Memory) -> None:
    """Memos of name normalisation and term sets would keep forgotten words referenced in the process."""
    from chronomem.entities import normalize_name
    from chronomem.retrieve.scoring import _terms, stem

    mem.add_facts([{**MAYA, "object": "Rua Augusta 17"}], user_id=U)
    mem.search("Where does Maya live?", user_id=U)
    memos = (normalize_name, _terms, stem)
    assert [f.cache_info().currsize > 0 for f in memos] == [True] * 3  # type: ignore[attr-defined]
    mem.forget(user_id=U, everything=True)
    assert [f.cache_info().currsize for f in memos] == [0, 0, 0]  # type: ignore[attr-defined]


def test_forget_session_removes_its_facts_and_provenance(mem: Memory) -> None:
    from chronomem.model import Message
    from chronomem.timeutil import utcnow

    now = utcnow()
    mem.store.ensure_session(U, "s1", started_at=now)
    mem.store.add_messages(U, [Message(id="m1", user_id=U, session_id="s1", speaker="Maya",
                                       text="I live in Porto", timestamp=now, recorded_at=now)])
    mem.add_facts([{**MAYA, "source_ids": ["m1"]},
                   {"subject": "Maya", "relation": "likes", "object": "jazz", "source_ids": ["m1", "m2"]}],
                  user_id=U)
    res = mem.forget(user_id=U, session_id="s1")
    assert res.facts_deleted == 1 and res.messages_deleted == 1
    [f] = mem.history(user_id=U)
    assert f.object == "jazz" and f.source_ids == ["m2"]
    assert mem.store.messages(U) == [] and mem.store.sessions(U) == []
    assert mem.store.search_messages_text(U, "Porto") == []


def test_forget_requires_exactly_one_target(mem: Memory) -> None:
    with pytest.raises(ValidationError):
        mem.forget(user_id=U)
    with pytest.raises(ValidationError):
        mem.forget(user_id=U, fact_id="x", everything=True)
    with pytest.raises(NotFoundError):
        mem.forget(user_id=U, session_id="nope")


def test_forget_everything_leaves_no_trace_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Xylophonia-7731"}], user_id=U)
        mem.store.put_vectors(U, "fact", [(mem.history(user_id=U)[0].id, [0.1] * 8)], "test")
        mem.forget(user_id=U, everything=True)
        assert mem.history(user_id=U) == [] and mem.entities(user_id=U) == []
        assert mem.store.knn(U, "fact", [0.1] * 8) == []
        mem.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("m.db"))
    assert b"Xylophonia-7731" not in raw


def test_export_import_round_trip_is_lossless(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db") as a:
        a.add_facts([MAYA, {**MAYA, "object": "Lisbon", "valid_from": "2021-01-01", "confidence": 0.8,
                            "source_ids": ["m1"], "text": "Maya moved to Lisbon"},
                     {"subject": "Maya", "relation": "owns", "object": "Vespa", "valid_to": "2020-01-01"}],
                    user_id=U)
        a.alias("Maya", "Maya S.", user_id=U)
        a.store.put_vectors(U, "entity", [(a.entities(user_id=U)[0].id, [0.5, 0.25, 0.125])], "test")
        exported = a.export(user_id=U)
    text = json.dumps(exported)
    with Memory(tmp_path / "b.db") as b:
        b.import_(json.loads(text))
        again = b.export(user_id=U)
        assert again["tables"] == exported["tables"]
        assert [f.object for f in b.facts(user_id=U, subject="maya s.")] == ["Lisbon"]
        b.import_(json.loads(text), user_id="u2")  # into another user
        assert [f.object for f in b.facts(user_id="u2", subject="Maya")] == ["Lisbon"]
        assert b.import_(json.loads(text))  # importing twice changes nothing
        assert b.export(user_id=U)["tables"] == exported["tables"]


@pytest.mark.parametrize("data, field", [
    ({}, "data.format"), ({"format": "other"}, "data.format"),
    ({"format": "chronomem.export", "version": 99}, "data.version"),
    ({"format": "chronomem.export", "version": 1, "user_id": "x"}, "data.tables"),
    ({"format": "chronomem.export", "version": 1, "tables": {}}, "user_id"),
    ({"format": "chronomem.export", "version": 1, "user_id": "x", "tables": {"notes": []}}, "data.tables.notes"),
    ({"format": "chronomem.export", "version": 1, "user_id": "x", "tables": {"facts": {}}}, "data.tables.facts"),
])
def test_import_rejects_foreign_data(mem: Memory, data, field: str) -> None:
    """The same refusal, naming the same field, from an export in memory and from its file."""
    with pytest.raises(ValidationError) as in_memory:
        mem.import_(data)
    with pytest.raises(ValidationError) as from_file:
        mem.import_from(io.BytesIO(json.dumps(data).encode()))
    assert in_memory.value.field == from_file.value.field == field


def test_corrupt_database_file_gives_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(CorruptDatabaseError, match="garbage.db"):
        Memory(bad)


def test_foreign_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    import sqlean

    path = tmp_path / "other.db"
    db = sqlean.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER)")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(CorruptDatabaseError, match="not a chronomem"):
        Memory(path)
    assert path.read_bytes() == before


def test_errors_share_one_base_class() -> None:
    assert issubclass(ValidationError, ChronomemError) and issubclass(CorruptDatabaseError, ChronomemError)


def test_full_text_search_over_facts_and_messages(mem: Memory) -> None:
    mem.add_facts([{**MAYA, "text": "Maya lives in Porto near the river"}], user_id=U)
    hits = mem.store.search_facts_text(U, "river porto")
    assert len(hits) == 1 and hits[0][0] == mem.history(user_id=U)[0].id


def test_a_version_1_database_is_migrated_in_place(tmp_path: Path) -> None:
    import sqlean

    from chronomem.store.sqlite import _migrations, _split_sql

    path = tmp_path / "old.db"
    db = sqlean.connect(path, isolation_level=None)
    for stmt in _split_sql(_migrations("sqlite")[0][1]):
        db.execute(stmt)
    db.execute("INSERT INTO chronomem_meta VALUES ('application', 'chronomem'), ('schema_version', '1')")
    db.close()
    with Memory(path) as mem:
        mem.add_facts([{**MAYA, "text": "near the river"}], user_id=U)
        assert [h[0] for h in mem.store.search_facts_text(U, "river")] == [mem.history(user_id=U)[0].id]
        version = mem.store._db.execute("SELECT value FROM chronomem_meta WHERE key = 'schema_version'")
        assert int(version.fetchone()[0]) == _migrations("sqlite")[-1][0]


def test_a_version_2_database_keeps_its_entities_aliases_and_facts(tmp_path: Path) -> None:
    """Migration 0003 rebuilds the entity tables WITHOUT ROWID and makes the session index partial."""
    import sqlean

    from chronomem.store.sqlite import _migrations, _split_sql

    path = tmp_path / "v2.db"
    db = sqlean.connect(path, isolation_level=None)
    for _, sql in _migrations("sqlite")[:2]:
        for stmt in _split_sql(sql):
            db.execute(stmt)
    db.execute("INSERT INTO chronomem_meta VALUES ('application', 'chronomem'), ('schema_version', '2')")
    db.execute("INSERT INTO entities VALUES (?, 'e1', 'New York City', 'place', 1), (?, 'e2', 'Maya', NULL, 1)",
               (U, U))
    db.execute("INSERT INTO entity_names VALUES (?, 'new york city', 'e1', 'New York City'), "
               "(?, 'nyc', 'e1', 'NYC'), (?, 'maya', 'e2', 'Maya')", (U, U, U))
    db.execute("INSERT INTO facts (user_id, id, subject_id, subject, relation, object_id, object, valid_from, "
               "confidence, intent, origin, recorded_at, session_id) VALUES "
               "(?, 'f1', 'e2', 'Maya', 'lives_in', 'e1', 'New York City', 0, 1.0, 'FACT', 'imported', 1, 's1')",
               (U,))
    db.execute("INSERT INTO facts_fts (rowid, text) SELECT rowid, subject || ' ' || replace(relation, '_', ' ') "
               "|| ' ' || object || ' ' || text FROM facts")
    db.close()
    with Memory(path) as mem:
        version = mem.store._db.execute("SELECT value FROM chronomem_meta WHERE key = 'schema_version'")
        assert int(version.fetchone()[0]) == _migrations("sqlite")[-1][0]
        assert [(e.id, e.name, e.type, e.aliases) for e in mem.entities(user_id=U)] == [
            ("e1", "New York City", "place", ["NYC"]), ("e2", "Maya", None, [])]
        assert [f.id for f in mem.facts(user_id=U, subject="maya", object="NYC", as_of="2000-01-01")] == ["f1"]
        assert [f.id for f in mem.store.facts(U, session_id="s1")] == ["f1"]
        rep = mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "nyc",
                              "valid_from": "2020-01-01"}], user_id=U)
        assert rep.reinforced and not rep.added  # resolved through the migrated alias
        mem.forget(user_id=U, fact_id="f1")
        assert mem.entities(user_id=U) == [] and mem.store.search_facts_text(U, "maya") == []


def test_newer_schema_or_foreign_meta_is_refused(tmp_path: Path) -> None:
    from chronomem import StoreError

    path = tmp_path / "m.db"
    with Memory(path) as mem:
        mem.store._db.execute("UPDATE chronomem_meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer than this chronomem"):
        Memory(path)
    with Memory(tmp_path / "n.db") as mem:
        mem.store._db.execute("UPDATE chronomem_meta SET value = 'other' WHERE key = 'application'")
    with pytest.raises(CorruptDatabaseError, match="not a chronomem database"):
        Memory(tmp_path / "n.db")
