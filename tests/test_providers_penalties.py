"""Repetition penalties: the options object, and the request fields each provider sends (no model).

The local provider is checked against a fake llama.cpp engine that records the
request ``handle_chat_completions`` gets; the OpenAI-compatible one against the
HTTP stub in ``test_providers_openai``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chronomem.errors import ValidationError
from chronomem.providers.base import Messages, Penalties
from chronomem.providers.chat import ChatLLM, RawCompletion
from chronomem.providers.local_llama import EngineSettings, LoadedEngine, LocalLlamaLLM, LocalModelRegistry


def test_request_fields_hold_only_what_is_set() -> None:
    assert Penalties().request_fields() == {}
    assert Penalties(repeat=1.1).request_fields() == {"repeat_penalty": 1.1}
    assert Penalties(frequency=1, presence=0.5).request_fields() == {"frequency_penalty": 1.0,
                                                                     "presence_penalty": 0.5}
    assert isinstance(Penalties(frequency=1).request_fields()["frequency_penalty"], float)


@pytest.mark.parametrize("kw", [{"repeat": 0.0}, {"repeat": -1.0}, {"frequency": float("nan")},
                                {"presence": float("inf")}, {"frequency": "0.5"}, {"repeat": True}])
def test_bad_penalties_are_refused_naming_the_field(kw: dict[str, Any]) -> None:
    name = next(iter(kw))
    with pytest.raises(ValidationError, match=f"penalties.{name}"):
        Penalties(**kw)


class FakeServer:
    """Stands in for ``xllamacpp.Server``: records each request, answers with a fixed reply."""

    def __init__(self, reply: str = "Ann is a nurse.") -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = reply

    def handle_chat_completions(self, req: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(req)
        return {"choices": [{"message": {"content": self.reply}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5}}


class FakeRegistry(LocalModelRegistry):
    def __init__(self, server: FakeServer) -> None:
        super().__init__()
        self.server = server

    def get(self, settings: EngineSettings) -> LoadedEngine:
        return LoadedEngine(settings=settings, server=self.server, address="http://127.0.0.1:0", api_key="k",
                            load_s=0.0)


@pytest.fixture()
def local(tmp_path: Path) -> tuple[LocalLlamaLLM, FakeServer]:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF....")
    server = FakeServer()
    return LocalLlamaLLM(gguf, registry=FakeRegistry(server)), server


def test_local_request_carries_the_set_penalties(local: tuple[LocalLlamaLLM, FakeServer]) -> None:
    llm, server = local
    msgs = [{"role": "user", "content": "summarise"}]
    r = llm.chat(msgs, max_tokens=40, penalties=Penalties(repeat=1.15, frequency=0.5))
    assert r.text == "Ann is a nurse."
    req = server.requests[0]
    assert req["repeat_penalty"] == 1.15 and req["frequency_penalty"] == 0.5
    assert "presence_penalty" not in req
    assert req["max_tokens"] == 40 and req["temperature"] == 0.0 and req["messages"] == msgs


def test_local_request_without_penalties_has_no_penalty_field(local: tuple[LocalLlamaLLM, FakeServer]) -> None:
    llm, server = local
    llm.chat([{"role": "user", "content": "x"}])
    llm.chat([{"role": "user", "content": "x"}], penalties=Penalties())
    for req in server.requests:
        assert not {"repeat_penalty", "frequency_penalty", "presence_penalty"} & set(req)


class RetryLLM(ChatLLM):
    """Invalid JSON first, valid JSON after: a structured call that retries; records every request."""

    name = "retry"
    context_window = 1000

    def __init__(self) -> None:
        self.penalties: list[Penalties | None] = []
        self.replies = ["not json", '{"city": "Porto"}']

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _complete(self, messages: Messages, *, penalties: Penalties | None = None, **kw: Any) -> RawCompletion:
        self.penalties.append(penalties)
        return RawCompletion(self.replies.pop(0))


def test_structured_retries_keep_the_penalties() -> None:
    llm = RetryLLM()
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    r = llm.chat([{"role": "user", "content": "where?"}], schema=schema, penalties=Penalties(presence=0.3))
    assert r.data == {"city": "Porto"}
    assert llm.penalties == [Penalties(presence=0.3)] * 2
