"""Redelivery of queued jobs whose delivery went wrong: a store outage while claiming, a message the
broker dropped or a dead Redis consumer holds, an in-process queue that must not take a broker's jobs,
a worker whose first sweep fails, and what a worker says when a job it ran was forgotten meanwhile.

Real stores (``store_url``: SQLite and PostgreSQL), real Redis (db 13, flushed before and after) and
Dramatiq workers on threads; the model is the HTTP server of ``fake_openai.py``.  Bounds (backoff,
heartbeat, resend) are shrunk through the module constants and runner arguments, so each test takes seconds.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeModelServer
from test_jobs import _NullQueue, turns  # a queue that loses every message: stored, marked sent
from test_worker_kill import wait_for

from chronomem import Memory
from chronomem.errors import StoreError
from chronomem.jobs import Job, JobStatus
from chronomem.jobs import queue as jobqueue
from chronomem.jobs import worker as jobworker
from chronomem.jobs.model import IN_PROCESS
from chronomem.jobs.queue import BrokerQueue
from chronomem.jobs.worker import JobRunner, run_worker
from chronomem.store.sql import SQLStore
from chronomem.timeutil import utcnow

REDIS_URL = os.environ.get("CHRONOMEM_TEST_REDIS_DB13_URL", "redis://127.0.0.1:6379/13")


pytestmark = pytest.mark.usefixtures("local_service_env")  # the model key; no queue, Redis or server key


@pytest.fixture
def redis_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh queue name on Redis db 13, which is flushed before and after the test."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    name = f"chronomem_redeliver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("CHRONOMEM_QUEUE_NAME", name)
    yield name
    client.flushdb()
    client.close()


class _Worker:
    """``run_worker`` on a thread (as ``chronomem worker`` runs it), stopped on exit."""

    def __init__(self, db: str, llm: FakeModelServer, **kw: Any) -> None:
        self.stop = threading.Event()
        self.error: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(db, llm.spec), kwargs=kw, daemon=True)

    def _run(self, db: str, spec: str, **kw: Any) -> None:
        try:
            run_worker(db, REDIS_URL, stop=self.stop, llm=spec, embedder=False, **kw)
        except BaseException as e:  # noqa: BLE001 - the test asserts on it
            self.error.append(e)

    def __enter__(self) -> _Worker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


def _store_down(monkeypatch: pytest.MonkeyPatch, down: Callable[[int], bool]) -> list[int]:
    """Make claiming a job raise StoreError (the jobs table unreachable) while ``down(call number)``."""
    calls: list[int] = []
    claim = SQLStore.claim_job

    def flaky(self: SQLStore, *args: Any, **kw: Any) -> Job | None:
        calls.append(len(calls))
        if down(len(calls)):
            raise StoreError("relation \"jobs\" does not exist")
        return claim(self, *args, **kw)

    monkeypatch.setattr(SQLStore, "claim_job", flaky)
    return calls


# -- A: a store outage while a delivered job is claimed ---------------------------------------------------

def test_a_store_outage_while_claiming_is_ridden_out_by_dramatiq_retries(
        tmp_path: Path, llm: FakeModelServer, redis_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The delivery is retried with backoff past Dramatiq's old 3 retries, until the store answers."""
    monkeypatch.setattr(jobworker, "RETRY_MIN_BACKOFF_MS", 20)
    monkeypatch.setattr(jobworker, "RETRY_MAX_BACKOFF_MS", 100)
    calls = _store_down(monkeypatch, lambda n: n <= 6)  # the first 6 claims fail: 3 retries were too few
    db = str(tmp_path / "a.db")
    queue = BrokerQueue(REDIS_URL)
    try:
        with Memory(db, embedder=False, queue=queue) as mem, _Worker(db, llm, lease_s=5, resend_s=3600):
            job = mem.submit_messages(turns("I work at Initech."), user_id="u1")
            done = mem.wait(job, timeout=60)  # resend_s is an hour: only the retries can have done it
            assert done.status is JobStatus.DONE and done.attempts == 1
            assert len(calls) == 7 and [f.object for f in mem.facts(user_id="u1")] == ["Initech"]
    finally:
        queue.close()


def test_retries_wait_out_a_store_outage_but_not_other_errors() -> None:
    from chronomem.jobs.worker import OTHER_RETRIES, STORE_RETRIES, retry_delivery

    def wrapped(e: BaseException) -> BaseException:  # the actor raises dramatiq.Retry from the StoreError
        outer = RuntimeError("retry")
        outer.__cause__ = e
        return outer

    assert STORE_RETRIES >= 20 and OTHER_RETRIES == 3
    assert retry_delivery(STORE_RETRIES - 1, StoreError("down")) and retry_delivery(10, wrapped(StoreError("x")))
    assert not retry_delivery(STORE_RETRIES, StoreError("down"))
    assert retry_delivery(2, ValueError("bug")) and not retry_delivery(3, ValueError("bug"))


def test_a_dead_lettered_job_is_sent_again_by_the_sweep_once_the_store_is_back(
        tmp_path: Path, llm: FakeModelServer, redis_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The outage outlasts the retries: Dramatiq dead-letters the message; the sweep re-sends the job."""
    import redis

    monkeypatch.setattr(jobworker, "STORE_RETRIES", 1)
    monkeypatch.setattr(jobworker, "RETRY_MIN_BACKOFF_MS", 20)
    outage = threading.Event()
    outage.set()
    _store_down(monkeypatch, lambda n: outage.is_set())
    db = str(tmp_path / "d.db")
    dead_letters = f"dramatiq:{redis_queue}.XQ"
    client = redis.Redis.from_url(REDIS_URL)
    queue = BrokerQueue(REDIS_URL)
    try:
        with Memory(db, embedder=False, queue=queue) as mem, _Worker(db, llm, lease_s=1, resend_s=1):
            job = mem.submit_messages(turns("I live in Porto."), user_id="u1")
            wait_for(lambda: client.zcard(dead_letters) > 0, 30, "the message to be dead-lettered")
            assert mem.job(job.id).status is JobStatus.QUEUED
            outage.clear()  # the store is back; the message is gone from the queue
            done = mem.wait(job, timeout=30)
            assert done.status is JobStatus.DONE and [f.object for f in mem.facts(user_id="u1")] == ["Porto"]
    finally:
        queue.close()
        client.close()


def test_a_job_still_queued_long_after_its_send_is_sent_again_once_per_bound(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep re-sends a job whose message may be lost, records the send first (one of several sweeping
    workers sends it) and waits twice as long each time, so a long backlog is not flooded with copies."""
    clock: list[datetime] = []
    monkeypatch.setattr(jobworker, "utcnow", lambda: clock[0])
    with Memory(store_url, llm=False, embedder=False, queue=_NullQueue()) as mem:
        job = mem.submit_messages(turns("I live in Porto."), user_id="u1")  # "sent"; the message is lost
        raw = mem.store.inner  # type: ignore[attr-defined]
        c = mem.job(job.id).created_at
        one, two = (JobRunner(raw, lambda tenant: mem, name=n, resend_s=60) for n in ("w1", "w2"))
        sent: list[tuple[str, str]] = []

        def sweep_at(runner: JobRunner, seconds: float) -> int:
            clock[:] = [c + timedelta(seconds=seconds)]
            return runner.sweep(lambda j: sent.append((runner.name, j.id)))

        assert sweep_at(one, 30) == 0  # within the bound
        assert sweep_at(one, 61) == 1 and mem.job(job.id).sent_at == c + timedelta(seconds=61)
        assert sweep_at(two, 61) == 0  # the new send is recorded: no second copy from another worker
        assert sweep_at(two, 121) == 0  # a bound after the resend, but it had waited 61 s before it
        assert sweep_at(two, 123) == 1  # waited as long again: sent again
        assert sweep_at(one, 240) == 0 and sweep_at(one, 247) == 1
        assert sent == [("w1", job.id), ("w2", job.id), ("w1", job.id)]

        # of two sweeps that saw the same last send, only the first records (and so sends) the new one
        last = mem.job(job.id).sent_at
        assert raw.swap_job_send(job.id, last, c + timedelta(seconds=500), None)
        assert not raw.swap_job_send(job.id, last, c + timedelta(seconds=500), None)

        # a send that fails is undone: the next sweep tries again at once, not a whole bound later
        def broken(j: Job) -> None:
            raise ConnectionError("broker down")

        clock[:] = [c + timedelta(seconds=1100)]
        assert one.sweep(broken) == 0 and mem.job(job.id).sent_at == c + timedelta(seconds=500)
        assert sweep_at(one, 1101) == 1

        at = c + timedelta(seconds=1102)
        assert raw.claim_job(job.id, "w3", at, at + timedelta(seconds=30))
        assert raw.finish_job(job.id, "w3", JobStatus.DONE, at, {}, None)
        assert sweep_at(one, 10_000) == 0  # a finished job is never sent again


def test_a_job_requeued_after_its_worker_died_is_resent_a_bound_after_that_not_after_its_whole_age(
        store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The doubling counts from the job's first start: a job that waited long before it ran, whose worker
    died, and whose new message is lost again, is re-sent one bound later."""
    clock: list[datetime] = []
    monkeypatch.setattr(jobworker, "utcnow", lambda: clock[0])
    with Memory(store_url, llm=False, embedder=False, queue=_NullQueue()) as mem:
        job = mem.submit_messages(turns("I live in Porto."), user_id="u1")
        raw = mem.store.inner  # type: ignore[attr-defined]
        c = mem.job(job.id).created_at
        runner = JobRunner(raw, lambda tenant: mem, name="w1", resend_s=60)
        start = c + timedelta(seconds=1000)  # an hour-long backlog, shortened: it ran 1000 s after its submit
        assert raw.claim_job(job.id, "dead", start, start + timedelta(seconds=10))
        clock[:] = [c + timedelta(seconds=1011)]
        assert runner.sweep(lambda j: None) == 1  # its lease ran out: requeued and sent
        clock[:] = [c + timedelta(seconds=1011 + 59)]
        assert runner.sweep(lambda j: None) == 0
        clock[:] = [c + timedelta(seconds=1011 + 61)]
        assert runner.sweep(lambda j: None) == 1  # not 1000 s more: it waited 11 s since it started


# -- B: a Redis consumer killed with prefetched messages -------------------------------------------------

def test_messages_a_dead_redis_consumer_prefetched_come_back_after_the_heartbeat_timeout(
        tmp_path: Path, llm: FakeModelServer, redis_queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGKILLed worker leaves its prefetched messages unacked in Redis; the survivors' queue maintenance,
    run often enough (chronomem's maintenance_chance), returns them soon after the heartbeat timeout."""
    from dramatiq.brokers.redis import RedisBroker

    monkeypatch.setattr(jobqueue, "REDIS_HEARTBEAT_TIMEOUT_MS", 1000)
    monkeypatch.setattr(jobqueue, "REDIS_MAINTENANCE_CHANCE", 500_000)  # the test's seconds, not a minute
    assert jobqueue.make_broker(REDIS_URL).heartbeat_timeout == 1000
    db = str(tmp_path / "b.db")
    queue = BrokerQueue(REDIS_URL)
    try:
        with Memory(db, embedder=False, queue=queue) as mem:
            jobs = [mem.submit_messages(turns(f"I like thing{i}.", prefix=f"k{i}"), user_id="u1") for i in range(3)]
            killed = RedisBroker(url=REDIS_URL)  # a worker that fetched the messages, then died
            killed.declare_queue(redis_queue)
            consumer = killed.consume(redis_queue, prefetch=10)
            assert next(consumer) is not None and consumer.outstanding_message_count == 3
            killed.close()  # never acks
            time.sleep(1.2)  # its heartbeat is stale
            # resend_s is an hour: only Dramatiq's maintenance can bring the messages back
            with _Worker(db, llm, lease_s=5, resend_s=3600):
                wait_for(lambda: all(mem.job(j.id).finished for j in jobs), 30, "the prefetched jobs to run")
            assert [mem.job(j.id).status for j in jobs] == [JobStatus.DONE] * 3
            assert sorted(f.object for f in mem.facts(user_id="u1")) == ["thing0", "thing1", "thing2"]
    finally:
        queue.close()


def test_redis_maintenance_runs_often_enough_to_meet_the_heartbeat_timeout() -> None:
    broker = jobqueue.make_broker(REDIS_URL)
    try:
        assert broker.heartbeat_timeout == 60_000  # the README's "about a minute"
        # an idle worker fetches about twice a second per queue: maintenance within ~10 s, not ~10 minutes
        assert broker.maintenance_chance / 1_000_000 >= 1 / 20
    finally:
        broker.close()


# -- D: an in-process queue takes only jobs no broker holds ----------------------------------------------

def test_an_in_process_queue_never_runs_jobs_sent_to_a_broker(tmp_path: Path, llm: FakeModelServer) -> None:
    db = tmp_path / "d.db"
    with Memory(db, llm=False, embedder=False, queue=_NullQueue()) as brokered:  # sent to "a broker"
        theirs = [brokered.submit_messages(turns(f"I like thing{i}.", prefix=f"s{i}"), user_id="u1") for i in range(2)]
    with Memory(db, llm=llm.spec, embedder=False) as local:  # no broker configured: the in-process queue
        mine = local.wait(local.submit_messages(turns("I like tea.", prefix="o"), user_id="u2"), timeout=60)
        assert mine.status is JobStatus.DONE
        time.sleep(0.5)  # the queue's first sweep ran before the submit; give it time to misbehave
        assert [(local.job(j.id).status, local.job(j.id).attempts) for j in theirs] == [(JobStatus.QUEUED, 0)] * 2
        raw = local.store.inner  # type: ignore[attr-defined]
        # nor later: however old their send, an in-process runner's sweep leaves a broker's jobs alone …
        runner = JobRunner(raw, lambda tenant: local, name=IN_PROCESS + "x", tenant=local.tenant, resend_s=0.001,
                           unsent_grace_s=0)
        time.sleep(0.01)
        assert runner.sweep(lambda j: None, sent_before=utcnow()) == 0
        # … and a running job of a broker's worker whose lease ran out: the broker redelivers it
        now = utcnow()
        assert raw.claim_job(theirs[0].id, "host:1:abc", now - timedelta(seconds=10), now - timedelta(seconds=5))
        assert runner.sweep(lambda j: None, sent_before=utcnow()) == 0
        # while a broker's worker takes both kinds, and an in-process queue's orphans too
        left = JobRunner(raw, lambda tenant: local, name=IN_PROCESS + "gone", tenant=local.tenant)
        orphan = local.submit_messages(turns("I like jam.", prefix="j"), user_id="u3", deliver=False)
        assert raw.swap_job_send(orphan.id, None, utcnow(), left.name)
        assert runner.sweep(lambda j: None, sent_before=utcnow()) == 1
        broker_worker = JobRunner(raw, lambda tenant: local, name="w", resend_s=0.001)
        time.sleep(0.1)  # the orphan's last send is older than its age at that send (see jobs_to_send)
        assert broker_worker.sweep(lambda j: None) == 3


# -- E: a worker's first sweep, and a job forgotten while it ran -----------------------------------------

def test_a_worker_survives_a_failing_first_sweep(tmp_path: Path, llm: FakeModelServer, redis_queue: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sweeps: list[int] = []
    sweep = JobRunner.sweep

    def flaky(self: JobRunner, *args: Any, **kw: Any) -> int:
        sweeps.append(1)
        if len(sweeps) == 1:
            raise StoreError("the store is briefly unreachable")
        return sweep(self, *args, **kw)

    monkeypatch.setattr(JobRunner, "sweep", flaky)
    db = str(tmp_path / "e.db")
    queue = BrokerQueue(REDIS_URL)
    try:
        with Memory(db, embedder=False, queue=queue) as mem, _Worker(db, llm, lease_s=1) as w:
            job = mem.submit_messages(turns("I live in Oslo."), user_id="u1")
            assert mem.wait(job, timeout=30).status is JobStatus.DONE
            wait_for(lambda: len(sweeps) >= 3, 10, "later sweeps")
            assert w.thread.is_alive() and w.error == []
    finally:
        queue.close()


def test_a_job_forgotten_while_it_ran_is_logged_as_such(store_url: str, caplog: pytest.LogCaptureFixture) -> None:
    gated = FakeModelServer(gate_word="Berlin")
    try:
        with Memory(store_url, llm=gated.spec, embedder=False, queue=_NullQueue()) as mem:
            job = mem.submit_messages(turns("I live in Berlin."), user_id="u1", session_id="s1")
            runner = JobRunner(mem.store.inner, lambda tenant: mem, name="me")  # type: ignore[attr-defined]
            ran: list[Job | None] = []
            t = threading.Thread(target=lambda: ran.append(runner.run(job.id)))
            with caplog.at_level(logging.INFO, logger="chronomem.jobs.worker"):
                t.start()
                assert gated.gate_seen.wait(60)
                mem.forget(user_id="u1", session_id="s1")  # deletes the session's job as it runs
                gated.open_gate()
                t.join(60)
            assert not t.is_alive() and ran and ran[0] is not None
            said = [r.getMessage() for r in caplog.records if r.name == "chronomem.jobs.worker"]
            assert any(f"job {job.id} was deleted while it ran" in m for m in said), said
            assert not any("lease" in m for m in said), said  # nobody lost a lease, nobody redoes it
    finally:
        gated.close()


# C: jobs a closed process left queued run when the next process first uses the memory's jobs; opening a
# memory alone starts no thread
def one_turn(text: str, mid: str) -> list[dict[str, str]]:
    return [{"id": mid, "speaker": "Maya", "text": text, "timestamp": "2024-03-01T10:00:00Z"}]


def test_jobs_a_closed_process_left_queued_run_when_the_next_process_waits(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CHRONOMEM_LLM_API_KEY", "test")
    monkeypatch.delenv("CHRONOMEM_QUEUE_URL", raising=False)
    srv = FakeModelServer(gate_word="thing0")
    try:
        mem = Memory(tmp_path / "r.db", llm=srv.spec, embedder=False)
        jobs = [mem.submit_messages(one_turn(f"I like thing{i}.", f"r{i}"), user_id="u1", session_id="s1")
                for i in range(3)]
        assert srv.gate_seen.wait(30)  # the first job is in its model call, the others wait behind it
        closer = threading.Thread(target=mem.close)
        closer.start()
        time.sleep(0.2)
        srv.open_gate()
        closer.join(30)
        before = {t.name for t in threading.enumerate()}
        with Memory(tmp_path / "r.db", llm=srv.spec, embedder=False) as again:
            assert {t.name for t in threading.enumerate()} - before == set()  # opening starts no thread
            assert again.job(jobs[-1].id).status is JobStatus.QUEUED
            done = again.wait(jobs[-1], timeout=10)  # the first job use starts the in-process queue
            assert done.status is JobStatus.DONE
            assert all(again.job(j.id).status is JobStatus.DONE for j in jobs)
    finally:
        srv.close()
