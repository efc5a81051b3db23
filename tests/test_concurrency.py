"""Racing writers: several real processes add single-valued facts for the same user at once.

Each store must serialise a user's writers (SQLite: BEGIN IMMEDIATE; PostgreSQL: a
per-user advisory transaction lock), so afterwards the interval history is
consistent — never two stable values of a single-valued relation valid at the same
instant — and no write is lost.  Runs on SQLite and on both PostgreSQL servers.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from datetime import datetime, timedelta, timezone

import pytest

from chronomem import Memory

USER = "racer"
PROCS = 4
PER_PROC = 12
BASE = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _start(p: int, i: int) -> datetime:
    return BASE + timedelta(days=10 * (i * PROCS + p))  # distinct across all writers


def _writer(url: str, p: int, barrier: mp.synchronize.Barrier, errors: mp.Queue) -> None:  # type: ignore[name-defined]
    try:
        order = list(range(PER_PROC))
        random.Random(p).shuffle(order)  # every writer arrives out of time order
        with Memory(url) as mem:
            barrier.wait(timeout=120)
            for i in order:
                mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": f"City-{p}-{i}",
                                "valid_from": _start(p, i)},
                               {"subject": "Maya", "relation": "likes", "object": f"Dish-{p}-{i}",
                                "valid_from": _start(p, i)}], user_id=USER)
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        errors.put(f"writer {p}: {type(e).__name__}: {e}")
        raise


def test_racing_writers_keep_a_consistent_history(store_url: str) -> None:
    Memory(store_url).close()  # create/migrate once up front (racing migrations have their own test)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(PROCS)
    errors: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(store_url, p, barrier, errors)) for p in range(PROCS)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(timeout=300)
    failures = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
    assert all(pr.exitcode == 0 for pr in procs), failures or [pr.exitcode for pr in procs]

    with Memory(store_url) as mem:
        hist = mem.history(user_id=USER, subject="Maya", relation="lives_in")
        # nothing lost, nothing duplicated
        assert sorted(f.object for f in hist) == sorted(f"City-{p}-{i}" for p in range(PROCS)
                                                        for i in range(PER_PROC))
        # the only consistent outcome: one chain in time order, each version closed by the next
        chain = sorted(hist, key=lambda f: f.valid_from)  # type: ignore[arg-type,return-value]
        for a, b in zip(chain, chain[1:]):
            assert a.valid_to == b.valid_from, (a.object, a.valid_to, b.object, b.valid_from)
        assert chain[-1].valid_to is None
        # at every boundary instant (and just before each) exactly one value holds
        instants = {f.valid_from for f in hist} | {f.valid_to for f in hist if f.valid_to}
        for t in sorted(instants):
            for when in (t, t - timedelta(microseconds=1)):
                valid = mem.facts(user_id=USER, subject="Maya", relation="lives_in", as_of=when)
                assert len(valid) <= 1, (when, [f.object for f in valid])
                if when >= chain[0].valid_from:  # type: ignore[operator]
                    assert len(valid) == 1, when
        # the multi-valued writes all landed, all open
        likes = mem.history(user_id=USER, subject="Maya", relation="likes")
        assert len(likes) == PROCS * PER_PROC and all(f.valid_to is None for f in likes)


def _migrator(url: str, barrier: mp.synchronize.Barrier, errors: mp.Queue) -> None:  # type: ignore[name-defined]
    try:
        barrier.wait(timeout=120)
        with Memory(url) as mem:
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id=USER)
    except BaseException as e:  # noqa: BLE001
        errors.put(f"{type(e).__name__}: {e}")
        raise


def test_workers_starting_at_once_migrate_once(store_url: str) -> None:
    """Several workers open a brand-new database at the same moment: one migrates, none fails."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    errors: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_migrator, args=(store_url, barrier, errors)) for _ in range(3)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(timeout=300)
    failures = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
    assert all(pr.exitcode == 0 for pr in procs), failures
    with Memory(store_url) as mem:
        (tea,) = mem.history(user_id=USER)  # the same fact three times: reinforced, not duplicated
        assert tea.object == "tea"


class _LockedThen:
    """A connection stand-in whose journal-mode switch is refused ``n`` times, as SQLite refuses it at once,
    without its busy handler, while another process is switching the same new file."""

    def __init__(self, n: int, error: str = "database is locked") -> None:
        self.n, self.error, self.calls = n, error, 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.calls <= self.n:
            import sqlean

            raise sqlean.OperationalError(self.error)


def test_the_switch_to_wal_waits_out_a_lock_and_raises_anything_else(tmp_path) -> None:
    from chronomem.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "m.db")
    try:
        store._db, real = _LockedThen(3), store._db  # type: ignore[assignment]
        store._enable_wal(5.0)  # three refusals, then it switches
        assert store._db.calls == 4  # type: ignore[attr-defined]
        store._db = _LockedThen(1, "disk I/O error")  # type: ignore[assignment]
        with pytest.raises(Exception, match="disk I/O error"):
            store._enable_wal(5.0)  # not a lock: no retry
        store._db = _LockedThen(10**6)  # type: ignore[assignment]
        with pytest.raises(Exception, match="locked"):
            store._enable_wal(0.2)  # a lock that outlasts the timeout is reported
    finally:
        store._db = real  # type: ignore[assignment]
        store.close()
