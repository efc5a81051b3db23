"""OpenAI-compatible client over real HTTP against a stub server on 127.0.0.1.

The stub replays a script of replies (status, headers, body, delay) and
records every request, so the tests assert what the client sent, how often it
retried, how long it waited and what it raised.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel

from chronomem.errors import ModelError, ModelUnavailableError, StructuredOutputError
from chronomem.providers import UsageTracker
from chronomem.providers.openai_compat import OpenAICompatEmbedder, OpenAICompatLLM
from chronomem.providers.tracked import TrackedLLM


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(text: str, *, finish: str = "stop", prompt_tokens: int = 11, completion_tokens: int = 7) -> Reply:
    return Reply(
        body={
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": 18},
        }
    )


class Stub:
    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                stub.requests.append({"path": self.path, **body})
                stub.headers.append(dict(self.headers))
                reply = stub.script.pop(0) if stub.script else Reply(500, {"error": {"message": "script exhausted"}})
                if reply.delay:
                    time.sleep(reply.delay)
                data = reply.body if isinstance(reply.body, (bytes, str)) else json.dumps(reply.body)
                data = data.encode() if isinstance(data, str) else data
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


def make(stub: Stub, **kw: Any) -> OpenAICompatLLM:
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("timeout", 5.0)
    return OpenAICompatLLM("test-model", stub.url, "sk-test", **kw)


class Person(BaseModel):
    name: str
    city: str


PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
    "required": ["name", "city"],
}


def test_plain_completion_and_request_shape(stub: Stub) -> None:
    stub.script = [completion("Hello there")]
    llm = make(stub)
    r = llm.chat([{"role": "user", "content": "hi"}], max_tokens=33, stop=["\n"], purpose="answer")
    assert r.text == "Hello there" and r.data is None
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (11, 7)
    req = stub.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["model"] == "test-model" and req["max_tokens"] == 33 and req["stop"] == ["\n"]
    assert req["temperature"] == 0.0 and "response_format" not in req
    assert stub.headers[0]["Authorization"] == "Bearer sk-test"


def test_schema_sent_as_response_format_and_parsed(stub: Stub) -> None:
    stub.script = [completion('{"name": "Alice", "city": "Paris"}')]
    r = make(stub).chat([{"role": "user", "content": "x"}], schema=PERSON_SCHEMA)
    assert r.data == {"name": "Alice", "city": "Paris"}
    rf = stub.requests[0]["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["schema"]["required"] == ["name", "city"]


def test_pydantic_schema_returns_instance(stub: Stub) -> None:
    stub.script = [completion('{"name": "Bob", "city": "Oslo"}')]
    r = make(stub).chat([{"role": "user", "content": "x"}], schema=Person)
    assert isinstance(r.data, Person) and r.data.city == "Oslo"
    assert stub.requests[0]["response_format"]["json_schema"]["name"] == "Person"


def test_malformed_json_is_repaired_without_retry(stub: Stub) -> None:
    stub.script = [completion('Here you go:\n```json\n{"name": "Alice", "city": "Paris"}\n```\nAnything else?')]
    r = make(stub).chat([{"role": "user", "content": "x"}], schema=PERSON_SCHEMA)
    assert r.data == {"name": "Alice", "city": "Paris"}
    assert len(stub.requests) == 1


def test_truncated_array_is_closed_and_capped(stub: Stub) -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
        "required": ["items"],
    }
    stub.script = [completion('{"items": ["a", "b", "c", "d', finish="length")]
    r = make(stub).chat([{"role": "user", "content": "x"}], schema=schema)
    assert r.data == {"items": ["a", "b"]}
    assert len(stub.requests) == 1


def test_invalid_output_is_retried_with_feedback(stub: Stub) -> None:
    stub.script = [completion('{"name": "Alice"}'), completion('{"name": "Alice", "city": "Paris"}')]
    r = make(stub).chat([{"role": "user", "content": "x"}], schema=PERSON_SCHEMA)
    assert r.data["city"] == "Paris"
    assert len(stub.requests) == 2
    retry_msgs = stub.requests[1]["messages"]
    assert retry_msgs[-2] == {"role": "assistant", "content": '{"name": "Alice"}'}
    assert "city" in retry_msgs[-1]["content"]
    assert r.usage.prompt_tokens == 22  # both attempts counted


def test_structured_failure_carries_raw_output(stub: Stub) -> None:
    stub.script = [completion("I cannot do that")] * 3
    llm = make(stub, structured_retries=2)
    tracker = UsageTracker()
    with pytest.raises(StructuredOutputError) as ei:
        TrackedLLM(llm, usage=tracker).chat([{"role": "user", "content": "x"}], schema=PERSON_SCHEMA, purpose="extract")
    assert ei.value.raw == "I cannot do that"
    assert len(stub.requests) == 3
    assert tracker.snapshot()["by_purpose"]["extract"]["prompt_tokens"] == 33


def test_429_then_success_honours_retry_after(stub: Stub) -> None:
    stub.script = [Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"}), completion("ok")]
    sleeps: list[float] = []
    r = make(stub, sleep=sleeps.append).chat([{"role": "user", "content": "x"}])
    assert r.text == "ok"
    assert len(stub.requests) == 2
    assert sleeps == [1.0]  # the server's Retry-After, not the backoff schedule


def test_5xx_retried_with_backoff_then_success(stub: Stub) -> None:
    sleeps: list[float] = []
    stub.script = [Reply(500, {"error": {"message": "boom"}}), Reply(503, "upstream down"), completion("fine")]
    llm = make(stub, backoff_base=0.5, sleep=sleeps.append)
    assert llm.chat([{"role": "user", "content": "x"}]).text == "fine"
    assert len(sleeps) == 2
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0  # exponential with jitter


def test_persistent_500_gives_up(stub: Stub) -> None:
    stub.script = [Reply(500, {"error": {"message": "boom"}})] * 3
    with pytest.raises(ModelError, match=r"HTTP 500.*gave up after 3 attempts"):
        make(stub, max_retries=2).chat([{"role": "user", "content": "x"}])
    assert len(stub.requests) == 3


def test_slow_response_hits_timeout(stub: Stub) -> None:
    late = 30.0  # the server would answer after this; the client must give up long before
    stub.script = [Reply(delay=late, body=completion("late").body)] * 2
    t0 = time.monotonic()
    with pytest.raises(ModelError, match="timed out after 0.3s"):
        make(stub, timeout=0.3, max_retries=1, sleep=lambda s: None).chat([{"role": "user", "content": "x"}])
    assert len(stub.requests) == 2  # a timeout is retried
    assert time.monotonic() - t0 < late / 2  # two 0.3 s timeouts, not one wait for the answer


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_are_not_retried(stub: Stub, status: int) -> None:
    stub.script = [Reply(status, {"error": {"message": "Incorrect API key provided"}})]
    with pytest.raises(ModelUnavailableError) as ei:
        make(stub).chat([{"role": "user", "content": "x"}])
    msg = str(ei.value)
    assert stub.url in msg and "test-model" in msg and "API key" in msg
    assert len(stub.requests) == 1


def test_404_names_url_and_model(stub: Stub) -> None:
    stub.script = [Reply(404, {"error": {"message": "The model `test-model` does not exist"}})]
    with pytest.raises(ModelUnavailableError) as ei:
        make(stub).chat([{"role": "user", "content": "x"}])
    assert f"{stub.url}/chat/completions" in str(ei.value) and "'test-model'" in str(ei.value)
    assert len(stub.requests) == 1


def test_unreachable_server_is_model_unavailable() -> None:
    llm = OpenAICompatLLM("m", "http://127.0.0.1:9/v1", None, max_retries=1, backoff_base=0.01, timeout=2)
    with pytest.raises(ModelUnavailableError, match="cannot reach"):
        llm.chat([{"role": "user", "content": "x"}])


def test_a_password_in_the_base_url_is_used_but_never_shown(stub: Stub) -> None:
    """``http://svc:hunter2@host/v1`` reached API clients in a model error's text, and the model's name."""
    llm = OpenAICompatLLM("test-model", stub.url.replace("http://", "http://svc:hunter2@"), None, max_retries=0)
    stub.script = [Reply(500, {"error": {"message": "boom"}})]
    with pytest.raises(ModelError) as ei:
        llm.chat([{"role": "user", "content": "x"}])
    assert "hunter2" not in str(ei.value) and f"{stub.url}/chat/completions" in str(ei.value)
    assert "hunter2" not in llm.name and "hunter2" not in repr(llm)
    assert stub.headers[0].get("Authorization") == "Basic " + base64.b64encode(b"svc:hunter2").decode()  # used
    down = OpenAICompatLLM("m", "http://svc:hunter2@127.0.0.1:9/v1", None, max_retries=0, timeout=2)
    with pytest.raises(ModelUnavailableError) as ei:
        down.chat([{"role": "user", "content": "x"}])
    assert "hunter2" not in str(ei.value) and "cannot reach http://127.0.0.1:9/v1" in str(ei.value)


def test_response_format_rejected_falls_back(stub: Stub) -> None:
    stub.script = [
        Reply(400, {"error": {"message": "response_format json_schema is not supported"}}),
        completion('{"name": "A", "city": "B"}'),
    ]
    llm = make(stub)
    r = llm.chat([{"role": "user", "content": "x"}], schema=PERSON_SCHEMA)
    assert r.data == {"name": "A", "city": "B"}
    assert stub.requests[1]["response_format"] == {"type": "json_object"}
    assert "JSON schema" in stub.requests[1]["messages"][-1]["content"]
    assert llm.structured_mode == "json_object"


def test_embeddings_batched_and_normalised(stub: Stub) -> None:
    stub.script = [
        Reply(body={"data": [{"index": 1, "embedding": [0.0, 2.0]}, {"index": 0, "embedding": [3.0, 4.0]}]}),
        Reply(body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}),
    ]
    emb = OpenAICompatEmbedder("emb-model", stub.url, "k", batch_size=2, backoff_base=0.01)
    vecs = emb.embed(["a", "b", "c"])
    assert vecs == [pytest.approx([0.6, 0.8]), pytest.approx([0.0, 1.0]), pytest.approx([1.0, 0.0])]
    assert emb.dim == 2
    assert [r["input"] for r in stub.requests] == [["a", "b"], ["c"]]
    assert stub.requests[0]["path"] == "/v1/embeddings"


def test_penalties_sent_only_when_set(stub: Stub) -> None:
    from chronomem.providers.base import Penalties

    stub.script = [completion("a"), completion("b")]
    llm = make(stub)
    llm.chat([{"role": "user", "content": "hi"}], penalties=Penalties(frequency=0.5, presence=0.25))
    llm.chat([{"role": "user", "content": "hi"}])
    with_p, without = stub.requests
    assert with_p["frequency_penalty"] == 0.5 and with_p["presence_penalty"] == 0.25
    assert "repeat_penalty" not in with_p  # not set, so not sent (it is no OpenAI field)
    assert not {"repeat_penalty", "frequency_penalty", "presence_penalty"} & set(without)
