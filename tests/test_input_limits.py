"""One set of input rules for both stores (issue #20 findings 4, 5 and 6).

Every case runs on SQLite and on the machine's PostgreSQL: what one store accepts the other
accepts too, bad input is a ValidationError naming the field (never a raw driver error),
imports are checked row by row and report exactly what they stored, and nothing is half-written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from chronomem import ChronomemError, Memory, StoreError, ValidationError
from chronomem.cli.store_admin import copy_memory
from chronomem.limits import MAX_ID_CHARS, MAX_NAME_BYTES, MAX_NAME_CHARS, MAX_TEXT_CHARS

U = "u1"
MAYA = {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"}


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def smem(kind: str, url_factory: Callable[[str], str]) -> Iterator[Memory]:
    with Memory(url_factory(kind)) as m:
        yield m


def exported(mem: Memory) -> dict[str, Any]:
    mem.add_facts([MAYA, {**MAYA, "object": "Lisbon", "valid_from": "2021-01-01"},
                   {"subject": "Maya", "relation": "likes", "object": "jazz", "text": "Maya loves jazz"}],
                  user_id=U)
    data = mem.export(user_id=U)
    mem.forget(user_id=U, everything=True)
    return data


# -- finding 4: imports are validated like any other input ---------------------------------------
@pytest.mark.parametrize("table, index, column, value, field", [
    ("facts", 2, "subject", None, "data.tables.facts[2].subject"),          # NOT NULL, swallowed by OR IGNORE
    ("facts", 0, "confidence", "high", "data.tables.facts[0].confidence"),
    ("facts", 1, "valid_to", 0, "data.tables.facts[1].valid_to"),           # before valid_from
    ("facts", 0, "intent", "GOSSIP", "data.tables.facts[0].intent"),
    ("facts", 0, "source_ids", "m1", "data.tables.facts[0].source_ids"),
    ("entities", 0, "name", "x" * (MAX_NAME_CHARS + 1), "data.tables.entities[0].name"),
    ("entities", 1, "created_at", "yesterday", "data.tables.entities[1].created_at"),
    ("facts", 0, "colour", "red", "data.tables.facts[0].colour"),
    ("facts", 1, "start_guessed", 2, "data.tables.facts[1].start_guessed"),
    ("facts", 1, "start_guessed", True, "data.tables.facts[1].start_guessed"),
    ("entity_names", 0, "learned_from", "[]", "data.tables.entity_names[0].learned_from"),  # no turn: all forgotten
    ("facts", 0, "other_words", '[["m1", "Maya lives in Porto"]]', "data.tables.facts[0].other_words"),
    ("facts", 0, "other_words", '[[["m1"], "  "]]', "data.tables.facts[0].other_words"),  # no words
    ("facts", 0, "other_words", "[]", "data.tables.facts[0].other_words"),  # null when there are none
    ("facts", 0, "other_words", json.dumps([[["m1"], "w"]] * 9), "data.tables.facts[0].other_words"),  # over 8
    ("facts", 0, "later_starts", "[[1, 2]]", "data.tables.facts[0].later_starts"),  # no turns
    ("facts", 0, "later_starts", '[[1, 2, ["m1"]], [1, 3, ["m2"]]]', "data.tables.facts[0].later_starts"),  # twice
    ("facts", 0, "later_ends", '[["2020", 2, ["m1"]]]', "data.tables.facts[0].later_ends"),  # no µs
    ("facts", 0, "later_ends", "[]", "data.tables.facts[0].later_ends"),  # null when there are none
    ("facts", 0, "later_starts", "[[1, 2, []]]", "data.tables.facts[0].later_starts"),  # before its valid_from
    ("facts", 0, "later_ends", "[[2, 3, []]]", "data.tables.facts[0].later_ends"),  # no stated end to follow
    ("facts", 0, "later_ends", json.dumps([[i, 0, []] for i in range(65)]), "data.tables.facts[0].later_ends"),
    ("facts", 0, "relation", "!!", "data.tables.facts[0].relation"),  # no name left: broke every search
    ("facts", 0, "relation", "Lives In", "data.tables.facts[0].relation"),  # stored so, found by no query
])
def test_a_bad_import_row_is_refused_by_name_and_nothing_is_written(smem: Memory, table: str, index: int,
                                                                    column: str, value: Any, field: str) -> None:
    data = exported(smem)
    data["tables"][table][index][column] = value
    with pytest.raises(ValidationError) as e:
        smem.import_(data)
    assert e.value.field == field
    assert not any(smem.store.dump_user(U).values()), "half-written"


def conversation_export(seq: int) -> dict[str, Any]:
    return {"format": "chronomem.export", "version": 1, "user_id": U, "tables": {
        "sessions": [{"id": "s1", "agent_id": None, "started_at": 0, "ended_at": None}],
        "messages": [{"id": "m1", "session_id": "s1", "agent_id": None, "seq": seq, "speaker": "Maya",
                      "text": "hello", "ts": 0, "recorded_at": 0, "extracted": 1, "utc_offset": None}],
        "checkpoints": [{"seq": seq, "session_id": "s1", "memory": "M", "created_at": 0, "session_time": None}]}}


@pytest.mark.parametrize("seq", [2**31, -2**31 - 1, 2**40])
def test_a_position_beyond_32_bits_is_refused_on_both_stores(smem: Memory, seq: int) -> None:
    """SQLite stored it and PostgreSQL's integer column refused it as a StoreError."""
    with pytest.raises(ValidationError) as e:
        smem.import_(conversation_export(seq))
    assert e.value.field == "data.tables.messages[0].seq"
    assert not any(smem.store.dump_user(U).values()), "half-written"
    assert smem.import_(conversation_export(2**31 - 1))["messages"] == 1


def test_a_relation_synonym_is_imported_as_what_it_means_and_placed_in_time(smem: Memory) -> None:
    """An export whose facts say ``resides_in`` (a synonym this memory's registry maps to ``lives_in``):
    stored as ``lives_in``, found by that name, closed by a later move and closing an earlier home."""
    data = exported(smem)  # Porto from 2018, closed by Lisbon from 2021
    for row in data["tables"]["facts"]:
        if row["object"] == "Porto":
            row["relation"], row["valid_to"], row["closed_by"] = "resides_in", None, None
    smem.import_(data)
    assert [(f.relation, f.object, f.valid_to is None) for f in smem.history(user_id=U, relation="lives_in")] == [
        ("lives_in", "Porto", False), ("lives_in", "Lisbon", True)]
    assert smem.history(user_id=U, relation="resides_in") == smem.history(user_id=U, relation="lives_in")


def test_import_reports_exactly_what_it_stored(smem: Memory) -> None:
    data = exported(smem)
    rows = {t: len(r) for t, r in data["tables"].items()}
    assert smem.import_(copy.deepcopy(data)) == {**rows, "already_present": 0}
    again = smem.import_(copy.deepcopy(data))
    assert again == {**{t: 0 for t in rows}, "already_present": sum(rows.values())}
    assert smem.export(user_id=U)["tables"] == data["tables"]


@pytest.mark.parametrize("vec", [[0.5, float("nan")], [0.5, float("inf")], [True, 0.5], [0.5, "0.5"], [0.5, None],
                                 [10**400, 0.5], [], "0.5,0.5", {"0": 0.5}])
def test_a_vector_that_is_not_finite_numbers_is_refused(smem: Memory, vec: Any) -> None:
    data = exported(smem)
    good = {"kind": "fact", "item_id": data["tables"]["facts"][0]["id"], "model": "m", "dim": 2, "vec": [0.5, -1]}
    data["tables"]["vectors"] = [good, {**good, "item_id": data["tables"]["facts"][1]["id"], "vec": vec,
                                        "dim": max(len(vec), 1)}]
    with pytest.raises(ValidationError, match="finite numbers") as e:
        smem.import_(copy.deepcopy(data))
    assert e.value.field == "data.tables.vectors[1].vec"
    assert not any(smem.store.dump_user(U).values())
    data["tables"]["vectors"][1].update(vec=[np.float64(0.25), 1], dim=2)  # a float subclass (numpy's), an int
    smem.import_(data)
    assert sorted(r["vec"] for r in smem.store.dump_user(U)["vectors"]) == [[0.25, 1.0], [0.5, -1.0]]


def test_duplicate_keys_and_unknown_tables_are_refused(smem: Memory) -> None:
    data = exported(smem)
    data["tables"]["facts"].append(dict(data["tables"]["facts"][0]))
    with pytest.raises(ValidationError, match="duplicate key"):
        smem.import_(copy.deepcopy(data))
    data["tables"]["facts"].pop()
    data["tables"]["secrets"] = []
    with pytest.raises(ValidationError) as e:
        smem.import_(data)
    assert e.value.field == "data.tables.secrets"
    assert not any(smem.store.dump_user(U).values())


# -- finding 5: unencodable text and NUL stop at the edge; driver errors are wrapped ----------------
@pytest.mark.parametrize("call, field", [
    (lambda m: m.add_facts([{**MAYA, "subject": "Ma\ud800ya"}], user_id=U), "facts[0].subject"),
    (lambda m: m.add_facts([{**MAYA, "text": "bad \udfff text"}], user_id=U), "facts[0].text"),
    (lambda m: m.add_facts([{**MAYA, "source_ids": ["m\x001"]}], user_id=U), "facts[0].source_ids[0]"),
    (lambda m: m.add_facts([MAYA], user_id="u\ud800"), "user_id"),
    (lambda m: m.add_facts([MAYA], user_id="u\x001"), "user_id"),
    (lambda m: m.facts(user_id=U, subject="Ma\x00ya"), "subject"),
    (lambda m: m.facts(user_id=U, object="Por\ud800to"), "object"),
    (lambda m: m.history(user_id=U, subject="\udc80"), "subject"),
    (lambda m: m.export(user_id="\ud800"), "user_id"),
])
def test_unstorable_text_is_a_validation_error_naming_the_field(smem: Memory, call, field: str) -> None:
    smem.add_facts([MAYA], user_id=U)
    before = smem.store.dump_user(U)
    with pytest.raises(ValidationError) as e:
        call(smem)
    assert e.value.field == field
    assert smem.store.dump_user(U) == before


def test_a_driver_error_below_the_edge_is_a_store_error_not_a_raw_one(smem: Memory, kind: str) -> None:
    """The store interface trusts its caller, but whatever the driver refuses comes back wrapped."""
    smem.add_facts([MAYA], user_id=U)
    fid = smem.history(user_id=U)[0].id
    for bad in ([123], ["a\x00b"], ["\ud800"]):  # PostgreSQL refuses all three; SQLite finds nothing
        try:
            assert smem.store.facts(U, ids=bad) == []  # type: ignore[arg-type]
        except ChronomemError:
            pass  # wrapped: StoreError (any other exception fails the test)
    with pytest.raises(StoreError):  # a duplicate key below the graph writer
        smem.store.insert_facts(U, [smem.history(user_id=U)[0]])
    assert [f.id for f in smem.history(user_id=U)] == [fid]


# -- finding 6: one set of limits, so every memory can be copied between stores ----------------------
@pytest.mark.parametrize("fact, field", [
    ({**MAYA, "subject": "M" * (MAX_NAME_CHARS + 1)}, "facts[0].subject"),
    ({**MAYA, "object": "P" * 10_000_000}, "facts[0].object"),
    ({**MAYA, "text": "t" * (MAX_TEXT_CHARS + 1)}, "facts[0].text"),
    ({**MAYA, "id": "f" * (MAX_ID_CHARS + 1)}, "facts[0].id"),
    ({**MAYA, "session_id": "s\x00"}, "facts[0].session_id"),
])
def test_the_same_limits_hold_on_both_stores(smem: Memory, fact: dict, field: str) -> None:
    with pytest.raises(ValidationError) as e:
        smem.add_facts([fact], user_id=U)
    assert e.value.field == field and "limit" in e.value.reason or "NUL" in e.value.reason


@pytest.mark.parametrize("fact, field", [
    ({**MAYA, "source_ids": [None, 5, ""]}, "facts[0].source_ids[0]"),   # stored as "None", "5", "" before
    ({**MAYA, "source_ids": ["m1", "  "]}, "facts[0].source_ids[1]"),
    ({**MAYA, "source_ids": {"m1": "x"}}, "facts[0].source_ids"),         # a dict's keys before
    ({**MAYA, "id": "   "}, "facts[0].id"),                               # ignored before: a new id
    ({**MAYA, "session_id": ""}, "facts[0].session_id"),
    ({**MAYA, "subject": float("nan")}, "facts[0].subject"),              # stored as "nan" before
])
def test_a_value_that_is_not_what_the_field_holds_is_refused_not_converted(smem: Memory, fact: dict,
                                                                           field: str) -> None:
    with pytest.raises(ValidationError) as e:
        smem.add_facts([MAYA, fact], user_id=U)
    assert e.value.field == field.replace("facts[0]", "facts[1]")
    assert smem.history(user_id=U) == [], "half-written"
    smem.add_facts([{**MAYA, "object": 1990, "source_ids": ("m1",)}], user_id=U)  # a number is its digits
    assert [(f.object, f.source_ids) for f in smem.history(user_id=U)] == [("1990", ["m1"])]


WIDE = "\U0001d538"  # 𝔸: four bytes of UTF-8, a letter (a relation's word character too)


def test_whatever_sqlite_accepts_at_the_limits_copies_to_postgres(url_factory: Callable[[str], str]) -> None:
    at_limit = {"subject": "M" * MAX_NAME_CHARS, "relation": "lives_in", "object": "ü" * MAX_NAME_CHARS,
                "text": "t" * MAX_TEXT_CHARS, "id": "f" * MAX_ID_CHARS, "session_id": "s" * MAX_ID_CHARS}
    wide = {"subject": WIDE * (MAX_NAME_BYTES // 4), "relation": "r" * MAX_NAME_CHARS, "object": "Porto",
            "id": WIDE * MAX_ID_CHARS}  # the bytes PostgreSQL's index rows count (a relation is ASCII)
    uid = "u" * MAX_ID_CHARS
    with Memory(url_factory("sqlite")) as a, Memory(url_factory("postgres")) as b:
        a.add_facts([at_limit], user_id=uid)
        a.for_tenant("t" * 64).add_facts([wide], user_id=WIDE * MAX_ID_CHARS)
        copy_memory(a.store.inner, b.store.inner)  # every tenant; verifies the copy reads back identically
        assert b.export(user_id=uid)["tables"] == a.export(user_id=uid)["tables"]
        assert b.for_tenant("t" * 64).export(user_id=WIDE * MAX_ID_CHARS)["tables"]["facts"]


@pytest.mark.parametrize("fact, field, words", [
    ({**MAYA, "subject": WIDE * (MAX_NAME_BYTES // 4 + 1)}, "facts[0].subject", "bytes of UTF-8"),
    ({**MAYA, "object": "\ufdfa" * 40}, "facts[0].object", "once case-folded"),  # ﷺ: 18 characters in NFKC
])
def test_a_name_over_its_bytes_is_refused_on_both_stores(smem: Memory, fact: dict, field: str, words: str) -> None:
    """500 characters of 4-byte letters passed the character limit, and PostgreSQL's index refused the row
    as a StoreError ("index row size 3040 exceeds btree version 4 maximum 2704")."""
    with pytest.raises(ValidationError, match=words) as e:
        smem.add_facts([fact], user_id=U)
    assert e.value.field == field


@pytest.mark.parametrize("messages, field", [
    ([{"speaker": "Maya", "text": "I live in \ud800 Porto"}], "messages[0].text"),
    ([{"speaker": "Ma\x00ya", "text": "hello"}], "messages[0].speaker"),
    ([{"speaker": "Maya", "text": "I live in Oslo.", "content": "I live in Paris."}], "messages[0].content"),
    ([{"speaker": "Maya", "text": "x" * (MAX_TEXT_CHARS + 1)}], "messages[0].text"),
    ([{"speaker": "Maya", "text": "hi", "id": "m" * (MAX_ID_CHARS + 1)}], "messages[0].id"),
])
def test_conversation_turns_meet_the_same_limits_before_any_model_call(smem: Memory, messages, field) -> None:
    with pytest.raises(ValidationError) as e:  # no model is configured: validation comes first
        smem.add(messages, user_id=U, session_id="s1")
    assert e.value.field == field
    assert smem.store.messages(U) == []


@pytest.mark.parametrize("call, field", [
    (lambda m: m.forget(user_id=U, fact_id=123), "fact_id"),
    (lambda m: m.forget(user_id=U, session_id="s\x00"), "session_id"),
    (lambda m: m.facts(user_id=U, relation="lives\ud800in"), "relation"),
    (lambda m: m.add_facts([MAYA], user_id=U, session_id="s" * (MAX_ID_CHARS + 1)), "session_id"),
    (lambda m: m.search("where \ud800", user_id=U), "query"),
    (lambda m: m.end_session(user_id=U, session_id="s\ud800"), "session_id"),
    (lambda m: m.messages(user_id=U, session_id=5), "session_id"),
    (lambda m: m.messages(user_id=U, session_id="\ud800"), "session_id"),
    (lambda m: m.correct(5, user_id=U, object="Braga"), "fact_id"),
    (lambda m: m.correct("a\x00b", user_id=U, object="Braga"), "fact_id"),
    (lambda m: m.job("\ud800"), "job_id"),
    (lambda m: m.jobs(user_id=U, limit=-1), "limit"),
    (lambda m: m.jobs(user_id=U, limit="x"), "limit"),
    (lambda m: m.jobs(user_id=U, offset=10**30), "offset"),
    (lambda m: m.wait("j1", timeout="x"), "timeout"),
    (lambda m: m.extract_pending(user_id=U, session_id="a\x00"), "session_id"),
    (lambda m: m.search("Where does Maya live?", user_id=U, speaker="\ud800"), "speaker"),
    (lambda m: m.forget(user_id=U, everything="no"), "everything"),
    (lambda m: m.end_idle_sessions(idle_seconds=1e18), "idle_seconds"),
    (lambda m: m.add_facts([{**MAYA, "valid_from": "9999-12-31T23:00:00-05:00"}], user_id=U), "facts[0].valid_from"),
    (lambda m: m.facts(user_id=U, as_of="0001-01-01T00:00:00+05:00"), "as_of"),
    (lambda m: m.add([{"speaker": "Maya", "text": "hi", "timestamp": "9999-12-31T23:00:00-05:00"}],
                     user_id=U, session_id="s1"), "messages[0].timestamp"),
])
def test_ids_and_filters_are_checked_at_the_edge(smem: Memory, call, field: str) -> None:
    smem.add_facts([MAYA], user_id=U)
    before = smem.export(user_id=U)["tables"]
    with pytest.raises(ValidationError) as e:
        call(smem)
    assert e.value.field == field
    assert smem.export(user_id=U)["tables"] == before  # forget(everything="no") deleted the user once


def test_an_id_taken_by_any_stored_fact_is_refused_naming_it(smem: Memory) -> None:
    smem.add_facts([{**MAYA, "id": "F1"}], user_id=U)
    with pytest.raises(ValidationError) as e:  # another relation and entities: not in the batch's neighbourhood
        smem.add_facts([{"subject": "Tom", "relation": "likes", "object": "chess"},
                        {"subject": "C", "relation": "likes", "object": "D", "id": "F1"}], user_id=U)
    assert e.value.field == "facts[1].id" and [f.id for f in smem.history(user_id=U)] == ["F1"]
    smem.add_facts([{**MAYA, "id": "F1"}], user_id="someone-else")  # ids are per user


def test_an_import_of_a_time_that_cannot_be_read_back_is_refused(smem: Memory) -> None:
    data = exported(smem)
    bad = copy.deepcopy(data)
    bad["tables"]["facts"][0]["valid_from"] = 2**62
    with pytest.raises(ValidationError) as e:
        smem.import_(bad)
    assert e.value.field == "data.tables.facts[0].valid_from" and smem.history(user_id=U) == []
    bad = copy.deepcopy(data)
    bad["tables"]["entities"][0]["created_at"] = -2**62
    with pytest.raises(ValidationError, match="between the years 1 and 9999"):
        smem.import_(bad)


def test_a_fact_corrected_before_it_began_round_trips_through_an_export(smem: Memory) -> None:
    [f] = smem.add_facts([{**MAYA, "valid_from": "2090-01-01"}], user_id=U).added
    smem.correct(f.id, user_id=U, object="Braga")
    old = next(x for x in smem.history(user_id=U) if x.id == f.id)
    assert old.valid_to is None and old.closed_by is not None and old.confidence == 0.0  # superseded
    data = smem.export(user_id=U)
    smem.import_(data, user_id="copy")

    def rows(tables: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "user_id"} for r in tables["facts"]]

    assert rows(smem.export(user_id="copy")["tables"]) == rows(data["tables"])


def test_a_correction_error_names_the_field_not_a_batch_position(smem: Memory) -> None:
    [f] = smem.add_facts([MAYA], user_id=U).added
    with pytest.raises(ValidationError) as e:
        smem.correct(f.id, user_id=U, valid_to="1900-01-01")
    assert e.value.field == "valid_to"


def test_a_corrected_start_after_the_end_names_the_start_and_writes_nothing(smem: Memory) -> None:
    [f] = smem.add_facts([{**MAYA, "valid_from": "2018-01-01", "valid_to": "2020-01-01"}], user_id=U).added
    before = smem.export(user_id=U)["tables"]
    with pytest.raises(ValidationError) as e:
        smem.correct(f.id, user_id=U, valid_from="2021-06-01")
    assert (e.value.field, e.value.value) == ("valid_from", "2021-06-01")
    assert "before the fact's end (2020-01-01" in str(e.value) and "valid_to too" in str(e.value)
    assert smem.export(user_id=U)["tables"] == before
    moved = smem.correct(f.id, user_id=U, valid_from="2021-06-01", valid_to="2022-01-01")  # as it says
    assert (moved.valid_from.year, moved.valid_to.year) == (2021, 2022)  # type: ignore[union-attr]


@pytest.mark.parametrize("props, field", [
    ({"synonyms": "abc"}, "relation.synonyms"),
    ({"bogus": 1}, "relation.bogus"),
    ({"single_valued": "yes"}, "relation.single_valued"),
    ({"inverse": 5}, "relation.inverse"),
])
def test_relation_definitions_are_checked(props: dict[str, Any], field: str) -> None:
    mem = Memory(":memory:", llm=False, embedder=False)
    with pytest.raises(ValidationError) as e:
        mem.define_relation("xrel", **props)
    assert e.value.field == field
    assert mem.registry.canonical("a") == "a"  # no letter of "abc" became a synonym
    with pytest.raises(ValidationError):
        mem.define_relation(5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="mapping"):
        Memory(":memory:", llm=False, embedder=False, relations=["q"])  # type: ignore[list-item]


@pytest.mark.parametrize("buffered", [False, True])
def test_a_turn_id_reused_for_other_words_is_refused_and_nothing_written(kind: str, url_factory, buffered) -> None:
    from test_memory_sessions import SessionLLM

    with Memory(url_factory(kind), llm=SessionLLM(), embedder=False, buffer=buffered) as mem:
        mem.add([{"id": "m1", "speaker": "Maya", "text": "I live in Berlin and work at Acme."}],
                user_id=U, session_id="s1")
        mem.end_session(user_id=U, session_id="s1")
        again = mem.add([{"id": "m1", "speaker": "Maya", "text": "I live in Berlin and work at Acme."}],
                        user_id=U, session_id="s1")
        assert again.messages_skipped == 1  # the same turn re-sent: a no-op
        before = mem.export(user_id=U)["tables"]
        with pytest.raises(ValidationError) as e:
            mem.add([{"id": "m2", "speaker": "Maya", "text": "hello"},
                     {"id": "m1", "speaker": "Maya", "text": "I moved to Munich."}], user_id=U, session_id="s2")
        assert e.value.field == "messages[1].id" and "s1" in str(e.value)
        assert mem.export(user_id=U)["tables"] == before and [s.id for s in mem.sessions(user_id=U)] == ["s1"]


def test_an_import_whose_facts_name_no_entity_is_refused(smem: Memory) -> None:
    data = exported(smem)
    bad = copy.deepcopy(data)
    bad["tables"]["facts"][0]["subject_id"] = "no-such-entity"
    with pytest.raises(ValidationError) as e:
        smem.import_(bad)
    assert e.value.field == "data.tables.facts[0].subject_id" and smem.history(user_id=U) == []
    bad = copy.deepcopy(data)
    bad["tables"]["entity_names"][0]["entity_id"] = "no-such-entity"
    with pytest.raises(ValidationError, match="names no entity"):
        smem.import_(bad)
    smem.import_(data)  # entities already stored count: the same export again adds nothing and is fine
    assert smem.import_({**data, "tables": {"facts": data["tables"]["facts"]}})["already_present"] == 3
    for version in (True, 1.0, "1"):
        with pytest.raises(ValidationError, match="version"):
            smem.import_({**data, "version": version})
