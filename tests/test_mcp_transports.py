"""``chronomem mcp`` driven for real by the MCP client library, over stdio and streamable HTTP.

The server runs as a subprocess of the real CLI; its model is a deterministic fake
OpenAI-compatible server (extraction returns one fact per turn, summaries a fixed text).
Every tool is called, and an error case checks that the agent receives the
ChronomemError's message as a tool error result.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from slot_replies import as_reply
from chronomem import Memory
from chronomem.errors import ConfigError
from chronomem.server.mcp import check_http_exposure, is_loopback

SRC = str(Path(__file__).resolve().parents[1] / "src")
CLI = "from chronomem.cli import main; main()"
SUMMARY = "Maya lives in Berlin."


class FakeOpenAI:
    """Chat completions: extraction requests (with a JSON schema) get one lives_in fact (in the slot of
    a line naming Berlin, when the schema asks for slots); others SUMMARY."""

    def __init__(self) -> None:
        fake = self
        self.requests: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fake.requests.append(body)
                if "response_format" in body:
                    schema = (body["response_format"].get("json_schema") or {}).get("schema")
                    transcript = body["messages"][-1]["content"]
                    content = json.dumps(as_reply(schema, transcript, [{
                        "subject": "Maya", "relation": "lives_in", "object": "Berlin", "time": "",
                        "ended": False, "certainty": "certain", "intent": "FACT"}]))
                else:
                    content = SUMMARY
                data = json.dumps({"id": "x", "object": "chat.completion", "model": "fake",
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                             "total_tokens": 15}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A database with one seeded fact for user u1 (and one for another user), and the server's env."""
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Acme",
                        "valid_from": "2020-01-01"}], user_id="u1")
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="other")
    llm = FakeOpenAI()
    env = {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), "CHRONOMEM_LLM": f"openai:fake@{llm.url}",
           "CHRONOMEM_EMBEDDER": "none", "CHRONOMEM_LLM_API_KEY": "k", "CHRONOMEM_CONFIG": os.devnull,
           "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    yield db, env
    llm.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def stdio_session(db: str, env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-c", CLI, "mcp", "--user", "u1", "--db", db],
                                   env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture
def http_server(served: tuple[str, dict[str, str]]) -> Iterator[tuple[str, dict[str, str]]]:
    """``chronomem mcp --transport http`` on a free loopback port, with a bearer token."""
    db, env = served
    port = _free_port()
    env = {**env, "CHRONOMEM_MCP_TOKEN": "s3cret"}
    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", "--user", "u1", "--db", db, "--transport", "http",
                             "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(600):  # readiness poll, not a timing assertion
            if proc.poll() is not None:
                raise AssertionError(f"server exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url, {"Authorization": "Bearer s3cret"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=headers) as client, \
            streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


def data(res: Any) -> Any:
    assert not res.is_error, res.content
    out = res.structured_content
    if out is None:
        out = json.loads(res.content[0].text)
    return out.get("result", out) if isinstance(out, dict) and set(out) == {"result"} else out


async def exercise(session: ClientSession) -> None:
    """Every tool once, in the order an agent would use them, plus the error path."""
    names = {t.name for t in (await session.list_tools()).tools}
    assert names >= {"remember", "recall", "answer", "timeline", "end_session", "summary", "forget"}

    page = data(await session.call_tool("timeline", {"subject": "Maya"}))
    before = page["items"]
    assert [f["object"] for f in before] == ["Acme"] and page["next_cursor"] is None  # not the other user's Porto

    out = data(await session.call_tool("remember", {"text": "I live in Berlin now.", "speaker": "Maya",
                                                    "session_id": "s1", "timestamp": "2024-05-01T10:00:00"}))
    assert out["session_id"] == "s1" and out["stored"] == 1
    assert any(f["object"] == "Berlin" and f["id"] for f in out["added"])

    rec = data(await session.call_tool("recall", {"query": "Where does Maya live?"}))
    assert "Berlin" in rec["context"] and "Porto" not in rec["context"]
    past = data(await session.call_tool("recall", {"query": "Where does Maya work?", "as_of": "2021-06-01"}))
    assert "Acme" in past["context"] and "Berlin" not in past["context"]

    ans = data(await session.call_tool("answer", {"question": "Where does Maya live?"}))
    assert ans["answer"] and any(f["object"] == "Berlin" for f in ans["evidence"])

    end = data(await session.call_tool("end_session", {"session_id": "s1"}))
    assert end["turns_flushed"] == 0 and end["summary"] == SUMMARY  # unbuffered: turns were already stored
    assert data(await session.call_tool("summary", {}))["summary"] == SUMMARY
    assert data(await session.call_tool("summary", {"as_of": "2000-01-01"}))["summary"] == ""

    # errors reach the agent as a tool error result with chronomem's message
    bad = await session.call_tool("forget", {"fact_id": "no-such-fact"})
    assert bad.is_error and "has no fact 'no-such-fact'" in bad.content[0].text
    bad = await session.call_tool("recall", {"query": "x", "as_of": "not a date"})
    assert bad.is_error and "as_of" in bad.content[0].text
    bad = await session.call_tool("forget", {})
    assert bad.is_error and "exactly one of fact_id, session_id" in bad.content[0].text

    acme = next(f for f in before if f["object"] == "Acme")
    gone = data(await session.call_tool("forget", {"fact_id": acme["id"]}))
    assert gone["facts_deleted"] == 1
    gone = data(await session.call_tool("forget", {"session_id": "s1"}))
    assert gone["sessions_deleted"] == 1 and gone["messages_deleted"] == 1
    assert data(await session.call_tool("timeline", {"subject": "Maya"})) == {"items": [], "next_cursor": None}


def test_stdio_transport(served: tuple[str, dict[str, str]]) -> None:
    db, env = served

    async def main() -> None:
        async with stdio_session(db, env) as session:
            await exercise(session)

    asyncio.run(main())
    with Memory(db, embedder=False) as mem:  # the other user's memory was never touched
        assert [f.object for f in mem.facts(user_id="other")] == ["Porto"]


def test_streamable_http_transport(http_server: tuple[str, dict[str, str]]) -> None:
    url, headers = http_server

    async def main() -> None:
        async with http_session(url, headers) as session:
            await exercise(session)

    asyncio.run(main())


def test_http_requires_the_bearer_token(http_server: tuple[str, dict[str, str]]) -> None:
    url, _ = http_server
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}, {"Authorization": "Basic s3cret"}):
        r = httpx.post(url, json=init, headers={**accept, **auth})
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    r = httpx.post(url, json=init, headers={**accept, "Authorization": "bearer s3cret"})  # any letter case
    assert r.status_code == 200


def test_http_refuses_open_non_loopback(served: tuple[str, dict[str, str]]) -> None:
    db, env = served
    env = {k: v for k, v in env.items() if k != "CHRONOMEM_MCP_TOKEN"}
    proc = subprocess.run([sys.executable, "-c", CLI, "mcp", "--user", "u1", "--db", db, "--transport", "http",
                           "--host", "0.0.0.0", "--port", str(_free_port())], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert "CHRONOMEM_MCP_TOKEN" in proc.stderr and "0.0.0.0" in proc.stderr


def test_exposure_rules() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert is_loopback("127.0.0.2") and not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")
    assert not is_loopback("example.com") and not is_loopback("")  # "" binds every interface
    check_http_exposure("127.0.0.1", None)
    check_http_exposure("0.0.0.0", "tok")
    with pytest.raises(ConfigError, match="without authentication"):
        check_http_exposure("0.0.0.0", None)
    with pytest.raises(ConfigError, match="empty"):
        check_http_exposure("127.0.0.1", "  ")


def test_a_tokenless_http_server_answers_only_requests_addressed_to_localhost() -> None:
    """DNS rebinding: a page rebound to 127.0.0.1 calls the server under its own name (Host)."""
    import asyncio

    from chronomem.server.hosts import LoopbackHostsOnly

    seen: list[str] = []

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def status(host: str) -> int:
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "path": "/mcp", "headers": [(b"host", host.encode())]}
        await LoopbackHostsOnly(app)(scope, None, send)
        return int(sent[0]["status"])

    for host in ("127.0.0.1:8766", "localhost:8766", "LOCALHOST", "127.0.0.2", "[::1]:8766", "[0:0:0:0:0:0:0:1]"):
        assert asyncio.run(status(host)) == 200, host
    for host in ("attacker.example:8766", "10.0.0.1", ""):
        assert asyncio.run(status(host)) == 421, host
    assert seen == ["/mcp"] * 6
