"""The benchmarks' measuring helpers (benchmarks/bench_export.py): a request made as an ASGI server makes
it, and the peak memory read after a reset, so the export, import and copy figures measure what they say."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from bench_scripts import load_script

from chronomem import Memory
from chronomem.server import create_app

bench = load_script("bench_export")


def test_a_request_streams_its_body_in_and_its_reply_out(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {i}"} for i in range(50)],
                      user_id="u")
        app = create_app(mem)
        out = io.BytesIO()
        status, kept = asyncio.run(bench.asgi_request(app, "GET", "/v1/users/u/export", out=out))
        assert (status, kept) == (200, b"") and len(json.loads(out.getvalue())["tables"]["facts"]) == 50
        out.seek(0)
        status, reply = asyncio.run(bench.asgi_request(app, "POST", "/v1/users/v/import", body=out))
        assert status == 200 and json.loads(reply)["facts"] == 50


def test_the_peak_is_read_from_the_reset_not_from_the_start() -> None:
    base = bench.reset_peak()
    held = bytearray(64 * 2**20)  # 64 MiB touched
    held[::4096] = b"x" * len(held[::4096])
    rise = bench.status_kb("VmHWM") - base
    del held
    assert 60 * 1024 < rise < 200 * 1024
    assert bench.reset_peak() - bench.status_kb("VmRSS") < 16 * 1024  # the reset brings the peak down to now
