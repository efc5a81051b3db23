"""The REST server's input limits (issue #20 findings 5 and 6): oversized bodies get 413 before a
route reads them, and text the stores cannot hold (lone surrogates, NUL) gets 422, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chronomem import Memory
from chronomem.limits import MAX_BODY_BYTES
from chronomem.server import create_app

FACT = {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"}


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=False) as m:
        yield m


def test_a_body_over_the_limit_is_refused_with_413_and_nothing_is_stored(mem: Memory) -> None:
    with TestClient(create_app(mem, max_body_bytes=2_000)) as c:
        big = {"facts": [{**FACT, "text": "x" * 3_000}]}
        r = c.post("/v1/users/u1/facts", json=big)
        assert r.status_code == 413 and r.json()["error"] == "PayloadTooLarge"
        chunks = (part.encode() for part in (json.dumps(big)[i:i + 500] for i in range(0, 3_200, 500)))
        r = c.post("/v1/users/u1/facts", content=chunks, headers={"content-type": "application/json"})
        assert r.status_code == 413  # chunked: no Content-Length to trust
        assert mem.history(user_id="u1") == []
        small = c.post("/v1/users/u1/facts", json={"facts": [FACT]})
        assert small.status_code == 200 and len(small.json()["added"]) == 1
        streamed = c.post("/v1/users/u1/facts", content=iter([json.dumps({"facts": [FACT]}).encode()]),
                          headers={"content-type": "application/json"})
        assert streamed.status_code == 200  # a chunked body under the limit is replayed intact


def test_the_default_limit_is_the_documented_one(mem: Memory) -> None:
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/facts", content=b"{}", headers={"content-type": "application/json",
                                                                 "content-length": str(MAX_BODY_BYTES + 1)})
        assert r.status_code == 413


@pytest.mark.parametrize("body, field", [
    ('{"facts": [{"subject": "Ma\\ud800ya", "relation": "lives_in", "object": "Porto"}]}', "facts[0].subject"),
    ('{"facts": [{"subject": "Maya", "relation": "lives_in", "object": "Por\\u0000to"}]}', "facts[0].object"),
])
def test_unstorable_text_over_rest_is_422_naming_the_field(mem: Memory, body: str, field: str) -> None:
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/facts", content=body.encode(), headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["field"] == field
        r = c.get("/v1/users/u1/facts", params={"subject": "Ma\x00ya"})
        assert r.status_code == 422 and r.json()["field"] == "subject"


@pytest.mark.parametrize("method, path, params", [
    ("get", "/v1/users/u1/facts/a%00b", {}),
    ("get", "/v1/users/u1/facts/a%00b/provenance", {}),
    ("patch", "/v1/users/u1/facts/a%00b", {}),
    ("get", "/v1/jobs/a%00b", {}),
    ("get", "/v1/users/u1/messages", {"session_id": "a\x00"}),
    ("get", "/v1/users/u1/graph", {"entity": "Ma\x00ya"}),
    ("get", "/v1/users/u%00/graph", {"entity": "Maya"}),
    ("get", "/v1/users/u%00/checkpoints", {}),
    ("delete", "/v1/users/u1/sessions/s%00", {}),
])
def test_an_id_the_store_cannot_hold_is_422_not_a_store_error(mem: Memory, method: str, path: str,
                                                               params: dict[str, str]) -> None:
    mem.add_facts([FACT], user_id="u1")
    with TestClient(create_app(mem)) as c:
        kwargs: dict[str, object] = {"params": params}
        if method == "patch":
            kwargs["json"] = {"object": "Braga"}
        r = getattr(c, method)(path, **kwargs)
        assert r.status_code == 422, r.text
        assert r.json()["error"] == "ValidationError"
    assert [f.object for f in mem.history(user_id="u1")] == ["Porto"]


def test_a_naive_as_of_on_the_graph_reads_as_utc(mem: Memory) -> None:
    mem.add_facts([FACT], user_id="u1")
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users/u1/graph", params={"entity": "Maya", "as_of": "2020-01-01T00:00:00"})
        assert r.status_code == 200 and [e["fact"]["object"] for e in r.json()["edges"]] == ["Porto"]


def test_a_cursor_past_any_list_is_refused(mem: Memory) -> None:
    import base64

    far = base64.urlsafe_b64encode(json.dumps({"o": 10**30}).encode()).decode().rstrip("=")
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users/u1/jobs", params={"cursor": far})
        assert r.status_code == 422 and r.json()["field"] == "cursor"


def test_a_session_id_with_a_slash_can_be_ended_and_forgotten(mem: Memory) -> None:
    from test_memory_sessions import SessionLLM

    mem.use_models(llm=SessionLLM())
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/messages", params={"wait": "true"}, json={
            "session_id": "chat/2024-05", "messages": [{"speaker": "Maya", "text": "I live in Berlin and work at Acme."}]})
        assert r.status_code == 200 and r.json()["status"] == "done"
        r = c.post("/v1/users/u1/sessions/chat%2F2024-05/end", params={"wait": "true"})
        assert r.status_code == 200 and r.json()["session_id"] == "chat/2024-05"
        r = c.delete("/v1/users/u1/sessions/chat/2024-05")
        assert r.status_code == 200 and r.json()["sessions_deleted"] == 1
    assert mem.sessions(user_id="u1") == [] and mem.facts(user_id="u1") == []


def test_a_store_failure_is_a_503_that_names_no_database(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.errors import StoreError
    from chronomem.store.postgres import redact

    def down(*args: object, **kwargs: object) -> None:
        raise StoreError("PostgreSQL read failed on postgresql://app@db.internal/mem?password=S3CRET: "
                         "terminating connection; LINE 1: SELECT ... FROM facts WHERE user_id = ...")

    monkeypatch.setattr(mem.store, "facts", down)
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users/u1/facts")
        assert r.status_code == 503 and r.json()["error"] == "StoreError"
        assert not any(s in r.text for s in ("S3CRET", "db.internal", "app@", "SELECT"))
    assert redact("postgresql://app@db/mem?password=S3CRET&schema=s") == "postgresql://app@db/mem?password=***&schema=s"
    assert "abc" not in redact("postgresql://u:pw@h/db?sslpassword=abc") and "pw" not in redact("postgresql://u:pw@h/db")


def test_a_keyless_service_answers_only_requests_addressed_to_localhost(mem: Memory) -> None:
    from chronomem.keys import ApiKey, hash_key, new_key
    from chronomem.timeutil import utcnow

    mem.add_facts([FACT], user_id="victim")
    app = create_app(mem, loopback_hosts_while_open=True)
    with TestClient(app, base_url="http://localhost:8765") as c:
        assert c.get("/v1/users/victim/facts").status_code == 200
        for host in ("127.0.0.1:8765", "[::1]:8765", "LOCALHOST"):
            assert c.get("/v1/users", headers={"host": host}).status_code == 200, host
        # a page that rebound attacker.example to 127.0.0.1 (DNS rebinding) is refused
        r = c.delete("/v1/users/victim", headers={"host": "attacker.example:8765"})
        assert r.status_code == 421 and r.json()["error"] == "MisdirectedRequest"
        assert [f.object for f in mem.facts(user_id="victim")] == ["Porto"]
        key, prefix = new_key()
        mem.store.inner.insert_api_key(ApiKey(prefix, "default", hash_key(key), "k", utcnow()))  # type: ignore[attr-defined]
        r = c.get("/v1/users", headers={"host": "memory.example.com", "authorization": f"Bearer {key}"})
        assert r.status_code == 200  # with keys, any name may be served: the key is the guard
