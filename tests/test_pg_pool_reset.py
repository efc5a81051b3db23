"""A pooled PostgreSQL connection the server closed (restart, failover, ``pg_terminate_backend``) is not
handed out again: the next write and read get a fresh connection instead of a StoreError that would fail
an in-flight ingestion job for good."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg

from chronomem import Memory
from chronomem.store.postgres import split_url

FACT = {"subject": "Maya", "relation": "lives_in", "object": "Porto"}


def _terminate(conninfo: str, app_name: str) -> int:
    """End this test's own backends (by its unique application_name) and wait until each is gone."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                           "WHERE application_name = %s AND pid <> pg_backend_pid()", (app_name,)).fetchone()
    return int(row[0]) if row else 0


def test_a_terminated_pooled_connection_is_replaced(url_factory: Callable[[str], str]) -> None:
    app_name = f"cm_pool_reset_{uuid.uuid4().hex[:8]}"
    url = f"{url_factory('postgres')}&pool_size=1&application_name={app_name}"  # one connection: it gets reused
    conninfo, _ = split_url(url)
    with Memory(url, llm=False, embedder=False) as m:
        m.add_facts([FACT], user_id="u")
        assert _terminate(conninfo, app_name) >= 1
        m.add_facts([{**FACT, "object": "Lisbon"}], user_id="u")  # a write on the pool after the kill
        assert _terminate(conninfo, app_name) >= 1
        assert sorted(f.object for f in m.history(user_id="u")) == ["Lisbon", "Porto"]  # and a read
