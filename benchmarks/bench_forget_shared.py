"""Forgetting in a large shared SQLite file: what zeroing the pages' unused space costs a forget.

Every forget on SQLite zeroes the unused space of every page of the file (chronomem.store.free_space),
so its cost grows with the file, not with the user.  This forgets one fact of each of ``--users``
users in a copy of a store built by ``bench_search.py --phase load`` and times each forget:

  python benchmarks/bench_search.py --db /tmp/cm_bench/1m.db --facts 1000000 --phase load
  python benchmarks/bench_forget_shared.py --db /tmp/cm_bench/1m.db

Prints one JSON line: the file's size, each forget in ms and their median.  The store given is not
changed (the copy is deleted at the end).  No model calls.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="a SQLite store (copied; the copy is forgotten in)")
    ap.add_argument("--users", type=int, default=6, help="users who each forget one fact")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=Path(args.db).parent) as tmp:
        copy = Path(tmp) / "copy.db"
        shutil.copy(args.db, copy)
        times = []
        with Memory(copy) as mem:
            for user in mem.users()[:args.users]:
                fact = mem.history(user_id=user)[0]
                t = time.perf_counter()
                mem.forget(user_id=user, fact_id=fact.id)
                times.append(1000 * (time.perf_counter() - t))
        print(json.dumps({"file_mb": round(copy.stat().st_size / 2**20), "forget_ms": [round(t) for t in times],
                          "median_ms": round(statistics.median(times))}))


if __name__ == "__main__":
    main()
