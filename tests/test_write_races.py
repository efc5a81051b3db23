"""Writes that race a call of the same user waiting on a model.

Extraction, search and the session summary each call a model between reading the user's data and
writing what they made of it.  A ``forget`` (another request, another worker) can land in between:
each test double here runs it from inside the model call, deterministically, and checks that nothing
of the forgotten data is written back (no fact, no vector, no checkpoint).  Two extractions of the
same turns can run at once (``add`` beside ``end_session``, a job run again after its lease ran
out): the later one must not write the facts a second time.
"""

from __future__ import annotations

import threading
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
        assert res.added == [] and "forgotten or extracted by another call" in res.warnings[-1]
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


class TwoAtOnceLLM(SessionLLM):
    """Holds each extraction call until a second one has arrived: two extractions of the same turns
    are in their model calls at the same time."""

    def __init__(self) -> None:
        super().__init__()
        self.both = threading.Barrier(2, timeout=10)

    def chat(self, messages: list[dict[str, str]], *, purpose: str = "", **kw: Any) -> ChatResult:
        if purpose == "extract":
            self.both.wait()
        return super().chat(messages, purpose=purpose, **kw)


def test_two_extractions_of_the_same_turns_write_their_facts_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "m.db", llm=TwoAtOnceLLM(), embedder=False) as mem:
        turns = conv("I live in Berlin and work at Acme.", "Nice!", "My dog Pixel is the best.")
        results: dict[str, Any] = {}

        def add() -> None:
            results["add"] = mem.add(turns, user_id="u1", session_id="s1")

        def end() -> None:
            while not mem.store.messages("u1", session_id="s1"):  # the add stored them and is extracting
                pass
            results["end"] = mem.end_session(user_id="u1", session_id="s1")

        threads = [threading.Thread(target=add), threading.Thread(target=end)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        written = [r.added + r.reinforced for r in (results["add"], results["end"].extraction)]
        assert sorted(len(w) for w in written) == [0, 3]  # one of the two wrote, the other stood down
        assert sorted((f.object, f.confidence) for f in mem.history(user_id="u1")) == [
            ("Acme", 0.9), ("Berlin", 0.9), ("Pixel", 0.9)]  # reinforced once: 0.945


def test_a_job_result_does_not_quote_a_fact_forgotten_while_the_job_ran(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from chronomem.jobs import JobStatus
    from chronomem.jobs.worker import JobRunner

    class NullQueue:  # the test runs the job itself
        def send(self, job: object) -> None:
            pass

        def close(self) -> None:
            pass

    llm = SummarisingLLM()
    with Memory(tmp_path / "m.db", llm=llm, embedder=False, buffer=True, queue=NullQueue()) as mem:
        mem.submit_messages(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        job = mem.submit_end_session(user_id="u1", session_id="s1")

        def forget_berlin() -> None:  # another request, while the job's summary is being written
            [berlin] = [f for f in mem.history(user_id="u1") if f.object == "Berlin"]
            mem.forget(user_id="u1", fact_id=berlin.id)

        llm.hook = forget_berlin
        JobRunner(mem.store.inner, lambda tenant: mem, name="w").run(job.id)  # type: ignore[attr-defined]
        done = mem.job(job.id)
        assert done.status is JobStatus.DONE and [f.object for f in mem.history(user_id="u1")] == ["Acme"]
        assert "Berlin" not in json.dumps(done.result)  # dropped, as forgetting drops results quoting it
