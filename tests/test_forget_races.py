"""A forget that lands while another call of the same user waits on a model stays done.

Extraction, search and the session summary each call a model between reading the user's data and
writing what they made of it; a ``forget`` (another request, another worker) can land in between.
Each test double here runs that forget from inside the model call, deterministically, and checks
that nothing of the forgotten data is written back: no fact, no vector, no checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from test_extract_pipeline import ScriptedLLM, conv
from test_memory_sessions import SessionLLM

from chronomem import Memory
from chronomem.providers.base import ChatResult


class Interrupted:
    """Runs ``hook`` once, at the first model call that ``when`` accepts."""

    hook: Callable[[], Any] | None = None

    def interrupt(self, when: bool) -> None:
        if when and self.hook is not None:
            hook, self.hook = self.hook, None
            hook()


class ExtractingLLM(ScriptedLLM, Interrupted):
    def chat(self, messages: list[dict[str, str]], **kw: Any) -> ChatResult:
        self.interrupt(True)
        return super().chat(messages, **kw)


class SummarisingLLM(SessionLLM, Interrupted):
    def chat(self, messages: list[dict[str, str]], *, purpose: str = "", **kw: Any) -> ChatResult:
        self.interrupt(purpose == "rsum")
        return super().chat(messages, purpose=purpose, **kw)


class Embedder(Interrupted):
    name, dim = "toy", 4

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.interrupt(any("Porto" in t for t in texts))
        return [[1.0, float(len(t) % 3), 0.5, 0.1] for t in texts]


def test_extraction_writes_nothing_of_a_session_forgotten_while_the_model_read_it() -> None:
    llm = ExtractingLLM()
    with Memory(":memory:", llm=llm, embedder=False) as mem:
        mem.add(conv("My dog Pixel is the best."), user_id="u1", session_id="s0")
        llm.hook = lambda: mem.forget(user_id="u1", session_id="s1")
        res = mem.add(conv("I live in Berlin and work at Acme.", prefix="b"), user_id="u1", session_id="s1")
        assert res.added == [] and "forgotten while the model read them" in res.warnings[-1]
        assert [(f.object, f.session_id) for f in mem.history(user_id="u1")] == [("Pixel", "s0")]
        assert {e.name for e in mem.entities(user_id="u1")} == {"Maya", "Pixel"}
        assert [m.session_id for m in mem.messages(user_id="u1")] == ["s0"]


def test_a_search_stores_no_vector_of_a_fact_forgotten_while_it_was_embedded() -> None:
    emb = Embedder()
    with Memory(":memory:", llm=False, embedder=emb) as mem:
        rep = mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        emb.hook = lambda: mem.forget(user_id="u1", fact_id=rep.added[0].id)
        mem.search("Where does Maya live?", user_id="u1")
        assert mem.store.count_facts("u1") == 0
        assert mem.store.vector_ids("u1", "fact", emb.name) == set()
        assert mem.store.vector_ids("u1", "entity", emb.name) == set()


def test_the_summary_of_a_session_forgotten_while_it_was_written_is_not_stored() -> None:
    llm = SummarisingLLM()
    with Memory(":memory:", llm=llm, embedder=False) as mem:
        mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        llm.hook = lambda: mem.forget(user_id="u1", session_id="s1")
        end = mem.end_session(user_id="u1", session_id="s1")
        assert end.checkpoint is None and mem.store.checkpoints("u1") == []
        assert mem.summary(user_id="u1") == "" and mem.sessions(user_id="u1") == []
