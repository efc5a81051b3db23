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


def test_errors_have_status_and_field(client: TestClient) -> None:
    r = client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "lives_in",
                                                            "object": "Porto", "valid_from": "soon"}]})
    assert r.status_code == 422 and r.json()["field"] == "facts[0].valid_from"
    assert client.delete("/v1/users/u1/facts/nope").status_code == 404
    r = client.get("/v1/users/u1/facts", params={"as_of": "not-a-date"})
    assert r.status_code == 422


def test_export_import_over_http(client: TestClient) -> None:
    client.post("/v1/users/u1/facts", json={"facts": [{"subject": "Maya", "relation": "likes", "object": "tea"}]})
    data = client.get("/v1/users/u1/export").json()
    assert client.post("/v1/users/u9/import", json=data).status_code == 200
    assert [f["object"] for f in client.get("/v1/users/u9/facts").json()["items"]] == ["tea"]


def test_api_key_is_enforced(tmp_path: Path) -> None:
    with TestClient(create_app(Memory(tmp_path / "k.db"), api_key="s3cret")) as c:
        assert c.get("/v1/users/u1/facts").status_code == 401
        assert c.get("/v1/users/u1/facts", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/v1/users/u1/facts", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.get("/health").status_code == 200
