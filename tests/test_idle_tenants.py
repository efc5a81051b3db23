"""The idle sweep finds tenants and users whose only turns wait in the session buffer.

``chronomem session end-idle`` and the server's sweeper go over ``Memory.tenants()``; a tenant
with nothing stored yet, only turns in the (Redis) buffer, must be among them, or its sessions
never end and the turns expire with the buffer's TTL.  Redis tests use the machine's Redis
(``CHRONOMEM_REDIS_URL``, as deployed) with tenant names unique to the test, and sweep only
those tenants: other tests may share that Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from test_buffer import redis_url  # noqa: F401 - the Redis fixture
from test_extract_pipeline import conv
from test_memory_sessions import SessionLLM

from chronomem import Config, Memory
from chronomem.cli.session import tenant_views
from chronomem.server.auth import Tenancy
from chronomem.summarize.buffer import InMemorySessionBuffer, RedisSessionBuffer, tenant_prefix
from chronomem.timeutil import utcnow

IDLE = 600.0


def _mem(db: Path, tenant: str | None = None, buffer: object = None) -> Memory:
    return Memory(db, tenant=tenant, llm=SessionLLM(), embedder=False, buffer=buffer,  # type: ignore[arg-type]
                  config=Config(session_idle=IDLE))


@pytest.fixture
def tenants(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:  # noqa: F811
    """Two fresh tenant names; the Redis buffer configured as deployed; their keys deleted after."""
    monkeypatch.setenv("CHRONOMEM_REDIS_URL", redis_url)
    uid = uuid.uuid4().hex[:12]
    names = (f"acme-{uid}", f"beta-{uid}")
    yield names
    client = redis.Redis.from_url(redis_url)
    for t in names:
        keys = list(client.scan_iter(match=tenant_prefix(t) + "*", count=1000))
        if keys:
            client.delete(*keys)


def _add_berlin(mem: Memory, user: str = "u1", session: str = "s1") -> None:
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id=user, session_id=session)


def _assert_ended_and_extracted(mem: Memory, user: str = "u1", session: str = "s1") -> None:
    (s,) = mem.store.sessions(user)
    assert s.id == session and s.ended_at is not None and s.ended_at.isoformat().startswith("2023-01-10T10:00:00")
    assert [m.text for m in mem.store.messages(user, session_id=session)] == ["I live in Berlin and work at Acme."]
    assert {f.object for f in mem.facts(user_id=user)} == {"Berlin", "Acme"}
    assert "Berlin" in mem.summary(user_id=user)


def test_a_tenant_with_only_buffered_turns_is_swept(tmp_path: Path, tenants: tuple[str, str]) -> None:
    acme, beta = tenants
    db = tmp_path / "m.db"
    with _mem(db, acme) as app, _mem(db) as admin:
        assert isinstance(app._buffer, RedisSessionBuffer)
        _add_berlin(app)  # buffered in Redis: nothing of tenant acme is stored
        assert app.store.inner.users() == []  # no user of any tenant in the store

        # ...yet the CLI's and the server's sweeps go over acme
        assert acme in admin.tenants() and beta not in admin.tenants()
        assert acme in Tenancy(admin, owns_base=False).tenants()
        views = list(tenant_views(admin, only=False))
        assert acme in [v.tenant for v in views]
        for v in views[1:]:
            v.close()

        view = admin.for_tenant(acme)  # the view those sweeps open (sweeping only it: Redis is shared)
        assert view.end_idle_sessions(now=utcnow() + timedelta(seconds=IDLE / 2)).ended == []
        assert view.end_idle_sessions(now=utcnow() + timedelta(seconds=2 * IDLE)).ended == [("u1", "s1")]
        view.close()
        _assert_ended_and_extracted(app)
        assert app._buffer.open_sessions() == [] and acme in admin.tenants()  # now from the store


@pytest.mark.parametrize("where", ["memory", "redis"])
def test_a_user_with_only_buffered_turns_in_a_known_tenant_is_swept(
        tmp_path: Path, where: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if where == "redis":
        acme, _ = request.getfixturevalue("tenants")
    else:
        monkeypatch.delenv("CHRONOMEM_REDIS_URL", raising=False)
        acme = "acme"
    with _mem(tmp_path / "m.db", acme, buffer=True) as mem:
        assert isinstance(mem._buffer, RedisSessionBuffer if where == "redis" else InMemorySessionBuffer)
        mem.add(conv("My dog Pixel is the best.", prefix="c", ts="2023-01-09T10:00:00Z"), user_id="u0",
                session_id="s0")
        mem.end_session(user_id="u0", session_id="s0")  # acme is known from its stored user u0
        _add_berlin(mem)  # u1: only buffered turns
        assert mem.users() == ["u0"] and acme in mem.tenants()
        assert mem.end_idle_sessions(now=utcnow() + timedelta(seconds=2 * IDLE)).ended == [("u1", "s1")]
        _assert_ended_and_extracted(mem)


def test_an_in_process_buffer_lists_its_own_tenant(tmp_path: Path) -> None:
    with _mem(tmp_path / "m.db", "acme", buffer=InMemorySessionBuffer()) as mem:
        assert mem.tenants() == []
        _add_berlin(mem)
        assert mem.store.users() == [] and mem.tenants() == ["acme"]
        assert mem.end_idle_sessions(now=utcnow() + timedelta(seconds=2 * IDLE)).ended == [("u1", "s1")]
        _assert_ended_and_extracted(mem)
        assert mem.tenants() == ["acme"]


def test_a_redis_buffer_with_its_own_prefix_lists_only_its_tenant(
        tmp_path: Path, redis_url: str) -> None:  # noqa: F811
    """A buffer object given to ``Memory`` is not laid out per tenant: other tenants' buffers (which
    may sit in the same Redis) are not its business."""
    client = redis.Redis.from_url(redis_url)
    prefix = f"chronomem-test:{uuid.uuid4().hex}:"
    try:
        with _mem(tmp_path / "m.db", "acme", buffer=RedisSessionBuffer(client, prefix=prefix)) as mem:
            assert mem.tenants() == []
            _add_berlin(mem)
            assert mem.tenants() == ["acme"]
    finally:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)


def test_memory_lays_out_tenant_buffers_by_tenant_prefix(tmp_path: Path, tenants: tuple[str, str]) -> None:
    """``Memory`` makes each tenant's Redis buffer under :func:`tenant_prefix`, where ``tenants()`` looks."""
    for tenant in (None, "default", tenants[0]):
        with _mem(tmp_path / "m.db", tenant) as mem:
            assert isinstance(mem._buffer, RedisSessionBuffer)
            assert mem._buffer.prefix == tenant_prefix(mem.tenant)
    assert tenant_prefix("default") == "chronomem:" and tenant_prefix("acme") == "chronomem:t:acme:"


def test_a_tenant_view_keeps_the_redis_buffer_it_was_given(tmp_path: Path, redis_url: str,  # noqa: F811
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory given a Redis URL (no environment variable) opens tenant views on the same Redis, each
    under its own prefix: the sweep lists those tenants, so their views must see the turns."""
    monkeypatch.delenv("CHRONOMEM_REDIS_URL", raising=False)
    tenant = f"acme-{uuid.uuid4().hex[:12]}"
    with _mem(tmp_path / "m.db", buffer=redis_url) as mem:
        view = mem.for_tenant(tenant)
        try:
            assert isinstance(view._buffer, RedisSessionBuffer) and view._buffer.prefix == tenant_prefix(tenant)
            _add_berlin(view)
            assert tenant in mem.tenants()
            sweep = mem.for_tenant(tenant).end_idle_sessions(now=utcnow() + timedelta(days=3650))
            assert sweep.ended == [("u1", "s1")]
            _assert_ended_and_extracted(view)
        finally:
            client = redis.Redis.from_url(redis_url)
            keys = list(client.scan_iter(match=tenant_prefix(tenant) + "*", count=1000))
            if keys:
                client.delete(*keys)
