"""Memory's session lifecycle: end_session → Rsum checkpoint, summary, context, answer methods,
forgetting a session replays later summaries.  A test-double LLM, no model."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from test_extract_pipeline import ScriptedLLM, conv

from chronomem import Memory, NotFoundError, ValidationError
from chronomem.providers.base import CallUsage, ChatResult


class SessionLLM(ScriptedLLM):
    """Extraction from the script; Rsum writes one sentence per speaker line it is shown;
    answers echo the first context line that mentions a word of the question."""

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        usage = CallUsage(prompt_tokens=50, completion_tokens=10, purpose=purpose)
        text = "\n".join(m["content"] for m in messages)
        if purpose == "extract":
            return super().chat(messages, schema=schema, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, purpose=purpose)
        self.calls.append(messages)
        if purpose == "rsum":
            said = [line.split(":", 1)[1].strip() for line in text.splitlines()
                    if line.startswith(("Maya:", "Tom:")) and "." in line]
            return ChatResult(text=" ".join(f"Maya said: {s}" for s in said) or "none", usage=usage)
        if purpose in ("answer", "rsum_reply"):
            return ChatResult(text="Munich" if "Munich" in text else "Not mentioned", usage=usage)
        if purpose == "compact":
            return ChatResult(text="Earlier they talked about moving.", usage=usage)
        raise AssertionError(f"unexpected purpose {purpose}")


@pytest.fixture
def mem(tmp_path) -> Memory:
    m = Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False)
    yield m
    m.close()


def two_sessions(mem: Memory) -> None:
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
    mem.end_session(user_id="u1", session_id="s1", ended_at="2023-01-10T11:00:00Z")
    mem.add(conv("I moved to Munich last week.", prefix="b", ts="2023-06-10T10:00:00Z"),
            user_id="u1", session_id="s2")
    mem.end_session(user_id="u1", session_id="s2", ended_at="2023-06-10T11:00:00Z")


def test_end_session_writes_a_checkpoint_per_session(mem: Memory) -> None:
    two_sessions(mem)
    cps = mem.store.checkpoints("u1")
    assert [c.session_id for c in cps] == ["s1", "s2"]
    assert "Munich" in mem.summary(user_id="u1")
    assert "Munich" not in mem.summary(user_id="u1", as_of="2023-02-01")
    assert mem.summary(user_id="u1", as_of="2022-01-01") == ""
    assert [s.ended_at is not None for s in mem.store.sessions("u1")] == [True, True]


def test_end_session_is_repeatable(mem: Memory) -> None:
    two_sessions(mem)
    mem.end_session(user_id="u1", session_id="s2")
    assert [c.session_id for c in mem.store.checkpoints("u1")] == ["s1", "s2"]


def test_ending_a_session_never_seen_or_forgotten_writes_nothing(mem: Memory) -> None:
    end = mem.end_session(user_id="u1", session_id="never")
    assert end.stored == [] and end.checkpoint is None and mem.sessions(user_id="u1") == []
    two_sessions(mem)
    mem.forget(user_id="u1", session_id="s1")
    mem.end_session(user_id="u1", session_id="s1")  # a client ends what it just forgot
    assert [s.id for s in mem.sessions(user_id="u1")] == ["s2"]


def test_a_session_cannot_end_before_its_first_turn(mem: Memory) -> None:
    """``ended_at="1990-01-01"`` for a session said in 2023 was stored (a typo of a year); it is refused
    before anything is flushed, extracted or summarised, and the session stays open."""
    mem.add(conv("I live in Berlin.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
    with pytest.raises(ValidationError, match="before the session's first turn") as e:
        mem.end_session(user_id="u1", session_id="s1", ended_at="1990-01-01")
    assert e.value.field == "ended_at"
    assert mem.store.checkpoints("u1") == [] and [s.ended_at for s in mem.sessions(user_id="u1")] == [None]
    assert mem.end_session(user_id="u1", session_id="s1", ended_at="2023-01-10T10:00:00Z").ended  # at its turn


def test_end_session_needs_a_session(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="session_id"):
        mem.end_session(user_id="u1")


def test_answer_methods(mem: Memory) -> None:
    two_sessions(mem)
    assert mem.answer("Where does Maya live?", user_id="u1", method="real").text == "Munich"
    r = mem.answer("Where does Maya live?", user_id="u1", method="rsum")
    assert r.text == "Munich" and r.evidence == [] and "Munich" in r.context
    h = mem.answer("Where does Maya live?", user_id="u1")  # default: real+rsum
    assert h.method == "real+rsum" and "Summary of earlier conversations" in h.context and h.evidence
    with pytest.raises(ValidationError, match="method"):
        mem.answer("Where?", user_id="u1", method="magic")


def test_context_injects_the_summary_and_keeps_the_budget(mem: Memory) -> None:
    two_sessions(mem)
    chat = [{"role": "user", "content": f"old message number {i} " * 5} for i in range(30)]
    chat.append({"role": "user", "content": "What should I pack?"})
    out = mem.context(chat, user_id="u1", budget_tokens=120, strategy="sliding_window")
    assert out[0]["role"] == "system" and "Munich" in out[0]["content"]
    assert out[-1]["content"] == "What should I pack?"
    assert sum(len(m["content"].split()) for m in out) <= 120


def test_forgetting_a_session_replays_later_summaries(mem: Memory) -> None:
    from chronomem.jobs import JobStatus

    two_sessions(mem)
    res = mem.forget(user_id="u1", session_id="s1")  # the later summary is erased now, rewritten by a job
    assert res.summaries_pending == 1 and res.job_id is not None and res.warnings == []
    assert "Berlin" not in mem.summary(user_id="u1")
    assert mem.wait(res.job_id, timeout=60).status is JobStatus.DONE
    assert "Berlin" not in mem.summary(user_id="u1") and "Munich" in mem.summary(user_id="u1")
    assert [c.session_id for c in mem.store.checkpoints("u1")] == ["s2"]


class CarryLLM(SessionLLM):
    """Rsum as a real model writes it: each memory names every city its prompt (the memory so far
    and the new turns) names."""

    def chat(self, messages: list[dict[str, str]], *, purpose: str = "", **kw: Any) -> ChatResult:
        if purpose != "rsum":
            return super().chat(messages, purpose=purpose, **kw)
        text = "\n".join(m["content"] for m in messages)
        cities = [c for c in ("Berlin", "Munich") if c in text]
        return ChatResult(text="Maya mentioned " + ", ".join(cities) + ".", usage=CallUsage(purpose=purpose))


def test_forgetting_a_session_drops_job_results_quoting_later_summaries(tmp_path) -> None:
    from chronomem.jobs import JobStatus

    with Memory(tmp_path / "m.db", llm=CarryLLM(), embedder=False) as mem:
        mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
        mem.wait(mem.submit_end_session(user_id="u1", session_id="s1", ended_at="2023-01-10T11:00:00Z"))
        mem.add(conv("I moved to Munich last week.", prefix="b", ts="2023-06-10T10:00:00Z"),
                user_id="u1", session_id="s2")
        later = mem.wait(mem.submit_end_session(user_id="u1", session_id="s2", ended_at="2023-06-10T11:00:00Z"))
        assert later.result["summary"] == "Maya mentioned Berlin, Munich."
        res = mem.forget(user_id="u1", session_id="s1")
        assert mem.job(later.id).result is None  # dropped with the summary it quoted, before any rewrite
        assert mem.wait(res.job_id).status is JobStatus.DONE  # type: ignore[arg-type]
        assert mem.summary(user_id="u1") == "Maya mentioned Munich."
        rewrite, job = mem.jobs(user_id="u1")
        assert rewrite.id == res.job_id and rewrite.result == {"summaries_rewritten": 1}
        assert job.id == later.id and job.status is JobStatus.DONE and job.result is None


def test_buffered_session_extracts_at_end(tmp_path) -> None:
    llm = SessionLLM()
    with Memory(tmp_path / "b.db", llm=llm, embedder=False, buffer=True) as mem:
        r = mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"),
                    user_id="u1", session_id="s1")
        assert r.messages_stored == 1 and r.facts_added == 0 and "buffered" in r.warnings[-1]
        assert mem.store.messages("u1") == [] and llm.calls == []  # nothing written, no model call yet
        again = mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"),
                        user_id="u1", session_id="s1")
        assert again.messages_stored == 0 and again.messages_skipped == 1  # idempotent by id
        end = mem.end_session(user_id="u1", session_id="s1")
        assert len(end.stored) == 1 and end.checkpoint is not None
        assert sorted(f.object for f in mem.facts(user_id="u1")) == ["Acme", "Berlin"]


@pytest.fixture
def redis_client(monkeypatch):  # type: ignore[no-untyped-def]
    """The machine's Redis, configured as the session buffer (CHRONOMEM_REDIS_URL)."""
    import redis

    client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        client.ping()
    except redis.RedisError as e:  # .ci/run starts the server; a missing one is a real failure
        pytest.fail(f"Redis on 127.0.0.1:6379 is not reachable: {e}")
    monkeypatch.setenv("CHRONOMEM_REDIS_URL", "redis://127.0.0.1:6379/0")
    return client


def test_buffered_mode_uses_real_redis_when_configured(tmp_path, redis_client) -> None:  # type: ignore[no-untyped-def]
    import uuid

    user = f"u-{uuid.uuid4().hex}"
    with Memory(tmp_path / "r.db", llm=SessionLLM(), embedder=False) as mem:
        assert type(mem._buffer).__name__ == "RedisSessionBuffer"
        mem.add(conv("I moved to Munich last week.", ts="2023-06-10T10:00:00Z"), user_id=user, session_id="s1")
        with Memory(tmp_path / "r.db", llm=SessionLLM(), embedder=False) as other_worker:
            other_worker.end_session(user_id=user, session_id="s1")  # another process flushes it
        assert [f.object for f in mem.facts(user_id=user)] == ["Munich"]


def _buffered_turns_forgotten(mem: Memory, user: str) -> None:
    """A session half stored (ended once, then more turns buffered), one only buffered, and another
    user's buffered session: forgetting drops the waiting turns too, and nothing comes back."""
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id=user, session_id="s1")
    mem.end_session(user_id=user, session_id="s1", ended_at="2023-01-10T11:00:00Z")
    mem.add(conv("I moved to Munich last week.", prefix="b", ts="2023-01-10T10:30:00Z"),
            user_id=user, session_id="s1")
    mem.add(conv("My dog Pixel is the best.", prefix="c", ts="2023-02-10T10:00:00Z"), user_id=user, session_id="s2")
    other = f"{user}-other"
    mem.add(conv("I live in Paris.", prefix="d", ts="2023-02-10T10:00:00Z"), user_id=other, session_id="s2")

    res = mem.forget(user_id=user, session_id="s1")  # one stored turn, one waiting
    assert (res.messages_deleted, res.sessions_deleted) == (2, 1)
    assert mem.store.messages(user, session_id="s1") == []

    res = mem.forget(user_id=user, session_id="s2")  # only in the buffer: no NotFoundError
    assert (res.messages_deleted, res.sessions_deleted) == (1, 1)
    mem.add(conv("My dog Pixel is the best.", prefix="c", ts="2023-02-10T10:00:00Z"), user_id=user, session_id="s2")
    res = mem.forget(user_id=user, everything=True)
    assert (res.messages_deleted, res.sessions_deleted) == (1, 1)
    sweep = mem.end_idle_sessions(now="2100-01-01T00:00:00Z", idle_seconds=60)  # would write waiting turns
    assert mem.store.messages(user) == [] and mem.facts(user_id=user) == [] and mem.store.sessions(user) == []
    # the other user's session is kept (a shared Redis may hold other tests' sessions too)
    assert [e for e in sweep.ended if e[0] in (user, other)] == [(other, "s2")]
    assert [f.object for f in mem.facts(user_id=other)] == ["Paris"]
    with pytest.raises(NotFoundError, match="no session"):
        mem.forget(user_id=user, session_id="s2")


def test_forgetting_drops_turns_waiting_in_the_session_buffer(tmp_path) -> None:
    with Memory(tmp_path / "b.db", llm=SessionLLM(), embedder=False, buffer=True) as mem:
        _buffered_turns_forgotten(mem, "u1")


def test_forgetting_drops_turns_waiting_in_redis(tmp_path, redis_client) -> None:  # type: ignore[no-untyped-def]
    import uuid

    user = f"u-{uuid.uuid4().hex}"
    with Memory(tmp_path / "r.db", llm=SessionLLM(), embedder=False) as mem:
        assert type(mem._buffer).__name__ == "RedisSessionBuffer"
        _buffered_turns_forgotten(mem, user)
    left = [k for k in redis_client.scan_iter(match=f"*{user}*") if f"{user}-other".encode() not in k]
    assert left == []  # no key of the forgotten user stays in Redis


def _waiting_turns_exported(mem: Memory, user: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id=user, session_id="s1")
    mem.end_session(user_id=user, session_id="s1")
    mem.add(conv("I moved to Munich last week.", prefix="b", ts="2023-06-10T10:00:00Z"), user_id=user, session_id="s2")
    data = mem.export(user_id=user)
    written = io.BytesIO()
    counts = mem.export_to(written, user_id=user)  # the same JSON, a batch at a time
    streamed = json.loads(written.getvalue())
    assert {**streamed, "exported_at": None} == {**data, "exported_at": None}
    assert counts == {t: len(rows) for t, rows in data["tables"].items()}
    turns = {r["id"]: r for r in data["tables"]["messages"]}
    assert set(turns) == {"t0", "b0"} and (turns["t0"]["extracted"], turns["b0"]["extracted"]) == (1, 0)
    assert sorted(r["id"] for r in data["tables"]["sessions"]) == ["s1", "s2"]
    with Memory(tmp_path / "copy.db", llm=SessionLLM(), embedder=False, buffer=False) as copy:
        copy.import_(data, user_id="u-copy")  # the waiting turn arrives stored, to be extracted
        assert [m.id for m in copy.store.messages("u-copy", pending_only=True)] == ["b0"]
        copy.extract_pending(user_id="u-copy")
        assert sorted(f.object for f in copy.facts(user_id="u-copy")) == ["Acme", "Munich"]


def test_an_export_holds_the_turns_still_waiting_in_the_buffer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "b.db", llm=SessionLLM(), embedder=False, buffer=True) as mem:
        _waiting_turns_exported(mem, "u1", tmp_path)


@pytest.mark.parametrize("stored", ["before the dump's snapshot", "after its first read"])
def test_a_turn_flushed_as_an_export_starts_is_exported_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              stored: str) -> None:
    """The buffer is read before the dump's snapshot: a turn stored before the snapshot is in both, and
    exported as the store holds it (extracted), not twice (an import would refuse the duplicate); a turn
    stored after the snapshot began is exported as it waited (not lost between the two)."""
    with Memory(tmp_path / "b.db", llm=SessionLLM(), embedder=False, buffer=True) as mem:
        mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1",
                session_id="s1")
        real = mem.store.iter_user

        def session_ends_meanwhile(user_id: str, *, batch: int = 1000):  # type: ignore[no-untyped-def]
            if stored.startswith("before"):
                mem.end_session(user_id="u1", session_id="s1")  # the buffered turns are stored now
            dump = real(user_id, batch=batch)
            first = next(dump)  # the snapshot is taken
            if stored.startswith("after"):
                mem.end_session(user_id="u1", session_id="s1")
            yield first
            yield from dump

        monkeypatch.setattr(mem.store, "iter_user", session_ends_meanwhile)
        data = mem.export(user_id="u1")
        monkeypatch.undo()
        extracted = 1 if stored.startswith("before") else 0  # the store's copy, or the buffer's
        assert [(r["id"], r["extracted"]) for r in data["tables"]["messages"]] == [("t0", extracted)]
        assert [r["id"] for r in data["tables"]["sessions"]] == ["s1"]
        mem.import_(data, user_id="u2")
        assert [m.id for m in mem.messages(user_id="u2")] == ["t0"]


def test_an_export_holds_the_turns_still_waiting_in_redis(tmp_path, redis_client) -> None:  # type: ignore[no-untyped-def]
    import uuid

    with Memory(tmp_path / "r.db", llm=SessionLLM(), embedder=False) as mem:
        _waiting_turns_exported(mem, f"u-{uuid.uuid4().hex}", tmp_path)


def test_config_rsum_decoding_3_appends_each_session_to_the_summary(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from chronomem import Config

    monkeypatch.setenv("CHRONOMEM_RSUM_DECODING", "3")
    config = Config.load()
    assert config.rsum_decoding == 3
    llm = SessionLLM()
    with Memory(tmp_path / "m.db", llm=llm, embedder=False, config=config) as mem:
        two_sessions(mem)
        prompts = ["\n".join(m["content"] for m in call) for call in llm.calls]
        prompts = [p for p in prompts if "memory keeper" in p]  # Rsum's calls
        assert ["Memory (already kept):" in p for p in prompts] == [False, True]  # first memory, then append
        lines = mem.summary(user_id="u1").splitlines()
        assert "Berlin" in lines[0] and "Munich" in lines[-1]  # the first session's sentence is kept as written
    for bad in ("4", "two", 0):
        with pytest.raises(ValidationError, match="rsum_decoding"):
            Config(rsum_decoding=bad)  # type: ignore[arg-type]
