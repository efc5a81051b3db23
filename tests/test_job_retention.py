"""A finished job is deleted once ``CHRONOMEM_JOB_RETENTION`` has passed, whatever path recorded it.

The in-process queue's sweep is what deletes expired jobs, and it starts on the first submit.  A
buffered memory's submit (and a submit whose turns were all known) records a job finished at once
and never sends it: those used to skip the start, so with a session buffer nothing ever started the
queue and the jobs table kept every submit of the process (300 POSTs → 300 rows, none deleted).

Jobs are looked up in the raw store here: reading them through the memory (``job``, ``jobs``) would
start the queue itself and hide the defect.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fake_openai import FakeModelServer
from fastapi.testclient import TestClient
from test_buffer import redis_url  # noqa: F401 - the Redis fixture

from chronomem import Memory
from chronomem.jobs import JobStatus, worker
from chronomem.server import create_app
from chronomem.summarize.buffer import RedisSessionBuffer

GONE_WITHIN_S = 15.0  # generous: with the settings below a finished job goes within ~2 s


@pytest.fixture(autouse=True)
def _fast_purge(local_service_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep a finished job 1 s; the idle queue sweeps every 0.5 s (lease / 2) and may purge on each sweep."""
    monkeypatch.setenv("CHRONOMEM_JOB_RETENTION", "1")
    monkeypatch.setenv("CHRONOMEM_JOB_LEASE", "1")
    monkeypatch.setattr(worker, "PURGE_EVERY_S", 0.5)


@pytest.fixture
def redis_buffer(redis_url: str) -> Iterator[RedisSessionBuffer]:  # noqa: F811
    """A Redis session buffer under a key root of this test's own, its keys deleted after."""
    client = redis.Redis.from_url(redis_url)
    root = f"cm-test-{uuid.uuid4().hex[:10]}:"
    yield RedisSessionBuffer(client, prefix=root)
    keys = list(client.scan_iter(match=root + "*", count=1000))
    if keys:
        client.delete(*keys)


def turns(*texts: str, prefix: str = "m") -> list[dict[str, str]]:
    return [{"id": f"{prefix}{i}", "speaker": "Maya", "text": t, "timestamp": "2024-03-01T10:00:00Z"}
            for i, t in enumerate(texts)]


def _stored(mem: Memory, job_ids: list[str]) -> list[str]:
    """Those of ``job_ids`` still in the jobs table, read past the memory (which would start its queue)."""
    raw = mem.store.inner  # type: ignore[attr-defined]
    return [j for j in job_ids if raw.job(mem.tenant, j) is not None]


def _wait_gone(mem: Memory, job_ids: list[str]) -> list[str]:
    deadline = time.monotonic() + GONE_WITHIN_S
    while (left := _stored(mem, job_ids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _job_threads() -> int:
    return sum(t.name == "chronomem-jobs" and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("buffer", ["memory", "redis"])
def test_a_buffered_submit_s_finished_job_is_deleted_after_its_retention(
        tmp_path: Path, buffer: str, llm: FakeModelServer, request: pytest.FixtureRequest) -> None:
    given = True if buffer == "memory" else request.getfixturevalue("redis_buffer")
    threads = _job_threads()
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False, buffer=given) as mem:
        jobs = [mem.submit_messages(turns(f"I like tea number {i}.", prefix=f"s{i}-"), user_id="u1",
                                    session_id=f"s{i}") for i in range(5)]
        assert {j.status for j in jobs} == {JobStatus.DONE}  # buffered: finished at once, never sent
        assert len(_stored(mem, [j.id for j in jobs])) == 5
        assert _job_threads() == threads + 1  # the submit started the in-process queue (and its sweep)
        for i in range(5):
            mem.end_session(user_id="u1", session_id=f"s{i}")  # sessions end without jobs: no start there
        assert _wait_gone(mem, [j.id for j in jobs]) == []
        assert len(mem.store.messages("u1")) == 5  # what the jobs stored stays
    assert _job_threads() == threads  # closing the memory stopped it


def test_a_submit_of_known_turns_is_finished_at_once_and_still_deleted(tmp_path: Path,
                                                                       llm: FakeModelServer) -> None:
    db = tmp_path / "m.db"
    with Memory(db, llm=llm.spec, embedder=False) as first:
        first.add(turns("I live in Porto."), user_id="u1", session_id="s1")  # extracted: no job
    with Memory(db, llm=llm.spec, embedder=False) as mem:
        again = mem.submit_messages(turns("I live in Porto."), user_id="u1", session_id="s1")
        assert again.status is JobStatus.DONE and again.result["messages_skipped"] == 1
        assert _wait_gone(mem, [again.id]) == []
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]


def test_buffered_posts_then_an_idle_sweep_leave_no_job_behind(tmp_path: Path, llm: FakeModelServer) -> None:
    """The REST path of the report: POSTs to a buffered memory, sessions ended by the idle sweep."""
    mem = Memory(tmp_path / "m.db", llm=llm.spec, embedder=False, buffer=True)
    with TestClient(create_app(mem, owns_memory=True)) as client:
        ids = []
        for i in range(20):
            turn = {"speaker": "Maya", "text": f"I like thing{i}.", "id": f"m{i}"}
            r = client.post(f"/v1/users/u{i % 4}/messages", json={"session_id": f"s{i // 4}", "messages": [turn]})
            assert r.status_code == 200 and r.json()["status"] == "done", r.text
            ids.append(r.json()["id"])
        sweep = mem.end_idle_sessions(idle_seconds=0.001, now="2100-01-01")
        assert len(sweep.ended) == 20 and not sweep.failed
        assert _wait_gone(mem, ids) == []
