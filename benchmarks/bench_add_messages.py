"""Storing turns in bulk: ``store.add_messages`` into a new SQLite file, no model.

``--users`` users each get ``--sessions`` sessions of ``--turns`` turns (LoCoMo's turn texts in order,
two speakers), one ``add_messages`` call a session: the write path's SQL alone (the row, its full-text
index entry, and since migration 0015 its block's counts).  Prints one JSON line with turns per second.

    python benchmarks/bench_add_messages.py --users 20 --sessions 25 --turns 20

For an A/B with an older chronomem, run a copy of this script from an old tree (``git archive REV src
benchmarks | tar -x -C DIR``): it imports the ``src`` beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import chronomem  # noqa: E402
from chronomem import Memory  # noqa: E402
from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH, load_locomo  # noqa: E402
from chronomem.model import Message  # noqa: E402

T = datetime(2024, 5, 1, tzinfo=timezone.utc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--sessions", type=int, default=25)
    ap.add_argument("--turns", type=int, default=20, help="turns a session")
    args = ap.parse_args()
    texts = [t.text for c in load_locomo(DEFAULT_LOCOMO_PATH) for t in c.turns]
    with tempfile.TemporaryDirectory() as folder, \
            Memory(str(Path(folder) / "turns.db"), llm=False, embedder=False) as mem:
        n, started = 0, time.perf_counter()
        for u in range(args.users):
            for s in range(args.sessions):
                mem.store.add_messages(f"u{u}", [
                    Message(f"s{s}-{i}", f"u{u}", f"s{s}", "Ana" if i % 2 else "Bo", texts[(n + i) % len(texts)],
                            T, T, seq=i) for i in range(args.turns)])
                n += args.turns
        seconds = time.perf_counter() - started
    print(json.dumps({"turns": n, "seconds": round(seconds, 2), "turns_per_s": round(n / seconds),
                      "chronomem": str(Path(chronomem.__file__).parents[1])}))


if __name__ == "__main__":
    main()
