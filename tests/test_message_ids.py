"""Default message ids are a content hash (session, speaker, text, timestamp, occurrence), so posting
the same conversation again stores nothing new and calls no model; a caller's id still wins."""

from __future__ import annotations

from typing import Any

from test_memory_sessions import SessionLLM

from chronomem import Memory
from chronomem.extract.pipeline import content_message_id
from chronomem.timeutil import parse_time

CONV: list[dict[str, Any]] = [
    {"speaker": "Maya", "text": "I live in Berlin and work at Acme.", "timestamp": "2023-01-10T10:00:00Z"},
    {"speaker": "Tom", "text": "Nice!", "timestamp": "2023-01-10T10:01:00Z"},
    {"speaker": "Maya", "text": "My dog Pixel is the best.", "timestamp": "2023-01-10T10:02:00Z"},
]


def _mem(tmp_path, **kw: Any) -> Memory:
    return Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False, **kw)


def test_reposting_a_conversation_is_a_no_op(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        first = mem.add(CONV, user_id="u1", session_id="s1")
        assert first.messages_stored == 3 and first.facts_added == 3
        calls, facts = len(mem.llm.calls), mem.history(user_id="u1")  # type: ignore[attr-defined]
        again = mem.add([dict(m) for m in CONV], user_id="u1", session_id="s1")
        assert again.messages_stored == 0 and again.messages_skipped == 3 and again.chunks == 0
        assert len(mem.llm.calls) == calls  # type: ignore[attr-defined]  # 0 model calls
        assert mem.history(user_id="u1") == facts
        # turn by turn, the same turns are the same turns
        for m in CONV:
            assert mem.add([m], user_id="u1", session_id="s1").messages_stored == 0
        assert len(mem.store.messages("u1")) == 3 and len(mem.llm.calls) == calls  # type: ignore[attr-defined]


def test_reposting_into_a_buffered_session_is_a_no_op(tmp_path) -> None:
    with _mem(tmp_path, buffer=True) as mem:
        assert mem.add(CONV, user_id="u1", session_id="s1").messages_stored == 3
        assert mem.add(CONV, user_id="u1", session_id="s1").messages_stored == 0  # still in the buffer
        mem.end_session(user_id="u1", session_id="s1")
        calls = len(mem.llm.calls)  # type: ignore[attr-defined]
        again = mem.add(CONV, user_id="u1", session_id="s1")  # after the flush: the store has them
        assert again.messages_stored == 0 and again.messages_skipped == 3
        end = mem.end_session(user_id="u1", session_id="s1")
        assert end.stored == [] and len(mem.store.messages("u1")) == 3
        assert mem.store.messages("u1", pending_only=True) == []
        assert len([c for c in mem.llm.calls[calls:] if "Turns:" in c[-1]["content"]]) == 0  # type: ignore[attr-defined]


def test_what_makes_turns_distinct(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        # the same words in another session, or by another speaker, or at another time: another turn
        mem.add(CONV[:1], user_id="u1", session_id="s1")
        assert mem.add(CONV[:1], user_id="u1", session_id="s2").messages_stored == 1
        assert mem.add([{**CONV[0], "speaker": "Tom"}], user_id="u1", session_id="s1").messages_stored == 1
        assert mem.add([{**CONV[0], "timestamp": "2023-01-11T10:00:00Z"}], user_id="u1",
                       session_id="s1").messages_stored == 1
        # a repeated turn in one call (same speaker, text and time) is kept twice
        ok = {"speaker": "Tom", "text": "ok", "timestamp": "2023-01-10T12:00:00Z"}
        assert mem.add([ok, ok], user_id="u1", session_id="s3").messages_stored == 2
        # without a timestamp a turn is told apart by its arrival: two "ok"s sent separately stay two
        assert mem.add("ok", user_id="u1", session_id="s4").messages_stored == 1
        assert mem.add("ok", user_id="u1", session_id="s4").messages_stored == 1
        assert len(mem.store.messages("u1", session_id="s4")) == 2
        # the hash is stable and spelled out
        ts = parse_time("2023-01-10T10:00:00Z", "t")
        stored = mem.store.messages("u1", session_id="s2")[0]
        assert stored.id == content_message_id("s2", "Maya", CONV[0]["text"], ts, 0)
        assert content_message_id("s2", "Maya", CONV[0]["text"], parse_time("2023-01-10T11:00:00+01:00", "t")) \
            == stored.id  # the same instant in another zone


def test_caller_ids_win(tmp_path) -> None:
    with _mem(tmp_path) as mem:
        mem.add([{**m, "id": f"D1:{i}"} for i, m in enumerate(CONV)], user_id="u1", session_id="s1")
        assert [m.id for m in mem.store.messages("u1")] == ["D1:0", "D1:1", "D1:2"]
        # the caller's ids decide: the same content under new ids is new
        res = mem.add([{**m, "id": f"X{i}"} for i, m in enumerate(CONV)], user_id="u1", session_id="s1")
        assert res.messages_stored == 3
