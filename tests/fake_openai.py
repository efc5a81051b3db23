"""A deterministic OpenAI-compatible model server for tests that need a model across processes.

``FakeModelServer`` answers ``POST /v1/chat/completions`` like a tiny, predictable model:

* a structured request (``response_format`` set: extraction) gets the facts its rules find in
  the lines under ``Turns:`` — "I live in X" → ``<speaker> lives_in X``, "I work at X" →
  ``<speaker> works_at X``, "I like X" → ``<speaker> likes X`` — in the shape its schema asks
  for: v1's ``{"facts": [...]}``, or v3's one slot per line (``{"lines": [{"line": k, "fact":
  null | {statement, subject, relation, object, ended}}]}``, the first fact of each line, its
  statement a sentence: "Ann lives in Paris now.");
* any other request (summaries) gets a one-line digest of the prompt.

Other structured requests (say the query-intent fallback of search) get the smallest instance of
their schema.  ``inject`` lets a test replace any reply (truncated JSON, ``finish_reason="length"``,
hostile facts …): it gets the request body and returns a :class:`Reply` or None for the default.
``delay`` seconds are slept before each reply (the service benchmark's stand-in for model
latency); a request whose messages contain ``gate_word`` waits until :meth:`open_gate`
(``gate_seen`` tells a test that a worker is inside that model call).
It runs in a thread of the test process, so child processes reach it by URL
(``llm=server.spec``); it never loads a real model.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from slot_replies import as_reply, numbered_lines

RULES = ((re.compile(r"\bI live in ([A-Z][\w-]*)"), "lives_in"),
         (re.compile(r"\bI work at ([A-Z][\w-]*)"), "works_at"),
         (re.compile(r"\bI like ([a-z][\w-]*)"), "likes"))


@dataclass
class Reply:
    content: str
    finish_reason: str = "stop"
    status: int = 200


def fact(subject: str, relation: str, obj: str, **kw: Any) -> dict[str, Any]:
    return {"subject": subject, "relation": relation, "object": obj, "time": kw.get("time", ""),
            "ended": kw.get("ended", False), "certainty": kw.get("certainty", "certain"),
            "intent": kw.get("intent", "FACT")}


def turns_of(body: dict[str, Any]) -> list[tuple[int, str, str]]:
    """``(number, speaker, text)`` of the lines under ``Turns:`` of the request's transcript."""
    return numbered_lines(transcript_of(body))


def transcript_of(body: dict[str, Any]) -> str:
    """The request's last message holding a transcript (a retry appends the failed reply and
    feedback after it)."""
    return next((m["content"] for m in reversed(body["messages"]) if "Turns:" in (m.get("content") or "")), "")


def line_facts(text: str) -> list[tuple[str, str]]:
    """``(relation, object)`` of what the rules find in one line, in the order it says them."""
    found = [(m.start(), rel, m.group(1)) for rx, rel in RULES for m in rx.finditer(text)]
    return [(rel, obj) for _, rel, obj in sorted(found)]


def extract(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [fact(speaker, rel, obj) for _, speaker, text in turns_of(body) for rel, obj in line_facts(text)]


SENTENCES = {"lives_in": "{s} lives in {o} now.", "works_at": "{s} works at {o} now.", "likes": "{s} really likes {o}."}


def extract_lines(body: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """v3's reply: one slot per numbered line, the line's first fact written as a sentence."""
    facts = [{**fact(speaker, rel, obj), "turns": [n]} for n, speaker, text in turns_of(body)
             for rel, obj in line_facts(text)]
    return as_reply(schema, transcript_of(body), facts,
                    statement=lambda speaker, _, f: SENTENCES[f["relation"]].format(s=speaker, o=f["object"]))


def instance(schema: dict[str, Any]) -> Any:
    """The smallest value valid against a simple JSON schema."""
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return instance(schema["anyOf"][0])
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object":
        props = schema.get("properties", {})
        return {k: instance(props.get(k, {})) for k in schema.get("required", [])}
    if t == "array":
        return [instance(schema.get("items", {})) for _ in range(int(schema.get("minItems", 0)))]
    if t in ("number", "integer"):
        return schema.get("minimum", 0)
    return False if t == "boolean" else None if t == "null" else ""


class FakeModelServer:
    def __init__(self, inject: Callable[[dict[str, Any]], Reply | None] | None = None, *,
                 delay: float = 0.0, gate_word: str | None = None) -> None:
        self.inject = inject
        self.requests: list[dict[str, Any]] = []
        self.delay = delay
        self.gate_word = gate_word
        self.gate_seen = threading.Event()
        self._gate_open = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append(body)
                if server.gate_word and server.gate_word in json.dumps(body.get("messages", [])):
                    server.gate_seen.set()
                    server._gate_open.wait(120)
                if server.delay:
                    time.sleep(server.delay)
                reply = server.reply(body)
                data = json.dumps({
                    "id": "fake", "object": "chat.completion", "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                                 "finish_reason": reply.finish_reason}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                }).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.spec = f"openai:fake@{self.url}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, body: dict[str, Any]) -> Reply:
        if self.inject is not None:
            injected = self.inject(body)
            if injected is not None:
                return injected
        fmt = body.get("response_format")
        if fmt is not None:
            schema = (fmt.get("json_schema") or {}).get("schema") or {}
            if "lines" in schema.get("properties", {}):
                return Reply(json.dumps(extract_lines(body, schema)))
            if schema and "facts" not in schema.get("properties", {}):
                return Reply(json.dumps(instance(schema)))
            return Reply(json.dumps({"facts": extract(body)}))
        prompt = body["messages"][-1]["content"]
        return Reply("Summary: " + " ".join(prompt.split()[-40:]))

    def extraction_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("response_format") is not None]

    def open_gate(self) -> None:
        self._gate_open.set()

    def close(self) -> None:
        self._gate_open.set()
        self.httpd.shutdown()
        self.httpd.server_close()
