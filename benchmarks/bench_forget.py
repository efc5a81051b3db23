"""Forgetting benchmark: how long ``forget(session_id=…)`` takes as a user's memory grows.

One user with ``--sessions`` sessions of ``--turns`` stored turns each; every turn gives one fact
("Maya likes thing S I", its own object entity), written through ``add_facts`` with the turn as its
source, so the user's name is said in every turn and each object is its own entity.  Then
``--repeat`` sessions are forgotten one after another and each forget is timed.  No model calls.

  python benchmarks/bench_forget.py --db /tmp/cm_bench/forget.db
  python benchmarks/bench_forget.py --db postgresql://127.0.0.1:5432/test

Prints one JSON line: facts and entities before, the median and max forget in ms.  The user
(``bench-forget``) is deleted at the end, so a PostgreSQL database is left as it was.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402
from chronomem.model import Message  # noqa: E402

USER = "bench-forget"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="a SQLite file (replaced) or a postgresql:// URL")
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--turns", type=int, default=50, help="stored turns (and facts) per session")
    ap.add_argument("--repeat", type=int, default=10, help="sessions forgotten, each timed")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if "://" not in args.db:
        for suffix in ("", "-wal", "-shm"):
            Path(args.db + suffix).unlink(missing_ok=True)
    with Memory(args.db) as mem:
        if USER in mem.users():  # a run stopped partway
            mem.forget(user_id=USER, everything=True)
        start = datetime(2024, 1, 1, tzinfo=timezone.utc)
        for s in range(args.sessions):
            sid = f"s{s}"
            mem.store.ensure_session(USER, sid, started_at=start + timedelta(days=s))
            mem.store.add_messages(USER, [
                Message(id=f"m{s}_{i}", user_id=USER, session_id=sid, speaker="Maya", text=f"I like thing {s} {i}",
                        timestamp=start + timedelta(days=s, minutes=i), recorded_at=start, seq=i)
                for i in range(args.turns)])
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"thing {s} {i}",
                            "source_ids": [f"m{s}_{i}"]} for i in range(args.turns)], user_id=USER, session_id=sid)
        facts, entities = mem.store.count_facts(USER), len(mem.store.entities(USER))
        times = []
        for s in range(min(args.repeat, args.sessions)):
            t = time.perf_counter()
            mem.forget(user_id=USER, session_id=f"s{s}")
            times.append((time.perf_counter() - t) * 1000)
        mem.forget(user_id=USER, everything=True)
    print(json.dumps({"db": args.db.split("://")[0] if "://" in args.db else "sqlite", "facts": facts,
                      "entities": entities, "forgets": len(times), "median_ms": round(statistics.median(times), 1),
                      "max_ms": round(max(times), 1)}))


if __name__ == "__main__":
    main()
