"""Tenant views share their memory's in-process job queue, and a server keeps a bounded number of them.

Each view (``Memory.for_tenant``) used to start an in-process queue of its own on its first job, whose
thread kept the view alive and swept the store for the rest of the process; the server kept every
tenant's view forever.  300 tenants served: 300 job threads and 301 views, revoked keys or not.  The
shared queue runs a few lanes (``CHRONOMEM_JOB_THREADS``, default 4), each tenant on one: a tenant's
jobs stay in order, and one tenant's slow model call holds up only the tenants of its lane.
"""

from __future__ import annotations

import gc
import json
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeModelServer
from fastapi.testclient import TestClient

from chronomem import Memory
from chronomem.jobs import JobStatus
from chronomem.jobs.queue import DEFAULT_THREADS, LocalQueue, lane_of
from chronomem.keys import ApiKey, hash_key, new_key
from chronomem.server import create_app
from chronomem.timeutil import utcnow

WAIT_S = 60.0  # generous bound for a job on the fake model


@pytest.fixture(autouse=True)
def _env(local_service_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared service environment, with the default number of job threads too."""
    monkeypatch.delenv("CHRONOMEM_JOB_THREADS", raising=False)


def turns(text: str) -> list[dict[str, str]]:
    return [{"id": "m0", "speaker": "Maya", "text": text, "timestamp": "2024-03-01T10:00:00Z"}]


def _job_threads() -> int:
    """The in-process queues' lane threads alive: ``chronomem-jobs`` (the sweeping lane), ``chronomem-jobs-N``."""
    return sum(t.name.startswith("chronomem-jobs") and t.is_alive() for t in threading.enumerate())


def _lanes(*tenants: str) -> set[int]:
    """The lanes of a default-sized queue that ``tenants``' jobs go to."""
    return {lane_of(t, DEFAULT_THREADS) for t in tenants}


def _wait_raw(mem: Memory, tenant: str, job_id: str) -> JobStatus:
    """A job's status once finished, read in the raw store (any tenant's)."""
    raw = mem.store.inner  # type: ignore[attr-defined]
    deadline = time.monotonic() + WAIT_S
    while (job := raw.job(tenant, job_id)) is not None and not job.finished and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job is not None
    return job.status


def test_tenant_views_run_their_jobs_on_their_memory_s_few_shared_threads(store_url: str,
                                                                          llm: FakeModelServer) -> None:
    before = _job_threads()
    with Memory(store_url, llm=llm.spec, embedder=False) as mem:
        views = [mem.for_tenant(f"t{i}") for i in range(12)]
        jobs = [v.submit_messages(turns(f"I live in City{i}."), user_id="u1") for i, v in enumerate(views)]
        assert [v.wait(j, timeout=WAIT_S).status for v, j in zip(views, jobs, strict=True)] == [JobStatus.DONE] * 12
        # was one per view: 12; the sweeping lane is the memory's own tenant's
        assert _job_threads() == before + len(_lanes("default", *(f"t{i}" for i in range(12)))) <= before + 4
        for i, v in enumerate(views):  # each job ran on its own tenant's view
            assert [f.object for f in v.facts(user_id="u1")] == [f"City{i}"]
        assert mem.facts(user_id="u1") == []
        assert mem.for_tenant("t3").for_tenant("t4")._jobs.queue is mem._jobs.queue  # a view's view too
        from chronomem.jobs.worker import SharedRunner

        queue = mem._jobs.queue
        assert isinstance(queue, LocalQueue) and isinstance(queue.runner, SharedRunner)
        assert set(queue.runner.scope()) >= {"default", *(f"t{i}" for i in range(12))}
        views[0].close()  # a view's close leaves the shared queue running
        assert all(t is not None and t.is_alive() for t in queue._threads if t is not None)
        assert queue._threads[lane_of("t0", queue.lanes)] is not None
    assert _job_threads() == before  # the memory's close stopped it


def test_a_dropped_view_is_released_and_its_queued_job_still_runs(tmp_path: Path, llm: FakeModelServer) -> None:
    with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False) as mem:
        view = mem.for_tenant("acme")
        done = view.submit_messages(turns("I live in Porto."), user_id="u1")
        assert view.wait(done, timeout=WAIT_S).status is JobStatus.DONE  # its job ran: the queue is started
        later = view.submit_messages(turns("I work at Acme."), user_id="u2", deliver=False)
        gone = weakref.ref(view)
        del view
        gc.collect()
        assert gone() is None  # nothing of the queue keeps a view alive (its thread did)
        queue = mem._jobs.queue
        assert isinstance(queue, LocalQueue) and queue.runner.scope() == ["default"]
        queue.send(later)  # a job of the dropped view's tenant, as it was sent: run on a fresh view
        assert _wait_raw(mem, "acme", later.id) is JobStatus.DONE
        assert [f.object for f in mem.for_tenant("acme").facts(user_id="u2")] == ["Acme"]


def _keys(db: Path, tenants: list[str]) -> dict[str, dict[str, str]]:
    with Memory(db, llm=False, embedder=False) as admin:
        out = {}
        for t in tenants:
            key, prefix = new_key()
            admin.store.inner.insert_api_key(  # type: ignore[attr-defined]
                ApiKey(prefix=prefix, tenant=t, hash=hash_key(key), name="", created_at=utcnow()))
            out[t] = {"Authorization": f"Bearer {key}"}
    return out


def test_a_server_keeps_few_tenant_views_and_at_most_a_job_thread_per_lane(tmp_path: Path,
                                                                             llm: FakeModelServer) -> None:
    db = tmp_path / "m.db"
    tenants = [f"t{i}" for i in range(30)]
    keys = _keys(db, tenants)
    before = _job_threads()
    mem = Memory(db, llm=llm.spec, embedder=False)
    with TestClient(create_app(mem, owns_memory=True)) as client:
        tenancy = client.app.state.tenancy  # type: ignore[attr-defined]
        tenancy.max_views = 8
        for i, t in enumerate(tenants):
            r = client.post("/v1/users/u1/messages?wait=true", headers=keys[t],
                            json={"messages": [{"speaker": "Maya", "text": f"I live in City{i}."}]})
            assert r.status_code == 200 and r.json()["status"] == "done", r.text
            if i == 3:  # a view that left an idle session open after a failed extraction holds work in flight
                tenancy.memory(t)._idle_retried.add(("u1", "s1"))
        assert len(tenancy._memories) <= 8 and "t3" in tenancy._memories  # were 31, one per tenant ever served
        # were 30 (a thread per tenant), then 1 (every tenant behind the others); one per lane: 4
        assert _lanes("default", *tenants) == set(range(DEFAULT_THREADS))  # these tenants use every lane
        assert _job_threads() == before + DEFAULT_THREADS
        for i, t in enumerate(tenants):  # a tenant whose view was dropped gets a new one, sharing its data
            r = client.get("/v1/users/u1/facts", headers=keys[t])
            assert [f["object"] for f in r.json()["items"]] == [f"City{i}"], r.text
        assert len(tenancy._memories) <= 8
    assert _job_threads() == before


def test_a_tenant_waiting_on_its_model_holds_up_no_tenant_of_another_lane(tmp_path: Path) -> None:
    """One queue thread for every tenant made each wait for any other's slow (say 20 s remote) model call."""
    gated = FakeModelServer(gate_word="GATEWORD")
    slow, other = "acme", "b"
    assert lane_of(slow, DEFAULT_THREADS) != lane_of(other, DEFAULT_THREADS)  # lanes 2 and 1
    before = _job_threads()
    try:
        with Memory(tmp_path / "m.db", llm=gated.spec, embedder=False) as mem:
            queue = mem._jobs.queue
            assert isinstance(queue, LocalQueue) and queue.lanes == DEFAULT_THREADS
            a, b = mem.for_tenant(slow), mem.for_tenant(other)
            assert _job_threads() == before  # no job yet: no thread
            try:
                stuck = a.submit_messages(turns("I live in Porto. GATEWORD"), user_id="u1")
                assert gated.gate_seen.wait(WAIT_S)  # acme's job is inside its model call
                assert _job_threads() == before + len(_lanes("default", slow))  # the sweeping lane and acme's
                done = b.wait(b.submit_messages(turns("I live in Lisbon."), user_id="u1"), timeout=10)
                assert done.status is JobStatus.DONE and [f.object for f in b.facts(user_id="u1")] == ["Lisbon"]
                assert a.job(stuck.id, user_id="u1").status is JobStatus.RUNNING  # still waiting on its model
                assert _job_threads() == before + len(_lanes("default", slow, other))
            finally:
                gated.open_gate()
            assert a.wait(stuck, timeout=WAIT_S).status is JobStatus.DONE
        assert _job_threads() == before
    finally:
        gated.close()


def test_one_tenant_s_jobs_never_overlap_while_another_lane_runs_beside_them(tmp_path: Path) -> None:
    """Two jobs of one tenant at once would race on its users' facts: a tenant's jobs keep to one thread."""
    labels = ("Aone", "Atwo", "Athree", "Bone")  # the city each job's turn names
    spans: list[tuple[str, float, float]] = []  # (label, start, end) of each model call
    lock = threading.Lock()

    def record(body: dict[str, Any]) -> None:
        text = json.dumps(body.get("messages", []))
        label = next((w for w in labels if w in text), None)
        if label is not None:
            start = time.monotonic()
            time.sleep(0.4)  # long enough for a second job of the tenant to start, were it allowed to
            with lock:
                spans.append((label, start, time.monotonic()))
        return None  # the default reply

    llm = FakeModelServer(inject=record)
    busy, other = "acme", "b"
    assert lane_of(busy, DEFAULT_THREADS) != lane_of(other, DEFAULT_THREADS)
    try:
        with Memory(tmp_path / "m.db", llm=llm.spec, embedder=False) as mem:
            a, b = mem.for_tenant(busy), mem.for_tenant(other)
            # three users: nothing of the store orders their jobs, only the tenant's lane
            jobs = [a.submit_messages(turns(f"I live in {city}."), user_id=f"u{i}")
                    for i, city in enumerate(labels[:3])]
            late = b.submit_messages(turns("I live in Bone."), user_id="u1")
            assert [a.wait(j, timeout=WAIT_S).status for j in jobs] == [JobStatus.DONE] * 3
            assert b.wait(late, timeout=WAIT_S).status is JobStatus.DONE
    finally:
        llm.close()
    ours = sorted((start, end, label) for label, start, end in spans if label != "Bone")
    assert [label for _, _, label in ours] == list(labels[:3])  # in the order they were submitted
    assert all(end <= nxt for (_, end, _), (nxt, _, _) in zip(ours, ours[1:])), ours  # one at a time
    theirs = [(start, end) for label, start, end in spans if label == "Bone"]
    # b's job ran beside them (on one thread for all it waited for all three): the lanes are what kept them apart
    assert any(s < e2 and s2 < e for s, e in theirs for s2, e2, _ in ours), (theirs, ours)


def test_a_broker_worker_keeps_its_last_used_tenant_views_only(tmp_path: Path) -> None:
    """run_worker kept one view per tenant it ever ran a job of, for the life of the worker."""
    from chronomem.jobs.worker import TenantViews

    with Memory(tmp_path / "w.db", llm=False, embedder=False) as base:
        views = TenantViews(base, max_views=8)
        held = views.get("t0")
        for i in range(1, 40):
            views.get(f"t{i}")
        assert len(views) == 8 and views.get(base.tenant) is base
        assert views.get("t39") is views.get("t39") and views.get("t0") is not held  # t0 was dropped, made again
        held.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u")
        assert [f.object for f in views.get("t0").facts(user_id="u")] == ["Porto"]  # the same tenant's rows
        views.close()
        assert base.facts(user_id="u") == []  # the base memory (another tenant) stays open and apart
