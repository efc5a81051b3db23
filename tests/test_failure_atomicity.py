"""What a failure partway through an operation leaves behind (session 36's crash-safety audit).

Each test makes one step fail, or one racing call land, at the worst moment and checks that
nothing stored is lost, doubled or resurrected, and that the natural retry finishes the job.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from test_extract_pipeline import ScriptedLLM, conv
from test_memory_sessions import SessionLLM

from chronomem import Memory
from chronomem.errors import StoreError, ValidationError
from chronomem.extract.pipeline import FAILED
from chronomem.store.sqlite import sqlite3


class _FailingCommit:
    """The SQLite connection, except that COMMIT fails as on a full disk."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def test_a_commit_that_fails_is_a_store_error_and_writes_nothing(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.write_pipeline().add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1",
                                 extract=False)
        inner = mem.store.inner
        real = inner._db
        inner._db = _FailingCommit(real)
        try:
            res = mem.extract_pending(user_id="u1")  # the pipeline reports it; no raw driver error escapes
            assert res.failed_chunks and "could not commit" in res.failed_chunks[0].error
            with pytest.raises(StoreError, match="could not commit"):
                mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id="u1")
        finally:
            inner._db = real
        assert mem.facts(user_id="u1") == [] and not real.in_transaction
        assert [m.extracted for m in mem.messages(user_id="u1")] == [False]  # still pending: a retry works
        assert len(mem.extract_pending(user_id="u1").added) == 2


def test_a_failed_extraction_never_undoes_a_racing_success(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.write_pipeline().add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        [turn] = mem.messages(user_id="u1")
        # the loser of the race reports its failure last, as the pipeline marks one (FAILED, 2; the store
        # guarded -1 alone, so the turn was pending again and a retry reinforced its facts twice)
        mem.store.mark_extracted("u1", [turn.id], FAILED)
        assert mem.store.messages("u1", pending_only=True) == []
        assert mem.extract_pending(user_id="u1").added == []  # a retry reinforces nothing a second time
        assert [f.confirmations for f in mem.facts(user_id="u1")] == [[], []]  # said once each


def test_a_buffered_turn_id_reused_for_other_words_is_refused(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False, buffer=True) as mem:
        mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        for sid in ("s1", "s2"):  # the same session, or another one: the flush would drop the new words
            with pytest.raises(ValidationError, match="id of another turn"):
                mem.add(conv("My dog Pixel is the best."), user_id="u1", session_id=sid)
        assert mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1") \
            .messages_stored == 0  # sent again: a no-op
        mem.end_session(user_id="u1", session_id="s1")
        assert [m.text for m in mem.messages(user_id="u1")] == ["I live in Berlin and work at Acme."]


def test_a_forget_landing_during_a_flush_is_not_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False, buffer=True) as mem:
        mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        buf = mem._buffer
        real_flush = buf.flush

        def flush_with_a_racing_forget(user_id: str, session_id: str, write: Any) -> Any:
            def write_after_forget(batch: Any) -> Any:  # the flush took its batch; the forget lands now
                t = threading.Thread(target=lambda: mem.forget(user_id=user_id, session_id=session_id))
                t.start()
                t.join()
                return write(batch)
            return real_flush(user_id, session_id, write_after_forget)

        monkeypatch.setattr(buf, "flush", flush_with_a_racing_forget)
        res = mem.end_session(user_id="u1", session_id="s1")
        assert (res.flushed, res.checkpoint) == ([], None)
        assert mem.messages(user_id="u1") == [] and mem.facts(user_id="u1") == []
        assert mem.sessions(user_id="u1") == [] and mem.summary(user_id="u1") == ""


class KeepingLLM(SessionLLM):
    """A summariser that keeps the previous memory and adds the new session's lines."""

    def chat(self, messages: list[dict[str, str]], **kw: Any) -> Any:
        res = super().chat(messages, **kw)
        if kw.get("purpose") == "rsum":
            prompt = messages[-1]["content"]
            before = prompt.split("Previous memory:\n", 1)[1].split("\n\n", 1)[0] if "Previous memory:" in prompt \
                else ""
            res.text = " ".join(x for x in (before.strip(), res.text) if x and x != "none")
        return res


def test_summaries_stop_before_a_forgotten_session_until_they_are_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_path / "m.db", llm=KeepingLLM(), embedder=False) as mem:
        for sid, text, day in (("s1", "I live in Berlin and work at Acme.", "01"),
                               ("s2", "I moved to Munich last week.", "02")):
            mem.add(conv(text, prefix=sid, ts=f"2023-01-{day}T10:00:00Z"), user_id="u1", session_id=sid)
            mem.end_session(user_id="u1", session_id=sid, ended_at=f"2023-01-{day}T11:00:00Z")
        assert "Berlin" in mem.summary(user_id="u1")

        def model_times_out(*a: Any, **k: Any) -> Any:  # any exception, not only chronomem's
            raise TimeoutError("the summariser timed out")

        monkeypatch.setattr(type(mem.rsum), "replay", model_times_out)
        res = mem.forget(user_id="u1", session_id="s1", wait=True)  # the delete commits; the rewrite fails
        assert res.messages_deleted == 1 and "rewriting the later summaries" in res.warnings[0]
        assert "Berlin" not in mem.summary(user_id="u1")  # s2's memory still quotes s1: not read
        assert all("Berlin" not in c["memory"] for c in
                   _explorer_checkpoints(mem))
        monkeypatch.undo()
        mem.add(conv("My dog Pixel is the best.", prefix="s3", ts="2023-01-03T10:00:00Z"),
                user_id="u1", session_id="s3")
        mem.end_session(user_id="u1", session_id="s3", ended_at="2023-01-03T11:00:00Z")  # rewrites first
        chain = mem.store.checkpoints("u1")
        assert [c.seq for c in chain] == [1, 2] and [c.session_id for c in chain] == ["s2", "s3"]
        assert "Berlin" not in mem.summary(user_id="u1") and "Pixel" in mem.summary(user_id="u1")


def _explorer_checkpoints(mem: Memory) -> list[dict[str, Any]]:
    from fastapi.testclient import TestClient

    from chronomem.server import create_app

    with TestClient(create_app(mem)) as client:
        return client.get("/v1/users/u1/checkpoints").json()["items"]


def test_sending_the_same_turns_again_extracts_those_left_pending(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(fail_on="Pixel"), embedder=False) as mem:
        turns = conv("I live in Berlin and work at Acme.", "My dog Pixel is the best.")
        first = mem.add(turns, user_id="u1", session_id="s1")
        assert first.failed_chunks and {f.object for f in mem.facts(user_id="u1")} == set()
        mem.models.llm.fail_on = None  # the model is back: the natural retry is to send the same turns
        again = mem.add(turns, user_id="u1", session_id="s1")
        assert again.messages_stored == 0 and any("sent again" in w for w in again.warnings)
        assert {f.object for f in mem.facts(user_id="u1")} == {"Berlin", "Acme", "Pixel"}
        assert mem.add(turns, user_id="u1", session_id="s1").chunks == 0  # now all extracted: no model call


def test_an_idle_session_whose_extraction_failed_stays_open_for_the_next_sweep(tmp_path: Path) -> None:
    llm = SessionLLM(fail_on="Berlin")
    with Memory(tmp_path / "m.db", llm=llm, embedder=False) as mem:
        mem.write_pipeline().add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1",
                                 extract=False)
        sweep = mem.end_idle_sessions(now="2099-01-01", idle_seconds=60)
        assert sweep.ended == [] and "extraction failed" in sweep.failed[("u1", "s1")]
        assert [s.ended_at for s in mem.sessions(user_id="u1")] == [None]
        llm.fail_on = None
        sweep = mem.end_idle_sessions(now="2099-01-01", idle_seconds=60)
        assert sweep.ended == [("u1", "s1")] and sweep.failed == {}
        assert {f.object for f in mem.facts(user_id="u1")} == {"Berlin", "Acme"}


def test_an_idle_session_that_fails_twice_is_ended_and_costs_no_more_sweeps(tmp_path: Path) -> None:
    llm = SessionLLM(fail_on="Berlin")  # a turn the model never gets right
    with Memory(tmp_path / "m.db", llm=llm, embedder=False) as mem:
        mem.write_pipeline().add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1",
                                 extract=False)
        assert mem.end_idle_sessions(now="2099-01-01", idle_seconds=60).failed  # left open once
        assert mem.end_idle_sessions(now="2099-01-01", idle_seconds=60).ended == [("u1", "s1")]
        calls = len(llm.calls)
        assert mem.end_idle_sessions(now="2099-01-01", idle_seconds=60).ended == []  # nothing left to try
        assert len(llm.calls) == calls
        assert [m.extracted for m in mem.messages(user_id="u1")] == [False]  # extract_pending retries it


def test_an_export_is_one_snapshot_while_other_writers_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dump reads one snapshot on a connection of its own: another process's write between its entities
    and its facts neither waits for it nor shows in it (before: it waited for the dump's write lock), and
    a write through the same store from another thread goes on meanwhile too."""
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem, \
            Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as other:
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id="u1")
        inner = mem.store.inner
        real = inner.iter_user
        done: list[str] = []

        def write(m: Memory, user: str, thing: str) -> None:
            m.add_facts([{"subject": "Maya", "relation": "likes", "object": thing}], user_id=user)
            done.append(thing)

        def writers_between_entities_and_facts(user_id: str, *, batch: int = 1000) -> Any:
            for table, rows in real(user_id, batch=batch):
                yield table, rows
                if table == "entities":
                    for m, user, thing in ((other, "u1", "coffee"), (mem, "u3", "cocoa")):
                        t = threading.Thread(target=write, args=(m, user, thing))
                        t.start()
                        t.join(timeout=30)  # while the dump is open

        monkeypatch.setattr(inner, "iter_user", writers_between_entities_and_facts)
        data = mem.export(user_id="u1")
        monkeypatch.undo()
        assert done == ["coffee", "cocoa"]  # neither waited for the dump to end
        assert [r["object"] for r in data["tables"]["facts"]] == ["tea"]  # the dump's snapshot
        mem.import_(data, user_id="u2")  # a fact naming an entity the export lacks would be refused
        assert [f.object for f in mem.facts(user_id="u2")] == ["tea"]
        assert sorted(f.object for f in mem.facts(user_id="u1")) == ["coffee", "tea"]


def test_turns_of_racing_buffered_adds_are_numbered_in_arrival_order(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False, buffer=True) as mem:
        pipe = mem.write_pipeline()
        _, first = pipe.prepare(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1",
                                next_seq=0)
        _, second = pipe.prepare(conv("My dog Pixel is the best.", prefix="b"), user_id="u1", session_id="s1",
                                 next_seq=0)  # both counted the session before either was buffered
        mem._lifecycle().add([*first, *second])
        mem.end_session(user_id="u1", session_id="s1")
        assert [(m.seq, m.text) for m in mem.messages(user_id="u1", session_id="s1")] == [
            (0, "I live in Berlin and work at Acme."), (1, "My dog Pixel is the best.")]
