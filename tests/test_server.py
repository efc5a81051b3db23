"""The REST service over a real Memory (SQLite), through FastAPI's test client."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_extract_pipeline import ScriptedLLM, conv

from chronomem import Memory
from chronomem.server import create_app


@pytest.fixture
def client(tmp_path: Path):
    mem = Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False)
    with TestClient(create_app(mem)) as c:
        yield c


def test_facts_round_trip_over_http(client: TestClient) -> None:
    r = client.post("/v1/users/u1/facts", json={"facts": [
        {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"},
        {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2021-01-01"}]})
    assert r.status_code == 200 and len(r.json()["added"]) == 2
    now = client.get("/v1/users/u1/facts", params={"subject": "maya"}).json()["items"]
    assert [f["object"] for f in now] == ["Lisbon"]
    then = client.get("/v1/users/u1/facts", params={"subject": "Maya", "as_of": "2019-01-01"}).json()["items"]
    assert [f["object"] for f in then] == ["Porto"]
    hist = client.get("/v1/users/u1/history", params={"subject": "Maya"}).json()["items"]
    assert [f["object"] for f in hist] == ["Porto", "Lisbon"]
    assert client.get("/v1/users/u2/facts").json() == {"items": [], "next_cursor": None}  # another user sees nothing


def test_messages_search_answer_and_forget(client: TestClient) -> None:
    r = client.post("/v1/users/u1/messages", params={"wait": "true"}, json={"session_id": "s1", "messages": conv(
        "I live in Berlin and work at Acme.", "My dog Pixel is the best.")})
    body = r.json()
    assert r.status_code == 200 and body["status"] == "done", body
    assert body["result"]["messages_stored"] == 2 and len(body["result"]["added"]) == 3
    hits = client.post("/v1/users/u1/search", json={"query": "Where does Maya live?"}).json()
    assert "Berlin" in [f["object"] for f in hits["facts"]]
    assert client.delete("/v1/users/u1/sessions/s1").json()["facts_deleted"] == 3
    assert client.get("/v1/users/u1/facts").json()["items"] == []


def test_two_entities_merge_and_take_aliases_over_http(client: TestClient) -> None:
    client.post("/v1/users/u1/facts", json={"facts": [
        {"subject": "Mom", "relation": "lives_in", "object": "Boston", "valid_from": "2019-01-01"},
        {"subject": "Linda", "relation": "lives_in", "object": "Chicago", "valid_from": "2022-01-01"}]})
    r = client.post("/v1/users/u1/entities/merge", json={"name": "mom", "into": "Linda"})
    assert r.status_code == 200, r.json()
    assert r.json()["entity"]["aliases"] == ["Mom"] and (r.json()["facts_moved"], r.json()["facts_folded"]) == (1, 0)
    hist = client.get("/v1/users/u1/history", params={"subject": "Mom"}).json()["items"]
    assert [(f["subject"], f["object"], f["valid_to"]) for f in hist] == [
        ("Linda", "Boston", "2022-01-01T00:00:00+00:00"), ("Linda", "Chicago", None)]
    r = client.post("/v1/users/u1/entities/aliases", json={"name": "Linda", "alias": "Lin"})
    assert r.status_code == 200 and sorted(r.json()["aliases"]) == ["Lin", "Mom"]
    r = client.post("/v1/users/u1/entities/aliases", json={"name": "Boston", "alias": "lin"})
    assert r.status_code == 422 and r.json()["field"] == "alias" and "merge" in r.json()["detail"]
    r = client.post("/v1/users/u1/entities/merge", json={"name": "Grandma", "into": "Linda"})
    assert r.status_code == 404 and "Grandma" in r.json()["detail"]
    r = client.post("/v1/users/u1/entities/merge", json={"name": "Mom", "into": "Linda"})
    assert r.status_code == 422 and r.json()["field"] == "name"
    r = client.post("/v1/users/u1/entities/merge", json={"name": "Mom", "into": "Linda", "keep": "both"})
    assert r.status_code == 422


def test_errors_have_status_and_field(client: TestClient) -> None:
    r = client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "lives_in",
                                                            "object": "Porto", "valid_from": "soon"}]})
    assert r.status_code == 422 and r.json()["field"] == "facts[0].valid_from"
    assert client.delete("/v1/users/u1/facts/nope").status_code == 404
    r = client.get("/v1/users/u1/facts", params={"as_of": "not-a-date"})
    assert r.status_code == 422


def test_times_are_iso_strings_as_on_every_surface(client: TestClient) -> None:
    # pydantic alone reads a bare number as Unix seconds: as_of=2020 would have asked about 1970
    for params in ({"as_of": "2020"}, {"as_of": "-1"}, {"as_of": "1700000000"}):
        r = client.get("/v1/users/u1/facts", params=params)
        assert (r.status_code, r.json()["field"]) == (422, "as_of"), params
        assert "ISO-8601" in r.json()["detail"] and "Value error" not in r.json()["detail"]
    r = client.post("/v1/users/u1/messages", json={"messages": [{"speaker": "Maya", "text": "hi",
                                                                 "timestamp": 1700000000}]})
    assert (r.status_code, r.json()["field"]) == (422, "messages[0].timestamp")
    r = client.patch("/v1/users/u1/facts/f1", json={"valid_from": 2021})
    assert (r.status_code, r.json()["field"]) == (422, "valid_from")
    assert client.get("/v1/users/u1/messages").json()["items"] == []  # nothing written
    r = client.get("/v1/users/u1/summary", params={"as_of": "2020-01-01T00:00:00+05:00"})
    assert r.json()["as_of"] == "2019-12-31T19:00:00+00:00"  # read as every surface reads it, echoed in UTC
    r = client.post("/v1/users/u1/messages", params={"wait": "true"}, json={"session_id": "s9", "messages": [
        {"speaker": "Maya", "text": "Nice!", "timestamp": "2024-05-01T20:00:00-04:00"}]})
    assert client.get("/v1/users/u1/messages").json()["items"][0]["timestamp"] == "2024-05-01T20:00:00-04:00"
    r = client.get("/v1/users/u1/summary", params={"as_of": "9999-12-31T23:00:00-05:00"})
    assert r.status_code == 422 and "between the years 1 and 9999" in r.json()["detail"]


def test_rest_writes_times_as_the_library_cli_and_mcp_do(client: TestClient) -> None:
    # UTC as "+00:00" (chronomem.timeutil.iso), never "Z"; a turn keeps its own offset; "Z" is still read
    r = client.post("/v1/users/u1/facts", json={"facts": [
        {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01T00:00:00Z"}]})
    added = r.json()["added"][0]
    assert added["valid_from"] == "2018-01-01T00:00:00+00:00" and added["recorded_at"].endswith("+00:00")
    [lib] = client.app.state.memory.facts(user_id="u1")  # type: ignore[attr-defined]
    [rest] = client.get("/v1/users/u1/facts").json()["items"]
    assert {k: rest[k] for k in ("valid_from", "valid_to", "recorded_at", "stated_to")} == {
        k: lib.to_dict()[k] for k in ("valid_from", "valid_to", "recorded_at", "stated_to")}
    job = client.post("/v1/users/u1/messages", params={"wait": "true"}, json={"session_id": "s1", "messages": [
        {"speaker": "Maya", "text": "Hi.", "timestamp": "2024-05-01T20:00:00Z"},
        {"speaker": "Tom", "text": "Hey.", "timestamp": "2024-05-01T20:01:00+02:00"}]}).json()
    assert job["created_at"].endswith("+00:00") and job["finished_at"].endswith("+00:00"), job
    assert {m["text"]: m["timestamp"] for m in client.get("/v1/users/u1/messages").json()["items"]} == {
        "Hi.": "2024-05-01T20:00:00+00:00", "Hey.": "2024-05-01T20:01:00+02:00"}
    assert client.get("/v1/users/u1/sessions").json()["items"][0]["started_at"] == "2024-05-01T18:01:00+00:00"
    r = client.get("/v1/users/u1/summary", params={"as_of": "2024-06-01T00:00:00Z"})
    assert r.json()["as_of"] == "2024-06-01T00:00:00+00:00"


def test_rest_takes_the_options_of_the_python_api_and_refuses_unknown_ones(client: TestClient) -> None:
    r = client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "lives_in",
                                                            "object": "Porto"}], "sesion_id": "typo"})
    assert (r.status_code, r.json()["field"]) == (422, "sesion_id")
    r = client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "lives_in",
                                                            "object": "Porto"}], "agent_id": "bot7"})
    assert r.json()["added"][0]["agent_id"] == "bot7"
    assert client.post("/v1/users/u1/search", json={"query": "where?", "top_k": 5, "k": 3}).status_code == 422
    hits = client.post("/v1/users/u1/search", json={"query": "Where do I live?", "speaker": "Maya",
                                                   "top_k": 150})
    assert hits.status_code == 200 and "Porto" in [f["object"] for f in hits.json()["facts"]]
    ask = client.get("/openapi.json").json()["components"]["schemas"]["AskIn"]["properties"]
    assert ask["method"]["default"] == "real+rsum"  # the default of Memory.answer, the CLI and MCP
    assert client.post("/v1/users/u1/answer", json={"question": "q", "top_k": 201}).status_code == 422
    long_id = "u" * 250  # the library's ids are up to 256 characters; REST addresses every one
    assert client.post(f"/v1/users/{long_id}/facts", json={"facts": [
        {"subject": "Maya", "relation": "likes", "object": "tea"}]}).status_code == 200
    assert [f["object"] for f in client.get(f"/v1/users/{long_id}/facts").json()["items"]] == ["tea"]


def test_rest_facts_carry_every_field_of_the_python_fact(client: TestClient) -> None:
    for c in (0.9, 0.8):
        client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "lives_in",
                                                           "object": "Porto", "confidence": c}]})
    [f] = client.get("/v1/users/u1/facts").json()["items"]
    assert {"ended_by", "text_from", "confirmations", "started_by", "start_guessed"} <= set(f)
    assert [c for c, _ in f["confirmations"]] == [0.9, 0.8]
    r = client.patch(f"/v1/users/u1/facts/{f['id']}", json={"object": "Oporto", "object_type": "city"})
    assert r.status_code == 200, r.json()


def test_export_import_over_http(client: TestClient) -> None:
    client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "likes", "object": "tea"}]})
    data = client.get("/v1/users/u1/export").json()
    assert client.post("/v1/users/u9/import", json=data).status_code == 200
    assert [f["object"] for f in client.get("/v1/users/u9/facts").json()["items"]] == ["tea"]


def test_an_export_larger_than_the_spool_streams_from_disk_whole(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.server import routes

    monkeypatch.setattr(routes, "EXPORT_SPOOL_BYTES", 4096)  # past this the export waits in a temporary file
    mem = Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False)
    mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {i} ünïcödé"} for i in range(300)],
                  user_id="u1")
    mem.store.put_vectors("u1", "entity", [(e.id, [0.25, -1.5]) for e in mem.entities(user_id="u1")], "m")
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users/u1/export")
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert len(r.content) > 10 * 4096 and "ünïcödé" in r.text  # not escaped, as the other replies
        assert {**r.json(), "exported_at": None} == {**mem.export(user_id="u1"), "exported_at": None}
        assert c.get("/v1/users/nobody/export").status_code == 404  # as DELETE: a mistyped user holds nothing
    with TestClient(create_app(mem, max_body_bytes=4096)) as c:  # an import has its own limit: spooled to disk
        body = c.get("/v1/users/u1/export").content
        r = c.post("/v1/users/u2/import", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200 and r.json()["facts"] == 300, r.text
        assert c.post("/v1/users/u3/facts", content=b"[" + b" " * 5000 + b"]").status_code == 413  # the rest keep it
        bad = c.get("/v1/users/%20/export")
        assert bad.status_code == 422 and bad.json()["field"] == "user_id"
    assert {f.object for f in mem.facts(user_id="u2")} == {f.object for f in mem.facts(user_id="u1")}
    with TestClient(create_app(mem, max_import_bytes=len(body) - 1)) as c:  # an export over the import limit
        declared = c.post("/v1/users/u4/import", content=body)
        chunked = c.post("/v1/users/u4/import", content=iter([body[:5000], body[5000:]]))
        for r in (declared, chunked):
            assert r.status_code == 413 and r.json()["error"] == "PayloadTooLarge", r.text
            assert "MAX_IMPORT_BYTES" in r.json()["detail"] and "chronomem import" in r.json()["detail"]
        assert mem.facts(user_id="u4") == []
        assert c.post("/v1/users/u4/import", content=iter([body])).status_code == 413


def test_a_full_disk_under_the_spool_is_507_and_nothing_is_imported(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import tempfile

    from chronomem.server import routes

    mem = Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False)
    mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {i}"} for i in range(300)], user_id="u1")
    with TestClient(create_app(mem, owns_memory=True)) as c:
        body = c.get("/v1/users/u1/export").content

        class FullDisk(tempfile.SpooledTemporaryFile):  # type: ignore[type-arg]
            def write(self, data: bytes) -> int:  # type: ignore[override]
                if self.tell() + len(data) > 4096:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return super().write(data)

        monkeypatch.setattr(routes.tempfile, "SpooledTemporaryFile", FullDisk)
        for r in (c.post("/v1/users/u2/import", content=body), c.get("/v1/users/u1/export")):
            assert r.status_code == 507 and r.json()["error"] == "InsufficientStorage", r.text
            assert "No space left on device" in r.json()["detail"]
        assert mem.facts(user_id="u2") == []


def test_api_key_is_enforced(tmp_path: Path) -> None:
    with TestClient(create_app(Memory(tmp_path / "k.db"), api_key="s3cret")) as c:
        assert c.get("/v1/users/u1/facts").status_code == 401
        assert c.get("/v1/users/u1/facts", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/v1/users/u1/facts", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.get("/health").status_code == 200
