"""REST v1 at its boundary: what reaches a client, and what it may send.

Waiting on a job holds no worker thread; a model failure's words (endpoint, password, upstream body)
stay in the server log; a body that is no JSON is a 400; errors name the field that was wrong, even
one called ``query``; the OpenAPI document declares the bearer key; ids are UTF-8 text; a turn gives
its words once; and a user, session or fact that does not exist is a 404 wherever it is named.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_openai import FakeModelServer, Reply
from fastapi.testclient import TestClient

from chronomem import Memory
from chronomem.errors import ConfigError, ModelUnavailableError
from chronomem.server import create_app

FACT = {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"}


pytestmark = pytest.mark.usefixtures("local_service_env")  # the model key; no queue, Redis or server key


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as m:
        yield m


@pytest.fixture
def gated() -> Iterator[FakeModelServer]:
    """A model whose calls with GATEWORD in them wait for ``open_gate()`` (``close()`` opens it)."""
    srv = FakeModelServer(gate_word="GATEWORD")
    yield srv
    srv.close()


def _in_thread(call: Any, wait_s: float) -> list[Any]:
    """``call()``'s result in a one-item list, or an empty list when it has not returned after ``wait_s``."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(call()), daemon=True)
    t.start()
    t.join(wait_s)
    return out


def test_clients_waiting_on_jobs_hold_no_worker_thread(tmp_path: Path, gated: FakeModelServer) -> None:
    llm = gated
    mem = Memory(tmp_path / "m.db", llm=llm.spec, embedder=False)
    threads = 4  # AnyIO's pool has 40; a smaller one shows the same with fewer clients

    async def small_pool() -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads

    replies: list[Any] = []
    with TestClient(create_app(mem, owns_memory=True)) as c:
        assert c.portal is not None
        c.portal.call(small_pool)

        def waiter(i: int) -> None:
            replies.append(c.post(f"/v1/users/w{i}/messages", params={"wait": "true", "timeout": 60},
                                  json={"messages": [{"speaker": "Maya", "text": f"I live in X{i}. GATEWORD"}]}))

        waiters = [threading.Thread(target=waiter, args=(i,), daemon=True) for i in range(2 * threads)]
        try:
            for t in waiters:
                t.start()
            assert llm.gate_seen.wait(30)  # the first job is inside its model call; the others queue behind it
            time.sleep(1.0)  # every waiter has its job and is waiting on it
            # with each waiter holding a pool thread, these would wait for the model too
            assert [r.status_code for r in _in_thread(lambda: c.get("/health"), 10)] == [200]
            assert [r.status_code for r in _in_thread(lambda: c.get("/v1/users/w0/facts"), 10)] == [200]
            # a wait that times out is the documented 202 with the job as it stands
            short = c.post("/v1/users/late/messages", params={"wait": "true", "timeout": 0.3},
                           json={"messages": [{"speaker": "Maya", "text": "I live in Y."}]})
            assert short.status_code == 202 and short.json()["status"] in ("queued", "running"), short.text
        finally:
            llm.open_gate()
            for t in waiters:
                t.join(60)
        assert sorted(r.status_code for r in replies) == [200] * 2 * threads
        assert all(r.json()["status"] == "done" and r.json()["result"]["added"] for r in replies)


def test_a_model_failure_reaches_the_client_as_its_kind_only(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    secrets = ("hunter2", "svc:", "127.0.0.1", "SECRETBODY", "chat/completions")
    llm = FakeModelServer(inject=lambda body: Reply(content="upstream says SECRETBODY", status=401))
    url = llm.url.replace("http://", "http://svc:hunter2@")
    mem = Memory(tmp_path / "m.db", llm=f"openai:fake@{url}", embedder=False)
    mem.add_facts([FACT], user_id="u1")
    try:
        with TestClient(create_app(mem, owns_memory=True)) as c, caplog.at_level(logging.DEBUG):
            r = c.post("/v1/users/u1/answer", json={"question": "Where does Maya live?"})
            assert r.status_code == 503, r.text
            assert r.json()["error"] == "ModelUnavailableError" and "model is unavailable" in r.json()["detail"]
            assert not [s for s in secrets if s in r.text], r.text
    finally:
        llm.close()
    errors = [rec.getMessage() for rec in caplog.records if rec.name == "chronomem.server.app"]
    assert "model error: ModelUnavailableError" in errors  # the kind at ERROR
    assert any("HTTP 401" in e for e in errors)  # the cause at DEBUG
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR and "SECRETBODY" in rec.getMessage()]


def test_a_model_or_config_error_is_a_503_without_secrets(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*args: object, **kwargs: object) -> None:
        raise ModelUnavailableError("cannot reach http://svc:hunter2@10.1.2.3:1/v1/chat/completions "
                                    "(model 'fake'): Name or service not known")

    monkeypatch.setattr(mem, "search", down)
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/search", json={"query": "where?"})
        assert r.status_code == 503 and r.json()["field"] is None
        assert "hunter2" not in r.text and "10.1.2.3" not in r.text and "Name or service" not in r.text

    def unset(*args: object, **kwargs: object) -> None:
        raise ConfigError("llm spec 'openai:m@http://svc:hunter2@10.1.2.3/v1' names no model (write openai:MODEL)")

    monkeypatch.setattr(mem, "search", unset)
    with TestClient(create_app(mem)) as c:  # what to configure is said, without the password it quotes
        r = c.post("/v1/users/u1/search", json={"query": "where?"})
        assert r.status_code == 503 and r.json()["error"] == "ConfigError", r.text
        assert "hunter2" not in r.text and "names no model" in r.json()["detail"]


@pytest.mark.parametrize("body", [b"{oops", b'{"query": "x",}', b"{"])
def test_a_body_that_is_not_json_is_a_400(mem: Memory, body: bytes) -> None:
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/search", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400, r.text
        assert r.json()["error"] == "BadRequest" and r.json()["field"] == "body"
        assert "not valid JSON" in r.json()["detail"]
        spec = c.get("/openapi.json").json()["paths"]["/v1/users/{user_id}/search"]["post"]["responses"]
        assert "not JSON" in spec["400"]["description"]  # what the document promised


def test_a_body_field_named_like_a_request_part_is_named_as_itself(mem: Memory) -> None:
    with TestClient(create_app(mem)) as c:
        for body in ({"query": ""}, {"query": 5}):
            r = c.post("/v1/users/u1/search", json=body)
            assert (r.status_code, r.json()["field"]) == (422, "query"), r.text
        r = c.post("/v1/users/u1/search", json={"query": "x", "path": 1})  # an unknown field, named too
        assert (r.status_code, r.json()["field"]) == (422, "path")
        r = c.post("/v1/users/u1/context", json={"messages": [{"role": "", "content": "x"}]})
        assert r.json()["field"] == "messages[0].role"
        assert c.post("/v1/users/u1/search").json()["field"] == "body"  # the body itself, missing


def test_the_openapi_document_declares_the_bearer_key(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "k.db", llm=False, embedder=False)
    with TestClient(create_app(mem, api_key="s3cret", owns_memory=True)) as c:
        spec = c.get("/openapi.json").json()
        schemes = spec["components"]["securitySchemes"]
        [(name, scheme)] = schemes.items()
        assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                params = [p["name"].lower() for p in op.get("parameters", [])]
                assert "authorization" not in params, (method, path)  # OpenAPI ignores such a parameter
                if path.startswith("/v1/"):
                    assert op.get("security") == [{name: []}], (method, path)
                    assert op.get("description"), (method, path)  # what the operation does, in /docs
        assert "security" not in spec["paths"]["/health"]["get"]
        # what a client sends for the scheme works; the 401s are as they were
        assert c.get("/v1/users", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.get("/v1/users", headers={"Authorization": "s3cret"}).status_code == 200
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic czNjcmV0"}):
            r = c.get("/v1/users", headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", headers
            assert set(r.json()) == {"error", "detail", "field"} and r.json()["error"] == "Unauthorized"
    with TestClient(create_app(Memory(tmp_path / "open.db", llm=False, embedder=False), owns_memory=True)) as c:
        assert c.get("/v1/users").status_code == 200  # no key at all: loopback service, no header needed


@pytest.mark.parametrize("path", ["/v1/users/%FF/facts", "/v1/users/u%C0%80/facts",
                                  "/v1/users/team%2F%FE/facts", "/v1/users/u1/sessions/s%FF/end"])
def test_an_id_that_is_not_utf8_is_a_422_naming_it(mem: Memory, path: str) -> None:
    with TestClient(create_app(mem)) as c:
        r = c.post(path, json={"facts": [FACT]} if path.endswith("/facts") else {})
        assert r.status_code == 422 and r.json()["error"] == "ValidationError", r.text
        assert r.json()["field"] == ("session_id" if "/sessions/" in path else "user_id")
        assert "UTF-8" in r.json()["detail"]
        assert c.get("/v1/users").json()["items"] == []  # nothing stored under U+FFFD
        r = c.post("/v1/users/%C3%A9%2F%25/facts", json={"facts": [FACT]})  # UTF-8, a slash and a %: one id
        assert r.status_code == 200 and c.get("/v1/users").json()["items"] == [{"user_id": "é/%"}]


def test_a_query_parameter_that_is_not_utf8_is_a_422_naming_it(mem: Memory) -> None:
    """Starlette read ``?session_id=%FF`` as U+FFFD: a list filtered by an id no turn has, said nothing."""
    with TestClient(create_app(mem)) as c:
        r = c.get("/v1/users/u1/messages?session_id=%FF")
        assert (r.status_code, r.json()["field"]) == (422, "session_id"), r.text
        assert "UTF-8" in r.json()["detail"]
        assert c.get("/v1/users/u1/messages?session_id=caf%C3%A9&limit=5").status_code == 200


def test_a_turn_gives_its_words_once(mem: Memory) -> None:
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/messages", json={"messages": [
            {"speaker": "Maya", "text": "I moved to Oslo."},
            {"speaker": "Maya", "text": "I live in Oslo.", "content": "I live in Paris."}]})
        assert (r.status_code, r.json()["field"]) == (422, "messages[1].content"), r.text
        assert c.get("/v1/users/u1/messages").json()["items"] == []
        r = c.post("/v1/users/u1/context", json={"messages": [{"role": "user", "content": "hi", "speaker": "x"}]})
        assert (r.status_code, r.json()["field"]) == (422, "messages[0].speaker"), r.text
        r = c.post("/v1/users/u1/messages", json={"messages": [{"role": "user", "content": "I live in Oslo."}]})
        assert r.status_code in (200, 202), r.text  # either one alone is a turn


def test_what_does_not_exist_is_a_404_wherever_it_is_named(tmp_path: Path, llm: FakeModelServer) -> None:
    mem = Memory(tmp_path / "m.db", llm=llm.spec, embedder=False)
    with TestClient(create_app(mem, owns_memory=True)) as c:
        for r in (c.delete("/v1/users/nobody"), c.delete("/v1/users/nobody/sessions/s1"),
                  c.delete("/v1/users/nobody/facts/f1"), c.post("/v1/users/nobody/sessions/s1/end"),
                  c.post("/v1/users/nobody/sessions/s1/end", params={"wait": "true"}),
                  c.get("/v1/users/nobody/export")):  # an empty export restores nothing: a mistyped user
            assert r.status_code == 404 and r.json()["error"] == "NotFoundError", r.text
        assert c.get("/v1/users/nobody/jobs").json()["items"] == []  # no job was queued for it
        c.post("/v1/users/u1/facts", json={"facts": [FACT], "session_id": "s1"})  # a session of facts only
        assert c.post("/v1/users/u1/sessions/nosuch/end").status_code == 404
        r = c.post("/v1/users/u1/sessions/s1/end", params={"wait": "true"})
        assert r.status_code == 200 and r.json()["status"] == "done", r.text
        r = c.post("/v1/users/u1/sessions/s1/end")  # ending it again is allowed
        assert r.status_code in (200, 202)
        first = c.delete("/v1/users/u1")
        assert first.status_code == 200 and first.json()["facts_deleted"] == 1
        assert c.delete("/v1/users/u1").status_code == 404  # a retry: gone either way
        assert c.get("/v1/users").json()["items"] == []


def test_a_session_or_user_held_only_in_the_session_buffer_exists(tmp_path: Path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "b.db", llm=llm.spec, embedder=False, buffer=True) as mem, \
            TestClient(create_app(mem)) as c:
        for sid in ("s1", "s2"):
            r = c.post("/v1/users/u1/messages", json={"session_id": sid, "messages": [
                {"speaker": "Maya", "text": f"I live in Oslo ({sid})."}]})
            assert r.status_code == 200, r.text
        assert mem.messages(user_id="u1") == []  # waiting in the buffer, not stored yet
        assert c.post("/v1/users/u1/sessions/s1/end").status_code == 202
        assert c.post("/v1/users/u1/sessions/s3/end").status_code == 404
        r = c.delete("/v1/users/u1")
        assert r.status_code == 200 and r.json()["messages_deleted"] >= 1, r.text
        assert c.delete("/v1/users/u1").status_code == 404


def test_context_takes_content_parts_and_hands_them_back_as_sent(mem: Memory) -> None:
    parts = [{"type": "text", "text": "What breed is this dog?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/context", json={"messages": [{"role": "user", "content": parts}]})
        assert r.status_code == 200, r.text
        assert r.json()["messages"][-1] == {"role": "user", "content": parts}
        r = c.post("/v1/users/u1/context", json={"messages": [{"role": "user", "content": [{"text": "x"}]}]})
        assert r.status_code == 422 and r.json()["field"].startswith("messages[0].content"), r.text


TOOL_ROUND = [
    {"role": "system", "content": "You are Maya's assistant."},
    {"role": "user", "content": "What's the weather in Oslo? " + "Please be thorough. " * 60},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Rain, 7 C"},
    {"role": "assistant", "content": "It rains in Oslo, 7 C."},
    {"role": "user", "content": "And in Porto?"},
    {"role": "assistant", "thinking": "Porto next.", "tool_calls": [  # Ollama's shape: content left out,
        {"function": {"name": "weather", "arguments": {"city": "Porto"}}}]},  # arguments as an object
    {"role": "tool", "tool_name": "weather", "content": "Sun, 18 C"},
]


def test_context_takes_tool_rounds_and_keeps_them_whole(mem: Memory) -> None:
    """An agent's conversation, tool calls and results included, goes through /context as through the Python
    context(): handed back as sent (a null content stays null, an omitted one omitted), the current step's
    round kept with the newest user turn, an older round dropped whole when the budget is short."""
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/context", json={"messages": TOOL_ROUND, "budget_tokens": 4096})
        assert r.status_code == 200, r.text
        assert r.json()["messages"] == TOOL_ROUND == mem.context(TOOL_ROUND, user_id="u1", budget_tokens=4096)
        r = c.post("/v1/users/u1/context", json={"messages": TOOL_ROUND, "budget_tokens": 200})
        assert r.status_code == 200, r.text
        assert r.json()["messages"] == [TOOL_ROUND[0], *TOOL_ROUND[5:]]  # the first question's round went whole


def test_context_hands_back_an_sdks_message_as_sent(mem: Memory) -> None:
    """An OpenAI SDK's assistant message dumped whole (``message.model_dump()``: nulls and all) is a message too."""
    dumped = {"role": "assistant", "content": None, "refusal": None, "annotations": [], "audio": None,
              "function_call": None, "tool_calls": [{"id": "call_9", "type": "function",
                                                     "function": {"name": "lookup", "arguments": "{}"}}]}
    said = [{"role": "user", "content": "Look it up."}, dumped, {"role": "tool", "tool_call_id": "call_9",
                                                                "content": "found"}]
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/context", json={"messages": said})
        assert r.status_code == 200 and r.json()["messages"] == said, r.text
        refused = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
        r = c.post("/v1/users/u1/context", json={"messages": [said[0], refused, {"role": "user", "content": "ok"}]})
        assert r.status_code == 200 and r.json()["messages"][1] == refused, r.text


@pytest.mark.parametrize(("message", "field"), [
    ({"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": 5}}]},
     "messages[0].tool_calls[0].function.arguments"),  # no union member's tag in the name
    ({"role": "user", "content": 5}, "messages[0].content"),
    ({"role": "user", "content": "hi", "tool_calls": [{"id": "c1", "type": "function",
                                                       "function": {"name": "f", "arguments": "{}"}}]},
     "messages[0].tool_calls"),
    ({"role": "assistant", "content": None, "tool_calls": "weather(Oslo)"}, "messages[0].tool_calls"),
    ({"role": "assistant", "content": None, "tool_calls": [{"function": {"arguments": "{}"}}]},
     "messages[0].tool_calls[0].function.name"),
    ({"role": "tool", "tool_call_id": "", "content": "Rain"}, "messages[0].tool_call_id"),
    ({"role": "tool", "call_id": "c1", "content": "Rain"}, "messages[0].call_id"),
    ({"role": "assistant", "content": None}, "messages[0].content"),
    ({"role": "assistant"}, "messages[0].content"),
])
def test_a_malformed_tool_round_is_refused_by_name(mem: Memory, message: dict[str, Any], field: str) -> None:
    with TestClient(create_app(mem)) as c:
        r = c.post("/v1/users/u1/context", json={"messages": [message, {"role": "user", "content": "and now?"}]})
        assert (r.status_code, r.json()["field"]) == (422, field), r.text


def test_a_correction_the_rules_do_not_keep_as_asked_says_so(mem: Memory) -> None:
    """A corrected end after the next value's start: the rules place the version as any statement (the next
    value still closes it), and the reply's notes say that the asked end did not hold."""
    with TestClient(create_app(mem)) as c:
        c.post("/v1/users/u1/facts", json={"facts": [FACT, {**FACT, "object": "Lisbon", "valid_from": "2020-01-01"}]})
        porto = next(f for f in c.get("/v1/users/u1/history").json()["items"] if f["object"] == "Porto")
        r = c.patch(f"/v1/users/u1/facts/{porto['id']}", json={"valid_to": "2022-01-01"})
        assert r.status_code == 200, r.text
        assert r.json()["fact"]["valid_to"].startswith("2020-01-01")
        [note] = r.json()["notes"]
        assert note.startswith("valid_to: the version holds until 2020-01-01") and "(2022-01-01" in note
        r = c.patch(f"/v1/users/u1/facts/{r.json()['fact']['id']}", json={"valid_to": "2019-06-01"})
        assert r.status_code == 200 and r.json()["notes"] == [], r.text  # before Lisbon: held as asked
        # Lisbon, the current value, said to start before Porto did: Porto now closes it
        lisbon = next(f for f in c.get("/v1/users/u1/facts").json()["items"] if f["object"] == "Lisbon")
        r = c.patch(f"/v1/users/u1/facts/{lisbon['id']}", json={"valid_from": "2017-01-01"})
        assert r.status_code == 200, r.text
        [note] = r.json()["notes"]
        assert note.startswith("valid_from:") and "closes this version at 2018-01-01" in note
        assert c.get("/v1/users/u1/facts").json()["items"] == []  # Porto ended in 2019: nothing holds now
