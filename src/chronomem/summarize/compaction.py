"""In-session compaction: the message list to send with the next LLM call.

:func:`compact` returns a list of OpenAI-shaped chat messages that fits
``budget_tokens``:

1. a leading **system message** carrying the caller's own leading system
   instructions, the user's stored long-term memory (the Rsum memory) and,
   for the ``summary`` strategy, a summary of the older turns;
2. the conversation, compacted by one of three strategies:

   - ``sliding_window`` — at most the last ``keep_turns`` turns;
   - ``summary`` — older turns summarised by the LLM (``compact_summary_v1``),
     at most ``keep_turns`` recent turns verbatim;
   - ``token_budget`` — as many turns as fit, newest first.

Priorities, highest first: the newest user turn (and anything after it, e.g.
tool results of the current step), the caller's system instructions, the
stored memory (whole sentences, in order), the summary, then turns newest
first. Kept turns are always a contiguous suffix of the conversation that
starts where a conversation can start — at a user turn (or system messages
before one), or at the conversation's own first turn — so the model never sees
a reply without the message it answered, nor a tool result without the
assistant message that called the tool. The result never exceeds the budget
and never drops the newest user turn; when even the required part cannot fit,
a :class:`~chronomem.errors.ValidationError` on ``budget_tokens`` says how many
tokens it needs.

Token accounting: ``MESSAGE_OVERHEAD`` per message (the ChatML framing
``<|im_start|>role\\n … <|im_end|>\\n`` is 5 tokens) plus the tokens of every
other field a chat API sends: ``content``, ``tool_calls``, ``name``,
``tool_call_id`` … (a string as it is, anything else as its JSON).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..errors import ValidationError
from ..providers.base import LLM, CallUsage, Messages
from ..prompts import load_prompt
from .text import clean_model_text, content_text, format_transcript, render_prompt, split_sentences

__all__ = [
    "Strategy",
    "CompactionResult",
    "MESSAGE_OVERHEAD",
    "MEMORY_HEADER",
    "SUMMARY_HEADER",
    "compact",
    "count_message_tokens",
    "memory_system_message",
    "summarize_turns",
]

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 5
MEMORY_HEADER = "What you remember about this user from earlier conversations:"
SUMMARY_HEADER = "Summary of the earlier part of this conversation:"
SUMMARY_PROMPT = "compact_summary_v1"
_ROLES = frozenset({"system", "user", "assistant", "tool", "function", "developer"})
_INSTRUCTION_ROLES = ("system", "developer")

CountTokens = Callable[[str], int]


class Strategy(str, Enum):
    SLIDING_WINDOW = "sliding_window"
    SUMMARY = "summary"
    TOKEN_BUDGET = "token_budget"


@dataclass(slots=True)
class CompactionResult:
    """The messages to send, and what compaction did to get there."""

    messages: Messages
    strategy: Strategy
    budget_tokens: int
    tokens: int  # of ``messages``, overhead included
    original_tokens: int  # of the input plus the full memory, uncompacted
    kept_turns: int  # conversation turns sent verbatim (the newest user turn included)
    dropped_turns: int  # turns neither sent nor summarised
    summarized_turns: int = 0
    memory_sentences: int = 0  # memory sentences sent
    memory_sentences_dropped: int = 0
    summary: str = ""
    usage: list[CallUsage] = field(default_factory=list)

    @property
    def saved_tokens(self) -> int:
        return self.original_tokens - self.tokens


def count_message_tokens(messages: Sequence[Mapping[str, Any]], count_tokens: CountTokens) -> int:
    """Tokens of a message list under the accounting of this module."""
    return sum(_msg_tokens(m, count_tokens) for m in messages)


def memory_system_message(memory: str, instructions: str = "") -> dict[str, str]:
    """The system message that injects the stored memory into a (restored) session."""
    return {"role": "system", "content": _header_text(instructions, split_sentences(memory), "")}


def compact(
    messages: Sequence[Mapping[str, Any]],
    memory: str | None = None,
    budget_tokens: int = 2048,
    strategy: Strategy | str = Strategy.TOKEN_BUDGET,
    llm: LLM | None = None,
    count_tokens: CountTokens | None = None,
    *,
    keep_turns: int = 6,
    summary_max_tokens: int = 256,
) -> CompactionResult:
    """Compact ``messages`` (+ the stored ``memory``) to fit ``budget_tokens``.

    ``count_tokens`` defaults to ``llm.count_tokens``; one of the two is
    required.  ``llm`` is required by the ``summary`` strategy only.
    """
    strat = _check_strategy(strategy)
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1:
        raise ValidationError("budget_tokens", budget_tokens, "must be a positive integer")
    if isinstance(keep_turns, bool) or not isinstance(keep_turns, int) or keep_turns < 0:
        raise ValidationError("keep_turns", keep_turns, "must be an integer >= 0")
    if memory is not None and not isinstance(memory, str):
        raise ValidationError("memory", memory, "must be a string or None")
    if count_tokens is None:
        if llm is None:
            raise ValidationError("count_tokens", None, "give count_tokens or an llm to count tokens with")
        count_tokens = llm.count_tokens
    if strat is Strategy.SUMMARY and llm is None:
        raise ValidationError("llm", None, "the summary strategy needs an LLM")

    msgs = _check_messages(messages)
    n_sys = 0  # the leading instructions: "developer" is OpenAI's "system" for its newer models
    while n_sys < len(msgs) and msgs[n_sys]["role"] in _INSTRUCTION_ROLES:
        n_sys += 1
    header_role = msgs[0]["role"] if n_sys else "system"  # the caller's own word for instructions
    instructions = "\n\n".join(content_text(m.get("content")) for m in msgs[:n_sys]).strip()
    turns = msgs[n_sys:]
    last_user = max((i for i, m in enumerate(turns) if m["role"] == "user"), default=None)
    if last_user is None:
        raise ValidationError("messages", _preview(messages), "there is no user turn to answer")
    history, tail = turns[:last_user], turns[last_user:]
    mem_sentences = split_sentences(memory or "")

    original = count_message_tokens(turns, count_tokens) + _header_tokens(
        instructions, mem_sentences, "", count_tokens
    )
    tail_tokens = count_message_tokens(tail, count_tokens)
    required = tail_tokens + _header_tokens(instructions, [], "", count_tokens)
    if required > budget_tokens:
        what = "the newest user turn" + (" and what follows it" if len(tail) > 1 else "")
        what += " plus the system instructions" if instructions else ""
        raise ValidationError(
            "budget_tokens", budget_tokens, f"{what} alone need {required} tokens; raise the budget"
        )

    # The memory, sentence by sentence, in order.
    kept_mem: list[str] = []
    for s in mem_sentences:
        if tail_tokens + _header_tokens(instructions, [*kept_mem, s], "", count_tokens) > budget_tokens:
            break
        kept_mem.append(s)
    if len(kept_mem) < len(mem_sentences):
        log.info("compaction: %d of %d memory sentences fit the budget", len(kept_mem), len(mem_sentences))

    usage: list[CallUsage] = []
    summary = ""
    summarized = 0
    if strat is Strategy.SLIDING_WINDOW:
        room = budget_tokens - tail_tokens - _header_tokens(instructions, kept_mem, "", count_tokens)
        recent = _fit_suffix(history, room, count_tokens, lowest=max(0, len(history) - keep_turns))
    elif strat is Strategy.TOKEN_BUDGET:
        room = budget_tokens - tail_tokens - _header_tokens(instructions, kept_mem, "", count_tokens)
        recent = _fit_suffix(history, room, count_tokens)
    else:
        assert llm is not None
        base = tail_tokens + _header_tokens(instructions, kept_mem, "", count_tokens)
        free = budget_tokens - base
        reserve = min(summary_max_tokens, free // 2)
        recent = _fit_suffix(history, free - reserve, count_tokens, lowest=max(0, len(history) - keep_turns))
        n_old = len(history) - len(recent)
        if n_old and keep_turns:
            # Summarise whole blocks of keep_turns turns, so that the summarised
            # prefix (and the prompt, hence a cached response) changes only
            # once every keep_turns turns.
            n_old = min(len(history), math.ceil(n_old / keep_turns) * keep_turns)
            # A block boundary may fall on a reply or a tool result: summarise on to the next
            # place a conversation can start (a tool result after a summary is refused by the API).
            while n_old < len(history) and not _can_start(history, n_old):
                n_old += 1
            recent = history[n_old:]
        older = history[:n_old]
        if older and reserve > 0:
            summary, usage = summarize_turns(llm, older, max_tokens=reserve)
            summarized = len(older)
            # Trim the summary to what actually fits (whole sentences).
            sents = split_sentences(summary)
            room = budget_tokens - tail_tokens - count_message_tokens(recent, count_tokens)
            while sents and _header_tokens(instructions, kept_mem, " ".join(sents), count_tokens) > room:
                sents.pop()
            summary = " ".join(sents)
            if not summary:
                summarized = 0

    header = _header_text(instructions, kept_mem, summary)
    out: Messages = [{"role": header_role, "content": header}] if header else []
    out.extend(dict(m) for m in recent)
    out.extend(dict(m) for m in tail)
    total = count_message_tokens(out, count_tokens)
    if total > budget_tokens:  # defensive: counting is additive per message, so this cannot happen
        raise AssertionError(f"compaction exceeded its budget: {total} > {budget_tokens}")
    kept = len(recent) + len(tail)
    return CompactionResult(
        messages=out,
        strategy=strat,
        budget_tokens=budget_tokens,
        tokens=total,
        original_tokens=original,
        kept_turns=kept,
        dropped_turns=len(turns) - kept - summarized,
        summarized_turns=summarized,
        memory_sentences=len(kept_mem),
        memory_sentences_dropped=len(mem_sentences) - len(kept_mem),
        summary=summary,
        usage=usage,
    )


def summarize_turns(
    llm: LLM,
    turns: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int = 256,
    prompt: str = SUMMARY_PROMPT,
) -> tuple[str, list[CallUsage]]:
    """Summarise older turns with ``compact_summary_v1`` at temperature 0.

    Turns that do not fit the model's context in one prompt are summarised in
    consecutive chunks, each chunk's prompt carrying the summary so far.
    """
    if max_tokens < 1:
        raise ValidationError("max_tokens", max_tokens, "must be >= 1")
    max_words = max(10, int(max_tokens * 0.6))
    template = load_prompt("chronomem.summarize", prompt)
    fixed = llm.count_tokens(render_prompt(template, max_words=max_words, transcript=""))
    room = llm.context_window - fixed - 2 * max_tokens - 64
    if room < 64:
        raise ValidationError("max_tokens", max_tokens, f"leaves no room in a {llm.context_window}-token context")
    # A tool-calling assistant turn has content None, which the transcript would refuse as not text.
    lines = format_transcript([{**t, "content": t.get("content") or ""} for t in turns]).splitlines()
    chunks: list[list[str]] = [[]]
    used = 0
    for line in lines:
        n = llm.count_tokens(line) + 1
        if n > room:
            line, n = line[: max(1, len(line) * room // n)], room
        if chunks[-1] and used + n > room:
            chunks.append([])
            used = 0
        chunks[-1].append(line)
        used += n
    summary = ""
    usage: list[CallUsage] = []
    for chunk in chunks:
        transcript = "\n".join(chunk)
        if summary:
            transcript = f"(Summary of the messages before these: {summary})\n{transcript}"
        text = render_prompt(template, max_words=max_words, transcript=transcript)
        res = llm.chat(
            [{"role": "user", "content": text}], max_tokens=max_tokens, temperature=0.0, purpose="compact"
        )
        usage.append(res.usage)
        summary = " ".join(clean_model_text(res.text).split()) or summary
    return summary, usage


# --------------------------------------------------------------------------- internals


def _msg_tokens(m: Mapping[str, Any], count_tokens: CountTokens) -> int:
    # Every field but the role (inside the overhead) is sent: an assistant turn's tool_calls can
    # dwarf its (often empty) content, and counting content alone let such a turn overrun the budget.
    n = MESSAGE_OVERHEAD
    for key, value in m.items():
        if key == "role" or value is None or (isinstance(value, str | list | tuple | dict) and not value):
            continue
        n += count_tokens(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
    return n


def _header_text(instructions: str, memory: Sequence[str], summary: str) -> str:
    parts = []
    if instructions:
        parts.append(instructions)
    if memory:
        parts.append(MEMORY_HEADER + "\n" + "\n".join(memory))
    if summary:
        parts.append(SUMMARY_HEADER + "\n" + summary)
    return "\n\n".join(parts)


def _header_tokens(instructions: str, memory: Sequence[str], summary: str, count_tokens: CountTokens) -> int:
    text = _header_text(instructions, memory, summary)
    return MESSAGE_OVERHEAD + count_tokens(text) if text else 0


def _fit_suffix(
    turns: Sequence[Mapping[str, Any]], room: int, count_tokens: CountTokens, *, lowest: int = 0
) -> list[Mapping[str, Any]]:
    """The longest suffix of ``turns``, from index ``lowest`` on, whose tokens fit ``room`` and
    that starts where a conversation can (:func:`_can_start`); it may be empty."""
    used = 0
    start = len(turns)
    for i in range(len(turns) - 1, lowest - 1, -1):
        used += _msg_tokens(turns[i], count_tokens)
        if used > room:
            break
        if _can_start(turns, i):
            start = i
    return list(turns[start:])


def _can_start(turns: Sequence[Mapping[str, Any]], i: int) -> bool:
    """Whether the kept part may begin at ``turns[i]``.

    The conversation's own first turn may (it is the caller's shape), and so may a user turn,
    after any system messages.  An assistant reply whose user turn is cut, or a tool result whose
    calling assistant message is cut, may not: the model would answer out of context, and
    OpenAI-style APIs refuse a tool message that follows no tool call.  Past the end is the newest
    user turn, which can always start.
    """
    if i == 0:
        return True
    while i < len(turns) and turns[i]["role"] in _INSTRUCTION_ROLES:
        i += 1
    return i == len(turns) or turns[i]["role"] == "user"


def _check_strategy(strategy: Strategy | str) -> Strategy:
    try:
        return Strategy(strategy)
    except ValueError:
        raise ValidationError(
            "strategy", strategy, f"expected one of {', '.join(s.value for s in Strategy)}"
        ) from None


def _check_messages(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValidationError("messages", _preview(messages), "expected a list of chat messages")
    if not messages:
        raise ValidationError("messages", [], "is empty; there is no user turn to answer")
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise ValidationError(f"messages[{i}]", m, "expected a dict with 'role' and 'content'")
        if m.get("role") not in _ROLES:
            raise ValidationError(f"messages[{i}].role", m.get("role"), f"expected one of {sorted(_ROLES)}")
        content = m.get("content")  # a string, or OpenAI's list of parts (text, images: kept as sent)
        text = content_text(content, f"messages[{i}].content")
        if m["role"] == "user" and not text.strip():
            raise ValidationError(f"messages[{i}].content", content, "a user turn needs text")
        _check_tool_round(m, f"messages[{i}]")
    return list(messages)


def _check_tool_round(m: Mapping[str, Any], where: str) -> None:
    """Only an assistant turn calls tools, with a list of calls: what a chat API would refuse after the budget
    was spent on it (a tool result's ``tool_call_id`` is left to the API: Ollama's results carry none)."""
    calls = m.get("tool_calls")
    if calls is None:
        return
    if m["role"] != "assistant":
        raise ValidationError(f"{where}.tool_calls", _preview(calls), f"only an assistant turn calls tools, "
                                                                        f"not a {m['role']} turn")
    if not isinstance(calls, list) or not calls or not all(isinstance(c, Mapping) for c in calls):
        raise ValidationError(f"{where}.tool_calls", _preview(calls),
                              "expected a non-empty list of tool calls ({\"id\": ..., \"type\": \"function\", ...})")


def _preview(value: Any) -> Any:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
