"""Reading a user's recursive summary after many sessions: ``summary()``, ``summary(as_of=…)`` and
``context()`` with ``--checkpoints`` stored checkpoints (one a session ended; each ~600 characters), no model.

Each call is timed ``--rounds`` times; prints one JSON line with each call's median ms and where chronomem
was imported from.  For an A/B with an older chronomem, run a copy of this script from an old tree
(``git archive REV src benchmarks | tar -x -C DIR``): it imports the ``src`` beside it.

  python benchmarks/bench_summary_reads.py --checkpoints 10000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import chronomem  # noqa: E402
from chronomem import Memory  # noqa: E402
from chronomem.model import Checkpoint  # noqa: E402

T0 = datetime(2020, 1, 1, tzinfo=timezone.utc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoints", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--db", default="", help="an SQLite path or a PostgreSQL URL (default: a temporary file)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with Memory(args.db or str(Path(tmp) / "s.db"), llm=False, embedder=False) as mem:
            for seq in range(1, args.checkpoints + 1):
                mem.store.put_checkpoint(Checkpoint(
                    user_id="maya", seq=seq, session_id=f"s{seq}", created_at=T0 + timedelta(hours=seq),
                    session_time=T0 + timedelta(hours=seq),
                    memory=f"After session {seq}: Maya lives in Porto and works at Acme. " * 10))
            middle = T0 + timedelta(hours=args.checkpoints // 2, minutes=30)
            chat = [{"role": "user", "content": "Where do I live?"}]
            calls = {"summary": lambda: mem.summary(user_id="maya"),
                     "summary_as_of_middle": lambda: mem.summary(user_id="maya", as_of=middle),
                     "context": lambda: mem.context(chat, user_id="maya")}
            out: dict[str, object] = {"checkpoints": args.checkpoints}
            for name, call in calls.items():
                times = []
                for _ in range(args.rounds):
                    t = time.perf_counter()
                    call()
                    times.append((time.perf_counter() - t) * 1000)
                out[f"{name}_median_ms"] = round(statistics.median(times), 2)
    out["chronomem"] = str(Path(chronomem.__file__).resolve().parents[1])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
