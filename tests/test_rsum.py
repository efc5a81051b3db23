"""Rsum: prompts, the recursive update, checkpoints, as_of, replay and replies.

The LLM here is a scripted test double defined below (it records each call and
answers deterministically from the prompt), so the recursion, the cap and the
checkpoint chain can be checked exactly.  The store double implements the
store methods Rsum uses, with the semantics the core store documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem.errors import ValidationError
from chronomem.model import Checkpoint, Message
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.summarize.rsum import (
    MEMORY_DECODING,
    MEMORY_PENALTIES,
    NO_MEMORY,
    RsumMemory,
    build_memory_messages,
    build_reply_messages,
    generate_reply,
    generation_cap,
    update_memory,
)
from chronomem.prompts import load_prompt
from chronomem.summarize.text import cap_sentences, drop_repeated_sentences, split_sentences

UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass
class ScriptedLLM:
    """Answers with ``respond(prompt_text)``; records every call."""

    respond: Callable[[str], str]
    context_window: int = 8192
    name: str = "scripted"
    calls: list[dict[str, Any]] = field(default_factory=list)

    def chat(self, messages, *, schema=None, max_tokens=512, temperature=0.0, stop=None, purpose="", penalties=None):
        prompt = "\n".join(m["content"] for m in messages)
        self.calls.append(
            {"prompt": prompt, "max_tokens": max_tokens, "temperature": temperature, "purpose": purpose,
             "penalties": penalties, "stop": stop}
        )
        text = self.produce(prompt, max_tokens)
        return ChatResult(
            text=text,
            usage=CallUsage(prompt_tokens=self.count_tokens(prompt), completion_tokens=self.count_tokens(text), purpose=purpose),
        )

    def produce(self, prompt: str, max_tokens: int) -> str:
        """The reply; like a real model's, it stops after ``max_tokens`` tokens."""
        return "".join(re.findall(r"\s*\S+", self.respond(prompt))[:max_tokens])

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _section(prompt: str, title: str, until: str) -> str:
    return prompt.split(title, 1)[1].split(until, 1)[0].strip()


def recursive_fake(prompt: str) -> str:
    """New memory = previous memory + one sentence naming the session's last turn."""
    prev = _section(prompt, "Previous memory:", "\n\nNew session")
    session = prompt.split("\n\nNew session", 1)[1].split(":", 1)[1].split("Updated memory (", 1)[0].strip()
    last = session.splitlines()[-1]
    lines = [] if prev == NO_MEMORY else prev.splitlines()
    return "\n".join([*lines, f"Noted {last.split(': ', 1)[1]}"])


class FakeStore:
    """The store methods Rsum uses (``checkpoints`` oldest first; delete from a seq on)."""

    def __init__(self) -> None:
        self._messages: dict[str, list[Message]] = {}
        self._cps: dict[str, list[Checkpoint]] = {}

    def add_session(self, user_id: str, session_id: str, texts: list[str], start: datetime) -> None:
        for i, text in enumerate(texts):
            self._messages.setdefault(user_id, []).append(
                Message(
                    id=f"{session_id}-{i}",
                    user_id=user_id,
                    session_id=session_id,
                    speaker="Ann" if i % 2 == 0 else "Bob",
                    text=text,
                    timestamp=start + timedelta(minutes=i),
                    recorded_at=start,
                    seq=i,
                )
            )

    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        """Like the core store: the session's messages and its own checkpoint go (it holds no entities)."""
        self._messages[user_id] = [m for m in self._messages[user_id] if m.session_id != session_id]
        self._cps[user_id] = [c for c in self._cps.get(user_id, []) if c.session_id != session_id]
        return []

    def messages(self, user_id: str, *, session_id: str | None = None) -> list[Message]:
        return [m for m in self._messages.get(user_id, []) if session_id is None or m.session_id == session_id]

    def put_checkpoint(self, cp: Checkpoint) -> None:
        cps = [c for c in self._cps.get(cp.user_id, []) if c.seq != cp.seq]
        self._cps[cp.user_id] = sorted([*cps, cp], key=lambda c: c.seq)

    def checkpoints(self, user_id: str) -> list[Checkpoint]:
        return list(self._cps.get(user_id, []))

    def delete_checkpoints(self, user_id: str, from_seq: int) -> None:
        self._cps[user_id] = [c for c in self._cps.get(user_id, []) if c.seq < from_seq]


@pytest.fixture()
def three_sessions() -> FakeStore:
    store = FakeStore()
    store.add_session("u1", "s1", ["I live in Oslo.", "Nice!", "I have a dog called Rex."], T0)
    store.add_session("u1", "s2", ["I started running.", "Good for you.", "I ran 5k today."], T0 + timedelta(days=7))
    store.add_session("u1", "s3", ["I moved to Bergen.", "Why?", "For a new job."], T0 + timedelta(days=14))
    store.add_session("u2", "x1", ["I am someone else entirely."], T0)
    return store


# --------------------------------------------------------------------------- prompts


def test_memory_prompt_has_the_paper_structure_in_order() -> None:
    [msg] = build_memory_messages("Ann: I live in Oslo.", NO_MEMORY, max_sentences=7, session_time=T0)
    text = msg["content"]
    assert msg["role"] == "user"
    # task definition, four steps, the sentence cap, then the inputs
    task = text.index("memory keeper")
    steps = [text.index(f"\n{i}. ") for i in range(1, 5)]
    assert "\n5. " not in text
    cap = text.index("at most 7 sentences")
    session = text.index("New session (ended 2024-01-01):\nAnn: I live in Oslo.")
    prev = text.index("Previous memory:\nnone")
    assert task < steps[0] < steps[1] < steps[2] < steps[3] < cap < prev < session
    assert '("Ann")' in text  # the speakers to name, read from the transcript
    [two] = build_memory_messages("Ann: hi\nBob: hello\nAnn: bye", NO_MEMORY, speakers=None)
    assert '("Ann" and "Bob")' in two["content"]
    assert "$" not in text  # every placeholder filled


def test_reply_prompt_has_five_steps_and_optional_evidence() -> None:
    context = [{"role": "user", "content": "Where do I live now?"}]
    [msg] = build_reply_messages(context, "Ann lives in Oslo.", speaker="Bot")
    text = msg["content"]
    positions = [text.index(f"\n{i}. ") for i in range(1, 6)]
    assert positions == sorted(positions) and "\n6. " not in text
    assert "Memory:\nAnn lives in Oslo." in text
    assert "user: Where do I live now?" in text and text.rstrip().endswith("Bot:")
    assert "Additional evidence" not in text
    [with_ev] = build_reply_messages(context, "", evidence="(Ann, lives_in, Bergen) since 2024-01-15")
    assert "Additional evidence:\n(Ann, lives_in, Bergen)" in with_ev["content"]
    assert "Memory:\nnone" in with_ev["content"]


def test_prompt_files_are_versioned_and_bad_names_are_rejected() -> None:
    assert "$max_words" in load_prompt("chronomem.summarize", "compact_summary_v1")
    with pytest.raises(ValidationError) as e:
        load_prompt("chronomem.summarize", "rsum_memory_v9")
    assert e.value.field == "prompt"
    with pytest.raises(ValidationError):
        load_prompt("chronomem.summarize", "../etc/passwd")


# --------------------------------------------------------------------------- one update


def test_update_memory_runs_at_temperature_zero_and_caps_sentences() -> None:
    many = " ".join(f"Fact number {i} is true." for i in range(30))
    llm = ScriptedLLM(lambda p: "Updated memory:\n" + many)
    turns = [{"role": "user", "name": "Ann", "content": "hello there"}]
    upd = update_memory(llm, turns, NO_MEMORY, max_sentences=20)
    assert llm.calls[0]["temperature"] == 0.0 and llm.calls[0]["purpose"] == "rsum"
    assert len(split_sentences(upd.memory)) == 20
    assert upd.memory.splitlines()[0] == "Fact number 0 is true."  # the title line was removed
    assert upd.dropped_sentences == 10 and upd.calls == 1
    assert upd.prompt_tokens > 0 and upd.completion_tokens > 0


def test_repeated_sentences_are_dropped_and_near_repeats_too() -> None:
    text = "Ann lives in Oslo. Ann likes tea.\nAnn lives in Oslo! ANN lives in OSLO. Ann is also a nurse. " \
           "Ann is a nurse. Ben is a nurse. Ann likes tea and cake."
    kept, dropped = drop_repeated_sentences(text)
    assert kept.splitlines() == ["Ann lives in Oslo.", "Ann likes tea.", "Ann is also a nurse.", "Ben is a nurse.",
                                 "Ann likes tea and cake."]
    assert dropped == 3  # two spellings of the first sentence, and "a nurse" without "also"
    assert drop_repeated_sentences("") == ("", 0)
    # fourteen words in common out of sixteen, but about two people: not a repeat
    two = ("Caroline is a 30-year-old woman who works as a counselor and is passionate about mental health. "
           "Melanie is a 30-year-old woman who works as a counselor and is passionate about mental health.")
    assert drop_repeated_sentences(two)[1] == 0
    assert drop_repeated_sentences("Ann likes tea and cake. Ann likes tea.", similarity=0.5)[1] == 1
    with pytest.raises(ValidationError, match="similarity"):
        drop_repeated_sentences(text, similarity=0.0)


def test_a_model_stuck_in_a_loop_leaves_each_sentence_once_and_the_new_one_under_the_cap() -> None:
    # a small model at temperature 0: the old memory again and again, the session's news at the end
    loop = "Ann lives in Oslo. Ann likes tea. " * 15 + "Ann adopted a cat called Miso."
    upd = update_memory(ScriptedLLM(lambda p: loop), [{"speaker": "Ann", "text": "We adopted Miso!"}],
                        "Ann lives in Oslo.\nAnn likes tea.", max_sentences=20)
    assert upd.memory.splitlines() == ["Ann lives in Oslo.", "Ann likes tea.", "Ann adopted a cat called Miso."]
    assert upd.repeated_sentences == 28 and upd.dropped_sentences == 0


def test_the_update_asks_for_the_repetition_penalty_and_the_reply_does_not() -> None:
    assert MEMORY_DECODING == 2 and MEMORY_PENALTIES.request_fields()  # the latest revision sends a penalty
    llm = ScriptedLLM(lambda p: "Ann likes tea.")
    turns = [{"speaker": "Ann", "text": "I like tea."}]
    update_memory(llm, turns, NO_MEMORY)
    generate_reply(llm, [{"role": "user", "content": "hi"}], "Ann likes tea.")
    assert [c["penalties"] for c in llm.calls] == [MEMORY_PENALTIES, None]


def test_decoding_1_sends_the_calls_of_the_previous_revision() -> None:
    llm = ScriptedLLM(lambda p: "Ann likes tea.")
    turns = [{"speaker": "Ann", "text": "I like tea."}]
    update_memory(llm, turns, "Ann likes tea.", decoding=1)
    update_memory(llm, turns, "Ann likes tea.", decoding=1, max_tokens=50)
    assert [(c["max_tokens"], c["stop"], c["penalties"]) for c in llm.calls] == [(704, None, None), (50, None, None)]
    for bad in (0, 4, "2"):
        with pytest.raises(ValidationError, match="decoding"):
            update_memory(llm, turns, NO_MEMORY, decoding=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="decoding"):
            RsumMemory(FakeStore(), llm, decoding=bad)  # type: ignore[arg-type]


def _append_or_rewrite(prompt: str) -> str:
    """A small model under decoding 3: the append prompt gets the memory copied back, then one new
    sentence per session line; the rewrite prompt gets the first memory, or a merge under the cap."""
    if "Memory (already kept):" in prompt:
        memory = _section(prompt, "Memory (already kept):", "\n\nNow read")
        session = prompt.split("Newest session", 1)[1].split(":", 1)[1].split("New sentences for", 1)[0]
        news = [f"Ann {line.split(': ', 1)[1]}" for line in session.strip().splitlines()]
        return "\n".join([*memory.splitlines(), *news])  # copies what is kept, as 1.5B models do
    prev = _section(prompt, "Previous memory:", "\n\nNew session")
    if prev == NO_MEMORY:
        return "Ann lives in Oslo."
    return "\n".join(prev.splitlines()[-2:])  # the merge keeps the latest two


def test_decoding_3_appends_what_a_session_adds_and_drops_what_the_model_copied() -> None:
    llm = ScriptedLLM(_append_or_rewrite)
    first = update_memory(llm, [{"speaker": "Ann", "text": "I live in Oslo."}], NO_MEMORY, decoding=3)
    assert first.memory == "Ann lives in Oslo." and "Previous memory:" in llm.calls[0]["prompt"]  # the rewrite
    turns = [{"speaker": "Ann", "text": "adopted a cat."}, {"speaker": "Ann", "text": "started rowing."}]
    upd = update_memory(llm, turns, first.memory, decoding=3)
    call = llm.calls[1]
    assert "Memory (already kept):\nAnn lives in Oslo." in call["prompt"] and "at most 10" in call["prompt"]
    assert call["max_tokens"] == 20 * 10 + 32 and call["penalties"] == MEMORY_PENALTIES
    assert call["stop"] == ["\nAnn:"]
    assert upd.memory.splitlines() == ["Ann lives in Oslo.", "Ann adopted a cat.", "Ann started rowing."]
    assert upd.repeated_sentences == 1 and upd.calls == 1  # the copied memory sentence
    # nothing new: the memory stays as it was, no warning, no rewrite
    quiet = ScriptedLLM(lambda p: "")
    same = update_memory(quiet, turns, upd.memory, decoding=3)
    assert same.memory == upd.memory and same.calls == 1


def test_decoding_3_rewrites_only_when_the_memory_outgrows_its_cap() -> None:
    llm = ScriptedLLM(_append_or_rewrite)
    memory = "Ann lives in Oslo.\nAnn likes tea."
    turns = [{"speaker": "Ann", "text": "adopted a cat."}, {"speaker": "Ann", "text": "started rowing."}]
    upd = update_memory(llm, turns, memory, max_sentences=3, decoding=3)
    assert upd.calls == 2 and "Previous memory:" in llm.calls[1]["prompt"]  # append, then the merge
    assert "Ann started rowing." in _section(llm.calls[1]["prompt"], "Previous memory:", "\n\nNew session")
    assert upd.memory.splitlines() == ["Ann adopted a cat.", "Ann started rowing."]
    assert llm.calls[0]["max_tokens"] == 20 * 3 + 32  # room for at most 3 new sentences
    fits = update_memory(ScriptedLLM(_append_or_rewrite), turns, memory, max_sentences=4, decoding=3)
    assert fits.calls == 1 and len(fits.memory.splitlines()) == 4


def test_rsum_memory_appends_under_decoding_3(three_sessions: FakeStore) -> None:
    llm = ScriptedLLM(_append_or_rewrite)
    rsum = RsumMemory(three_sessions, llm, decoding=3)
    rsum.update("u1", "s1")
    cp = rsum.update("u1", "s2")
    assert cp is not None and cp.memory.splitlines()[0] == "Ann lives in Oslo." and len(cp.memory.splitlines()) > 1
    assert ["Previous memory:" in c["prompt"] for c in llm.calls] == [True, False]


def test_the_update_stops_at_a_dialogue_line_of_its_speakers() -> None:
    llm = ScriptedLLM(lambda p: "Ann likes tea.")
    update_memory(llm, [{"speaker": "Ann", "text": "Tea?"}, {"speaker": "Bob", "text": "Yes."}], NO_MEMORY)
    assert llm.calls[0]["stop"] == ["\nAnn:", "\nBob:"]
    many = [{"speaker": name, "text": "hi"} for name in ("A", "B", "C", "D", "E")]
    update_memory(llm, many, NO_MEMORY)
    assert llm.calls[1]["stop"] == ["\nA:", "\nB:", "\nC:", "\nD:"]  # OpenAI takes four stop sequences
    update_memory(llm, [{"role": "user", "content": "no names"}], NO_MEMORY)
    assert llm.calls[2]["stop"] == ["\nuser:"]


def test_generation_cap_follows_the_memory_it_rewrites() -> None:
    llm = ScriptedLLM(lambda p: "")
    ceiling = 32 * 20 + 64  # the allowance of a full memory: the cap of MEMORY_DECODING 1
    floor = 16 * 20 + 32  # a full memory of short sentences
    assert generation_cap(llm, NO_MEMORY) == generation_cap(llm, "  ") == floor
    short = "Ann likes tea. " * 10  # 30 words: below the floor
    assert generation_cap(llm, short) == floor
    long = "Ann likes green tea with milk. " * 30  # 180 words
    assert generation_cap(llm, long) == 180 + 20 * 10 + 32
    assert generation_cap(llm, long * 3) == ceiling
    assert generation_cap(llm, NO_MEMORY, max_sentences=3) == 20 * 3 + 32  # room for 3 new sentences
    with pytest.raises(ValidationError, match="max_sentences"):
        generation_cap(llm, NO_MEMORY, max_sentences=0)


def test_a_loop_stops_at_the_cap_of_the_memory_being_rewritten() -> None:
    prev = "\n".join(f"Ann knows fact {i}." for i in range(10))  # 40 words
    loop = "Ann went to Oslo. " * 200
    llm = ScriptedLLM(lambda p: loop)
    upd = update_memory(llm, [{"speaker": "Ann", "text": "Oslo again!"}], prev)
    assert llm.calls[0]["max_tokens"] == generation_cap(llm, prev) == 16 * 20 + 32
    assert upd.completion_tokens == llm.calls[0]["max_tokens"]  # not the 704 tokens of a full allowance
    assert upd.memory.splitlines()[-1] == "Ann went to Oslo." and upd.repeated_sentences > 0
    update_memory(llm, [{"speaker": "Ann", "text": "Oslo again!"}], prev, max_tokens=50)
    assert llm.calls[1]["max_tokens"] == 50  # an explicit cap wins


def test_chunks_without_a_fixed_cap_fit_the_window_and_each_call_is_capped_by_its_memory() -> None:
    llm = ScriptedLLM(recursive_fake, context_window=1500)
    turns = [{"role": "user", "name": "Ann", "content": f"turn {i} " + "word " * 20} for i in range(60)]
    upd = update_memory(llm, turns, NO_MEMORY, max_sentences=5)
    assert upd.calls > 1
    for call in llm.calls:
        assert llm.count_tokens(call["prompt"]) + call["max_tokens"] <= llm.context_window
        memory = _section(call["prompt"], "Previous memory:", "\n\nNew session")
        assert call["max_tokens"] == generation_cap(llm, memory, 5)


def test_rsum_memory_passes_its_decoding(three_sessions: FakeStore) -> None:
    llm = ScriptedLLM(recursive_fake)
    RsumMemory(three_sessions, llm).update("u1", "s1")
    RsumMemory(three_sessions, llm, decoding=1).update("u1", "s2")
    assert [c["penalties"] for c in llm.calls] == [MEMORY_PENALTIES, None]
    assert [c["max_tokens"] for c in llm.calls] == [16 * 20 + 32, 32 * 20 + 64]


def test_dialogue_lines_copied_into_the_answer_are_removed() -> None:
    turns = [{"speaker": "Ann", "text": "I have a dog called Rex."}, {"speaker": "Bob", "text": "nice"}]
    for echo in (
        "Ann lives in Oslo.\nBob likes dogs.\nAnn: I have a dog called Rex.\nbob: nice",
        "Ann lives in Oslo. Bob likes dogs. Ann: I have a dog called Rex. Did I say? Bob: nice",
    ):
        upd = update_memory(ScriptedLLM(lambda p: echo), turns, NO_MEMORY)
        assert split_sentences(upd.memory) == ["Ann lives in Oslo.", "Bob likes dogs."]
        assert upd.echoed_lines == 2
    # "Ann's" or a name inside a sentence is not a dialogue marker
    upd = update_memory(ScriptedLLM(lambda p: "Ann's dog: Rex is old."), turns, NO_MEMORY)
    assert upd.memory == "Ann's dog: Rex is old." and upd.echoed_lines == 0


def test_empty_model_answer_keeps_the_previous_memory() -> None:
    llm = ScriptedLLM(lambda p: "   ")
    upd = update_memory(llm, [{"role": "user", "content": "hi"}], "Ann lives in Oslo.")
    assert upd.memory == "Ann lives in Oslo." and upd.calls == 1


def test_long_session_is_folded_in_chunks_that_fit_the_window() -> None:
    llm = ScriptedLLM(recursive_fake, context_window=700)
    turns = [{"role": "user", "name": "Ann", "content": f"turn {i} " + "word " * 20} for i in range(60)]
    upd = update_memory(llm, turns, NO_MEMORY, max_sentences=5, max_tokens=60)
    assert upd.calls > 1
    for call in llm.calls:
        assert llm.count_tokens(call["prompt"]) + call["max_tokens"] <= llm.context_window
    # every chunk's prompt carries the memory produced by the previous chunk
    for before, after in zip(llm.calls, llm.calls[1:]):
        produced = llm.produce(before["prompt"], before["max_tokens"])
        capped, _ = cap_sentences(produced, 5)
        assert _section(after["prompt"], "Previous memory:", "\n\nNew session") == capped
    assert len(split_sentences(upd.memory)) <= 5
    fed = " ".join(c["prompt"].split("Updated memory (")[0].rsplit("\n\nNew session", 1)[1] for c in llm.calls)
    assert all(f"turn {i} " in fed for i in range(60))  # every turn was read exactly in some chunk


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_max_sentences_is_a_validation_error(bad: Any) -> None:
    with pytest.raises(ValidationError) as e:
        update_memory(ScriptedLLM(lambda p: "x."), [{"role": "user", "content": "hi"}], max_sentences=bad)
    assert e.value.field == "max_sentences"


def test_empty_session_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as e:
        update_memory(ScriptedLLM(lambda p: "x."), [])
    assert e.value.field == "session"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abc XYZ.!?\n-1", min_size=0, max_size=40), max_size=30), st.integers(1, 8))
def test_cap_never_exceeds_the_limit(parts: list[str], n: int) -> None:
    capped, dropped = cap_sentences(" ".join(parts), n)
    assert len(split_sentences(capped)) <= n
    assert dropped >= 0


# --------------------------------------------------------------------------- the chain


def test_recursive_update_keeps_one_checkpoint_per_session(three_sessions: FakeStore) -> None:
    llm = ScriptedLLM(recursive_fake)
    rsum = RsumMemory(three_sessions, llm, max_sentences=20, clock=lambda: T0 + timedelta(days=30))
    cps = [rsum.update("u1", sid) for sid in ("s1", "s2", "s3")]
    assert [c.seq for c in cps] == [1, 2, 3]
    assert [c.session_id for c in three_sessions.checkpoints("u1")] == ["s1", "s2", "s3"]
    # M_1 from M_0 = "none"; M_i from M_{i-1}
    assert "Previous memory:\nnone" in llm.calls[0]["prompt"]
    assert f"Previous memory:\n{cps[0].memory}" in llm.calls[1]["prompt"]
    assert f"Previous memory:\n{cps[1].memory}" in llm.calls[2]["prompt"]
    assert cps[2].memory.splitlines() == ["Noted I have a dog called Rex.", "Noted I ran 5k today.", "Noted For a new job."]
    assert cps[2].session_time == T0 + timedelta(days=14, minutes=2)
    assert all(c["temperature"] == 0.0 for c in llm.calls)
    # users are isolated
    assert rsum.summary("u2") == "" and three_sessions.checkpoints("u2") == []


def test_summary_as_of_returns_the_checkpoint_valid_then(three_sessions: FakeStore) -> None:
    rsum = RsumMemory(three_sessions, ScriptedLLM(recursive_fake))
    for sid in ("s1", "s2", "s3"):
        rsum.update("u1", sid)
    cps = three_sessions.checkpoints("u1")
    assert rsum.summary("u1") == cps[2].memory
    assert rsum.summary("u1", as_of=T0 - timedelta(days=1)) == ""
    assert rsum.summary("u1", as_of=T0 + timedelta(days=3)) == cps[0].memory
    assert rsum.summary("u1", as_of="2024-01-10") == cps[1].memory
    assert rsum.checkpoint("u1", as_of=T0 + timedelta(days=14, minutes=2)).session_id == "s3"
    with pytest.raises(ValidationError) as e:
        rsum.summary("u1", as_of="last tuesday")
    assert e.value.field == "as_of"


def test_a_summary_as_of_a_time_holds_no_later_session(three_sessions: FakeStore) -> None:
    """The sessions ended out of time order (an old conversation imported last): s3's summary was written
    from s1's and s2's and holds their news, so it is valid at no time before s2 happened, however early
    its own session was.  ``summary(as_of=s3's time)`` returned it, 2024 news in a 2023 summary."""
    rsum = RsumMemory(three_sessions, ScriptedLLM(recursive_fake))
    times = {s: max(m.timestamp for m in three_sessions.messages("u1", session_id=s)) for s in ("s1", "s2", "s3")}
    for sid in ("s2", "s3", "s1"):  # s1 happened first and is ended last
        rsum.update("u1", sid)
    assert [c.session_id for c in three_sessions.checkpoints("u1")] == ["s2", "s3", "s1"]
    assert rsum.summary("u1", as_of=times["s1"]) == ""  # s1's summary holds s2 and s3
    assert rsum.checkpoint("u1", as_of=times["s2"]).session_id == "s2"
    assert rsum.checkpoint("u1", as_of=times["s3"]).session_id == "s1"  # every session happened by then


def test_updating_a_checkpointed_session_again_rebuilds_from_it(three_sessions: FakeStore) -> None:
    llm = ScriptedLLM(recursive_fake)
    rsum = RsumMemory(three_sessions, llm)
    for sid in ("s1", "s2", "s3"):
        rsum.update("u1", sid)
    # a late turn arrives in s2, then end_session(s2) is retried
    three_sessions.add_session("u1", "s2", ["I ran a marathon."], T0 + timedelta(days=8))
    cp = rsum.update("u1", "s2")
    chain = three_sessions.checkpoints("u1")
    assert [c.session_id for c in chain] == ["s1", "s2", "s3"] and [c.seq for c in chain] == [1, 2, 3]
    assert cp is not None and cp.session_id == "s2" and "marathon" in cp.memory
    assert "marathon" in chain[2].memory  # the later memory was rebuilt on top of it


def test_replay_after_forgetting_a_session_removes_it_from_every_memory(three_sessions: FakeStore) -> None:
    llm = ScriptedLLM(recursive_fake)
    rsum = RsumMemory(three_sessions, llm)
    for sid in ("s1", "s2", "s3"):
        rsum.update("u1", sid)
    assert "5k" in rsum.summary("u1")
    three_sessions.delete_session("u1", "s2")
    before = len(llm.calls)
    new = rsum.replay("u1")
    assert [c.session_id for c in new] == ["s3"]
    chain = three_sessions.checkpoints("u1")
    assert [(c.seq, c.session_id) for c in chain] == [(1, "s1"), (2, "s3")]
    assert all("5k" not in c.memory for c in chain)
    assert "Rex" in rsum.summary("u1") and "new job" in rsum.summary("u1")
    assert len(llm.calls) == before + 1  # only s3 was re-summarised
    assert rsum.replay("u1") == []  # nothing left to do
    assert len(llm.calls) == before + 1


def test_replay_that_fails_midway_leaves_the_old_chain(three_sessions: FakeStore) -> None:
    state = {"fail": False}

    def respond(prompt: str) -> str:
        if state["fail"] and "new job" not in prompt:
            raise RuntimeError("model went away")
        return recursive_fake(prompt)

    rsum = RsumMemory(three_sessions, ScriptedLLM(respond))
    for sid in ("s1", "s2", "s3"):
        rsum.update("u1", sid)
    old = three_sessions.checkpoints("u1")
    state["fail"] = True
    with pytest.raises(RuntimeError):
        rsum.replay("u1", from_seq=1)
    assert three_sessions.checkpoints("u1") == old


def test_replay_arguments_are_validated(three_sessions: FakeStore) -> None:
    rsum = RsumMemory(three_sessions, ScriptedLLM(recursive_fake))
    rsum.update("u1", "s1")
    with pytest.raises(ValidationError) as e:
        rsum.replay("u1", from_session="nope")
    assert e.value.field == "from_session"
    with pytest.raises(ValidationError):
        rsum.replay("u1", from_session="s1", from_seq=1)
    assert rsum.replay("u1", from_seq=5) == []


def test_session_without_messages_writes_no_checkpoint(three_sessions: FakeStore) -> None:
    rsum = RsumMemory(three_sessions, ScriptedLLM(recursive_fake))
    assert rsum.update("u1", "never-happened") is None
    assert three_sessions.checkpoints("u1") == []
    with pytest.raises(ValidationError) as e:
        rsum.update("", "s1")
    assert e.value.field == "user_id"


def test_reply_uses_the_latest_memory_at_temperature_zero(three_sessions: FakeStore) -> None:
    llm = ScriptedLLM(recursive_fake)
    rsum = RsumMemory(three_sessions, llm)
    for sid in ("s1", "s2"):
        rsum.update("u1", sid)
    llm.respond = lambda p: "You live in Oslo and run a lot."
    res = rsum.reply("u1", [{"role": "user", "content": "What do you remember about me?"}], speaker="Bob")
    assert res.text == "You live in Oslo and run a lot."
    call = llm.calls[-1]
    assert call["temperature"] == 0.0 and call["purpose"] == "rsum_reply"
    assert "Noted I ran 5k today." in call["prompt"] and "What do you remember about me?" in call["prompt"]
    # as_of picks the older memory
    rsum.reply("u1", [{"role": "user", "content": "Hi"}], as_of=T0 + timedelta(days=1))
    assert "5k" not in llm.calls[-1]["prompt"] and "Rex" in llm.calls[-1]["prompt"]


def test_generate_reply_rejects_an_empty_context() -> None:
    with pytest.raises(ValidationError) as e:
        generate_reply(ScriptedLLM(lambda p: "x"), [], "memory")
    assert e.value.field == "context"


def test_split_sentences_handles_bullets_numbers_and_abbreviations() -> None:
    text = "1. Ann met Dr. Smith in the U.S. in May. She paid 3.5 dollars!\n- Bob is J. R. R. Tolkien's fan?\n\n"
    assert split_sentences(text) == [
        "Ann met Dr. Smith in the U.S. in May.",
        "She paid 3.5 dollars!",
        "Bob is J. R. R. Tolkien's fan?",
    ]
    assert re.sub(r"\s", "", cap_sentences(text, 1)[0]) == "AnnmetDr.SmithintheU.S.inMay."


def test_replay_when_only_the_messages_of_a_session_are_gone(three_sessions: FakeStore) -> None:
    rsum = RsumMemory(three_sessions, ScriptedLLM(recursive_fake))
    for sid in ("s1", "s2", "s3"):
        rsum.update("u1", sid)
    three_sessions._messages["u1"] = [m for m in three_sessions._messages["u1"] if m.session_id != "s1"]
    new = rsum.replay("u1")
    assert [(c.seq, c.session_id) for c in new] == [(1, "s2"), (2, "s3")]
    assert "Rex" not in rsum.summary("u1") and three_sessions.checkpoints("u1") == new


# --------------------------------------------------------------------------- the real store


def test_rsum_over_the_sqlite_store_with_forget_and_replay(tmp_path: Any) -> None:
    from chronomem.store import open_store

    src = FakeStore()  # only to build the messages
    src.add_session("u1", "s1", ["I live in Oslo.", "Nice!", "I have a dog called Rex."], T0)
    src.add_session("u1", "s2", ["I started running.", "Good for you.", "I ran 5k today."], T0 + timedelta(days=7))
    src.add_session("u1", "s3", ["I moved to Bergen.", "Why?", "For a new job."], T0 + timedelta(days=14))
    store = open_store(tmp_path / "rsum.db")
    try:
        for sid in ("s1", "s2", "s3"):
            turns = src.messages("u1", session_id=sid)
            store.ensure_session("u1", sid, started_at=turns[0].timestamp)
            assert len(store.add_messages("u1", turns)) == 3
        llm = ScriptedLLM(recursive_fake)
        rsum = RsumMemory(store, llm)
        for sid in ("s1", "s2", "s3"):
            rsum.update("u1", sid)
        chain = store.checkpoints("u1")
        assert [(c.seq, c.session_id) for c in chain] == [(1, "s1"), (2, "s2"), (3, "s3")]
        assert chain[2].session_time == T0 + timedelta(days=14, minutes=2)
        assert rsum.summary("u1", as_of=T0 + timedelta(days=8)) == chain[1].memory
        store.delete_session("u1", "s2")  # what Memory.forget(session_id=...) does
        assert [c.seq for c in store.checkpoints("u1")] == [1, 3]
        new = rsum.replay("u1")
        assert [(c.seq, c.session_id) for c in new] == [(2, "s3")]
        assert [c.session_id for c in store.checkpoints("u1")] == ["s1", "s3"]
        assert "5k" not in rsum.summary("u1") and "new job" in rsum.summary("u1")
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


# --------------------------------------------------------------------------- the real local model


@pytest.mark.model
def test_local_model_folds_two_sessions_into_a_capped_memory() -> None:
    """One short recursion with the embedded Qwen2.5-Coder-1.5B (about a minute on 2 cores)."""
    from chronomem.providers import make_llm

    llm = make_llm("local", cache=False)
    s1 = [
        {"speaker": "Maya", "text": "I just moved to Porto for a job as a nurse."},
        {"speaker": "Leo", "text": "Congrats! Do you have pets?"},
        {"speaker": "Maya", "text": "Yes, a cat called Pixel."},
    ]
    s2 = [
        {"speaker": "Leo", "text": "How is Pixel?"},
        {"speaker": "Maya", "text": "Great. I also started learning the cello last week."},
    ]
    m1 = update_memory(llm, s1, NO_MEMORY, max_sentences=4, session_time=T0)
    m2 = update_memory(llm, s2, m1.memory, max_sentences=4, session_time=T0 + timedelta(days=7))
    for upd in (m1, m2):
        assert upd.calls == 1 and upd.memory.strip() and upd.memory != NO_MEMORY
        assert len(split_sentences(upd.memory)) <= 4
    text = m2.memory.lower()
    # What the 1.5B model does every time is structural (one call, capped, no dialogue lines):
    # its content is unreliable — with one thread it rewrote M_2 about the wrong speaker and
    # dropped the cello (see BENCHMARKS.md "Rsum (MSC)") — so only require that the memory
    # still speaks about the conversation rather than "none" or an empty answer.
    assert any(w in text for w in ("porto", "nurse", "pixel", "cello", "maya"))
