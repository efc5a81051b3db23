"""REST addresses every id the library takes: one holding "/" goes into a path as %2F.

Starlette decodes %2F into a separator before routing; :class:`chronomem.server.app.EncodedSlashes`
keeps it inside its segment, and every other percent-encoding decodes as it did.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from explorer_scenario import SUMMARY, TURNS, ExplorerLLM

from chronomem import Memory
from chronomem.limits import MAX_ID_CHARS
from chronomem.server import create_app, explorer, routes
from chronomem.server.app import routing_path

USER = "team/maya"
U = quote(USER, safe="")  # team%2Fmaya


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    mem = Memory(tmp_path / "m.db", llm=ExplorerLLM(), embedder=False)
    with TestClient(create_app(mem)) as c:
        yield c


def objects(c: TestClient, user: str) -> set[str]:
    r = c.get(f"/v1/users/{user}/facts")
    assert r.status_code == 200, r.text
    return {f["object"] for f in r.json()["items"]}


def test_a_user_and_session_holding_a_slash_round_trip_percent_encoded(client: TestClient) -> None:
    c = client
    r = c.post(f"/v1/users/{U}/facts", json={"facts": [{"subject": "Maya", "relation": "likes", "object": "tea"}]})
    assert r.status_code == 200 and r.json()["added"][0]["user_id"] == USER, r.text
    r = c.post(f"/v1/users/{U}/messages", params={"wait": "true"}, json={"session_id": "s/1", "messages": TURNS})
    assert r.status_code == 200 and r.json()["status"] == "done" and r.json()["user_id"] == USER, r.text
    assert c.get(f"/v1/jobs/{r.json()['id']}").json()["user_id"] == USER
    assert [j["user_id"] for j in c.get(f"/v1/users/{U}/jobs").json()["items"]] == [USER]

    assert objects(c, U) == {"tea", "cello"}
    assert [(m["session_id"], m["text"]) for m in c.get(f"/v1/users/{U}/messages").json()["items"]] == [
        ("s/1", t["text"]) for t in TURNS]
    assert [s["id"] for s in c.get(f"/v1/users/{U}/sessions").json()["items"]] == ["s/1"]
    assert c.get("/v1/users").json()["items"] == [{"user_id": USER}]
    [tea] = [f for f in c.get(f"/v1/users/{U}/facts").json()["items"] if f["object"] == "tea"]
    assert c.get(f"/v1/users/{U}/facts/{tea['id']}").json()["id"] == tea["id"]
    graph = c.get(f"/v1/users/{U}/graph", params={"entity": "Maya"}).json()  # the explorer's routes too
    assert {e["fact"]["object"] for e in graph["edges"]} == {"tea", "cello"}

    # "team" and "maya" are other users; a literal "/" still separates segments
    assert objects(c, "team") == objects(c, "maya") == set()
    assert c.get("/v1/users/maya/messages").json()["items"] == []
    assert c.get(f"/v1/users/{USER}/facts").status_code == 404

    r = c.post(f"/v1/users/{U}/sessions/s%2F1/end", params={"wait": "true"})
    assert r.status_code == 200 and (r.json()["session_id"], r.json()["status"]) == ("s/1", "done"), r.text
    assert c.get(f"/v1/users/{U}/summary").json()["summary"] == SUMMARY
    assert c.get("/v1/users/maya/summary").json()["summary"] == ""
    assert c.delete(f"/v1/users/{U}/sessions/s%2F1").json()["facts_deleted"] == 1
    assert objects(c, U) == {"tea"}
    assert c.delete(f"/v1/users/{U}").json()["facts_deleted"] == 1
    assert c.get("/v1/users").json()["items"] == []


def test_other_percent_encodings_decode_as_before(client: TestClient) -> None:
    ids = ["50% off", "naïve café", "a/b", "a", "b", "x%y/z", "/lead", "trail/"]
    for i, user in enumerate(ids):
        r = client.post(f"/v1/users/{quote(user, safe='')}/facts",
                        json={"facts": [{"subject": "Maya", "relation": "likes", "object": f"o{i}"}]})
        assert r.status_code == 200 and r.json()["added"][0]["user_id"] == user, (user, r.text)
    assert {u["user_id"] for u in client.get("/v1/users", params={"limit": 100}).json()["items"]} == set(ids)
    for i, user in enumerate(ids):
        assert objects(client, quote(user, safe="")) == {f"o{i}"}, user
    assert objects(client, "naïve café") == {"o1"}  # unencoded: the client's own encoding, as before
    long_id = "t/" + "u" * (MAX_ID_CHARS - 2)  # the length limit counts the id, not its encoding
    assert client.post(f"/v1/users/{quote(long_id, safe='')}/facts", json={"facts": [
        {"subject": "Maya", "relation": "likes", "object": "tea"}]}).status_code == 200
    assert client.get(f"/v1/users/{quote(long_id + 'u', safe='')}/facts").status_code == 422


@pytest.mark.parametrize("user", ["team/maya", "a%2Fb", "a%2fb", "100%41", "%", "50% off", "naïve/café", "//"])
def test_routing_keeps_an_encoded_slash_in_its_segment(user: str) -> None:
    raw = f"/v1/users/{quote(user, safe='')}/facts"
    scope = {"type": "http", "path": unquote(raw), "raw_path": raw.encode()}  # as uvicorn makes it
    segments = routing_path(scope).split("/")
    assert len(segments) == 5 and unquote(segments[3]) == user


def test_routing_path_edge_cases() -> None:
    raw = "/v1/users/%%2F%2/facts"  # stray "%"s stay literal, as plain decoding leaves them: "%/%2"
    assert routing_path({"path": unquote(raw), "raw_path": raw.encode()}).split("/")[3] == "%25%2F%252"
    assert routing_path({"path": "/v1/users/50%/facts"}) == "/v1/users/50%25/facts"  # no raw_path
    # a path rewritten upstream (raw_path no longer decodes to it) is routed as given
    scope = {"path": "/v1/users/u1/facts", "raw_path": b"/api/v1/users/a%2Fb/facts"}
    assert routing_path(scope) == "/v1/users/u1/facts"
    scope = {"path": "/api/v1/users/team/maya/facts", "root_path": "/api", "raw_path": b"/v1/users/team%2Fmaya/facts"}
    assert routing_path(scope) == "/api/v1/users/team%2Fmaya/facts"  # a root_path the raw path lacks
    literal = "/v1/users/team/maya/facts"
    assert routing_path({"path": literal, "raw_path": literal.encode()}) == literal


def test_every_path_parameter_is_decoded(tmp_path: Path) -> None:
    app = create_app(Memory(tmp_path / "p.db", embedder=False))
    found = [r for r in [*routes.router.routes, *explorer.router.routes, *app.routes] if isinstance(r, APIRoute)]
    params = [(r.path, p) for r in found for p in r.dependant.path_params]
    assert len(params) > 20
    for path, p in params:  # EncodedSlashes leaves %2F and %25 encoded; FromPath decodes them once
        assert routes.FromPath in p.field_info.metadata, (path, p.name)
    app.state.tenancy.close()
    app.state.memory.close()
