"""Importing a large user's export: time and peak memory, by each way in.

The user of ``bench_export.py`` (``--facts`` facts, ``--turns`` turns, every entity and held fact with a
384-dimension vector from a stand-in embedder) is exported once to a file; each way then imports that
file into a new SQLite store, in a fresh process (so one's peak does not hide another's):

- ``json+import_``: ``json.load`` of the file and ``Memory.import_`` (what ``chronomem import`` did);
- ``import_from``: ``Memory.import_from(file)`` (what ``chronomem import`` does now);
- ``rest``: ``POST /v1/users/{u}/import``, the app called as an ASGI server calls it, the file arriving
  in 64 KiB pieces (Starlette's test client would hand the app the whole body at once).

Prints seconds, the rows added, and how far the process's resident memory rose at its peak during the
import above what it held before (Linux: the peak is reset first through ``/proc/self/clear_refs``, so the
start-up's own peak hides nothing).
Against older code (``git archive REV src | tar -x -C DIR``; copy this file, ``bench_export.py`` and
``bench_search_vectors.py`` to ``DIR/benchmarks``), ``import_from`` fails and the REST app is built with a
body limit large enough for the file:

  python benchmarks/bench_import.py --facts 20000 --turns 5000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_export import asgi_request, build, reset_peak, status_kb  # noqa: E402

from chronomem import Memory  # noqa: E402

HERE = Path(__file__).resolve()
WAYS = ("json+import_", "import_from", "rest")


def measure(export: str, how: str) -> dict[str, Any]:
    """In this (fresh) process: one import of ``export`` into a new store, its time and peak memory rise."""
    from fastapi.testclient import TestClient

    from chronomem.server import create_app

    with tempfile.TemporaryDirectory() as tmp, Memory(str(Path(tmp) / "in.db"), llm=False, embedder=False) as mem:
        try:
            app = create_app(mem, max_import_bytes=2**31)
        except TypeError:  # older code: every body has one limit, and the import is a JSON body
            app = create_app(mem, max_body_bytes=2**31)
        with TestClient(app) as client:
            client.get("/v1/users")  # warm: the app and the store are open before the peak is read
            base = reset_peak()
            t = time.perf_counter()
            with open(export, "rb") as fp:
                if how == "rest":
                    status, reply = asyncio.run(asgi_request(app, "POST", "/v1/users/u/import", body=fp))
                    assert status == 200, reply[:500]
                    added = json.loads(reply)
                elif how == "import_from":
                    added = mem.import_from(fp)
                else:
                    added = mem.import_(json.load(fp))
            took = time.perf_counter() - t
            peak = status_kb("VmHWM")
    return {"import": how, "seconds": round(took, 2), "rss_before_mb": round(base / 1024),
            "peak_rise_mb": round((peak - base) / 1024, 1), "added": added}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the three ways, alternated")
    ap.add_argument("--measure", choices=WAYS, help=argparse.SUPPRESS)
    ap.add_argument("--export", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.export, args.measure)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db, export = str(Path(tmp) / "export.db"), Path(tmp) / "export.json"
        build(db, args.facts, args.turns)
        with Memory(db, llm=False, embedder=False) as mem, open(export, "w", encoding="utf-8") as fp:
            json.dump(mem.export(user_id="u"), fp)  # as every version writes it (compact or not, same rows)
        print(json.dumps({"export_mb": round(export.stat().st_size / 1e6, 1)}))
        for _ in range(args.repeat):
            for how in WAYS:
                done = subprocess.run([sys.executable, str(HERE), "--measure", how, "--export", str(export)],
                                      capture_output=True, text=True)
                last = (done.stdout if done.returncode == 0 else done.stderr).strip().splitlines()
                print(last[-1] if done.returncode == 0 else json.dumps({"import": how, "failed": last[-1:]}))


if __name__ == "__main__":
    main()
