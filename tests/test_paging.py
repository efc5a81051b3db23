"""Paging a user's lists by place (``limit`` / ``after`` in Python, ``cursor`` in REST v1).

A page starts after the place of the last item of the page before, so a walk returns the same items as
one read of the whole list, in the same order, and goes on where it stopped when facts were forgotten
or added meanwhile (an offset skipped one after a forget and repeated one after an earlier fact)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chronomem import EntityPosition, FactPosition, Memory, MessagePosition, SessionPosition, ValidationError
from chronomem.model import Fact
from chronomem.server import create_app
from chronomem.timeutil import utcnow

FACTS: list[dict[str, Any]] = [
    {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2015-01-01"},
    {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2020-03-01"},
    {"subject": "Maya", "relation": "likes", "object": "jazz"},
    {"subject": "Maya", "relation": "likes", "object": "opera"},
    {"subject": "Rui", "relation": "sibling_of", "object": "Maya", "valid_from": "1990-01-01"},  # read from Maya too
    {"subject": "Tiago", "relation": "married_to", "object": "Maya", "valid_from": "2021-06-01"},
    {"subject": "Maya", "relation": "married_to", "object": "Tiago", "valid_from": "2021-06-01"},
    {"subject": "Lucia", "relation": "child_of", "object": "Maya", "valid_from": "2022-02-02"},
    *({"subject": "Maya", "relation": "likes", "object": f"song {i}", "valid_from": "2023-05-05"} for i in range(7)),
]


def walk(read: Callable[..., list[Any]], limit: int) -> list[Any]:
    out: list[Any] = []
    page = read(limit=limit)
    while page:
        assert len(page) <= limit
        out.extend(page)
        page = read(limit=limit, after=page[-1])
    return out


@pytest.fixture
def maya(store_url: str) -> Iterator[Memory]:
    with Memory(store_url, llm=False, embedder=False) as mem:
        mem.add_facts(FACTS[:4], user_id="u")
        mem.add_facts(FACTS[4:], user_id="u")  # one batch: the songs share a start and a recording time
        # facts with no start (a turn gave none; add_facts dates them now) are listed first
        mem.store.update_facts("u", [replace(f, valid_from=None) for f in mem.history(user_id="u", relation="likes")
                                     if f.object in ("jazz", "opera")])
        assert [f.object for f in mem.history(user_id="u")][:2] == ["jazz", "opera"]
        yield mem


@pytest.mark.parametrize("limit", [1, 2, 5, 100])
def test_pages_of_every_list_of_facts_are_the_whole_list_in_its_order(maya: Memory, limit: int) -> None:
    reads: list[Callable[..., list[Fact]]] = [
        lambda **kw: maya.history(user_id="u", **kw),
        lambda **kw: maya.facts(user_id="u", **kw),
        lambda **kw: maya.facts(user_id="u", subject="Maya", **kw),  # with readings from the other side
        lambda **kw: maya.history(user_id="u", object="Maya", **kw),
        lambda **kw: maya.facts(user_id="u", subject="Maya", as_of="2018-01-01", **kw),
        lambda **kw: maya.history(user_id="u", subject="Maya", relation="likes", **kw),
    ]
    for read in reads:
        whole = read()
        assert whole and [f.id for f in walk(read, limit)] == [f.id for f in whole]
    readings = [f for f in maya.facts(user_id="u", subject="Maya") if f.origin.value == "derived"]
    assert {f.relation for f in readings} == {"sibling_of", "married_to", "parent_of"}  # the walks crossed them


def test_a_walk_goes_on_where_it_stopped_when_facts_are_forgotten_or_added(maya: Memory) -> None:
    first = maya.history(user_id="u", limit=4)
    maya.forget(user_id="u", fact_id=first[1].id)  # one the walk passed: an offset would skip the 5th
    maya.add_facts([{"subject": "Maya", "relation": "likes", "object": "fado", "valid_from": "1980-01-01"}],
                   user_id="u")  # one placed before the walk's place: an offset would repeat the 4th
    rest: list[Fact] = []
    page = maya.history(user_id="u", limit=3, after=first[-1])
    while page:
        rest.extend(page)
        page = maya.history(user_id="u", limit=3, after=page[-1])
    seen = [f.id for f in first + rest]
    assert len(seen) == len(set(seen))
    held = {f.id for f in maya.history(user_id="u") if f.object != "fado"}
    assert held - {first[1].id} <= set(seen) and first[1].id not in held


def test_a_position_stands_for_its_fact_after_it_is_forgotten(maya: Memory) -> None:
    whole = maya.history(user_id="u")
    place = FactPosition.of(whole[3])
    maya.forget(user_id="u", fact_id=whole[3].id)
    assert [f.id for f in maya.history(user_id="u", after=place)] == [f.id for f in whole[4:]]


def test_a_reading_from_the_other_side_stands_where_its_stored_fact_does(maya: Memory) -> None:
    reading = next(f for f in maya.facts(user_id="u", subject="Maya") if f.relation == "sibling_of")
    stored = maya.store.facts("u", ids=reading.support_ids)[0]
    assert FactPosition.of(reading) == FactPosition.of(stored) and reading.id != stored.id


def test_positions_sort_as_the_store_lists() -> None:
    from datetime import datetime, timezone

    t = datetime(2020, 1, 1, tzinfo=timezone.utc)
    keys = [FactPosition(None, t, "b"), FactPosition(None, t + timedelta(1), "a"), FactPosition(t, t, "z"),
            FactPosition(t, t + timedelta(1), "a"), FactPosition(t + timedelta(1), t, "a")]
    assert sorted(keys, key=FactPosition.sort_key) == keys


def test_pages_of_turns_are_every_turn_in_order(store_url: str) -> None:
    with Memory(store_url, llm=False, embedder=False) as mem:
        for s in ("s2", "s1"):  # s1's turns come later but sort first on a tie of timestamps
            mem.submit_messages([{"role": "user", "content": f"{s} turn {i}"} for i in range(5)], user_id="u",
                                session_id=s, timestamp="2024-01-01T10:00:00Z", deliver=False)
        whole = mem.messages(user_id="u")
        for limit in (1, 3, 50):
            assert [m.id for m in walk(lambda **kw: mem.messages(user_id="u", **kw), limit)] == [m.id for m in whole]
        assert [m.id for m in mem.messages(user_id="u", after=MessagePosition.of(whole[6]))] == [
            m.id for m in whole[7:]]
        s2 = [m.id for m in whole if m.session_id == "s2"]
        assert [m.id for m in mem.messages(user_id="u", session_id="s2", limit=2, after=whole[0])] == s2[:2]
        assert [m.id for m in mem.messages(user_id="u", session_id="s2", limit=2, after=whole[5])] == s2[1:3]


def test_pages_of_entities_are_every_entity_in_order_with_its_names(store_url: str) -> None:
    with Memory(store_url, llm=False, embedder=False) as mem:
        mem.add_facts(FACTS, user_id="u")  # one batch: entities made in the same instant sort by id
        mem.add_facts([{"subject": "Ana", "relation": "lives_in", "object": "Braga"}], user_id="u")
        mem.alias("Maya", "May", user_id="u")
        mem.alias("Braga", "Bracara", user_id="u")
        whole = mem.entities(user_id="u")
        assert len({e.created_at for e in whole}) < len(whole)  # ties of time, broken by id
        for limit in (1, 2, 7, 100):
            walked = walk(lambda **kw: mem.entities(user_id="u", **kw), limit)
            assert [(e.id, e.name, e.aliases) for e in walked] == [(e.id, e.name, e.aliases) for e in whole]
        assert {e.name: e.aliases for e in whole}["Maya"] == ["May"]
        assert mem.entities(user_id="u", after=whole[3]) == whole[4:]
        assert mem.entities(user_id="u", after=EntityPosition.of(whole[3]), limit=2) == whole[4:6]
        start = EntityPosition(whole[0].created_at - timedelta(microseconds=1), "~")  # a place no entity holds
        assert mem.entities(user_id="u", after=start, limit=3) == whole[:3]
        asked = [whole[5].id, whole[1].id, whole[3].id, whole[1].id]  # by id too: in list order, once each
        assert mem.store.entities("u", asked, after=EntityPosition.of(whole[1]), limit=1) == [whole[3]]
        assert mem.store.entities("u", asked, with_aliases=False) == [replace(e, aliases=[]) for e in
                                                                      (whole[1], whole[3], whole[5])]


def test_pages_of_sessions_list_those_not_started_first(store_url: str) -> None:
    with Memory(store_url, llm=False, embedder=False) as mem:
        for s, when in (("s2", "2024-01-02T10:00:00Z"), ("s1", "2024-01-03T10:00:00Z"), ("s3", "2024-01-02T10:00:00Z")):
            mem.submit_messages([{"role": "user", "content": f"{s} hi"}], user_id="u", session_id=s, timestamp=when,
                                deliver=False)
        for s in ("z", "a"):
            mem.store.ensure_session("u", s)  # no turns, no start
        whole = mem.sessions(user_id="u")
        assert [x.id for x in whole] == ["a", "z", "s2", "s3", "s1"]  # the same in both stores' dialects
        for limit in (1, 2, 10):
            assert walk(lambda **kw: mem.sessions(user_id="u", **kw), limit) == whole
        assert [x.id for x in mem.sessions(user_id="u", after=SessionPosition(None, "b"))] == ["z", "s2", "s3", "s1"]
        assert [x.id for x in mem.sessions(user_id="u", after=whole[2], limit=1)] == ["s3"]


@pytest.mark.parametrize(("kw", "field"), [({"limit": 0}, "limit"), ({"limit": True}, "limit"),
                                           ({"limit": 2**31}, "limit"), ({"limit": "5"}, "limit"),
                                           ({"after": "some id"}, "after"), ({"after": 3}, "after")])
def test_a_bad_limit_or_place_is_refused_by_name(mem: Memory, kw: dict[str, Any], field: str) -> None:
    for read in (mem.facts, mem.history, mem.messages, mem.entities, mem.sessions):
        with pytest.raises(ValidationError) as e:
            read(user_id="u", **kw)
        assert e.value.field == field
    with pytest.raises(ValidationError) as e:  # a fact's place is no place among turns
        mem.messages(user_id="u", after=FactPosition(None, utcnow(), "x"))  # type: ignore[arg-type]
    assert e.value.field == "after"


# -- REST v1 ---------------------------------------------------------------------------------------------------
def rest_walk(c: TestClient, path: str, limit: int, between: Callable[[list[dict[str, Any]]], None] | None = None,
              **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        r = c.get(path, params={**params, "limit": limit, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["items"]) <= limit
        items.extend(body["items"])
        if between is not None and len(items) <= limit:
            between(items)
        if (cursor := body["next_cursor"]) is None:
            return items


def test_rest_pages_are_the_whole_lists_and_survive_a_forget(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m.db", llm=False, embedder=False)
    mem.add_facts(FACTS, user_id="u")
    mem.submit_messages([{"role": "user", "content": f"turn {i}"} for i in range(7)], user_id="u", session_id="s1",
                        deliver=False)
    for u in ("v", "w", "x"):
        mem.add_facts(FACTS[:1], user_id=u)
    with TestClient(create_app(mem, owns_memory=True)) as c:
        for path, params in (("/v1/users/u/facts", {"subject": "Maya"}), ("/v1/users/u/history", {}),
                             ("/v1/users/u/messages", {}), ("/v1/users/u/entities", {}), ("/v1/users", {}),
                             ("/v1/users/u/sessions", {})):
            whole = c.get(path, params={**params, "limit": 500}).json()["items"]
            assert whole and rest_walk(c, path, 2, **params) == whole, path
        assert [u["user_id"] for u in c.get("/v1/users", params={"limit": 500}).json()["items"]] == [
            "u", "v", "w", "x"]

        before = {f.id for f in mem.history(user_id="u")}
        walked = rest_walk(c, "/v1/users/u/history", 3,
                           lambda page: mem.forget(user_id="u", fact_id=page[0]["id"]))
        ids = [f["id"] for f in walked]
        assert len(ids) == len(set(ids)) and set(ids) == before  # the forgotten one was on page 1


def _cursor(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    "nope", _cursor([1, 2]), _cursor({"l": "facts", "a": [1, 2]}), _cursor({"l": "facts", "a": [None, "1", "x"]}),
    _cursor({"l": "facts", "a": [None, 10**30, "x"]}), _cursor({"l": "facts", "a": [None, True, "x"]}),
    _cursor({"l": "facts", "a": [2**61, 0, "x"]}), _cursor({"o": 3}), _cursor({"l": "messages", "a": [0, "s", 1]}),
])
def test_a_cursor_not_of_the_list_is_refused_by_name(mem: Memory, cursor: str) -> None:
    mem.add_facts(FACTS, user_id="u")
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users/u/facts", params={"cursor": cursor})
        assert r.status_code == 422 and r.json()["field"] == "cursor", r.text
        assert len(c.get("/v1/users/u/history", params={"limit": 500}).json()["items"]) == len(
            mem.history(user_id="u"))  # nothing changed


@pytest.mark.parametrize("user", ["a\x1fb", "", " ", 3, None, "u" * 300])
def test_a_user_cursor_no_user_could_hold_is_refused_by_name(mem: Memory, user: Any) -> None:
    mem.add_facts(FACTS[:1], user_id="u")
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users", params={"cursor": _cursor({"l": "users", "a": [user]})})
        assert r.status_code == 422 and r.json()["field"] == "cursor", r.text
        assert c.get("/v1/users", params={"cursor": _cursor({"l": "users", "a": ["t"]})}).json() == {
            "items": [{"user_id": "u"}], "next_cursor": None}


def test_a_cursor_of_another_list_says_so(mem: Memory) -> None:
    mem.add_facts(FACTS, user_id="u")
    with TestClient(create_app(mem)) as c:
        cursor = c.get("/v1/users/u/history", params={"limit": 2}).json()["next_cursor"]
        r = c.get("/v1/users/u/entities", params={"cursor": cursor})
        assert r.status_code == 422 and r.json()["field"] == "cursor" and "another list" in r.text
        assert c.get("/v1/users/u/facts", params={"cursor": cursor}).status_code == 200  # facts and history agree


def test_a_long_id_fits_its_cursor(mem: Memory) -> None:
    long_session = "ß" * 256  # the longest id, two UTF-8 bytes a character
    mem.submit_messages([{"role": "user", "content": f"turn {i}"} for i in range(3)], user_id="u",
                        session_id=long_session, deliver=False)
    with TestClient(create_app(mem)) as c:
        walked = rest_walk(c, "/v1/users/u/messages", 1)
        assert [m["session_id"] for m in walked] == [long_session] * 3


# -- jobs, newest first ----------------------------------------------------------------------------------------
def _queue_jobs(mem: Memory, n: int) -> list[str]:
    ids = []
    for i in range(n):
        job = mem.submit_messages([{"role": "user", "content": f"turn {i}"}], user_id="u", session_id=f"s{i}",
                                  deliver=False)
        ids.append(job.id)
    return ids


def _finish(mem: Memory, job_id: str) -> None:
    from chronomem.jobs import JobStatus

    now, store = utcnow(), mem.store.inner  # workers claim jobs through the store of every tenant
    assert store.claim_job(job_id, "w", now, now + timedelta(minutes=1)) is not None
    assert store.finish_job(job_id, "w", JobStatus.DONE, now, {}, None)


def test_pages_of_jobs_go_on_while_jobs_arrive_and_finish(store_url: str) -> None:
    from chronomem.jobs import JobPosition

    with Memory(store_url, llm=False, embedder=False) as mem:
        _queue_jobs(mem, 7)
        whole = [j.id for j in mem.jobs(user_id="u")]
        assert [j.id for j in walk(lambda **kw: mem.jobs(user_id="u", **kw), 3)] == whole
        first = mem.jobs(user_id="u", status="queued", limit=3)
        for j in first[:2]:
            _finish(mem, j.id)  # they leave the queued list: an offset would skip the next two
        _queue_jobs(mem, 2)  # newer jobs arrive at the front: an offset would repeat two
        rest = mem.jobs(user_id="u", status="queued", after=first[-1])
        assert [j.id for j in first + rest] == whole
        assert [j.id for j in mem.jobs(user_id="u", after=JobPosition.of(first[0]), limit=1)] == whole[1:2]
        with pytest.raises(ValidationError) as e:
            mem.jobs(user_id="u", after="some job")  # type: ignore[arg-type]
        assert e.value.field == "after"


def test_rest_pages_of_jobs_skip_none_when_jobs_finish(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m.db", llm=False, embedder=False)
    _queue_jobs(mem, 6)
    whole = [j.id for j in mem.jobs(user_id="u")]
    with TestClient(create_app(mem, owns_memory=True)) as c:
        walked = rest_walk(c, "/v1/users/u/jobs", 2, lambda page: [_finish(mem, j["id"]) for j in page],
                           status="queued")
        assert [j["id"] for j in walked] == whole
        cursor = c.get("/v1/users/u/jobs", params={"limit": 1}).json()["next_cursor"]
        r = c.get("/v1/users/u/history", params={"cursor": cursor})
        assert r.status_code == 422 and "another list" in r.text


@pytest.mark.parametrize(("make", "field"), [
    (lambda: FactPosition("2020-01-01", utcnow(), "x"), "FactPosition.valid_from"),  # type: ignore[arg-type]
    (lambda: FactPosition(None, None, "x"), "FactPosition.recorded_at"),  # type: ignore[arg-type]
    (lambda: FactPosition(None, utcnow(), 7), "FactPosition.id"),  # type: ignore[arg-type]
    (lambda: MessagePosition(utcnow(), "s", True), "MessagePosition.seq"),
    (lambda: MessagePosition(utcnow(), None, 1), "MessagePosition.session_id"),  # type: ignore[arg-type]
    (lambda: FactPosition(None, utcnow(), "a\x00b"), "FactPosition.id"),  # PostgreSQL's error, SQLite took it
    (lambda: MessagePosition(utcnow(), "s\ud800", 1), "MessagePosition.session_id"),
    (lambda: SessionPosition(None, "x" * 10_000), "SessionPosition.id"),
    (lambda: EntityPosition(utcnow(), "e\x00"), "EntityPosition.id"),
])
def test_a_place_made_of_the_wrong_parts_is_refused_by_name(make: Callable[[], object], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        make()
    assert e.value.field == field


def test_a_naive_time_in_a_place_is_utc_as_everywhere_else(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was read as the machine's local time: on a New York machine, "after 02:00" skipped five hours."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        naive = datetime(2020, 1, 1, 2, 0)
        assert FactPosition(naive, naive, "x") == FactPosition(naive.replace(tzinfo=timezone.utc),
                                                               naive.replace(tzinfo=timezone.utc), "x")
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"t{h}",
                        "valid_from": f"2020-01-01T0{h}:00:00Z"} for h in range(6)], user_id="u")
        after = FactPosition(naive, datetime(2030, 1, 1, tzinfo=timezone.utc), "~")
        assert [f.object for f in mem.facts(user_id="u", after=after)] == ["t3", "t4", "t5"]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_a_job_place_of_the_wrong_parts_is_refused_by_name() -> None:
    from chronomem.jobs import JobPosition

    with pytest.raises(ValidationError) as e:
        JobPosition("yesterday", "j1")  # type: ignore[arg-type]
    assert e.value.field == "JobPosition.created_at"
