"""Exporting a large user: ``GET /v1/users/{u}/export`` and ``Memory.export``, time and peak memory.

One user of ``--facts`` facts (three quarters name a new entity) and ``--turns`` turns, every entity and
held fact with a 384-dimension vector (a stand-in embedder: hashed words), as a user of a year's chats
with embeddings on.  Prints, for the REST export (the app called as an ASGI server calls it, the reply
written to a file as it comes), ``Memory.export`` (``json.dumps`` of it) and ``Memory.export_to`` (to a
file): seconds, the bytes of the JSON, and how far the process's resident memory rose at its peak during
the export above what it held before.  Each runs in a fresh process, its peak reset first through
``/proc/self/clear_refs`` (Linux): ``ru_maxrss`` starts at the parent's size at the fork, which hid
whatever an export took below it, and Starlette's test client holds a whole reply in memory.  Older code
has no ``export_to`` (that row fails).  The export imports again as a check.  ``copy``: ``chronomem copy``
of the store into a new SQLite file (``copy_memory``, verified), the same way.  ``beside``: ``export_to``
while another thread of the same Memory writes another user's fact every 20 ms, and how long those waited.

The same script runs against older code (``git archive REV src | tar -x -C DIR``; copy this file to
``DIR/benchmarks``):

  python benchmarks/bench_export.py --facts 20000 --turns 5000
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
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search_vectors import HashEmbedder, add_embedded_user  # noqa: E402

from chronomem import Memory  # noqa: E402

HERE = Path(__file__).resolve()
WAYS = ("rest", "python", "export_to", "copy", "beside")


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
            base = reset_peak()
            t = time.perf_counter()
            with open(path, "wb") as fp:
                if how == "rest":  # as a client saving it to a file
                    status, _ = asyncio.run(asgi_request(client.app, "GET", "/v1/users/u/export", out=fp))
                    assert status == 200, status
                elif how == "export_to":
                    mem.export_to(fp, user_id="u")
                else:
                    fp.write(json.dumps(mem.export(user_id="u")).encode())
            took = time.perf_counter() - t
            peak = status_kb("VmHWM")
        size = path.stat().st_size
        data = json.loads(path.read_bytes())
        counts = {t: len(rows) for t, rows in data["tables"].items()}
        with Memory(str(Path(tmp) / "again.db"), llm=False, embedder=False) as again:
            added = again.import_(data)
    assert all(added[t] == n for t, n in counts.items()), (added, counts)
    return {"export": how, "seconds": round(took, 2), "mb": round(size / 1e6, 1), "rss_before_mb": round(base / 1024),
            "peak_rise_mb": round((peak - base) / 1024, 1), "rows": counts}


def keep_writing(mem: Memory, user: str, stop: Any, took: list[float]) -> None:
    """Add a fact of ``user`` every 20 ms until ``stop`` (an Event) is set; each add's seconds to ``took``."""
    n = 0
    while not stop.is_set():
        t = time.perf_counter()
        mem.add_facts([{"subject": "Tom", "relation": "likes", "object": f"thing {n}"}], user_id=user)
        took.append(time.perf_counter() - t)
        n += 1
        time.sleep(0.02)


def measure_beside(db: str) -> dict[str, Any]:
    """In this (fresh) process: ``export_to`` of the user while another thread of the same Memory writes
    a fact of another user every 20 ms; how long those writes waited while the export ran."""
    import statistics
    import threading

    with tempfile.TemporaryDirectory() as tmp, Memory(db, llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Tom", "relation": "likes", "object": "warm-up"}], user_id="other")
        waits: list[float] = []
        done = threading.Event()
        beside = threading.Thread(target=keep_writing, args=(mem, "other", done, waits))
        t = time.perf_counter()
        beside.start()
        with open(Path(tmp) / "export.json", "wb") as fp:
            mem.export_to(fp, user_id="u")
        took = time.perf_counter() - t
        done.set()
        beside.join()
    return {"export": "beside", "seconds": round(took, 2), "writes_meanwhile": len(waits),
            "write_ms_median": round(statistics.median(waits) * 1000, 1), "write_ms_max": round(max(waits) * 1000, 1)}


def measure_copy(db: str) -> dict[str, Any]:
    """In this (fresh) process: ``chronomem copy`` of the store into a new SQLite file, verified."""
    from chronomem.cli.store_admin import copy_memory
    from chronomem.store import open_store

    with tempfile.TemporaryDirectory() as tmp, open_store(db) as src, open_store(str(Path(tmp) / "c.db")) as dst:
        src.users(), dst.users()  # warm: both stores open before the peak is read
        base = reset_peak()
        t = time.perf_counter()
        report = copy_memory(src, dst)
        took = time.perf_counter() - t
        peak = status_kb("VmHWM")
    return {"export": "copy", "seconds": round(took, 2), "rss_before_mb": round(base / 1024),
            "peak_rise_mb": round((peak - base) / 1024, 1), "rows": report.users}


async def asgi_request(app: Any, method: str, path: str, *, body: IO[bytes] | None = None,
                       out: IO[bytes] | None = None) -> tuple[int, bytes]:
    """One request straight to the ASGI ``app`` as a server makes it: the body read from ``body`` in 64 KiB
    pieces, the reply's body written to ``out`` as it comes (else returned).  The status and that body."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")],
             "server": ("localhost", 80), "client": ("127.0.0.1", 1)}
    status, ended, sent = 0, False, asyncio.Event()
    kept: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal ended
        chunk = body.read(1 << 16) if body is not None and not ended else b""
        if chunk:
            return {"type": "http.request", "body": chunk, "more_body": True}
        if not ended:
            ended = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await sent.wait()  # as a server does: nothing more comes until the client goes
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            (out.write if out is not None else kept.append)(message.get("body", b""))
            if not message.get("more_body"):
                sent.set()

    await app(scope, receive, send)
    return status, b"".join(kept)


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")


def reset_peak() -> int:
    """Set the peak resident memory (VmHWM) to the resident memory now, which it returns (KiB)."""
    Path("/proc/self/clear_refs").write_text("5")
    return status_kb("VmHWM")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--ways", default=",".join(WAYS), help=f"which to measure, of {','.join(WAYS)}")
    ap.add_argument("--measure", choices=WAYS, help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        special = {"copy": measure_copy, "beside": measure_beside}
        print(json.dumps(special[args.measure](args.db) if args.measure in special
                         else measure(args.db, args.measure)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "export.db")
        build(db, args.facts, args.turns)
        for how in args.ways.split(","):
            done = subprocess.run([sys.executable, str(HERE), "--measure", how, "--db", db],
                                  capture_output=True, text=True)
            last = (done.stdout if done.returncode == 0 else done.stderr).strip().splitlines()
            print(last[-1] if done.returncode == 0 else json.dumps({"export": how, "failed": last[-1:]}))


if __name__ == "__main__":
    main()
