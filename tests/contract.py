"""The store contract: every test runs against SQLite, PostgreSQL (no pgvector) and
PostgreSQL + pgvector through the ``store_url`` fixture (tests/pg_servers.py).

Each test opens ``Memory(url)`` on a fresh, empty store and goes through the public
API where one exists, the store interface where it does not (messages, vectors,
checkpoints).  Collected from ``test_store_contract.py``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from chronomem import Checkpoint, CorruptDatabaseError, Fact, Memory, Message, NotFoundError, ValidationError
from chronomem.temporal import refold

U = "alice"
V = "bob"


def dt(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


@pytest.fixture
def cmem(store_url: str) -> Iterator[Memory]:
    with Memory(store_url) as m:
        yield m


def lives(mem: Memory, city: str, start: str | None = None, end: str | None = None, c: float = 1.0,
          user: str = U, **extra: object):
    f: dict[str, object] = {"subject": "Maya", "relation": "lives_in", "object": city, "confidence": c, **extra}
    if start:
        f["valid_from"] = start
    if end:
        f["valid_to"] = end
    return mem.add_facts([f], user_id=user)


def versions(mem: Memory, rel: str = "lives_in", user: str = U) -> list[tuple[str, str | None, str | None]]:
    return [(f.object, f.valid_from and f.valid_from.date().isoformat(),
             f.valid_to and f.valid_to.date().isoformat())
            for f in mem.history(user_id=user, subject="Maya", relation=rel)]


def msg(i: int, session: str, text: str, user: str = U, speaker: str = "Maya") -> Message:
    t = dt("2024-01-01") + timedelta(minutes=i)
    return Message(id=f"m{i}", user_id=user, session_id=session, speaker=speaker, text=text,
                   timestamp=t, recorded_at=t, seq=i)


def everything_of(mem: Memory, user: str) -> dict[str, list[dict[str, object]]]:
    return mem.store.dump_user(user)


# -- update rules ----------------------------------------------------------------------------
def test_single_valued_closes_old_and_keeps_both(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01")
    rep = lives(cmem, "Lisbon", "2021-03-01")
    assert [f.object for f in rep.closed] == ["Porto"]
    assert versions(cmem) == [("Porto", "2018-01-01", "2021-03-01"), ("Lisbon", "2021-03-01", None)]
    assert [f.object for f in cmem.facts(user_id=U, subject="Maya")] == ["Lisbon"]
    assert cmem.history(user_id=U)[0].closed_by == rep.added[0].id


def test_as_of_is_half_open(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01")
    lives(cmem, "Lisbon", "2021-03-01")
    assert [f.object for f in cmem.facts(user_id=U, as_of="2021-03-01T00:00:00Z")] == ["Lisbon"]
    assert [f.object for f in cmem.facts(user_id=U, as_of="2021-02-28T23:59:59.999999Z")] == ["Porto"]
    assert cmem.facts(user_id=U, as_of="2017-12-31") == []


def test_late_fact_is_ordered_not_closing_the_later_one(cmem: Memory) -> None:
    lives(cmem, "Lisbon", "2021-03-01")
    rep = lives(cmem, "Porto", "2018-01-01")
    assert rep.closed == [] and rep.added[0].valid_to == dt("2021-03-01")
    lives(cmem, "Braga", "2019-06-01")
    assert versions(cmem) == [("Porto", "2018-01-01", "2019-06-01"), ("Braga", "2019-06-01", "2021-03-01"),
                              ("Lisbon", "2021-03-01", None)]


def test_multi_valued_relations_add_parallel_edges(cmem: Memory) -> None:
    cmem.add_facts([{"subject": "Maya", "relation": "likes", "object": "jazz", "valid_from": "2019-01-01"},
                    {"subject": "Maya", "relation": "likes", "object": "tennis", "valid_from": "2020-01-01"}],
                   user_id=U)
    now = cmem.facts(user_id=U, subject="Maya", relation="likes")
    assert sorted(f.object for f in now) == ["jazz", "tennis"]
    assert all(f.valid_to is None for f in now)


def test_same_fact_again_reinforces_without_duplicating(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01", c=0.8, source_ids=["m1"])
    rep = lives(cmem, "Porto", "2018-01-01", c=0.9, source_ids=["m2"])
    assert rep.added == [] and len(rep.reinforced) == 1
    (f,) = cmem.history(user_id=U)
    assert f.confidence >= 0.9 and set(f.source_ids) == {"m1", "m2"}


def test_explicit_ending_closes_the_open_fact(cmem: Memory) -> None:
    cmem.add_facts([{"subject": "Maya", "relation": "owns", "object": "a red car", "valid_from": "2015-05-01"}],
                   user_id=U)
    cmem.add_facts([{"subject": "Maya", "relation": "owns", "object": "a red car", "valid_to": "2022-02-01"}],
                   user_id=U)
    hist = cmem.history(user_id=U, subject="Maya", relation="owns")
    assert [(f.valid_from, f.valid_to) for f in hist] == [(dt("2015-05-01"), dt("2022-02-01"))]
    assert cmem.facts(user_id=U, subject="Maya", relation="owns") == []


def test_low_confidence_never_closes_a_stable_fact(cmem: Memory) -> None:
    lives(cmem, "Berlin", "2019-01-01")
    rep = lives(cmem, "Paris", "2023-01-01", c=0.3)
    assert rep.closed == []
    assert [f.object for f in cmem.facts(user_id=U)] == ["Berlin"]
    assert sorted(f.object for f in cmem.facts(user_id=U, include_unstable=True)) == ["Berlin", "Paris"]


def test_equal_start_later_recorded_wins(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01")
    lives(cmem, "Lisbon", "2018-01-01")
    assert [f.object for f in cmem.facts(user_id=U, as_of="2019-01-01")] == ["Lisbon"]
    porto = [f for f in cmem.history(user_id=U) if f.object == "Porto"][0]
    assert porto.valid_from == dt("2018-01-01") and porto.valid_to is None and porto.superseded


def test_history_keeps_every_version_oldest_first_and_persists(store_url: str) -> None:
    with Memory(store_url) as m:
        for i, city in enumerate(["A", "B", "C", "D"]):
            lives(m, city, f"201{i}-01-01")
        lives(m, "E", "2020-01-01", c=0.2)
    with Memory(store_url) as m:  # reopened: migrations are idempotent, data is there
        assert [v[0] for v in versions(m)] == ["A", "B", "C", "D", "E"]
        assert [f.object for f in m.history(user_id=U, include_unstable=False)] == ["A", "B", "C", "D"]


# -- isolation ---------------------------------------------------------------------------------
def test_facts_touching_entities_once_each_in_time_order(cmem: Memory) -> None:
    """``Store.facts(touching=…)``: every fact with either end among the entities, once (a fact between
    two of them too), ordered as every fact read is (by start, then recorded, then id), with the other
    filters and the limit applied to the whole set."""
    cmem.add_facts([
        {"subject": "Maya", "relation": "sibling_of", "object": "Rui", "valid_from": "2001-01-01"},
        {"subject": "Rui", "relation": "lives_in", "object": "Porto", "valid_from": "2010-01-01"},
        {"subject": "Tiago", "relation": "married_to", "object": "Maya", "valid_from": "2015-06-01"},
        {"subject": "Maya", "relation": "likes", "object": "jazz"},
        {"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_from": "2012-01-01", "confidence": 0.3},
        {"subject": "Ana", "relation": "lives_in", "object": "Braga", "valid_from": "2011-01-01"},
    ], user_id=U)
    cmem.add_facts([{"subject": "Maya", "relation": "likes", "object": "jazz"}], user_id=V)  # another user's Maya
    ids = {e.name: e.id for e in cmem.store.entities(U)}
    every = cmem.store.facts(U)
    touching = cmem.store.facts(U, touching=[ids["Maya"], ids["Rui"]])
    assert [(f.subject, f.object) for f in touching] == [  # "likes jazz" starts when it was told: now
        ("Maya", "Rui"), ("Rui", "Porto"), ("Maya", "Acme"), ("Tiago", "Maya"), ("Maya", "jazz")]
    assert touching == [f for f in every if {f.subject_id, f.object_id} & {ids["Maya"], ids["Rui"]}]
    assert [f.relation for f in cmem.store.facts(U, touching=[ids["Maya"]], min_confidence=0.5, limit=2)] == [
        "sibling_of", "married_to"]
    assert [f.subject for f in cmem.store.facts(U, touching=[ids["Maya"]], relations=["married_to"],
                                                as_of=dt("2020-01-01"))] == ["Tiago"]
    assert cmem.store.facts(U, touching=[]) == [] and cmem.store.facts(U, touching=["no-such-entity"]) == []
    # thousands of entities at once (forgetting a long session): read in chunks, each fact once
    many = [f"nobody-{i}" for i in range(6000)] + [ids["Rui"]] + [f"nobody-{i}" for i in range(6000, 12000)] + [
        ids["Maya"]]
    assert cmem.store.facts(U, touching=many) == touching


def test_counts_and_heads_of_the_facts_touching_entities(cmem: Memory) -> None:
    """``count_touching``: facts of any confidence naming each entity, another user's not; ``fact_heads``:
    the ids, ends, relation and times of what ``facts(touching=…)`` gives, in its order."""
    cmem.add_facts([
        {"subject": "Maya", "relation": "sibling_of", "object": "Rui", "valid_from": "2001-01-01"},
        {"subject": "Tiago", "relation": "married_to", "object": "Maya", "valid_from": "2015-06-01"},
        {"subject": "Maya", "relation": "likes", "object": "jazz"},
        {"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_from": "2012-01-01", "confidence": 0.3},
    ], user_id=U)
    cmem.add_facts([{"subject": "Maya", "relation": "likes", "object": "opera"}], user_id=V)
    ids = {e.name: e.id for e in cmem.store.entities(U)}
    assert cmem.store.count_touching(U, [ids["Maya"], ids["Rui"], "no-such-entity", ids["Maya"]]) == {
        ids["Maya"]: 4, ids["Rui"]: 1}
    assert cmem.store.count_touching(V, [ids["Maya"]]) == {} and cmem.store.count_touching(U, []) == {}
    for min_conf in (None, 0.5):
        whole = cmem.store.facts(U, touching=[ids["Maya"]], min_confidence=min_conf)
        heads = cmem.store.fact_heads(U, [ids["Maya"]], min_confidence=min_conf)
        assert [(h.id, h.subject_id, h.subject, h.relation, h.object_id, h.object, h.valid_from, h.recorded_at)
                for h in heads] == [(f.id, f.subject_id, f.subject, f.relation, f.object_id, f.object, f.valid_from,
                                     f.recorded_at) for f in whole]
        assert len(heads) == (4 if min_conf is None else 3)
    # thousands of entities at once are read in chunks, and a fact is kept once by its id (not its subject)
    many = [f"nobody-{i}" for i in range(3000)] + [ids["Maya"]]
    assert cmem.store.fact_heads(U, many) == cmem.store.fact_heads(U, [ids["Maya"]])


def test_entity_types_of_some_entities(cmem: Memory) -> None:
    cmem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "object_type": "city"}], user_id=U)
    cmem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id=V)
    ids = {e.name: e.id for e in cmem.store.entities(U)}
    assert cmem.store.entity_types(U, [ids["Porto"], ids["Maya"], "no-such-entity", ids["Porto"]]) == {
        ids["Porto"]: "city", ids["Maya"]: cmem.store.entities(U, [ids["Maya"]])[0].type}
    assert cmem.store.entity_types(V, [ids["Porto"]]) == {}  # another user's entity ids mean nothing here
    assert cmem.store.entity_types(U, []) == {}


def test_users_are_isolated(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01", user=U)
    lives(cmem, "Oslo", "2018-01-01", user=V)
    cmem.store.put_vectors(V, "fact", [("x", [1.0, 0.0])], "m")
    cmem.store.add_messages(V, [msg(1, "s1", "Oslo is cold", user=V)])
    assert [f.object for f in cmem.facts(user_id=U)] == ["Porto"]
    assert [f.object for f in cmem.facts(user_id=V)] == ["Oslo"]
    assert cmem.store.knn(U, "fact", [1.0, 0.0]) == []
    assert cmem.store.search_messages_text(U, "Oslo cold") == []
    assert cmem.store.search_facts_text(U, "Oslo") == []
    assert cmem.store.users() == [U, V]
    cmem.forget(user_id=U, everything=True)
    assert [f.object for f in cmem.facts(user_id=V)] == ["Oslo"]
    assert cmem.store.users() == [V]


def walk_users(mem: Memory, limit: int) -> list[str]:
    pages, after = [], None
    while page := mem.users(limit=limit, after=after):
        assert len(page) <= limit
        pages += page
        after = page[-1]
    return pages


def test_users_are_listed_in_pages_per_tenant(cmem: Memory) -> None:
    # a user is one with a row in any table; other tenants' keys ("acme\x1fu1") lie among the default
    # tenant's ("acme", "acme ", "acmf") in the stores' byte order
    acme, ac, acme_x = cmem.for_tenant("acme"), cmem.for_tenant("ac"), cmem.for_tenant("acme-x")
    lives(cmem, "Porto", user="acme")
    cmem.store.ensure_session("acme ", "s1")
    cmem.alias("Maya", "May", user_id="acmf")
    cmem.store.put_checkpoint(Checkpoint(user_id="é", session_id="s1", seq=1, memory="M", created_at=dt("2024-01-02")))
    cmem.store.ensure_session("Z", "s1")
    cmem.store.add_messages("Z", [msg(1, "s1", "hi", user="Z")])
    lives(acme, "Oslo", user="u1")
    acme.store.ensure_session("u2", "s1")
    acme.store.add_messages("u2", [msg(1, "s1", "hi", user="u2")])
    lives(ac, "Oslo", user="q")
    acme_x.alias("Maya", "May", user_id="w")
    mine = ["Z", "acme", "acme ", "acmf", "é"]
    assert cmem.users() == mine
    assert acme.users() == ["u1", "u2"] and ac.users() == ["q"] and acme_x.users() == ["w"]
    for limit in range(1, 7):
        assert walk_users(cmem, limit) == mine
        assert walk_users(acme, limit) == ["u1", "u2"]
    assert cmem.users(limit=2, after="acme") == ["acme ", "acmf"]
    assert cmem.users(after="acmd", limit=1) == ["acme"]  # after an id nobody holds: the next one
    assert acme.users(after="u1") == ["u2"] and acme.users(after="u2", limit=3) == []
    assert cmem.store.inner.users() == sorted(["ac\x1fq", "acme\x1fu1", "acme\x1fu2", "acme-x\x1fw", *mine])
    for after in ("a", "acme", "acme\x1f"):  # a place before the tenant's keys starts at its first
        assert cmem.store.inner.users(tenant="acme", after=after, limit=5) == ["acme\x1fu1", "acme\x1fu2"]
    assert cmem.store.inner.users(tenant="acme", after="b", limit=5) == []
    cmem.forget(user_id="acme ", everything=True)
    assert walk_users(cmem, 2) == ["Z", "acme", "acmf", "é"]
    for bad, field in (({"limit": 0}, "limit"), ({"limit": True}, "limit"), ({"after": ""}, "after"),
                       ({"after": "a\x1fb"}, "after"), ({"after": 7}, "after")):
        with pytest.raises(ValidationError) as e:
            cmem.users(**bad)  # type: ignore[arg-type]
        assert e.value.field == field
    with pytest.raises(ValidationError) as e:
        acme.store.users(tenant="beta")
    assert e.value.field == "tenant"
    assert acme.store.users(tenant="acme") == ["u1", "u2"]


def test_idle_sessions_are_listed_per_tenant(cmem: Memory) -> None:
    views = {t: cmem.for_tenant(t) for t in ("acme", "ac")}
    for mem, user in ((cmem, "acme"), (cmem, "zed"), (views["acme"], "u1"), (views["ac"], "q")):
        mem.store.ensure_session(user, "s1")
        mem.store.add_messages(user, [msg(1, "s1", "hi", user=user)])
        mem.store.ensure_session(user, "s2")  # ended: never idle
        mem.store.add_messages(user, [msg(2, "s2", "bye", user=user)])
        mem.store.end_session(user, "s2", dt("2024-01-02"))
    later = dt("2030-01-01")
    assert cmem.store.idle_sessions(later) == [("acme", "s1"), ("zed", "s1")]
    assert views["acme"].store.idle_sessions(later) == [("u1", "s1")]
    assert views["ac"].store.idle_sessions(later, tenant="ac") == [("q", "s1")]
    raw = cmem.store.inner
    assert raw.idle_sessions(later) == [("ac\x1fq", "s1"), ("acme", "s1"), ("acme\x1fu1", "s1"), ("zed", "s1")]
    assert raw.idle_sessions(later, tenant="acme") == [("acme\x1fu1", "s1")]
    assert raw.idle_sessions(dt("2023-01-01")) == []  # their last turn came later
    with pytest.raises(ValidationError) as e:
        views["acme"].store.idle_sessions(later, tenant="ac")
    assert e.value.field == "tenant"


# -- search ---------------------------------------------------------------------------------------
def test_full_text_search_over_facts_and_messages(cmem: Memory) -> None:
    cmem.add_facts([{"subject": "Maya", "relation": "plays", "object": "the cello", "valid_from": "2020-01-01",
                     "text": "Maya plays the cello in an orchestra"},
                    {"subject": "Maya", "relation": "works_at", "object": "Acme Robotics",
                     "valid_from": "2020-01-01"}], user_id=U)
    hits = cmem.store.search_facts_text(U, "Which orchestras does she play in?")
    facts = {f.id: f for f in cmem.history(user_id=U)}
    assert hits and facts[hits[0][0]].object == "the cello"
    assert [facts[i].object for i, _ in cmem.store.search_facts_text(U, "robotics")] == ["Acme Robotics"]
    assert cmem.store.search_facts_text(U, "!!! ??") == []
    cmem.store.ensure_session(U, "s1")
    cmem.store.add_messages(U, [msg(1, "s1", "We adopted a puppy named Biscuit!"),
                                msg(2, "s1", "I'm learning Portuguese.", speaker="Rui")])
    got = cmem.store.search_messages_text(U, "biscuit puppies")
    # the turn that says it first; the reply after it is found too, through the turn before it
    # (the index pairs each turn with its predecessor), but ranks below
    assert [i for i, _ in got] == ["m1", "m2"]
    assert got[0][1] > got[1][1]
    assert [i for i, _ in cmem.store.search_messages_text(U, "rui")] == ["m2"]  # speakers are searchable
    scores = [s for _, s in cmem.store.search_messages_text(U, "puppy portuguese")]
    assert scores == sorted(scores, reverse=True)


def test_a_reply_is_found_through_the_turn_it_answers(cmem: Memory) -> None:
    """The turn index pairs each turn with the one before it in its session, kept right when turns
    arrive out of order, after forgetting nothing else, and after an import (the pairing is index
    data, not exported)."""
    cmem.store.ensure_session(U, "s1")
    cmem.store.ensure_session(U, "s2")
    cmem.store.add_messages(U, [msg(1, "s1", "Which instrument did you pick up this winter?", speaker="Rui"),
                                msg(3, "s1", "Nice!", speaker="Rui"),
                                msg(4, "s2", "Unrelated chatter about the weather.", speaker="Rui")])
    cmem.store.add_messages(U, [msg(2, "s1", "The cello, lessons every Tuesday.")])  # arrives late
    hits = [i for i, _ in cmem.store.search_messages_text(U, "What instrument did she pick up?")]
    assert sorted(hits) == ["m1", "m2"]  # m2 shares no content word with the question
    # m3 follows m2 now, not m1: its index entry was refreshed when m2 arrived
    assert "m3" not in [i for i, _ in cmem.store.search_messages_text(U, "instrument winter")]
    assert sorted(i for i, _ in cmem.store.search_messages_text(U, "cello tuesday")) == ["m2", "m3"]
    # one batch on both sides of stored turns: m9 follows m3 ("Nice!"), not m0 from its own batch
    cmem.store.add_messages(U, [msg(0, "s1", "Hello there.", speaker="Rui"), msg(9, "s1", "Bye for now.")])
    assert sorted(i for i, _ in cmem.store.search_messages_text(U, "nice")) == ["m3", "m9"]
    assert "m1" in [i for i, _ in cmem.store.search_messages_text(U, "hello")]  # m1 now follows m0
    cmem.import_(cmem.export(user_id=U), user_id=V)
    assert sorted(i for i, _ in cmem.store.search_messages_text(V, "What instrument did she pick up?")) == ["m1", "m2"]
    assert "context" not in cmem.export(user_id=U)["tables"]["messages"][0]


def test_next_and_previous_messages_are_the_adjacent_turns_of_the_same_session_and_user(cmem: Memory) -> None:
    for s in ("s1", "s2"):
        cmem.store.ensure_session(U, s)
    cmem.store.ensure_session(V, "s1")
    # seq gaps and a session that interleaves in time with another: the next turn is by seq, per session
    cmem.store.add_messages(U, [msg(1, "s1", "Where is the internship?"), msg(5, "s2", "Other chat."),
                                msg(3, "s1", "An international company.", speaker="Gina"),
                                msg(7, "s1", "Congrats!")])
    cmem.store.add_messages(V, [msg(2, "s1", "bob's turn", user=V)])
    # m5, m7 end their session and m1, m5 open theirs; m2 is bob's; unknown and repeated ids are harmless
    expected = {
        "next": ({"m1": ("m3", "Gina", "s1"), "m3": ("m7", "Maya", "s1")}, "m1", "An international company."),
        "previous": ({"m7": ("m3", "Gina", "s1"), "m3": ("m1", "Maya", "s1")}, "m3", "Where is the internship?")}
    for way, (pairs, probe, text) in expected.items():
        adjacent = getattr(cmem.store, f"{way}_messages")
        got = adjacent(U, ["m1", "m3", "m5", "m7", "m1", "nope", "m2"])
        assert {k: (m.id, m.speaker, m.session_id) for k, m in got.items()} == pairs, way
        assert got[probe].text == text and got[probe].user_id == U
        assert adjacent(U, []) == {} and adjacent(V, ["m2"]) == {}


def test_a_failed_try_never_marks_an_extracted_turn_pending_again(cmem: Memory) -> None:
    """The pipeline marks a failed chunk FAILED (2); a racing extraction of the same turns may have
    succeeded first, and a turn pending again would be extracted, and its facts reinforced, twice."""
    from chronomem.extract.pipeline import EXTRACTED, FAILED, PENDING

    cmem.store.ensure_session(U, "s1")
    cmem.store.add_messages(U, [msg(1, "s1", "I live in Berlin."), msg(2, "s1", "And I work at Acme.")])
    cmem.store.mark_extracted(U, ["m1"], EXTRACTED)
    for state in (FAILED, PENDING):
        cmem.store.mark_extracted(U, ["m1", "m2"], state)
        assert [m.id for m in cmem.store.messages(U, pending_only=True)] == ["m2"], state
    cmem.store.mark_extracted(U, ["m2"], EXTRACTED)
    assert cmem.store.messages(U, pending_only=True) == []


def test_a_capital_dotted_i_is_searched_as_stored(cmem: Memory) -> None:
    """Python lowers "İ" to "i" and a combining dot, which split "İstanbul" into "stanbul": found by neither
    index, which both read the stored word as "istanbul"."""
    cmem.add_facts([{"subject": "Ayşe", "relation": "lives_in", "object": "İstanbul"}], user_id=U)
    cmem.store.ensure_session(U, "s1")
    cmem.store.add_messages(U, [msg(1, "s1", "I moved to İZMİR last year", speaker="Ayşe")])
    for q in ("İstanbul", "istanbul", "ISTANBUL"):
        assert len(cmem.store.search_facts_text(U, q)) == 1, q
    assert [i for i, _ in cmem.store.search_messages_text(U, "İzmir")] == ["m1"]


def test_full_text_search_ignores_english_stopwords(cmem: Memory) -> None:
    """Both stores drop PostgreSQL's English stopwords: shared function words match nothing."""
    cmem.store.ensure_session(U, "s1")
    cmem.store.add_messages(U, [msg(1, "s1", "Wow! What did you get?"),
                                msg(2, "s1", "I just got accepted for a design internship!", speaker="Gina"),
                                msg(3, "s1", "Where did you get it? Was it there?")])
    hits = [i for i, _ in cmem.store.search_messages_text(U, "When did Gina get accepted for the design internship?")]
    assert hits[0] == "m2"
    assert cmem.store.search_messages_text(U, "What did you do there, and when?") == []  # stopwords only
    cmem.add_facts([{"subject": "Gina", "relation": "likes", "object": "hoodies", "valid_from": "2023-01-01"}],
                   user_id=U)
    assert cmem.store.search_facts_text(U, "What is it that she has?") == []
    assert cmem.store.search_facts_text(U, "What are the hoodies?")


def test_vectors_put_knn_replace_and_filters(cmem: Memory) -> None:
    st = cmem.store
    st.put_vectors(U, "fact", [("a", [1.0, 0.0, 0.0]), ("b", [0.0, 1.0, 0.0]), ("c", [0.7, 0.7, 0.0])], "m1")
    st.put_vectors(U, "entity", [("e", [1.0, 0.0, 0.0])], "m1")
    st.put_vectors(U, "fact", [("d", [1.0, 0.0, 0.0, 0.0])], "m2")  # another model and dimension
    got = st.knn(U, "fact", [1.0, 0.1, 0.0], k=2)
    assert [i for i, _ in got] == ["a", "c"]
    assert got[0][1] == pytest.approx(0.995, abs=1e-3) and got[0][1] >= got[1][1]
    assert [i for i, _ in st.knn(U, "fact", [1.0, 0.1, 0.0], k=10, model="m1")] == ["a", "c", "b"]
    assert st.knn(U, "fact", [1.0, 0.1, 0.0], k=10, model="other") == []
    assert [i for i, _ in st.knn(U, "fact", [1.0, 0.0, 0.0, 0.0])] == ["d"]
    st.put_vectors(U, "fact", [("a", [0.0, 1.0, 0.0])], "m1")  # replace
    assert st.knn(U, "fact", [0.0, 1.0, 0.0], k=1)[0][0] in {"a", "b"}
    assert st.vector_ids(U, "fact", "m1") == {"a", "b", "c"}
    assert st.vector_ids(U, "entity", "m1") == {"e"}
    vecs = {d["item_id"]: d["vec"] for d in st.dump_user(U)["vectors"]}
    assert vecs["a"] == [0.0, 1.0, 0.0] and vecs["c"] == pytest.approx([0.7, 0.7, 0.0], rel=1e-6)
    # many vectors: the nearest is found (exact scan or ANN index)
    items = [(f"v{i}", [float(i % 7), float(i % 5), float(i % 3) + 0.5]) for i in range(300)]
    st.put_vectors(U, "message", items, "m1")
    assert st.knn(U, "message", [6.0, 4.0, 2.5], k=1)[0][1] == pytest.approx(1.0, abs=1e-5)


def test_a_vector_of_zeros_is_similar_to_nothing(cmem: Memory) -> None:
    """An embedder may give zeros (an empty name): SQLite's search raised a TypeError on the NULL distance."""
    st = cmem.store
    st.put_vectors(U, "entity", [("a", [1.0, 0.0, 0.0]), ("z", [0.0, 0.0, 0.0]), ("e", [-1.0, 0.0, 0.0])], "m1")
    assert [(i, round(s, 4)) for i, s in st.knn(U, "entity", [1.0, 0.0, 0.0], k=3)] == [
        ("a", 1.0), ("z", 0.0), ("e", -1.0)]
    assert sorted((i, round(s, 4)) for i, s in st.knn(U, "entity", [0.0, 0.0, 0.0], k=3)) == [
        ("a", 0.0), ("e", 0.0), ("z", 0.0)]
    tiny = st.knn(U, "entity", [1e-30, 0.0, 0.0], k=1)  # 1e-30 squared is 0 in float32
    assert tiny[0][0] == "a" and tiny[0][1] == pytest.approx(1.0, abs=1e-5)


class ZerosForUnknownNames:
    """An embedder giving zeros to what it does not know."""

    name, dim = "zeros-test", 3

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] if "porto" in t.lower() else [0.0, 0.0, 0.0] for t in texts]


def test_a_search_with_vectors_of_zeros_answers(store_url: str) -> None:
    with Memory(store_url, llm=False, embedder=ZerosForUnknownNames()) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id=U)
        res = mem.search("Where does Zanzibar Jones live?", user_id=U)
        assert [(f.subject, f.object) for f in res.facts] == [("Maya", "Porto")]


def test_entities_without_vectors_of_a_model(cmem: Memory) -> None:
    cmem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"},
                    {"subject": "Maya", "relation": "works_at", "object": "Acme"}], user_id=U)
    cmem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Oslo"}], user_id=V)
    cmem.alias("Maya", "May", user_id=U)
    ids = {e.name: e.id for e in cmem.entities(user_id=U)}
    st = cmem.store
    st.put_vectors(U, "entity", [(ids["Maya"], [1.0, 0.0])], "m1")
    st.put_vectors(U, "entity", [(ids["Porto"], [1.0, 0.0])], "m2")  # another model's vector is none of m1's
    st.put_vectors(U, "fact", [(ids["Acme"], [1.0, 0.0])], "m1")  # nor is a vector of another kind
    missing = st.entities_without_vectors(U, "entity", "m1")
    assert [e.name for e in missing] == [e.name for e in cmem.entities(user_id=U) if e.name != "Maya"]
    assert all(e.aliases == [] and e.user_id == U and e.created_at for e in missing)
    assert sorted(e.name for e in st.entities_without_vectors(V, "entity", "m1")) == ["Maya", "Oslo"]  # V's own
    st.put_vectors(U, "entity", [(ids["Porto"], [0.0, 1.0]), (ids["Acme"], [0.0, 1.0])], "m1")
    assert st.entities_without_vectors(U, "entity", "m1") == []


def test_store_reports_its_vector_backend(store_url: str, request: pytest.FixtureRequest) -> None:
    with Memory(store_url) as m:
        pgvector = request.node.callspec.params["store_url"] == "postgres_pgvector"
        # the HNSW index needs pgvector 0.8's iterative scans; older versions search exactly
        from chronomem.store.postgres import ITERATIVE_SCAN_VERSION, _version_tuple

        version = getattr(m.store, "vector_extension_version", None)
        assert (version is not None) is pgvector
        assert m.store.has_vector_index is (pgvector and _version_tuple(version) >= ITERATIVE_SCAN_VERSION)


# -- forgetting ----------------------------------------------------------------------------------
def test_forget_fact_reopens_what_it_closed_and_leaves_no_trace(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01")
    rep = lives(cmem, "Lisbon", "2021-03-01", text="Maya moved to Lisbon")
    lisbon = rep.added[0].id
    cmem.store.put_vectors(U, "fact", [(lisbon, [1.0, 0.0])], "m")
    assert cmem.store.search_facts_text(U, "Lisbon")
    res = cmem.forget(user_id=U, fact_id=lisbon)
    assert res.facts_deleted == 1 and res.reopened == 1
    assert versions(cmem) == [("Porto", "2018-01-01", None)]
    assert cmem.store.search_facts_text(U, "Lisbon moved") == []
    assert cmem.store.knn(U, "fact", [1.0, 0.0]) == []
    assert "lisbon" not in json.dumps(everything_of(cmem, U)).lower()
    with pytest.raises(NotFoundError):
        cmem.forget(user_id=U, fact_id=lisbon)


def test_forgetting_a_correction_forgets_the_versions_it_replaced(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01")
    rep = lives(cmem, "Lisbn", "2021-03-01", text="Maya moved to Lisbn")  # closes Porto
    fixed = cmem.correct(rep.added[0].id, user_id=U, object="Lisbon")
    again = cmem.correct(fixed.id, user_id=U, confidence=0.9)
    assert [v[0] for v in versions(cmem)] == ["Porto", "Lisbn", "Lisbon", "Lisbon"]
    res = cmem.forget(user_id=U, fact_id=again.id)
    assert res.facts_deleted == 3 and res.reopened == 1  # every version went; Porto holds again
    assert versions(cmem) == [("Porto", "2018-01-01", None)]
    assert "lisbn" not in json.dumps(everything_of(cmem, U)).lower()


def test_forgetting_a_corrected_version_keeps_its_correction(cmem: Memory) -> None:
    rep = lives(cmem, "Lisbn", "2021-03-01")
    fixed = cmem.correct(rep.added[0].id, user_id=U, object="Lisbon")
    assert cmem.forget(user_id=U, fact_id=rep.added[0].id).facts_deleted == 1
    assert [(f.id, f.object) for f in cmem.history(user_id=U)] == [(fixed.id, "Lisbon")]


def test_forget_session_removes_its_messages_facts_and_checkpoints(cmem: Memory) -> None:
    st = cmem.store
    st.ensure_session(U, "s1", started_at=dt("2024-01-01"))
    st.ensure_session(U, "s2", started_at=dt("2024-02-01"))
    st.add_messages(U, [msg(1, "s1", "I live in Porto"), msg(2, "s2", "I moved to Lisbon, the sea is lovely")])
    lives(cmem, "Porto", "2018-01-01", session_id="s1", source_ids=["m1"])
    lives(cmem, "Lisbon", "2021-03-01", session_id="s2", source_ids=["m2"])
    st.put_vectors(U, "message", [("m2", [0.0, 1.0])], "m")
    st.put_checkpoint(Checkpoint(user_id=U, session_id="s2", seq=1, memory="Maya lives in Lisbon.",
                                 created_at=dt("2024-02-02")))
    res = cmem.forget(user_id=U, session_id="s2")
    assert (res.facts_deleted, res.messages_deleted, res.sessions_deleted, res.reopened) == (1, 1, 1, 1)
    assert versions(cmem) == [("Porto", "2018-01-01", None)]
    assert [s.id for s in st.sessions(U)] == ["s1"]
    assert [m.id for m in st.messages(U)] == ["m1"]
    assert st.search_messages_text(U, "sea lovely") == [] and st.knn(U, "message", [0.0, 1.0]) == []
    assert st.checkpoints(U) == []
    with pytest.raises(NotFoundError):
        cmem.forget(user_id=U, session_id="nope")


def porto_sessions(cmem: Memory) -> None:
    """Three sessions of one turn each: Maya lives in Porto (s1), left it (s2), left it, again (s3)."""
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01"), ("s3", "2024-03-01")):
        cmem.store.ensure_session(U, sid, started_at=dt(start))
    cmem.store.add_messages(U, [msg(1, "s1", "I live in Porto"), msg(2, "s2", "I left Porto in June"),
                                msg(3, "s3", "I moved out of Porto in June, as I said")])
    lives(cmem, "Porto", "2018-01-01", session_id="s1", source_ids=["m1"])


def test_forgetting_the_turn_that_ended_a_fact_reopens_it(cmem: Memory) -> None:
    porto_sessions(cmem)
    lives(cmem, "Porto", end="2023-06-01", session_id="s2", source_ids=["m2"])  # ends the open fact in place
    [porto] = cmem.history(user_id=U)
    assert porto.ended_by == ["m2"] and versions(cmem) == [("Porto", "2018-01-01", "2023-06-01")]
    exported = cmem.export(user_id=U)
    res = cmem.forget(user_id=U, session_id="s2")
    assert (res.facts_deleted, res.reopened) == (0, 1)
    assert versions(cmem) == [("Porto", "2018-01-01", None)]  # as if the ending had never been said
    [porto] = cmem.history(user_id=U)
    assert porto.source_ids == ["m1"] and porto.ended_by == [] and porto.stated_to is None
    cmem.import_(exported, user_id="u-copy")  # the ending's turns survive an export round trip
    assert [f.ended_by for f in cmem.history(user_id="u-copy")] == [["m2"]]


def test_an_ending_said_twice_holds_while_one_of_its_turns_does(cmem: Memory) -> None:
    porto_sessions(cmem)
    lives(cmem, "Porto", end="2023-06-01", session_id="s2", source_ids=["m2"])
    lives(cmem, "Porto", end="2023-06-01", session_id="s3", source_ids=["m3"])
    assert [f.ended_by for f in cmem.history(user_id=U)] == [["m2", "m3"]]
    assert cmem.forget(user_id=U, session_id="s2").reopened == 0
    assert versions(cmem) == [("Porto", "2018-01-01", "2023-06-01")]
    assert [f.ended_by for f in cmem.history(user_id=U)] == [["m3"]]
    assert cmem.forget(user_id=U, session_id="s3").reopened == 1
    assert versions(cmem) == [("Porto", "2018-01-01", None)]


def test_forgetting_the_turn_that_gave_a_fact_its_words_takes_them_back(cmem: Memory) -> None:
    porto_sessions(cmem)  # s1's fact has no statement of its own: lives(...) gives no text
    lives(cmem, "Porto", "2018-01-01", session_id="s2", source_ids=["m2"], text="Maya said she lives in Porto")
    [porto] = cmem.history(user_id=U)
    assert porto.text == "Maya said she lives in Porto" and porto.text_from == ["m2"]
    cmem.forget(user_id=U, session_id="s2")
    [porto] = cmem.history(user_id=U)
    assert porto.text == "" and porto.text_from == [] and porto.source_ids == ["m1"]
    assert "said she lives" not in json.dumps(everything_of(cmem, U))


def test_each_statements_words_are_kept_and_the_next_stand_in_for_forgotten_ones(cmem: Memory) -> None:
    """A fact said again keeps the other statements' words (``other_words``): a repetition's (rule 2) and
    an ending's (rule 1).  Forgetting the turns that gave its text leaves it the oldest words still
    said, and the forgotten words nowhere; an export carries them."""
    porto_sessions(cmem)
    cmem.store.update_facts(U, [replace(cmem.history(user_id=U)[0], text="Maya lives in Porto by Zqwvmarkone")])
    lives(cmem, "Porto", "2018-01-01", session_id="s2", source_ids=["m2"], text="Maya still lives in Porto")
    lives(cmem, "Porto", end="2023-06-01", session_id="s3", source_ids=["m3"], text="Maya left Porto in June")
    [porto] = cmem.history(user_id=U)
    assert porto.text == "Maya lives in Porto by Zqwvmarkone" and porto.valid_to == dt("2023-06-01")
    assert porto.other_words == [(["m2"], "Maya still lives in Porto"), (["m3"], "Maya left Porto in June")]
    exported = cmem.export(user_id=U)
    cmem.forget(user_id=U, session_id="s1")
    [porto] = cmem.history(user_id=U)
    assert (porto.text, porto.text_from) == ("Maya still lives in Porto", ["m2"])
    assert porto.other_words == [(["m3"], "Maya left Porto in June")]
    assert "zqwvmarkone" not in json.dumps(everything_of(cmem, U)).lower()
    cmem.forget(user_id=U, session_id="s2")  # the ending alone is left: its words, and no start any more
    [porto] = cmem.history(user_id=U)
    assert (porto.text, porto.source_ids, porto.other_words) == ("Maya left Porto in June", ["m3"], [])
    assert (porto.valid_from, porto.valid_to) == (None, dt("2023-06-01"))
    cmem.import_(exported, user_id="u-copy")
    [copy] = cmem.history(user_id="u-copy")
    assert copy.other_words == [(["m2"], "Maya still lives in Porto"), (["m3"], "Maya left Porto in June")]


def test_a_correction_keeps_the_other_statements_words_unless_it_renames_the_fact(cmem: Memory) -> None:
    porto_sessions(cmem)
    cmem.store.update_facts(U, [replace(cmem.history(user_id=U)[0], text="Maya lives in Porto")])
    lives(cmem, "Porto", "2018-01-01", session_id="s2", source_ids=["m2"], text="Maya still lives in Porto")
    [porto] = cmem.history(user_id=U)
    moved_start = cmem.correct(porto.id, user_id=U, valid_from="2017-01-01")
    assert moved_start.other_words == [(["m2"], "Maya still lives in Porto")]
    assert cmem.correct(moved_start.id, user_id=U, object="Braga").other_words == []  # they told of Porto


def test_a_start_said_later_keeps_the_ending_statements_words(cmem: Memory) -> None:
    """Rule 1b: "I left Porto in June" then "I moved to Porto in 2018": the start's words become the
    fact's, the ending's are kept and come back when the start is forgotten."""
    porto_sessions(cmem)
    cmem.forget(user_id=U, fact_id=cmem.history(user_id=U)[0].id)
    lives(cmem, "Porto", end="2023-06-01", session_id="s2", source_ids=["m2"], text="Maya left Porto in June")
    lives(cmem, "Porto", "2018-01-01", session_id="s3", source_ids=["m3"], text="Maya moved to Porto in 2018")
    [porto] = cmem.history(user_id=U)
    assert (porto.valid_from, porto.text) == (dt("2018-01-01"), "Maya moved to Porto in 2018")
    assert porto.other_words == [(["m2"], "Maya left Porto in June")]
    cmem.forget(user_id=U, session_id="s3")  # as if only the ending had been said: its words are the fact's own
    [porto] = cmem.history(user_id=U)
    assert (porto.valid_from, porto.text, porto.source_ids, porto.text_from, porto.other_words) == (
        None, "Maya left Porto in June", ["m2"], [], [])


def lisbon_again(cmem: Memory, user: str = U) -> None:
    """Maya lives in Lisbon from 2017 (s1) and, said in s2, from 2021: one fact, the second start kept."""
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01"), ("s3", "2024-03-01")):
        cmem.store.ensure_session(user, sid, started_at=dt(start))
    cmem.store.add_messages(user, [msg(1, "s1", "I moved to Lisbon in 2017"), msg(2, "s2", "Back in Lisbon since 2021"),
                                   msg(3, "s3", "I lived in Porto from October 2018")])
    lives(cmem, "Lisbon", "2017-01-01", c=0.8, user=user, session_id="s1", source_ids=["m1"],
          text="Maya moved to Lisbon in 2017")
    lives(cmem, "Lisbon", "2021-03-01", c=0.9, user=user, session_id="s2", source_ids=["m2"],
          text="Maya is back in Lisbon since 2021")


def test_a_value_learned_later_splits_a_fact_said_again_with_a_later_start(cmem: Memory) -> None:
    """"Lisbon from 2017", "Lisbon since 2021" (one fact, its second start kept in ``later_starts``), then
    "Porto from October 2018": Lisbon 2017–2018, Porto 2018–2021, Lisbon from 2021 — each Lisbon with its
    own statement's turns, words and confidence.  The later start survives an export and import, and
    forgetting the turn that said it takes it away."""
    lisbon_again(cmem)
    [lisbon] = cmem.history(user_id=U)
    assert [(d.at, d.turns) for d in lisbon.later_starts] == [(dt("2021-03-01"), ["m2"])]
    exported = cmem.export(user_id=U)
    rep = lives(cmem, "Porto", "2018-10-01", session_id="s3", source_ids=["m3"])
    assert versions(cmem) == [("Lisbon", "2017-01-01", "2018-10-01"), ("Porto", "2018-10-01", "2021-03-01"),
                              ("Lisbon", "2021-03-01", None)]
    first, porto, back = cmem.history(user_id=U)
    assert {f.id for f in rep.added} == {porto.id, back.id} and porto.closed_by == back.id
    assert (first.source_ids, first.text, first.confidence, first.confirmations, first.later_starts) == (
        ["m1"], "Maya moved to Lisbon in 2017", 0.8, [], [])
    assert (back.source_ids, back.text, back.text_from, back.confidence, back.other_words) == (
        ["m2"], "Maya is back in Lisbon since 2021", ["m2"], 0.9, [])
    assert [f.object for f in cmem.facts(user_id=U, subject="Maya", as_of="2022-01-01")] == ["Lisbon"]

    cmem.import_(exported, user_id="u-copy")
    lives(cmem, "Porto", "2018-10-01", user="u-copy")
    assert versions(cmem, user="u-copy") == versions(cmem)

    lisbon_again(cmem, user="u-forgot")
    cmem.forget(user_id="u-forgot", session_id="s2")
    assert cmem.history(user_id="u-forgot")[0].later_starts == []
    lives(cmem, "Porto", "2018-10-01", user="u-forgot")
    assert versions(cmem, user="u-forgot") == [("Lisbon", "2017-01-01", "2018-10-01"), ("Porto", "2018-10-01", None)]


def test_an_ending_said_after_a_stints_end_ends_a_stint_learned_later(cmem: Memory) -> None:
    """"the cat from 2015", "it died in 2018", "it died in 2022" (kept in ``later_ends``), then "a cat from
    2020": the new stint ends in 2022, as it would have had it been said before the second ending."""
    def cat(**when: str) -> None:
        cmem.add_facts([{"subject": "Maya", "relation": "has_pet", "object": "cat", **when}], user_id=U)

    cat(valid_from="2015-01-01")
    cat(valid_to="2018-01-01")
    cat(valid_to="2022-01-01")
    [held] = cmem.history(user_id=U)
    assert held.stated_to == dt("2018-01-01") and [d.at for d in held.later_ends] == [dt("2022-01-01")]
    cat(valid_from="2020-01-01")
    assert versions(cmem, "has_pet") == [("cat", "2015-01-01", "2018-01-01"), ("cat", "2020-01-01", "2022-01-01")]
    assert [f.later_ends for f in cmem.history(user_id=U)] == [[], []]


def test_forgetting_a_repetition_takes_its_confidence_back(cmem: Memory) -> None:
    porto_sessions(cmem)  # m1 says it (at 0.8 below), m2 ends it, m3 says the ending again
    theta = cmem.graph.theta
    [first] = cmem.history(user_id=U)
    cmem.store.update_facts(U, [replace(first, confidence=0.8)])
    lives(cmem, "Porto", end="2023-06-01", c=0.9, session_id="s2", source_ids=["m2"])
    lives(cmem, "Porto", end="2023-06-01", c=0.7, session_id="s3", source_ids=["m3"])
    [porto] = cmem.history(user_id=U)
    assert porto.confidence == refold([(0.8, []), (0.9, []), (0.7, [])], theta) > 0.9
    assert porto.confirmations == [(0.8, ["m1"]), (0.9, ["m2"]), (0.7, ["m3"])]
    exported = cmem.export(user_id=U)
    cmem.forget(user_id=U, session_id="s2")  # the raise m2 gave goes with it, m3's stays
    [porto] = cmem.history(user_id=U)
    assert porto.confidence == refold([(0.8, []), (0.7, [])], theta) < 0.9
    assert porto.confirmations == [(0.8, ["m1"]), (0.7, ["m3"])]
    cmem.forget(user_id=U, session_id="s3")  # as if said once: no trace of how often it was said
    [porto] = cmem.history(user_id=U)
    assert (porto.confidence, porto.confirmations, porto.source_ids) == (0.8, [], ["m1"])
    cmem.import_(exported, user_id="u-copy")  # the confirmations survive an export round trip
    [copy] = cmem.history(user_id="u-copy")
    assert copy.confirmations == [(0.8, ["m1"]), (0.9, ["m2"]), (0.7, ["m3"])]
    cmem.forget(user_id="u-copy", session_id="s3")
    assert cmem.history(user_id="u-copy")[0].confidence == refold([(0.8, []), (0.9, [])], theta)


def test_forgetting_the_turn_that_gave_a_start_makes_it_unknown_again(cmem: Memory) -> None:
    porto_sessions(cmem)  # s1: Maya lives in Porto since 2018; s2 and s3 below
    cmem.forget(user_id=U, fact_id=cmem.history(user_id=U)[0].id)
    lives(cmem, "Porto", end="2023-06-01", session_id="s2", source_ids=["m2"])  # left Porto, start unknown
    lives(cmem, "Porto", "2019-01-01", session_id="s3", source_ids=["m3"])  # the start, said later
    [porto] = cmem.history(user_id=U)
    assert porto.started_by == ["m3"] and versions(cmem) == [("Porto", "2019-01-01", "2023-06-01")]
    exported = cmem.export(user_id=U)
    cmem.forget(user_id=U, session_id="s3")
    [porto] = cmem.history(user_id=U)
    assert (porto.started_by, porto.source_ids) == ([], ["m2"])
    assert versions(cmem) == [("Porto", None, "2023-06-01")]  # as if the start had never been said
    cmem.import_(exported, user_id="u-copy")
    assert [f.started_by for f in cmem.history(user_id="u-copy")] == [["m3"]]


def test_an_import_into_a_user_who_knows_the_entity_merges_the_histories(cmem: Memory) -> None:
    lives(cmem, "Lisbon", "2020-01-01", user="u-old")
    exported = cmem.export(user_id="u-old")
    lives(cmem, "Berlin", "2022-01-01")  # U knows another Maya entity: same name, another id
    cmem.import_(exported, user_id=U)
    assert [e.name for e in cmem.entities(user_id=U)].count("Maya") == 1  # before: two Mayas
    assert versions(cmem) == [("Lisbon", "2020-01-01", "2022-01-01"), ("Berlin", "2022-01-01", None)]
    assert [f.object for f in cmem.facts(user_id=U, subject="Maya", as_of="2021-01-01")] == ["Lisbon"]
    assert cmem.import_(exported, user_id=U)["facts"] == 0  # again: nothing new, nothing doubled
    assert len(cmem.history(user_id=U, other_side=False)) == 2


def test_a_backup_restored_after_a_forget_joins_the_slot_in_time_order(cmem: Memory) -> None:
    """The restored fact comes back as it was exported, open; the move said since the forget closes it,
    as it would have had the fact never gone (no two homes at once)."""
    cmem.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id=U)  # Maya stays
    lives(cmem, "Porto", "2018-01-01")
    backup = cmem.export(user_id=U)
    cmem.forget(user_id=U, fact_id=cmem.history(user_id=U, relation="lives_in")[0].id)
    lives(cmem, "Lisbon", "2020-01-01")
    assert cmem.import_(backup)["facts"] == 1
    assert versions(cmem) == [("Porto", "2018-01-01", "2020-01-01"), ("Lisbon", "2020-01-01", None)]
    assert cmem.import_(backup)["facts"] == 0 and len(cmem.history(user_id=U)) == 3


def test_a_backup_restored_after_forgetting_renamed_an_entity_names_it_as_it_is_now(cmem: Memory) -> None:
    """Forgetting s1 renamed the clinic "ZC"; the backup's facts say "Zyxwqmarker Clinic".  Restored, they
    join the entity under the name it has now, and the old name is its alias again (its turns are back)."""
    _clinic_then_zc(cmem)
    st = cmem.store
    st.put_vectors(U, "fact", [(f.id, [0.0, 1.0]) for f in cmem.history(user_id=U)], "test-embedder")
    backup = cmem.export(user_id=U)
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 1
    cmem.import_(backup)
    [clinic] = [e for e in cmem.entities(user_id=U) if "ZC" in (e.name, *e.aliases)]
    assert (clinic.name, clinic.aliases) == ("ZC", ["Zyxwqmarker Clinic"])
    assert sorted((f.subject, f.relation, f.object) for f in cmem.history(user_id=U)) == [
        ("Maya", "works_at", "ZC"), ("ZC", "located_in", "Porto")]
    assert cmem.resolver.lookup(U, ["Zyxwqmarker Clinic"]) == {"Zyxwqmarker Clinic": clinic.id}
    works = next(f.id for f in cmem.history(user_id=U) if f.relation == "works_at")
    assert works not in st.vector_ids(U, "fact", "test-embedder")  # made of the old name: embedded again


def test_an_import_that_knows_an_entity_by_an_alias_names_it_as_the_user_does(cmem: Memory) -> None:
    cmem.add_facts([{"subject": "Mom", "relation": "lives_in", "object": "Braga"}], user_id="u-old")
    lives(cmem, "Porto", "2018-01-01")
    cmem.alias("Maya", "Mom", user_id=U)
    cmem.import_(cmem.export(user_id="u-old"), user_id=U)
    assert {f.subject for f in cmem.history(user_id=U, other_side=False)} == {"Maya"}
    assert [e.name for e in cmem.entities(user_id=U)].count("Mom") == 0


def test_a_turn_keeps_its_speakers_clock(cmem: Memory) -> None:
    said = "2022-12-31T20:00:00-05:00"  # New Year's Eve in New York: 01:00 on 1 January in UTC
    cmem.store.add_messages(U, [Message(id="m1", user_id=U, session_id="s1", speaker="Maya", text="hi",
                                        timestamp=datetime.fromisoformat(said), recorded_at=dt("2023-01-01"))])
    cmem.store.add_messages(U, [msg(2, "s1", "no offset given")])
    first, second = cmem.messages(user_id=U)
    assert first.timestamp.isoformat() == said and first.timestamp.utcoffset() == timedelta(hours=-5)
    assert second.timestamp.utcoffset() == timedelta(0)
    exported = cmem.export(user_id=U)
    assert [r["utc_offset"] for r in exported["tables"]["messages"]] == [-300, None]
    cmem.import_(exported, user_id="u-copy")
    assert cmem.messages(user_id="u-copy")[0].timestamp.isoformat() == said


def test_forgetting_the_end_of_a_stint_whose_start_came_later_reopens_it(cmem: Memory) -> None:
    porto_sessions(cmem)
    cmem.forget(user_id=U, fact_id=cmem.history(user_id=U)[0].id)
    lives(cmem, "Porto", end="2023-06-01", session_id="s2", source_ids=["m2"], text="Maya left Porto in June")
    lives(cmem, "Porto", "2019-01-01", session_id="s3", source_ids=["m3"], text="Maya moved to Porto in 2019")
    cmem.forget(user_id=U, session_id="s2")  # the end's turn: its date and its words go
    [porto] = cmem.history(user_id=U)
    assert versions(cmem) == [("Porto", "2019-01-01", None)] and porto.ended_by == []
    assert "left Porto" not in json.dumps(everything_of(cmem, U))


def test_a_raise_recorded_before_confirmations_existed_is_kept(cmem: Memory) -> None:
    porto_sessions(cmem)
    [first] = cmem.history(user_id=U)  # as an older chronomem left it: raised, no confirmations
    cmem.store.update_facts(U, [replace(first, confidence=0.95, source_ids=["m1", "m2"])])
    cmem.forget(user_id=U, session_id="s2")  # nothing tells which raise m2 gave: the confidence stays
    [porto] = cmem.history(user_id=U)
    assert (porto.confidence, porto.source_ids, porto.confirmations) == (0.95, ["m1"], [])


def test_forgetting_the_turns_that_taught_an_alias_forgets_it(cmem: Memory) -> None:
    st = cmem.store
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01"), ("s3", "2024-03-01"), ("s4", "2024-04-01")):
        st.ensure_session(U, sid, started_at=dt(start))
    st.add_messages(U, [msg(1, "s1", "I live in New York City"), msg(2, "s2", "I flew back to NYC"),
                        msg(3, "s3", "I visited the Big Apple"), msg(4, "s4", "Back in NYC again")])

    def said(obj: str, sid: str, mid: str) -> None:
        cmem.add_facts([{"subject": "Maya", "relation": "visited", "object": obj, "source_ids": [mid]}],
                       user_id=U, session_id=sid)

    cmem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "New York City", "source_ids": ["m1"]}],
                   user_id=U, session_id="s1")
    said("NYC", "s2", "m2")
    said("NYC", "s4", "m4")  # the same alias said again
    cmem.alias("New York City", "The Big Apple", user_id=U)  # given by hand
    said("The Big Apple", "s3", "m3")

    def aliases() -> list[str]:
        return sorted(a for e in cmem.entities(user_id=U) if e.name == "New York City" for a in e.aliases)

    assert aliases() == ["NYC", "The Big Apple"]
    exported = cmem.export(user_id=U)
    cmem.forget(user_id=U, session_id="s2")
    assert aliases() == ["NYC", "The Big Apple"]  # s4 still says it
    cmem.forget(user_id=U, session_id="s4")
    assert aliases() == ["The Big Apple"]  # no turn says "NYC" any more
    assert "nyc" not in json.dumps(everything_of(cmem, U)).lower()
    cmem.forget(user_id=U, session_id="s3")
    assert aliases() == ["The Big Apple"]  # an alias given by hand is the user's own, kept
    cmem.import_(exported, user_id="u-copy")  # what taught each alias survives an export round trip
    learned = {r["alias"]: r["learned_from"] for r in everything_of(cmem, "u-copy")["entity_names"]}
    assert learned["NYC"] == '["m2", "m4"]' and learned["The Big Apple"] is None


def _clinic_then_zc(cmem: Memory) -> Fact:
    """s1: "I work at Zyxwqmarker Clinic" (m1); s2: "ZC moved to Porto" (m2, the acronym: an alias).
    Returns Maya's works_at fact."""
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01")):
        cmem.store.ensure_session(U, sid, started_at=dt(start))
    cmem.store.add_messages(U, [msg(1, "s1", "I work at Zyxwqmarker Clinic"), msg(2, "s2", "ZC moved to Porto")])
    rep = cmem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Zyxwqmarker Clinic",
                           "source_ids": ["m1"]}], user_id=U, session_id="s1")
    cmem.add_facts([{"subject": "ZC", "relation": "located_in", "object": "Porto", "source_ids": ["m2"]}],
                   user_id=U, session_id="s2")
    return rep.added[0]


def test_forgetting_the_turns_that_named_an_entity_renames_it(cmem: Memory) -> None:
    """"I work at Zyxwqmarker Clinic" (s1), then "ZC moved to Porto" (s2, an acronym: an alias).  Forgetting
    s1 took its facts but left the name it gave in the entity and in s2's facts; the entity now goes by
    the spelling s2 still says, and nothing made of the old name stays."""
    st = cmem.store
    _clinic_then_zc(cmem)
    [clinic] = [e for e in cmem.entities(user_id=U) if e.name == "Zyxwqmarker Clinic"]
    assert clinic.aliases == ["ZC"]  # the acronym joined the entity s1 named
    [porto_fact] = cmem.history(user_id=U, relation="located_in")
    assert porto_fact.subject == "Zyxwqmarker Clinic"
    st.put_vectors(U, "entity", [(clinic.id, [1.0, 0.0])], "test-embedder")
    st.put_vectors(U, "fact", [(porto_fact.id, [0.0, 1.0])], "test-embedder")

    res = cmem.forget(user_id=U, session_id="s1")
    assert (res.facts_deleted, res.entities_deleted, res.entities_renamed) == (1, 1, 1)  # Maya's job; Maya
    [renamed] = [e for e in cmem.entities(user_id=U) if e.id == clinic.id]
    assert (renamed.name, renamed.aliases) == ("ZC", [])
    [porto_fact] = cmem.history(user_id=U, relation="located_in")
    assert porto_fact.subject == "ZC" and porto_fact.source_ids == ["m2"]
    assert st.vector_ids(U, "entity", "test-embedder") == set()  # embedded again, from the new name, on need
    assert st.vector_ids(U, "fact", "test-embedder") == set()
    assert "zyxwqmarker" not in json.dumps(everything_of(cmem, U)).lower()
    assert [f.subject for f in cmem.search("Where is ZC?", user_id=U).facts] == ["ZC"]
    assert cmem.forget(user_id=U, session_id="s2").entities_renamed == 0  # the rest goes as orphans


def test_an_entity_that_lost_its_name_takes_the_first_spelling_still_said(cmem: Memory) -> None:
    """As if the forgotten turns had never been said: the entity is named as a new one would have been,
    by the first spelling of what remains; a name given by hand stays, as an alias."""
    st = cmem.store
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01")):
        st.ensure_session(U, sid, started_at=dt(start))
    st.add_messages(U, [msg(1, "s1", "I work at Zyxwqmarker Clinic"),
                        msg(2, "s2", "The Zyxwqmarker Clinic moved to Porto"),
                        msg(3, "s2", "ZC is the best"), msg(4, "s2", "ZC, ZC, ZC")])
    cmem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Zyxwqmarker Clinic",
                     "source_ids": ["m1"]}], user_id=U, session_id="s1")
    cmem.add_facts([{"subject": "ZC", "relation": "rated", "object": "best", "source_ids": ["m3", "m4"]}],
                   user_id=U, session_id="s2")
    cmem.alias("ZC", "the clinic", user_id=U)  # the user's own name for it
    cmem.add_facts([{"subject": "The Zyxwqmarker Clinic", "relation": "located_in", "object": "Porto",
                     "source_ids": ["m2"]}], user_id=U, session_id="s2")
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 1
    [clinic] = [e for e in cmem.entities(user_id=U) if e.name not in ("Porto", "best")]
    # m2 came before m3 and m4: the first spelling still said, not the most said nor the one given by hand
    assert (clinic.name, sorted(clinic.aliases)) == ("The Zyxwqmarker Clinic", ["ZC", "the clinic"])
    assert {f.subject for f in cmem.history(user_id=U)} == {"The Zyxwqmarker Clinic"}


def test_an_imported_name_the_user_had_keeps_the_turns_of_both(cmem: Memory) -> None:
    """Importing bob's memory of Maya into alice, who knew her from s1: forgetting s1 must leave the name
    that bob's turns say too, or Maya's facts would name an entity no spelling resolves to."""
    st = cmem.store
    for user, sid, i, text in ((U, "s1", 1, "Maya lives in Porto"), (V, "s7", 7, "Maya works at Acme")):
        st.ensure_session(user, sid, started_at=dt("2024-01-01"))
        st.add_messages(user, [msg(i, sid, text, user=user)])
    lives(cmem, "Porto", source_ids=["m1"], session_id="s1")
    cmem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Acme", "source_ids": ["m7"]}],
                   user_id=V, session_id="s7")
    cmem.import_(cmem.export(user_id=V), user_id=U)
    learned = {r["alias"]: r["learned_from"] for r in everything_of(cmem, U)["entity_names"]}
    assert learned["Maya"] == '["m1", "m7"]'
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 0
    [maya] = [e for e in cmem.entities(user_id=U) if e.name == "Maya"]
    assert cmem.resolver.lookup(U, ["maya"]) == {"maya": maya.id}


def test_an_entity_named_by_turns_its_name_forgot_keeps_its_name(cmem: Memory) -> None:
    """Facts that still name an entity whose every spelling forgetting took (written with the turns not
    recorded on the name): the name stays, recorded with those facts' turns, so resolution finds it."""
    st = cmem.store
    st.ensure_session(U, "s1", started_at=dt("2024-01-01"))
    st.ensure_session(U, "s2", started_at=dt("2024-02-01"))
    st.add_messages(U, [msg(1, "s1", "I live in Porto"), msg(2, "s2", "Porto is sunny")])
    lives(cmem, "Porto", source_ids=["m1"], session_id="s1")
    cmem.add_facts([{"subject": "Porto", "relation": "has_weather", "object": "sun", "source_ids": ["m2"]}],
                   user_id=U, session_id="s2")
    rows = everything_of(cmem, U)
    for r in rows["entity_names"]:
        if r["alias"] == "Porto":
            assert r["learned_from"] == '["m1", "m2"]'
            r["learned_from"] = '["m1"]'  # as if m2's use of the name had not been recorded
    st.delete_user(U)
    st.load_user(U, rows)
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 0
    [porto] = [e for e in cmem.entities(user_id=U) if e.name == "Porto"]
    assert cmem.resolver.lookup(U, ["porto"]) == {"porto": porto.id}
    learned = {r["alias"]: r["learned_from"] for r in everything_of(cmem, U)["entity_names"]}
    assert learned["Porto"] == '["m2"]'


def test_a_name_said_in_every_turn_remembers_a_turn_a_session(cmem: Memory) -> None:
    """Turns are forgotten with their session, so once a spelling's list holds 8 turns a turn of a session
    it lists adds nothing: the user's own name, said in every turn, must not become a list of every turn."""
    st = cmem.store
    st.ensure_session(U, "s1", started_at=dt("2024-01-01"))
    st.ensure_session(U, "s2", started_at=dt("2024-02-01"))
    st.add_messages(U, [msg(i, "s1" if i <= 10 else "s2", f"Porto again, {i}") for i in range(1, 13)])
    for i in range(1, 13):
        cmem.add_facts([{"subject": "Maya", "relation": "visited", "object": "Porto", "source_ids": [f"m{i}"]}],
                       user_id=U, session_id="s1" if i <= 10 else "s2")
    learned = {r["alias"]: json.loads(str(r["learned_from"])) for r in everything_of(cmem, U)["entity_names"]}
    assert learned["Porto"] == ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m11"]  # s1 full at 8: then s2
    cmem.forget(user_id=U, session_id="s1")
    assert [e.name for e in cmem.entities(user_id=U) if e.name == "Porto"] == ["Porto"]  # s2 says it
    cmem.forget(user_id=U, session_id="s2")
    assert cmem.entities(user_id=U) == []


def test_a_name_the_user_writes_by_hand_stays_when_its_turns_go(cmem: Memory) -> None:
    """A correction (or add_facts without turns) that names "Acme Corp" is the user's own word for it: when
    the session that first said it is forgotten, the entity keeps the name and it still resolves."""
    st = cmem.store
    for i, sid in enumerate(("s1", "s2", "s3")):
        st.ensure_session(U, sid, started_at=dt(f"2024-0{i + 1}-01"))
    st.add_messages(U, [msg(1, "s1", "I work at Acme Corp"), msg(2, "s2", "AC is hiring"), msg(3, "s3", "I like Globex")])
    cmem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Acme Corp", "source_ids": ["m1"]}],
                   user_id=U, session_id="s1")
    cmem.add_facts([{"subject": "AC", "relation": "is", "object": "hiring", "source_ids": ["m2"]}],
                   user_id=U, session_id="s2")
    rep = cmem.add_facts([{"subject": "Maya", "relation": "likes", "object": "Globex", "source_ids": ["m3"]}],
                         user_id=U, session_id="s3")
    cmem.correct(rep.added[0].id, user_id=U, object="Acme Corp")  # "it is Acme Corp I like, not Globex"
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 0
    assert [f.object for f in cmem.facts(user_id=U, subject="Maya")] == ["Acme Corp"]
    assert set(cmem.resolver.lookup(U, ["Acme Corp", "AC"])) == {"Acme Corp", "AC"}


def test_a_correction_of_a_date_leaves_the_names_to_their_turns(cmem: Memory) -> None:
    """Correcting only when something held does not make its names the user's own: forgetting the turns
    that said "Zyxwqmarker Clinic" still renames the entity that "ZC" names."""
    works = _clinic_then_zc(cmem)
    cmem.correct(works.id, user_id=U, valid_from="2020-01-01")
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 1
    assert [f.subject for f in cmem.history(user_id=U)] == ["ZC"]


def test_naming_an_entity_to_alias_it_leaves_its_name_to_its_turns(cmem: Memory) -> None:
    _clinic_then_zc(cmem)
    cmem.alias("Zyxwqmarker Clinic", "the clinic", user_id=U)  # the name only says which entity
    assert cmem.forget(user_id=U, session_id="s1").entities_renamed == 1
    [clinic] = [e for e in cmem.entities(user_id=U) if e.name != "Porto"]
    assert (clinic.name, clinic.aliases) == ("ZC", ["the clinic"])  # the alias given by hand stays


def test_two_casings_of_a_name_in_one_batch_record_both_turns(cmem: Memory) -> None:
    st = cmem.store
    for i, sid in enumerate(("s0", "s1", "s2")):
        st.ensure_session(U, sid, started_at=dt(f"2024-0{i + 1}-01"))
    st.add_messages(U, [msg(0, "s0", "Zyx Clinic opened"), msg(1, "s1", "Zyx Clinic is big"),
                        msg(2, "s2", "zyx clinic is old")])
    cmem.add_facts([{"subject": "Zyx Clinic", "relation": "is", "object": "open", "source_ids": ["m0"]}],
                   user_id=U, session_id="s0")
    cmem.add_facts([{"subject": "Zyx Clinic", "relation": "has_size", "object": "big", "source_ids": ["m1"]},
                    {"subject": "zyx clinic", "relation": "has_age", "object": "old", "source_ids": ["m2"]}],
                   user_id=U)
    learned = {r["norm"]: json.loads(str(r["learned_from"])) for r in everything_of(cmem, U)["entity_names"]}
    assert learned["zyx clinic"] == ["m0", "m1", "m2"]


def test_a_session_is_named_by_its_first_turn_once_a_list_is_long(cmem: Memory) -> None:
    """A list of more than 8 turns keeps one turn of a session it lists: the earliest one, which is what
    the first spelling still said is judged by."""
    st = cmem.store
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01")):
        st.ensure_session(U, sid, started_at=dt(start))
    st.add_messages(U, [msg(i, "s1" if i < 10 else "s2", f"Porto {i}") for i in range(1, 13)])
    for i in (1, 2, 3, 4, 5, 6, 7, 8, 12, 11):  # m11 was said before m12, reported after it
        cmem.add_facts([{"subject": "Porto", "relation": "is", "object": f"nice {i}", "source_ids": [f"m{i}"]}],
                       user_id=U)
    learned = {r["norm"]: json.loads(str(r["learned_from"])) for r in everything_of(cmem, U)["entity_names"]}
    assert learned["porto"] == ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m11"]


def _mom_and_linda(cmem: Memory) -> None:
    st = cmem.store
    for sid, start in (("s1", "2024-01-01"), ("s2", "2024-02-01"), ("s3", "2024-03-01")):
        st.ensure_session(U, sid, started_at=dt(start))
    st.add_messages(U, [msg(1, "s1", "Mom lives in Boston since 2019"), msg(2, "s2", "Linda moved to Chicago in 2022"),
                        msg(3, "s2", "Linda loves tea"), msg(4, "s3", "Mom loves tea")])
    for subject, relation, obj, since, mid, sid in (("Mom", "lives_in", "Boston", "2019-01-01", "m1", "s1"),
                                                    ("Linda", "lives_in", "Chicago", "2022-01-01", "m2", "s2"),
                                                    ("Linda", "likes", "tea", None, "m3", "s2"),
                                                    ("Mom", "likes", "tea", None, "m4", "s3")):
        f: dict[str, object] = {"subject": subject, "relation": relation, "object": obj, "source_ids": [mid],
                                "confidence": 0.9}
        if since:
            f["valid_from"] = since
        if relation == "likes":
            f["text"] = f"{subject} loves tea"
        cmem.add_facts([f], user_id=U, session_id=sid)


def test_merging_two_entities_makes_one_history(cmem: Memory) -> None:
    """"Mom" and "Linda" were kept apart by resolution; merged, Linda's history holds both, in time order,
    and the fact both said is one fact said twice."""
    _mom_and_linda(cmem)
    [linda] = [e for e in cmem.entities(user_id=U) if e.name == "Linda"]
    res = cmem.merge_entities("Mom", "Linda", user_id=U)
    assert (res.entity.id, res.entity.name, res.entity.aliases, res.facts_moved, res.facts_folded) == (
        linda.id, "Linda", ["Mom"], 2, 1)
    assert sorted(e.name for e in cmem.entities(user_id=U)) == ["Boston", "Chicago", "Linda", "tea"]
    assert [(f.subject, f.object, f.valid_from and f.valid_from.year, f.valid_to and f.valid_to.year)
            for f in cmem.history(user_id=U, subject="Mom", relation="lives_in")] == [
        ("Linda", "Boston", 2019, 2022), ("Linda", "Chicago", 2022, None)]
    [tea] = cmem.history(user_id=U, subject="Linda", relation="likes")
    assert tea.source_ids == ["m3", "m4"] and tea.confidence > 0.9
    assert (tea.text, tea.other_words) == ("Linda loves tea", [(["m4"], "Mom loves tea")])  # both sayings kept
    assert [f.object for f in cmem.facts(user_id=U, subject="Mom")] == ["Chicago", "tea"]
    cmem.forget(user_id=U, session_id="s3")  # Mom's "loves tea": its raise goes, Linda's statement stays
    [tea] = cmem.history(user_id=U, subject="Linda", relation="likes")
    assert (tea.source_ids, tea.confidence, tea.other_words) == (["m3"], 0.9, [])
    cmem.forget(user_id=U, session_id="s1")  # the name "Mom" went with its only turns
    assert [e.aliases for e in cmem.entities(user_id=U) if e.name == "Linda"] == [[]]


def test_merging_refuses_unknown_or_identical_names_and_changes_nothing(cmem: Memory) -> None:
    _mom_and_linda(cmem)
    before = everything_of(cmem, U)
    with pytest.raises(NotFoundError, match="Grandma"):
        cmem.merge_entities("Grandma", "Linda", user_id=U)
    with pytest.raises(ValidationError, match="same entity"):
        cmem.merge_entities("linda", "Linda", user_id=U)
    with pytest.raises(ValidationError, match="into"):
        cmem.merge_entities("Mom", "  ", user_id=U)
    with pytest.raises(NotFoundError):
        cmem.merge_entities("Mom", "Linda", user_id=V)  # another user's names are not this user's
    assert everything_of(cmem, U) == before
    [mom] = [e for e in cmem.entities(user_id=U) if e.name == "Mom"]
    assert cmem.merge_entities(mom.id, "Linda", user_id=U).entity.aliases == ["Mom"]  # by id too


def test_merging_two_entities_a_fact_relates_is_refused_naming_the_fact(cmem: Memory) -> None:
    """"Linda friend_of Mom": merged, Linda would be her own friend.  The merge names the fact and changes
    nothing; once the fact is corrected (or forgotten) the merge goes through."""
    _mom_and_linda(cmem)
    [friends] = cmem.add_facts([{"subject": "Linda", "relation": "friend_of", "object": "Mom"}], user_id=U).added
    before = everything_of(cmem, U)
    with pytest.raises(ValidationError, match=f"relate it to 'Linda'.*Linda friend_of Mom \\({friends.id}\\)") as e:
        cmem.merge_entities("Mom", "Linda", user_id=U)
    assert e.value.field == "name" and everything_of(cmem, U) == before
    fixed = cmem.correct(friends.id, user_id=U, object="Ana")  # the replaced version holds at no time
    assert cmem.merge_entities("Mom", "Linda", user_id=U).facts_moved == 3
    assert [f.object for f in cmem.facts(user_id=U, subject="Linda", relation="friend_of")] == ["Ana"]
    assert fixed.id in {f.id for f in cmem.history(user_id=U)}


def _stints(mem: Memory) -> list[tuple[str, str | None, str | None, bool]]:
    return [(f.object, f.valid_from and f.valid_from.date().isoformat(), f.valid_to and f.valid_to.date().isoformat(),
             f.start_guessed) for f in mem.history(user_id=U, subject="Maya", relation="lives_in")]


def test_a_start_said_later_replaces_one_that_was_inferred(cmem: Memory) -> None:
    """"I left Porto in June 2015", "I left Lisbon in March 2018": Lisbon is taken to start when Porto
    ended, a guess.  "I moved to Lisbon in 2016" then gives its start; before, it was taken for a
    repetition inside the guessed stint and the guess stayed."""
    lives(cmem, "Porto", end="2015-06-01")
    lives(cmem, "Lisbon", end="2018-03-01", source_ids=["m2"])
    assert _stints(cmem) == [("Porto", None, "2015-06-01", False), ("Lisbon", "2015-06-01", "2018-03-01", True)]
    lives(cmem, "Lisbon", "2016-01-01", source_ids=["m3"])
    assert _stints(cmem) == [("Porto", None, "2015-06-01", False), ("Lisbon", "2016-01-01", "2018-03-01", False)]
    (lisbon,) = [f for f in cmem.history(user_id=U) if f.object == "Lisbon"]
    assert lisbon.started_by == ["m3"] and cmem.facts(user_id=U, as_of="2015-09-01") == []


def test_forgetting_the_fact_a_start_was_inferred_from_infers_it_again(cmem: Memory) -> None:
    porto = lives(cmem, "Porto", end="2015-06-01").added[0]
    lives(cmem, "Braga", end="2012-01-01")
    lives(cmem, "Lisbon", end="2018-03-01")
    assert _stints(cmem) == [("Porto", None, "2015-06-01", False), ("Braga", None, "2012-01-01", False),
                             ("Lisbon", "2015-06-01", "2018-03-01", True)]
    cmem.forget(user_id=U, fact_id=porto.id)
    # inferred from what remains: Lisbon now follows Braga; the stored row says so too
    assert _stints(cmem) == [("Braga", None, "2012-01-01", False), ("Lisbon", "2012-01-01", "2018-03-01", True)]
    assert [f.object for f in cmem.facts(user_id=U, as_of="2014-01-01")] == ["Lisbon"]


def test_forget_everything_leaves_nothing(cmem: Memory) -> None:
    st = cmem.store
    st.ensure_session(U, "s1")
    st.add_messages(U, [msg(1, "s1", "hello there")])
    lives(cmem, "Porto", "2018-01-01")
    st.put_vectors(U, "fact", [("x", [1.0])], "m")
    st.put_checkpoint(Checkpoint(user_id=U, session_id="s1", seq=1, memory="M", created_at=dt("2024-01-02")))
    cmem.forget(user_id=U, everything=True)
    assert all(rows == [] for rows in everything_of(cmem, U).values())
    assert st.search_messages_text(U, "hello") == [] and st.search_facts_text(U, "Porto") == []
    assert st.knn(U, "fact", [1.0]) == [] and st.users() == []


# -- export / import ---------------------------------------------------------------------------------
def _populate(mem: Memory, user: str = U) -> None:
    st = mem.store
    st.ensure_session(user, "s1", started_at=dt("2024-01-01"), agent_id="agent-7")
    st.add_messages(user, [msg(1, "s1", "Ich wohne in Köln — \"quotes\" and 'apostrophes' 😀", user=user)])
    st.mark_extracted(user, ["m1"])
    lives(mem, "Köln", "2018-01-01", user=user, session_id="s1", source_ids=["m1"], intent="TEMPORAL")
    lives(mem, "Zürich", "2021-03-01T12:30:00.123456Z", user=user, text="Maya moved to Zürich")
    lives(mem, "Paris", "2022-01-01", c=0.25, user=user)
    for org, left in (("Acme", "2010-01-01"), ("Globex", "2012-01-01")):  # Globex's start is inferred: 2010
        mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": org, "valid_to": left}], user_id=user)
    mem.alias("Maya", "Maya S.", user_id=user)
    st.put_vectors(user, "entity", [("e1", [0.1, -0.2, 0.3333333])], "mini")
    st.put_checkpoint(Checkpoint(user_id=user, session_id="s1", seq=1, memory="Maya lives in Köln.",
                                 created_at=dt("2024-01-02"), session_time=dt("2024-01-01")))
    st.end_session(user, "s1", dt("2024-01-01T01:00:00Z"))


def test_export_import_round_trip(cmem: Memory, url_factory) -> None:
    _populate(cmem)
    exp = cmem.export(user_id=U)
    assert [r["object"] for r in exp["tables"]["facts"] if r["start_guessed"]] == ["Globex"]
    data = json.loads(json.dumps(exp))  # through JSON, as a file would
    with Memory(url_factory("sqlite")) as other:
        other.import_(data)
        again = other.export(user_id=U)
    assert again["tables"] == exp["tables"]
    cmem.import_(data, user_id=V)  # into another user of the same store
    assert cmem.export(user_id=V)["tables"] == {
        t: [{**r, "user_id": V} for r in rows] for t, rows in exp["tables"].items()}
    cmem.import_(data)  # importing again is idempotent
    assert cmem.export(user_id=U)["tables"] == exp["tables"]
    assert [v[0] for v in versions(cmem, user=V)] == ["Köln", "Zürich", "Paris"]
    assert [f.object for f in cmem.facts(user_id=V, subject="maya s.")] == ["Zürich"]


def test_a_users_rows_come_a_batch_at_a_time_in_key_order(cmem: Memory) -> None:
    _populate(cmem)
    cmem.store.put_vectors(U, "fact", [(f"v{i}", [float(i), 1.0]) for i in range(5)], "m")
    cmem.store.put_vectors(U, "entity", [(f"v{i}", [1.0, float(i)]) for i in range(3)], "m")  # same ids, other kind
    whole = cmem.store.dump_user(U)
    batches = list(cmem.store.iter_user(U, batch=2))
    assert [t for t, _ in batches] == sorted((t for t, _ in batches), key=list(whole).index)  # tables in turn
    assert all(len(rows) <= 2 for _, rows in batches)
    assert {t for t, rows in batches if not rows} == {t for t, rows in whole.items() if not rows}  # one empty batch
    for table, rows in whole.items():
        assert [r for t, b in batches if t == table for r in b] == rows
    assert len(whole["vectors"]) == 9  # and _populate's own
    stopped = cmem.store.iter_user(U, batch=2)
    next(stopped)
    stopped.close()  # an export abandoned half way lets the user's writers go on
    lives(cmem, "Oslo", "2030-01-01")


def test_an_export_written_a_batch_at_a_time_is_the_export(cmem: Memory) -> None:
    _populate(cmem)
    exp = cmem.export(user_id=U)
    out = io.BytesIO()
    counts = cmem.export_to(out, user_id=U)
    assert {**json.loads(out.getvalue()), "exported_at": None} == {**exp, "exported_at": None}
    assert counts == {t: len(rows) for t, rows in exp["tables"].items()}
    empty = io.BytesIO()
    cmem.export_to(empty, user_id="nobody")
    assert all(rows == [] for rows in json.loads(empty.getvalue())["tables"].values())


def test_a_users_writers_go_on_while_the_user_is_dumped(cmem: Memory) -> None:
    """A dump reads one snapshot: the user's own writers neither wait for it nor show in it."""
    import threading

    _populate(cmem)
    before = everything_of(cmem, U)
    dump = cmem.store.iter_user(U, batch=2)
    first = next(dump)  # the snapshot is taken
    writer = threading.Thread(target=lives, args=(cmem, "Oslo", "2030-01-01"))
    writer.start()
    writer.join(timeout=30)
    assert not writer.is_alive(), "the user's writer waited for the dump"
    rows: dict[str, list[dict[str, object]]] = {first[0]: list(first[1])}
    for table, batch in dump:
        rows.setdefault(table, []).extend(batch)
    assert rows == before  # without the fact written meanwhile
    assert "Oslo" in [f.object for f in cmem.history(user_id=U)]


def _as_file(data: dict[str, object]) -> io.BytesIO:
    return io.BytesIO(json.dumps(data, ensure_ascii=False).encode())


def _rows_of(mem: Memory, user: str) -> dict[str, list[dict[str, object]]]:
    return {t: [{**r, "user_id": None} if "user_id" in r else r for r in rows]
            for t, rows in mem.store.dump_user(user).items()}


def test_an_import_read_from_its_file_a_row_at_a_time_is_the_import(cmem: Memory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """import_from reads an export a batch at a time (here one row): what it writes is what import_ writes,
    turns whose previous turn comes in a later batch included, and entities merged across batches."""
    import chronomem.memory

    monkeypatch.setattr(chronomem.memory, "IMPORT_BATCH", 1)
    _populate(cmem, user="src")
    st = cmem.store
    st.ensure_session("src", "s9")
    st.add_messages("src", [msg(11, "s9", "Which instrument did you pick up this winter?", user="src", speaker="Rui"),
                            msg(12, "s9", "The cello, lessons every Tuesday.", user="src"),
                            msg(13, "s9", "Nice!", user="src", speaker="Rui")])
    ids = {"m1": "t9", "m11": "t3", "m12": "t2", "m13": "t1"}  # s9's turns in key order: the reply first
    data = json.loads(re.sub(r"\bm1[123]?\b", lambda m: ids[m.group()], json.dumps(cmem.export(user_id="src"))))
    assert sorted(m["id"] for m in data["tables"]["messages"]) == sorted(ids.values())
    lives(cmem, "Lisbon", "2019-06-01", user="base")  # the targets know another Maya, and Lisbon
    cmem.alias("Maya", "Maya S.", user_id="base")
    base = cmem.export(user_id="base")
    for target in ("t-dict", "t-file"):
        cmem.import_(base, user_id=target)
    assert _rows_of(cmem, "t-dict") == _rows_of(cmem, "t-file")
    by_dict = cmem.import_(json.loads(json.dumps(data)), user_id="t-dict")
    by_file = cmem.import_from(_as_file(data), user_id="t-file")
    assert by_file == by_dict and by_file["facts"] == 5 and by_file["already_present"] > 0  # Maya merged
    assert _rows_of(cmem, "t-file") == _rows_of(cmem, "t-dict")
    assert [e.name for e in cmem.entities(user_id="t-file")].count("Maya") == 1
    for question, found in (("What instrument did she pick up?", ["t2", "t3"]), ("cello tuesday", ["t1", "t2"])):
        for target in ("t-dict", "t-file"):
            assert sorted(i for i, _ in st.search_messages_text(target, question)) == found, (target, question)
    assert cmem.import_from(_as_file(data), user_id="t-file") == cmem.import_(data, user_id="t-dict")  # again
    assert _rows_of(cmem, "t-file") == _rows_of(cmem, "t-dict")


def test_a_bad_row_late_in_an_import_file_leaves_the_user_as_they_were(cmem: Memory,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Earlier batches are written before a later row is read: the import's one transaction takes them back."""
    import chronomem.memory

    monkeypatch.setattr(chronomem.memory, "IMPORT_BATCH", 2)
    _populate(cmem, user="src")
    data = cmem.export(user_id="src")
    lives(cmem, "Lisbon", "2019-06-01")
    before = everything_of(cmem, U)
    last = len(data["tables"]["vectors"]) - 1
    data["tables"]["vectors"][last]["dim"] = 99
    with pytest.raises(ValidationError) as e:
        cmem.import_from(_as_file(data), user_id=U)
    assert e.value.field == f"data.tables.vectors[{last}].dim"
    assert everything_of(cmem, U) == before, "half-written"
    data["tables"]["vectors"][last]["dim"] = len(data["tables"]["vectors"][last]["vec"])
    whole = _as_file(data).getvalue()
    cut = whole.index(b'"checkpoints"')
    with pytest.raises(ValidationError, match="not valid JSON"):  # a file cut short after the facts
        cmem.import_from(io.BytesIO(whole[:cut]), user_id=U)
    assert everything_of(cmem, U) == before, "half-written"
    assert cmem.import_from(io.BytesIO(whole), user_id=U)["facts"] == len(data["tables"]["facts"])


# -- refusing foreign databases -------------------------------------------------------------------------
def test_foreign_database_is_refused(store_url: str) -> None:
    if store_url.startswith("postgres"):
        import psycopg

        from chronomem.store.postgres import split_url

        conninfo, schema = split_url(store_url)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
            conn.execute(f'CREATE TABLE "{schema}".invoices (id int)')
    else:
        import sqlite3

        with sqlite3.connect(store_url) as conn:
            conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(CorruptDatabaseError, match="invoices"):
        Memory(store_url)


def test_held_fact_ids_tells_which_ids_the_user_holds(cmem: Memory) -> None:
    lives(cmem, "Porto", "2018-01-01")
    lives(cmem, "Oslo", "2018-01-01", user=V)
    [mine], [theirs] = cmem.history(user_id=U), cmem.history(user_id=V)
    many = [f"absent{i}" for i in range(5000)]
    assert cmem.store.held_fact_ids(U, [*many, mine.id, theirs.id, mine.id]) == {mine.id}  # another user's: no
    assert cmem.store.held_fact_ids(V, [mine.id, theirs.id]) == {theirs.id}
    assert cmem.store.held_fact_ids(U, []) == set()


def test_reads_by_more_ids_than_a_statement_takes_go_in_chunks(cmem: Memory) -> None:
    """PostgreSQL takes 65,535 parameters a statement (SQLite as built here more): an import of more facts
    than that, or a forget that touches as many entities, reads them by id in chunks, in the one order."""
    lives(cmem, "Porto", "2018-01-01")
    lives(cmem, "Lisbon", "2021-03-01")
    held = cmem.history(user_id=U)
    ids = [f"absent{i}" for i in range(70_000)]
    got = cmem.store.facts(U, ids=[held[1].id, *ids, held[0].id])
    assert [f.id for f in got] == [f.id for f in held]  # ordered by start, as one statement would
    assert [f.id for f in cmem.store.facts(U, ids=[*ids, held[1].id, held[0].id], limit=1)] == [held[0].id]
    # two long lists at once, and any listed filter
    both = cmem.store.facts(U, ids=[*ids[:5000], held[1].id, held[0].id], touching=[*ids[:5000], held[0].subject_id])
    assert [f.id for f in both] == [f.id for f in held]
    closed_by_lisbon = cmem.store.facts(U, closed_by=[*ids[:5000], held[1].id])
    assert [f.id for f in closed_by_lisbon] == [held[0].id]
    assert cmem.store.facts(U, subject_ids=ids[:5000]) == []
    entities = cmem.store.entities(U, ids=[held[0].object_id, *ids, held[0].subject_id])  # type: ignore[list-item]
    assert [e.id for e in entities] == [e.id for e in cmem.entities(user_id=U)][:2]  # in the order of all
