"""Bulk-load and point-query benchmark of the embedded SQLite store.

Loads N facts over U users through ``Memory.add_facts`` (update rules applied:
single-valued relations close earlier values, multi-valued ones pile up), then
times ``Memory.facts(user, subject, relation, as_of)`` point queries.

    python benchmarks/bench_store.py --facts 1000000 --users 10000 --db /tmp/bench.db

Prints figures; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from chronomem import Memory

SINGLE = ["lives_in", "works_at", "job_title"]
MULTI = ["likes", "friend_of", "hobby", "owns"]
BASE = datetime(2010, 1, 1, tzinfo=timezone.utc)


def user_batch(rng: random.Random, n: int) -> list[dict]:
    """``n`` facts about a handful of people, single-valued ones changing over time."""
    people = [f"person{i}" for i in range(5)]
    facts = []
    for i in range(n):
        subj = rng.choice(people)
        if rng.random() < 0.5:
            rel = rng.choice(SINGLE)
            obj = f"{rel}-value-{rng.randrange(20)}"
        else:
            rel = rng.choice(MULTI)
            obj = f"{rel}-item-{rng.randrange(200)}"
        facts.append({"subject": subj, "relation": rel, "object": obj,
                      "valid_from": (BASE + timedelta(days=rng.randrange(5000))).isoformat(),
                      "confidence": rng.choice([1.0, 0.9, 0.8, 0.4])})
    return facts


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=5_000)
    ap.add_argument("--db", default="/tmp/chronomem-bench.db")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    for suffix in ("", "-wal", "-shm"):
        Path(args.db + suffix).unlink(missing_ok=True)
    rng = random.Random(args.seed)
    per_user = args.facts // args.users
    with Memory(args.db) as mem:
        t0 = time.perf_counter()
        closed = 0
        for u in range(args.users):
            rep = mem.add_facts(user_batch(rng, per_user), user_id=f"user{u}")
            closed += len(rep.closed)
            if (u + 1) % max(1, args.users // 10) == 0:
                el = time.perf_counter() - t0
                print(f"  {(u + 1) * per_user:>10,} facts  {el:7.1f} s  {(u + 1) * per_user / el:,.0f} facts/s",
                      flush=True)
        load_s = time.perf_counter() - t0
        total = per_user * args.users
        print(f"bulk load: {total:,} facts over {args.users:,} users in {load_s:.1f} s "
              f"= {total / load_s:,.0f} facts/s ({closed:,} closures applied)")
        lat = []
        for _ in range(args.queries):
            u = f"user{rng.randrange(args.users)}"
            subj = f"person{rng.randrange(5)}"
            rel = rng.choice(SINGLE + MULTI)
            when = BASE + timedelta(days=rng.randrange(6000))
            t = time.perf_counter()
            mem.facts(user_id=u, subject=subj, relation=rel, as_of=when)
            lat.append((time.perf_counter() - t) * 1000)
        print(f"point query facts(user, subject, relation, as_of) over {args.queries:,} queries: "
              f"p50 {statistics.median(lat):.3f} ms, p95 {pct(lat, 95):.3f} ms, p99 {pct(lat, 99):.3f} ms")
    size = sum(os.path.getsize(args.db + s) for s in ("", "-wal") if os.path.exists(args.db + s))
    print(f"database size: {size / 1e6:,.0f} MB")


if __name__ == "__main__":
    main()
