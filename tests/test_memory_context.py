"""Memory.context: compaction through the public API, with and without a chat model."""

from __future__ import annotations

from typing import Any

import pytest

from chronomem import ConfigError, Memory, ValidationError
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.providers.openai_compat import estimate_tokens
from chronomem.summarize.compaction import count_message_tokens

CHAT = [{"role": "user", "content": f"old message number {i} about the trip " * 3} for i in range(20)]
CHAT.append({"role": "user", "content": "What should I pack?"})

TOOL_CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "x " * 500}}]},
    {"role": "tool", "content": "result", "tool_call_id": "c1"},
    {"role": "user", "content": "next"},
]


class WordLLM:
    """A chat model that counts words and must never be asked to chat here."""

    name = "words"
    context_window = 8192

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: Any, **kw: Any) -> ChatResult:
        return ChatResult(text="Earlier they talked.", usage=CallUsage())


@pytest.mark.parametrize("strategy", ["token_budget", "sliding_window"])
def test_context_without_a_chat_model_counts_with_the_offline_estimate(strategy: str) -> None:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        out = mem.context(CHAT, user_id="u1", budget_tokens=80, strategy=strategy, keep_turns=4)
    assert out[-1] == CHAT[-1] and 1 < len(out) < len(CHAT)
    assert count_message_tokens(out, estimate_tokens) <= 80


def test_context_summary_without_a_chat_model_says_why() -> None:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        with pytest.raises(ConfigError, match="summary.*chat model"):
            mem.context(CHAT, user_id="u1", budget_tokens=80, strategy="summary")
        with pytest.raises(ValidationError) as e:  # a bad name is still a bad name, model or not
            mem.context(CHAT, user_id="u1", strategy="fifo")
        assert e.value.field == "strategy"


def test_context_counts_tool_calls_and_drops_an_orphaned_tool_result() -> None:
    with Memory(":memory:", llm=WordLLM(), embedder=False) as mem:  # type: ignore[arg-type]
        assert mem.context(TOOL_CHAT, user_id="u1", budget_tokens=40) == [TOOL_CHAT[-1]]
        assert mem.context(TOOL_CHAT, user_id="u1", budget_tokens=16) == [TOOL_CHAT[-1]]
        whole = mem.context(TOOL_CHAT, user_id="u1", budget_tokens=2000)
    assert whole == TOOL_CHAT
