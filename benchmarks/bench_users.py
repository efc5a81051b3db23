"""Listing a store's users: REST v1 ``GET /users`` walked page by page, and one small tenant's list.

Runs on a store loaded by ``bench_search.py --phase load`` (1,000 facts a user); adds a tenant ``acme``
with ``--tenant-users`` users of one fact each (once), then measures, each ``--repeat`` times:

  whole    ``Memory.users()``: every user id of the default tenant
  page     one ``GET /v1/users?limit=50`` (median over the walk's pages) and the walk of every page
  tenant   ``Memory.for_tenant("acme").users()``: the tenant's few users among the store's many

The same script runs against older code (``git archive REV src | tar -x -C DIR``; copy this file to
``DIR/benchmarks``) to compare:

  python benchmarks/bench_users.py --db /tmp/cm_bench/1m.db
  python benchmarks/bench_users.py --db "postgresql://postgres@127.0.0.1:5432/test?schema=bench1m"
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fastapi.testclient import TestClient  # noqa: E402

from chronomem import Memory  # noqa: E402
from chronomem.server import create_app  # noqa: E402

TENANT = "acme"


def timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def walk(client: TestClient, limit: int) -> tuple[list[float], list[str]]:
    pages: list[float] = []
    users: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    while True:
        took, r = timed(lambda: client.get("/v1/users", params=params))
        r.raise_for_status()
        body = r.json()
        pages.append(took)
        users += [u["user_id"] for u in body["items"]]
        if body["next_cursor"] is None:
            return pages, users
        params = {"limit": limit, "cursor": body["next_cursor"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="a store loaded by bench_search.py --phase load")
    ap.add_argument("--tenant-users", type=int, default=10)
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with Memory(args.db, llm=False, embedder=False) as mem:
        store = type(mem.store.inner).__name__
        tenant = mem.for_tenant(TENANT)
        for i in range(args.tenant_users - len(tenant.users())):
            tenant.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id=f"t{i:05d}")
        whole, page_ms, walks, tenant_s = [], [], [], []
        with TestClient(create_app(mem)) as client:
            for _ in range(args.repeat):
                took, everyone = timed(mem.users)
                whole.append(took)
                pages, walked = walk(client, args.limit)
                assert walked == everyone, "the walk and the whole list differ"
                page_ms.append(statistics.median(pages) * 1000)
                walks.append(sum(pages))
                took, theirs = timed(tenant.users)
                assert len(theirs) == args.tenant_users
                tenant_s.append(took)
    print(json.dumps({
        "store": store, "users": len(everyone), "pages": len(pages),
        "whole_ms": round(statistics.median(whole) * 1000, 2),
        "page_ms": round(statistics.median(page_ms), 2),
        "walk_s": round(statistics.median(walks), 3),
        "tenant_ms": round(statistics.median(tenant_s) * 1000, 2)}))


if __name__ == "__main__":
    main()
