"""Shared fixtures.  Store-server fixtures (PostgreSQL, Redis) live in their own modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chronomem import Memory

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    """A fresh SQLite-backed memory in a temp dir, with no model configured."""
    with Memory(tmp_path / "memory.db") as m:
        yield m
