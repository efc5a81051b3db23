"""``add`` and ``end_session`` under kill -9 and under racing writers (issue #20), on SQLite and PostgreSQL.

The model is :class:`fake_openai.FakeModelServer`, reached over HTTP by real child processes.

kill -9: a child ingests four sessions (``add`` then ``end_session`` each) and is killed with
SIGKILL in the middle of every model call in turn (the server kills it while the request is in
flight) and at a few wall-clock instants.  Running the same script again (re-adding the same
message ids is a no-op; ``end_session`` extracts what is pending and recomputes the summary)
must end in exactly the memory an uninterrupted run writes: same facts, intervals,
confidences, turns and summaries — nothing lost, nothing doubled, nothing half-written.

Racing writers: four processes add and end their own sessions for one user at the same time;
afterwards every turn is stored and extracted once, every session has its summary, the summary
chain has no gap or duplicate, and single-valued intervals do not overlap.

(The queue worker's kill -9 test belongs to the service: see issue #19.)
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_openai import FakeModelServer, Reply

from chronomem import Memory
from chronomem.temporal import overlaps

USER = "maya"
SESSIONS = 2
CHILD = r"""
import sys
from chronomem import Memory
url, spec, first, count, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
with Memory(url, llm=spec, embedder=False) as mem:
    for i in range(first, first + count):
        sid = f"{tag}s{i}"
        turns = [{"id": f"{sid}-1", "speaker": "Maya", "text": f"I live in City{i} now."},
                 {"id": f"{sid}-2", "speaker": "Maya", "text": f"And I like tea{i}."},
                 {"id": f"{sid}-3", "speaker": "Sam", "text": f"I work at Shop{i}."}]
        mem.add(turns, user_id="maya", session_id=sid, timestamp=f"2023-0{1 + i % 9}-1{i % 10}T10:00:00Z")
        mem.end_session(user_id="maya", session_id=sid)
print("done")
"""


def run_child(url: str, spec: str, first: int = 0, count: int = SESSIONS, tag: str = "") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, url, spec, str(first), str(count), tag],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def snapshot(url: str) -> dict[str, Any]:
    """The memory's content without ids and wall-clock times (which differ between runs)."""
    with Memory(url, embedder=False) as mem:
        facts = sorted((f.subject, f.relation, f.object, f.valid_from, f.valid_to, f.confidence, f.superseded,
                        tuple(sorted(f.source_ids))) for f in mem.history(user_id=USER))
        turns = sorted((m.id, m.session_id, m.text, m.extracted) for m in mem.store.messages(USER))
        sums = [(c.seq, c.session_id, c.memory) for c in mem.store.checkpoints(USER)]
        sessions = sorted((s.id, s.ended_at is not None) for s in mem.store.sessions(USER))
    return {"facts": facts, "turns": turns, "summaries": sums, "sessions": sessions}


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


class Killer:
    """Kills the registered child with SIGKILL when the server receives its n-th request."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.at: int | None = None
        self.seen = 0

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        self.seen += 1
        if self.pid is not None and self.seen == self.at:
            os.kill(self.pid, signal.SIGKILL)
            time.sleep(0.2)
        return None


@pytest.fixture
def killer() -> Iterator[tuple[Killer, FakeModelServer]]:
    k = Killer()
    srv = FakeModelServer(inject=k)
    yield k, srv
    srv.close()


def test_kill_9_during_add_and_end_session_loses_and_doubles_nothing(
        kind: str, url_factory: Callable[[str], str], killer: tuple[Killer, FakeModelServer]) -> None:
    k, srv = killer
    reference = url_factory(kind)
    assert run_child(reference, srv.spec).wait(timeout=300) == 0
    expected = snapshot(reference)
    calls = k.seen  # model calls of one uninterrupted run (extraction + summary per session)
    assert calls == 2 * SESSIONS and len(expected["facts"]) == 3 * SESSIONS
    rng = random.Random(20)
    trials = [("call", n) for n in range(1, calls + 1)] + [("time", rng.uniform(0.3, 2.0)) for _ in range(2)]
    killed = 0
    for how, when in trials:
        url = url_factory(kind)
        k.seen, k.at = 0, (when if how == "call" else None)
        child = run_child(url, srv.spec)
        k.pid = child.pid
        if how == "time":
            try:
                child.wait(timeout=when)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
        rc = child.wait(timeout=300)
        killed += rc == -signal.SIGKILL
        k.pid = None
        again = run_child(url, srv.spec)  # the recovery: run the same thing again
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err[-2000:]
        assert snapshot(url) == expected, (how, when)
    assert killed >= calls  # every in-flight kill really killed the writer


RACERS = 4


def test_racing_add_and_end_session_writers(kind: str, url_factory: Callable[[str], str]) -> None:
    srv = FakeModelServer()
    try:
        url = url_factory(kind)
        Memory(url, embedder=False).close()  # migrate once up front
        procs = [run_child(url, srv.spec, first=p * 2, count=2, tag=f"w{p}") for p in range(RACERS)]
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-2000:]
    finally:
        srv.close()
    snap = snapshot(url)
    sessions = [f"w{p}s{i}" for p in range(RACERS) for i in (p * 2, p * 2 + 1)]
    assert len(snap["turns"]) == 3 * len(sessions) and all(t[3] for t in snap["turns"])  # stored, extracted
    assert [s for s, ended in snap["sessions"] if ended] == sorted(sessions)
    assert sorted(s for _, s, _ in snap["summaries"]) == sorted(sessions)  # one summary per session
    assert [seq for seq, _, _ in snap["summaries"]] == list(range(1, len(sessions) + 1))  # no gap, no twin
    with Memory(url, embedder=False) as mem:
        assert len(mem.history(user_id=USER, relation="likes")) == len(sessions)
        for who in ("Maya", "Sam"):
            rel = "lives_in" if who == "Maya" else "works_at"
            live = [f for f in mem.history(user_id=USER, subject=who, relation=rel) if not f.superseded]
            assert len(live) == len(sessions)  # every session's value kept
            for a, b in itertools.combinations(live, 2):
                assert not overlaps(a.valid_from, a.valid_to, b.valid_from, b.valid_to), (a, b)
