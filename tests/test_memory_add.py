"""Memory.add / extract_pending: the facade over the write path (test-double LLM, no model)."""

from __future__ import annotations

import pytest
from test_extract_pipeline import ScriptedLLM, conv

from chronomem import Memory, ValidationError


def test_add_returns_what_changed_and_history_shows_evolution() -> None:
    llm = ScriptedLLM()
    with Memory(":memory:", llm=llm) as mem:
        r1 = mem.add(conv("I live in Berlin and work at Acme.", "My dog Pixel is the best.",
                          ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
        assert r1.session_id == "s1" and r1.facts_added == 3
        r2 = mem.add(conv("I moved to Munich last week.", "We had to rehome Pixel.", "I might move to Paris.",
                          prefix="b", ts="2023-06-10T10:00:00Z"), user_id="u1", session_id="s2")
        assert r2.facts_closed >= 2
        assert [f.object for f in mem.facts(user_id="u1", subject="Maya", relation="lives_in")] == ["Munich"]
        assert [f.object for f in mem.facts(user_id="u1", subject="Maya", relation="lives_in",
                                            as_of="2023-02-01")] == ["Berlin"]
        assert mem.facts(user_id="u1", subject="Maya", relation="has_pet") == []
        hedged = mem.facts(user_id="u1", subject="Maya", relation="lives_in", include_unstable=True)
        assert "Paris" in [f.object for f in hedged]
        calls = len(llm.calls)
        mem.add(conv("I live in Berlin and work at Acme.", "My dog Pixel is the best.",
                     ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
        assert len(llm.calls) == calls  # same ids: stored once, no model call


def test_add_validates_user() -> None:
    with Memory(":memory:", llm=ScriptedLLM()) as mem:
        with pytest.raises(ValidationError, match="user_id"):
            mem.add("hello", user_id=None)


def test_extract_pending_after_failure_retries_the_chunk() -> None:
    with Memory(":memory:", llm=ScriptedLLM(fail_on="I live in Berlin")) as mem:
        r = mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        assert not r.ok and mem.history(user_id="u1") == []
        assert len(mem.store.messages("u1")) == 1  # the turn is kept
        mem.use_models(llm=ScriptedLLM())
        r2 = mem.extract_pending(user_id="u1")
        assert r2.ok and r2.facts_added == 2


def test_add_refuses_nul_characters_and_writes_nothing() -> None:
    with Memory(":memory:", llm=ScriptedLLM()) as mem:
        with pytest.raises(ValidationError, match="NUL"):
            mem.add([{"speaker": "Maya", "text": "fine"}, {"speaker": "Maya", "text": "bad\x00byte"}],
                    user_id="u1")
        assert mem.store.messages("u1") == []


def test_time_words_of_a_turn_are_read_on_its_speakers_clock(tmp_path) -> None:
    from test_extract_pipeline import ScriptedLLM

    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        # Monday 1:00 in Tokyo is still Sunday in UTC: "last week" is the week that just ended there
        mem.add([{"id": "t1", "speaker": "Maya", "text": "I moved to Munich last week.",
                  "timestamp": "2023-01-02T01:00:00+09:00"}], user_id="u1", session_id="s1")
        [munich] = mem.facts(user_id="u1", subject="Maya")
        assert munich.valid_from.isoformat() == "2022-12-26T00:00:00+00:00"  # the week of 26 December there
        assert mem.messages(user_id="u1")[0].timestamp.isoformat() == "2023-01-02T01:00:00+09:00"


def test_usage_has_the_same_keys_whether_or_not_the_model_was_called(tmp_path) -> None:
    """A re-add made no call and returned ``usage == {}``: ``r.usage["calls"]`` raised a KeyError."""
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        turns = [{"speaker": "Maya", "text": "I live in Porto.", "id": "t1"}]
        first = mem.add(turns, user_id="u1", session_id="s1")
        again = mem.add(turns, user_id="u1", session_id="s1")
    assert set(again.usage) == set(first.usage) and again.usage["calls"] == 0
