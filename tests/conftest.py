"""Shared fixtures.  Store-server fixtures (PostgreSQL, Redis) live in their own modules."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# Model-backed tests assert only what the local model says every time at temperature 0; its
# greedy output depends on the thread count (float summation order), so tests pin one thread.
os.environ.setdefault("CHRONOMEM_THREADS", "1")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from chronomem import Memory  # noqa: E402

# PostgreSQL servers (machine PG 15 + a bundled PG 18 with pgvector), per-test schemas and the
# store_url fixture parametrised over sqlite / postgres / postgres_pgvector: see tests/pg_servers.py.
from pg_servers import machine_pg, pgvector_pg, store_url, url_factory  # noqa: E402,F401

# CI runs a moderate number of examples; HYPOTHESIS_PROFILE=thorough for a deep local run.
settings.register_profile("ci", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    """A fresh SQLite-backed memory in a temp dir, with no model configured."""
    with Memory(tmp_path / "memory.db") as m:
        yield m
