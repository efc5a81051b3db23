"""Bulk ``add_facts`` for one user whose memory grows: batch time against the facts already held.

Batches of ``--batch`` facts "Maya likes thing N" (one subject, a new object entity each) are added one
after another until ``--facts``; each batch is timed.  A batch that planned every fact against every fact
of its subject, or matched every new name against every entity, grows with the user (quadratic overall).
No model calls; an in-file SQLite store in a temporary folder.

  python benchmarks/bench_add_one_user.py --facts 8000 --batch 1000

Prints one JSON line: the seconds of each batch.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=8000)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    seconds = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "m.db", llm=False, embedder=False) as mem:
        for start in range(0, args.facts, args.batch):
            batch = [{"subject": "Maya", "relation": "likes", "object": f"thing {start + i}"}
                     for i in range(args.batch)]
            t = time.perf_counter()
            mem.add_facts(batch, user_id="u")
            seconds.append(round(time.perf_counter() - t, 2))
    print(json.dumps({"facts": args.facts, "batch": args.batch, "batch_s": seconds}))


if __name__ == "__main__":
    main()
