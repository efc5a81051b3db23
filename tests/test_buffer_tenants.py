"""A session buffer given to ``Memory`` as an object keeps each tenant's turns apart.

``Memory(tenant=…, buffer=RedisSessionBuffer(...))`` is how the README sets a buffer's TTL; two
tenants given the same object (or equal ones) used to share its keys, so one tenant read, and on
``end_session`` took over, the other's turns for the same user id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from test_buffer import redis_url  # noqa: F401 - the Redis fixture
from test_extract_pipeline import conv
from test_memory_sessions import SessionLLM

from chronomem import Memory
from chronomem.errors import ConfigError
from chronomem.summarize.buffer import InMemorySessionBuffer, RedisSessionBuffer


@pytest.fixture
def root(redis_url: str) -> Iterator[str]:  # noqa: F811
    """A key root of this test's own; its keys deleted after."""
    root = f"cm-test-{uuid.uuid4().hex[:10]}:"
    yield root
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=root + "*", count=1000))
    if keys:
        client.delete(*keys)


def _mem(db: Path, tenant: str, buffer: object) -> Memory:
    return Memory(db, tenant=tenant, llm=SessionLLM(), embedder=False, buffer=buffer)  # type: ignore[arg-type]


def test_one_redis_buffer_object_serves_two_tenants_apart(tmp_path: Path, redis_url: str,  # noqa: F811
                                                          root: str) -> None:
    client = redis.Redis.from_url(redis_url)
    given = RedisSessionBuffer(client, ttl_seconds=3600, prefix=root)
    with _mem(tmp_path / "m.db", "acme", given) as acme, _mem(tmp_path / "m.db", "beta", given) as beta:
        acme.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1",
                 session_id="s1")
        assert beta.export(user_id="u1")["tables"].get("messages", []) == []
        assert beta.end_session(user_id="u1", session_id="s1").stored == []
        assert [m.text for m in acme.end_session(user_id="u1", session_id="s1").stored] == [
            "I live in Berlin and work at Acme."]
        assert beta.store.messages("u1") == []
        assert acme._buffer is not None and acme._buffer.ttl_seconds == 3600  # the given TTL holds
        # the sweep finds a tenant whose turns wait under the given root
        beta.add(conv("I have a dog.", ts="2023-01-11T10:00:00Z"), user_id="u2", session_id="s9")
        assert "beta" in acme.tenants()


def test_a_tenant_view_of_a_given_redis_buffer_has_its_own_keys(tmp_path: Path, redis_url: str,  # noqa: F811
                                                               root: str) -> None:
    client = redis.Redis.from_url(redis_url)
    with _mem(tmp_path / "m.db", "default", RedisSessionBuffer(client, prefix=root)) as mem:
        view = mem.for_tenant("acme")
        assert isinstance(view._buffer, RedisSessionBuffer) and view._buffer.prefix == f"{root}t:acme:"
        view.add(conv("I live in Berlin.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
        assert mem.end_session(user_id="u1", session_id="s1").stored == []  # not the default tenant's


def test_an_in_process_buffer_object_serves_one_tenant(tmp_path: Path) -> None:
    shared = InMemorySessionBuffer()
    with _mem(tmp_path / "m.db", "acme", shared) as acme:
        acme.add(conv("I live in Berlin.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
        with pytest.raises(ConfigError, match="already holds tenant 'acme'"):
            _mem(tmp_path / "m.db", "beta", shared)
        with _mem(tmp_path / "m.db", "acme", shared) as again:  # the same tenant may share it
            assert [m.text for m in again.end_session(user_id="u1", session_id="s1").stored] == ["I live in Berlin."]
