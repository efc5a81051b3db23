"""The store reads of one idle-session sweep over many tenants (``chronomem serve``'s sweeper).

A sweep (every quarter of ``CHRONOMEM_SESSION_IDLE``, at most a minute apart) lists the tenants, then asks
each tenant's store for its sessions not ended whose last turn is older than the timeout.  Builds, once,
``--users`` users of the default tenant with ``--sessions`` sessions of four turns each (all ended but
the last) and ``--tenants`` small tenants of one open session; then times, ``--repeat`` times: the
whole store's idle sessions, ``Memory.tenants()``, and every tenant's idle sessions one after another
(the sweep).  No model.

The same script runs against older code (``git archive REV src | tar -x -C DIR``; copy this file to
``DIR/benchmarks``):

  python benchmarks/bench_idle_sweep.py --db /tmp/cm_bench/idle.db
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory, Message  # noqa: E402

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
LATER = datetime(2030, 1, 1, tzinfo=timezone.utc)


def turn(user: str, session: str, seq: int, when: datetime) -> Message:
    return Message(id=f"{session}-{seq}", user_id=user, session_id=session, speaker="Maya",
                   text=f"turn {seq} of {session}", timestamp=when, recorded_at=when, seq=seq)


def build(mem: Memory, users: int, sessions: int, tenants: int) -> None:
    st = mem.store
    for u in range(users):
        uid = f"user{u:05d}"
        with st.transaction(uid):
            for s in range(sessions):
                st.ensure_session(uid, f"s{s}", started_at=T0 + timedelta(days=s))
            st.add_messages(uid, [turn(uid, f"s{s}", k, T0 + timedelta(days=s, minutes=k))
                                  for s in range(sessions) for k in range(4)])
            for s in range(sessions - 1):
                st.end_session(uid, f"s{s}", T0 + timedelta(days=s, hours=1))
    for t in range(tenants):
        view = mem.for_tenant(f"t{t:03d}")
        view.store.ensure_session("x", "s1", started_at=T0)
        view.store.add_messages("x", [turn("x", "s1", 0, T0)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--users", type=int, default=500)
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with Memory(args.db, llm=False, embedder=False) as mem:
        if not mem.users():
            build(mem, args.users, args.sessions, args.tenants)
        whole, listing, sweep = [], [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            idle = mem.store.inner.idle_sessions(LATER)
            whole.append(time.perf_counter() - t)
            t = time.perf_counter()
            tenants = mem.tenants()
            listing.append(time.perf_counter() - t)
            t = time.perf_counter()
            found = sum(len(mem.for_tenant(name).store.idle_sessions(LATER)) for name in tenants)
            sweep.append(time.perf_counter() - t)
            assert found == len(idle), (found, len(idle))
    print(json.dumps({"idle_sessions": len(idle), "tenants": len(tenants),
                      "whole_store_ms": round(statistics.median(whole) * 1000, 1),
                      "tenants_ms": round(statistics.median(listing) * 1000, 1),
                      "every_tenants_idle_ms": round(statistics.median(sweep) * 1000, 1)}))


if __name__ == "__main__":
    main()
