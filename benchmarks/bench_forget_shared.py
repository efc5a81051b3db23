"""Forgetting in a large shared SQLite file: what zeroing the pages' unused space costs a forget.

Every forget on SQLite zeroes the unused space of the pages of the file (chronomem.store.free_space):
finding them reads every page (in a snapshot of its own since session 44, without the write lock), so
its cost grows with the file, not with the user.  This forgets one fact of a first user, then of each of
``--users`` more, in a copy of a store built by ``bench_search.py --phase load`` (or
``bench_shared_fulltext.py``) and times each forget:

  python benchmarks/bench_search.py --db /tmp/cm_bench/1m.db --facts 1000000 --phase load
  python benchmarks/bench_forget_shared.py --db /tmp/cm_bench/1m.db

Prints one JSON line: the file's size, the first forget (the file read from disk), each later forget in
ms and their median.  The store given is not
changed (the copy is deleted at the end).  No model calls.  ``--beside``: meanwhile another process
writes a fact of another user every 20 ms during the forgets after the first; the line adds how long
those writes took (median, max), what a forget makes every other writer of the file wait.

  python benchmarks/bench_forget_shared.py --db bench-out/shared/s300-new.db --beside
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_export import keep_writing  # noqa: E402

from chronomem import Memory  # noqa: E402


def write_beside(db: str, ready: Any, stop: Any, out: Any) -> None:
    """Another process: a fact of user ``beside`` every 20 ms until ``stop``; each write's seconds to ``out``."""
    with Memory(db, llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Tom", "relation": "likes", "object": "warm-up"}], user_id="beside")
        ready.set()
        took: list[float] = []
        keep_writing(mem, "beside", stop, took)
        out.put(took)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="a SQLite store (copied; the copy is forgotten in)")
    ap.add_argument("--users", type=int, default=6, help="users who each forget one fact")
    ap.add_argument("--beside", action="store_true", help="another process writes meanwhile")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=Path(args.db).parent) as tmp:
        copy = Path(tmp) / "copy.db"
        shutil.copy(args.db, copy)
        times = []
        with Memory(copy) as mem:
            users = [u for u in mem.users() if u != "beside"][:args.users + 1]
            t = time.perf_counter()  # the first forget reads the file from disk and zeroes what others left
            mem.forget(user_id=users[0], fact_id=mem.history(user_id=users[0])[0].id)
            first = 1000 * (time.perf_counter() - t)
            users = users[1:]
            if args.beside:
                ctx = multiprocessing.get_context("spawn")
                ready, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
                writer = ctx.Process(target=write_beside, args=(str(copy), ready, stop, out))
                writer.start()
                ready.wait(120)
                time.sleep(0.5)
            for user in users:
                fact = mem.history(user_id=user)[0]
                t = time.perf_counter()
                mem.forget(user_id=user, fact_id=fact.id)
                times.append(1000 * (time.perf_counter() - t))
                time.sleep(0.2)
            result: dict[str, Any] = {"file_mb": round(copy.stat().st_size / 2**20), "first_forget_ms": round(first),
                                      "forget_ms": [round(t) for t in times], "median_ms": round(statistics.median(times))}
            if args.beside:
                stop.set()
                waits = out.get(timeout=120)
                writer.join()
                result.update(writes_beside=len(waits), write_ms_median=round(1000 * statistics.median(waits), 1),
                              write_ms_max=round(1000 * max(waits), 1))
        print(json.dumps(result))


if __name__ == "__main__":
    main()
