"""Forgetting a session returns at once; a job rewrites the summaries written after it.

The delete is immediate and complete: the forgotten session's turns, facts and summary go, and so do the
words of every later summary (their texts are erased in the same transaction, their places in the chain
kept for the rewrite).  Until the ``rewrite_summaries`` job has run, ``summary()`` reads the summary from
before the forgotten session.  The model is :class:`fake_openai.FakeModelServer` over real HTTP; the
summariser of :func:`carrying` writes each summary as a real model does, from the previous one and the new
session, so a later summary quotes an earlier session.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeModelServer, Reply
from fastapi.testclient import TestClient
from test_forget_scrub import leftovers
from typer.testing import CliRunner

from chronomem import Memory
from chronomem.cli import app as cli_app
from chronomem.jobs import Job, JobKind, JobStatus
from chronomem.jobs.worker import JobRunner
from chronomem.server import create_app
from chronomem.timeutil import utcnow

pytestmark = pytest.mark.usefixtures("local_service_env")

U = "u1"
#: one turn per session, each with a word said nowhere else
SESSIONS = (("s1", "I keep bees named Zorblat."), ("s2", "I sail a boat called Quibbet."),
            ("s3", "I collect stamps from Vexmoor."), ("s4", "I bake bread with Plimfo flour."))
MARKERS = {"s1": "Zorblat", "s2": "Quibbet", "s3": "Vexmoor", "s4": "Plimfo", "s5": "Drubnik"}


def carrying(body: dict[str, Any]) -> Reply | None:
    """A summary as a real model writes it: the previous memory, then what the new session said."""
    if body.get("response_format") is not None:
        return None  # extraction: the server's default
    prompt = body["messages"][-1]["content"]
    if "Previous memory:\n" not in prompt:
        return None
    before = prompt.split("Previous memory:\n", 1)[1].split("\n\nNew session", 1)[0].strip()
    session = prompt.split("\n\nNew session", 1)[1].split(":\n", 1)[1].split("\n\nUpdated memory", 1)[0]
    said = [line.split(": ", 1)[1] for line in session.splitlines() if ": " in line]
    return Reply(" ".join(([] if before == "none" else [before]) + said))


def summariser_down(body: dict[str, Any]) -> Reply | None:
    """The summaries' model refuses every call; extraction still works."""
    return Reply("overloaded", status=401) if body.get("response_format") is None else None


@pytest.fixture
def model(server: FakeModelServer) -> FakeModelServer:
    """This test's own model server, summarising as :func:`carrying` does."""
    server.inject = carrying
    return server


class HeldQueue:
    """A queue that runs nothing: it records what was sent, and the test runs the jobs itself."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, job: Job) -> None:
        self.sent.append(job.id)

    def close(self) -> None:
        pass


def summary_calls(srv: FakeModelServer) -> int:
    return sum(1 for r in srv.requests if r.get("response_format") is None)


def end_sessions(mem: Memory, *sessions: tuple[str, str], first_day: int = 1) -> None:
    """One turn per session, each session ended (and summarised) on its own day."""
    for day, (sid, text) in enumerate(sessions, start=first_day):
        ts = f"2024-01-{day:02d}T10:00:00Z"
        mem.add([{"id": f"{sid}-1", "speaker": "Maya", "text": text, "timestamp": ts}], user_id=U, session_id=sid)
        mem.end_session(user_id=U, session_id=sid, ended_at=f"2024-01-{day:02d}T11:00:00Z")


def runner_for(mem: Memory) -> JobRunner:
    return JobRunner(mem.store.inner, lambda tenant: mem, name="test", unsent_grace_s=0)  # type: ignore[attr-defined]


def said_in(text: str, *sessions: str) -> bool:
    return all(MARKERS[s] in text for s in sessions)


def said_none(text: str, *sessions: str) -> bool:
    return not any(MARKERS[s] in text for s in sessions)


def test_forget_returns_without_a_model_call_and_a_job_rewrites_the_later_summaries(
        tmp_path: Path, model: FakeModelServer) -> None:
    held = HeldQueue()
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        assert said_in(mem.summary(user_id=U), "s1", "s2", "s3", "s4")
        before = summary_calls(model)
        res = mem.forget(user_id=U, session_id="s1")  # the oldest of four
        assert summary_calls(model) == before  # no model call inside forget
        assert (res.sessions_deleted, res.summaries_pending, res.summaries_rebuilt) == (1, 3, 0)
        assert res.job_id is not None and res.warnings == [] and held.sent == [res.job_id]
        job = mem.job(res.job_id, user_id=U)
        assert job.kind is JobKind.REWRITE_SUMMARIES and job.status is JobStatus.QUEUED and job.session_id is None
        assert mem.summary(user_id=U) == ""  # nothing was summarised before the forgotten session

        done = runner_for(mem).run(res.job_id)
        assert done is not None and done.status is JobStatus.DONE, done.error if done else None
        assert done.result == {"summaries_rewritten": 3}
        assert summary_calls(model) == before + 3  # each later session summarised once more
        assert said_in(mem.summary(user_id=U), "s2", "s3", "s4") and said_none(mem.summary(user_id=U), "s1")
        chain = mem.store.checkpoints(U)
        assert [(c.seq, c.session_id) for c in chain] == [(1, "s2"), (2, "s3"), (3, "s4")]
        assert mem.rewrite_summaries(user_id=U) == 0 and summary_calls(model) == before + 3  # nothing left to do


def test_the_forgotten_session_leaves_every_summary_at_once_even_when_the_model_is_down(
        tmp_path: Path, model: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False) as mem:
        end_sessions(mem, *SESSIONS)
        first = mem.store.checkpoints(U)[0].memory
        model.inject = summariser_down  # the rewrite will fail: what forget deleted must be gone regardless
        res = mem.forget(user_id=U, session_id="s2")
        assert all(said_none(c.memory, "s2") for c in mem.store.checkpoints(U))  # no stored summary quotes it
        assert said_none(json.dumps(mem.export(user_id=U)), "s2")
        assert mem.summary(user_id=U) == first  # the summary from before it
        assert res.summaries_pending == 2 and res.job_id is not None
        assert mem.wait(res.job_id, timeout=60).status is JobStatus.FAILED
    assert leftovers(tmp_path, MARKERS["s2"]) == {}  # nor any byte of the file


def test_summary_reads_the_one_before_the_gap_until_the_job_ran(tmp_path: Path, model: FakeModelServer) -> None:
    held = HeldQueue()
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        second = mem.summary(user_id=U, as_of="2024-01-02T12:00:00Z")
        assert said_in(second, "s1", "s2") and said_none(second, "s3", "s4")
        before = summary_calls(model)
        res = mem.forget(user_id=U, session_id="s3")
        for as_of in (None, "2024-01-02T12:00:00Z", "2024-01-04T12:00:00Z"):
            assert mem.summary(user_id=U, as_of=as_of) == second
        assert res.summaries_pending == 1 and summary_calls(model) == before
        assert runner_for(mem).run(res.job_id).status is JobStatus.DONE  # type: ignore[union-attr, arg-type]
        assert summary_calls(model) == before + 1
        now = mem.summary(user_id=U)
        assert said_in(now, "s1", "s2", "s4") and said_none(now, "s3")
        assert mem.summary(user_id=U, as_of="2024-01-02T12:00:00Z") == second


def test_a_failed_rewrite_leaves_the_gap_and_a_retry_completes_it(tmp_path: Path, model: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False) as mem:  # the in-process queue
        end_sessions(mem, *SESSIONS)
        first = mem.summary(user_id=U, as_of="2024-01-01T12:00:00Z")
        model.inject = summariser_down
        res = mem.forget(user_id=U, session_id="s2")
        assert all(said_none(c.memory, "s2") for c in mem.store.checkpoints(U))
        failed = mem.wait(res.job_id, timeout=60)  # type: ignore[arg-type]
        assert failed.status is JobStatus.FAILED and failed.error
        assert mem.summary(user_id=U) == first and all(said_none(c.memory, "s2") for c in mem.store.checkpoints(U))
        model.inject = carrying  # the model is back
        assert mem.rewrite_summaries(user_id=U) == 2
        assert said_in(mem.summary(user_id=U), "s1", "s3", "s4") and said_none(mem.summary(user_id=U), "s2")
        assert [c.session_id for c in mem.store.checkpoints(U)] == ["s1", "s3", "s4"]


def test_a_second_forget_before_the_job_ran_joins_it(store_url: str, model: FakeModelServer) -> None:
    held = HeldQueue()
    with Memory(store_url, llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        before = summary_calls(model)
        first = mem.forget(user_id=U, session_id="s2")
        second = mem.forget(user_id=U, session_id="s3")
        assert summary_calls(model) == before
        assert first.job_id is not None and second.job_id == first.job_id  # one job rewrites for both
        assert (first.summaries_pending, second.summaries_pending) == (2, 1)
        assert held.sent == [first.job_id]  # delivered once
        assert [j.kind for j in mem.jobs(user_id=U)].count(JobKind.REWRITE_SUMMARIES) == 1
        assert runner_for(mem).run(first.job_id).status is JobStatus.DONE  # type: ignore[union-attr]
        assert summary_calls(model) == before + 1  # s4 alone: s3 is gone too
        assert [(c.seq, c.session_id) for c in mem.store.checkpoints(U)] == [(1, "s1"), (2, "s4")]
        assert said_in(mem.summary(user_id=U), "s1", "s4") and said_none(mem.summary(user_id=U), "s2", "s3")
        third = mem.forget(user_id=U, session_id="s4")  # the last one: no later summary to rewrite
        assert third.summaries_pending == 0 and third.job_id is None


def test_a_forget_while_the_rewrite_runs_is_rewritten_too(tmp_path: Path, model: FakeModelServer) -> None:
    held = HeldQueue()
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        first = mem.forget(user_id=U, session_id="s3")  # s4's summary is owed
        model.gate_word = MARKERS["s4"]  # the rewrite stops inside s4's summary
        ran: list[Job | None] = []
        worker = threading.Thread(target=lambda: ran.append(runner_for(mem).run(first.job_id)))  # type: ignore[arg-type]
        worker.start()
        assert model.gate_seen.wait(60)
        second = mem.forget(user_id=U, session_id="s1")  # lands while the job runs, before its gap: a new job
        assert second.job_id not in (None, first.job_id) and second.summaries_pending == 2
        model.open_gate()
        worker.join(60)
        assert ran and ran[0] is not None and ran[0].status is JobStatus.DONE, ran
        assert ran[0].result == {"summaries_rewritten": 2}  # its commit saw the new gap: rewritten from there
        assert [(c.seq, c.session_id) for c in mem.store.checkpoints(U)] == [(1, "s2"), (2, "s4")]
        assert said_in(mem.summary(user_id=U), "s2", "s4") and said_none(mem.summary(user_id=U), "s1", "s3")
        again = runner_for(mem).run(second.job_id)  # type: ignore[arg-type]
        assert again is not None and again.result == {"summaries_rewritten": 0}  # the first one saw it through


def test_a_rewrite_whose_worker_died_is_run_again_and_the_next_session_end_does_it_first(
        tmp_path: Path, model: FakeModelServer) -> None:
    held = HeldQueue()
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        before = summary_calls(model)
        res = mem.forget(user_id=U, session_id="s1")
        assert summary_calls(model) == before and res.job_id is not None
        raw, now = mem.store.inner, utcnow()  # type: ignore[attr-defined]
        assert raw.claim_job(res.job_id, "dead", now - timedelta(seconds=60), now - timedelta(seconds=30))
        sent: list[str] = []
        runner = runner_for(mem)
        assert runner.sweep(lambda j: sent.append(j.id)) == 1 and sent == [res.job_id]  # its lease ran out
        assert mem.job(res.job_id).status is JobStatus.QUEUED
        # before any worker runs it, the user's next session ends: the owed rewrite comes first
        end_sessions(mem, ("s5", "I play chess in Drubnik."), first_day=5)
        assert [c.session_id for c in mem.store.checkpoints(U)] == ["s2", "s3", "s4", "s5"]
        assert said_in(mem.summary(user_id=U), "s2", "s3", "s4", "s5") and said_none(mem.summary(user_id=U), "s1")
        assert summary_calls(model) == before + 4  # the three owed, then s5's own
        done = runner.run(res.job_id)
        assert done is not None and done.status is JobStatus.DONE and done.result == {"summaries_rewritten": 0}
        assert summary_calls(model) == before + 4  # idempotent: nothing was left for it


def test_ending_again_a_session_after_the_gap_rebuilds_from_before_the_gap(
        tmp_path: Path, model: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=HeldQueue()) as mem:
        end_sessions(mem, *SESSIONS)
        mem.forget(user_id=U, session_id="s2")
        mem.end_session(user_id=U, session_id="s4")  # s4 already has a (now erased) summary: ended again
        now = mem.summary(user_id=U)
        assert said_in(now, "s1", "s3", "s4") and said_none(now, "s2")
        assert [c.session_id for c in mem.store.checkpoints(U)] == ["s1", "s3", "s4"]


def test_wait_rewrites_in_the_call(tmp_path: Path, model: FakeModelServer) -> None:
    held = HeldQueue()
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        before = summary_calls(model)
        res = mem.forget(user_id=U, session_id="s1", wait=True)
        assert (res.summaries_rebuilt, res.summaries_pending, res.job_id) == (3, 0, None) and held.sent == []
        assert summary_calls(model) == before + 3
        assert said_in(mem.summary(user_id=U), "s2", "s3", "s4") and said_none(mem.summary(user_id=U), "s1")
        model.inject = summariser_down
        failed = mem.forget(user_id=U, session_id="s2", wait=True)  # deleted; the rewrite fails and says so
        assert failed.summaries_pending == 2 and "rewriting the later summaries" in failed.warnings[0]
        assert said_none(json.dumps(mem.export(user_id=U)), "s1", "s2")


def test_rest_delete_returns_the_rewrite_job(tmp_path: Path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False) as mem, TestClient(create_app(mem)) as client:
        end_sessions(mem, *SESSIONS[:3])
        r = client.delete(f"/v1/users/{U}/sessions/s1")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["sessions_deleted"] == 1 and body["summaries_pending"] == 2 and body["job_id"]
        job = mem.wait(body["job_id"], timeout=60)
        assert job.status is JobStatus.DONE, job.error
        seen = client.get(f"/v1/jobs/{body['job_id']}").json()
        assert seen["kind"] == "rewrite_summaries" and seen["status"] == "done"
        assert seen["result"] == {"summaries_rewritten": 2} and seen["session_id"] is None
        schema = client.get("/openapi.json").json()["components"]["schemas"]
        assert {"job_id", "summaries_pending"} <= set(schema["ForgetOut"]["properties"])
        assert "rewrite_summaries" in json.dumps(schema["JobOut"]["properties"]["kind"])


def test_cli_forget_returns_at_once_and_names_the_job(tmp_path: Path, llm: FakeModelServer) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, llm=llm.spec, embedder=False) as mem:
        end_sessions(mem, *SESSIONS[:3])
    before = summary_calls(llm)
    r = CliRunner().invoke(cli_app, ["forget", "--user", U, "--session", "s1", "--db", db, "--json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["summaries_pending"] == 2 and out["job_id"] and summary_calls(llm) == before
    r = CliRunner().invoke(cli_app, ["forget", "--user", U, "--session", "s2", "--db", db], catch_exceptions=False)
    assert r.exit_code == 0 and f"job {out['job_id']}" in r.output, r.output  # the same job, still waiting
    with Memory(db, llm=llm.spec, embedder=False, queue=HeldQueue()) as mem:
        left = mem.job(out["job_id"])
        assert left.status is JobStatus.QUEUED and left.sent_at is None  # stored, not run by the exiting CLI
        runner, sent = runner_for(mem), []
        assert runner.sweep(lambda j: sent.append(j.id)) == 1 and sent == [left.id]  # a sweep sends it
        job = runner.run(left.id)
        assert job is not None and job.status is JobStatus.DONE and job.result == {"summaries_rewritten": 1}
        assert [c.session_id for c in mem.store.checkpoints(U)] == ["s3"]


def test_a_forget_joining_a_job_a_worker_took_meanwhile_gets_a_job_of_its_own(
        tmp_path: Path, model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker may claim the queued rewrite while a second forget's transaction is open (PostgreSQL's
    workers claim without the user's lock) and read the chain before that forget's gap: the forget
    must not count on it."""
    held = HeldQueue()
    with Memory(tmp_path / "m.db", llm=model.spec, embedder=False, queue=held) as mem:
        end_sessions(mem, *SESSIONS)
        first = mem.forget(user_id=U, session_id="s2")
        join, taken = mem._jobs.owe_summary_rewrite, []

        def claimed_meanwhile(user_id: str, pending: int) -> Job:
            job = join(user_id, pending)
            if not taken:  # the joined job, claimed inside the forget's transaction
                taken.append(job.id)
                inner: Any = mem.store.inner  # type: ignore[attr-defined]
                inner._exec(job.user_id, "UPDATE jobs SET status = 'running' WHERE id = ?", (job.id,))
            return job

        monkeypatch.setattr(mem._jobs, "owe_summary_rewrite", claimed_meanwhile)
        second = mem.forget(user_id=U, session_id="s3")
        assert taken == [first.job_id] and second.job_id not in (None, first.job_id)
        assert held.sent == [first.job_id, second.job_id]
        assert runner_for(mem).run(second.job_id).status is JobStatus.DONE  # type: ignore[arg-type,union-attr]
        assert [(c.seq, c.session_id) for c in mem.store.checkpoints(U)] == [(1, "s1"), (2, "s4")]
        assert said_in(mem.summary(user_id=U), "s1", "s4") and said_none(mem.summary(user_id=U), "s2", "s3")
