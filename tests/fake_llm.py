"""A small deterministic OpenAI-compatible chat server for tests and benchmarks (no model).

It answers ``POST /v1/chat/completions`` over real HTTP, so worker subprocesses and the
REST server reach it exactly as they would reach vLLM or OpenAI:

* an extraction request (a ``json_schema`` response format with ``facts``) gets facts read
  off the numbered turns by a few fixed patterns ("I live in X", "I work at X", "My dog X",
  "I like X", "I moved to X");
* any other structured request gets the smallest instance of its schema;
* a plain request (summaries, answers) gets a fixed sentence naming the turns it saw.

``delay`` seconds are slept before each reply (the benchmark's stand-in for model latency).
A request whose text contains ``gate_word`` waits until :meth:`FakeLLMServer.open_gate`
(``gate_seen`` tells a test that a worker is inside that model call).
Run standalone: ``python tests/fake_llm.py --port 0 --delay 0.2`` prints the base URL.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")
PATTERNS: list[tuple[re.Pattern[str], str, bool]] = [  # (pattern, relation, ended)
    (re.compile(r"\bI live in ([A-Z][\w-]*)"), "lives_in", False),
    (re.compile(r"\bI moved to ([A-Z][\w-]*)"), "lives_in", False),
    (re.compile(r"\bI work at ([A-Z][\w-]*)"), "works_at", False),
    (re.compile(r"\bI joined ([A-Z][\w-]*)"), "works_at", False),
    (re.compile(r"\bMy dog ([A-Z][\w-]*)"), "has_pet", False),
    (re.compile(r"\bI like ([a-z][\w-]*)"), "likes", False),
]


def extract_facts(transcript: str) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    turns = transcript.split("Turns:", 1)[1] if "Turns:" in transcript else ""
    for line in turns.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        for pat, rel, ended in PATTERNS:
            for obj in pat.findall(m.group(3)):
                facts.append({"turns": [int(m.group(1))], "subject": "I", "relation": rel, "object": obj,
                              "time": "", "ended": ended, "certainty": "certain", "intent": "FACT"})
    return facts


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
    if t == "boolean":
        return False
    if t == "null":
        return None
    return ""


def reply_for(body: dict[str, Any]) -> str:
    messages = body.get("messages", [])
    text = "\n".join(str(m.get("content", "")) for m in messages)
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    if schema is not None:
        if "facts" in schema.get("properties", {}):  # extraction: keep to the fields the schema has
            item = schema["properties"]["facts"].get("items", {})
            props = item.get("properties", {})
            facts = [{**{k: instance(props[k]) for k in item.get("required", [])},
                      **{k: v for k, v in f.items() if k in props}}
                     for f in extract_facts(str(messages[-1].get("content", "")))]
            return json.dumps({"facts": facts})
        return json.dumps(instance(schema))
    seen = [m.group(3) for m in (LINE.match(x.strip()) for x in text.splitlines()) if m]
    return "The user said: " + " | ".join(seen[-5:]) if seen else "Not mentioned"


class FakeLLMServer:
    """The server on a background thread: ``url`` is the ``/v1`` base URL."""

    def __init__(self, delay: float = 0.0, host: str = "127.0.0.1", port: int = 0,
                 gate_word: str | None = None) -> None:
        self.delay = delay
        self.requests = 0
        self.gate_word = gate_word
        self.gate_seen = threading.Event()
        self._gate_open = threading.Event()
        server = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with lock:
                    server.requests += 1
                if server.gate_word and server.gate_word in json.dumps(body.get("messages", [])):
                    server.gate_seen.set()
                    server._gate_open.wait(120)
                if server.delay:
                    time.sleep(server.delay)
                content = reply_for(body)
                data = json.dumps({"id": "fake", "object": "chat.completion", "model": body.get("model", "fake"),
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": max(1, len(json.dumps(body)) // 4),
                                             "completion_tokens": max(1, len(content) // 4),
                                             "total_tokens": 0}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def spec(self) -> str:
        """The ``llm=`` spec that points chronomem at this server."""
        return f"openai:fake@{self.url}"

    def open_gate(self) -> None:
        self._gate_open.set()

    def close(self) -> None:
        self._gate_open.set()
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0)
    args = ap.parse_args()
    srv = FakeLLMServer(args.delay, port=args.port)
    print(srv.url, flush=True)
    try:
        srv.thread.join()
    except KeyboardInterrupt:
        srv.close()
        sys.exit(0)
