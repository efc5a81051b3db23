"""In-session compaction: three strategies, the memory system message, the budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem.errors import ValidationError
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.summarize.compaction import (
    MEMORY_HEADER,
    MESSAGE_OVERHEAD,
    SUMMARY_HEADER,
    Strategy,
    compact,
    count_message_tokens,
    memory_system_message,
)


def words(text: str) -> int:
    return len(text.split())


@dataclass
class SummaryLLM:
    """Test double: the 'summary' is the first word of every older line, as sentences."""

    context_window: int = 4096
    name: str = "summary-double"
    calls: list[dict[str, Any]] = field(default_factory=list)

    def chat(self, messages, *, schema=None, max_tokens=512, temperature=0.0, stop=None, purpose="", penalties=None):
        prompt = messages[-1]["content"]
        self.calls.append({"prompt": prompt, "max_tokens": max_tokens, "temperature": temperature, "purpose": purpose})
        body = prompt.split("Earlier messages:", 1)[1].split("Summary:", 1)[0]
        lines = [ln for ln in body.strip().splitlines() if ": " in ln and not ln.startswith("(Summary")]
        text = " ".join(f"{ln.split(': ', 1)[1].split()[0]} was said." for ln in lines)
        return ChatResult(text=text, usage=CallUsage(prompt_tokens=words(prompt), completion_tokens=words(text)))

    def count_tokens(self, text: str) -> int:
        return words(text)


def conversation(n: int, size: int = 10) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append({"role": role, "content": f"t{i} " + "x " * (size - 1)})
    if msgs[-1]["role"] != "user":
        msgs.append({"role": "user", "content": "final question please"})
    return msgs


MEMORY = "Ann lives in Oslo. Ann has a dog called Rex. Ann started running in May."


@pytest.mark.parametrize("strategy", ["sliding_window", "token_budget", "summary"])
def test_memory_system_message_comes_first_and_newest_user_turn_last(strategy: str) -> None:
    msgs = conversation(20)
    res = compact(msgs, MEMORY, budget_tokens=120, strategy=strategy, llm=SummaryLLM(), count_tokens=words)
    first = res.messages[0]
    assert first["role"] == "system"
    assert first["content"].startswith("You are a helpful assistant.")
    assert MEMORY_HEADER + "\nAnn lives in Oslo.\nAnn has a dog called Rex.\nAnn started running in May." in first["content"]
    assert res.messages[-1] == msgs[-1]
    assert res.tokens == count_message_tokens(res.messages, words) <= 120
    assert res.original_tokens > res.tokens and res.saved_tokens == res.original_tokens - res.tokens
    # what is kept verbatim is a contiguous suffix of the conversation
    kept = res.messages[1:]
    assert kept == msgs[len(msgs) - len(kept) :]
    assert res.strategy is Strategy(strategy)


@pytest.mark.parametrize("strategy", ["sliding_window", "token_budget", "summary"])
def test_leading_developer_instructions_are_kept_as_system_ones_are(strategy: str) -> None:
    """OpenAI's newer models take instructions as "developer" messages: they lead the compacted part, in the
    caller's role, and are never dropped as an old turn (they were: only "system" was instructions)."""
    msgs = [{"role": "developer", "content": "Always answer in French."}, *conversation(20)[1:]]
    res = compact(msgs, MEMORY, budget_tokens=120, strategy=strategy, llm=SummaryLLM(), count_tokens=words)
    first = res.messages[0]
    assert first["role"] == "developer" and first["content"].startswith("Always answer in French.")
    assert MEMORY_HEADER in first["content"] and res.messages[-1] == msgs[-1]
    assert [m["role"] for m in res.messages].count("developer") == 1 and res.tokens <= 120


def test_sliding_window_keeps_the_last_k_turns() -> None:
    msgs = conversation(20)
    res = compact(msgs, None, budget_tokens=10_000, strategy="sliding_window", count_tokens=words, keep_turns=4)
    assert res.messages[1:] == msgs[-5:]  # 4 turns before the newest user turn, plus it
    assert res.kept_turns == 5 and res.dropped_turns == 21 - 5
    assert MEMORY_HEADER not in res.messages[0]["content"]


def test_token_budget_keeps_as_many_turns_as_fit() -> None:
    msgs = conversation(20)
    per_turn = 10 + MESSAGE_OVERHEAD
    header = words("You are a helpful assistant.") + MESSAGE_OVERHEAD
    newest = words(msgs[-1]["content"]) + MESSAGE_OVERHEAD
    budget = header + newest + 4 * per_turn + per_turn // 2
    res = compact(msgs, None, budget_tokens=budget, strategy="token_budget", count_tokens=words)
    assert res.messages[1:] == msgs[-5:]
    assert res.tokens == header + newest + 4 * per_turn <= budget
    # room for three turns: the third back is a reply whose question does not fit, so two are kept
    odd = compact(msgs, None, budget_tokens=budget - per_turn, strategy="token_budget", count_tokens=words)
    assert odd.messages[1:] == msgs[-3:] and odd.messages[1]["role"] == "user"
    wide = compact(msgs, None, budget_tokens=10_000, strategy="token_budget", count_tokens=words)
    assert wide.messages == msgs and wide.dropped_turns == 0 and wide.saved_tokens == 0


def test_summary_strategy_summarises_older_turns_and_keeps_recent_verbatim() -> None:
    llm = SummaryLLM()
    msgs = conversation(20)
    res = compact(msgs, MEMORY, budget_tokens=400, strategy="summary", llm=llm, count_tokens=words, keep_turns=4)
    assert len(llm.calls) == 1 and llm.calls[0]["temperature"] == 0.0 and llm.calls[0]["purpose"] == "compact"
    assert res.messages[1:] == msgs[-5:]
    assert res.summarized_turns == 16 and res.dropped_turns == 0
    assert SUMMARY_HEADER + "\nt0 was said. t1 was said." in res.messages[0]["content"]
    assert "t15 was said." in res.summary and "t16" not in res.summary
    # the summary is placed after the memory
    content = res.messages[0]["content"]
    assert content.index(MEMORY_HEADER) < content.index(SUMMARY_HEADER)
    assert res.tokens <= 400 and len(res.usage) == 1


def test_summary_prefix_moves_in_whole_blocks_so_prompts_repeat() -> None:
    llm = SummaryLLM()
    msgs = conversation(18)  # 18 turns before the newest user turn: 14 do not fit the window of 4
    first = compact(msgs, None, budget_tokens=400, strategy="summary", llm=llm, count_tokens=words, keep_turns=4)
    assert first.summarized_turns == 16 and len(first.messages) == 1 + 2 + 1  # rounded up to a block of 4
    turn = [{"role": "assistant", "content": "sure"}, {"role": "user", "content": "and another question"}]
    second = compact(msgs + turn, None, budget_tokens=400, strategy="summary", llm=llm, count_tokens=words,
                     keep_turns=4)
    assert second.summarized_turns == 16 and len(second.messages) == 1 + 4 + 1
    assert llm.calls[0]["prompt"] == llm.calls[1]["prompt"]  # a response cache answers the second
    compact(msgs + turn + turn, None, budget_tokens=400, strategy="summary", llm=llm, count_tokens=words,
            keep_turns=4)
    assert llm.calls[2]["prompt"] != llm.calls[1]["prompt"]  # the next block moved on


def test_summary_is_trimmed_to_the_budget() -> None:
    llm = SummaryLLM()
    msgs = conversation(30)
    res = compact(msgs, None, budget_tokens=90, strategy="summary", llm=llm, count_tokens=words, keep_turns=2,
                  summary_max_tokens=500)
    assert res.tokens <= 90
    assert res.messages[-1] == msgs[-1]


def test_memory_is_cut_by_whole_sentences_when_the_budget_is_tight() -> None:
    msgs = [{"role": "user", "content": "hello"}]
    need_all = count_message_tokens([memory_system_message(MEMORY), msgs[0]], words)
    res = compact(msgs, MEMORY, budget_tokens=need_all - 1, strategy="token_budget", count_tokens=words)
    assert res.memory_sentences == 2 and res.memory_sentences_dropped == 1
    assert "running" not in res.messages[0]["content"]
    tiny = compact(msgs, MEMORY, budget_tokens=words("hello") + MESSAGE_OVERHEAD, strategy="sliding_window",
                   count_tokens=words)
    assert tiny.messages == msgs and tiny.memory_sentences == 0


def test_newest_user_turn_that_cannot_fit_is_a_clear_error() -> None:
    msgs = [{"role": "user", "content": "word " * 50}]
    with pytest.raises(ValidationError) as e:
        compact(msgs, MEMORY, budget_tokens=20, strategy="token_budget", count_tokens=words)
    assert e.value.field == "budget_tokens" and "55 tokens" in str(e.value)


def test_tool_results_after_the_newest_user_turn_are_kept() -> None:
    msgs = [*conversation(6), {"role": "assistant", "content": None}, {"role": "tool", "content": "42"}]
    res = compact(msgs, None, budget_tokens=40, strategy="token_budget", count_tokens=words)
    assert res.messages[-3:] == msgs[-3:]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"strategy": "fifo"}, "strategy"),
        ({"budget_tokens": 0}, "budget_tokens"),
        ({"budget_tokens": "100"}, "budget_tokens"),
        ({"keep_turns": -1}, "keep_turns"),
        ({"count_tokens": None}, "count_tokens"),
        ({"strategy": "summary"}, "llm"),
        ({"memory": 42}, "memory"),
    ],
)
def test_bad_arguments_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"budget_tokens": 100, "strategy": "token_budget", "count_tokens": words, **kwargs}
    with pytest.raises(ValidationError) as e:
        compact([{"role": "user", "content": "hi"}], **args)
    assert e.value.field == field


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([], "messages"),
        ("hello", "messages"),
        ([{"role": "assistant", "content": "hi"}], "messages"),
        ([{"role": "wizard", "content": "hi"}], "messages[0].role"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        ([{"role": "user", "content": ""}], "messages[0].content"),
        (["hi"], "messages[0]"),
    ],
)
def test_bad_messages_name_the_field(messages: Any, field: str) -> None:
    with pytest.raises(ValidationError) as e:
        compact(messages, budget_tokens=100, count_tokens=words)
    assert e.value.field == field


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=25),
    budget=st.integers(1, 400),
    strategy=st.sampled_from(list(Strategy)),
    mem_sentences=st.integers(0, 6),
    keep=st.integers(0, 8),
)
def test_never_exceeds_the_budget_and_never_drops_the_newest_user_turn(
    sizes: list[int], budget: int, strategy: Strategy, mem_sentences: int, keep: int
) -> None:
    msgs = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "w " * (n - 1)}
        for i, n in enumerate(sizes)
    ]
    if msgs[-1]["role"] != "user":
        msgs.append({"role": "user", "content": "q"})
    memory = " ".join(f"Fact {i} holds." for i in range(mem_sentences))
    needed = words(msgs[-1]["content"]) + MESSAGE_OVERHEAD
    if needed > budget:
        with pytest.raises(ValidationError):
            compact(msgs, memory, budget, strategy, SummaryLLM(), words, keep_turns=keep)
        return
    res = compact(msgs, memory, budget, strategy, SummaryLLM(), words, keep_turns=keep)
    assert count_message_tokens(res.messages, words) == res.tokens <= budget
    assert res.messages[-1] == msgs[-1]
    assert res.kept_turns + res.dropped_turns + res.summarized_turns == len(msgs)


# --------------------------------------------------------------------------- tool calls and where a suffix starts


def tool_call(call_id: str, args_words: int) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": "x " * args_words}}


TOOL_CHAT = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [tool_call("c1", 500)]},
    {"role": "tool", "content": "result", "tool_call_id": "c1"},
    {"role": "user", "content": "next"},
]


def test_count_message_tokens_counts_every_field_a_chat_api_sends() -> None:
    assert count_message_tokens([{"role": "user", "content": "a b c"}], words) == MESSAGE_OVERHEAD + 3
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("c1", 500)]}
    assert count_message_tokens([call], words) > 500
    tool = {"role": "tool", "content": "result", "tool_call_id": "call_abc", "name": "lookup"}
    assert count_message_tokens([tool], words) == MESSAGE_OVERHEAD + 3
    parts = {"role": "user", "content": [{"type": "text", "text": "one two three four"}]}
    assert count_message_tokens([parts], words) >= MESSAGE_OVERHEAD + 4


@pytest.mark.parametrize("strategy", list(Strategy))
def test_a_tool_calling_turn_counts_against_the_budget(strategy: Strategy) -> None:
    res = compact(TOOL_CHAT, None, budget_tokens=40, strategy=strategy, llm=ToolAwareLLM(), count_tokens=words)
    assert res.tokens <= 40 and sent_words(res.messages) <= 40
    # the 500-word call does not fit, so neither does its result (the summary strategy summarises them)
    assert [m for m in res.messages if m["role"] != "system"] == [TOOL_CHAT[-1]]


def test_a_tool_result_is_never_kept_without_its_call() -> None:
    res = compact(TOOL_CHAT, None, budget_tokens=16, strategy="token_budget", count_tokens=words)
    assert res.messages == [TOOL_CHAT[-1]]  # the tool result (6 tokens) would fit, but not alone
    assert res.dropped_turns == 3



@pytest.mark.parametrize(("turn", "reason"), [
    ({"role": "user", "content": "hi", "tool_calls": [tool_call("c1", 1)]}, "only an assistant turn calls tools"),
    ({"role": "assistant", "content": None, "tool_calls": []}, "non-empty list of tool calls"),
    ({"role": "assistant", "content": None, "tool_calls": ["weather(Oslo)"]}, "non-empty list of tool calls"),
])
def test_a_tool_call_a_chat_api_would_refuse_is_named(turn: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValidationError) as e:
        compact([turn, {"role": "user", "content": "and now?"}], None, budget_tokens=500, strategy="token_budget",
                count_tokens=words)
    assert e.value.field == "messages[0].tool_calls" and reason in e.value.reason

@pytest.mark.parametrize(
    ("strategy", "budget", "keep"),
    [("token_budget", 20, 6), ("sliding_window", 20, 6), ("sliding_window", 1000, 1), ("summary", 1000, 1)],
)
def test_a_reply_is_never_kept_without_the_user_turn_it_answered(strategy: str, budget: int, keep: int) -> None:
    msgs = [{"role": "user", "content": "u2 " * 10}, {"role": "assistant", "content": "a2 " * 3},
            {"role": "user", "content": "u3 now"}]
    res = compact(msgs, None, budget_tokens=budget, strategy=strategy, llm=ToolAwareLLM(), count_tokens=words,
                  keep_turns=keep)
    assert [m for m in res.messages if m["role"] != "system"] == [msgs[-1]]
    if strategy == "summary":  # the question and its reply went into the summary together
        assert res.summarized_turns == 2 and "u2" in res.summary and "a2" in res.summary


@dataclass
class ToolAwareLLM:
    """Test double for the summary strategy: the summary names each older line's speaker and first word."""

    context_window: int = 4096
    name: str = "tool-aware-double"

    def chat(self, messages, *, schema=None, max_tokens=512, temperature=0.0, stop=None, purpose="", penalties=None):
        body = messages[-1]["content"].split("Earlier messages:", 1)[1].split("Summary:", 1)[0]
        said = [ln.split(": ", 1) for ln in body.strip().splitlines() if ": " in ln and not ln.startswith("(Summary")]
        text = " ".join(f"{who} said {(what.split() or ['nothing'])[0]}." for who, what in said)
        return ChatResult(text=text, usage=CallUsage())

    def count_tokens(self, text: str) -> int:
        return words(text)


def sent_words(messages: list[dict[str, Any]]) -> int:
    """Tokens as a chat API would see them, counted independently of the module: the framing plus
    the words of every string anywhere in the message but its role."""

    def leaf_words(value: Any) -> int:
        if isinstance(value, str):
            return words(value)
        if isinstance(value, dict):
            return sum(leaf_words(v) for v in value.values())
        if isinstance(value, list):
            return sum(leaf_words(v) for v in value)
        return 0

    return sum(MESSAGE_OVERHEAD + leaf_words({k: v for k, v in m.items() if k != "role"}) for m in messages)


@st.composite
def tool_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """User turns, each answered by tool rounds (a call with 1–2 results) and/or a reply; the
    newest user turn may be followed by the current step's tool round."""
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": "Be brief."})
    n_calls = 0

    def tool_round() -> None:
        nonlocal n_calls
        ids = [f"c{n_calls + k}" for k in range(draw(st.integers(1, 2)))]
        n_calls += len(ids)
        msgs.append({"role": "assistant", "content": draw(st.sampled_from([None, "", "let me look"])),
                     "tool_calls": [tool_call(i, draw(st.integers(0, 60))) for i in ids]})
        msgs.extend({"role": "tool", "tool_call_id": i, "content": "r " * draw(st.integers(1, 30))} for i in ids)

    for t in range(draw(st.integers(1, 6))):
        msgs.append({"role": "user", "content": f"u{t} " + "w " * draw(st.integers(0, 30))})
        for _ in range(draw(st.integers(0, 2))):
            tool_round()
        if draw(st.booleans()):
            msgs.append({"role": "assistant", "content": f"a{t} " + "v " * draw(st.integers(0, 30))})
    if draw(st.booleans()):
        tool_round()  # the current step: the newest user turn's call and its results
    return msgs


@settings(max_examples=150, deadline=None)
@given(
    msgs=tool_conversations(),
    budget=st.integers(1, 800),
    strategy=st.sampled_from(list(Strategy)),
    mem_sentences=st.integers(0, 4),
    keep=st.integers(0, 8),
)
def test_conversations_with_tool_calls_keep_their_shape_and_the_budget(
    msgs: list[dict[str, Any]], budget: int, strategy: Strategy, mem_sentences: int, keep: int
) -> None:
    memory = " ".join(f"Fact {i} holds." for i in range(mem_sentences))
    last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
    tail = msgs[last_user:]
    instructions = [m for m in msgs[:1] if m["role"] == "system"]
    required = count_message_tokens(tail, words) + count_message_tokens(instructions, words)
    if required > budget:
        with pytest.raises(ValidationError):
            compact(msgs, memory, budget, strategy, ToolAwareLLM(), words, keep_turns=keep)
        return
    res = compact(msgs, memory, budget, strategy, ToolAwareLLM(), words, keep_turns=keep)
    # never over the budget, counted the way an API sees the messages (tool calls included)
    assert sent_words(res.messages) <= count_message_tokens(res.messages, words) == res.tokens <= budget
    # the newest user turn and everything after it, last
    assert res.messages[len(res.messages) - len(tail) :] == tail
    # a contiguous suffix of the conversation that starts with a user turn: no orphan reply or tool result
    kept = [m for m in res.messages if m["role"] != "system"]
    assert kept == msgs[len(msgs) - len(kept) :]
    assert kept[0]["role"] == "user"
    for i, m in enumerate(kept):
        if m["role"] == "tool":  # its call is the nearest assistant turn before it
            caller = next(p for p in reversed(kept[:i]) if p["role"] != "tool")
            assert caller["role"] == "assistant" and m["tool_call_id"] in {c["id"] for c in caller["tool_calls"]}
    assert res.kept_turns + res.dropped_turns + res.summarized_turns == len(msgs) - len(instructions)


def test_content_given_as_parts_is_kept_as_sent_and_read_as_text() -> None:
    """OpenAI's list of content parts (text beside an image) was refused ("expected a string"); apps
    sending images had no way through ``context()``."""
    from chronomem.summarize.compaction import compact

    parts = [{"type": "text", "text": "What breed is this dog?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    msgs = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
            {"role": "user", "content": parts}]
    res = compact(msgs, budget_tokens=500, count_tokens=lambda t: len(t.split()))
    assert res.messages[-1] == {"role": "user", "content": parts}  # the parts go on as sent
    assert "Be brief." in res.messages[0]["content"]
    with pytest.raises(ValidationError, match="a user turn needs text"):
        compact([{"role": "user", "content": [{"type": "text", "text": "  "}]}], budget_tokens=50,
                count_tokens=lambda t: len(t.split()))
    with pytest.raises(ValidationError, match="list of content parts"):
        compact([{"role": "user", "content": 5}], budget_tokens=50, count_tokens=lambda t: len(t.split()))
