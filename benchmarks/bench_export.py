"""Exporting a large user: ``GET /v1/users/{u}/export`` and ``Memory.export``, time and peak memory.

One user of ``--facts`` facts (three quarters name a new entity) and ``--turns`` turns, every entity and
held fact with a 384-dimension vector (a stand-in embedder: hashed words), as a user of a year's chats
with embeddings on.  Prints, for the REST export (saved to a file as a client streams it), ``Memory.export``
(``json.dumps`` of it) and ``Memory.export_to`` (to a file): seconds, the bytes of the JSON, and how far
the process's peak resident memory rose until the export was whole (``ru_maxrss``; each in a fresh
process, so one's peak does not hide another's).  Older code has no ``export_to`` (that row fails).
The export imports again as a check.

The same script runs against older code (``git archive REV src | tar -x -C DIR``; copy this file to
``DIR/benchmarks``):

  python benchmarks/bench_export.py --facts 20000 --turns 5000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search_vectors import HashEmbedder, add_embedded_user  # noqa: E402

from chronomem import Memory  # noqa: E402

HERE = Path(__file__).resolve()


def build(db: str, facts: int, turns: int) -> None:
    with Memory(db, llm=False, embedder=False) as mem:
        add_embedded_user(mem, "u", facts, HashEmbedder())
        for s in range(0, turns, 500):
            mem.submit_messages([{"role": "user", "content": f"turn {s + i}: we talked about song {s + i}"}
                                 for i in range(min(500, turns - s))], user_id="u", session_id=f"s{s // 500}",
                                deliver=False)


def measure(db: str, how: str) -> dict[str, Any]:
    """In this (fresh) process: one export, its time, size and the rise of the peak resident memory."""
    from fastapi.testclient import TestClient

    from chronomem.server import create_app

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "export.json"
        with Memory(db, llm=False, embedder=False) as mem, TestClient(create_app(mem)) as client:
            client.get("/v1/users")  # warm: the app and the store are open before the peak is read
            base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t = time.perf_counter()
            with open(path, "wb") as fp:
                if how == "rest":  # as a client saving it to a file
                    with client.stream("GET", "/v1/users/u/export") as r:
                        r.raise_for_status()
                        for chunk in r.iter_bytes():
                            fp.write(chunk)
                elif how == "export_to":
                    mem.export_to(fp, user_id="u")
                else:
                    fp.write(json.dumps(mem.export(user_id="u")).encode())
            took = time.perf_counter() - t
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        size = path.stat().st_size
        data = json.loads(path.read_bytes())
        counts = {t: len(rows) for t, rows in data["tables"].items()}
        with Memory(str(Path(tmp) / "again.db"), llm=False, embedder=False) as again:
            added = again.import_(data)
    assert all(added[t] == n for t, n in counts.items()), (added, counts)
    return {"export": how, "seconds": round(took, 2), "mb": round(size / 1e6, 1),
            "peak_rss_mb": round(peak / 1024), "peak_rss_rise_mb": round((peak - base) / 1024, 1), "rows": counts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--measure", choices=("rest", "python", "export_to"), help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.db, args.measure)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "export.db")
        build(db, args.facts, args.turns)
        for how in ("rest", "python", "export_to"):
            done = subprocess.run([sys.executable, str(HERE), "--measure", how, "--db", db],
                                  capture_output=True, text=True)
            last = (done.stdout if done.returncode == 0 else done.stderr).strip().splitlines()
            print(last[-1] if done.returncode == 0 else json.dumps({"export": how, "failed": last[-1:]}))


if __name__ == "__main__":
    main()
