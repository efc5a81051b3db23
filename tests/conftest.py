"""Shared fixtures.  Store-server fixtures (PostgreSQL, Redis) live in their own modules."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# Model-backed tests assert only what the local model says every time at temperature 0; its
# greedy output depends on the thread count (float summation order), so tests pin one thread.
os.environ.setdefault("CHRONOMEM_THREADS", "1")

import pytest  # noqa: E402
from fake_openai import FakeModelServer  # noqa: E402
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

#: what the caller's shell may set that would take a test off the in-process pieces it means to test:
#: a broker queue for jobs, Redis for session buffers, a key the REST app would demand
SERVICE_ENV = ("CHRONOMEM_QUEUE_URL", "CHRONOMEM_REDIS_URL", "CHRONOMEM_API_KEY")


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    """A fresh SQLite-backed memory in a temp dir, with no model configured."""
    with Memory(tmp_path / "memory.db") as m:
        yield m


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeModelServer]:
    """The fake OpenAI-compatible model of ``fake_openai.py`` with its default replies, over real HTTP.

    Module scope: each test module that asks gets a server of its own, shared by that module's tests.
    So a test must not change its ``inject``, ``delay`` or gate (start a server of its own, or take
    ``server``), and ``requests`` holds the calls of the module's earlier tests too: count a test's
    calls as a difference.  It needs an API key in the environment: see ``local_service_env``.
    """
    srv = FakeModelServer()
    yield srv
    srv.close()


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    """A fake model server of this test's own, for a test that sets its ``inject`` or reads all its ``requests``."""
    srv = FakeModelServer()
    yield srv
    srv.close()


@pytest.fixture
def local_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """An API key for the fake model (it takes any), and none of ``SERVICE_ENV``: jobs run on the
    in-process queue, session buffers stay in the process, and the REST app asks for no key.

    Not autouse: a module takes it with ``pytestmark = pytest.mark.usefixtures("local_service_env")``,
    or from an autouse fixture of its own that sets more.
    """
    monkeypatch.setenv("CHRONOMEM_LLM_API_KEY", "test")
    for name in SERVICE_ENV:
        monkeypatch.delenv(name, raising=False)
