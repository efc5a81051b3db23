"""Forgetting a session takes back the words a surviving fact got from it, and what was made of them.

A fact said in two sessions stays when one of them is forgotten, as the other told it.  Its words
(``text``) came with its first statement: when that statement's turns are forgotten the words go,
and so do the copies made of them — the fact's vector and the job results that quote it; the other
statement's words (``other_words``) take their place.  Found by
an audit: the forgotten sentence stayed readable, searchable, embedded and in ``GET /v1/jobs/{id}``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

import pytest
from test_extract_pipeline import SCRIPT, conv
from test_memory_sessions import SessionLLM

from chronomem import Fact, Intent, Memory, Origin
from chronomem.limits import MAX_OTHER_WORDS
from chronomem.memo import clear_text_memos
from chronomem.registry import _normalize_relation
from chronomem.temporal import keep_words, unsay_words

MARK = "Zyxwqmarker"
SAID = f"I live in Berlin near the {MARK} clinic."


class HashEmbedder:
    """Deterministic vectors from a hash of the text (what was embedded is what can be checked)."""

    name, dim = "hash-8", 8

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            v = [b / 255 + 0.01 for b in hashlib.sha256(t.encode()).digest()[:8]]
            n = sum(x * x for x in v) ** 0.5
            out.append([x / n for x in v])
        return out


@pytest.fixture(autouse=True)
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SCRIPT, SAID, [("lives_in", "Berlin", "", False, "certain")])
    monkeypatch.setitem(SCRIPT, "I live in Berlin.", [("lives_in", "Berlin", "", False, "certain")])


def _told_twice(mem: Memory) -> None:
    mem.add(conv(SAID, ts="2023-01-01T10:00:00Z"), user_id="u1", session_id="s1")
    mem.add(conv("I live in Berlin.", prefix="b", ts="2023-02-01T10:00:00Z"), user_id="u1", session_id="s2")
    (f,) = mem.history(user_id="u1")
    assert MARK in f.text and len(f.source_ids) == 2


def test_the_words_of_a_forgotten_first_statement_go_and_the_second_statements_stay(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        _told_twice(mem)
        (before,) = mem.history(user_id="u1")
        assert before.other_words == [(["b0"], "Maya live in Berlin.")]  # s2's words, kept beside s1's
        mem.forget(user_id="u1", session_id="s1")
        (f,) = mem.history(user_id="u1")
        assert f.object == "Berlin" and f.source_ids == ["b0"]
        assert f.text == "Maya live in Berlin." and f.text_from == ["b0"] and f.other_words == []
        assert mem.search("clinic", user_id="u1").facts == []
        assert MARK not in str(mem.export(user_id="u1"))
    assert not any(MARK.lower().encode() in p.read_bytes().lower() for p in tmp_path.glob("m.db*"))


def test_words_a_later_statement_gave_stay_when_the_first_is_forgotten(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        mem.add([{"id": "h0", "speaker": "Maya", "text": "Hello.", "timestamp": "2022-12-01T10:00:00Z"}],
                user_id="u1", session_id="s0")
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Berlin", "valid_from": "2020-01-01",
                        "source_ids": ["h0"]}], user_id="u1", session_id="s0")  # said without words
        mem.add(conv(SAID, ts="2023-02-01T10:00:00Z"), user_id="u1", session_id="s1")  # gives it words
        mem.forget(user_id="u1", session_id="s0")
        (f,) = mem.history(user_id="u1")
        assert MARK in f.text and f.text_from == ["t0"]  # s1 said them, and s1 is kept


def test_the_vector_of_the_forgotten_words_goes_and_is_made_again(tmp_path: Path) -> None:
    emb = HashEmbedder()
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=emb) as mem:  # type: ignore[arg-type]
        _told_twice(mem)
        mem.search("Where does Maya live?", user_id="u1")
        (f,) = mem.history(user_id="u1")
        assert mem.store.get_vectors("u1", "fact", [f.id], emb.name)[f.id] == pytest.approx(emb.embed([f.text])[0])
        mem.forget(user_id="u1", session_id="s1")
        assert mem.store.get_vectors("u1", "fact", [f.id], emb.name) == {}
        mem.search("Where does Maya live?", user_id="u1")  # embedded again, from what it says now
        (now,) = mem.history(user_id="u1")
        assert mem.store.get_vectors("u1", "fact", [f.id], emb.name)[f.id] == pytest.approx(emb.embed([now.render()])[0])


def test_job_results_quoting_the_forgotten_words_are_dropped(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        mem.wait(mem.submit_messages(conv(SAID, ts="2023-01-01T10:00:00Z"), user_id="u1", session_id="s1"))
        kept = mem.wait(mem.submit_messages(conv("I live in Berlin.", prefix="b", ts="2023-02-01T10:00:00Z"),
                                            user_id="u1", session_id="s2"))
        assert MARK in str(kept.result)  # the reinforced fact, as it read then
        mem.forget(user_id="u1", session_id="s1")
        job = mem.job(kept.id)
        assert job.status == kept.status and MARK not in str(job.to_dict())


def test_job_results_quoting_a_forgotten_statements_other_words_are_dropped(tmp_path: Path) -> None:
    """s2's words are kept beside s1's (``other_words``) and quoted by s3's job, which reinforced the fact
    later: forgetting s2 takes them from the fact and from that job's result."""
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        for i, (text, sid) in enumerate((("I live in Berlin.", "s1"), (SAID, "s2"), ("I live in Berlin.", "s3"))):
            last = mem.wait(mem.submit_messages(conv(text, prefix=f"p{i}", ts=f"2023-0{i + 1}-01T10:00:00Z"),
                                                user_id="u1", session_id=sid))
        assert MARK in str(last.result)  # s3's job quotes the fact with every statement's words
        mem.forget(user_id="u1", session_id="s2")
        (f,) = mem.history(user_id="u1")
        assert MARK not in str(f.to_dict()) and len(f.source_ids) == 2
        assert MARK not in str(mem.job(last.id).to_dict())
    assert not any(MARK.lower().encode() in p.read_bytes().lower() for p in tmp_path.glob("m.db*"))


def test_relation_names_leave_no_trace_in_the_memos(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=False, llm=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": f"{MARK}_likes", "object": "tea"}], user_id="u1")
        assert _normalize_relation.cache_info().currsize > 0  # type: ignore[attr-defined]
        mem.forget(user_id="u1", everything=True)
        assert _normalize_relation.cache_info().currsize == 0  # type: ignore[attr-defined]
    assert clear_text_memos() > 0


def test_keep_words_merges_the_same_words_skips_blank_ones_and_keeps_the_newest() -> None:
    words = keep_words([], (["m0"], "Maya lives in Berlin."), (["m1"], "  "), (["m2"], "Maya lives in Berlin."))
    assert words == [(["m0", "m2"], "Maya lives in Berlin.")]
    many = keep_words(words, *[([f"n{i}"], f"said {i}") for i in range(MAX_OTHER_WORDS + 1)])
    assert len(many) == MAX_OTHER_WORDS and many[0] == (["n1"], "said 1") and many[-1] == (["n8"], "said 8")


def test_unsay_words_drops_what_only_forgotten_turns_said_and_promotes_the_oldest_left() -> None:
    f = Fact(id="f", user_id="u", subject="Maya", relation="lives_in", object="Berlin", valid_from=None,
             valid_to=None, confidence=1.0, intent=Intent.FACT, origin=Origin.STATED,
             recorded_at=datetime(2024, 1, 1, tzinfo=timezone.utc), text="",
             other_words=[(["a"], "A said"), (["b", "c"], "B and C said"), ([], "given by hand")])
    assert unsay_words(f, {"a", "b"}) is True
    assert (f.text, f.text_from, f.other_words) == ("B and C said", ["c"], [([], "given by hand")])
    assert unsay_words(f, {"zzz"}) is False  # nothing it holds was said there
