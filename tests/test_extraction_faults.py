"""The write path under a faulty or hostile model (issue #20 findings 2 and 3, and a crash window).

All through ``Memory.add`` with :class:`fake_openai.FakeModelServer` (no real model):

* a reply cut off mid-fact is never accepted silently: the chunk is retried as smaller chunks,
  and turns whose reply is cut off even alone are reported failed and left for re-extraction;
* a fact about someone the turns never mention ("Barack Obama lives_in Porto" from "I live in
  Porto") is dropped and reported; speakers, "my brother" and names said in the chunk are kept;
* the facts of a chunk and its turns' "extracted" mark commit together, so a crash between
  them cannot make a retry reinforce the same facts twice.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import FakeModelServer, Reply, extract, fact, turns_of

from chronomem import Config, Memory
from chronomem.extract.extractor import SUBJECT_NOT_GROUNDED, subject_grounded
from chronomem.extract.pipeline import EXTRACTED

U = "maya"
TURNS = [{"id": "t1", "speaker": "Maya", "text": "I live in Porto."},
         {"id": "t2", "speaker": "Maya", "text": "I work at Acme."},
         {"id": "t3", "speaker": "Maya", "text": "I like jazz."},
         {"id": "t4", "speaker": "Maya", "text": "I like tea."}]


def cut(body: dict[str, Any]) -> str:
    """The default reply, cut off in the middle of its last fact."""
    full = json.dumps({"facts": extract(body)})
    return full[: full.rindex('"relation"')]


def memory(server: FakeModelServer, extraction: str | None = None) -> Memory:
    config = Config(extraction=extraction) if extraction else None
    return Memory(":memory:", llm=server.spec, embedder=False, config=config)


def stored(mem: Memory) -> set[tuple[str, str, str]]:
    return {(f.subject, f.relation, f.object) for f in mem.history(user_id=U)}


ALL = {("Maya", "lives_in", "Porto"), ("Maya", "works_at", "Acme"), ("Maya", "likes", "jazz"),
       ("Maya", "likes", "tea")}


def test_a_cut_off_reply_is_retried_on_smaller_chunks_and_loses_no_fact(server: FakeModelServer) -> None:
    # the "model" runs out of tokens whenever it is asked about more than one turn
    server.inject = lambda body: Reply(cut(body), "length") if len(turns_of(body)) > 1 else None
    with memory(server) as mem:
        res = mem.add(TURNS, user_id=U, session_id="s1", timestamp="2024-01-01")
        assert stored(mem) == ALL
        assert not res.failed_chunks and any("cut off" in w for w in res.warnings)
        assert all(m.extracted for m in mem.store.messages(U))


def test_turns_whose_reply_is_always_cut_are_reported_and_left_for_later(server: FakeModelServer) -> None:
    server.inject = lambda body: Reply(cut(body), "length") if any("jazz" in t for _, _, t in turns_of(body)) else None
    with memory(server) as mem:
        res = mem.add(TURNS, user_id=U, session_id="s1", timestamp="2024-01-01")
        assert ("Maya", "likes", "jazz") not in stored(mem)
        assert [c.message_ids for c in res.failed_chunks] == [["t3"]]
        assert any("cut off even alone" in w for w in res.warnings)
        pending = {m.id for m in mem.store.messages(U) if not m.extracted}
        assert pending == {"t3"}  # never marked extracted silently
        server.inject = None  # the model behaves again: the pending turn is extracted
        mem.extract_pending(user_id=U)
        assert stored(mem) == ALL


def test_a_fact_about_someone_the_turns_never_mention_is_dropped_and_reported(server: FakeModelServer) -> None:
    hostile = json.dumps({"facts": [fact("Barack Obama", "lives_in", "Porto"), fact("I", "likes", "tea"),
                                    fact("my brother", "lives_in", "Oslo"), fact("Tom", "works_at", "Equinor"),
                                    fact("He", "likes", "chess")]})
    server.inject = lambda body: Reply(hostile) if body.get("response_format") else None
    with memory(server, extraction="v1") as mem:  # v1's subjects are free text; v3/v4 ground statements instead
        res = mem.add([{"speaker": "Maya", "text": "I live in Porto and I like tea. My brother Tom lives in Oslo, "
                                                   "he works at Equinor and likes chess."}],
                      user_id=U, session_id="s1", timestamp="2024-01-01")
        assert stored(mem) == {("Maya", "likes", "tea"), ("Maya's brother", "lives_in", "Oslo"),
                               ("Tom", "works_at", "Equinor")}
        dropped = [w for w in res.warnings if w.startswith(SUBJECT_NOT_GROUNDED)]
        assert any("Barack Obama" in w for w in dropped) and any("He likes chess" in w for w in dropped)


@pytest.mark.parametrize("raw, resolved, ok", [
    ("I", "Maya", True), ("you", "Sam", True), ("my son", "Maya's son", True), ("Sam", "Sam", True),
    ("Tom", "Tom", True), ("Al", "Al", True), ("the pottery class", "the pottery class", True),
    ("Barack Obama", "Barack Obama", False), ("Obama", "Obama", False), ("she", "she", False),
])
def test_subject_grounding(raw: str, resolved: str, ok: bool) -> None:
    words = {"maya", "sam", "tom", "al", "went", "to", "pottery", "class", "with", "i", "my", "son"}
    assert subject_grounded(raw, resolved, ["Maya", "Sam"], words) is ok


def test_facts_and_the_extracted_mark_commit_together(server: FakeModelServer) -> None:
    """A crash right after the facts were written used to leave the turns pending, and the
    retry reinforced every fact a second time (raised confidence, doubled provenance)."""
    with memory(server) as ref:
        ref.add(TURNS[:2], user_id=U, session_id="s1", timestamp="2024-01-01")
        expected = sorted((f.object, f.confidence, tuple(f.source_ids)) for f in ref.history(user_id=U))
    with memory(server) as mem:
        real = mem.store.mark_extracted

        def crash(user_id: str, ids: Any, state: int = 1) -> None:
            if state == EXTRACTED:
                raise SystemExit("killed between the facts and the mark")
            real(user_id, ids, state)

        mem.store.mark_extracted = crash  # type: ignore[method-assign]
        with pytest.raises(SystemExit):
            mem.add(TURNS[:2], user_id=U, session_id="s1", timestamp="2024-01-01")
        mem.store.mark_extracted = real  # type: ignore[method-assign]
        assert mem.history(user_id=U) == []  # rolled back with the mark
        mem.extract_pending(user_id=U)
        assert sorted((f.object, f.confidence, tuple(f.source_ids)) for f in mem.history(user_id=U)) == expected
