"""Queued ingestion: jobs in the store, the in-process queue, leases, tenants.

Model calls go to the deterministic OpenAI-compatible server of ``fake_openai.py`` over real
HTTP; stores are real SQLite / PostgreSQL (``store_url``).
"""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import pytest
from fake_openai import FakeModelServer

from chronomem import Memory
from chronomem.errors import NotFoundError, ValidationError
from chronomem.jobs import JobKind, JobStatus
from chronomem.jobs.model import IN_PROCESS
from chronomem.jobs.worker import JobRunner
from chronomem.store import open_store
from chronomem.timeutil import utcnow


pytestmark = pytest.mark.usefixtures("local_service_env")  # the model key; no queue, Redis or server key


def turns(*texts: str, prefix: str = "m") -> list[dict[str, str]]:
    return [{"id": f"{prefix}{i}", "speaker": "Maya", "text": t, "timestamp": "2024-03-01T10:00:00Z"}
            for i, t in enumerate(texts)]


def test_submit_stores_turns_at_once_and_a_worker_thread_extracts_them(store_url: str,
                                                                      llm: FakeModelServer) -> None:
    with Memory(store_url, llm=llm.spec, embedder=False) as mem:
        job = mem.submit_messages(turns("I live in Porto.", "I work at Acme."), user_id="u1", session_id="s1")
        assert job.kind is JobKind.ADD and job.session_id == "s1"
        assert len(mem.store.messages("u1")) == 2  # stored before the job runs
        done = mem.wait(job, timeout=60)
        assert done.status is JobStatus.DONE and done.error is None and done.attempts == 1
        assert sorted(f["object"] for f in done.result["added"]) == ["Acme", "Porto"]
        assert done.result["messages_stored"] == 2
        assert sorted(f.object for f in mem.facts(user_id="u1")) == ["Acme", "Porto"]
        assert mem.store.messages("u1", pending_only=True) == []
        # the same ids again: nothing new to extract, the job is done at once, no model call
        before = len(llm.requests)
        again = mem.submit_messages(turns("I live in Porto.", "I work at Acme."), user_id="u1", session_id="s1")
        assert again.status is JobStatus.DONE and again.result["messages_skipped"] == 2
        assert len(llm.requests) == before
        assert [j.id for j in mem.jobs(user_id="u1")] == [again.id, job.id]  # newest first
        assert mem.job(job.id, user_id="u1").status is JobStatus.DONE
        with pytest.raises(NotFoundError):
            mem.job(job.id, user_id="u2")


def test_end_session_job_writes_the_summary(tmp_path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False) as mem:
        mem.wait(mem.submit_messages(turns("I like tea."), user_id="u1", session_id="s1"), timeout=60)
        end = mem.wait(mem.submit_end_session(user_id="u1", session_id="s1"), timeout=60)
        assert end.kind is JobKind.END_SESSION and end.status is JobStatus.DONE, end.error
        assert end.result["summary"] and mem.summary(user_id="u1") == end.result["summary"]
        with pytest.raises(ValidationError, match="session_id"):
            mem.submit_end_session(user_id="u1", session_id="")


def test_bad_input_is_refused_before_anything_is_stored(tmp_path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False) as mem:
        with pytest.raises(ValidationError, match="text"):
            mem.submit_messages([{"speaker": "Maya", "text": "fine"}, {"speaker": "Maya"}], user_id="u1")
        assert mem.store.messages("u1") == [] and mem.jobs() == []


def test_a_failed_extraction_fails_the_job_and_keeps_the_turns(tmp_path) -> None:
    # nothing listens on port 9: the model is unreachable
    with Memory(tmp_path / "m.db", llm="openai:none@http://svc:hunter2@127.0.0.1:9/v1", embedder=False) as mem:
        job = mem.wait(mem.submit_messages(turns("I live in Porto."), user_id="u1"), timeout=120)
        assert job.status is JobStatus.FAILED and job.error
        assert len(mem.store.messages("u1", pending_only=True)) == 1  # kept for a retry
        # a tenant reads the job: the kind of failure, not the operator's endpoint (nor its password)
        shown = [job.error, *job.result["warnings"], *(c["error"] for c in job.result["failed_chunks"])]
        assert job.error.startswith("ModelUnavailableError: the model is unavailable")
        assert not any("127.0.0.1" in text or "hunter2" in text for text in shown), shown
        direct = mem.add(turns("I live in Porto.", prefix="d"), user_id="u2")  # the library's caller sees it all
        assert "http://127.0.0.1:9/v1" in direct.failed_chunks[0].error


def test_sending_the_turns_of_a_failed_job_again_extracts_them(tmp_path) -> None:
    """The retry add() documents (send the same turns again) was a job done at once that extracted nothing:
    every turn was known, so it had no turn to extract, and the failed ones stayed pending for good."""
    from fake_openai import Reply

    down = {"now": True}
    srv = FakeModelServer(inject=lambda body: Reply(content="overloaded", status=401) if down["now"] else None)
    try:
        with Memory(tmp_path / "m.db", llm=srv.spec, embedder=False) as mem:
            said = turns("I work at Acme.")
            failed = mem.wait(mem.submit_messages(said, user_id="u1", session_id="s1"), timeout=60)
            assert failed.status is JobStatus.FAILED
            down["now"] = False
            again = mem.wait(mem.submit_messages(said, user_id="u1", session_id="s1"), timeout=60)
            assert again.status is JobStatus.DONE, again.error
            assert [f["object"] for f in again.result["added"]] == ["Acme"]
            assert again.result["messages_skipped"] == 1 and mem.store.messages("u1", pending_only=True) == []
            done = mem.wait(mem.submit_messages(said, user_id="u1", session_id="s1"), timeout=60)
            assert done.status is JobStatus.DONE and done.result["added"] == []  # extracted: nothing to redo
    finally:
        srv.close()


def test_claim_lease_and_redelivery_follow_the_lease(store_url: str) -> None:
    """The store's job bookkeeping: one holder at a time; an expired lease is requeued."""
    with Memory(store_url, llm=None, embedder=False, tenant="acme") as mem:
        with mem.store.transaction("u1"):
            mem._jobs  # noqa: B018 - the service exists; build a job the way submit does
            job = mem._jobs._new_job(JobKind.END_SESSION, "u1", "s1", {})
            mem.store.insert_job(job)
        raw = mem.store.inner  # type: ignore[attr-defined]
        now = utcnow()
        first = raw.claim_job(job.id, "w1", now, now + timedelta(seconds=30))
        assert first is not None and first.status is JobStatus.RUNNING and first.attempts == 1
        assert raw.claim_job(job.id, "w2", now, now + timedelta(seconds=30)) is None  # lease is live
        ago = now - timedelta(seconds=60)
        assert raw.jobs_to_send(now, unsent_before=ago, resend_before=ago) == []
        later = now + timedelta(seconds=31)  # w1 died: its lease ran out
        assert [j.id for j in raw.jobs_to_send(later, unsent_before=ago, resend_before=ago)] == [job.id]
        assert raw.requeue_job(job.id, later)
        second = raw.claim_job(job.id, "w2", later, later + timedelta(seconds=30))
        assert second is not None and second.attempts == 2 and second.worker == "w2"
        assert not raw.finish_job(job.id, "w1", JobStatus.DONE, later, {}, None)  # w1 lost it
        assert raw.finish_job(job.id, "w2", JobStatus.DONE, later, {"ok": True}, None)
        assert raw.claim_job(job.id, "w3", later, later + timedelta(days=1)) is None  # finished
        assert mem.job(job.id).result == {"ok": True}
        with Memory(raw, tenant="beta", embedder=False) as other:
            with pytest.raises(NotFoundError):
                other.job(job.id)  # another tenant's job does not exist for beta


def test_a_runner_skips_jobs_it_does_not_hold(tmp_path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False, queue=_NullQueue()) as mem:
        job = mem.submit_messages(turns("I live in Porto."), user_id="u1")
        raw = mem.store.inner  # type: ignore[attr-defined]
        now = utcnow()
        assert raw.claim_job(job.id, "other", now, now + timedelta(seconds=60)) is not None
        runner = JobRunner(raw, lambda tenant: mem, name="me")
        assert runner.run(job.id) is None and mem.facts(user_id="u1") == []
        assert runner.sweep(lambda j: None) == 0  # the other worker's lease is live


def test_a_job_stored_but_never_delivered_is_sent_by_the_sweep(tmp_path, llm: FakeModelServer) -> None:
    sent: list[str] = []
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False, queue=_NullQueue()) as mem:
        job = mem.submit_messages(turns("I live in Porto."), user_id="u1", deliver=False)  # the process "died" here
        runner = JobRunner(mem.store.inner, lambda tenant: mem, name="me", unsent_grace_s=0)  # type: ignore[attr-defined]
        assert runner.sweep(lambda j: sent.append(j.id)) == 1 and sent == [job.id]
        assert runner.sweep(lambda j: sent.append(j.id)) == 0  # sent once, not again
        assert runner.run(job.id).status is JobStatus.DONE
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]


def test_jobs_an_in_process_queue_held_are_sent_again_after_a_close_or_a_crash(tmp_path) -> None:
    import threading

    from test_extract_pipeline import ScriptedLLM

    class GateLLM(ScriptedLLM):  # holds the first job in its model call
        def __init__(self) -> None:
            super().__init__()
            self.inside, self.gate = threading.Event(), threading.Event()

        def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
            self.inside.set()
            self.gate.wait(10)
            return super().chat(messages, **kw)

    llm = GateLLM()
    mem = Memory(tmp_path / "m.db", llm=llm, embedder=False)
    first = mem.submit_messages(turns("I live in Porto."), user_id="u1", session_id="s1")
    assert llm.inside.wait(10)
    waiting = mem.submit_messages(turns("I like tea.", prefix="n"), user_id="u1", session_id="s2")
    assert mem.job(waiting.id).sent_at is not None  # in the in-process queue, behind the first
    closer = threading.Thread(target=mem.close)
    closer.start()
    llm.gate.set()
    closer.join(10)
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as again:
        # read through the store: a job read through the memory starts its in-process queue, which would
        # run the job at once (as it should); here the test plays the sweeps itself
        assert again.store.job(again.tenant, first.id).status is JobStatus.DONE
        left = again.store.job(again.tenant, waiting.id)
        assert left.status is JobStatus.QUEUED and left.sent_at is None  # unsent: any sweep sends it
        assert left.worker is not None and left.worker.startswith(IN_PROCESS)  # the next in-process queue's at once
        runner = JobRunner(again.store.inner, lambda tenant: again, name="me", unsent_grace_s=0)  # type: ignore[attr-defined]
        sent: list[str] = []
        assert runner.sweep(lambda j: sent.append(j.id)) == 1 and sent == [waiting.id]
        # a crash leaves it marked sent to the dead process's in-process queue: only an in-process queue's
        # first sweep (sent_before) takes it at once
        raw = again.store.inner  # type: ignore[attr-defined]
        swept = again.store.job(again.tenant, waiting.id).sent_at  # the sweep above recorded its send
        assert swept is not None and raw.swap_job_send(waiting.id, swept, utcnow(), IN_PROCESS + "gone")
        assert runner.sweep(lambda j: None) == 0
        local = JobRunner(raw, lambda tenant: again, name=IN_PROCESS + "me", unsent_grace_s=0, tenant=again.tenant)
        assert local.sweep(lambda j: sent.append(j.id), sent_before=utcnow() + timedelta(seconds=1)) == 1
        assert runner.run(waiting.id).status is JobStatus.DONE


def test_a_sweep_renews_a_job_its_own_runner_is_still_running(store_url: str) -> None:
    """A late heartbeat must not make a worker requeue (and so run twice) the job it is running."""
    gated = FakeModelServer(gate_word="Porto")
    sent: list[str] = []
    try:
        with Memory(store_url, llm=gated.spec, embedder=False, queue=_NullQueue()) as mem:
            job = mem.submit_messages(turns("I live in Porto."), user_id="u1")
            raw = mem.store.inner  # type: ignore[attr-defined]
            # a lease long enough that the heartbeat thread stays asleep: the test plays the late heartbeat
            runner = JobRunner(raw, lambda tenant: mem, name="me", lease_s=600, unsent_grace_s=0)
            done: list[object] = []
            t = threading.Thread(target=lambda: done.append(runner.run(job.id)))
            t.start()
            assert gated.gate_seen.wait(60)  # the runner is inside the job's model call
            assert runner.running == {job.id}
            past = utcnow() - timedelta(seconds=5)
            assert raw.renew_job(job.id, "me", past)  # its lease ran out without a renewal
            assert [j.id for j in raw.jobs_to_send(utcnow(), unsent_before=utcnow(), resend_before=past)] == [job.id]

            assert runner.sweep(lambda j: sent.append(j.id)) == 0 and sent == []  # renewed, not requeued
            held = mem.job(job.id)
            assert held.status is JobStatus.RUNNING and held.attempts == 1
            assert raw.jobs_to_send(utcnow(), unsent_before=utcnow(), resend_before=past) == []  # live again
            other = JobRunner(raw, lambda tenant: mem, name="other", lease_s=600, unsent_grace_s=0)
            assert other.sweep(lambda j: sent.append(j.id)) == 0 and sent == []  # nor by another worker

            gated.open_gate()
            t.join(60)
            assert not t.is_alive() and runner.running == frozenset()
            final = mem.job(job.id)
            assert final.status is JobStatus.DONE and final.attempts == 1, final.error
            assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]

            # a job whose runner is gone (another process's, or this runner after it finished) is still requeued
            job2 = mem.submit_messages(turns("I work at Acme.", prefix="n"), user_id="u1")
            now = utcnow()
            assert raw.claim_job(job2.id, "me", now - timedelta(seconds=10), now - timedelta(seconds=5))
            assert runner.sweep(lambda j: sent.append(j.id)) == 1 and sent == [job2.id]
            assert mem.job(job2.id).status is JobStatus.QUEUED
    finally:
        gated.close()


class _NullQueue:
    """A queue that delivers nothing (the test drives the runner itself)."""

    def send(self, job: object) -> None:
        pass

    def close(self) -> None:
        pass


def test_tenants_are_separate_in_the_store(store_url: str) -> None:
    store = open_store(store_url)
    try:
        a = Memory(store, tenant="acme", embedder=False)
        b = Memory(store, tenant="beta", embedder=False)
        d = Memory(store, embedder=False)  # the default tenant: bare user ids, as before tenants
        a.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        b.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Oslo"}], user_id="u1")
        d.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Rome"}], user_id="u1")
        assert [f.object for f in a.facts(user_id="u1")] == ["Porto"]
        assert [f.object for f in b.facts(user_id="u1")] == ["Oslo"]
        assert [f.object for f in d.facts(user_id="u1")] == ["Rome"]
        assert a.facts(user_id="u1")[0].user_id == "u1"  # rows come back with the tenant's own ids
        assert a.store.users() == b.store.users() == d.store.users() == ["u1"]
        fid = a.facts(user_id="u1")[0].id
        with pytest.raises(NotFoundError):
            b.forget(user_id="u1", fact_id=fid)  # beta cannot delete acme's fact by id
        with pytest.raises(ValidationError, match="x1f"):
            d.facts(user_id="acme\x1fu1")  # no id can spell another tenant's key
        b.forget(user_id="u1", everything=True)
        assert [f.object for f in a.facts(user_id="u1")] == ["Porto"] and b.store.users() == []
        assert a.export(user_id="u1")["tables"]["facts"][0]["user_id"] == "u1"
        with pytest.raises(ValidationError, match="tenant"):
            Memory(store, tenant="no spaces", embedder=False)
    finally:
        store.close()


def test_forgetting_reaches_job_results(tmp_path, llm: FakeModelServer) -> None:
    """A job result quotes facts; forgetting them (or the session, or the user) drops it."""
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False) as mem:
        a = mem.wait(mem.submit_messages(turns("I live in Porto."), user_id="u1", session_id="s1"), timeout=60)
        b = mem.wait(mem.submit_messages(turns("I like tea.", prefix="n"), user_id="u1", session_id="s2"), timeout=60)
        porto = a.result["added"][0]["id"]
        mem.forget(user_id="u1", fact_id=porto)
        assert mem.job(a.id).result is None and mem.job(a.id).status is JobStatus.DONE
        assert mem.job(b.id).result is not None  # quotes another fact: kept
        mem.forget(user_id="u1", session_id="s2")
        with pytest.raises(NotFoundError):
            mem.job(b.id)
        mem.forget(user_id="u1", everything=True)
        assert mem.jobs(user_id="u1") == []


def test_jobs_over_a_redis_broker(tmp_path, llm: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same worker loop over Dramatiq's Redis broker (real Redis at 127.0.0.1:6379)."""
    import threading
    import uuid

    from chronomem.jobs.queue import BrokerQueue
    from chronomem.jobs.worker import run_worker

    url = os.environ.get("CHRONOMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    name = f"chronomem_test_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("CHRONOMEM_QUEUE_NAME", name)
    db = str(tmp_path / "r.db")
    stop = threading.Event()
    worker = threading.Thread(target=run_worker, args=(db, url), daemon=True,
                              kwargs={"stop": stop, "llm": llm.spec, "embedder": False, "lease_s": 5})
    queue = BrokerQueue(url)
    try:
        worker.start()
        with Memory(db, embedder=False, queue=queue, tenant="acme") as mem:
            job = mem.wait(mem.submit_messages(turns("I work at Initech."), user_id="u1"), timeout=120)
            assert job.status is JobStatus.DONE and job.result["added"][0]["object"] == "Initech"
    finally:
        stop.set()
        worker.join(30)
        queue.broker.client.delete(*queue.broker.client.keys(f"dramatiq:{name}*") or ["none"])
        queue.close()


def test_idle_sessions_are_listed_per_tenant(tmp_path) -> None:
    store = open_store(tmp_path / "i.db")
    try:
        a, b = Memory(store, tenant="acme", embedder=False), Memory(store, tenant="beta", embedder=False)
        a.write_pipeline().add(turns("I live in Porto."), user_id="u1", session_id="s1", extract=False)
        later = utcnow() + timedelta(hours=1)
        assert a.store.idle_sessions(later) == [("u1", "s1")]
        assert b.store.idle_sessions(later) == [] and Memory(store, embedder=False).store.idle_sessions(later) == []
    finally:
        store.close()


def test_finished_jobs_are_deleted_once_their_retention_has_passed(store_url: str, llm: FakeModelServer) -> None:
    with Memory(store_url, llm=llm.spec, embedder=False, queue=_NullQueue()) as mem, \
            mem.for_tenant("beta") as beta:
        done = mem.submit_messages(turns("I live in Porto."), user_id="u1")
        waiting = mem.submit_messages(turns("I like tea.", prefix="n"), user_id="u1")
        theirs = beta.submit_messages(turns("I live in Oslo.", prefix="b"), user_id="u1", deliver=False)
        raw = mem.store.inner  # type: ignore[attr-defined]
        runner = JobRunner(raw, lambda tenant: beta if tenant == "beta" else mem, name="me", retention_s=3600)
        assert runner.run(done.id).status is JobStatus.DONE and runner.run(theirs.id).status is JobStatus.DONE
        finished = max(mem.job(done.id).finished_at, beta.job(theirs.id).finished_at)  # type: ignore[type-var]
        assert runner.purge(finished + timedelta(seconds=3599)) == 0  # kept for the retention
        ours_only = JobRunner(raw, lambda tenant: mem, name="ours", tenant=mem.tenant, retention_s=3600)
        assert ours_only.purge(finished + timedelta(seconds=3601)) == 1  # a tenant's runner: its own jobs
        with pytest.raises(NotFoundError):
            mem.job(done.id)
        assert beta.job(theirs.id).status is JobStatus.DONE
        assert runner.purge(finished + timedelta(seconds=3601)) == 1  # the unbound runner: every tenant's
        with pytest.raises(NotFoundError):
            beta.job(theirs.id)
        assert mem.job(waiting.id).status is JobStatus.QUEUED  # never delivered: kept however old
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]  # what a job stored stays
        assert [f.object for f in beta.facts(user_id="u1")] == ["Oslo"]


def test_the_sweep_deletes_expired_jobs_at_most_every_ten_minutes(tmp_path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False, queue=_NullQueue()) as mem:
        first = mem.submit_messages(turns("I live in Porto."), user_id="u1")
        raw = mem.store.inner  # type: ignore[attr-defined]
        runner = JobRunner(raw, lambda tenant: mem, name="me", retention_s=1e-6)
        runner.run(first.id)
        runner.sweep(lambda j: None)
        with pytest.raises(NotFoundError):
            mem.job(first.id)
        second = mem.submit_messages(turns("I like tea.", prefix="n"), user_id="u1")
        runner.run(second.id)
        runner.sweep(lambda j: None)  # within PURGE_EVERY_S of the last purge: nothing deleted
        assert mem.job(second.id).status is JobStatus.DONE
        assert runner.purge() == 1


def test_job_retention_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from chronomem.errors import ConfigError
    from chronomem.jobs.worker import DEFAULT_RETENTION_S, retention_seconds

    monkeypatch.delenv("CHRONOMEM_JOB_RETENTION", raising=False)
    assert retention_seconds() == DEFAULT_RETENTION_S == 7 * 24 * 3600
    monkeypatch.setenv("CHRONOMEM_JOB_RETENTION", "86400")
    assert retention_seconds() == 86400
    monkeypatch.setenv("CHRONOMEM_JOB_RETENTION", "forever")
    with Memory(tmp_path / "m.db", llm=False, embedder=False, queue=_NullQueue()) as mem:
        runner = JobRunner(mem.store.inner, lambda tenant: mem, name="me")  # type: ignore[attr-defined]
        assert runner.retention_s == float("inf") and runner.purge() == 0
    for bad in ("7d", "-1", "0", "nan", "inf"):
        monkeypatch.setenv("CHRONOMEM_JOB_RETENTION", bad)
        with pytest.raises(ConfigError, match="CHRONOMEM_JOB_RETENTION"):
            retention_seconds()
    with pytest.raises(ConfigError, match="retention_s"):
        JobRunner(mem.store.inner, lambda tenant: mem, retention_s=0)  # type: ignore[attr-defined]
    # a memory whose jobs run in process refuses it when opened, before a turn could be stored
    monkeypatch.setenv("CHRONOMEM_JOB_RETENTION", "7d")
    with pytest.raises(ConfigError, match="CHRONOMEM_JOB_RETENTION"):
        Memory(tmp_path / "refused.db", llm=False, embedder=False)
    assert not (tmp_path / "refused.db").exists()


def test_the_job_lease_is_read_from_the_environment_and_a_bad_one_refused(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path) -> None:
    from chronomem.errors import ConfigError
    from chronomem.jobs.worker import lease_seconds

    monkeypatch.delenv("CHRONOMEM_JOB_LEASE", raising=False)
    assert lease_seconds() == 30
    monkeypatch.setenv("CHRONOMEM_JOB_LEASE", "0.2")
    assert lease_seconds() == 1.0  # at least a second: the heartbeat renews it every third of it
    for bad in ("30s", "0", "-5", "nan", "inf", "forever"):
        monkeypatch.setenv("CHRONOMEM_JOB_LEASE", bad)
        with pytest.raises(ConfigError, match="CHRONOMEM_JOB_LEASE"):
            lease_seconds()
    with pytest.raises(ConfigError, match="CHRONOMEM_JOB_LEASE"):  # once silently 30 s
        Memory(tmp_path / "refused.db", llm=False, embedder=False)
    assert not (tmp_path / "refused.db").exists()


def test_the_in_process_job_threads_are_read_from_the_environment_and_a_bad_count_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from chronomem.errors import ConfigError
    from chronomem.jobs.queue import DEFAULT_THREADS, LocalQueue, job_threads

    monkeypatch.delenv("CHRONOMEM_JOB_THREADS", raising=False)
    assert job_threads() == DEFAULT_THREADS == 4
    monkeypatch.setenv("CHRONOMEM_JOB_THREADS", " 2 ")
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as mem:
        queue = mem._jobs.queue
        assert isinstance(queue, LocalQueue) and queue.lanes == 2
    for bad in ("0", "x", "-1", "65", "2.5"):
        monkeypatch.setenv("CHRONOMEM_JOB_THREADS", bad)
        with pytest.raises(ConfigError, match="CHRONOMEM_JOB_THREADS"):
            job_threads()
    # refused when the memory is opened, before a turn could be stored
    monkeypatch.setenv("CHRONOMEM_JOB_THREADS", "0")
    with pytest.raises(ConfigError, match="CHRONOMEM_JOB_THREADS"):
        Memory(tmp_path / "refused.db", llm=False, embedder=False)
    assert not (tmp_path / "refused.db").exists()


def test_a_job_whose_model_cannot_be_built_fails_and_says_so_without_the_path(tmp_path) -> None:
    """A worker's missing GGUF file made the job done, error None, with the operator's path in its warnings;
    the turns stayed pending with nothing to say so."""
    with Memory(tmp_path / "m.db", llm="local:/nonexistent/secret-dir/model.gguf", embedder=False) as mem:
        job = mem.wait(mem.submit_messages(turns("I work at Acme."), user_id="u1", session_id="s1"), timeout=60)
        assert job.status is JobStatus.FAILED and job.error.startswith("ModelUnavailableError: the model")
        shown = [job.error, *job.result["warnings"], *(c["error"] for c in job.result["failed_chunks"])]
        assert not any("secret-dir" in text for text in shown), shown
        assert [m.id for m in mem.store.messages("u1", pending_only=True)] == ["m0"]  # kept for a retry
        direct = mem.add(turns("I work at Globex.", prefix="d"), user_id="u1", session_id="s2")
        assert "secret-dir" in direct.failed_chunks[0].error  # the library's caller gets the reason


class ElsewhereQueue:
    """A broker's worker in another process: it runs each job on a memory of its own (no session buffer:
    an in-process buffer of the submitting process is not its to read)."""

    def __init__(self, path: str, llm: str) -> None:
        self.path, self.llm, self.sent = path, llm, []

    def send(self, job) -> None:  # type: ignore[no-untyped-def]
        self.sent.append(job.id)
        with Memory(self.path, llm=self.llm, embedder=False, buffer=False) as worker:
            JobRunner(worker.store.inner, lambda tenant: worker).run(job.id)  # type: ignore[attr-defined]

    def close(self) -> None:
        pass


def test_a_session_buffered_in_this_process_is_ended_by_a_worker_elsewhere(tmp_path, llm: FakeModelServer) -> None:
    """With an in-process buffer and a broker, the worker ended the session with nothing (it cannot read
    this process's buffer) and the turns died with the process; they are stored first now, for the job."""
    path = str(tmp_path / "m.db")
    queue = ElsewhereQueue(path, llm.spec)
    with Memory(path, llm=llm.spec, embedder=False, buffer=True, queue=queue) as mem:
        mem.submit_messages(turns("I live in Porto."), user_id="u1", session_id="s1")
        assert mem.store.messages("u1") == []  # buffered, in this process
        end = mem.wait(mem.submit_end_session(user_id="u1", session_id="s1"), timeout=30)
        assert end.status is JobStatus.DONE, end.error
        assert [m.id for m in mem.store.messages("u1")] == ["m0"] and mem.store.messages("u1", pending_only=True) == []
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"] and end.result["summary"]
        assert mem._buffer.read("u1", "s1") == []  # noqa: SLF001
