"""Shared fixtures.  Store-server fixtures (PostgreSQL, Redis) live in their own modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import os

import pytest
from hypothesis import settings

# CI runs a moderate number of examples; HYPOTHESIS_PROFILE=thorough for a deep local run.
settings.register_profile("ci", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from chronomem import Memory

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    """A fresh SQLite-backed memory in a temp dir, with no model configured."""
    with Memory(tmp_path / "memory.db") as m:
        yield m


# PostgreSQL servers (machine PG 15 + a bundled PG 18 with pgvector), per-test schemas and the
# store_url fixture parametrised over sqlite / postgres / postgres_pgvector: see tests/pg_servers.py.
from pg_servers import machine_pg, pgvector_pg, store_url, url_factory  # noqa: E402,F401
