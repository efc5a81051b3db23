"""Walking a large user's lists page by page over REST v1: time, and what a change between pages does.

One user with ``--facts`` facts (a quarter of them "friend_of", which is read from both sides, a tenth
with no start; three quarters name a new entity) and ``--turns`` stored turns in ``--sessions`` sessions.
For each list (facts, history, facts of one subject, messages, entities, sessions) every page is fetched
with ``--limit`` items per page; printed: pages, items, seconds in all and the median seconds per page.
Then the first reply of the MCP tool ``timeline`` for "Maya": its facts and characters.
Then the walk of the history is repeated twice, changing the user after the first page: once forgetting
a fact the walk has passed, once adding a fact dated before all others.
Printed are the items the walk returned twice and the stored versions (but the added one) it never
returned: both 0 for a cursor that names a place in the order; an offset skips one after the forget and
repeats one after the add.

  python benchmarks/bench_paging.py --facts 20000 --turns 5000 --limit 500
  python benchmarks/bench_paging.py --facts 20000 --turns 5000 --limit 50
  python benchmarks/bench_paging.py --facts 20000 --turns 5000 --sessions 2000 --limit 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fastapi.testclient import TestClient  # noqa: E402

from chronomem import Memory  # noqa: E402
from chronomem.server import create_app  # noqa: E402
from chronomem.server.mcp import build_mcp  # noqa: E402


def _facts(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        if i % 4 == 0:
            f = {"subject": f"Person {i % 97}", "relation": "friend_of", "object": "Maya"}
        else:
            f = {"subject": "Maya", "relation": "likes", "object": f"song {i}"}
        if i % 10:
            f["valid_from"] = f"20{10 + i % 15:02d}-{1 + i % 12:02d}-{1 + i % 28:02d}"
        out.append(f)
    return out


def walk(client: TestClient, path: str, limit: int, between: Any = None) -> tuple[list[str], list[float]]:
    ids: list[str] = []
    seconds: list[float] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        t = time.perf_counter()
        r = client.get(path, params=params)
        seconds.append(time.perf_counter() - t)
        r.raise_for_status()
        body = r.json()
        ids.extend(x["id"] for x in body["items"])
        cursor = body["next_cursor"]
        if between is not None and len(seconds) == 1:
            between(ids)
        if not cursor:
            return ids, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--sessions", type=int, default=10, help="the turns are split into this many sessions")
    ap.add_argument("--limit", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(str(Path(tmp) / "paging.db"), llm=False, embedder=False)
        facts = _facts(args.facts)
        for start in range(0, len(facts), 5000):
            mem.add_facts(facts[start:start + 5000], user_id="u")
        per = -(-args.turns // args.sessions)
        for k, s in enumerate(range(0, args.turns, per)):
            mem.submit_messages([{"role": "user", "content": f"turn {s + i} of the walk"}
                                 for i in range(min(per, args.turns - s))],
                                user_id="u", session_id=f"s{k}", deliver=False,
                                timestamp=datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(hours=k))
        with TestClient(create_app(mem, owns_memory=True)) as c:
            for name, path in (("facts", "/v1/users/u/facts"), ("history", "/v1/users/u/history"),
                               ("facts of Maya", "/v1/users/u/facts?subject=Maya"),
                               ("messages", "/v1/users/u/messages"), ("entities", "/v1/users/u/entities"),
                               ("sessions", "/v1/users/u/sessions")):
                ids, seconds = walk(c, path, args.limit)
                print(json.dumps({"list": name, "limit": args.limit, "pages": len(seconds), "items": len(ids),
                                  "distinct": len(set(ids)), "total_s": round(sum(seconds), 3),
                                  "median_page_s": round(statistics.median(seconds), 4)}))

            # what an agent's first call reads: the MCP timeline of the user's own entity
            res = asyncio.run(build_mcp(mem, "u").call_tool("timeline", {"subject": "Maya"}))
            reply = json.loads(res.content[0].text)
            items = reply["items"] if isinstance(reply, dict) else reply  # a list before replies were paged
            print(json.dumps({"list": "MCP timeline of Maya, first reply", "items": len(items),
                              "characters": len(res.content[0].text)}))

            def forget_one(seen: list[str]) -> None:
                mem.forget(user_id="u", fact_id=seen[0])

            def add_earliest(seen: list[str]) -> None:
                mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "a first song",
                                "valid_from": "1999-01-01"}], user_id="u")

            for what, change in (("a passed fact forgotten", forget_one), ("an earliest fact added", add_earliest)):
                ids, _ = walk(c, "/v1/users/u/history", args.limit, change)
                stored = {f.id for f in mem.history(user_id="u") if f.object != "a first song"}
                print(json.dumps({"list": f"history, {what} after page 1", "limit": args.limit,
                                  "returned_twice": len(ids) - len(set(ids)),
                                  "never_returned": len(stored - set(ids))}))

if __name__ == "__main__":
    main()
